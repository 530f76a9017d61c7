package tiering

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// listStep applies one random list edit to l and returns the model after
// it: pushes and pops (written to the log only while the list is dirty)
// most of the time, else an edit that writes a dirty list back first.
func listStep(r *rand.Rand, l *List, want []string) ([]string, error) {
	want = slices.Clone(want) // the caller's model stays as it was
	n := int64(len(want))
	elem := func() string { return fmt.Sprintf("e%d", r.IntN(1000)) }
	switch op := r.IntN(100); {
	case op < 40 || n == 0:
		left := r.IntN(2) == 0
		m, big := 1+r.IntN(6), false
		if r.IntN(25) == 0 {
			m, big = 20+r.IntN(30), true // past listWriteBackMax, or the list's share of the tier
		}
		for range m {
			s := elem()
			if big {
				s += strings.Repeat("b", 8<<10)
			}
			if err := l.Push(left, []byte(s)); err != nil {
				return want, err
			}
			want = pushModel(want, left, s)
		}
	case op < 80:
		left := r.IntN(2) == 0
		m := int64(1 + r.IntN(5))
		var got []string
		if _, err := l.Pop(left, m, func(b []byte) { got = append(got, string(b)) }); err != nil {
			return want, err
		}
		var exp []string
		exp, want = popModel(want, left, m)
		if !slices.Equal(got, exp) {
			return want, fmt.Errorf("popped %q, model %q", got, exp)
		}
	case op < 88:
		i, s := r.Int64N(n), elem()
		if err := l.Set(i, []byte(s)); err != nil {
			return want, err
		}
		want = slices.Clone(want)
		want[i] = s
	case op < 94:
		i, s := r.Int64N(n+1), elem()
		if err := l.Splice(i, i, 0, []string{s}); err != nil {
			return want, err
		}
		want = slices.Insert(slices.Clone(want), int(i), s)
	default:
		from := r.Int64N(n)
		if err := l.Trim(from, n-1); err != nil {
			return want, err
		}
		want = want[from:]
	}
	return want, nil
}

// TestWriteBackLists runs random list edits on a few hot lists (held
// whole) in transactions that commit, or abort after their edits, with
// checkpoints, demotions, snapshots taken inside transactions, crashes
// and clean restarts between them, against a model: whatever reaches the
// store through write-back, the log's replay or an undo, every read gives
// the model, and the store's records are those the write-back state says.
func TestWriteBackLists(t *testing.T) {
	v := newEnv(t, defaultOpts())
	r := rand.New(rand.NewPCG(19, 7))
	keys := []string{"q0", "q1", "q2"}
	model := map[string][]string{}
	boom := errors.New("boom")
	checkAll := func(when string) {
		t.Helper()
		for _, k := range keys {
			if w := model[k]; len(w) > 0 {
				v.checkList(k, w)
			} else if _, _, ok := v.peek(0, k); ok {
				t.Fatalf("%s: %s exists, model has it empty", when, k)
			}
		}
		v.checkInvariants()
	}
	dirtySeen, aborts, snaps := 0, 0, 0
	var prev map[string][]string
	for step := range 1500 {
		next := map[string][]string{}
		for k, w := range model {
			next[k] = w
		}
		abort := r.IntN(8) == 0
		snapAt := -1
		if r.IntN(15) == 0 {
			snapAt = r.IntN(3)
		}
		var snap *Snapshot
		_, err := v.e.Update(func(tx *Tx) error {
			for i := range 1 + r.IntN(3) {
				if i == snapAt {
					var err error
					if snap, err = tx.Snapshot(); err != nil {
						return err
					}
				}
				k := keys[r.IntN(len(keys))]
				switch x := r.IntN(100); {
				case x < 4:
					if _, err := tx.Delete(0, []byte(k)); err != nil {
						return err
					}
					next[k] = nil
					continue
				case x < 7:
					dst := keys[r.IntN(len(keys))]
					if dst == k || len(next[k]) == 0 {
						continue
					}
					if _, _, err := tx.Rename(0, []byte(k), 0, []byte(dst), false); err != nil {
						return err
					}
					next[dst], next[k] = next[k], nil
					continue
				case x < 10:
					if _, err := tx.SetExpire(0, []byte(k), tx.Now()+3_600_000+int64(r.IntN(1000))); err != nil {
						return err
					}
					continue
				}
				l, err := tx.OpenList(0, []byte(k), true)
				if err != nil {
					return err
				}
				w, err := listStep(r, l, next[k])
				if err != nil {
					return fmt.Errorf("step %d %s: %w", step, k, err)
				}
				next[k] = w
				if err := l.Close(); err != nil {
					return err
				}
			}
			if abort {
				return boom
			}
			return nil
		})
		switch {
		case abort && !errors.Is(err, boom):
			t.Fatalf("step %d: %v", step, err)
		case abort:
			aborts++
			v.listLeaks = true
		case err != nil:
			t.Fatalf("step %d: %v", step, err)
		default:
			prev, model = model, next
		}
		if snap != nil {
			// The snapshot holds the lists as the last commit left them,
			// not the edits of the transaction that took it.
			snaps++
			got := snapshotLists(t, snap)
			snap.Close()
			before := model
			if !abort {
				before = prev
			}
			for _, k := range keys {
				if !slices.Equal(got[k], before[k]) {
					t.Fatalf("step %d: the snapshot holds %s = %q, the last commit %q", step, k, got[k], before[k])
				}
			}
		}
		if v.dirtyKeys() > 0 {
			dirtySeen++
		}
		switch x := r.IntN(100); {
		case x < 3:
			if _, err := v.e.Checkpoint(); err != nil {
				t.Fatal(err)
			}
		case x < 5:
			v.do(func(tx *Tx) error { _, err := tx.Demote(0, []byte(keys[r.IntN(len(keys))])); return err })
		case x < 6:
			v.demoteAll()
		case x < 8:
			if r.IntN(2) == 0 {
				// Enough log for segments to close and retire, but for
				// those the log-only records need.
				fillStore(t, v, 2500)
			}
			v.crash()
			checkAll(fmt.Sprintf("step %d, after a crash", step))
		case x < 9:
			v.reopen()
			checkAll(fmt.Sprintf("step %d, after a restart", step))
		}
		if step%25 == 0 {
			checkAll(fmt.Sprintf("step %d", step))
		}
	}
	checkAll("the end")
	if dirtySeen < 500 || aborts < 100 || snaps < 50 {
		t.Fatalf("dirty after %d steps, %d aborts, %d snapshots: the test no longer exercises write-back", dirtySeen, aborts, snaps)
	}
}

// snapshotLists reads every list of database 0 in snap.
func snapshotLists(t *testing.T, snap *Snapshot) map[string][]string {
	t.Helper()
	it, err := snap.Keys(0)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[string][]string{}
	for it.Next() {
		var elems []string
		if err := it.Elements(func(b []byte) error { elems = append(elems, string(b)); return nil }); err != nil {
			t.Fatalf("snapshot of %q: %v", it.Key(), err)
		}
		if int64(len(elems)) != it.Len() {
			t.Fatalf("snapshot of %q: %d elements, Len %d", it.Key(), len(elems), it.Len())
		}
		out[string(it.Key())] = elems
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// fillStore writes n records of 1 KB outside the keyspace straight to the
// store and flushes it: the write log moves on by n KB.
func fillStore(t *testing.T, v *env, n int) {
	t.Helper()
	val := make([]byte, 1024)
	for i := range n {
		b := v.s.NewBatch()
		if err := b.Set(fmt.Appendf(nil, "zfill%06d", i), val); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Enqueue(); err != nil {
			t.Fatal(err)
		}
	}
	if err := v.s.Flush(); err != nil {
		t.Fatal(err)
	}
}
