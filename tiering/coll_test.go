package tiering

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spillway/spillway/codec"
)

// collModel is what the hashes and sets of db 0 must hold.
type collModel map[string]map[string]string

// openColl runs f on key's structure in one committed transaction.
func (v *env) withColl(key string, t codec.Type, create bool, f func(c *Coll)) {
	v.t.Helper()
	v.do(func(tx *Tx) error {
		c, err := tx.OpenColl(0, []byte(key), t, create)
		if err != nil {
			return err
		}
		if c == nil {
			return nil
		}
		f(c)
		return c.Close()
	})
}

// checkColl compares key's content, read every way a command can, with the
// model.
func (v *env) checkColl(key string, t codec.Type, want map[string]string) {
	v.t.Helper()
	v.do(func(tx *Tx) error {
		c, err := tx.OpenColl(0, []byte(key), t, false)
		if err != nil {
			return err
		}
		if c == nil {
			if len(want) != 0 {
				v.t.Fatalf("%s missing, model has %d fields", key, len(want))
			}
			return nil
		}
		if c.Len() != int64(len(want)) {
			v.t.Fatalf("%s: Len %d, model %d", key, c.Len(), len(want))
		}
		got := map[string]string{}
		if err := c.Each(func(f, val []byte) bool { got[string(f)] = string(val); return true }); err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			v.t.Fatalf("%s: Each %v, model %v", key, got, want)
		}
		seen := map[string]bool{}
		cursor, calls := uint64(0), 0
		for {
			next, err := c.Scan(cursor, 7, func(f, val []byte) {
				if want[string(f)] != string(val) {
					v.t.Fatalf("%s: Scan returned %q=%q, model %q", key, f, val, want[string(f)])
				}
				seen[string(f)] = true
			})
			if err != nil {
				return err
			}
			if calls++; next == 0 || calls > 10000 {
				break
			}
			cursor = next
		}
		if len(seen) != len(want) {
			v.t.Fatalf("%s: Scan returned %d distinct fields, model %d", key, len(seen), len(want))
		}
		for f, val := range want {
			got, ok, err := c.Get([]byte(f))
			if err != nil || !ok || string(got) != val {
				v.t.Fatalf("%s: Get(%q) = %q %v %v, model %q", key, f, got, ok, err, val)
			}
		}
		if _, ok, _ := c.Get([]byte("absent")); ok {
			v.t.Fatalf("%s: Get(absent) found", key)
		}
		n := min(int64(len(want)), 5)
		picked := map[string]bool{}
		if err := c.Random(n, true, func(f, _ []byte) { picked[string(f)] = true }); err != nil {
			return err
		}
		for f := range picked {
			if _, ok := want[f]; !ok {
				v.t.Fatalf("%s: Random returned %q, not a field", key, f)
			}
		}
		if int64(len(picked)) != n {
			v.t.Fatalf("%s: Random(%d, distinct) returned %d distinct fields", key, n, len(picked))
		}
		return nil
	})
}

// TestCollectionsAgainstModel drives hashes and sets of every size through
// writes, reads, renames, copies and deletions with a hot tier small enough
// that they move between tiers all the time (big ones in steps), checking
// every read path against a model and the store's invariants throughout.
func TestCollectionsAgainstModel(t *testing.T) {
	for _, typ := range []codec.Type{codec.TypeHash, codec.TypeSet} {
		t.Run(typ.String(), func(t *testing.T) {
			opts := defaultOpts()
			opts.HotBudget = 4 << 20 // structures up to 512 KB are hot
			v := newEnv(t, opts)
			r := rand.New(rand.NewPCG(1, uint64(typ)))
			model := collModel{}
			keys := []string{"a", "b", "c", "big1", "big2"}
			value := func() string {
				if typ == codec.TypeSet {
					return ""
				}
				return fmt.Sprint("v", r.IntN(1000))
			}
			for step := 0; step < 400; step++ {
				key := keys[r.IntN(len(keys))]
				span := 30
				if key[0] == 'b' && len(key) > 1 {
					span = 5000 // promoted in steps when admitted
				}
				switch op := r.IntN(10); {
				case op < 5: // write a batch of fields
					n := 1 + r.IntN(span/3+1)
					v.withColl(key, typ, true, func(c *Coll) {
						for range n {
							f := fmt.Sprint("f", r.IntN(span))
							val := value()
							if _, err := c.Set([]byte(f), []byte(val)); err != nil {
								t.Fatal(err)
							}
							if model[key] == nil {
								model[key] = map[string]string{}
							}
							model[key][f] = val
						}
					})
				case op < 7: // delete some fields
					v.withColl(key, typ, false, func(c *Coll) {
						for range 1 + r.IntN(span/4+1) {
							f := fmt.Sprint("f", r.IntN(span))
							ok, err := c.Del([]byte(f))
							if err != nil {
								t.Fatal(err)
							}
							if _, want := model[key][f]; ok != want {
								t.Fatalf("Del(%s.%s) = %v, model %v", key, f, ok, want)
							}
							delete(model[key], f)
						}
					})
					if len(model[key]) == 0 {
						delete(model, key)
					}
				case op < 8: // rename or copy to another key
					dst := keys[r.IntN(len(keys))]
					if dst == key {
						continue
					}
					copyIt := r.IntN(2) == 0
					v.do(func(tx *Tx) error {
						if copyIt {
							_, err := tx.Copy(0, []byte(key), 0, []byte(dst), true)
							return err
						}
						_, _, err := tx.Rename(0, []byte(key), 0, []byte(dst), false)
						return err
					})
					if _, ok := model[key]; ok {
						model[dst] = maps(model[key])
						if !copyIt {
							delete(model, key)
						}
					}
				case op < 9: // delete the key, or push everything out
					if r.IntN(2) == 0 {
						v.del(0, key)
						delete(model, key)
						continue
					}
					for i := range 10 {
						v.set(1, fmt.Sprint("filler", i), string(make([]byte, 480<<10)), 0)
					}
				default: // let stepwise promotions progress
					time.Sleep(2 * time.Millisecond)
				}
				if step%20 == 0 {
					for _, k := range keys {
						v.checkColl(k, typ, model[k])
					}
					v.checkInvariants()
				}
			}
			for _, k := range keys {
				v.checkColl(k, typ, model[k])
			}
			v.checkInvariants()
			st := &v.e.Stats
			t.Logf("promotions %d (%d in steps), demotions %d, cold reads %d", st.Promotions.Load(), st.SteppedPromotions.Load(), st.Demotions.Load(), st.ColdReads.Load())
			if st.SteppedPromotions.Load() == 0 || st.Promotions.Load() == st.SteppedPromotions.Load() || st.ColdReads.Load() == 0 {
				t.Fatal("structures never moved between tiers")
			}
		})
	}
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, val := range m {
		out[k] = val
	}
	return out
}

// Opening a hot structure and reading a field allocates nothing: handles
// come from the transaction's pool.
func TestHotCollReadAllocatesNothing(t *testing.T) {
	v := newEnv(t, defaultOpts())
	v.withColl("h", codec.TypeHash, true, func(c *Coll) {
		if _, err := c.Set([]byte("f"), []byte("v")); err != nil {
			t.Fatal(err)
		}
	})
	key, field := []byte("h"), []byte("f")
	allocs := testing.AllocsPerRun(200, func() {
		tx := v.e.begin()
		c, err := tx.OpenColl(0, key, codec.TypeHash, false)
		if err != nil || c == nil {
			t.Fatalf("OpenColl: %v %v", c, err)
		}
		if got, ok, err := c.Get(field); err != nil || !ok || string(got) != "v" {
			t.Fatalf("Get = %q %v %v", got, ok, err)
		}
		tx.abort()
	})
	if allocs != 0 {
		t.Fatalf("hot HGET path allocates %.1f times", allocs)
	}
}
