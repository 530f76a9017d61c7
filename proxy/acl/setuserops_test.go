package acl

import (
	"strings"
	"testing"
)

// TestSetUserOpsRebuilds checks that applying SetUserOps to a reset user
// gives the same permissions: the description after the flags and
// passwords is the same.
func TestSetUserOpsRebuilds(t *testing.T) {
	for _, rules := range [][]string{
		{"on", ">p", "~x*", "+@scripting", "+set"},
		{"on", "nopass", "%R~r*", "%W~w*", "~k", "&ch*", "-@all", "+get", "+config|get"},
		{"+@all", "-@dangerous", "~*", "skip-sanitize-payload", "(~s* +hget)", "(%R~a* &x +@read -keys)"},
		{"allkeys", "allchannels", "allcommands", "-flushall"},
		{"resetchannels", "-@all"},
	} {
		orig, err := Parse(nil, rules, false)
		if err != nil {
			t.Fatalf("%q: %v", rules, err)
		}
		ops := orig.SetUserOps()
		copyOf, err := Parse(nil, append([]string{"reset", "on", "nopass"}, ops...), false)
		if err != nil {
			t.Fatalf("%q: ops %q: %v", rules, ops, err)
		}
		if got, want := permsOf(copyOf), permsOf(orig); got != want {
			t.Errorf("%q: ops %q rebuild %q, want %q", rules, ops, got, want)
		}
	}
}

// permsOf is a description without its flags and password hashes (reset
// sets sanitize-payload; skip-sanitize-payload is kept).
func permsOf(r *Rules) string {
	var keep []string
	for _, tok := range strings.Split(r.Describe(), " ") {
		switch {
		case tok == "on" || tok == "off" || tok == "nopass" || tok == "sanitize-payload" || strings.HasPrefix(tok, "#"):
		default:
			keep = append(keep, tok)
		}
	}
	return strings.Join(keep, " ")
}
