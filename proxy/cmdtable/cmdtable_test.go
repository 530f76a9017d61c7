package cmdtable

import (
	"errors"
	"strings"
	"testing"

	"github.com/spillway/spillway/proxy/cstr"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		name string
		want string // "" for nil
	}{
		{"get", "get"},
		{"GET", "get"},
		{"gEt", "get"},
		{"zunionstore", "zunionstore"},
		{"client", "client"},
		{"client|kill", ""}, // Lookup does not resolve subcommands
		{"nosuch", ""},
		{"", ""},
		{strings.Repeat("g", 200), ""},
		{"get\x00", ""},
	}
	for _, tt := range tests {
		c := Lookup([]byte(tt.name))
		got := ""
		if c != nil {
			got = c.Name
		}
		if got != tt.want {
			t.Errorf("Lookup(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestLookupFullNameAndArgs(t *testing.T) {
	full := []struct{ in, want string }{
		{"config|GET", "config|get"},
		{"CONFIG", "config"},
		{"config|", ""},
		{"|get", ""},
		{"get|x", ""},
		{"client|kill|x", ""},
		{"client|nosuch", ""},
	}
	for _, tt := range full {
		got := ""
		if c := LookupFullName([]byte(tt.in)); c != nil {
			got = c.Name
		}
		if got != tt.want {
			t.Errorf("LookupFullName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	args := []struct{ in, want string }{
		{"config", "config"},
		{"config get x", "config|get"},
		{"Object Encoding k", "object|encoding"},
		{"client nosuch", ""},
		{"get a b", "get"},
		{"nosuch", ""},
	}
	for _, tt := range args {
		got := ""
		if c := LookupArgs(bargs(strings.Fields(tt.in))); c != nil {
			got = c.Name
		}
		if got != tt.want {
			t.Errorf("LookupArgs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if LookupArgs(nil) != nil {
		t.Error("LookupArgs(nil) != nil")
	}
	kill := Lookup([]byte("client")).Sub([]byte("KILL"))
	if kill == nil || kill.Parent() != Lookup([]byte("client")) {
		t.Fatalf("client KILL sub/parent wrong: %v", kill)
	}
	if Lookup([]byte("get")).Sub([]byte("x")) != nil {
		t.Error("get has no subcommands")
	}
}

func TestArityAndFlags(t *testing.T) {
	get, set, sub := Lookup([]byte("get")), Lookup([]byte("set")), Lookup([]byte("subscribe"))
	tests := []struct {
		c    *Command
		argc int
		want bool
	}{
		{get, 2, true}, {get, 1, false}, {get, 3, false},
		{set, 2, false}, {set, 3, true}, {set, 9, true},
	}
	for _, tt := range tests {
		if got := tt.c.ArityOK(tt.argc); got != tt.want {
			t.Errorf("%s.ArityOK(%d) = %v", tt.c.Name, tt.argc, got)
		}
	}
	flagTests := []struct {
		c    *Command
		flag string
		bit  Flag
		want bool
	}{
		{get, "readonly", FlagReadonly, true},
		{get, "fast", FlagFast, true},
		{get, "write", FlagWrite, false},
		{set, "write", FlagWrite, true},
		{set, "denyoom", FlagDenyOOM, true},
		{sub, "pubsub", FlagPubSub, true},
		{Lookup([]byte("blpop")), "blocking", FlagBlocking, true},
		{Lookup([]byte("eval")), "movablekeys", FlagMovableKeys, true},
		{Lookup([]byte("eval")), "noscript", FlagNoScript, true},
		{get, "nosuchflag", 0, false},
	}
	for _, tt := range flagTests {
		if got := tt.c.HasFlag(tt.flag); got != tt.want {
			t.Errorf("%s.HasFlag(%q) = %v", tt.c.Name, tt.flag, got)
		}
		if got := tt.c.Is(tt.bit); got != tt.want {
			t.Errorf("%s.Is(%q) = %v", tt.c.Name, tt.flag, got)
		}
	}
}

// TestTableShape checks invariants the rest of the package relies on.
func TestTableShape(t *testing.T) {
	if Count() < 200 || Count() != len(All()) {
		t.Fatalf("Count() = %d, len(All()) = %d", Count(), len(All()))
	}
	for name := range getKeysProcs {
		if Lookup([]byte(name)) == nil {
			t.Errorf("key finder for unknown command %q", name)
		}
	}
	prev := ""
	walkAll(func(c *Command) {
		if c.Parent() == nil {
			if c.Name <= prev {
				t.Errorf("table not sorted at %q", c.Name)
			}
			prev = c.Name
		}
		for _, f := range c.Flags {
			if FlagByName(f) == 0 {
				t.Errorf("%s: unknown flag %q", c.Name, f)
			}
		}
		for _, ks := range c.KeySpecs {
			for _, f := range ks.Flags {
				if KeyFlagByName(f) == 0 {
					t.Errorf("%s: unknown key spec flag %q", c.Name, f)
				}
			}
		}
		needsProc := c.Is(FlagMovableKeys) || c.specAll&(KeyIncomplete|KeyVariableFlags) != 0
		if needsProc && c.getKeys.kind == findNone {
			t.Errorf("%s needs a key finder", c.Name)
		}
	})
}

func TestKeyPositions(t *testing.T) {
	tests := []struct {
		inv  string
		want []int
		err  error
	}{
		{"get k", []int{1}, nil},
		{"mset a 1 b 2", []int{1, 3}, nil},
		{"zunionstore d 2 a b", []int{1, 3, 4}, nil},
		{"zunionstore d 02 a b", []int{3, 4, 1}, nil},
		{"zunionstore d 0 a", nil, ErrInvalidArgs},
		{"eval s 0", nil, nil},
		{"xread count 1 streams a b 0 0", []int{4, 5}, nil},
		{"sort k by x store d", []int{1, 5}, nil},
		{"migrate h p  0 10 keys a b", []int{7, 8}, nil},
		{"georadius k 0 0 1 km store d", []int{1, 7}, nil},
		{"ping x", nil, ErrNoKeyArgs},
		{"get", nil, ErrInvalidNumArgs},
	}
	for _, tt := range tests {
		args := bargs(strings.Split(tt.inv, " "))
		c := LookupArgs(args)
		got, err := c.KeyPositions(args, nil)
		if !errors.Is(err, tt.err) || !equalInts(got, tt.want) {
			t.Errorf("KeyPositions(%q) = %v, %v; want %v, %v", tt.inv, got, err, tt.want, tt.err)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParsers(t *testing.T) {
	strict := []struct {
		in string
		v  int64
		ok bool
	}{
		{"0", 0, true}, {"12", 12, true}, {"-3", -3, true}, {"01", 0, false}, {"-0", 0, false},
		{"+1", 0, false}, {" 1", 0, false}, {"", 0, false}, {"9223372036854775807", 1<<63 - 1, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775808", -1 << 63, true}, {"1a", 0, false},
	}
	for _, tt := range strict {
		v, ok := cstr.ParseInt([]byte(tt.in))
		if v != tt.v || ok != tt.ok {
			t.Errorf("cstr.ParseInt(%q) = %d, %v", tt.in, v, ok)
		}
	}
	atoiTests := []struct {
		in string
		v  int
	}{
		{"12", 12}, {" +7x", 7}, {"\t-3", -3}, {"x", 0}, {"02", 2}, {"4294967297", 1},
		{"99999999999999999999", -1}, {"-99999999999999999999", 0}, {"2\x003", 2},
	}
	for _, tt := range atoiTests {
		if v := atoi([]byte(tt.in)); v != tt.v {
			t.Errorf("atoi(%q) = %d, want %d", tt.in, v, tt.v)
		}
	}
}

func TestGlob(t *testing.T) {
	tests := []struct {
		pat, s string
		want   bool
	}{
		{"*", "get", true}, {"g?t", "GET", true}, {"g[a-f]t", "get", true}, {"g[^e]t", "get", false},
		{"*|kill", "client|kill", true}, {"c*l*", "config", false}, {"[f-a]*", "eval", true},
		{"\\g*", "get", true}, {"get\\", "get", false}, {"g[e", "ge", true}, {"ab*", "a", false},
		{"a**", "a", true}, {"[\\]]", "]", true},
	}
	for _, tt := range tests {
		if got := cstr.Match([]byte(tt.pat), []byte(tt.s), true); got != tt.want {
			t.Errorf("Match(%q, %q) = %v", tt.pat, tt.s, got)
		}
	}
}

func TestNoAllocs(t *testing.T) {
	name := []byte("ZunionStore")
	sub := []byte("KILL")
	client := Lookup([]byte("client"))
	args := bargs(strings.Split("zunionstore d 2 a b", " "))
	c := Lookup(name)
	dst := make([]int, 0, 8)
	n := testing.AllocsPerRun(100, func() {
		_ = Lookup(name)
		_ = client.Sub(sub)
		_ = c.HasFlag("write")
		dst, _ = c.KeyPositions(args, dst[:0])
	})
	if n != 0 {
		t.Fatalf("%v allocations per lookup/key extraction", n)
	}
}

func BenchmarkLookup(b *testing.B) {
	names := bargs([]string{"GET", "set", "zunionstore", "nosuch", "ClIeNt"})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if Lookup(names[i%len(names)]) == nil && i%len(names) != 3 {
			b.Fatal("lookup failed")
		}
	}
}

func BenchmarkKeyPositions(b *testing.B) {
	args := bargs(strings.Split("zunionstore d 3 a b c weights 1 2 3", " "))
	c := Lookup(args[0])
	dst := make([]int, 0, 8)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		dst, _ = c.KeyPositions(args, dst[:0])
	}
}
