package integration

import (
	"strconv"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// A stream bigger than Spillway's hot tier, with consumer groups and
// pending entries, is served from its records, and kill -9 keeps every
// acknowledged write (appendfsync always): entries, trims, groups,
// consumers and the PEL.
func TestStreamTieringAndKill9(t *testing.T) {
	dir := t.TempDir()
	srv := harness.StartSpillway(t, dir, "--maxmemory", "1mb", "--appendfsync", "always", "--loglevel", "warning")
	c := srv.Conn(t)
	const n = 3000
	pipe(t, c, n, 250, func(i int) []string {
		return []string{"XADD", "big", strconv.Itoa(i + 1), "field", "value " + strconv.Itoa(i), "pad", string(make([]byte, 200))}
	}, func(i int, r harness.Reply) error {
		if r.Str != strconv.Itoa(i+1)+"-0" {
			t.Errorf("XADD %d: %s", i+1, r.String())
		}
		return nil
	})
	for _, args := range [][]string{
		{"XDEL", "big", "10", "20"},
		{"XTRIM", "big", "MINID", "5"},
		{"XGROUP", "CREATE", "big", "g", "0"},
		{"XREADGROUP", "GROUP", "g", "alice", "COUNT", "3", "STREAMS", "big", ">"},
		{"XREADGROUP", "GROUP", "g", "bob", "COUNT", "2", "STREAMS", "big", ">"},
		{"XACK", "big", "g", "6"},
		{"XGROUP", "CREATE", "big", "other", "$"},
		{"XGROUP", "CREATECONSUMER", "big", "other", "carol"},
	} {
		if r := c.Do(args...); r.Type == '-' {
			t.Fatalf("%v: %s", args, r.String())
		}
	}
	snapshot := func(c *harness.Conn) []string {
		var out []string
		for _, args := range [][]string{
			{"XLEN", "big"},
			{"XRANGE", "big", "-", "+", "COUNT", "5"},
			{"XREVRANGE", "big", "+", "-", "COUNT", "2"},
			{"XRANGE", "big", "1500", "1502"},
			{"XPENDING", "big", "g"},
			{"XPENDING", "big", "g", "-", "+", "10", "alice"},
			{"XINFO", "GROUPS", "big"},
			{"XINFO", "CONSUMERS", "big", "other"},
		} {
			r := c.Do(args...)
			if r.Type == '-' {
				t.Fatalf("%v: %s", args, r.String())
			}
			out = append(out, r.String())
		}
		return out
	}
	before := snapshot(c)
	if before[0] != "(integer) 2994" {
		t.Fatalf("XLEN %s, want 2994 (3000, 2 deleted, 4 trimmed)", before[0])
	}
	srv.Kill9()
	srv.Restart()
	c = srv.Conn(t)
	after := snapshot(c)
	for i := range before {
		if i == 5 || i == 7 {
			continue // idle times moved on
		}
		if before[i] != after[i] {
			t.Errorf("after kill -9, reply %d is\n%s\nwant\n%s", i, after[i], before[i])
		}
	}
	if r := c.Do("XACK", "big", "g", "5", "7", "8", "9"); r.Int != 4 {
		t.Errorf("XACK of the PEL after restart: %s, want 4", r.String())
	}
}
