package integration

import (
	"sort"
	"strings"
	"testing"

	"github.com/spillway/spillway/integration/harness"
	"github.com/spillway/spillway/proxy/cmdtable"
)

// COMMAND describes what the server serves. In upstream mode every command
// is forwarded, so Spillway describes Redis's whole table, as its upstream
// does; embedded, it leaves out the commands it does not serve.

func TestCommandInfoUpstreamMode(t *testing.T) {
	p := startUpstreamPair(t, "1gb")
	spw, up := harness.MustDial(t, p.spw.Addr()), harness.MustDial(t, p.up.Addr())
	for _, cmd := range [][]string{
		{"COMMAND", "COUNT"},
		{"COMMAND", "INFO", "geoadd", "get", "xadd", "nosuch", "config|get"},
		{"COMMAND", "DOCS", "geoadd", "sort"},
		{"COMMAND", "GETKEYS", "geoadd", "k", "1", "2", "m"},
		{"COMMAND", "GETKEYSANDFLAGS", "sort", "k", "store", "d"},
		{"COMMAND", "LIST", "FILTERBY", "PATTERN", "geo*"},
	} {
		want, got := up.Do(cmd...), spw.Do(cmd...)
		if cmd[1] == "LIST" {
			if a, b := ciSorted(want), ciSorted(got); a != b {
				t.Errorf("%q: spillway %s, upstream %s", cmd, b, a)
			}
			continue
		}
		if string(got.Raw) != string(want.Raw) {
			t.Errorf("%q: spillway %q, upstream %q", cmd, got.Raw, want.Raw)
		}
	}
	if a, b := ciSorted(up.Do("COMMAND", "LIST")), ciSorted(spw.Do("COMMAND", "LIST")); a != b {
		t.Errorf("COMMAND LIST differs from the upstream's")
	}
}

func TestCommandInfoEmbeddedMode(t *testing.T) {
	s := harness.StartSpillway(t, "", "--appendfsync", "no", "--loglevel", "warning")
	c := harness.MustDial(t, s.Addr())
	listed := map[string]bool{}
	for _, e := range c.Do("COMMAND", "LIST").Elems {
		listed[e.Str] = true
	}
	// Every command Redis has that is not listed is one Spillway does not
	// serve: calling it is an unknown command, and nothing describes it.
	unlisted := 0
	for _, cmd := range cmdtable.All() {
		if listed[cmd.Name] || cmd.Subcommands != nil {
			continue
		}
		unlisted++
		args := []string{cmd.Name}
		for len(args) < max(cmd.Arity, -cmd.Arity) {
			args = append(args, "1")
		}
		if r := c.Do(args...); !strings.HasPrefix(r.Str, "ERR unknown command '"+cmd.Name+"'") &&
			!strings.HasPrefix(r.Str, "ERR "+strings.ToUpper(cmd.Name)+" command not allowed") {
			t.Errorf("%q: %s; it is not listed, so it must be unknown (or protected)", args, r.String())
		}
		if r := c.Do("COMMAND", "INFO", cmd.Name, "get"); len(r.Elems) != 2 || !r.Elems[0].Null || r.Elems[1].Null {
			t.Errorf("COMMAND INFO %s get: %s, want nil then get's entry", cmd.Name, r.String())
		}
		if r := c.Do("COMMAND", "DOCS", cmd.Name); len(r.Elems) != 0 {
			t.Errorf("COMMAND DOCS %s: %s, want nothing", cmd.Name, r.String())
		}
		if r := c.Do("COMMAND", "LIST", "FILTERBY", "PATTERN", cmd.Name); r.Type != '*' || len(r.Elems) != 0 {
			t.Errorf("COMMAND LIST FILTERBY PATTERN %s: %s, want none", cmd.Name, r.String())
		}
		gk := append([]string{"COMMAND", "GETKEYS"}, args...)
		if len(args) == 1 {
			gk = append(gk, "k") // COMMAND GETKEYS's own arity
		}
		if r := c.Do(gk...); r.Str != "ERR Invalid command specified" {
			t.Errorf("%q: %s", gk, r.String())
		}
	}
	if unlisted == 0 {
		t.Log("every command of Redis 7.0 is served")
	}
}

// ciSorted returns an array reply's strings, sorted and joined.
func ciSorted(r harness.Reply) string {
	var ss []string
	for _, e := range r.Elems {
		ss = append(ss, e.Str)
	}
	sort.Strings(ss)
	return strings.Join(ss, " ")
}
