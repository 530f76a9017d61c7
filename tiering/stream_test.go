package tiering

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/tiering/stream"
)

// renderStream describes everything a stream holds, for comparisons.
func renderStream(s *stream.Stream) string {
	var b strings.Builder
	fmt.Fprintf(&b, "len %d last %v first %v maxdel %v added %d nodes %d rax %d\n",
		s.Len(), s.Last, s.First, s.MaxDeleted, s.EntriesAdded, s.Nodes(), s.RadixNodes())
	s.Range(stream.ID{}, stream.MaxID, false, func(e *stream.Entry) bool {
		fmt.Fprintf(&b, "%v %q\n", e.ID, e.Fields)
		return true
	})
	for _, g := range s.Groups() {
		lo, hi := g.PendingBounds()
		fmt.Fprintf(&b, "group %s %v %d pel %d %v..%v\n", g.Name, g.LastID, g.EntriesRead, g.PendingCount(), lo, hi)
		for _, c := range g.Consumers() {
			fmt.Fprintf(&b, "  consumer %s %d pel %d from %v:", c.Name, c.SeenTime, c.PendingCount(), c.PendingMin())
			s.EachPending(g, c, stream.ID{}, stream.MaxID, func(n *stream.NACK) bool {
				fmt.Fprintf(&b, " %v", n.ID)
				return true
			})
			b.WriteString("\n")
		}
		s.EachPending(g, nil, stream.ID{}, stream.MaxID, func(n *stream.NACK) bool {
			fmt.Fprintf(&b, "  pending %v %s %d %d\n", n.ID, n.Consumer.Name, n.DeliveryTime, n.DeliveryCount)
			return true
		})
	}
	return b.String()
}

// fillStream builds a stream exercising every record kind: entries over
// several nodes, deletions, a trim, groups, consumers, pending entries.
func fillStream(t *testing.T, v *env, db int, key string) {
	t.Helper()
	v.do(func(tx *Tx) error {
		s, err := tx.OpenStream(db, []byte(key), true)
		if err != nil {
			return err
		}
		for i := 1; i <= 40; i++ {
			f := [][]byte{[]byte("f"), []byte(fmt.Sprint(i))}
			if i%7 == 0 {
				f = append(f, []byte("other"), []byte("x"))
			}
			s.Append(stream.ID{Ms: uint64(i), Seq: 0}, f, 5, 4096)
		}
		s.Delete(stream.ID{Ms: 3})
		s.Delete(stream.ID{Ms: 20})
		s.Trim(stream.TrimArgs{Strategy: stream.TrimMaxLen, MaxLen: 35})
		g := s.CreateGroup([]byte("g1"), stream.ID{}, -1)
		s.CreateGroup([]byte("g0"), stream.ID{Ms: 30}, 28)
		a := s.CreateConsumer(g, []byte("alice"), 1000)
		c := s.CreateConsumer(g, []byte("bob"), 2000)
		for i := 6; i <= 12; i++ {
			s.Deliver(g, a, stream.ID{Ms: uint64(i)}, 3000+int64(i), false)
		}
		s.Claim(g, s.Pending(g, stream.ID{Ms: 8}), c, 5000, 4)
		s.Ack(g, stream.ID{Ms: 9})
		return s.Close()
	})
}

func openRender(t *testing.T, v *env, db int, key string) string {
	t.Helper()
	var out string
	v.do(func(tx *Tx) error {
		s, err := tx.OpenStream(db, []byte(key), false)
		if err != nil || s == nil {
			return fmt.Errorf("open %s: %v %v", key, s, err)
		}
		out = renderStream(s.Stream)
		return nil
	})
	return out
}

// A stream's records (entries, nodes, groups, consumers, pending entries)
// rebuild it exactly: after a restart, read cold, and copied.
func TestStreamRecordsRebuildIt(t *testing.T) {
	for _, budget := range []int64{1 << 20, 2000} {
		t.Run(fmt.Sprint("budget ", budget), func(t *testing.T) {
			o := defaultOpts()
			o.HotBudget = budget
			v := newEnv(t, o)
			fillStream(t, v, 0, "s")
			want := openRender(t, v, 0, "s")
			if !strings.Contains(want, "pending {8 0} bob 5000 4") || !strings.Contains(want, "len 35") {
				t.Fatalf("unexpected stream:\n%s", want)
			}
			v.demoteAll()
			if got := openRender(t, v, 0, "s"); got != want {
				t.Fatalf("cold stream:\n%s\nwant:\n%s", got, want)
			}
			v.do(func(tx *Tx) error {
				_, err := tx.Copy(0, []byte("s"), 1, []byte("c"), false)
				return err
			})
			if got := openRender(t, v, 1, "c"); got != want {
				t.Fatalf("copy:\n%s\nwant:\n%s", got, want)
			}
			v.reopen()
			if got := openRender(t, v, 0, "s"); got != want {
				t.Fatalf("after restart:\n%s\nwant:\n%s", got, want)
			}
			if got := openRender(t, v, 1, "c"); got != want {
				t.Fatalf("copy after restart:\n%s\nwant:\n%s", got, want)
			}
			if !v.del(0, "s") || !v.del(1, "c") {
				t.Fatal("delete failed")
			}
			if k, _ := v.sizes(0); k != 0 {
				t.Fatalf("%d keys left", k)
			}
		})
	}
}

// Deleting a stream, or replacing it, notes it ready: blocked consumer
// group readers must be told.
func TestStreamGoneIsReady(t *testing.T) {
	v := newEnv(t, defaultOpts())
	fillStream(t, v, 2, "s")
	v.e.AddBlockedClients(1)
	defer v.e.AddBlockedClients(-1)
	v.do(func(tx *Tx) error {
		if err := tx.SetString(2, []byte("s"), []byte("v"), 0); err != nil {
			return err
		}
		r := tx.TakeReady()
		if len(r) != 1 || r[0].DB != 2 || string(r[0].Key) != "s" {
			return fmt.Errorf("ready %v, want db 2 key s", r)
		}
		return nil
	})
}

// mutateStream changes a stored stream in a transaction of its own: on a
// cold stream every change goes to its records without loading entries.
func mutateStream(t *testing.T, v *env, db int, key string) {
	t.Helper()
	v.do(func(tx *Tx) error {
		s, err := tx.OpenStream(db, []byte(key), false)
		if err != nil || s == nil {
			return fmt.Errorf("open: %v", err)
		}
		for i := 41; i <= 60; i++ {
			s.Append(stream.ID{Ms: uint64(i)}, [][]byte{[]byte("f"), []byte(fmt.Sprint(i))}, 5, 4096)
		}
		s.Delete(stream.ID{Ms: 5})
		s.Delete(stream.ID{Ms: 44})
		s.Delete(stream.ID{Ms: 99})
		s.Trim(stream.TrimArgs{Strategy: stream.TrimMaxLen, Approx: true, MaxLen: 40, Limit: 100})
		s.Trim(stream.TrimArgs{Strategy: stream.TrimMinID, MinID: stream.ID{Ms: 23}})
		g := s.Group([]byte("g1"))
		c := s.CreateConsumer(g, []byte("carol"), 7000)
		s.Range(stream.ID{Ms: 24}, stream.ID{Ms: 26}, false, func(e *stream.Entry) bool {
			s.Deliver(g, c, e.ID, 8000, false)
			return true
		})
		s.Ack(g, stream.ID{Ms: 10})
		return s.Close()
	})
}

// The same changes give the same stream whether it is held whole or cold.
func TestStreamColdWritesMatchHot(t *testing.T) {
	var renders []string
	for _, budget := range []int64{1 << 20, 2000} {
		o := defaultOpts()
		o.HotBudget = budget
		v := newEnv(t, o)
		fillStream(t, v, 0, "s")
		v.demoteAll()
		mutateStream(t, v, 0, "s")
		got := openRender(t, v, 0, "s")
		v.reopen()
		if again := openRender(t, v, 0, "s"); again != got {
			t.Fatalf("budget %d: after restart\n%s\nwant\n%s", budget, again, got)
		}
		renders = append(renders, got)
	}
	if renders[0] != renders[1] {
		t.Fatalf("cold stream after changes:\n%s\nhot:\n%s", renders[1], renders[0])
	}
	if !strings.Contains(renders[0], "len 37 ") || !strings.Contains(renders[0], "pending {24 0} carol 8000 1") {
		t.Fatalf("unexpected stream:\n%s", renders[0])
	}
}

// Random changes applied to a stream held whole (big budget) and to the
// same stream cold (tiny budget) leave both alike after every
// transaction, and after a restart.
func TestStreamRandomColdMatchesHot(t *testing.T) {
	envs := make([]*env, 2)
	for i, budget := range []int64{1 << 22, 1500} {
		o := defaultOpts()
		o.HotBudget = budget
		envs[i] = newEnv(t, o)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	next := uint64(1)
	for round := range 200 {
		ops := make([]func(s *Stream), 0, 8)
		for range 1 + rng.IntN(8) {
			k, arg := rng.IntN(7), rng.Uint64N(next+5)
			switch k {
			case 0, 1, 2:
				id := stream.ID{Ms: next, Seq: uint64(rng.IntN(3))}
				next++
				f := [][]byte{[]byte("f"), []byte(fmt.Sprint(arg))}
				if rng.IntN(4) == 0 {
					f = append(f, []byte("g"), []byte("x"))
				}
				ops = append(ops, func(s *Stream) { s.Append(id, f, 4, 200) })
			case 3:
				ops = append(ops, func(s *Stream) { s.Delete(stream.ID{Ms: arg, Seq: 0}) })
			case 4:
				approx := rng.IntN(2) == 0
				ops = append(ops, func(s *Stream) {
					s.Trim(stream.TrimArgs{Strategy: stream.TrimMaxLen, Approx: approx, MaxLen: int64(arg % 40), Limit: 100})
				})
			case 5:
				ops = append(ops, func(s *Stream) {
					s.Trim(stream.TrimArgs{Strategy: stream.TrimMinID, MinID: stream.ID{Ms: arg / 3}})
				})
			case 6:
				ops = append(ops, func(s *Stream) {
					g := s.Group([]byte("g"))
					if g == nil {
						g = s.CreateGroup([]byte("g"), stream.ID{}, -1)
					}
					name := []byte{'c', byte('0' + arg%3)}
					c := s.Consumer(g, name, false, 0)
					if c == nil {
						c = s.CreateConsumer(g, name, 1)
					}
					var ids []stream.ID
					s.Range(g.LastID, stream.MaxID, false, func(e *stream.Entry) bool {
						ids = append(ids, e.ID)
						return len(ids) < 3
					})
					for _, id := range ids {
						s.Deliver(g, c, id, int64(round), false)
					}
					// Acknowledge the lowest, the highest or one in the
					// middle; claim one for c; now and then drop a consumer.
					var pel []*stream.NACK
					s.EachPending(g, nil, stream.ID{}, stream.MaxID, func(n *stream.NACK) bool {
						pel = append(pel, n)
						return true
					})
					if len(pel) > 0 {
						s.Ack(g, pel[[]int{0, len(pel) - 1, len(pel) / 2}[arg%3]].ID)
					}
					if len(pel) > 2 {
						if n := s.Pending(g, pel[1].ID); n != nil {
							s.Claim(g, n, c, int64(round), n.DeliveryCount+1)
						}
					}
					if arg%11 == 0 {
						if d := s.Consumer(g, []byte("c1"), false, 0); d != nil {
							s.DeleteConsumer(g, d)
						}
					}
					if arg%17 == 0 {
						s.DestroyGroup([]byte("g"))
					}
				})
			}
		}
		var renders [2]string
		for i, v := range envs {
			v.do(func(tx *Tx) error {
				s, err := tx.OpenStream(0, []byte("r"), true)
				if err != nil {
					return err
				}
				for _, op := range ops {
					op(s)
				}
				renders[i] = renderStream(s.Stream)
				return s.Close()
			})
		}
		if renders[0] != renders[1] {
			t.Fatalf("round %d: cold\n%s\nwhole\n%s", round, renders[1], renders[0])
		}
	}
	for i, v := range envs {
		v.do(func(tx *Tx) error {
			s, err := tx.OpenStream(0, []byte("r"), false)
			if err == nil && s.Cold() != (i == 1) {
				err = fmt.Errorf("budget %d: cold %v", v.opts.HotBudget, s.Cold())
			}
			return err
		})
	}
	want := openRender(t, envs[0], 0, "r")
	for _, v := range envs {
		v.reopen()
		if got := openRender(t, v, 0, "r"); got != want {
			t.Fatalf("after restart\n%s\nwant\n%s", got, want)
		}
	}
}

// withStream runs f on stream key of database 0 (created if missing) in
// a transaction of its own, then closes it.
func (v *env) withStream(key string, f func(x *Stream) error) {
	v.t.Helper()
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

// costOf returns the store reads f made: point lookups plus the internal
// points (records and tombstones) iterators visited.
func (v *env) costOf(f func()) int64 {
	before := v.s.ReadStats()
	f()
	after := v.s.ReadStats()
	return after.Gets - before.Gets + after.IterPoints - before.IterPoints
}

// pelID is entry i of the streams with a backlog.
func pelID(i int) stream.ID { return stream.ID{Ms: uint64(i + 1), Seq: 1} }

// pelConsumers are the consumers the backlog is delivered to, entry i to
// pelConsumers[i%4].
var pelConsumers = []string{"c0", "c1", "c2", "c3"}

// loadBacklog stores a stream of n entries, all delivered to group g's
// consumers and none acknowledged (a queue whose consumers died), and
// checks it is cold with n pending.
func (v *env) loadBacklog(key string, n int) {
	v.t.Helper()
	for lo := 0; lo < n; lo += 1000 {
		v.withStream(key, func(x *Stream) error {
			g := x.Group([]byte("g"))
			if g == nil {
				g = x.CreateGroup([]byte("g"), stream.ID{}, 0)
			}
			for i := lo; i < min(lo+1000, n); i++ {
				x.Append(pelID(i), [][]byte{[]byte("f"), []byte(zsetMember(i))}, 100, 4096)
				name := []byte(pelConsumers[i%len(pelConsumers)])
				c := x.Consumer(g, name, false, 0)
				if c == nil {
					c = x.CreateConsumer(g, name, int64(i))
				}
				x.Deliver(g, c, pelID(i), int64(i), false)
			}
			return nil
		})
	}
	if err := v.s.Flush(); err != nil {
		v.t.Fatal(err)
	}
	v.withStream(key, func(x *Stream) error {
		if g := x.Group([]byte("g")); !x.Cold() || g == nil || g.PendingCount() != int64(n) {
			return fmt.Errorf("%s: cold %v, group %v, want cold with %d pending", key, x.Cold(), g, n)
		}
		return nil
	})
}

// collectPending returns the first count pending entries of g from start
// (c's only if c is not nil).
func collectPending(x *Stream, g *stream.Group, c *stream.Consumer, start stream.ID, count int) []*stream.NACK {
	var out []*stream.NACK
	x.EachPending(g, c, start, stream.MaxID, func(n *stream.NACK) bool {
		out = append(out, n)
		return len(out) < count
	})
	return out
}

// pelOpCost bounds the store reads of one pending-entry operation (XACK,
// XCLAIM of one ID): a point read, a seek for the next lowest ID.
const pelOpCost = 16

// TestColdStreamPELCost: on a cold stream whose group has 20,000 pending
// entries (far more than the hot tier holds), XACK, XPENDING (summary,
// a range of 10, one consumer's), XCLAIM, XAUTOCLAIM COUNT 10, a
// consumer's history and XINFO STREAM FULL COUNT 10's pending lists read
// a number of records bounded by what they return, not by the PEL.
func TestColdStreamPELCost(t *testing.T) {
	v := newEnv(t, consumeOpts())
	const n = consumeN
	v.loadBacklog("q", n)
	check := func(what string, bound int64, f func(x *Stream, g *stream.Group) error) {
		t.Helper()
		cost := v.costOf(func() {
			v.withStream("q", func(x *Stream) error {
				g := x.Group([]byte("g"))
				if err := f(x, g); err != nil {
					return fmt.Errorf("%s: %w", what, err)
				}
				return x.Err()
			})
		})
		t.Logf("%s: %d store reads", what, cost)
		if cost > bound {
			t.Errorf("%s read %d records, want at most %d (the PEL holds %d)", what, cost, bound, n)
		}
	}
	ack := func(i int) func(x *Stream, g *stream.Group) error {
		return func(x *Stream, g *stream.Group) error {
			if !x.Ack(g, pelID(i)) {
				return fmt.Errorf("XACK %v: not pending", pelID(i))
			}
			return nil
		}
	}
	check("XACK of the lowest", pelOpCost, ack(0))
	check("XACK of the highest", pelOpCost, ack(n-1))
	check("XACK in the middle", pelOpCost, ack(n/2))
	// The oldest 1,000 in a row: each finds the new lowest past the
	// tombstones of the ones before.
	total := v.costOf(func() {
		for i := 1; i <= 1000; i++ {
			v.withStream("q", func(x *Stream) error { return ack(i)(x, x.Group([]byte("g"))) })
		}
	})
	if total > 1000*pelOpCost {
		t.Errorf("1,000 XACKs of the oldest read %d records, want at most %d", total, 1000*pelOpCost)
	}
	check("XPENDING summary", pelOpCost, func(x *Stream, g *stream.Group) error {
		lo, hi := g.PendingBounds()
		if g.PendingCount() != n-1003 || lo != pelID(1001) || hi != pelID(n-2) {
			return fmt.Errorf("%d pending from %v to %v, want %d from %v to %v", g.PendingCount(), lo, hi, n-1003, pelID(1001), pelID(n-2))
		}
		var sum int64
		for _, c := range g.Consumers() {
			sum += c.PendingCount()
		}
		if sum != g.PendingCount() {
			return fmt.Errorf("consumers' counts add up to %d, the group's is %d", sum, g.PendingCount())
		}
		return nil
	})
	check("XPENDING - + 10", 10+pelOpCost, func(x *Stream, g *stream.Group) error {
		got := collectPending(x, g, nil, stream.ID{}, 10)
		if len(got) != 10 || got[0].ID != pelID(1001) || got[9].ID != pelID(1010) {
			return fmt.Errorf("got %d from %v", len(got), got)
		}
		return nil
	})
	check("XPENDING - + 10 c1", 2*10+pelOpCost, func(x *Stream, g *stream.Group) error {
		c := x.Consumer(g, []byte("c1"), false, 0)
		got := collectPending(x, g, c, stream.ID{}, 10)
		if len(got) != 10 || got[0].ID != pelID(1001) || got[1].ID != pelID(1005) || got[0].Consumer != c {
			return fmt.Errorf("got %d from %v", len(got), got)
		}
		return nil
	})
	check("XCLAIM of one ID", pelOpCost, func(x *Stream, g *stream.Group) error {
		p := x.Pending(g, pelID(5000))
		if p == nil || x.Get(pelID(5000)) == nil {
			return fmt.Errorf("%v: not pending", pelID(5000))
		}
		x.Claim(g, p, x.Consumer(g, []byte("c3"), true, 1), 1, p.DeliveryCount+1)
		return nil
	})
	// XAUTOCLAIM c3 0 5000 COUNT 10: at most COUNT*10 candidates (+1 for
	// the next start), each claimed one's entry read.
	check("XAUTOCLAIM COUNT 10", 101+10*pelOpCost, func(x *Stream, g *stream.Group) error {
		c := x.Consumer(g, []byte("c3"), true, 2)
		cands := collectPending(x, g, nil, pelID(5001), 101)
		for _, p := range cands[:10] {
			if x.Get(p.ID) == nil {
				return fmt.Errorf("%v: no entry", p.ID)
			}
			x.Claim(g, p, c, 2, p.DeliveryCount+1)
		}
		return nil
	})
	check("XREADGROUP c2 COUNT 10 from 0", 3*10+pelOpCost, func(x *Stream, g *stream.Group) error {
		for _, p := range collectPending(x, g, x.Consumer(g, []byte("c2"), true, 3), stream.ID{}, 10) {
			if x.Get(p.ID) == nil {
				return fmt.Errorf("%v: no entry", p.ID)
			}
			x.Redelivered(g, p, 3)
		}
		return nil
	})
	check("XINFO STREAM FULL COUNT 10's pending", int64(10+len(pelConsumers)*2*10+pelOpCost), func(x *Stream, g *stream.Group) error {
		if got := collectPending(x, g, nil, stream.ID{}, 10); len(got) != 10 {
			return fmt.Errorf("group: %d pending", len(got))
		}
		for _, c := range g.Consumers() {
			if got := collectPending(x, g, c, stream.ID{}, 10); len(got) != 10 {
				return fmt.Errorf("%s: %d pending", c.Name, len(got))
			}
		}
		return nil
	})
	// Read again from the store: the groups and consumers only.
	v.reopen()
	check("XACK after a restart", 4*pelOpCost, ack(n-2))
	v.withStream("q", func(x *Stream) error {
		g := x.Group([]byte("g"))
		if lo, hi := g.PendingBounds(); g.PendingCount() != n-1004 || lo != pelID(1001) || hi != pelID(n-3) {
			return fmt.Errorf("after a restart: %d pending from %v to %v", g.PendingCount(), lo, hi)
		}
		return nil
	})
}

// TestStreamOldPELFormatMigrates: a stream stored before the PEL counters
// (24-byte group records, 8-byte consumer records, no consumer pending
// index) reads the same, cold or whole, and is rewritten in the current
// form by the first command that opens it.
func TestStreamOldPELFormatMigrates(t *testing.T) {
	for _, budget := range []int64{1 << 20, 2000} {
		t.Run(fmt.Sprint("budget ", budget), func(t *testing.T) {
			o := defaultOpts()
			o.HotBudget = budget
			v := newEnv(t, o)
			fillStream(t, v, 0, "s")
			v.withStream("s", func(x *Stream) error {
				g := x.Group([]byte("g1"))
				x.Deliver(g, x.CreateConsumer(g, []byte("carol"), 7000), stream.ID{Ms: 31}, 7001, false)
				return nil
			})
			want := openRender(t, v, 0, "s")
			v.reopen()
			// records counts the records by tag and value length.
			records := func() map[string]int {
				counts := map[string]int{}
				it, err := v.s.NewIter(nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer it.Close()
				for ok := it.First(); ok; ok = it.Next() {
					k := it.Key()
					if len(k) == 0 || k[0] != 'd' {
						continue
					}
					_, _, _, tag, _, err := codec.ParseDataKey(k)
					if err != nil {
						t.Fatal(err)
					}
					counts[fmt.Sprintf("%c%d", tag, len(it.Value()))]++
				}
				return counts
			}
			// Rewrite the records as the format before wrote them.
			var sets, dels [][]byte
			it, err := v.s.NewIter(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for ok := it.First(); ok; ok = it.Next() {
				k := it.Key()
				if len(k) == 0 || k[0] != 'd' {
					continue
				}
				_, _, _, tag, _, err := codec.ParseDataKey(k)
				if err != nil {
					t.Fatal(err)
				}
				switch val := it.Value(); tag {
				case codec.TagStreamGroup:
					sets = append(sets, bytes.Clone(k), bytes.Clone(val[:24]))
				case codec.TagStreamConsumer:
					sets = append(sets, bytes.Clone(k), bytes.Clone(val[:8]))
				case codec.TagStreamConsumerPending:
					dels = append(dels, bytes.Clone(k))
				}
			}
			it.Close()
			if len(dels) == 0 || len(sets) == 0 {
				t.Fatalf("no group or consumer pending index records to rewrite")
			}
			for i := 0; i < len(sets); i += 2 {
				if _, err := v.s.SetSync(sets[i], sets[i+1]); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := v.s.DeleteSync(dels...); err != nil {
				t.Fatal(err)
			}
			v.reopen()
			old := records()
			if old["q0"] != 0 || old["g24"] != 2 || old["c8"] != 3 {
				t.Fatalf("old store's records: %v", old)
			}
			if got := openRender(t, v, 0, "s"); got != want {
				t.Fatalf("old format read\n%s\nwant\n%s", got, want)
			}
			now := records()
			if now["q0"] != len(dels) || now["g64"] != 2 || now["c32"] != 3 || now["g24"]+now["c8"] != 0 {
				t.Fatalf("after the first command: records %v, want %d consumer pending index records", now, len(dels))
			}
			v.reopen()
			if got := openRender(t, v, 0, "s"); got != want {
				t.Fatalf("migrated\n%s\nwant\n%s", got, want)
			}
		})
	}
}
