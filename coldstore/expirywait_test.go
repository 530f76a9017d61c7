package coldstore

import (
	"testing"

	"github.com/spillway/spillway/codec"
)

// TestExpiryIteratorWaitsOnlyForEntriesInRange: an iterator over the
// expiry index up to a time (the sweeper's, over the entries due by now)
// starts without an application round while the pending entries are all
// due later (expiries set and moved: the usual pending writes there), and
// waits for one, seeing what it wrote, when a pending entry is in its
// range, a deletion of one included, or a pending range deletion meets it.
func TestExpiryIteratorWaitsOnlyForEntriesInRange(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncNo)
	defer closeStore(t, s)
	const now = int64(1_000_000)
	lo, hi := codec.ExpiryStart(), codec.AppendExpiryKey(nil, now, 0, nil)
	// count opens the sweeper's iterator and counts its entries; it
	// reports whether the iterator started with batches still pending.
	count := func() (n int, pending bool) {
		t.Helper()
		it, err := s.NewIter(lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		pending = !s.q.idle()
		for valid := it.First(); valid; valid = it.Next() {
			n++
		}
		return n, pending
	}

	// Entries due later, set and moved: no round.
	for i := range 20 {
		key := []byte{'k', byte(i)}
		enqueueWrite(t, s, func(b *Batch) error { return b.PutExpiry(now+1000+int64(i), 0, key) })
		enqueueWrite(t, s, func(b *Batch) error {
			if err := b.DeleteExpiry(now+1000+int64(i), 0, key); err != nil {
				return err
			}
			return b.PutExpiry(now+5000+int64(i), 0, key)
		})
	}
	if n, pending := count(); n != 0 || !pending {
		t.Fatalf("with entries due later pending: %d entries, batches pending %v; want 0, true", n, pending)
	}

	// An entry due by now: the iterator waits and sees it.
	enqueueWrite(t, s, func(b *Batch) error { return b.PutExpiry(now-10, 0, []byte("due")) })
	if n, pending := count(); n != 1 || pending {
		t.Fatalf("with an entry due pending: %d entries, batches pending %v; want 1, false", n, pending)
	}

	// Its deletion pending: the iterator waits and no longer sees it.
	enqueueWrite(t, s, func(b *Batch) error { return b.PutExpiry(now+9000, 0, []byte("later")) })
	enqueueWrite(t, s, func(b *Batch) error { return b.DeleteExpiry(now-10, 0, []byte("due")) })
	if n, pending := count(); n != 0 || pending {
		t.Fatalf("with the deletion of a due entry pending: %d entries, batches pending %v; want 0, false", n, pending)
	}

	// A range deletion meeting the range (a FLUSHALL's): the iterator waits.
	enqueueWrite(t, s, func(b *Batch) error { return b.PutExpiry(now-5, 0, []byte("due2")) })
	if n, _ := count(); n != 1 {
		t.Fatalf("a second due entry: %d entries, want 1", n)
	}
	enqueueWrite(t, s, func(b *Batch) error { return b.PutExpiry(now+7000, 0, []byte("later2")) })
	enqueueWrite(t, s, func(b *Batch) error { return b.DeleteRange(lo, codec.AppendExpiryKey(nil, now-1, 0, nil)) })
	if n, pending := count(); n != 0 || pending {
		t.Fatalf("with a range deletion over the due entries pending: %d entries, batches pending %v; want 0, false", n, pending)
	}
	// A range deletion wholly after it: no round.
	enqueueWrite(t, s, func(b *Batch) error {
		return b.DeleteRange(codec.AppendExpiryKey(nil, now+100, 0, nil), codec.AppendExpiryKey(nil, now+200, 0, nil))
	})
	if _, pending := count(); !pending {
		t.Fatal("a range deletion after the iterator's range forced a round")
	}
}
