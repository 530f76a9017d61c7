package acl

import (
	"slices"
	"strings"
	"testing"
)

// canon puts a rule description in a comparable form: Redis lists single
// commands in its command dictionary's (hash) order, so they are sorted
// within each run of single-command rules; everything else keeps its
// place.
func canon(desc string) string {
	toks := strings.Split(desc, " ")
	out := make([]string, 0, len(toks))
	var run []string
	flush := func() {
		slices.Sort(run)
		out = append(out, run...)
		run = run[:0]
	}
	for _, t := range toks {
		single := (strings.HasPrefix(t, "+") || strings.HasPrefix(t, "-")) && !strings.HasPrefix(t[1:], "@")
		if single {
			run = append(run, strings.TrimSuffix(t, ")"))
			if strings.HasSuffix(t, ")") {
				flush()
				out[len(out)-1] += ")"
			}
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return strings.Join(out, " ")
}

// describeCases were recorded from redis-server 7.0.15: ACL SETUSER name
// rules..., then ACL LIST's line for the user (after "user name ").
var describeCases = []struct {
	rules []string
	want  string
}{
	{nil, "off resetchannels -@all"},
	{[]string{"on", ">p1", "~k*", "%R~r*", "%W~w*", "&ch", "+get", "+@hash", "-hset", "+select|0", "+config|get"},
		"on #f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a ~k* %R~r* %W~w* resetchannels &ch -@all +@hash +get +config|get -hset +select|0"},
	{[]string{"+@all", "-@dangerous", "+flushall", "(+get ~x)", "(  -@all +set %RW~y )"},
		"off resetchannels +@all -@admin -swapdb -keys -migrate -sort -restore -info -sort_ro -flushdb -restore-asking (~x resetchannels -@all +get) (~y resetchannels -@all +set)"},
	{[]string{"+@read", "+@write"}, "off resetchannels -@all +@write +@read"},
}

func TestDescribeMatchesRedis(t *testing.T) {
	for _, c := range describeCases {
		r, err := Parse(nil, c.rules, false)
		if err != nil {
			t.Fatalf("%q: %v", c.rules, err)
		}
		if got := r.Describe(); canon(got) != canon(c.want) {
			t.Errorf("%q:\n got %s\nwant %s", c.rules, got, c.want)
		}
	}
}

// As Redis's "ACL GETUSER provides reasonable results": one category
// added to nothing, or taken from everything, is described as just that.
func TestDescribeSingleCategory(t *testing.T) {
	for _, cat := range Categories() {
		for _, c := range []struct{ rules, want string }{
			{"+@all -@" + cat, "+@all -@" + cat},
			{"-@all +@" + cat, "-@all +@" + cat},
		} {
			r, err := Parse(nil, append([]string{"reset"}, strings.Split(c.rules, " ")...), false)
			if err != nil {
				t.Fatal(err)
			}
			if got, _, _ := r.Selector(0); got != c.want {
				t.Errorf("%s: got %q", c.rules, got)
			}
		}
	}
}

// As Redis's "ACLs set can include/exclude subcommands, if already full
// command exists" and "ACL GETUSER is able to translate back command
// permissions".
func TestDescribeSubcommands(t *testing.T) {
	for _, c := range []struct {
		rules []string
		want  string
	}{
		{[]string{"+memory|doctor"}, "-@all +memory|doctor"},
		{[]string{"+memory|doctor", "+memory"}, "-@all +memory"},
		{[]string{"+memory|doctor", "+memory", "+@all", "+client|id"}, "+@all"},
		{[]string{"+@all", "-memory|doctor"}, "+@all -memory|doctor"},
		{[]string{"+@all", "-memory|doctor", "-memory"}, "+@all -memory"},
		{[]string{"+@all", "~*", "-debug", "+debug|digest"}, "+@all -debug +debug|digest"},
		{[]string{"-@all", "+acl", "+incr", "+debug|object"}, "-@all +acl +incr +debug|object"},
	} {
		r, err := Parse(nil, c.rules, false)
		if err != nil {
			t.Fatal(err)
		}
		if got, _, _ := r.Selector(0); canon(got) != canon(c.want) {
			t.Errorf("%q: got %q, want %q", c.rules, got, c.want)
		}
	}
}
