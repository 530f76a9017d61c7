package tiering

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/tiering/stream"
)

// Structures consumed at one end (queues) must not slow down with the
// pops before: each pop leaves a tombstone in the store, and a walk that
// starts at the consumed end would step over all of them. These tests
// count the work, not the time: the internal points (live records and
// tombstones) the store's iterators visited (coldstore's IterPoints),
// for the first and the last 10% of the pops.

// consumeN is the size of the structures consumed; every one is over the
// sizes held in memory (zsetWholeMembers, listWholeElems), so it is cold.
const consumeN = 20_000

// maxCostRatio is how much more the last 10% of the pops may cost than
// the first 10%.
const maxCostRatio = 1.25

// pointsOf returns the iterator points f visited.
func (v *env) pointsOf(f func()) int64 {
	before := v.s.ReadStats().IterPoints
	f()
	return v.s.ReadStats().IterPoints - before
}

// checkConsumeCost pops a structure of n elements with pop (pop(i) must
// remove element i of the structure's order), measuring the first and the
// last tenth, and fails if the last tenth cost more than maxCostRatio
// times the first.
func checkConsumeCost(t *testing.T, v *env, what string, n int, pop func(i int)) {
	t.Helper()
	tenth := n / 10
	var first, last int64
	first = v.pointsOf(func() {
		for i := range tenth {
			pop(i)
		}
	})
	for i := tenth; i < n-tenth; i++ {
		pop(i)
	}
	last = v.pointsOf(func() {
		for i := n - tenth; i < n; i++ {
			pop(i)
		}
	})
	t.Logf("%s: %d pops: iterator points %.2f a pop for the first tenth, %.2f for the last", what, n,
		float64(first)/float64(tenth), float64(last)/float64(tenth))
	if float64(last) > maxCostRatio*float64(max(first, int64(tenth))) {
		t.Errorf("%s: the last %d pops visited %d iterator points, the first %d visited %d: over %.2fx",
			what, tenth, last, tenth, first, maxCostRatio)
	}
}

// consumeOpts keep every structure cold: reads never promote.
func consumeOpts() Options {
	opts := defaultOpts()
	opts.ColdReadMaxBytes = 1
	return opts
}

// zsetMember is member i of the consumed sorted sets, scored i.
func zsetMember(i int) string { return fmt.Sprintf("m:%09d", i) }

// loadColdZSet stores a sorted set of n members, member i scored i, and
// checks that it is cold.
func (v *env) loadColdZSet(key string, n int) {
	v.t.Helper()
	for lo := 0; lo < n; lo += 1000 {
		v.withZSet(key, true, func(z *ZSet) error {
			for i := lo; i < min(lo+1000, n); i++ {
				if _, err := z.Add([]byte(zsetMember(i)), float64(i)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	v.withZSet(key, false, func(z *ZSet) error {
		if z.Hot() || z.Len() != int64(n) {
			return fmt.Errorf("%s: hot %v, %d members, want cold and %d", key, z.Hot(), z.Len(), n)
		}
		return nil
	})
}

// zpop pops one member from the low (or high) end of key and checks it.
func (v *env) zpop(key string, max bool, want int) {
	v.t.Helper()
	v.withZSet(key, false, func(z *ZSet) error {
		var got []Member
		if err := z.RangeByRank(0, 0, max, collect(&got)); err != nil {
			return err
		}
		if len(got) != 1 || got[0].Member != zsetMember(want) || got[0].Score != float64(want) {
			return fmt.Errorf("pop from %s: %v, want %s", key, got, zsetMember(want))
		}
		return z.RemoveAll(got)
	})
}

// zfirst reads the lowest member of key by score (ZRANGEBYSCORE key -inf
// +inf LIMIT 0 1) in a transaction of its own, as a job scheduler does.
func (v *env) zfirst(key string) string {
	v.t.Helper()
	var got []Member
	v.withZSet(key, false, func(z *ZSet) error {
		r := ScoreRange{Min: math.Inf(-1), Max: math.Inf(1)}
		return z.RangeByScore(&r, false, 0, 1, collect(&got))
	})
	if len(got) != 1 {
		v.t.Fatalf("ZRANGEBYSCORE %s -inf +inf LIMIT 0 1: %v", key, got)
	}
	return got[0].Member
}

func (v *env) zrem(key, member string) {
	v.t.Helper()
	v.withZSet(key, false, func(z *ZSet) error {
		ok, err := z.Rem([]byte(member))
		if err == nil && !ok {
			err = fmt.Errorf("ZREM %s %s: not a member", key, member)
		}
		return err
	})
}

func TestConsumedZSetPopsCostTheSame(t *testing.T) {
	v := newEnv(t, consumeOpts())
	v.loadColdZSet("min", consumeN)
	checkConsumeCost(t, v, "ZPOPMIN", consumeN, func(i int) { v.zpop("min", false, i) })
	v.loadColdZSet("max", consumeN)
	checkConsumeCost(t, v, "ZPOPMAX", consumeN, func(i int) { v.zpop("max", true, consumeN-1-i) })
	v.loadColdZSet("jobs", consumeN)
	checkConsumeCost(t, v, "ZRANGEBYSCORE -inf +inf LIMIT 0 1 + ZREM", consumeN, func(i int) {
		m := v.zfirst("jobs")
		if m != zsetMember(i) {
			t.Fatalf("round %d: first job %s, want %s", i, m, zsetMember(i))
		}
		v.zrem("jobs", m)
	})
	for _, k := range []string{"min", "max", "jobs"} {
		if keys := v.keys(0); len(keys) != 0 {
			t.Fatalf("after popping %s: keys %v remain", k, keys)
		}
	}
}

// TestZSetBoundsSurviveAbortAndRestart: a pop whose transaction aborts
// leaves the member where it was, in memory's bounds as in the store; a
// restart (which forgets the bounds) and writes below and above the
// consumed ends are seen.
func TestZSetBoundsSurviveAbortAndRestart(t *testing.T) {
	v := newEnv(t, consumeOpts())
	const n = 6000
	v.loadColdZSet("q", n)
	for i := range 100 {
		v.zpop("q", false, i)
		v.zpop("q", true, n-1-i)
	}
	// Two pops at each end, then the transaction aborts.
	tx := v.e.begin()
	z, err := tx.OpenZSet(0, []byte("q"), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, max := range []bool{false, false, true, true} {
		var got []Member
		if err := z.RangeByRank(0, 0, max, collect(&got)); err != nil {
			t.Fatal(err)
		}
		if err := z.RemoveAll(got); err != nil {
			t.Fatal(err)
		}
	}
	tx.abort()
	v.zpop("q", false, 100)
	v.zpop("q", true, n-101)
	if m := v.zfirst("q"); m != zsetMember(101) {
		t.Fatalf("after an aborted pop: first %s, want %s", m, zsetMember(101))
	}
	// A member added below the consumed head and above the tail is the
	// next one popped.
	v.withZSet("q", false, func(z *ZSet) error {
		if _, err := z.Add([]byte(zsetMember(5)), 5); err != nil {
			return err
		}
		_, err := z.Add([]byte(zsetMember(n+5)), n+5)
		return err
	})
	v.zpop("q", false, 5)
	v.zpop("q", true, n+5)
	// A member moved below the head by a new score.
	v.withZSet("q", false, func(z *ZSet) error {
		_, err := z.Add([]byte(zsetMember(3000)), 7)
		return err
	})
	if m := v.zfirst("q"); m != zsetMember(3000) {
		t.Fatalf("after ZADD 7 %s: first %s", zsetMember(3000), m)
	}
	v.zrem("q", zsetMember(3000))
	v.reopen()
	v.zpop("q", false, 101)
	v.zpop("q", true, n-102)
	var left int64
	v.withZSet("q", false, func(z *ZSet) error { left = z.Len(); return nil })
	if want := int64(n - 2*102 - 1); left != want {
		t.Fatalf("after restart: %d members, want %d", left, want)
	}
}

// TestConsumedListPopsCostTheSame: LPOP and RPOP of a cold list read by
// absolute index, from the meta record's head and tail.
func TestConsumedListPopsCostTheSame(t *testing.T) {
	v := newEnv(t, consumeOpts())
	for _, left := range []bool{true, false} {
		for lo := 0; lo < consumeN; lo += 1000 {
			v.do(func(tx *Tx) error {
				l, err := tx.OpenList(0, []byte("q"), true)
				if err != nil {
					return err
				}
				for i := lo; i < min(lo+1000, consumeN); i++ {
					if err := l.Push(false, []byte(zsetMember(i))); err != nil {
						return err
					}
				}
				return l.Close()
			})
		}
		name := "RPOP"
		if left {
			name = "LPOP"
		}
		checkConsumeCost(t, v, name, consumeN, func(i int) {
			want := zsetMember(i)
			if !left {
				want = zsetMember(consumeN - 1 - i)
			}
			v.do(func(tx *Tx) error {
				l, err := tx.OpenList(0, []byte("q"), false)
				if err != nil || l == nil {
					return errors.Join(err, errors.New("list gone"))
				}
				var got string
				if _, err := l.Pop(left, 1, func(b []byte) { got = string(b) }); err != nil {
					return err
				}
				if got != want {
					return fmt.Errorf("%s: %q, want %q", name, got, want)
				}
				return l.Close()
			})
		})
	}
}

// TestConsumedSetPopsCostTheSame: SPOP of a cold set draws from a random
// point of the member order; the members popped before must not be
// stepped over again.
func TestConsumedSetPopsCostTheSame(t *testing.T) {
	v := newEnv(t, consumeOpts())
	for lo := 0; lo < consumeN; lo += 1000 {
		v.do(func(tx *Tx) error {
			c, err := tx.OpenColl(0, []byte("s"), codec.TypeSet, true)
			if err != nil {
				return err
			}
			for i := lo; i < min(lo+1000, consumeN); i++ {
				if _, err := c.Set([]byte(zsetMember(i)), nil); err != nil {
					return err
				}
			}
			return c.Close()
		})
	}
	seen := make(map[string]bool, consumeN)
	checkConsumeCost(t, v, "SPOP", consumeN, func(int) {
		v.do(func(tx *Tx) error {
			c, err := tx.OpenColl(0, []byte("s"), codec.TypeSet, false)
			if err != nil || c == nil {
				return errors.Join(err, errors.New("set gone"))
			}
			if c.Resident() {
				return errors.New("set is hot")
			}
			var got []byte
			if err := c.Random(1, true, func(f, _ []byte) { got = append([]byte(nil), f...) }); err != nil {
				return err
			}
			if seen[string(got)] {
				return fmt.Errorf("SPOP: %q popped twice", got)
			}
			seen[string(got)] = true
			if ok, err := c.Del(got); err != nil || !ok {
				return errors.Join(err, fmt.Errorf("SREM %q: %v", got, ok))
			}
			return c.Close()
		})
	})
	if len(seen) != consumeN {
		t.Fatalf("%d members popped, want %d", len(seen), consumeN)
	}
}

// TestSweepsOfLaterWavesCostTheSame: the expiry sweeper deletes index
// entries in time order; a wave of keys expiring after a wave already
// swept must not step over the first wave's tombstones.
func TestSweepsOfLaterWavesCostTheSame(t *testing.T) {
	v := newEnv(t, consumeOpts())
	v.e.SetExpiryPaused(true) // the test sweeps
	const n, step = consumeN, 100
	var at int64
	sweepWave := func(wave int) (first, last int64) {
		at = v.now() + 30
		v.do(func(tx *Tx) error {
			for i := range n {
				if err := tx.SetString(0, []byte(fmt.Sprintf("w%d:%s", wave, zsetMember(i))), []byte("v"), at); err != nil {
					return err
				}
			}
			return nil
		})
		for v.now() <= at {
			time.Sleep(5 * time.Millisecond)
		}
		swept := 0
		for swept < n {
			var got int
			p := v.pointsOf(func() {
				var err error
				if got, err = v.e.SweepExpired(step); err != nil {
					t.Fatal(err)
				}
			})
			if got != step {
				t.Fatalf("wave %d: a sweep after %d removed %d, want %d", wave, swept, got, step)
			}
			swept += got
			switch {
			case swept <= n/10:
				first += p
			case swept > n-n/10:
				last += p
			}
		}
		if keys, _ := v.sizes(0); keys != 0 {
			t.Fatalf("wave %d: %d keys left", wave, keys)
		}
		return first, last
	}
	first, _ := sweepWave(1)
	_, last := sweepWave(2)
	t.Logf("sweeper: %d keys a wave: iterator points %.2f a key for the first tenth of wave 1, %.2f for the last tenth of wave 2",
		n, float64(first)/(n/10), float64(last)/(n/10))
	if float64(last) > maxCostRatio*float64(max(first, n/10)) {
		t.Errorf("the last %d keys of wave 2 cost %d iterator points, the first %d of wave 1 %d: over %.2fx", n/10, last, n/10, first, maxCostRatio)
	}
	// An expiry written below the floor (due before the second wave) is
	// swept.
	v.set(0, "early", "v", at-5)
	if keys, _ := v.sizes(0); keys != 1 {
		t.Fatalf("%d keys stored, want the early one", keys)
	}
	if _, err := v.e.SweepExpired(step); err != nil {
		t.Fatal(err)
	}
	if keys, _ := v.sizes(0); keys != 0 {
		t.Fatalf("a key due before the floor was not swept: %v", v.keys(0))
	}
}

// TestConsumedStreamPopsCostTheSame: XDEL of the oldest entry and XTRIM
// MINID of one entry at a time, on a cold stream: finding the new first
// entry (and first node) must not walk over the entries deleted before.
func TestConsumedStreamPopsCostTheSame(t *testing.T) {
	v := newEnv(t, consumeOpts())
	id := func(i int) stream.ID { return stream.ID{Ms: uint64(i + 1), Seq: 1} }
	withStream := func(key string, f func(x *Stream) error) {
		t.Helper()
		v.do(func(tx *Tx) error {
			x, err := tx.OpenStream(0, []byte(key), true)
			if err != nil {
				return err
			}
			if err := f(x); err != nil {
				return err
			}
			return x.Close()
		})
	}
	for _, key := range []string{"xdel", "xtrim"} {
		for lo := 0; lo < consumeN; lo += 1000 {
			withStream(key, func(x *Stream) error {
				for i := lo; i < lo+1000; i++ {
					x.Append(id(i), [][]byte{[]byte("f"), []byte(zsetMember(i))}, 100, 4096) // Redis's node limits
				}
				return nil
			})
		}
		// Each XADD rewrote its node's record: flushed, the memtable's
		// versions of them are gone and the walks count the pops' work.
		if err := v.s.Flush(); err != nil {
			t.Fatal(err)
		}
		withStream(key, func(x *Stream) error {
			if !x.Cold() || x.Len() != consumeN {
				return fmt.Errorf("%s: cold %v, %d entries, want cold and %d", key, x.Cold(), x.Len(), consumeN)
			}
			return nil
		})
	}
	checkConsumeCost(t, v, "XDEL of the oldest", consumeN, func(i int) {
		withStream("xdel", func(x *Stream) error {
			if !x.Delete(id(i)) {
				return fmt.Errorf("XDEL %v: not there", id(i))
			}
			if x.Len() > 0 && x.First != id(i+1) {
				return fmt.Errorf("after XDEL %v: first %v, want %v", id(i), x.First, id(i+1))
			}
			return nil
		})
	})
	checkConsumeCost(t, v, "XTRIM MINID", consumeN, func(i int) {
		withStream("xtrim", func(x *Stream) error {
			if n := x.Trim(stream.TrimArgs{Strategy: stream.TrimMinID, MinID: id(i + 1)}); n != 1 {
				return fmt.Errorf("XTRIM MINID %v: %d trimmed, want 1", id(i+1), n)
			}
			if x.Len() > 0 && x.First != id(i+1) {
				return fmt.Errorf("after XTRIM MINID %v: first %v", id(i+1), x.First)
			}
			return nil
		})
	})
}

// TestHoleSetAgainstModel drives a holeSet with random adds and cuts over
// one-byte keys and checks it against a model (the covered keys; a hole
// is a maximal run of them, since touching holes merge) and its own
// invariants: sorted, disjoint, never touching.
func TestHoleSetAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const u = 40
	key := func(p int) []byte { return []byte{byte(p)} }
	for round := range 200 {
		var h holeSet
		var covered [u + 1]bool
		for op := range 60 {
			if r.IntN(3) > 0 {
				s := r.IntN(u)
				e := s + 1 + r.IntN(u-s)
				h.add(key(s), key(e), true)
				for p := s; p < e; p++ {
					covered[p] = true
				}
			} else {
				k := r.IntN(u)
				h.cut(key(k))
				if covered[k] {
					lo, hi := k, k
					for lo > 0 && covered[lo-1] {
						lo--
					}
					for hi < u && covered[hi] {
						hi++
					}
					for p := lo; p < hi; p++ {
						covered[p] = false
					}
				}
			}
			for i := range h.holes {
				x := h.holes[i]
				if bytes.Compare(x.start, x.end) >= 0 || i > 0 && bytes.Compare(h.holes[i-1].end, x.start) >= 0 {
					t.Fatalf("round %d op %d: holes %q not sorted, disjoint and apart", round, op, h.holes)
				}
			}
			for p := range u {
				if got := h.find(key(p)) >= 0; got != covered[p] {
					t.Fatalf("round %d op %d: key %d in a hole %v, model %v (holes %q)", round, op, p, got, covered[p], h.holes)
				}
			}
		}
	}
}
