package acl

import (
	"strings"
	"testing"

	"github.com/spillway/spillway/proxy/cmdtable"
)

// unquotable reports whether the rules hold a pattern or first argument
// that their description cannot carry back through ACL SETUSER's
// splitting (parentheses, quotes, backslashes or spaces): Redis describes
// those as they are, and they do not round-trip there either.
func unquotable(r *Rules) bool {
	bad := func(s string) bool { return strings.ContainsAny(s, "()\"'\\ \t\r\n\v\f\x00") }
	for _, s := range r.selectors {
		for _, k := range s.keys {
			if bad(k.pattern) {
				return true
			}
		}
		for _, c := range s.channels {
			if bad(c) {
				return true
			}
		}
		for _, args := range s.firstArgs {
			for _, a := range args {
				if bad(a) {
					return true
				}
			}
		}
	}
	return false
}

// FuzzParse feeds ACL SETUSER rules (space separated) to the parser: it
// never panics; rules it accepts are described so that parsing the
// description rebuilds the same rules; checking commands against them
// never panics.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"on >pass ~k* %R~r* %W~w* &ch +get +@hash -hset +select|0 +config|get",
		"+@all -@dangerous +flushall (+get ~x) (-@all +set %RW~y)",
		"reset nopass allkeys allchannels allcommands clearselectors",
		"(+get ~x",
		"%RW %R~ ~ & +debug| +config|get|x -select|0 #abc !abc <nope",
		"resetpass #5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8 off skip-sanitize-payload",
		"~* ~foo",
		"&* &foo",
		"(\"unbalanced) (on)",
	} {
		f.Add(seed)
	}
	probes := [][]string{
		{"get", "k1"}, {"set", "w1", "v", "get"}, {"publish", "ch", "m"}, {"psubscribe", "ch*"},
		{"select", "0"}, {"config", "get", "x"}, {"eval", "return 1", "1", "r1"}, {"copy", "r1", "w1"},
	}
	f.Fuzz(func(t *testing.T, input string) {
		ops := strings.Split(input, " ")
		r, err := Parse(nil, ops, false)
		if err != nil {
			return
		}
		for _, p := range probes {
			args := make([][]byte, len(p))
			for i, a := range p {
				args[i] = []byte(a)
			}
			if cmd := cmdtable.LookupArgs(args); cmd != nil {
				r.Check(cmd, args)
			}
		}
		if unquotable(r) {
			return
		}
		desc := r.Describe()
		again, err := Parse(nil, strings.Split(desc, " "), false)
		if err != nil {
			t.Fatalf("description %q of %q does not parse: %v", desc, input, err)
		}
		if d2 := again.Describe(); d2 != desc {
			t.Fatalf("description of %q does not round-trip:\n %s\n %s", input, desc, d2)
		}
	})
}
