package coldstore

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// TestEnqueueOrderAndVisibility enqueues batches from concurrent writers
// under one mutex (the engine's lock) and drains them after it, as the
// engine does: the store must hold the last write of a key overwritten by
// every batch, each batch's own key, and a read made between Enqueue and
// Drain must already see the batch.
func TestEnqueueOrderAndVisibility(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncEverySec)
	defer closeStore(t, s)
	const writers, each = 8, 300
	var mu sync.Mutex // the engine's lock
	b := s.NewBatch() // one batch, reused under mu, as the engine's Tx
	seq := 0
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				mu.Lock()
				seq++
				v := []byte(strconv.Itoa(seq))
				own := []byte(fmt.Sprintf("w%d:%d", w, i))
				err := b.Set([]byte("shared"), v)
				if err == nil {
					err = b.Set(own, v)
				}
				if err == nil {
					_, err = b.Enqueue()
				}
				mu.Unlock()
				if err == nil && i%7 == 0 {
					// Read before draining: the read waits for the batch.
					var got []byte
					var found bool
					got, found, err = s.Get(own, nil)
					if err == nil && (!found || !bytes.Equal(got, v)) {
						err = fmt.Errorf("%s read before Drain: %q found=%v, want %q", own, got, found, v)
					}
				}
				if err == nil {
					err = s.Drain()
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, found, err := s.Get([]byte("shared"), nil)
	if err != nil || !found || string(got) != strconv.Itoa(writers*each) {
		t.Fatalf("shared = %q (found %v, err %v), want the last write %d", got, found, err, writers*each)
	}
	for w := range writers {
		for i := range each {
			if _, found, err := s.Get([]byte(fmt.Sprintf("w%d:%d", w, i)), nil); err != nil || !found {
				t.Fatalf("w%d:%d missing (err %v)", w, i, err)
			}
		}
	}
	if err := s.q.waitAll(); err != nil {
		t.Fatal(err)
	}
	if q, a := s.q.queued.Load(), s.q.applied.Load(); q != a || q != writers*each {
		t.Fatalf("queued %d applied %d, want both %d", q, a, writers*each)
	}
}

// TestEnqueuedSurvivesClose checks that batches enqueued and never
// drained are applied and made durable by Close, and that under
// FsyncAlways a Pending's Wait logs and syncs its batch.
func TestEnqueuedSurvivesClose(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, FsyncAlways)
	b := s.NewBatch()
	if err := b.Set([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	p, err := b.Enqueue()
	if err != nil || p.IsZero() {
		t.Fatalf("Enqueue under always: pending zero=%v, err %v", p.IsZero(), err)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if s.log.synced.Load() != 1 {
		t.Fatalf("Wait returned with the batch not synced (log synced through %d)", s.log.synced.Load())
	}
	if err := b.Set([]byte("b"), []byte("2")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Enqueue(); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	s = openStore(t, dir, FsyncEverySec)
	defer closeStore(t, s)
	for _, k := range []string{"a", "b"} {
		if _, found, err := s.Get([]byte(k), nil); err != nil || !found {
			t.Fatalf("%s lost across Close (err %v)", k, err)
		}
	}
}

// TestApplyFailureIsSticky makes the application of a batch fail: the
// reader that needs it applied gets the error, and so does every later
// commit and read, and nothing of the failed round reaches Pebble.
func TestApplyFailureIsSticky(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncEverySec)
	defer s.Close()
	b := s.NewBatch()
	if err := b.Set([]byte("before"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	boom := errors.New("disk on fire")
	s.q.mu.Lock()
	s.q.apply = func([]byte, *pendIndex, maphash.Seed) error { return boom }
	s.q.mu.Unlock()
	if err := b.Set([]byte("lost"), []byte("2")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Enqueue(); err != nil {
		t.Fatalf("Enqueue before the failure: %v", err)
	}
	if err := s.Drain(); err != nil {
		t.Fatalf("Drain (a log write) = %v", err)
	}
	// A point read of the pending key is answered from the queue; an
	// iterator needs it applied.
	if v, found, err := s.Get([]byte("lost"), nil); err != nil || !found || string(v) != "2" {
		t.Fatalf("Get of the pending key = %q %v %v, want it from the queue", v, found, err)
	}
	if _, err := s.NewIter([]byte("l"), []byte("m")); !errors.Is(err, boom) {
		t.Fatalf("NewIter over the pending key = %v, want the apply error", err)
	}
	if err := b.Set([]byte("after"), []byte("3")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Enqueue(); !errors.Is(err, boom) {
		t.Fatalf("Enqueue after the failure = %v, want the sticky error", err)
	}
	if _, _, err := s.Get([]byte("before"), nil); !errors.Is(err, boom) {
		t.Fatalf("Get after the failure = %v, want the sticky error", err)
	}
	if err := s.SyncWAL(); !errors.Is(err, boom) {
		t.Fatalf("SyncWAL after the failure = %v, want the sticky error", err)
	}
	if _, closer, err := s.db.Get([]byte("lost")); err == nil {
		closer.Close()
		t.Fatalf("the failed batch reached Pebble")
	}
}

// TestKeyTable: the index's table keeps the last location of each hash,
// through probe chains (hashes equal in their low bits), a hash of 0 and
// growth, and a hash collision between two keys makes a read of the
// earlier key undecidable (pendingUnknown) instead of answering with the
// other key's record.
func TestKeyTable(t *testing.T) {
	var kt keyTable
	want := map[uint64]int{}
	for i := range 1000 {
		h := uint64(i%300) << 20 // equal low bits: long probe chains
		if _, _, ok := kt.put(h, i, i, false); ok != (want[h] != 0 || (h == 0 && i >= 300)) {
			t.Fatalf("put %d: replaced %v", i, ok)
		}
		want[h] = i
	}
	for h, off := range want {
		if got, ok := kt.get(h); !ok || got.off != off || got.rec != off {
			t.Fatalf("get %#x = %+v %v, want %d", h, got, ok, off)
		}
	}
	if _, ok := kt.get(12345); ok {
		t.Fatalf("get of an absent hash found something")
	}
	// A slot's born flag rides in its record number (the slot stays 16
	// bytes) and survives updates and growth.
	if n := unsafe.Sizeof(keySlot{}); n != 16 {
		t.Fatalf("keySlot is %d bytes, want 16", n)
	}
	var bt keyTable
	for i := range 100 {
		bt.put(uint64(i+1)<<32, i, 1<<30+i, i%3 == 0)
	}
	prev, slot, ok := bt.put(uint64(7)<<32, 70, 1<<30+70, false) // key 6's slot
	if !ok || prev.rec != 1<<30+6 || !prev.born {
		t.Fatalf("put over a born slot returned %+v %v", prev, ok)
	}
	slot.setBorn(true)
	for i := range 100 {
		want := keyLoc{off: i, rec: 1<<30 + i, born: i%3 == 0}
		if i == 6 {
			want = keyLoc{off: 70, rec: 1<<30 + 70, born: true}
		}
		if got, ok := bt.get(uint64(i+1) << 32); !ok || got != want {
			t.Fatalf("born slot %d: %+v %v, want %+v", i, got, ok, want)
		}
	}

	s := openStore(t, t.TempDir(), FsyncEverySec)
	defer closeStore(t, s)
	b := s.NewBatch()
	for _, k := range []string{"a", "b"} {
		if err := b.Set([]byte(k), []byte("v"+k)); err != nil {
			t.Fatal(err)
		}
	}
	repr := b.b.Repr()
	var ix pendIndex
	ix.catchUpBatch(repr, s.q.seed)
	ha, hb := maphash.Bytes(s.q.seed, []byte("a")), maphash.Bytes(s.q.seed, []byte("b"))
	if v, st := ix.find(repr, []byte("a"), ha); st != pendingSet || string(v) != "va" {
		t.Fatalf("find a = %q %v", v, st)
	}
	// Make a's hash lead to b's record, as a collision would.
	loc, _ := ix.keys.get(hb)
	ix.keys.put(ha, loc.off, loc.rec, false)
	if _, st := ix.find(repr, []byte("a"), ha); st != pendingUnknown {
		t.Fatalf("find a after a collision = %v, want pendingUnknown", st)
	}
	b.Abort()
}

// TestLogWriterGathers checks that under everysec and no the log writer
// lets the frames of batches drained one after another gather into few
// writes (Redis's one AOF write per event loop) instead of writing each
// batch on its own, that nothing gathered is lost across Close, and that
// under always a Pending's Wait does not wait for the gathering.
func TestLogWriterGathers(t *testing.T) {
	const batches = 200
	for _, f := range []Fsync{FsyncEverySec, FsyncNo} {
		dir := t.TempDir()
		s := openStore(t, dir, f)
		s.gather = time.Hour
		b := s.NewBatch()
		for i := range batches {
			if err := b.Set([]byte(fmt.Sprintf("k%d", i)), []byte("v")); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Enqueue(); err != nil {
				t.Fatal(err)
			}
			if err := s.Drain(); err != nil {
				t.Fatal(err)
			}
			runtime.Gosched() // a writer that wrote each batch would run here
		}
		s.log.mu.Lock()
		writes := s.log.writes
		s.log.mu.Unlock()
		// Besides the writer, only the applier's idle round and the
		// everysec syncer write, each at most once a second.
		if writes > batches/4 {
			t.Errorf("appendfsync %v: %d log writes for %d batches drained one by one, want the writer to gather them", f, writes, batches)
		}
		closeStore(t, s)
		s = openStore(t, dir, FsyncEverySec)
		for i := range batches {
			if _, found, err := s.Get([]byte(fmt.Sprintf("k%d", i)), nil); err != nil || !found {
				t.Fatalf("appendfsync %v: k%d lost across Close (err %v)", f, i, err)
			}
		}
		closeStore(t, s)
	}

	s := openStore(t, t.TempDir(), FsyncAlways)
	defer closeStore(t, s)
	s.gather = time.Hour
	b := s.NewBatch()
	if err := b.Set([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	p, err := b.Enqueue()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("appendfsync always: Pending.Wait still waits 30 s later (for the log writer's gathering?)")
	}
	if s.log.synced.Load() < 1 {
		t.Fatalf("Wait returned with the batch not synced (log synced through %d)", s.log.synced.Load())
	}
}
