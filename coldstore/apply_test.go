package coldstore

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// TestApplierReusesItsBatch: rounds of several commits each (more than
// commitBytes of records) apply every record, and every round and commit
// reuses the applier's one batch buffer instead of growing a new one.
func TestApplierReusesItsBatch(t *testing.T) {
	// A memtable of 8 MB: commits reach commitBytes.
	s, err := Open(Options{Dir: t.TempDir(), CacheBytes: 1 << 20, MemTableBytes: 8 << 20, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore(t, s)
	m := model{}
	var buf unsafe.Pointer
	for round := range 4 {
		b := s.NewBatch()
		// 3 MB a round: three or four commits of commitBytes.
		for i := range 48 {
			m.set(t, b, fmt.Appendf(nil, "\x01k%03d", (round*17+i)%64),
				fmt.Sprintf("r%d-%d-", round, i)+strings.Repeat("v", 64<<10))
			if i%4 == 3 {
				if _, err := b.Enqueue(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := s.Drain(); err != nil {
			t.Fatal(err)
		}
		m.check(t, s, fmt.Sprintf("round %d", round))
		// No round runs while the batch is looked at.
		s.q.applyMu.Lock()
		held := s.app.b != nil
		var repr []byte
		empty := false
		if held {
			repr, empty = s.app.b.Repr(), s.app.b.Empty()
		}
		s.q.applyMu.Unlock()
		if !held {
			t.Fatal("the applier holds no batch after a round")
		}
		if !empty {
			t.Fatalf("round %d: the applier's batch holds %d bytes between rounds", round, len(repr))
		}
		p := unsafe.Pointer(unsafe.SliceData(repr))
		if round > 0 && p != buf {
			t.Fatalf("round %d: the applier's batch buffer was replaced (cap %d)", round, cap(repr))
		}
		buf = p
	}
}

// TestApplierSortedRuns: rounds of many small batches (coalesced, their
// point records written to Pebble in key order: sortedRun) over a small
// keyspace, with overwrites, deletions and range deletions between them,
// end as the batches applied in commit order would.
func TestApplierSortedRuns(t *testing.T) {
	s, err := Open(Options{Dir: t.TempDir(), CacheBytes: 1 << 20, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore(t, s)
	m := model{}
	r := rand.New(rand.NewPCG(3, 5))
	for round := range 60 {
		for batch := range 5 + r.IntN(40) {
			b := s.NewBatch()
			m.randomBatch(t, b, r, 1+r.IntN(6), fmt.Sprintf("r%d-b%d", round, batch))
			if _, err := b.Enqueue(); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Drain(); err != nil {
			t.Fatal(err)
		}
		m.check(t, s, fmt.Sprintf("round %d", round))
	}
	s.q.applyMu.Lock()
	dropped := s.app.dropped
	s.q.applyMu.Unlock()
	if dropped == 0 {
		t.Fatal("no round was coalesced: the sorted runs were not exercised")
	}
}
