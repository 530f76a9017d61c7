package integration

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestDifferentialLists compares Spillway with Redis 7.0 on random list,
// keyspace and cross-type traffic (gen_list_test.go) over RESP2, with the
// 4 KB hot tier of TestDifferentialStrings: big lists are served from disk
// and small ones move between tiers. It runs only when Spillway has lists
// (spillwayHasLists, or SPILLWAY_DIFF_LISTS=1).
func TestDifferentialLists(t *testing.T) {
	testDifferentialLists(t, 2, "TestDifferentialLists")
}

// TestDifferentialListsRESP3 is TestDifferentialLists after HELLO 3 (RESP3
// nulls for missing keys, timed-out blocking pops and empty LMPOPs).
func TestDifferentialListsRESP3(t *testing.T) {
	testDifferentialLists(t, 3, "TestDifferentialListsRESP3")
}

func testDifferentialLists(t *testing.T, proto int, name string) {
	if !listsForSpillway(t) {
		t.Skip("Spillway lists are off: spillwayHasLists is false (SPILLWAY_DIFF_LISTS=1 runs this anyway)")
	}
	testDifferentialSpillway(t, proto, name, genConfig{ListCommands: true})
}

// lgenBlockingSpec is where a blocking list command keeps its first source key
// and its timeout.
type lgenBlockingSpec struct{ key, timeout int }

var lgenBlockingSpecs = map[string]lgenBlockingSpec{
	"BLPOP": {1, -1}, "BRPOP": {1, -1}, "BRPOPLPUSH": {1, 3}, "BLMOVE": {1, 5}, "BLMPOP": {3, 1},
}

// lgenTimeout parses a blocking timeout the way Redis 7.0 accepts it (a
// non-negative float, no blanks, not NaN); ok is false when Redis rejects it.
// (Redis also takes hexadecimal forms; the generator does not emit them.)
func lgenTimeout(s string) (float64, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < 0 || strings.TrimSpace(s) != s {
		return 0, false
	}
	return f, true
}

// lgenBlockingWait reports, for a generated command, whether it is a blocking
// list command that Redis would accept and so may wait: its first source
// key, and its timeout in seconds (0: forever).
func lgenBlockingWait(args []string) (key string, timeout float64, waits bool) {
	name := strings.ToUpper(args[0])
	spec, ok := lgenBlockingSpecs[name]
	if !ok {
		return "", 0, false
	}
	a := lgenArity[strings.ToLower(name)]
	if (a > 0 && len(args) != a) || (a < 0 && len(args) < -a) {
		return "", 0, false // arity error
	}
	ti := spec.timeout
	if ti < 0 {
		ti += len(args)
	}
	timeout, ok = lgenTimeout(args[ti])
	if !ok {
		return "", 0, false
	}
	if name == "BLMPOP" {
		if n, err := strconv.Atoi(args[2]); err != nil || n <= 0 || n > len(args)-4 {
			return "", 0, false // numkeys error
		}
	}
	return args[spec.key], timeout, true
}

// TestListGenerator checks the list generator without servers: it is
// deterministic, covers every list command and the keyspace commands on
// lists, and never emits a blocking command that could wait long: one with
// a timeout of 0 or above lgenMaxWait must follow a push to its first key,
// and the short waits together stay well under a second per seed.
func TestListGenerator(t *testing.T) {
	const ops = defaultOps
	want := append([]string{}, lgenArityNames...)
	want = append(want, "type", "del", "exists", "rename", "renamenx", "copy", "move", "expire",
		"pexpire", "ttl", "persist", "object", "scan", "keys", "select", "set", "get", "hset",
		"sadd", "incr")
	for seed := int64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			g1 := newGen(seed, 1e9, genConfig{Lists: true, ListCommands: true})
			g2 := newGen(seed, 1e9, genConfig{Lists: true, ListCommands: true})
			seen := map[string]int{}
			var prev []string
			var waited float64
			var timedOut, immediate int
			for i := 0; i < ops; i++ {
				o, o2 := g1.next(), g2.next()
				if fmt.Sprintf("%q %v", o.Args, o.Sleep) != fmt.Sprintf("%q %v", o2.Args, o2.Sleep) {
					t.Fatalf("op %d differs between two generators of seed %d: %q vs %q", i, seed, o.Args, o2.Args)
				}
				if o.Sleep > 0 {
					continue
				}
				seen[strings.ToLower(o.Args[0])]++
				if key, timeout, waits := lgenBlockingWait(o.Args); waits {
					pushed := len(prev) >= 3 && (strings.EqualFold(prev[0], "LPUSH") || strings.EqualFold(prev[0], "RPUSH")) && prev[1] == key
					switch {
					case pushed:
						immediate++
					case timeout == 0 || timeout > lgenMaxWait:
						t.Errorf("op %d: %s may block %vs (0 = forever): no push to %q before it (previous: %s)",
							i, fmtArgs(o.Args), timeout, key, fmtArgs(prev))
					default:
						timedOut++
						waited += timeout
					}
				}
				prev = o.Args
			}
			for _, name := range want {
				if seen[name] == 0 {
					t.Errorf("%d ops never emitted %s", ops, strings.ToUpper(name))
				}
			}
			if waited > 0.5 {
				t.Errorf("blocking commands on empty keys may wait %.2fs in all; keep them rarer", waited)
			}
			if immediate == 0 || timedOut == 0 {
				t.Errorf("blocking commands: %d return at once, %d time out; want both kinds", immediate, timedOut)
			}
			t.Logf("%d distinct commands; blocking: %d at once, %d timing out (%.2fs)", len(seen), immediate, timedOut, waited)
		})
	}
}

// TestListGenBlockingWait pins lgenBlockingWait, on which the safety check
// of TestListGenerator rests.
func TestListGenBlockingWait(t *testing.T) {
	tests := []struct {
		cmd     string
		key     string
		timeout float64
		waits   bool
	}{
		{"BLPOP k 0", "k", 0, true},
		{"BLPOP k j 0.5", "k", 0.5, true},
		{"brpop k 1", "k", 1, true},
		{"BLPOP k abc", "", 0, false},
		{"BLPOP k -1", "", 0, false},
		{"BLPOP k nan", "", 0, false},
		{"BLPOP k", "", 0, false},
		{"BRPOPLPUSH k d 3", "k", 3, true},
		{"BRPOPLPUSH k d 3 x", "", 0, false},
		{"BLMOVE k d LEFT RIGHT .5", "k", 0.5, true},
		{"BLMOVE k d LEFT RIGHT", "", 0, false},
		{"BLMPOP 0 1 k LEFT", "k", 0, true},
		{"BLMPOP 0.01 2 k j RIGHT COUNT 2", "k", 0.01, true},
		{"BLMPOP 0 0 k LEFT", "", 0, false},
		{"BLMPOP 0 abc k LEFT", "", 0, false},
		{"BLMPOP 1 5 k LEFT", "", 0, false},
		{"LPOP k 0", "", 0, false},
	}
	for _, tt := range tests {
		key, timeout, waits := lgenBlockingWait(strings.Fields(tt.cmd))
		if key != tt.key || timeout != tt.timeout || waits != tt.waits {
			t.Errorf("lgenBlockingWait(%s) = %q, %v, %v; want %q, %v, %v", tt.cmd, key, timeout, waits, tt.key, tt.timeout, tt.waits)
		}
	}
}
