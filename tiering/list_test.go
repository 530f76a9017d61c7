package tiering

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// withList runs f on key's list in one committed transaction.
func (v *env) withList(key string, create bool, f func(l *List) error) {
	v.t.Helper()
	v.do(func(tx *Tx) error {
		l, err := tx.OpenList(0, []byte(key), create)
		if err != nil || l == nil {
			return err
		}
		if err := f(l); err != nil {
			return err
		}
		return l.Close()
	})
}

// checkList compares key's content, read every way a command can, with
// the model.
func (v *env) checkList(key string, want []string) {
	v.t.Helper()
	v.withList(key, false, func(l *List) error {
		if l.Len() != int64(len(want)) {
			v.t.Fatalf("%s: Len %d, model %d", key, l.Len(), len(want))
		}
		all, err := l.Elements(0, l.Len()-1)
		if err != nil {
			return err
		}
		if !slices.Equal(all, want) {
			v.t.Fatalf("%s: Elements %q, model %q", key, all, want)
		}
		var rev []string
		if err := l.Range(0, l.Len()-1, true, func(_ int64, b []byte) bool { rev = append(rev, string(b)); return true }); err != nil {
			return err
		}
		slices.Reverse(rev)
		if !slices.Equal(rev, want) {
			v.t.Fatalf("%s: reverse Range %q, model %q", key, rev, want)
		}
		for _, i := range []int{0, len(want) / 2, len(want) - 1} {
			got, err := l.Index(int64(i))
			if err != nil || string(got) != want[i] {
				v.t.Fatalf("%s: Index(%d) = %q %v, model %q", key, i, got, err, want[i])
			}
		}
		return nil
	})
}

// pushModel pushes s onto the head (left) or the tail of a list's model
// and returns it.
func pushModel(want []string, left bool, s string) []string {
	if left {
		return append([]string{s}, want...)
	}
	return append(want, s)
}

// popModel pops up to m elements off the head (left) or the tail of a
// list's model: it returns them in pop order, and the rest.
func popModel(want []string, left bool, m int64) (popped, rest []string) {
	n := int64(len(want))
	k := min(m, n)
	if left {
		return slices.Clone(want[:k]), want[k:]
	}
	for i := n - 1; i >= n-k; i-- {
		popped = append(popped, want[i])
	}
	return popped, want[:n-k]
}

// TestListsAgainstModel runs random list operations on a few keys under
// a small hot tier, so lists are held whole, by their ends and cold, and
// checks every read path and the store's invariants against a model.
func TestListsAgainstModel(t *testing.T) {
	opts := defaultOpts()
	opts.HotBudget = 64 << 10
	v := newEnv(t, opts)
	r := rand.New(rand.NewPCG(4, 2))
	model := map[string][]string{}
	keys := []string{"l0", "l1", "l2", "q", "big"}
	elem := func() string {
		switch r.IntN(10) {
		case 0:
			return strings.Repeat("x", 500+r.IntN(3000))
		case 1:
			return ""
		default:
			return fmt.Sprintf("e%d", r.IntN(20))
		}
	}
	for step := range 3000 {
		key := keys[r.IntN(len(keys))]
		want := model[key]
		n := int64(len(want))
		op := r.IntN(100)
		switch {
		case op < 30: // pushes, sometimes many
			left := r.IntN(2) == 0
			m := 1 + r.IntN(8)
			if r.IntN(10) == 0 {
				m = 200 + r.IntN(600)
			}
			v.withList(key, true, func(l *List) error {
				for range m {
					e := elem()
					if err := l.Push(left, []byte(e)); err != nil {
						return err
					}
					want = pushModel(want, left, e)
				}
				return nil
			})
		case op < 55: // pops
			left := r.IntN(2) == 0
			m := int64(1 + r.IntN(5))
			if r.IntN(10) == 0 {
				m = int64(50 + r.IntN(300))
			}
			v.withList(key, false, func(l *List) error {
				var got []string
				_, err := l.Pop(left, m, func(b []byte) { got = append(got, string(b)) })
				var exp []string
				exp, want = popModel(want, left, m)
				if err == nil && !slices.Equal(got, exp) {
					t.Fatalf("step %d: pop %s left=%v %d = %q, model %q", step, key, left, m, got, exp)
				}
				return err
			})
		case op < 62 && n > 0: // LSET
			i := r.Int64N(n)
			e := elem()
			v.withList(key, false, func(l *List) error { return l.Set(i, []byte(e)) })
			want[i] = e
		case op < 70 && n > 0: // LINSERT-like splice of one element
			i := r.Int64N(n + 1)
			e := elem()
			v.withList(key, false, func(l *List) error { return l.Splice(i, i, 0, []string{e}) })
			want = slices.Insert(want, int(i), e)
		case op < 76 && n > 0: // LREM-like splice removing a span's matches
			i := r.Int64N(n)
			j := min(n, i+1+r.Int64N(20))
			target := want[i]
			var kept []string
			removed := int64(0)
			for _, s := range want[i:j] {
				removed += int64(len(s))
				if s != target {
					kept = append(kept, s)
				}
			}
			v.withList(key, false, func(l *List) error { return l.Splice(i, j, removed, kept) })
			want = append(append(slices.Clone(want[:i]), kept...), want[j:]...)
		case op < 82 && n > 0: // LTRIM
			from := r.Int64N(n)
			to := from + r.Int64N(n)
			if r.IntN(4) == 0 {
				from, to = 0, n-1-r.Int64N(min(n, 5))
			}
			v.withList(key, false, func(l *List) error { return l.Trim(from, to) })
			if from > min(to, n-1) {
				want = nil
			} else {
				want = slices.Clone(want[from : min(to, n-1)+1])
			}
		case op < 85: // RENAME or COPY to another key
			dst := keys[r.IntN(len(keys))]
			if dst == key || n == 0 {
				break
			}
			copyOnly := r.IntN(2) == 0
			v.do(func(tx *Tx) error {
				if copyOnly {
					_, err := tx.Copy(0, []byte(key), 0, []byte(dst), true)
					return err
				}
				_, _, err := tx.Rename(0, []byte(key), 0, []byte(dst), false)
				return err
			})
			model[dst] = slices.Clone(want)
			if !copyOnly {
				want = nil
			}
		case op < 88:
			v.demoteAll()
		case op < 90:
			v.e.SetHotBudget(int64(8<<10) << r.IntN(5))
		default: // a read, which may promote
			if n > 0 {
				v.checkList(key, want)
			}
		}
		model[key] = want
		if len(want) == 0 {
			delete(model, key)
		}
		if step%50 == 0 {
			v.checkInvariants()
			for k, w := range model {
				v.checkList(k, w)
			}
		}
	}
	v.checkInvariants()
	for _, k := range keys {
		if _, ok := model[k]; !ok {
			if _, _, exists := v.peek(0, k); exists {
				t.Fatalf("%s exists, model has it empty", k)
			}
		}
	}
}

// TestListQueueKeepsOnlyItsEnds pushes a long queue and drains it: the
// hot entry is held whole while it weighs at most the hot tier's share for
// one key (an eighth of the budget), then never holds more than its two
// windows, and every element comes out once, in order.
func TestListQueueKeepsOnlyItsEnds(t *testing.T) {
	opts := defaultOpts()
	opts.HotBudget = 4 << 20
	v := newEnv(t, opts)
	const total = 50000
	maxSize, maxWhole, wholeCount := int64(0), int64(0), int64(0)
	hotSize := func() {
		v.do(func(tx *Tx) error {
			e, ok := v.e.hot.peek(hotKey(nil, v.e.dbmap[0], []byte("q")))
			switch {
			case !ok || e.list == nil:
			case e.list.whole:
				maxWhole, wholeCount = max(maxWhole, e.size), max(wholeCount, e.Count)
			default:
				maxSize = max(maxSize, e.size)
			}
			return nil
		})
	}
	for i := 0; i < total; i += 500 {
		v.withList("q", true, func(l *List) error {
			for j := i; j < i+500; j++ {
				if err := l.Push(false, fmt.Appendf(nil, "job:%08d", j)); err != nil {
					return err
				}
			}
			return nil
		})
		hotSize()
	}
	v.checkInvariants()
	next := 0
	for next < total {
		v.withList("q", false, func(l *List) error {
			_, err := l.Pop(true, 97, func(b []byte) {
				if want := fmt.Sprintf("job:%08d", next); string(b) != want {
					t.Fatalf("popped %q, want %q", b, want)
				}
				next++
			})
			return err
		})
		hotSize()
		if next%9700 == 0 {
			v.checkInvariants()
		}
	}
	if _, _, exists := v.peek(0, "q"); exists {
		t.Fatal("drained queue still exists")
	}
	// Held whole, the queue grew past listWholeElems (the limit for a list
	// loaded from disk) up to the hot share, and no further.
	if share := opts.HotBudget / 8; maxWhole > share || wholeCount <= listWholeElems {
		t.Fatalf("whole queue reached %d bytes and %d elements, want at most %d bytes and over %d elements",
			maxWhole, wholeCount, share, listWholeElems)
	}
	// Once the queue is too heavy to be held whole: two windows of at most
	// listWindowElems 12-byte elements (a deque counts 16 bytes an element
	// and 16 a slot of its ring, up to twice as many slots as elements),
	// a tenth of the 50,000 elements' 2.4 MB held whole.
	if limit := int64(2 * listWindowElems * (12 + 16 + 2*16)); maxSize == 0 || maxSize > limit {
		t.Fatalf("queue's hot entry held by its ends reached %d bytes, want 1 to %d", maxSize, limit)
	}
	t.Logf("queue of %d: whole up to %d elements, %d bytes; then by its ends at most %d bytes; cold reads %d",
		total, wholeCount, maxWhole, maxSize, v.e.Stats.ColdReads.Load())
}

// TestHotListReadAllocatesNothing: LINDEX and LRANGE of a hot list are
// served from memory without allocating.
func TestHotListReadAllocatesNothing(t *testing.T) {
	v := newEnv(t, defaultOpts())
	v.withList("l", true, func(l *List) error {
		for _, e := range []string{"a", "b", "c"} {
			if err := l.Push(false, []byte(e)); err != nil {
				return err
			}
		}
		return nil
	})
	key := []byte("l")
	n := 0
	count := func(_ int64, _ []byte) bool { n++; return true }
	allocs := testing.AllocsPerRun(200, func() {
		tx := v.e.begin()
		l, err := tx.OpenList(0, key, false)
		if err != nil || l == nil {
			t.Fatalf("OpenList: %v %v", l, err)
		}
		if got, err := l.Index(1); err != nil || string(got) != "b" {
			t.Fatalf("Index = %q %v", got, err)
		}
		if err := l.Range(0, 2, false, count); err != nil {
			t.Fatal(err)
		}
		tx.abort()
	})
	if allocs != 0 {
		t.Fatalf("hot LINDEX+LRANGE path allocates %.1f times", allocs)
	}
}

// TestListWindowsHoldTheirBytes pops a cold list of large elements (too
// big to be loaded whole) from both ends: every refill keeps a window
// within listWindowBytes (one element at least), whatever the elements'
// sizes around the list's average, and the elements come out in order.
func TestListWindowsHoldTheirBytes(t *testing.T) {
	v := newEnv(t, defaultOpts())
	r := rand.New(rand.NewPCG(7, 8))
	var model []string
	v.withList("big", true, func(l *List) error {
		for i := range 1500 {
			// Mostly small, some large: a refill sized by the average
			// meets elements far over it.
			n := 100
			if i%7 == 0 {
				n = 4000 + r.IntN(20000)
			}
			s := fmt.Sprintf("%05d:%s", i, strings.Repeat("x", n))
			model = append(model, s)
			if err := l.Push(false, []byte(s)); err != nil {
				return err
			}
		}
		return nil
	})
	v.demoteAll()
	for len(model) > 0 {
		left := r.IntN(2) == 0
		var got []string
		v.withList("big", false, func(l *List) error {
			if l.Whole() && len(model) > listRefill {
				t.Fatalf("a list of %d large elements loaded whole", len(model))
			}
			_, err := l.Pop(left, int64(1+r.IntN(40)), func(b []byte) { got = append(got, string(b)) })
			return err
		})
		want, rest := popModel(model, left, int64(len(got)))
		if !slices.Equal(got, want) {
			t.Fatalf("popped %d (left %v): got %.20q, want %.20q", len(got), left, got, want)
		}
		model = rest
		v.checkInvariants()
	}
}
