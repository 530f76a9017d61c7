package tiering

import (
	"fmt"
	"slices"
	"testing"

	"github.com/spillway/spillway/codec"
)

// strayListRecords counts the stored element records of list key (db 0)
// outside its Head..Tail: those of popped elements not deleted yet.
func (v *env) strayListRecords(key string) int {
	v.t.Helper()
	var m codec.Meta
	v.do(func(tx *Tx) error {
		e, err := tx.Peek(0, []byte(key))
		if err != nil || e == nil {
			return fmt.Errorf("peek %s: %v %v", key, e, err)
		}
		m.Version, m.Head, m.Tail = e.Version, e.Head, e.Tail
		return nil
	})
	n := 0
	v.eachListRecord(v.e.dbmap[0], []byte(key), m.Version, func(idx uint64, _ []byte) {
		if idx < m.Head || idx >= m.Tail {
			n++
		}
	})
	return n
}

// TestListPopsLeaveRecords: a pop from a list held by its ends writes no
// deletion; the records it leaves are deleted together, at each end,
// once listPoppedMax have accumulated, when the list is held whole again,
// edited in place, demoted or demoted on demand; a push over them reuses
// their indexes. Every step is checked against a model and the store's
// records against the list's garbage spans (checkInvariants, listOf).
func TestListPopsLeaveRecords(t *testing.T) {
	v := newEnv(t, defaultOpts())
	var model []string
	push := func(left bool, n int) {
		v.withList("q", true, func(l *List) error {
			for range n {
				s := fmt.Sprintf("e%06d", len(model))
				if err := l.Push(left, []byte(s)); err != nil {
					return err
				}
				model = pushModel(model, left, s)
			}
			return nil
		})
		v.checkInvariants()
	}
	pop := func(left bool, n int) {
		var got []string
		v.withList("q", false, func(l *List) error {
			if l.Whole() {
				t.Fatalf("list of %d held whole", l.Len())
			}
			_, err := l.Pop(left, int64(n), func(b []byte) { got = append(got, string(b)) })
			return err
		})
		want, rest := popModel(model, left, int64(n))
		if !slices.Equal(got, want) {
			t.Fatalf("popped %.40q, want %.40q", got, want)
		}
		model = rest
		v.checkInvariants()
	}
	stray := func(step string, want int) {
		t.Helper()
		if got := v.strayListRecords("q"); got != want {
			t.Fatalf("%s: %d records of popped elements stored, want %d", step, got, want)
		}
	}
	push(false, 3*listWholeElems)
	v.demoteAll() // loaded back by its ends

	pop(true, 100)
	pop(false, 30)
	stray("pops", 130)
	push(true, 40) // over 40 of the 100 popped at the head
	stray("pushes over popped elements", 90)
	pop(true, 10)
	stray("more pops", 100)

	// 110 popped at the head so far: listPoppedMax in all deletes both
	// ends' records.
	pop(true, listPoppedMax-110)
	stray("listPoppedMax pops", 0)
	push(true, 10) // past the head's garbage span, now empty
	push(false, 10)
	pop(true, 15)
	stray("pushes past the spans, then pops", 15)

	pop(false, 50)
	v.demoteAll() // demotion deletes them
	stray("demotion", 0)

	pop(true, 20)
	v.do(func(tx *Tx) error { _, err := tx.Demote(0, []byte("q")); return err })
	stray("Demote", 0)

	pop(false, 20)
	v.withList("q", false, func(l *List) error {
		// LTRIM 1 -2 (it deletes what it trims itself).
		if err := l.Trim(1, l.Len()-2); err != nil {
			return err
		}
		model = model[1 : len(model)-1]
		return nil
	})
	stray("Trim", 0)

	// Popped down until the windows meet: held whole again.
	for len(model) > 2*listWindowElems {
		pop(len(model)%2 == 0, 500)
	}
	for {
		var whole bool
		v.withList("q", false, func(l *List) error { whole = l.Whole(); return nil })
		if whole {
			break
		}
		pop(true, 100)
	}
	stray("held whole", 0)
	v.checkList("q", model)
	v.checkInvariants()
}
