package coldstore

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/spillway/spillway/codec"
)

// listShape is a list-like structure of the model tests: element records
// keyed by an absolute index, at head..tail-1.
type listShape struct {
	name       string
	head, tail uint64
}

func (l *listShape) key(i uint64) []byte {
	return codec.AppendListKey(nil, 0, []byte(l.name), 1, i)
}

// iterateChecked iterates [lo, hi) of s, checks every record against the
// model and the count, and reports whether the iterator waited for an
// application round.
func iterateChecked(t *testing.T, s *Store, m model, lo, hi []byte, step int) (waited bool) {
	t.Helper()
	before := s.q.applied.Load()
	it, err := s.NewIter(lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	waited = s.q.applied.Load() != before
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		k := string(it.Key())
		if want, ok := m[k]; !ok || want != string(it.Value()) {
			t.Fatalf("step %d: %x = %q, want %q (present %v)", step, k, it.Value(), want, ok)
		}
		n++
	}
	want := 0
	for k := range m {
		if k >= string(lo) && k < string(hi) {
			want++
		}
	}
	if n != want {
		t.Fatalf("step %d: [%x, %x): %d records, want %d", step, lo, hi, n, want)
	}
	return waited
}

// TestSubrangeIteratorsMatchModel: iterators over part of a structure
// see every pending write in their range (pushes and pops at both ends,
// updates and deletions in the middle, range deletions) and agree with a
// model; the intervals that bound a structure's pending records
// (structSpans) let many of them start without a round.
func TestSubrangeIteratorsMatchModel(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncEverySec)
	defer closeStore(t, s)
	rng := rand.New(rand.NewPCG(11, 12))
	m := model{}
	lists := []*listShape{{name: "q1", head: 1 << 40, tail: 1 << 40}, {name: "q2", head: 1 << 40, tail: 1 << 40}}
	b := s.NewBatch()
	noWait := 0
	const steps = 1500
	for i := range steps {
		l := lists[rng.IntN(len(lists))]
		for range 1 + rng.IntN(4) {
			switch r := rng.IntN(40); {
			case r < 12:
				l.head--
				m.set(t, b, l.key(l.head), fmt.Sprintf("h%d", i))
			case r < 22:
				m.set(t, b, l.key(l.tail), fmt.Sprintf("t%d", i))
				l.tail++
			case r < 28 && l.tail > l.head:
				l.tail--
				m.del(t, b, l.key(l.tail))
			case r < 33 && l.tail > l.head:
				m.del(t, b, l.key(l.head))
				l.head++
			case r < 37 && l.tail > l.head:
				m.set(t, b, l.key(l.head+rng.Uint64N(l.tail-l.head)), fmt.Sprintf("u%d", i))
			case r < 39 && l.tail > l.head:
				m.del(t, b, l.key(l.head+rng.Uint64N(l.tail-l.head)))
			case l.tail > l.head:
				a := l.head + rng.Uint64N(l.tail-l.head)
				m.delRange(t, b, l.key(a), l.key(a+1+rng.Uint64N(8)))
			}
		}
		if _, err := b.Enqueue(); err != nil {
			t.Fatal(err)
		}
		if err := s.Drain(); err != nil {
			t.Fatal(err)
		}
		l = lists[rng.IntN(len(lists))]
		a := l.head - 2 + rng.Uint64N(l.tail-l.head+4)
		z := a + 1 + rng.Uint64N(64)
		if !iterateChecked(t, s, m, l.key(a), l.key(z), i) {
			noWait++
		}
	}
	if noWait < steps/10 {
		t.Fatalf("only %d of %d iterators over part of a structure started without a round", noWait, steps)
	}
	t.Logf("%d of %d iterators started without a round", noWait, steps)
}

// TestQueueRefillNeedsNoRound: a list used as a queue (pushed at the head,
// popped at the tail, the pops' deletions and the pushes pending) is read
// just inside its tail, as a list held by its ends refills its window,
// without waiting for an application round, and the reads are right.
func TestQueueRefillNeedsNoRound(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncEverySec)
	defer closeStore(t, s)
	m := model{}
	l := &listShape{name: "queue", head: 1 << 40, tail: 1 << 40}
	b := s.NewBatch()
	for i := range 2000 {
		l.head--
		m.set(t, b, l.key(l.head), fmt.Sprintf("v%d", i))
	}
	if _, err := b.Enqueue(); err != nil {
		t.Fatal(err)
	}
	if err := s.q.waitAll(); err != nil { // applied: the pushes are in Pebble
		t.Fatal(err)
	}
	waits := 0
	for i := range 200 {
		l.head--
		m.set(t, b, l.key(l.head), fmt.Sprintf("w%d", i))
		l.tail--
		m.del(t, b, l.key(l.tail))
		if _, err := b.Enqueue(); err != nil {
			t.Fatal(err)
		}
		if err := s.Drain(); err != nil {
			t.Fatal(err)
		}
		// The refill window: the 128 elements below the 256 the tail
		// window holds.
		if iterateChecked(t, s, m, l.key(l.tail-384), l.key(l.tail-256), i) {
			waits++
		}
	}
	if waits > 10 {
		t.Fatalf("%d of 200 reads inside the tail waited for a round", waits)
	}
}
