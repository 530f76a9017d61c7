package tiering

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

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
