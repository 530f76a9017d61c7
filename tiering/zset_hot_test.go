package tiering

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/spillway/spillway/codec"
)

// bigBudgetOpts hold a sorted set of tens of thousands of members hot:
// 64 MB of budget, cold-read-max-bytes at its default.
func bigBudgetOpts() Options {
	opts := defaultOpts()
	opts.HotBudget = 64 << 20
	return opts
}

// TestHotZSetGrowsPastWholeLoad: a hot sorted set stays hot as writes grow
// it past the size a cold one is loaded at (zsetWholeMembers), for as long
// as the budget holds it; updating it reads nothing from the store, and
// what it stored (score updates write no meta record) is what a restart
// finds.
func TestHotZSetGrowsPastWholeLoad(t *testing.T) {
	v := newEnv(t, bigBudgetOpts())
	const n = 3 * zsetWholeMembers
	model := zmodel{}
	for lo := 0; lo < n; lo += 1000 {
		v.withZSet("z", true, func(z *ZSet) error {
			for i := lo; i < min(lo+1000, n); i++ {
				m := fmt.Sprintf("element:%06d", i)
				if _, err := z.Add([]byte(m), float64(i)); err != nil {
					return err
				}
				model[m] = float64(i)
			}
			return nil
		})
		if !v.isHot(0, "z") {
			t.Fatalf("after %d members: the sorted set is cold", min(lo+1000, n))
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	gets := v.s.ReadStats().Gets
	for range 5000 {
		m := fmt.Sprintf("element:%06d", r.IntN(n+100)) // a few new members
		score := float64(r.IntN(4000))
		if r.IntN(10) == 0 {
			if old, ok := model[m]; ok {
				score = old // unchanged: no write at all
			}
		}
		v.withZSet("z", false, func(z *ZSet) error {
			_, err := z.Add([]byte(m), score)
			return err
		})
		model[m] = score
	}
	if got := v.s.ReadStats().Gets - gets; got != 0 {
		t.Errorf("5,000 ZADDs of a hot sorted set read the store %d times", got)
	}
	if !v.isHot(0, "z") {
		t.Fatal("the sorted set went cold")
	}
	v.checkInvariants() // the hot copy, its meta record and its records agree
	v.reopen()
	want := model.sorted()
	v.withZSet("z", false, func(z *ZSet) error {
		var got []Member
		if err := z.Members(collect(&got)); err != nil {
			return err
		}
		if z.Len() != int64(len(want)) || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("after a restart: %d members (Len %d), want %d", len(got), z.Len(), len(want))
		}
		return nil
	})
	v.checkInvariants()
}

// TestHotZSetOverBudgetShareDemoted: a hot sorted set that outgrows an
// eighth of the budget is demoted by the write that grows it, and keeps
// working from the store.
func TestHotZSetOverBudgetShareDemoted(t *testing.T) {
	v := newEnv(t, defaultOpts()) // 1 MB: an eighth is 128 KB, about 1,000 members
	for lo := 0; lo < 3000; lo += 100 {
		v.withZSet("z", true, func(z *ZSet) error {
			for i := lo; i < lo+100; i++ {
				if _, err := z.Add(fmt.Appendf(nil, "element:%06d", i), float64(i)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if v.isHot(0, "z") {
		t.Fatal("a sorted set over an eighth of the hot budget is hot")
	}
	v.withZSet("z", false, func(z *ZSet) error {
		if z.Len() != 3000 {
			t.Fatalf("Len %d, want 3000", z.Len())
		}
		return nil
	})
	v.checkInvariants()
}

// TestCollMetaWrittenByAnotherHandle: two handles on one hot hash in one
// transaction; the second stores the meta (a new field), the first removes
// that field again. The first finds count and bytes as it opened them, but
// the record holds the second's: it must write the meta, not skip it.
func TestCollMetaWrittenByAnotherHandle(t *testing.T) {
	v := newEnv(t, defaultOpts())
	v.do(func(tx *Tx) error {
		c, err := tx.OpenColl(0, []byte("h"), codec.TypeHash, true)
		if err != nil {
			return err
		}
		if _, err := c.Set([]byte("a"), []byte("1")); err != nil {
			return err
		}
		return c.Close()
	})
	v.do(func(tx *Tx) error {
		a, err := tx.OpenColl(0, []byte("h"), codec.TypeHash, false)
		if err != nil {
			return err
		}
		b, err := tx.OpenColl(0, []byte("h"), codec.TypeHash, false)
		if err != nil {
			return err
		}
		if _, err := b.Set([]byte("b"), []byte("2")); err != nil {
			return err
		}
		if err := b.Close(); err != nil {
			return err
		}
		if ok, err := a.Del([]byte("b")); err != nil || !ok {
			return fmt.Errorf("HDEL b: %v %v", ok, err)
		}
		return a.Close()
	})
	m, ok := v.storedMeta(v.e.dbmap[0], "h")
	if !ok || m.Count != 1 || m.Bytes != 2 {
		t.Fatalf("stored meta %+v (found %v), want 1 field of 2 bytes", m, ok)
	}
	v.checkInvariants()
}
