package commands_test

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/proxy/cmdtable"
)

// TestCommandListsServed checks that the COMMAND family describes exactly
// the commands the embedded server serves (those with a handler: the
// command library's and the server's own): every command listed has a
// handler, every handler is listed, a container is listed with its served
// subcommands only, and COMMAND, COUNT, INFO, DOCS, LIST and GETKEYS agree.
func TestCommandListsServed(t *testing.T) {
	s, _ := openLocal(t, modes[0])
	l := s.NewLocal()
	defer l.Close()
	do := func(args ...string) node {
		t.Helper()
		n, err := readReply(bufio.NewReader(bytes.NewReader(l.DoString(args...))))
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		return n
	}
	served := func(c *cmdtable.Command) bool { return s.Handler(c) != nil }

	listed := map[string]bool{}
	var topListed []string
	for _, k := range do("COMMAND", "LIST").kids {
		listed[k.text] = true
		if !strings.Contains(k.text, "|") {
			topListed = append(topListed, k.text)
		}
	}
	nServed := 0
	for _, c := range cmdtable.All() {
		anySub := false
		for _, sub := range c.Subcommands {
			if got, want := listed[sub.Name], served(sub); got != want {
				t.Errorf("%s: listed %v, has a handler %v", sub.Name, got, want)
			}
			anySub = anySub || served(sub)
			if served(sub) {
				nServed++
			}
		}
		if served(c) {
			nServed++
		}
		if got, want := listed[c.Name], served(c) || anySub; got != want {
			t.Errorf("%s: listed %v, it or a subcommand has a handler %v", c.Name, got, want)
		}

		info := do("COMMAND", "INFO", c.Name)
		if len(info.kids) != 1 {
			t.Fatalf("COMMAND INFO %s: %d entries", c.Name, len(info.kids))
		}
		e := info.kids[0]
		if e.null != !listed[c.Name] {
			t.Errorf("COMMAND INFO %s: null %v, listed %v", c.Name, e.null, listed[c.Name])
		}
		if !e.null && c.Subcommands != nil {
			var subs []string
			for _, s := range e.kids[9].kids {
				subs = append(subs, s.kids[0].text)
			}
			var want []string
			for _, sub := range c.Subcommands {
				if served(sub) {
					want = append(want, sub.Name)
				}
			}
			if strings.Join(subs, " ") != strings.Join(want, " ") {
				t.Errorf("COMMAND INFO %s: subcommands %v, served %v", c.Name, subs, want)
			}
		}
		docs := do("COMMAND", "DOCS", c.Name)
		if got := len(docs.kids) == 2; got != listed[c.Name] {
			t.Errorf("COMMAND DOCS %s: documented %v, listed %v", c.Name, got, listed[c.Name])
		}
		if !listed[c.Name] && c.Subcommands == nil {
			// Unserved, as an unknown command, whatever the arguments.
			if r := do("COMMAND", "GETKEYS", c.Name, "k", "1", "2", "3"); r.typ != '-' || r.text != "ERR Invalid command specified" {
				t.Errorf("COMMAND GETKEYS %s: %s %q, want the unknown command error", c.Name, string(r.typ), r.text)
			}
		}
	}
	if nServed == 0 || len(listed) == 0 {
		t.Fatal("nothing served or listed")
	}
	if len(listed) == cmdtable.Count()+countSubs() {
		t.Error("every command of Redis 7.0 is listed: the filter is not applied")
	}

	all := do("COMMAND")
	var names []string
	for _, e := range all.kids {
		names = append(names, e.kids[0].text)
	}
	if strings.Join(names, " ") != strings.Join(topListed, " ") {
		t.Errorf("COMMAND names %v, COMMAND LIST's top-level %v", names, topListed)
	}
	if n := do("COMMAND", "COUNT"); n.text != strconv.Itoa(len(topListed)) {
		t.Errorf("COMMAND COUNT %s, %d listed", n.text, len(topListed))
	}
	if n := do("COMMAND", "INFO"); len(n.kids) != len(topListed) {
		t.Errorf("COMMAND INFO: %d entries, %d listed", len(n.kids), len(topListed))
	}
	if n := do("COMMAND", "DOCS"); len(n.kids) != 2*len(topListed) {
		t.Errorf("COMMAND DOCS: %d entries, %d listed", len(n.kids)/2, len(topListed))
	}
}

func countSubs() int {
	n := 0
	for _, c := range cmdtable.All() {
		n += len(c.Subcommands)
	}
	return n
}
