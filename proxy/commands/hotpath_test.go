package commands_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/spillway/spillway/proxy/server"
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
	l := hotLocal(t, hotPathKeys)
	checkAllocs(t, l, "GET", hotPathArgs("GET", hotPathKeys, nil), 0, 2*hotPathKeys, 1)
	checkAllocs(t, l, "INCR", hotPathArgs("INCR", hotPathKeys, nil), 0, 2*hotPathKeys, 2)
	checkAllocs(t, l, "SET", hotPathArgs("SET", hotPathKeys, []byte("12345")), 0, 2*hotPathKeys, 2)
}

// hotLocal returns a client of a fresh server holding n hot strings
// key:NNNNNN = "12345", closed with tb.
func hotLocal(tb testing.TB, n int) *server.Local {
	s, _ := openLocal(tb, modes[0])
	l := s.NewLocal()
	tb.Cleanup(l.Close)
	for _, a := range hotPathArgs("SET", n, []byte("12345")) {
		l.Do(a...)
	}
	return l
}

// checkAllocs fails t unless each of runs commands through l, taken from
// args in turn from index from on, allocates want times on average.
func checkAllocs(t *testing.T, l *server.Local, name string, args [][][]byte, from, runs int, want float64) {
	t.Helper()
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
