package strops

import (
	"bytes"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
)

// Differential tests: each case runs on the real redis-server and through
// strops, and the replies must be byte-identical.

func TestDiffIncrByFloat(t *testing.T) {
	rc := dialRedis(t, 2)
	const missing = "\x00missing"
	cases := []struct{ cur, incr string }{
		{missing, "10.5"}, {"10.5", "0.1"}, {"3.0e3", "2.0e3"}, {"5.0e3", "2.0e3"},
		{missing, "1e400"}, {"1e400", "-1e400"}, {missing, "1e4932"}, {"1e4932", "1e4932"},
		{missing, "1e4933"}, {missing, "1.18973149535723176502e+4932"}, {missing, "1.18973149535723176505e+4932"},
		{missing, "1e-5000"}, {missing, "1e-4951"}, {missing, "2e-4951"}, {missing, "3.6e-4951"},
		{missing, "1.8225997659412373012e-4951"}, {missing, "1.8225997659412373013e-4951"},
		{missing, "0x1p-16446"}, {missing, "0x1.00000001p-16446"}, {missing, "0x1p-16445"},
		{missing, "0x1p16383"}, {missing, "0x1p16384"}, {missing, "0x1.fffffffffffffffep16383"},
		{missing, "0x1.ffffffffffffffffp16383"}, {missing, "0X1P3"}, {missing, "0x.8"}, {missing, "0x10"},
		{missing, "0x"}, {missing, "0x.p1"}, {missing, "0xg"}, {missing, "1e"}, {missing, "1e+"},
		{missing, ".5"}, {missing, "5."}, {missing, "."}, {missing, "+3"}, {missing, "-0"},
		{missing, "-0.0"}, {"-0", "0"}, {"0", "-0"}, {missing, "-1e-30"}, {missing, "inf"},
		{missing, "-Infinity"}, {missing, "infinit"}, {missing, "nan"}, {missing, "NaN(1)"},
		{missing, " 1"}, {missing, "1 "}, {missing, "\t1"}, {missing, ""}, {missing, "1\x00abc"},
		{"", "1"}, {"abc", "1"}, {"1\x002", "1"}, {"12345678901234567890", "1"},
		{missing, "0.000003814697265625"}, {missing, "0.000003814697265635"}, {missing, "1.5e-17"},
		{missing, "2.5e-17"}, {missing, "5e-18"}, {missing, "1.23456789012345678901234567890"},
		{"9223372036854775807", "1"}, {"0.1", "0.2"}, {"1.1", "2.2"}, {"100", "-99.99"},
		{missing, "123456789012345678.5"}, {missing, "1e20"}, {missing, "1e-20"}, {missing, "00012.50"},
		{missing, "1_0"}, {missing, "0b101"}, {missing, "1e0010"}, {missing, "1E5"}, {missing, "1e99999999999999999999"},
		{missing, "0e99999999999999999999"}, {missing, "1e-99999999999999999999"}, {missing, strings.Repeat("1", 5119)},
		{missing, strings.Repeat("1", 5120)}, {missing, "0." + strings.Repeat("0", 4000) + "1"},
		{"3.7", "-3.7"}, {"-5", "2.5"}, {"1e3", "1e-3"}, {missing, "1e4000"}, {missing, "-1.5e4931"},
		{"1e4931", "-0.5e4931"}, {missing, "0x1.23456789abcdefp100"}, {missing, "123.456e-300"},
	}
	for _, c := range cases {
		rc.do("DEL", "f")
		exists := c.cur != missing
		if exists {
			rc.do("SET", "f", c.cur)
		}
		want := rc.do("INCRBYFLOAT", "f", c.incr)
		res, e := IncrByFloat([]byte(c.cur), exists, []byte(c.incr))
		var got []byte
		if e != "" {
			got = errReply(e)
		} else {
			got = bulkReply(res)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("INCRBYFLOAT cur=%q incr=%q: got %q, redis %q", trunc(c.cur), trunc(c.incr), trunc(string(got)), trunc(string(want)))
		}
	}
	// Random decimal values.
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 300; i++ {
		cur := randDecimal(rng)
		incr := randDecimal(rng)
		rc.do("SET", "f", cur)
		want := rc.do("INCRBYFLOAT", "f", incr)
		res, e := IncrByFloat([]byte(cur), true, []byte(incr))
		got := bulkReply(res)
		if e != "" {
			got = errReply(e)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("INCRBYFLOAT cur=%q incr=%q: got %q, redis %q", cur, incr, got, want)
		}
	}
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

func randDecimal(rng *rand.Rand) string {
	var sb strings.Builder
	if rng.Intn(3) == 0 {
		sb.WriteByte('-')
	}
	for n := 1 + rng.Intn(12); n > 0; n-- {
		sb.WriteByte(byte('0' + rng.Intn(10)))
	}
	if rng.Intn(2) == 0 {
		sb.WriteByte('.')
		for n := 1 + rng.Intn(20); n > 0; n-- {
			sb.WriteByte(byte('0' + rng.Intn(10)))
		}
	}
	if rng.Intn(4) == 0 {
		fmt.Fprintf(&sb, "e%d", rng.Intn(60)-30)
	}
	return sb.String()
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		switch rng.Intn(4) {
		case 0:
			b[i] = 0
		case 1:
			b[i] = 0xff
		default:
			b[i] = byte(rng.Intn(256))
		}
	}
	return b
}

func TestDiffBitPosBitCount(t *testing.T) {
	rc := dialRedis(t, 2)
	rng := rand.New(rand.NewSource(2))
	vals := [][]byte{{}, {0}, {0xff}, {0xff, 0xff, 0xff}, {0, 0, 0}, {0x0f, 0xf0}, {0x80}, {0x01, 0, 0x80}}
	for i := 0; i < 40; i++ {
		vals = append(vals, randBytes(rng, rng.Intn(6)))
	}
	idx := func() string { return strconv.Itoa(rng.Intn(60) - 30) }
	for _, v := range vals {
		rc.doB([]byte("SET"), []byte("b"), v)
		for k := 0; k < 25; k++ {
			var args []string
			switch rng.Intn(5) {
			case 0:
			case 1:
				args = []string{idx()}
			case 2:
				args = []string{idx(), idx()}
			case 3:
				args = []string{idx(), idx(), "BIT"}
			case 4:
				args = []string{idx(), idx(), []string{"byte", "bit", "bits"}[rng.Intn(3)]}
			}
			for bit := 0; bit < 2; bit++ {
				cmd := append([]string{"BITPOS", "b", strconv.Itoa(bit)}, args...)
				want := rc.do(cmd...)
				var got []byte
				r, e := ParseBitPosArgs(toBytes(args))
				if e != "" {
					got = errReply(e)
				} else {
					got = intReply(BitPos(v, bit, r))
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%q on %x: got %q, redis %q", cmd, v, got, want)
				}
			}
			cmd := append([]string{"BITCOUNT", "b"}, args...)
			want := rc.do(cmd...)
			var got []byte
			r, e := ParseBitCountArgs(toBytes(args))
			if e != "" {
				got = errReply(e)
			} else {
				got = intReply(BitCount(v, r))
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%q on %x: got %q, redis %q", cmd, v, got, want)
			}
		}
	}
}

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// writeBitfield renders ExecBitfield's results as Redis replies.
func writeBitfield(w *resp.Writer, res []BitfieldResult) {
	w.Array(len(res))
	for _, r := range res {
		if r.Null {
			w.Null()
		} else {
			w.Int(r.Value)
		}
	}
}

func TestDiffBitfield(t *testing.T) {
	rc := dialRedis(t, 2)
	rng := rand.New(rand.NewSource(3))
	typ := func() string {
		if rng.Intn(2) == 0 {
			return "i" + strconv.Itoa(1+rng.Intn(64))
		}
		return "u" + strconv.Itoa(1+rng.Intn(63))
	}
	off := func() string {
		if rng.Intn(3) == 0 {
			return "#" + strconv.Itoa(rng.Intn(6))
		}
		return strconv.Itoa(rng.Intn(80))
	}
	num := func() string {
		switch rng.Intn(6) {
		case 0:
			return "9223372036854775807"
		case 1:
			return "-9223372036854775808"
		case 2:
			return strconv.FormatInt(rng.Int63()>>uint(rng.Intn(63)), 10)
		case 3:
			return strconv.FormatInt(-(rng.Int63() >> uint(rng.Intn(63))), 10)
		}
		return strconv.Itoa(rng.Intn(600) - 300)
	}
	for i := 0; i < 400; i++ {
		var args []string
		for n := 1 + rng.Intn(4); n > 0; n-- {
			switch rng.Intn(5) {
			case 0:
				args = append(args, "GET", typ(), off())
			case 1:
				args = append(args, "SET", typ(), off(), num())
			case 2, 3:
				args = append(args, "INCRBY", typ(), off(), num())
			case 4:
				args = append(args, "OVERFLOW", []string{"WRAP", "SAT", "FAIL"}[rng.Intn(3)])
			}
		}
		var v []byte
		exists := rng.Intn(4) != 0
		if exists {
			v = randBytes(rng, rng.Intn(10))
			rc.doB([]byte("SET"), []byte("bf"), v)
		} else {
			rc.do("DEL", "bf")
		}
		want := rc.do(append([]string{"BITFIELD", "bf"}, args...)...)
		wantV := rc.do("GET", "bf")
		ops, e := ParseBitfield(toBytes(args), false)
		var w resp.Writer
		if e != "" {
			w.Error(e)
		} else {
			nv, res, changed := ExecBitfield(append([]byte(nil), v...), ops)
			writeBitfield(&w, res)
			var gotV []byte
			if exists || changed {
				gotV = bulkReply(nv)
			} else {
				gotV = []byte("$-1\r\n")
			}
			if !bytes.Equal(gotV, wantV) {
				t.Errorf("BITFIELD %q on %x: value %q, redis %q", args, v, gotV, wantV)
			}
		}
		if !bytes.Equal(w.Buf, want) {
			t.Errorf("BITFIELD %q on %x: got %q, redis %q", args, v, w.Buf, want)
		}
	}
}

func TestDiffBitfieldErrors(t *testing.T) {
	rc := dialRedis(t, 2)
	rc.do("SET", "bf", "hello")
	cases := [][]string{
		{}, {"GET"}, {"GET", "i8"}, {"GET", "i8", "0", "SET"}, {"SET", "i8", "0"}, {"FOO", "i8", "0"},
		{"GET", "i0", "0"}, {"GET", "u64", "0"}, {"GET", "i65", "0"}, {"GET", "x8", "0"}, {"GET", "", "0"},
		{"GET", "i08", "0"}, {"GET", "I8", "0"}, {"GET", "U63", "0"}, {"GET", "i8", "-1"}, {"GET", "i8", "#-1"},
		{"GET", "i8", "#"}, {"GET", "i8", "4294967295"}, {"GET", "i8", "4294967296"}, {"GET", "i8", "#536870911"},
		{"GET", "i8", "#536870912"}, {"GET", "i64", "#9223372036854775807"}, {"GET", "i8", "1#"},
		{"SET", "i8", "0", "x"}, {"INCRBY", "i8", "0", "1.5"}, {"OVERFLOW"}, {"OVERFLOW", "bad"},
		{"OVERFLOW", "sat", "OVERFLOW", "fail"}, {"overflow", "WRAP", "get", "u8", "0"},
		{"GET", "u8", "0", "OVERFLOW", "x", "GET", "bad", "0"}, {"GET", "bad", "0", "OVERFLOW", "x"},
	}
	for _, args := range cases {
		for _, ro := range []bool{false, true} {
			name := "BITFIELD"
			if ro {
				name = "BITFIELD_RO"
			}
			want := rc.do(append([]string{name, "bf"}, args...)...)
			ops, e := ParseBitfield(toBytes(args), ro)
			var w resp.Writer
			if e != "" {
				w.Error(e)
			} else {
				v := []byte("hello")
				_, res, _ := ExecBitfield(v, ops)
				writeBitfield(&w, res)
			}
			if !bytes.Equal(w.Buf, want) {
				t.Errorf("%s %q: got %q, redis %q", name, args, w.Buf, want)
			}
		}
	}
	rc.do("SET", "bf", "hello")
	if got := rc.do("BITFIELD_RO", "bf", "SET", "i8", "0", "1", "GET", "x", "0"); !bytes.Equal(got, errReply(ErrBitfieldType)) {
		t.Errorf("parse errors should precede the BITFIELD_RO error, redis says %q", got)
	}
}

func TestDiffLCS(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	pairs := [][2]string{
		{"ohmytext", "mynewtext"}, {"", ""}, {"abc", ""}, {"", "abc"}, {"abc", "abc"}, {"abc", "xyz"},
		{"aaaa", "aa"}, {"abcabc", "cbacba"}, {"a", "a"},
	}
	for i := 0; i < 30; i++ {
		a := make([]byte, rng.Intn(14))
		b := make([]byte, rng.Intn(14))
		for j := range a {
			a[j] = "abc"[rng.Intn(3)]
		}
		for j := range b {
			b[j] = "abc"[rng.Intn(3)]
		}
		pairs = append(pairs, [2]string{string(a), string(b)})
	}
	optSets := [][]string{
		{}, {"LEN"}, {"IDX"}, {"IDX", "WITHMATCHLEN"}, {"idx", "minmatchlen", "2"}, {"IDX", "MINMATCHLEN", "-5", "WITHMATCHLEN"},
		{"WITHMATCHLEN"}, {"MINMATCHLEN", "3"}, {"LEN", "IDX"}, {"IDX", "LEN"}, {"MINMATCHLEN"}, {"MINMATCHLEN", "x"},
		{"FOO"}, {"LEN", "MINMATCHLEN", "x", "IDX"}, {"LEN", "FOO", "IDX"}, {"IDX", "MINMATCHLEN", "1", "MINMATCHLEN", "4"},
	}
	for _, proto := range []int{2, 3} {
		rc := dialRedis(t, proto)
		for _, p := range pairs {
			rc.do("SET", "l1", p[0])
			rc.do("SET", "l2", p[1])
			for _, opts := range optSets {
				want := rc.do(append([]string{"LCS", "l1", "l2"}, opts...)...)
				w := resp.Writer{Proto: proto}
				o, e := ParseLCSOptions(toBytes(opts))
				if e == "" {
					var res LCSResult
					res, e = ComputeLCS([]byte(p[0]), []byte(p[1]), o)
					if e == "" {
						WriteLCS(&w, res, o)
					}
				}
				if e != "" {
					w.Error(e)
				}
				if !bytes.Equal(w.Buf, want) {
					t.Errorf("RESP%d LCS %q %q %q: got %q, redis %q", proto, p[0], p[1], opts, w.Buf, want)
				}
			}
		}
	}
}

func TestDiffLCSLimits(t *testing.T) {
	rc := dialRedis(t, 2)
	// 11585^2*4 > 512MB; 11584^2*4 is not... too big to compute here, so
	// only the limit's error text and boundary are compared.
	a := strings.Repeat("a", 11585)
	rc.do("SET", "l1", a)
	rc.do("SET", "l2", a)
	want := rc.do("LCS", "l1", "l2", "LEN")
	_, e := ComputeLCS([]byte(a), []byte(a), LCSOptions{Len: true})
	if !bytes.Equal(errReply(e), want) {
		t.Errorf("LCS over the memory limit: got %q, redis %q", e, want)
	}
}

func TestDiffGlob(t *testing.T) {
	rc := dialRedis(t, 2)
	rc.do("SELECT", "9")
	rc.do("FLUSHDB")
	keys := []string{
		"", "a", "b", "A", "ab", "abc", "aXc", "hello", "hallo", "hxllo", "heeeello", "hillo", "h",
		"*", "?", "[", "]", "\\", "-", "^", "a]", "[a", "a-b", "\x00", "\xc3", "\xff", "\x80x", "foo.bar",
		"foo:bar:baz", "user:1000", "User:1000", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaab", "x\\y", "]]", "^a", "ZZ", "zz", "_",
	}
	for _, k := range keys {
		rc.do("SET", k, "1")
	}
	patterns := []string{
		"*", "?", "a", "a*", "*c", "h?llo", "h*llo", "h[ae]llo", "h[^e]llo", "h[a-b]llo", "h[b-a]llo",
		"[", "[a", "[a-", "[a-c", "[^", "[^a", "[]", "[]]", "[\\]]", "[\\", "\\", "\\*", "\\a", "a\\", "[a-\\]",
		"*a*", "**", "***b", "?*", "*?", "??", "[^a-z]*", "[A-Z]*", "[a-Z]", "[Z-a]", "user:*", "User:*",
		"*:*:*", "[\xc3]", "[a-\xff]", "[\x00-a]", "[\x80-\xff]*", "*[", "*\\", "[-]", "[a-]", "[-a]", "[^-]",
		"a*a*a*a*a*a*a*a*b", "a*a*a*a*a*a*a*a*c", "*]", "[]-a]", "x\\\\y", "[*]", "[?]", "h[", "\\[a", "z*",
		"[!a]", "[^^]", "[\\^]", "[a-a-b]", "\x00", "*\x00*", "?\x00",
	}
	for _, p := range patterns {
		want := parseArray(t, rc.do("KEYS", p))
		var got []string
		for _, k := range keys {
			if cstr.MatchesAll([]byte(p)) || cstr.Match([]byte(p), []byte(k), false) {
				got = append(got, k)
			}
		}
		compareSets(t, "KEYS "+strconv.Quote(p), got, want)
	}
	// Case-insensitive matching: COMMAND LIST FILTERBY PATTERN matches
	// command names with nocase.
	names := parseArray(t, rc.do("COMMAND", "LIST"))
	nocasePatterns := []string{
		"GET*", "get*", "*RANGE", "[A-C]*", "[a-c]*", "[^a-z]*", "*|*", "FUNCTION|*", "Z?ADD", "[X-Z]*",
		"[x-Z]*", "[_-a]*", "*[\\]*", "s[a-E]t", "[B-a]*", "bit*", "*STORE*", "?", "*", "[[-`]*",
	}
	for _, p := range nocasePatterns {
		want := parseArray(t, rc.do("COMMAND", "LIST", "FILTERBY", "PATTERN", p))
		var got []string
		for _, n := range names {
			if cstr.Match([]byte(p), []byte(n), true) {
				got = append(got, n)
			}
		}
		compareSets(t, "COMMAND LIST FILTERBY PATTERN "+strconv.Quote(p), got, want)
	}
	// The '*' nesting limit: 1000 nested stars still match, 1001 do not.
	long := strings.Repeat("a", 1100)
	rc.do("FLUSHDB")
	rc.do("SET", long, "1")
	for _, n := range []int{999, 1000, 1001} {
		p := strings.Repeat("*a", n)
		want := len(parseArray(t, rc.do("KEYS", p))) == 1
		if got := cstr.Match([]byte(p), []byte(long), false); got != want {
			t.Errorf("nesting %d: got %v, redis %v", n, got, want)
		}
	}
	rc.do("FLUSHDB")
	rc.do("SELECT", "0")
}

func compareSets(t *testing.T, what string, got, want []string) {
	t.Helper()
	sort.Strings(want)
	sort.Strings(got)
	if strings.Join(got, "\x01") != strings.Join(want, "\x01") || len(got) != len(want) {
		t.Errorf("%s: got %q, redis %q", what, got, want)
	}
}

// parseArray decodes a RESP2 array of bulk strings.
func parseArray(t *testing.T, raw []byte) []string {
	t.Helper()
	lines := bytes.SplitN(raw, []byte("\r\n"), 2)
	n, err := strconv.Atoi(string(lines[0][1:]))
	if err != nil || raw[0] != '*' {
		t.Fatalf("not an array: %q", raw)
	}
	rest := lines[1]
	out := []string{}
	for i := 0; i < n; i++ {
		hdr := bytes.SplitN(rest, []byte("\r\n"), 2)
		l, _ := strconv.Atoi(string(hdr[0][1:]))
		out = append(out, string(hdr[1][:l]))
		rest = hdr[1][l+2:]
	}
	return out
}
