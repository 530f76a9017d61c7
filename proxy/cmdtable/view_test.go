package cmdtable

import (
	"strings"
	"testing"

	"github.com/spillway/spillway/proxy/cmdtable/internal/rawredis"
	"github.com/spillway/spillway/proxy/resp"
)

// A View describes only what it serves: a container is listed when it or
// one of its subcommands is served, with its served subcommands only.
func TestView(t *testing.T) {
	served := map[string]bool{"get": true, "config|get": true, "config|set": true, "command": true, "client|list": true}
	v := NewView(func(c *Command) bool { return served[c.Name] })
	reply := func(f func(w *resp.Writer)) *rawredis.Value {
		t.Helper()
		w := &resp.Writer{Proto: 3}
		f(w)
		r, err := rawredis.Parse(w.Buf)
		if err != nil {
			t.Fatalf("%q: %v", w.Buf, err)
		}
		return r
	}
	names := func(r *rawredis.Value) string { return strings.Join(r.Strings(), " ") }

	if r := reply(v.WriteCommandCount); r.Int != 4 {
		t.Errorf("COUNT %d, want 4 (client, command, config, get)", r.Int)
	}
	if got := names(reply(func(w *resp.Writer) { v.WriteCommandList(w, nil) })); got != "client client|list command config config|get config|set get" {
		t.Errorf("LIST: %s", got)
	}
	if got := names(reply(func(w *resp.Writer) { v.WriteCommandList(w, bargs([]string{"FILTERBY", "PATTERN", "c*"})) })); got != "client client|list command config config|get config|set" {
		t.Errorf("LIST FILTERBY PATTERN c*: %s", got)
	}
	info := reply(func(w *resp.Writer) {
		v.WriteCommandInfo(w, bargs([]string{"config", "config|rewrite", "set", "get", "command", "config|get"}))
	})
	if len(info.Elems) != 6 {
		t.Fatalf("INFO: %d entries", len(info.Elems))
	}
	var subs []string
	for _, s := range info.Elems[0].Elems[9].Elems {
		subs = append(subs, s.Elems[0].Str)
	}
	if strings.Join(subs, " ") != "config|get config|set" {
		t.Errorf("INFO config: subcommands %v", subs)
	}
	for i, null := range []bool{false, true, true, false, false, false} {
		if info.Elems[i].Null != null {
			t.Errorf("INFO entry %d: null %v, want %v", i, info.Elems[i].Null, null)
		}
	}
	// COMMAND itself is served, none of its subcommands: an empty array.
	if e := info.Elems[4].Elems[9]; e.Type != '*' || len(e.Elems) != 0 {
		t.Errorf("INFO command: subcommands %q, want an empty array", e.Raw)
	}
	docs := reply(func(w *resp.Writer) { v.WriteCommandDocs(w, bargs([]string{"config", "set", "client|kill", "get"})) })
	if len(docs.Elems) != 4 || docs.Elems[0].Str != "config" || docs.Elems[2].Str != "get" {
		t.Fatalf("DOCS: %q", docs.Raw)
	}
	cfg := docs.Elems[1].Elems
	if k := cfg[len(cfg)-2]; k.Str != "subcommands" || len(cfg[len(cfg)-1].Elems) != 4 {
		t.Errorf("DOCS config: %q", docs.Elems[1].Raw)
	}
	for _, tc := range []struct{ inv, want string }{
		{"get k", "k"},
		{"set k v", "-ERR Invalid command specified"},
		{"config rewrite", "-ERR Invalid command specified"},
		{"config get x", "-ERR The command has no key arguments"},
	} {
		r := reply(func(w *resp.Writer) { v.WriteCommandGetKeys(w, bargs(strings.Fields(tc.inv))) })
		got := names(r)
		if r.Type == '-' {
			got = "-" + r.Str
		}
		if got != tc.want {
			t.Errorf("GETKEYS %s: %s, want %s", tc.inv, got, tc.want)
		}
	}
	if !Full.Has(Lookup([]byte("geoadd"))) || v.Has(Lookup([]byte("geoadd"))) {
		t.Error("Full must have every command, v only its own")
	}
	if len(Full.Commands()) != Count() || len(v.Commands()) != 4 || len(v.Subcommands(Lookup([]byte("config")))) != 2 {
		t.Error("Commands/Subcommands do not match the view")
	}
}
