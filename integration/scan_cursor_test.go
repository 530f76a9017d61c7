package integration

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// SCAN-family cursors stay below 2^53 in both modes, hot and cold keys
// alike: JavaScript clients read cursors as numbers (IEEE doubles), and a
// cursor rounded on the way skipped keys. Every key present for the whole
// walk is returned, and the walk ends with cursor 0.

const scSafeCursor = 1 << 53

func TestScanCursorsBelow2p53Embedded(t *testing.T) {
	t.Setenv("SPILLWAY_TEST_HOOKS", "1")
	s := harness.StartSpillway(t, "", "--appendfsync", "no", "--loglevel", "warning")
	scCheckWalks(t, harness.MustDial(t, s.Addr()))
}

func TestScanCursorsBelow2p53Upstream(t *testing.T) {
	p := startUpstreamPair(t, "1gb")
	scCheckWalks(t, harness.MustDial(t, p.spw.Addr()))
}

// scCheckWalks writes keys and a large hash, set and sorted set, demotes
// half of the keys and the collections (DEBUG DEMOTE, the test hook), and
// checks whole walks with several COUNTs.
func scCheckWalks(t *testing.T, c *harness.Conn) {
	const keys, elems = 400, 300
	want := map[string]bool{}
	var all []string
	for i := 0; i < keys; i++ {
		k := fmt.Sprint("key:", i)
		want[k] = true
		all = append(all, k)
		scOK(t, c.Do("SET", k, "v"))
	}
	members := map[string]bool{}
	for i := 0; i < elems; i++ {
		m := fmt.Sprint("m", i)
		members[m] = true
		scOK(t, c.Do("HSET", "h", m, "v"))
		scOK(t, c.Do("SADD", "s", m))
		scOK(t, c.Do("ZADD", "z", strconv.Itoa(i), m))
	}
	for _, k := range []string{"h", "s", "z"} {
		want[k] = true
	}
	demote := append([]string{"DEBUG", "DEMOTE", "h", "s", "z"}, all[:keys/2]...)
	if r := c.Do(demote...); r.Type != ':' || r.Int != int64(len(demote)-2) {
		t.Fatalf("DEBUG DEMOTE: %s", r.String())
	}
	for _, count := range []string{"1", "10", "1000"} {
		scSame(t, "SCAN COUNT "+count, scWalk(t, c, []string{"SCAN"}, count, 1), want)
		scSame(t, "SSCAN COUNT "+count, scWalk(t, c, []string{"SSCAN", "s"}, count, 1), members)
		for _, cmd := range []string{"HSCAN h", "ZSCAN z"} {
			pairs := scWalk(t, c, strings.Fields(cmd), count, 2)
			var names []string
			for i := 0; i < len(pairs); i += 2 {
				names = append(names, pairs[i])
			}
			scSame(t, cmd+" COUNT "+count, names, members)
		}
	}
}

func scOK(t *testing.T, r harness.Reply) {
	t.Helper()
	if r.Err != nil || r.Type == '-' {
		t.Fatalf("%s", r.String())
	}
}

// scWalk iterates cmd from cursor 0 until cursor 0 and returns the items
// returned, failing on a cursor of 2^53 or more.
func scWalk(t *testing.T, c *harness.Conn, cmd []string, count string, group int) []string {
	t.Helper()
	var items []string
	cursor := "0"
	for calls := 0; ; calls++ {
		if calls > 5000 {
			t.Fatalf("%s COUNT %s: no end after %d calls", cmd[0], count, calls)
		}
		args := append(append(append([]string(nil), cmd...), cursor), "COUNT", count)
		r := c.Do(args...)
		if r.Err != nil || r.Type != '*' || len(r.Elems) != 2 || len(r.Elems[1].Elems)%group != 0 {
			t.Fatalf("%q: %s", args, r.String())
		}
		next, err := strconv.ParseUint(r.Elems[0].Str, 10, 64)
		if err != nil || next >= scSafeCursor {
			t.Fatalf("%q: cursor %q is not a number below 2^53 (%v)", args, r.Elems[0].Str, err)
		}
		for _, e := range r.Elems[1].Elems {
			items = append(items, e.Str)
		}
		if next == 0 {
			return items
		}
		cursor = r.Elems[0].Str
	}
}

// scSame fails t unless got (duplicates allowed) holds exactly want.
func scSame(t *testing.T, what string, got []string, want map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	for _, g := range got {
		if !want[g] {
			t.Fatalf("%s returned %q, which is not there", what, g)
		}
		seen[g] = true
	}
	for w := range want {
		if !seen[w] {
			t.Fatalf("%s: %d of %d returned; %q missing", what, len(seen), len(want), w)
		}
	}
}
