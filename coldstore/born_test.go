package coldstore

import (
	"fmt"
	"testing"
)

// TestBornRecordsNeverReachPebble: in one application round, keys created
// with SetNew and deleted again (a member added and removed, a score
// changed twice) apply nothing at all, neither their records nor their
// deletions; a key the store held before, set and deleted in the same
// round, still gets its deletion, as does one deleted, created again
// (SetNew after the deletion) and deleted; a key created and deleted,
// then set again, keeps its last value. The store ends as a model of the
// writes says, and the applier's counts say what reached Pebble.
func TestBornRecordsNeverReachPebble(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncNo)
	defer closeStore(t, s)
	m := model{}
	key := func(name string, i int) []byte { return fmt.Appendf(nil, "\x01%s%03d", name, i) }

	// Before the round: "old" keys in Pebble.
	b := s.NewBatch()
	for i := range 10 {
		m.set(t, b, key("old", i), "before")
	}
	commit(t, b)
	counts := func() (applied, dropped int64) {
		s.q.applyMu.Lock()
		defer s.q.applyMu.Unlock()
		return s.app.applied, s.app.dropped
	}
	applied0, dropped0 := counts()

	// One round of many batches (coalesced: more than coalesceMin).
	set := func(k []byte, v string) func(*Batch) error {
		return func(b *Batch) error { m.set(t, b, k, v); return nil }
	}
	del := func(k []byte) func(*Batch) error {
		return func(b *Batch) error { m.del(t, b, k); return nil }
	}
	for i := range 50 {
		// Born, rewritten, deleted: nothing reaches Pebble.
		enqueueWrite(t, s, set(key("tmp", i), "a"))
		enqueueWrite(t, s, set(key("tmp", i), "b"))
		enqueueWrite(t, s, del(key("tmp", i)))
	}
	for i := range 10 {
		// Held before: set, deleted: the deletion is applied.
		enqueueWrite(t, s, set(key("old", i), "during"), del(key("old", i)))
	}
	for i := range 5 {
		// Born, deleted, set again: the last value is applied.
		enqueueWrite(t, s, set(key("back", i), "first"))
		enqueueWrite(t, s, del(key("back", i)))
		enqueueWrite(t, s, set(key("back", i), "again"))
	}
	if _, ok := m[string(key("old", 0))]; ok {
		t.Fatal("the model holds a deleted key")
	}
	if err := s.q.waitAll(); err != nil {
		t.Fatal(err)
	}
	applied, dropped := counts()
	if got, want := applied-applied0, int64(10+5); got != want {
		t.Errorf("records applied in the round: %d, want %d (the old keys' deletions, the last values)", got, want)
	}
	if got, want := dropped-dropped0, int64(50*3+10+5*2); got != want {
		t.Errorf("records dropped in the round: %d, want %d", got, want)
	}
	m.check(t, s, "after the round")
	for i := range 10 {
		if _, found, err := s.GetField(key("old", i), nil); err != nil || found {
			t.Fatalf("old key %d after its deletion: found %v, %v", i, found, err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	m.check(t, s, "after a flush")
}

// enqueueWrite enqueues one batch holding what writes write into it, in
// order, failing the test on an error.
func enqueueWrite(t *testing.T, s *Store, writes ...func(*Batch) error) {
	t.Helper()
	b := s.NewBatch()
	for _, w := range writes {
		if err := w(b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Enqueue(); err != nil {
		t.Fatal(err)
	}
}
