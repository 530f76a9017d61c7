package script

import (
	"math"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/script/lualib"
)

// The expected values in these tables were taken from redis-server 7.0.15
// (the differential tests check the same conversions end to end).

func TestInternalsUsable(t *testing.T) {
	if !internalsUsable() {
		t.Fatal("gopher-lua's call frames no longer match frameMirror: error messages would lose C Lua's wording")
	}
}

// convertRoundTrip converts a Host reply to Lua and the Lua value back to
// a reply, as `return redis.call(...)` does.
func convertRoundTrip(t *testing.T, v *luaVM, reply string, scriptProto, callerProto int) string {
	t.Helper()
	val, n, err := replyToLua(v.L, []byte(reply), v.recordOrder)
	if err != nil {
		t.Fatalf("replyToLua(%q): %v", reply, err)
	}
	if n != len(reply) {
		t.Fatalf("replyToLua(%q) consumed %d bytes", reply, n)
	}
	w := &resp.Writer{Proto: callerProto}
	writeLuaReply(w, val, scriptProto, v)
	return string(w.Buf)
}

func TestReplyToLuaAndBack(t *testing.T) {
	v := New(Options{}).evm
	cases := []struct {
		name         string
		reply        string
		scriptProto  int
		want2, want3 string // reply to a RESP2 / RESP3 caller
	}{
		{"integer", ":5\r\n", 2, ":5\r\n", ":5\r\n"},
		{"negative", ":-12\r\n", 2, ":-12\r\n", ":-12\r\n"},
		{"beyond 2^53", ":9007199254740993\r\n", 2, ":9007199254740992\r\n", ":9007199254740992\r\n"},
		{"bulk", "$3\r\nabc\r\n", 2, "$3\r\nabc\r\n", "$3\r\nabc\r\n"},
		{"binary bulk", "$3\r\na\x00b\r\n", 2, "$3\r\na\x00b\r\n", "$3\r\na\x00b\r\n"},
		{"null bulk", "$-1\r\n", 2, "$-1\r\n", "_\r\n"},
		{"null array", "*-1\r\n", 2, "$-1\r\n", "_\r\n"},
		{"status", "+OK\r\n", 2, "+OK\r\n", "+OK\r\n"},
		{"error", "-ERR bad thing\r\n", 2, "-ERR bad thing\r\n", "-ERR bad thing\r\n"},
		{"error code", "-WRONGTYPE Operation against a key\r\n", 2, "-WRONGTYPE Operation against a key\r\n", "-WRONGTYPE Operation against a key\r\n"},
		{"error without space", "-NOCODE\r\n", 2, "-ERR NOCODE\r\n", "-ERR NOCODE\r\n"},
		{"array", "*3\r\n:1\r\n$1\r\nx\r\n+OK\r\n", 2, "*3\r\n:1\r\n$1\r\nx\r\n+OK\r\n", "*3\r\n:1\r\n$1\r\nx\r\n+OK\r\n"},
		{"array with null bulk", "*3\r\n:1\r\n$-1\r\n:3\r\n", 2, "*3\r\n:1\r\n$-1\r\n:3\r\n", "*3\r\n:1\r\n_\r\n:3\r\n"},
		{"array with error", "*2\r\n:1\r\n-ERR x\r\n", 2, "*2\r\n:1\r\n-ERR x\r\n", "*2\r\n:1\r\n-ERR x\r\n"},
		{"array stops at nil", "*3\r\n:1\r\n_\r\n:3\r\n", 3, "*1\r\n:1\r\n", "*1\r\n:1\r\n"},
		{"empty array", "*0\r\n", 2, "*0\r\n", "*0\r\n"},
		{"resp3 null", "_\r\n", 3, "$-1\r\n", "_\r\n"},
		{"map", "%2\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n:2\r\n", 3, "*4\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n:2\r\n", "%2\r\n$1\r\na\r\n:1\r\n$1\r\nb\r\n:2\r\n"},
		{"set", "~2\r\n$1\r\na\r\n$1\r\nb\r\n", 3, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "~2\r\n$1\r\na\r\n$1\r\nb\r\n"},
		{"double", ",1.5\r\n", 3, "$3\r\n1.5\r\n", ",1.5\r\n"},
		{"double inf", ",inf\r\n", 3, "$3\r\ninf\r\n", ",inf\r\n"},
		{"double -inf", ",-inf\r\n", 3, "$4\r\n-inf\r\n", ",-inf\r\n"},
		{"double precision", ",0.1\r\n", 3, "$19\r\n0.10000000000000001\r\n", ",0.10000000000000001\r\n"},
		{"big number", "(12345678901234567890\r\n", 3, "$20\r\n12345678901234567890\r\n", "(12345678901234567890\r\n"},
		{"true to resp3 script", "#t\r\n", 3, ":1\r\n", "#t\r\n"},
		{"false to resp3 script", "#f\r\n", 3, ":0\r\n", "#f\r\n"},
		{"true to resp2 script", "#t\r\n", 2, ":1\r\n", ":1\r\n"},
		{"false to resp2 script", "#f\r\n", 2, "$-1\r\n", "_\r\n"},
		{"verbatim", "=8\r\ntxt:abcd\r\n", 3, "$4\r\nabcd\r\n", "=8\r\ntxt:abcd\r\n"},
		{"attribute skipped", "|1\r\n+key\r\n+val\r\n:5\r\n", 3, ":5\r\n", ":5\r\n"},
	}
	for _, c := range cases {
		for _, caller := range []int{2, 3} {
			want := c.want2
			if caller == 3 {
				want = c.want3
			}
			if got := convertRoundTrip(t, v, c.reply, c.scriptProto, caller); got != want {
				t.Errorf("%s (script RESP%d, caller RESP%d): got %q, want %q", c.name, c.scriptProto, caller, got, want)
			}
		}
	}
}

func TestReplyToLuaMalformed(t *testing.T) {
	v := New(Options{}).evm
	for _, bad := range []string{"", ":", ":x\r\n", "$5\r\nab\r\n", "*2\r\n:1\r\n", "?\r\n", "#x\r\n", "=2\r\nab\r\n", "%1\r\n:1\r\n", "$-2\r\n", ":1"} {
		if _, _, err := replyToLua(v.L, []byte(bad), nil); err == nil {
			t.Errorf("replyToLua(%q) accepted a malformed reply", bad)
		}
	}
}

func TestWriteLuaValue(t *testing.T) {
	v := New(Options{}).evm
	L := v.L
	tbl := func(kv ...lua.LValue) *lua.LTable {
		t := L.NewTable()
		for i := 0; i+1 < len(kv); i += 2 {
			t.RawSet(kv[i], kv[i+1])
		}
		return t
	}
	cases := []struct {
		name  string
		val   lua.LValue
		proto int
		want  string
	}{
		{"truncate", lua.LNumber(3.99), 2, ":3\r\n"},
		{"truncate negative", lua.LNumber(-3.99), 2, ":-3\r\n"},
		{"huge", lua.LNumber(1e20), 2, ":-9223372036854775808\r\n"},
		{"nan", lua.LNumber(math.NaN()), 2, ":-9223372036854775808\r\n"},
		{"nil", lua.LNil, 2, "$-1\r\n"},
		{"nil resp3", lua.LNil, 3, "_\r\n"},
		{"function", L.NewFunction(func(*lua.LState) int { return 0 }), 2, "$-1\r\n"},
		{"err", tbl(lua.LString("err"), lua.LString("My error")), 2, "-My error\r\n"},
		{"err crlf", tbl(lua.LString("err"), lua.LString("a\r\nb")), 2, "-a  b\r\n"},
		{"err nul", tbl(lua.LString("err"), lua.LString("a\x00b")), 2, "-a\r\n"},
		{"err number ignored", tbl(lua.LString("err"), lua.LNumber(1)), 2, "*0\r\n"},
		{"ok", tbl(lua.LString("ok"), lua.LString("fine")), 2, "+fine\r\n"},
		{"err wins over ok", tbl(lua.LString("ok"), lua.LString("y"), lua.LString("err"), lua.LString("x")), 2, "-x\r\n"},
		{"double nan", tbl(lua.LString("double"), lua.LNumber(math.Copysign(math.NaN(), -1))), 3, ",-nan\r\n"},
		{"double resp2", tbl(lua.LString("double"), lua.LNumber(3)), 2, "$1\r\n3\r\n"},
		{"verbatim long format", tbl(lua.LString("verbatim_string"), tbl(lua.LString("format"), lua.LString("markdown"), lua.LString("string"), lua.LString("x"))), 3, "=5\r\nmar:x\r\n"},
		{"verbatim missing string", tbl(lua.LString("verbatim_string"), tbl(lua.LString("format"), lua.LString("txt"))), 3, "*0\r\n"},
		{"array holes", tbl(lua.LNumber(1), lua.LNumber(1), lua.LNumber(2), lua.LNumber(2), lua.LNumber(4), lua.LNumber(4)), 2, "*2\r\n:1\r\n:2\r\n"},
	}
	for _, c := range cases {
		w := &resp.Writer{Proto: c.proto}
		writeLuaReply(w, c.val, 2, v)
		if got := string(w.Buf); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"-ERR x", "ERR x"},
		{"-WRONGTYPE Operation", "WRONGTYPE Operation"},
		{"-NOCODE", "ERR NOCODE"},
		{"-", "ERR "},
		{"plain message", "ERR plain message"},
		{"-MY x\r\n", "MY x"},
		{"-\r\nx\r\n", "ERR x"},
		{"-A b\x00c", "A b"},
	}
	for _, c := range cases {
		if got := errorText(c.in); got != c.want {
			t.Errorf("errorText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestWriteScriptError(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	tbl := func(kv ...string) *lua.LTable {
		t := L.NewTable()
		for i := 0; i+1 < len(kv); i += 2 {
			t.RawSetString(kv[i], lua.LString(kv[i+1]))
		}
		return t
	}
	withLine := tbl("err", "ERR boom", "source", "@user_script")
	withLine.RawSetString("line", lua.LNumber(3))
	cases := []struct {
		name string
		obj  lua.LValue
		want string
	}{
		{"located", withLine, "-ERR boom script: f1, on @user_script:3.\r\n"},
		{"no line", tbl("err", "MY x", "source", "@user_script"), "-MY x\r\n"},
		{"dash", tbl("err", "-X y"), "--X y\r\n"},
		{"newline", tbl("err", "a\nb"), "-a b\r\n"},
		{"no message", tbl("source", "s", "line", "1"), "-ERR unknown error script: f1, on s:1.\r\n"},
		{"string", lua.LString("raw"), "-ERR Error running script f1, raw \r\n"},
	}
	for _, c := range cases {
		w := &resp.Writer{Proto: 2}
		writeScriptError(w, c.obj, "f1")
		if got := string(w.Buf); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestParseShebang(t *testing.T) {
	cases := []struct {
		body   string
		flags  scriptFlags
		compat bool
		len    int
		msg    string
	}{
		{"return 1", 0, true, 0, ""},
		{"#!lua\nreturn 1", 0, false, 5, ""},
		{"#!lua flags=no-writes,allow-oom\nreturn 1", flagNoWrites | flagAllowOOM, false, 31, ""},
		{"#!lua  flags=no-writes\n", flagNoWrites, false, 22, ""},
		{"#!lua flags=\n", 0, false, 12, ""},
		{"#!lua \"flags=no-cluster\"\n", flagNoCluster, false, 24, ""},
		{"#!lua flags=allow-stale,allow-cross-slot-keys\n", flagAllowStale | flagAllowCrossSlot, false, 45, ""},
		{"#!lua", 0, false, 0, "Invalid script shebang"},
		{"#!lua flags=foo\n", 0, false, 0, "Unexpected flag in script shebang: foo"},
		{"#!lua flags=no-writes,\n", 0, false, 0, "Unexpected flag in script shebang: "},
		{"#!lua flags=NO-WRITES\n", 0, false, 0, "Unexpected flag in script shebang: NO-WRITES"},
		{"#!luax\n", 0, false, 0, "Unexpected engine in script shebang: #!luax"},
		{"#! lua\n", 0, false, 0, "Unexpected engine in script shebang: #!"},
		{"#!lua name=x\n", 0, false, 0, "Unknown lua shebang option: name=x"},
		{"#!  \n", 0, false, 0, "Unexpected engine in script shebang: #!"},
		{"#!lua \"x\n", 0, false, 0, "Invalid engine in script shebang"},
	}
	for _, c := range cases {
		flags, compat, n, msg := parseShebang([]byte(c.body))
		if msg != c.msg || msg == "" && (flags != c.flags || compat != c.compat || n != c.len) {
			t.Errorf("parseShebang(%q) = %v %v %d %q, want %v %v %d %q", c.body, flags, compat, n, msg, c.flags, c.compat, c.len, c.msg)
		}
	}
}

func TestSplitArgs(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		ok   bool
	}{
		{"", nil, true},
		{"  a  b ", []string{"a", "b"}, true},
		{`"a b" c`, []string{"a b", "c"}, true},
		{`"a\nb\x41"`, []string{"a\nbA"}, true},
		{`'it\'s'`, []string{"it's"}, true},
		{`"a"b`, nil, false},
		{`'a'b`, nil, false},
		{`"unterminated`, nil, false},
		{"a\tb", []string{"a", "b"}, true},
		{"a\x00b", []string{"a"}, true},
	}
	for _, c := range cases {
		got, ok := splitArgs(c.in)
		if ok != c.ok || ok && strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("splitArgs(%q) = %q %v, want %q %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestLibMetadata(t *testing.T) {
	cases := []struct {
		code, engine, name, body, msg string
	}{
		{"#!lua name=lib\nbody", "lua", "lib", "\nbody", ""},
		{"#!LUA NAME=Lib\n", "LUA", "Lib", "\n", ""},
		{"return 1", "", "", "", "Missing library metadata"},
		{"#!lua", "", "", "", "Invalid library metadata"},
		{"#!lua\n", "", "", "", "Library name was not given"},
		{"#!lua name=a name=b\n", "", "", "", "Invalid metadata value, name argument was given multiple times"},
		{"#!lua foo=bar\n", "", "", "", "Invalid metadata value given: foo=bar"},
		{"#!lua name=\"x\n", "", "", "", "Invalid library metadata"},
	}
	for _, c := range cases {
		engine, name, body, msg := libMetadata(c.code)
		if msg != c.msg || msg == "" && (engine != c.engine || name != c.name || body != c.body) {
			t.Errorf("libMetadata(%q) = %q %q %q %q", c.code, engine, name, body, msg)
		}
	}
}

func TestLuaNextOrder(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	// Orders observed on redis-server 7.0.15 for tables filled one key at
	// a time.
	cases := []struct {
		keys []lua.LValue
		want []lua.LValue
	}{
		{
			keys: []lua.LValue{lua.LNumber(3), lua.LNumber(6), lua.LNumber(9), lua.LNumber(12), lua.LNumber(15), lua.LNumber(18), lua.LNumber(21), lua.LNumber(24), lua.LNumber(27), lua.LNumber(30)},
			want: []lua.LValue{lua.LNumber(24), lua.LNumber(27), lua.LNumber(15), lua.LNumber(30), lua.LNumber(9), lua.LNumber(18), lua.LNumber(21), lua.LNumber(6), lua.LNumber(12), lua.LNumber(3)},
		},
		{keys: []lua.LValue{lua.LNumber(6), lua.LNumber(3)}, want: []lua.LValue{lua.LNumber(6), lua.LNumber(3)}},
		{keys: []lua.LValue{lua.LString("x"), lua.LNumber(3)}, want: []lua.LValue{lua.LNumber(3), lua.LString("x")}},
		{keys: []lua.LValue{lua.LNumber(1), lua.LNumber(2), lua.LNumber(3)}, want: []lua.LValue{lua.LNumber(1), lua.LNumber(2), lua.LNumber(3)}},
	}
	for _, c := range cases {
		tb := L.NewTable()
		for _, k := range c.keys {
			tb.RawSet(k, lua.LTrue)
		}
		got := luaNextOrder(tb, c.keys)
		if len(got) != len(c.want) {
			t.Fatalf("luaNextOrder(%v) = %v, want %v", c.keys, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("luaNextOrder(%v) = %v, want %v", c.keys, got, c.want)
				break
			}
		}
	}
}

func TestNumberFormats(t *testing.T) {
	cases := []struct {
		f      float64
		g14    string
		g17    string
		intval int64
	}{
		{1.0 / 3, "0.33333333333333", "0.33333333333333331", 0},
		{1e15, "1e+15", "1000000000000000", 1000000000000000},
		{100, "100", "100", 100},
		{0.1, "0.1", "0.10000000000000001", 0},
		{math.Copysign(0, -1), "-0", "-0", 0},
		{math.Inf(1), "inf", "inf", math.MinInt64},
		{math.Inf(-1), "-inf", "-inf", math.MinInt64},
	}
	for _, c := range cases {
		if got := fmtNumber(c.f); got != c.g14 {
			t.Errorf("fmtNumber(%v) = %q, want %q", c.f, got, c.g14)
		}
		if got := cstr.FormatG(c.f, 17); got != c.g17 {
			t.Errorf("cstr.FormatG(%v, 17) = %q, want %q", c.f, got, c.g17)
		}
		if got := toLongLong(c.f); got != c.intval {
			t.Errorf("toLongLong(%v) = %d, want %d", c.f, got, c.intval)
		}
	}
	nums := []struct {
		s  string
		f  float64
		ok bool
	}{
		{"10", 10, true}, {" 12 ", 12, true}, {"0x10", 16, true}, {"1e2", 100, true}, {"inf", math.Inf(1), true},
		{"-Infinity", math.Inf(-1), true}, {"abc", 0, false}, {"1e", 0, false}, {"", 0, false}, {"5\x00x", 5, true},
		{".5", 0.5, true}, {"0x", 0, false}, {"1.5e+3", 1500, true}, {"0x1p4", 16, true},
	}
	for _, c := range nums {
		f, ok := lualib.StrToNumber(c.s)
		if ok != c.ok || ok && f != c.f {
			t.Errorf("lualib.StrToNumber(%q) = %v %v, want %v %v", c.s, f, ok, c.f, c.ok)
		}
	}
}

func TestRand48(t *testing.T) {
	// The first two math.random(1000000) of a fresh redis-server.
	r := newRand48()
	for _, want := range []float64{396465, 840486} {
		x := float64(r.lrand48()%randMax) / float64(randMax)
		if got := math.Floor(x*1000000) + 1; got != want {
			t.Errorf("math.random(1000000) = %v, want %v", got, want)
		}
	}
	r.srand48(0)
	for _, want := range []float64{170829, 749902} {
		x := float64(r.lrand48()%randMax) / float64(randMax)
		if got := math.Floor(x*1000000) + 1; got != want {
			t.Errorf("after randomseed(0): math.random(1000000) = %v, want %v", got, want)
		}
	}
}

func TestStringChunkID(t *testing.T) {
	cases := []struct{ src, want string }{
		{"return 1", `[string "return 1"]`},
		{"a\nb", `[string "a..."]`},
		{strings.Repeat("x", 50), `[string "` + strings.Repeat("x", 43) + `..."]`},
		{"=stdin", "stdin"},
		{"@user_script", "user_script"},
	}
	for _, c := range cases {
		if got := stringChunkID(c.src); got != c.want {
			t.Errorf("stringChunkID(%q) = %q, want %q", c.src, got, c.want)
		}
	}
}
