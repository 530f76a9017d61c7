package integration

import (
	"strings"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// TestUpstreamSlowlogKeepsClientsEntries: in upstream mode SLOWLOG shows
// the clients' commands and leaves out what Spillway itself runs on the
// upstream (here the DUMP and UNLINK of a demotion, and the slow log's
// own anchor requests). Those requests must not take the room of
// clients' entries in a log of slowlog-max-len: after three SETs and a
// DEBUG DEMOTE that makes several such requests (a test hook, not a
// Redis command, and not logged), SLOWLOG GET 3 and SLOWLOG LEN show the
// three SETs, as one redis-server running them would. The upstream's own log holds more (its
// slowlog-max-len is raised), and CONFIG GET shows the client's value.
func TestUpstreamSlowlogKeepsClientsEntries(t *testing.T) {
	t.Setenv("SPILLWAY_TEST_HOOKS", "1") // DEBUG DEMOTE
	up := harness.StartRedis(t)
	sp := harness.StartSpillway(t, "", "--upstream", "redis://"+up.Addr())
	c := sp.Conn(t)
	for _, cmd := range [][]string{
		{"CONFIG", "SET", "slowlog-log-slower-than", "0"},
		{"CONFIG", "SET", "slowlog-max-len", "3"},
		{"SLOWLOG", "RESET"},
		{"SET", "a", "1"}, {"SET", "b", "2"}, {"SET", "c", "3"},
	} {
		if r := c.Do(cmd...); r.IsError() {
			t.Fatalf("%v: %s", cmd, r.String())
		}
	}
	if r := c.Do("DEBUG", "DEMOTE", "a", "b", "c"); r.Type != ':' || r.Int != 3 {
		t.Fatalf("DEBUG DEMOTE a b c = %s, want 3", r.String())
	}
	c.Do("CONFIG", "SET", "slowlog-log-slower-than", "-1")
	r := c.Do("SLOWLOG", "GET", "3")
	var got []string
	for _, e := range r.Elems {
		if len(e.Elems) != 6 {
			t.Fatalf("SLOWLOG GET 3: entry %s", e.String())
		}
		var args []string
		for _, a := range e.Elems[3].Elems {
			args = append(args, a.Str)
		}
		got = append(got, strings.Join(args, " "))
	}
	want := []string{"SET c 3", "SET b 2", "SET a 1"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("SLOWLOG GET 3 = %q, want %q", got, want)
	}
	if n := c.Do("SLOWLOG", "LEN"); n.Int != 3 {
		t.Fatalf("SLOWLOG LEN = %s, want 3", n.String())
	}
	if v := c.Do("CONFIG", "GET", "slowlog-max-len"); len(v.Elems) != 2 || v.Elems[1].Str != "3" {
		t.Fatalf("CONFIG GET slowlog-max-len = %s, want 3", v.String())
	}
	direct := up.Conn(t)
	if v := direct.Do("CONFIG", "GET", "slowlog-max-len"); len(v.Elems) != 2 || v.Elems[1].Str == "3" {
		t.Fatalf("the upstream's slowlog-max-len = %s: no room for Spillway's own entries", v.String())
	}
}
