package tiering

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/spillway/spillway/codec"
)

// TestLRUDeferredMovesKeepExactOrder checks the recency list against a
// model of exact LRU order through random reads, writes, removals and
// demotions of up to 15 keys (where the touch window is the front entry
// alone, so the order must be exact): the reads' deferred moves
// (LRU.touches), batched or flushed by any other operation, must leave
// the same order as moving each entry at its read.
func TestLRUDeferredMovesKeepExactOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	l := NewLRU(1 << 62)
	var model []string // most recently used first
	hk := func(i int) []byte { return []byte(fmt.Sprintf("\x00k%02d", i)) }
	front := func(k string) {
		if i := slices.Index(model, k); i >= 0 {
			model = slices.Delete(model, i, i+1)
		}
		model = slices.Insert(model, 0, k)
	}
	for step := range 20_000 {
		k := hk(rng.IntN(15))
		switch op := rng.IntN(20); {
		case op < 14: // a read, deferred
			if _, ok := l.get(k); ok {
				front(string(k))
			} else if slices.Contains(model, string(k)) {
				t.Fatalf("step %d: %q not found", step, k)
			}
		case op < 17: // a write
			l.put(k, &Entry{Type: codec.TypeString, Str: []byte("v")})
			front(string(k))
		case op < 19:
			if l.remove(k) {
				i := slices.Index(model, string(k))
				model = slices.Delete(model, i, i+1)
			}
		default:
			if l.demoteOldest() {
				model = model[:len(model)-1]
			}
		}
		if step%7 != 0 {
			continue // let the deferred moves pile up between checks
		}
		var got []string
		if e := l.oldest(); e != nil { // flushes the deferred moves
			for ; e != &l.root; e = e.prev {
				got = append(got, e.hk)
			}
		}
		slices.Reverse(got)
		if !slices.Equal(got, model) {
			t.Fatalf("step %d: recency order %q, exact LRU %q", step, got, model)
		}
	}
}
