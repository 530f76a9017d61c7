package commands_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/tiering"
)

// The hot path of one command, through the whole dispatch (lookup, checks,
// statistics, the engine's lock, the hot tier, the reply): GET and INCR of
// hot keys, SET over one. Local.Do adds one allocation of its own (the
// copy of the reply it returns); GET allocates nothing else, and INCR and
// SET one copy of the new value the hot tier keeps (a value is never
// modified in place: a reader may hold the old one).

// hotPathKeys is how many keys the hot path's workloads spread over.
const hotPathKeys = 1000

func hotPathArgs(cmd string, n int, val []byte) [][][]byte {
	out := make([][][]byte, n)
	for i := range out {
		a := [][]byte{[]byte(cmd), fmt.Appendf(nil, "key:%06d", i)}
		if val != nil {
			a = append(a, val)
		}
		out[i] = a
	}
	return out
}

// TestHotPathAllocations holds the hot path to the allocations above.
func TestHotPathAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not the hot path's under the race detector (sync.Pool drops items at random); make test's run without -race checks them")
	}
	l, e := hotLocalEngine(t, hotPathKeys)
	checkAllocs(t, l, e, "GET", hotPathArgs("GET", hotPathKeys, nil), 0, 2*hotPathKeys, 1)
	checkAllocs(t, l, e, "INCR", hotPathArgs("INCR", hotPathKeys, nil), 0, 2*hotPathKeys, 2)
	checkAllocs(t, l, e, "SET", hotPathArgs("SET", hotPathKeys, []byte("12345")), 0, 2*hotPathKeys, 2)
}

// hotLocal returns a client of a fresh server holding n hot strings
// key:NNNNNN = "12345", closed with tb.
func hotLocal(tb testing.TB, n int) *server.Local {
	l, _ := hotLocalEngine(tb, n)
	return l
}

// hotLocalEngine is hotLocal that also returns the server's engine.
func hotLocalEngine(tb testing.TB, n int) (*server.Local, *tiering.Engine) {
	s, e := openLocal(tb, modes[0])
	l := s.NewLocal()
	tb.Cleanup(l.Close)
	for _, a := range hotPathArgs("SET", n, []byte("12345")) {
		l.Do(a...)
	}
	return l, e
}

// checkAllocs fails t unless each of runs commands through l, taken from
// args in turn from index from on, allocates want times on average. The
// store (e's) is compacted first and left with nothing to do, so that
// the commands' writes fit in its memtable: a flush or compaction during
// the runs is the store's background work, not the commands', and it
// allocates per record under -tags invariants (Pebble's invalidating
// iterators), enough to fail the count (CI failed on RPOP at 4.00).
func checkAllocs(t *testing.T, l *server.Local, e *tiering.Engine, name string, args [][][]byte, from, runs int, want float64) {
	t.Helper()
	quiesce(t, e)
	i := from
	got := testing.AllocsPerRun(runs, func() {
		l.Do(args[i%len(args)]...)
		i++
	})
	if got != want {

		t.Errorf("%s: %.2f allocations per command through Local.Do, want %.0f", name, got, want)
	}
}

// benchHotPath runs cmd over 100,000 hot keys in a random order, as
// redis-benchmark -r 100000 does: the hot tier is far bigger than the CPU's
// caches, so what each lookup costs in memory accesses shows.
func benchHotPath(b *testing.B, cmd string) {
	const keys = 100_000
	l := hotLocal(b, keys)
	args := hotPathArgs(cmd, keys, nil)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(args), func(i, j int) { args[i], args[j] = args[j], args[i] })
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		l.Do(args[i%keys]...)
	}
}

func BenchmarkHotPathGet(b *testing.B)  { benchHotPath(b, "GET") }
func BenchmarkHotPathIncr(b *testing.B) { benchHotPath(b, "INCR") }

// quiesce compacts e's store into one level and waits (at most 30 s)
// until no flush or compaction runs and the tables' statistics (which
// may pick a compaction of their own) are collected.
func quiesce(t *testing.T, e *tiering.Engine) {
	t.Helper()
	if err := e.Cold().Compact(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		m := e.Cold().Metrics()
		if m.Compact.NumInProgress == 0 && m.Flush.NumInProgress == 0 && m.Table.InitialStatsCollectionComplete && m.Table.PendingStatsCollectionCount == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store still works 30 s after a compaction: %d compactions, %d flushes, %d tables' statistics", m.Compact.NumInProgress, m.Flush.NumInProgress, m.Table.PendingStatsCollectionCount)
		}
	}
}
