package tiering

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// zmodel is what one sorted set must hold.
type zmodel map[string]float64

// sorted returns the model in ZRANGE order.
func (m zmodel) sorted() []Member {
	out := make([]Member, 0, len(m))
	for k, s := range m {
		out = append(out, Member{Member: k, Score: s})
	}
	slices.SortFunc(out, func(a, b Member) int {
		if c := cmp.Compare(a.Score, b.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Member, b.Member)
	})
	return out
}

// withZSet runs f on key's sorted set in one committed transaction.
func (v *env) withZSet(key string, create bool, f func(z *ZSet) error) {
	v.t.Helper()
	v.do(func(tx *Tx) error {
		z, err := tx.OpenZSet(0, []byte(key), create)
		if err != nil || z == nil {
			return err
		}
		if err := f(z); err != nil {
			return err
		}
		return z.Close()
	})
}

func collect(dst *[]Member) func([]byte, float64) bool {
	return func(m []byte, s float64) bool {
		*dst = append(*dst, Member{Member: string(m), Score: s})
		return true
	}
}

// randomScoreRange returns a range around the model's scores, with random
// exclusive and infinite bounds.
func randomScoreRange(r *rand.Rand) ScoreRange {
	pick := func() float64 {
		switch r.IntN(8) {
		case 0:
			return math.Inf(-1)
		case 1:
			return math.Inf(1)
		}
		return float64(r.IntN(40)-20) / 2
	}
	sr := ScoreRange{Min: pick(), Max: pick(), MinEx: r.IntN(3) == 0, MaxEx: r.IntN(3) == 0}
	if r.IntN(4) != 0 && sr.Min > sr.Max {
		sr.Min, sr.Max = sr.Max, sr.Min
	}
	return sr
}

func randomLexRange(r *rand.Rand) LexRange {
	pick := func() LexBound {
		switch r.IntN(8) {
		case 0:
			return LexBound{Inf: -1}
		case 1:
			return LexBound{Inf: 1}
		}
		return LexBound{Value: fmt.Sprintf("m%02d", r.IntN(60)), Exclusive: r.IntN(2) == 0}
	}
	return LexRange{Min: pick(), Max: pick()}
}

// checkZSet compares every read path of key with the model. It reports
// whether the set was held in memory.
func (v *env) checkZSet(key string, want zmodel, r *rand.Rand, lex bool) (hot bool) {
	v.t.Helper()
	all := want.sorted()
	v.withZSet(key, false, func(z *ZSet) error {
		hot = z.Hot()
		if z.Len() != int64(len(all)) {
			v.t.Fatalf("%s: Len %d, model %d", key, z.Len(), len(all))
		}
		var got []Member
		if err := z.Members(collect(&got)); err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(all) {
			v.t.Fatalf("%s (hot %v): Members %v, model %v", key, z.Hot(), got, all)
		}
		for i, m := range all {
			if i%7 != 0 && i != len(all)-1 {
				continue
			}
			s, ok, err := z.Score([]byte(m.Member))
			if err != nil || !ok || s != m.Score {
				v.t.Fatalf("%s: Score(%q) = %v %v %v, model %v", key, m.Member, s, ok, err, m.Score)
			}
			for _, rev := range []bool{false, true} {
				want := int64(i)
				if rev {
					want = int64(len(all) - 1 - i)
				}
				rank, _, ok, err := z.Rank([]byte(m.Member), rev)
				if err != nil || !ok || rank != want {
					v.t.Fatalf("%s: Rank(%q, rev %v) = %d %v %v, model %d", key, m.Member, rev, rank, ok, err, want)
				}
			}
		}
		if _, ok, _ := z.Score([]byte("absent")); ok {
			v.t.Fatalf("%s: absent member found", key)
		}
		for range 4 {
			sr := randomScoreRange(r)
			rev := r.IntN(2) == 0
			offset, limit := int64(r.IntN(3)), int64(r.IntN(6)-1)
			var exp []Member
			for _, m := range all {
				if !sr.Empty() && sr.Contains(m.Score) {
					exp = append(exp, m)
				}
			}
			n, err := z.CountByScore(&sr)
			if err != nil || n != int64(len(exp)) {
				v.t.Fatalf("%s: CountByScore(%+v) = %d %v, model %d", key, sr, n, err, len(exp))
			}
			if rev {
				slices.Reverse(exp)
			}
			exp = exp[min(int(offset), len(exp)):]
			if limit >= 0 {
				exp = exp[:min(int(limit), len(exp))]
			}
			var got []Member
			if err := z.RangeByScore(&sr, rev, offset, limit, collect(&got)); err != nil {
				return err
			}
			if fmt.Sprint(got) != fmt.Sprint(exp) {
				v.t.Fatalf("%s: RangeByScore(%+v, rev %v, %d, %d) = %v, model %v", key, sr, rev, offset, limit, got, exp)
			}
		}
		if len(all) > 0 {
			from := r.Int64N(int64(len(all)))
			to := from + r.Int64N(int64(len(all))-from)
			rev := r.IntN(2) == 0
			var got []Member
			if err := z.RangeByRank(from, to, rev, collect(&got)); err != nil {
				return err
			}
			exp := slices.Clone(all)
			if rev {
				slices.Reverse(exp)
			}
			if exp = exp[from : to+1]; fmt.Sprint(got) != fmt.Sprint(exp) {
				v.t.Fatalf("%s: RangeByRank(%d, %d, rev %v) = %v, model %v", key, from, to, rev, got, exp)
			}
		}
		if lex {
			for range 4 {
				lr := randomLexRange(r)
				rev := r.IntN(2) == 0
				var exp []Member
				for _, m := range all {
					if !lr.Empty() && lr.Contains(m.Member) {
						exp = append(exp, m)
					}
				}
				n, err := z.CountByLex(&lr)
				if err != nil || n != int64(len(exp)) {
					v.t.Fatalf("%s: CountByLex(%+v) = %d %v, model %d", key, lr, n, err, len(exp))
				}
				if rev {
					slices.Reverse(exp)
				}
				var got []Member
				if err := z.RangeByLex(&lr, rev, 0, -1, collect(&got)); err != nil {
					return err
				}
				if fmt.Sprint(got) != fmt.Sprint(exp) {
					v.t.Fatalf("%s: RangeByLex(%+v, rev %v) = %v, model %v", key, lr, rev, got, exp)
				}
			}
		}
		seen := map[string]bool{}
		cursor, calls := uint64(0), 0
		for {
			next, err := z.Scan(cursor, 5, func(m []byte, s float64) {
				if want[string(m)] != s {
					v.t.Fatalf("%s: Scan gave %q=%v, model %v", key, m, s, want[string(m)])
				}
				seen[string(m)] = true
			})
			if err != nil {
				return err
			}
			if calls++; next == 0 || calls > 10000 {
				break
			}
			cursor = next
		}
		if len(seen) != len(all) {
			v.t.Fatalf("%s: Scan returned %d members, model %d", key, len(seen), len(all))
		}
		return z.Random(5, r.IntN(2) == 0, func(m []byte, s float64) {
			if ws, ok := want[string(m)]; !ok || ws != s {
				v.t.Fatalf("%s: Random gave %q=%v, not in the model", key, m, s)
			}
		})
	})
	return hot
}

// TestZSetsAgainstModel runs random sorted-set writes on a few keys under
// a small hot tier, so sets are held in memory and served from the store,
// and checks every read path and the store's invariants against a model.
func TestZSetsAgainstModel(t *testing.T) {
	opts := defaultOpts()
	opts.HotBudget = 64 << 10
	v := newEnv(t, opts)
	r := rand.New(rand.NewPCG(7, 3))
	keys := []string{"z0", "z1", "big", "lex"}
	model := map[string]zmodel{}
	checks := map[bool]int{}  // by whether the set was hot
	skip := map[string]bool{} // sets Redis would hold as skiplists
	score := func(key string) float64 {
		if key == "lex" {
			return 0
		}
		switch r.IntN(12) {
		case 0:
			return math.Inf(1)
		case 1:
			return math.Inf(-1)
		case 2:
			return math.Copysign(0, -1)
		}
		return float64(r.IntN(40)-20) / 2
	}
	for step := range 2500 {
		key := keys[r.IntN(len(keys))]
		want := model[key]
		if want == nil {
			want = zmodel{}
		}
		switch op := r.IntN(100); {
		case op < 45:
			n := 1 + r.IntN(6)
			if key == "big" || r.IntN(15) == 0 {
				n = 50 + r.IntN(150)
			}
			v.withZSet(key, true, func(z *ZSet) error {
				for range n {
					m := fmt.Sprintf("m%02d", r.IntN(60))
					if key == "big" {
						m = fmt.Sprintf("b%05d", r.IntN(6000))
					}
					s := score(key)
					added, err := z.Add([]byte(m), s)
					if err != nil {
						return err
					}
					_, had := want[m]
					if added == had {
						t.Fatalf("step %d: Add(%s %q) added %v, model had it %v", step, key, m, added, had)
					}
					if !had && len(want)+1 > CompactZSetMembers {
						skip[key] = true // converted for good, as Redis does
					}
					if s == 0 && !skip[key] {
						s = 0 // the compact encoding has no -0
					}
					if !had || want[m] != s { // 0 and -0 are no update
						want[m] = s
					}
					if z.Skiplist() != skip[key] {
						t.Fatalf("step %d: %s skiplist %v, model %v", step, key, z.Skiplist(), skip[key])
					}
				}
				return nil
			})
		case op < 60:
			v.withZSet(key, false, func(z *ZSet) error {
				for range 1 + r.IntN(5) {
					m := fmt.Sprintf("m%02d", r.IntN(60))
					removed, err := z.Rem([]byte(m))
					if err != nil {
						return err
					}
					if _, had := want[m]; removed != had {
						t.Fatalf("step %d: Rem(%s %q) = %v, model had it %v", step, key, m, removed, had)
					}
					delete(want, m)
				}
				return nil
			})
		case op < 68:
			sr := randomScoreRange(r)
			v.withZSet(key, false, func(z *ZSet) error {
				var doomed []Member
				if err := z.RangeByScore(&sr, false, 0, -1, collect(&doomed)); err != nil {
					return err
				}
				for _, m := range doomed {
					delete(want, m.Member)
				}
				return z.RemoveAll(doomed)
			})
		case op < 72:
			dst := keys[r.IntN(len(keys))]
			if dst == key || len(want) == 0 || dst == "lex" || key == "lex" {
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
			model[dst] = cloneModel(want)
			skip[dst] = skip[key]
			if !copyOnly {
				want = zmodel{}
			}
		case op < 76:
			v.demoteAll()
		case op < 78:
			v.e.SetHotBudget(int64(16<<10) << r.IntN(4))
		default:
			if len(want) > 0 {
				checks[v.checkZSet(key, want, r, key == "lex")]++
			}
		}
		if len(want) == 0 {
			delete(model, key)
			delete(skip, key)
		} else {
			model[key] = want
		}
		if step%50 == 0 {
			v.checkInvariants()
		}
	}
	v.checkInvariants()
	for k, w := range model {
		v.checkZSet(k, w, r, k == "lex")
	}
	t.Logf("reads checked: %d on sets in memory, %d on sets in the store", checks[true], checks[false])
	if checks[true] < 20 || checks[false] < 20 {
		t.Fatalf("weak run: %d checks hot, %d cold; want both tiers exercised", checks[true], checks[false])
	}
}

func cloneModel(m zmodel) zmodel {
	out := make(zmodel, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestHotZSetReadAllocatesNothing: ZSCORE and a ZRANGE of a hot sorted set
// are served from memory without allocating.
func TestHotZSetReadAllocatesNothing(t *testing.T) {
	v := newEnv(t, defaultOpts())
	v.withZSet("z", true, func(z *ZSet) error {
		for i, m := range []string{"a", "b", "c"} {
			if _, err := z.Add([]byte(m), float64(i)); err != nil {
				return err
			}
		}
		return nil
	})
	key, member := []byte("z"), []byte("b")
	n := 0
	count := func([]byte, float64) bool { n++; return true }
	allocs := testing.AllocsPerRun(200, func() {
		tx := v.e.begin()
		z, err := tx.OpenZSet(0, key, false)
		if err != nil || z == nil || !z.Hot() {
			t.Fatalf("OpenZSet: %v %v", z, err)
		}
		if s, ok, err := z.Score(member); err != nil || !ok || s != 1 {
			t.Fatalf("Score = %v %v %v", s, ok, err)
		}
		if err := z.RangeByRank(0, 2, false, count); err != nil {
			t.Fatal(err)
		}
		tx.abort()
	})
	if allocs != 0 {
		t.Fatalf("hot ZSCORE+ZRANGE path allocates %.1f times", allocs)
	}
}

// TestHotZSetUpdateOwnsItsKeys: updating a member's score from a buffer
// that is then reused must not leave the set keyed by that buffer (a Go
// map assignment to an existing key stores the new key string).
func TestHotZSetUpdateOwnsItsKeys(t *testing.T) {
	v := newEnv(t, defaultOpts())
	buf := []byte("b")
	v.withZSet("z", true, func(z *ZSet) error {
		for i, m := range []string{"a", "b", "c"} {
			if _, err := z.Add([]byte(m), float64(i)); err != nil {
				return err
			}
		}
		_, err := z.Add(buf, 1.5)
		return err
	})
	copy(buf, "x") // the next request reuses the buffer
	v.withZSet("z", false, func(z *ZSet) error {
		added, err := z.Add([]byte("b"), 1)
		if err != nil || added {
			t.Fatalf("re-adding b: added %v, %v", added, err)
		}
		if z.Len() != 3 || !z.Hot() {
			t.Fatalf("Len %d hot %v, want 3 members in memory", z.Len(), z.Hot())
		}
		return nil
	})
	v.checkInvariants()
}
