package uptier

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/codec"
)

// hangLimit bounds the waits of tests that would otherwise hang on a bug.
const hangLimit = 60 * time.Second

// TestColdIndexSet covers Add, Has, Remove, Len and Clear, with hashes
// spread over the shards (the top bits pick one).
func TestColdIndexSet(t *testing.T) {
	x := NewColdIndex()
	hs := []uint64{0, 1, 1 << 58, 2<<58 | 7, 63 << 58, ^uint64(0), codec.KeyHash([]byte("k"))}
	if x.Len() != 0 || x.Has(hs[0]) {
		t.Fatal("a new index is not empty")
	}
	type op struct {
		do   string // add, remove, clear
		h    uint64
		len  int64
		has  []uint64 // expected present after the op
		hasn []uint64 // expected absent
	}
	ops := []op{
		{"add", hs[0], 1, hs[:1], hs[1:]},
		{"add", hs[0], 1, hs[:1], hs[1:]}, // again: counted once
		{"add", hs[2], 2, []uint64{hs[0], hs[2]}, []uint64{hs[1], hs[3]}},
		{"add", hs[5], 3, []uint64{hs[0], hs[2], hs[5]}, []uint64{hs[4]}},
		{"remove", hs[1], 3, []uint64{hs[0], hs[2], hs[5]}, []uint64{hs[1]}}, // absent: no change
		{"remove", hs[0], 2, []uint64{hs[2], hs[5]}, []uint64{hs[0]}},
		{"remove", hs[0], 2, []uint64{hs[2], hs[5]}, []uint64{hs[0]}},
		{"add", hs[3], 3, []uint64{hs[2], hs[3], hs[5]}, nil},
		{"add", hs[4], 4, []uint64{hs[4]}, nil},
		{"add", hs[6], 5, []uint64{hs[6]}, nil},
		{"clear", 0, 0, nil, hs},
		{"add", hs[1], 1, hs[1:2], []uint64{hs[0], hs[2]}}, // usable after Clear
	}
	for i, o := range ops {
		switch o.do {
		case "add":
			x.Add(o.h)
		case "remove":
			x.Remove(o.h)
		case "clear":
			x.Clear()
		}
		if x.Len() != o.len {
			t.Fatalf("op %d (%s %#x): Len = %d; want %d", i, o.do, o.h, x.Len(), o.len)
		}
		for _, h := range o.has {
			if !x.Has(h) {
				t.Fatalf("op %d (%s %#x): Has(%#x) = false", i, o.do, o.h, h)
			}
		}
		for _, h := range o.hasn {
			if x.Has(h) {
				t.Fatalf("op %d (%s %#x): Has(%#x) = true", i, o.do, o.h, h)
			}
		}
	}
}

// TestColdIndexDemotion covers StartDemotion, EndDemotion, Demoting and
// Protect.
func TestColdIndexDemotion(t *testing.T) {
	x := NewColdIndex()
	h, other := codec.KeyHash([]byte("k")), codec.KeyHash([]byte("other"))
	done := make(chan struct{})

	if x.Demoting(h) != nil {
		t.Fatal("Demoting of an idle key is not nil")
	}
	if !x.StartDemotion(h, done) {
		t.Fatal("StartDemotion of an idle key refused")
	}
	if !x.Has(h) || x.Len() != 1 {
		t.Fatal("a key being demoted is not in the index")
	}
	if x.Demoting(h) != done {
		t.Fatal("Demoting does not return the demotion's channel")
	}
	if x.StartDemotion(h, make(chan struct{})) {
		t.Fatal("StartDemotion of a key already being demoted succeeded")
	}
	if x.Demoting(h) != done {
		t.Fatal("a refused StartDemotion replaced the channel")
	}
	if x.Demoting(other) != nil {
		t.Fatal("Demoting of another key is not nil")
	}

	// A client waiting for the demotion is released when its channel is
	// closed (the demoter does that after EndDemotion).
	released := make(chan struct{})
	wait := x.Demoting(h)
	go func() { <-wait; close(released) }()
	x.EndDemotion(h, true)
	close(done)
	select {
	case <-released:
	case <-time.After(hangLimit):
		t.Fatal("waiter not released (hang detector)")
	}
	if !x.Has(h) || x.Demoting(h) != nil {
		t.Fatalf("after EndDemotion(cold): Has %v Demoting %v; want in the index, not demoting", x.Has(h), x.Demoting(h))
	}

	// A key with a cold copy is never demoted over it.
	if x.StartDemotion(h, make(chan struct{})) {
		t.Fatal("StartDemotion of a key already in the index succeeded")
	}
	x.Add(other)
	if x.StartDemotion(other, make(chan struct{})) || x.Demoting(other) != nil {
		t.Fatal("StartDemotion of a key Added to the index succeeded")
	}
	x.Remove(other)

	// Once reloaded (removed), it can be demoted again; a failed demotion
	// removes it from the index.
	x.Remove(h)
	if !x.StartDemotion(h, make(chan struct{})) {
		t.Fatal("StartDemotion refused after the key left the index")
	}
	x.EndDemotion(h, false)
	if x.Has(h) || x.Len() != 0 {
		t.Fatalf("after EndDemotion(not cold): Has %v Len %d", x.Has(h), x.Len())
	}

	// Protection is counted.
	x.Unprotect(h) // unprotecting an unprotected key is a no-op
	if x.Protected(h) {
		t.Fatal("Unprotect of an unprotected key protected it")
	}
	x.Protect(h)
	x.Protect(h)
	steps := []struct {
		unprotect bool
		protected bool
	}{
		{false, true},
		{true, true}, // one Protect left
		{true, false},
		{true, false}, // extra Unprotect does not go negative
	}
	for i, st := range steps {
		if st.unprotect {
			x.Unprotect(h)
		}
		if x.Protected(h) != st.protected {
			t.Fatalf("step %d: Protected = %v; want %v", i, x.Protected(h), st.protected)
		}
		started := x.StartDemotion(h, make(chan struct{}))
		if started == st.protected {
			t.Fatalf("step %d: StartDemotion = %v with Protected %v", i, started, st.protected)
		}
		if started {
			x.EndDemotion(h, false)
		} else if x.Has(h) {
			t.Fatalf("step %d: a refused StartDemotion added the key to the index", i)
		}
	}
	x.Protect(h)
	if x.Protected(other) || !x.StartDemotion(other, make(chan struct{})) {
		t.Fatal("protecting one key protected another")
	}
	// A demotion in progress does not stop Protect from counting.
	x.Protect(other)
	if !x.Protected(other) {
		t.Fatal("Protect during a demotion not counted")
	}
}

// TestColdIndexConcurrent runs Add, Has, Remove, Protect and demotions
// from many goroutines (run with -race); the final count is exact.
func TestColdIndexConcurrent(t *testing.T) {
	x := NewColdIndex()
	const workers, perWorker = 16, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				h := codec.KeyHash(fmt.Appendf(nil, "%d:%d", w, i))
				if i%4 != 2 { // a demotion starts on a key not in the index
					x.Add(h)
					if !x.Has(h) {
						t.Errorf("worker %d: Has after Add = false", w)
						return
					}
				}
				x.Has(h ^ 1) // a read of somebody else's shard
				switch i % 4 {
				case 0:
					x.Remove(h)
					if x.Has(h) {
						t.Errorf("worker %d: Has after Remove = true", w)
						return
					}
				case 1:
					x.Protect(h)
					if x.StartDemotion(h, nil) {
						t.Errorf("worker %d: StartDemotion of a protected key", w)
						return
					}
					x.Unprotect(h)
				case 2:
					if !x.StartDemotion(h, make(chan struct{})) {
						t.Errorf("worker %d: StartDemotion refused", w)
						return
					}
					if x.StartDemotion(h, nil) {
						t.Errorf("worker %d: second StartDemotion of a key being demoted", w)
						return
					}
					x.EndDemotion(h, i%8 == 2)
				}
				x.Len()
			}
		}()
	}
	wg.Wait()
	// Per worker: i%4 == 1 and 3 stay, i%8 == 2 stays, i%8 == 6 goes.
	want := int64(workers * (perWorker/2 + perWorker/8))
	if x.Len() != want {
		t.Fatalf("Len = %d; want %d", x.Len(), want)
	}
	x.Clear()
	if x.Len() != 0 {
		t.Fatalf("Len after Clear = %d", x.Len())
	}
}

// TestKeyLocks checks mutual exclusion per key under contention.
func TestKeyLocks(t *testing.T) {
	var k KeyLocks
	keys := []uint64{1, 1025, 7, codec.KeyHash([]byte("x"))} // 1 and 1025 share a stripe
	counts := make([]int, len(keys))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				j := i % len(keys)
				k.Lock(keys[j])
				counts[j]++ // -race flags this if the lock does not exclude
				k.Unlock(keys[j])
			}
		}()
	}
	wg.Wait()
	for j, n := range counts {
		if n != 2000 {
			t.Errorf("key %d: %d increments; want 2000", j, n)
		}
	}
}

// waitBarrierPending waits until a Barrier is waiting for shard i: a
// writer is then queued, so a new reader cannot get in.
func waitBarrierPending(t *testing.T, g *Gate, i int) {
	t.Helper()
	for range 10000 {
		if !g.shards[i].TryRLock() {
			return
		}
		g.shards[i].RUnlock()
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("Barrier never waited on shard %d", i)
}

// TestGateBarrier checks that Barrier waits for a batch that entered
// before it, and not for one that entered after it passed that batch's
// shard.
func TestGateBarrier(t *testing.T) {
	var g Gate
	for _, tt := range []struct {
		id    int64
		shard int
	}{{3, 3}, {19, 3}, {4, 4}, {-1, 15}, {16, 0}} {
		m := g.Enter(tt.id)
		if m != &g.shards[tt.shard].RWMutex {
			t.Fatalf("Enter(%d) did not take shard %d", tt.id, tt.shard)
		}
		m.RUnlock()
	}

	before := g.Enter(5)
	passed := make(chan struct{})
	go func() { g.Barrier(); close(passed) }()
	waitBarrierPending(t, &g, 5) // it waits for the earlier batch

	// A batch entering now on a shard the barrier has passed gets in and
	// is not waited for.
	entered := make(chan func())
	go func() { m := g.Enter(2); entered <- m.RUnlock }()
	var leaveAfter func()
	select {
	case leaveAfter = <-entered:
	case <-time.After(hangLimit):
		t.Fatal("Enter blocked on a shard the barrier had passed (hang detector)")
	}
	select {
	case <-passed:
		t.Fatal("Barrier passed while a batch that entered before it was still in")
	default:
	}
	before.RUnlock()
	select {
	case <-passed:
	case <-time.After(hangLimit):
		t.Fatal("Barrier did not pass after the earlier batch left (hang detector)")
	}
	leaveAfter()

	// With nobody inside, Barrier returns at once.
	done := make(chan struct{})
	go func() { g.Barrier(); close(done) }()
	select {
	case <-done:
	case <-time.After(hangLimit):
		t.Fatal("Barrier on an empty gate blocked (hang detector)")
	}
}
