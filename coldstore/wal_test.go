package coldstore

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway/spillway/codec"
)

// crash stops s as a kill -9 would (Store.CrashForTest).
func crash(t *testing.T, s *Store) {
	t.Helper()
	if err := s.CrashForTest(); err != nil {
		t.Fatal(err)
	}
}

// model applies the same writes to a map, the expected store contents.
type model map[string]string

// set writes k = v to b and to the model: with SetNew when the model (so
// the store) does not hold k, as the engine does for a new member or field.
func (m model) set(t *testing.T, b *Batch, k []byte, v string) {
	t.Helper()
	write := b.Set
	if _, ok := m[string(k)]; !ok {
		write = b.SetNew
	}
	if err := write(k, []byte(v)); err != nil {
		t.Fatal(err)
	}
	m[string(k)] = v
}

// del deletes k in b and in the model.
func (m model) del(t *testing.T, b *Batch, k []byte) {
	t.Helper()
	if err := b.Delete(k); err != nil {
		t.Fatal(err)
	}
	delete(m, string(k))
}

// delRange deletes [lo, hi) in b and in the model, lo and hi in either
// order.
func (m model) delRange(t *testing.T, b *Batch, lo, hi []byte) {
	t.Helper()
	if bytes.Compare(lo, hi) > 0 {
		lo, hi = hi, lo
	}
	if err := b.DeleteRange(lo, hi); err != nil {
		t.Fatal(err)
	}
	for k := range m {
		if k >= string(lo) && k < string(hi) {
			delete(m, k)
		}
	}
}

func (m model) check(t *testing.T, s *Store, when string) {
	t.Helper()
	it, err := s.NewIter([]byte{0x01}, []byte{0x02})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var got []string
	for valid := it.First(); valid; valid = it.Next() {
		k := string(it.Key())
		got = append(got, k)
		if want, ok := m[k]; !ok || want != string(it.Value()) {
			t.Fatalf("%s: %q = %q, want %q (present %v)", when, k, it.Value(), want, ok)
		}
	}
	if len(got) != len(m) {
		var missing []string
		for k := range m {
			if !slices.Contains(got, k) {
				missing = append(missing, k)
			}
		}
		t.Fatalf("%s: %d keys, want %d (missing %q)", when, len(got), len(m), missing)
	}
}

// randomBatch writes ops random records into b (tag in their values)
// and mirrors them in m: sets, deletes and range deletions over a small
// key space, so that keys are overwritten many times in one round.
func (m model) randomBatch(t *testing.T, b *Batch, rng *rand.Rand, ops int, tag string) {
	t.Helper()
	key := func() []byte { return fmt.Appendf(nil, "\x01k%03d", rng.IntN(200)) }
	for range ops {
		switch r := rng.IntN(20); {
		case r < 14:
			m.set(t, b, key(), fmt.Sprintf("%s-%d", tag, rng.IntN(1000)))
		case r < 19:
			m.del(t, b, key())
		default:
			m.delRange(t, b, key(), key())
		}
	}
}

// randomWrites enqueues n batches of random sets, deletes and range
// deletions over a small key space (so that keys are overwritten many
// times in one round), draining after each, and mirrors them in m.
func randomWrites(t *testing.T, s *Store, m model, rng *rand.Rand, n int) {
	t.Helper()
	b := s.NewBatch()
	for i := range n {
		m.randomBatch(t, b, rng, 1+rng.IntN(4), fmt.Sprint("v", i))
		if _, err := b.Enqueue(); err != nil {
			t.Fatal(err)
		}
		if err := s.Drain(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCoalescedRoundsMatchModel applies random writes in rounds of many
// batches (coalesced: overwritten records dropped) and checks the store
// against a model after each, reads in between included.
func TestCoalescedRoundsMatchModel(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncEverySec)
	defer closeStore(t, s)
	rng := rand.New(rand.NewPCG(1, 2))
	m := model{}
	for round := range 20 {
		randomWrites(t, s, m, rng, 50+rng.IntN(200))
		m.check(t, s, fmt.Sprintf("round %d", round))
	}
	if s.app.dropped == 0 {
		t.Fatalf("no record was coalesced away (applied %d in %d rounds)", s.app.applied, s.app.rounds)
	}
	t.Logf("records applied %d, dropped as overwritten %d, rounds %d", s.app.applied, s.app.dropped, s.app.rounds)
}

// TestLogReplayAfterCrash: writes logged and never applied (or applied but
// never flushed) are all back after a crash, and a second crash right
// after the replay loses nothing either.
func TestLogReplayAfterCrash(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	m := model{}
	for i := range 4 {
		s := openStore(t, dir, FsyncEverySec)
		m.check(t, s, fmt.Sprintf("after crash %d", i))
		randomWrites(t, s, m, rng, 300)
		if i%2 == 1 {
			// Some applied (not flushed), the rest pending.
			if err := s.q.waitAll(); err != nil {
				t.Fatal(err)
			}
			randomWrites(t, s, m, rng, 100)
		}
		crash(t, s)
	}
	s := openStore(t, dir, FsyncEverySec)
	m.check(t, s, "final")
	closeStore(t, s)
	// A clean close leaves nothing to replay.
	nums, err := segments(filepath.Join(dir, logDirName))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nums {
		if fi, err := os.Stat(filepath.Join(dir, logDirName, fmt.Sprintf("%016d.log", n))); err != nil || fi.Size() != 0 {
			t.Fatalf("segment %d after a clean close: %v, size %d", n, err, fi.Size())
		}
	}
}

// TestLogTornTail: a frame cut short (or garbage) at the end of the newest
// segment, as a crash in the middle of a write leaves it, is cut off; the
// batches before it are all replayed.
func TestLogTornTail(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	m := model{}
	s := openStore(t, dir, FsyncEverySec)
	randomWrites(t, s, m, rng, 200)
	crash(t, s)
	logDir := filepath.Join(dir, logDirName)
	nums, err := segments(logDir)
	if err != nil || len(nums) == 0 {
		t.Fatalf("segments: %v %v", nums, err)
	}
	last := filepath.Join(logDir, fmt.Sprintf("%016d.log", nums[len(nums)-1]))
	f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A header announcing 100 bytes, then 10 of them.
	f.Write([]byte{100, 0, 0, 0, 1, 2, 3, 4, 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x', 'x'})
	f.Close()
	s = openStore(t, dir, FsyncEverySec)
	m.check(t, s, "after the torn tail")
	randomWrites(t, s, m, rng, 50)
	crash(t, s)
	s = openStore(t, dir, FsyncEverySec)
	defer closeStore(t, s)
	m.check(t, s, "after writes past the cut")
}

// TestReadsWaitForPendingWrites: a pending write is seen by a point read
// of its key and by an iterator over its namespace before any round ran,
// while a read of another key does not make a round run.
func TestReadsWaitForPendingWrites(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncEverySec)
	defer closeStore(t, s)
	b := s.NewBatch()
	if err := b.Set([]byte("x\x00pending"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := b.Set([]byte("m\x00hot"), []byte("2")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Enqueue(); err != nil {
		t.Fatal(err)
	}
	if err := s.Drain(); err != nil {
		t.Fatal(err)
	}
	if _, found, err := s.Get([]byte("m\x00other"), nil); err != nil || found {
		t.Fatalf("Get of an unwritten key: found %v, %v", found, err)
	}
	if s.q.applied.Load() != 0 {
		t.Fatalf("a read of an unwritten key applied the pending batch")
	}
	it, err := s.NewIter([]byte("x"), []byte("y"))
	if err != nil {
		t.Fatal(err)
	}
	if !it.First() || string(it.Key()) != "x\x00pending" {
		t.Fatalf("iterator over the namespace does not see the pending write")
	}
	it.Close()
	if got, found, err := s.Get([]byte("m\x00hot"), nil); err != nil || !found || string(got) != "2" {
		t.Fatalf("Get of the pending key: %q %v %v", got, found, err)
	}
}

// TestWriteLogRetired: after many rounds and memtable flushes, the log
// keeps only the segments not yet flushed, Pebble keeps no WAL of its own,
// and every write is there after a reopen.
func TestWriteLogRetired(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, MemTableBytes: 256 << 10, Fsync: FsyncEverySec, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	val := make([]byte, 1024)
	const n = 20000 // 20 MB: several 8 MB segments
	b := s.NewBatch()
	for i := range n {
		for j := range val {
			val[j] = 'a' + byte((i+j)%26)
		}
		if err := b.Set(fmt.Appendf(nil, "\x01k%06d", i), val); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Enqueue(); err != nil {
			t.Fatal(err)
		}
		if err := s.Drain(); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 {
			if err := s.retireLog(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	nums, err := segments(filepath.Join(dir, logDirName))
	if err != nil {
		t.Fatal(err)
	}
	if len(nums) > 2 {
		t.Errorf("log segments after a flush: %v, want at most the current one and one closed", nums)
	}
	if logs, _ := filepath.Glob(filepath.Join(dir, "*.log")); len(logs) > 1 {
		t.Errorf("Pebble's own logs: %v, want none written", logs)
	}
	crash(t, s)
	s = openStore(t, dir, FsyncEverySec)
	defer closeStore(t, s)
	for _, i := range []int{0, n / 2, n - 1} {
		got, found, err := s.Get(fmt.Appendf(nil, "\x01k%06d", i), nil)
		if err != nil || !found || len(got) != len(val) || got[0] != 'a'+byte(i%26) {
			t.Fatalf("key %d after reopen: %q found %v, %v", i, got, found, err)
		}
	}
}

// TestCloseReturnsWhenTheDiskFails: with the store's directory removed
// under it (Pebble then retries its flush without end), Close still
// returns, with an error, so that the server can exit; and Pebble's error
// lines meanwhile are rate-limited (thousands a second without).
func TestCloseReturnsWhenTheDiskFails(t *testing.T) {
	old := closeWait
	closeWait = 1500 * time.Millisecond
	defer func() { closeWait = old }()
	dir := t.TempDir()
	var logged lineCount
	s, err := Open(Options{Dir: dir, CacheBytes: 1 << 20, MemTableBytes: 1 << 20, Fsync: FsyncEverySec,
		Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	randomWrites(t, s, model{}, rand.New(rand.NewPCG(7, 8)), 200)
	began := time.Now()
	defer func() {
		// At most errLimitBurst lines a second started, and the lines the
		// store logs itself (a few).
		secs := int64(time.Since(began)/time.Second) + 2
		if n := logged.n.Load(); n > secs*errLimitBurst+10 {
			t.Errorf("%d lines logged in %v; want at most %d (Pebble's errors rate-limited)", n, time.Since(began), secs*errLimitBurst+10)
		}
	}()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("Close with its directory gone returned no error")
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Close with its directory gone did not return in 30 s")
	}
}

// TestPendingReadsMatchModel: point reads of pending keys, through the
// store and through a transaction's batch that already wrote (its own
// writes first), agree with a model after random sets, deletes and range
// deletions, with no application round run for them: the queue answers,
// its last record of a key or a later range deletion over it. A second
// pass runs rounds concurrently (the applier's place), so that reads also
// meet a round in flight; every round's result is checked by iterating.
func TestPendingReadsMatchModel(t *testing.T) {
	for _, concurrent := range []bool{false, true} {
		t.Run(fmt.Sprintf("concurrentRounds=%v", concurrent), func(t *testing.T) {
			testPendingReads(t, concurrent)
		})
	}
}

func testPendingReads(t *testing.T, concurrent bool) {
	s := openStore(t, t.TempDir(), FsyncEverySec)
	defer closeStore(t, s)
	// The indexer is woken at every drain, so that it catches the index
	// up while reads use it; in the concurrent pass a second goroutine
	// catches up continually besides.
	s.q.ixChunk = 1
	rng := rand.New(rand.NewPCG(7, 8))
	m := model{}
	stop := make(chan struct{})
	done := make(chan error, 1)
	indexed := make(chan struct{})
	if concurrent {
		go func() {
			defer close(indexed)
			for i := 0; i < 1000000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				s.q.catchUpIndex()
			}
		}()
		go func() {
			var err error
			for i := 0; i < 100000 && err == nil; i++ {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				err = s.q.round()
			}
			done <- err
		}()
	} else {
		close(done)
		close(indexed)
	}
	key := func() []byte { return fmt.Appendf(nil, "\x01k%03d", rng.IntN(200)) }
	check := func(when string, get func(k []byte) ([]byte, bool, error), want model) {
		t.Helper()
		for range 8 {
			k := key()
			got, found, err := get(k)
			if err != nil {
				t.Fatal(err)
			}
			w, ok := want[string(k)]
			if found != ok || string(got) != w {
				t.Fatalf("%s: %q = %q (found %v), want %q (found %v)", when, k, got, found, w, ok)
			}
		}
	}
	b := s.NewBatch()
	for round := range 20 {
		applied := s.q.applied.Load()
		for i := range 20 + rng.IntN(100) {
			// own: the model with this batch's writes, which reads
			// through the batch see before the pending ones.
			own := maps.Clone(m)
			for range 1 + rng.IntN(4) {
				switch r := rng.IntN(20); {
				case r < 13:
					own.set(t, b, key(), fmt.Sprintf("v%d-%d-%d", round, i, rng.IntN(1000)))
				case r < 19:
					own.del(t, b, key())
				default:
					own.delRange(t, b, key(), key())
				}
				check("read through a batch", func(k []byte) ([]byte, bool, error) { return b.GetData(k, nil) }, own)
				check("probe through a batch", func(k []byte) ([]byte, bool, error) { return b.ProbeData(k, nil) }, own)
			}
			check("store read before the batch is queued", func(k []byte) ([]byte, bool, error) { return s.Get(k, nil) }, m)
			if _, err := b.Enqueue(); err != nil {
				t.Fatal(err)
			}
			m = own
			if rng.IntN(3) == 0 {
				if err := s.Drain(); err != nil {
					t.Fatal(err)
				}
			}
			check("store read", func(k []byte) ([]byte, bool, error) { return s.Get(k, nil) }, m)
		}
		if now := s.q.applied.Load(); !concurrent && now != applied {
			t.Fatalf("round %d: reads made %d batches be applied", round, now-applied)
		}
		if round%5 == 4 {
			if err := s.q.waitAll(); err != nil {
				t.Fatal(err)
			}
			m.check(t, s, fmt.Sprintf("round %d", round))
		}
	}
	if concurrent {
		close(stop)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-indexed
	m.check(t, s, "end")
}

// TestStructIteratorsMatchModel: iterators inside one data structure see
// every pending write of it (records and range deletions) and agree with
// a model, while writes pending for other structures do not make them
// wait for a round.
func TestStructIteratorsMatchModel(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncEverySec)
	defer closeStore(t, s)
	rng := rand.New(rand.NewPCG(9, 10))
	m := model{}
	names := []string{"alpha", "beta", "gamma", "delta"}
	prefix := func(i int) []byte { return codec.AppendFieldPrefix(nil, 0, []byte(names[i]), 1) }
	key := func(i int) []byte {
		return codec.AppendFieldKey(nil, 0, []byte(names[i]), 1, fmt.Appendf(nil, "f%02d", rng.IntN(30)))
	}
	s.q.ixChunk = 1 // the indexer keeps the structures' index as it goes
	b := s.NewBatch()
	noWait := 0
	for i := range 600 {
		st := rng.IntN(len(names))
		ops := 1 + rng.IntN(3)
		rangeOnly := rng.IntN(8) == 0 // a batch of one range deletion
		if rangeOnly {
			ops = 1
		}
		for range ops {
			r := rng.IntN(20)
			if rangeOnly {
				r = 19
			}
			switch {
			case r < 13:
				m.set(t, b, key(st), fmt.Sprintf("v%d", i))
			case r < 19:
				m.del(t, b, key(st))
			default:
				lo, hi := key(st), key(st)
				if rng.IntN(2) == 0 {
					lo, hi = prefix(st), codec.PrefixEnd(prefix(st))
				}
				m.delRange(t, b, lo, hi)
			}
		}
		if _, err := b.Enqueue(); err != nil {
			t.Fatal(err)
		}
		if err := s.Drain(); err != nil {
			t.Fatal(err)
		}
		// Iterate a structure, often another one than the one written.
		it := rng.IntN(len(names))
		if rangeOnly && rng.IntN(2) == 0 {
			it = st
		}
		lo := prefix(it)
		before := s.q.applied.Load()
		iter, err := s.NewIter(lo, codec.PrefixEnd(lo))
		if err != nil {
			t.Fatal(err)
		}
		if s.q.applied.Load() == before {
			noWait++
		}
		n := 0
		for valid := iter.First(); valid; valid = iter.Next() {
			k := string(iter.Key())
			if want, ok := m[k]; !ok || want != string(iter.Value()) {
				t.Fatalf("step %d, %s: %q = %q, want %q (present %v)", i, names[it], k, iter.Value(), want, ok)
			}
			n++
		}
		iter.Close()
		want := 0
		for k := range m {
			if strings.HasPrefix(k, string(lo)) {
				want++
			}
		}
		if n != want {
			t.Fatalf("step %d, %s: %d records, want %d", i, names[it], n, want)
		}
	}
	if noWait < 100 {
		t.Fatalf("only %d of 600 iterators over a structure started without a round", noWait)
	}
	t.Logf("%d of 600 iterators started without a round", noWait)
}

// TestIndexFollowsTheWindow: the pending buffer's index is built as the
// buffer fills, by the indexer and not by readers: after a burst of
// writes that no read saw, at most one indexChunk of the buffer is left
// for the first reader to index, and what it reads agrees with the writes.
func TestIndexFollowsTheWindow(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncEverySec) // 1 MB memtable: 1 MB rounds
	defer closeStore(t, s)
	s.q.ixChunk = 16 << 10
	m := model{}
	b := s.NewBatch()
	val := strings.Repeat("v", 200)
	// About 700 KB: below a round's 1 MB, so the whole burst stays pending.
	for i := range 3000 {
		m.set(t, b, fmt.Appendf(nil, "\x01w%05d", i%2500), fmt.Sprintf("%s%d", val, i))
		if _, err := b.Enqueue(); err != nil {
			t.Fatal(err)
		}
		if err := s.Drain(); err != nil {
			t.Fatal(err)
		}
	}
	// The indexer runs on its own: wait (bounded) until it has indexed
	// what it was last woken for.
	var pending, indexed int
	for i := 0; i < 10000; i++ {
		s.q.ixMu.Lock()
		s.q.mu.Lock()
		pending, indexed = len(s.q.pend), s.q.pendIx.indexed
		kicked := s.q.ixKickedAt
		s.q.mu.Unlock()
		s.q.ixMu.Unlock()
		if indexed >= kicked {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if s.q.applied.Load() != 0 {
		t.Fatalf("a round ran (%d batches applied): the test needs the burst pending", s.q.applied.Load())
	}
	if pending < 10*s.q.ixChunk || pending-indexed >= s.q.ixChunk {
		t.Fatalf("pending %d bytes, indexed %d: want all but less than %d indexed before any read", pending, indexed, s.q.ixChunk)
	}
	for i := range 2500 {
		k := fmt.Appendf(nil, "\x01w%05d", i)
		got, found, err := s.Get(k, nil)
		if err != nil || !found || string(got) != m[string(k)] {
			t.Fatalf("%q = %q (found %v, %v), want %q", k, got, found, err, m[string(k)])
		}
	}
	if s.q.applied.Load() != 0 {
		t.Fatal("reads of pending keys made a round run")
	}
	// An iterator over a namespace no pending record is in (the expiry
	// sweeper's) starts at once, on the batches' namespace bits alone.
	it, err := s.NewIter([]byte{codec.NSExpiry}, []byte{codec.NSExpiry + 1})
	if err != nil {
		t.Fatal(err)
	}
	if it.First() {
		t.Fatalf("expiry namespace holds %q", it.Key())
	}
	it.Close()
	if s.q.applied.Load() != 0 {
		t.Fatal("an iterator over an untouched namespace made a round run")
	}
	// One over the written namespace sees every pending write (a round).
	it, err = s.NewIter([]byte{0x01}, []byte{0x02})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		if want := m[string(it.Key())]; string(it.Value()) != want {
			t.Fatalf("iterator: %q = %q, want %q", it.Key(), it.Value(), want)
		}
		n++
	}
	it.Close()
	if n != len(m) {
		t.Fatalf("iterator saw %d records, want %d", n, len(m))
	}
	m.check(t, s, "after the round")
}

// lineCount counts the lines written to it (a log handler's output).
type lineCount struct{ n atomic.Int64 }

func (l *lineCount) Write(p []byte) (int, error) {
	l.n.Add(int64(bytes.Count(p, []byte{'\n'})))
	return len(p), nil
}
