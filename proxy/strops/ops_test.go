package strops

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spillway/spillway/proxy/resp"
)

func TestGetRange(t *testing.T) {
	v := []byte("Hello World")
	cases := []struct {
		start, end int64
		want       string
	}{
		{0, 4, "Hello"}, {-5, -1, "World"}, {0, -1, "Hello World"}, {-1, -5, ""}, {5, 2, ""},
		{0, 100, "Hello World"}, {-100, 2, "Hel"}, {11, 20, ""}, {-1, -1, "d"}, {0, 0, "H"},
	}
	for _, c := range cases {
		if got := GetRange(v, c.start, c.end); string(got) != c.want {
			t.Errorf("GetRange(%d, %d) = %q, want %q", c.start, c.end, got, c.want)
		}
	}
	if got := GetRange(nil, 0, -1); len(got) != 0 {
		t.Errorf("GetRange(empty) = %q", got)
	}
}

func TestSetRange(t *testing.T) {
	cases := []struct {
		old  string
		off  int64
		val  string
		want string
		err  string
	}{
		{"Hello World", 6, "Redis", "Hello Redis", ""},
		{"", 3, "ab", "\x00\x00\x00ab", ""},
		{"abc", 1, "", "abc", ""},
		{"abc", -1, "x", "abc", ErrOffsetRange},
		{"abc", MaxBulkLen, "x", "abc", ErrStringTooLong},
		{"abc", MaxBulkLen - 1, "xy", "abc", ErrStringTooLong},
		{"abc", 9223372036854775807, "x", "abc", ErrStringTooLong},
	}
	for _, c := range cases {
		got, e := SetRange([]byte(c.old), c.off, []byte(c.val))
		if string(got) != c.want || e != c.err {
			t.Errorf("SetRange(%q, %d, %q) = %q, %q; want %q, %q", c.old, c.off, c.val, got, e, c.want, c.err)
		}
	}
	if _, e := ParseSetRangeOffset([]byte("-1")); e != ErrOffsetRange {
		t.Errorf("negative offset: %q", e)
	}
	if _, e := ParseSetRangeOffset([]byte("x")); e != ErrNotInteger {
		t.Errorf("bad offset: %q", e)
	}
	if e := CheckStringLength(MaxBulkLen-1, 1); e != "" {
		t.Errorf("exactly MaxBulkLen rejected: %q", e)
	}
}

func TestBits(t *testing.T) {
	v, old := SetBit(nil, 7, 1)
	if !bytes.Equal(v, []byte{1}) || old != 0 {
		t.Fatalf("SetBit(nil, 7) = %x, %d", v, old)
	}
	v, old = SetBit(v, 7, 0)
	if !bytes.Equal(v, []byte{0}) || old != 1 {
		t.Fatalf("SetBit clear = %x, %d", v, old)
	}
	v, _ = SetBit(v, 17, 1)
	if !bytes.Equal(v, []byte{0, 0, 0x40}) || GetBit(v, 17) != 1 || GetBit(v, 1000) != 0 {
		t.Fatalf("SetBit grow = %x", v)
	}
	offs := []struct {
		in    string
		width int
		want  uint64
		err   string
	}{
		{"0", 0, 0, ""}, {"4294967295", 0, 4294967295, ""}, {"4294967296", 0, 0, ErrBitOffset},
		{"-1", 0, 0, ErrBitOffset}, {"#2", 0, 0, ErrBitOffset}, {"#2", 8, 16, ""}, {"#-1", 8, 0, ErrBitOffset},
		{"#536870911", 8, 4294967288, ""}, {"#536870912", 8, 0, ErrBitOffset}, {"x", 8, 0, ErrBitOffset},
	}
	for _, c := range offs {
		got, e := ParseBitOffset([]byte(c.in), c.width)
		if got != c.want || e != c.err {
			t.Errorf("ParseBitOffset(%q, %d) = %d, %q; want %d, %q", c.in, c.width, got, e, c.want, c.err)
		}
	}
	ones := []byte{0xff, 0xff, 0xff}
	pos := []struct {
		v    []byte
		bit  int
		r    BitRange
		want int64
	}{
		{ones, 0, BitRange{}, 24},
		{ones, 0, BitRange{HasStart: true, Start: 1}, 24},
		{ones, 0, BitRange{HasStart: true, HasEnd: true, Start: 0, End: -1}, -1},
		{ones, 1, BitRange{HasStart: true, Start: 3}, -1},
		{[]byte{0, 0x10}, 1, BitRange{}, 11},
		{[]byte{0, 0x10}, 1, BitRange{HasStart: true, HasEnd: true, Start: 0, End: 10, Bit: true}, -1},
		{[]byte{0, 0x10}, 1, BitRange{HasStart: true, HasEnd: true, Start: 0, End: 11, Bit: true}, 11},
		{[]byte{}, 0, BitRange{}, -1},
		{[]byte{0xf0}, 0, BitRange{HasStart: true, HasEnd: true, Start: 2, End: 5, Bit: true}, 4},
	}
	for _, c := range pos {
		if got := BitPos(c.v, c.bit, c.r); got != c.want {
			t.Errorf("BitPos(%x, %d, %+v) = %d, want %d", c.v, c.bit, c.r, got, c.want)
		}
	}
	cnt := []struct {
		v    []byte
		r    BitRange
		want int64
	}{
		{[]byte("foobar"), BitRange{}, 26},
		{[]byte("foobar"), BitRange{HasStart: true, HasEnd: true, Start: 1, End: 1}, 6},
		{[]byte("foobar"), BitRange{HasStart: true, HasEnd: true, Start: 5, End: 30, Bit: true}, 17},
		{[]byte("foobar"), BitRange{HasStart: true, HasEnd: true, Start: -1, End: -2}, 0},
	}
	for _, c := range cnt {
		if got := BitCount(c.v, c.r); got != c.want {
			t.Errorf("BitCount(%q, %+v) = %d, want %d", c.v, c.r, got, c.want)
		}
	}
	if _, e := ParseBitOp([]byte("not"), 2); e != ErrBitOpNot {
		t.Errorf("NOT with two keys: %q", e)
	}
	if got := BitOp(BitAnd, [][]byte{[]byte("\xff\xff"), []byte("\x0f")}); !bytes.Equal(got, []byte{0x0f, 0}) {
		t.Errorf("AND = %x", got)
	}
	if got := BitOp(BitOr, [][]byte{nil, nil}); got != nil {
		t.Errorf("OR of empties = %x", got)
	}
}

func TestBitfieldOverflow(t *testing.T) {
	cases := []struct {
		args string
		v    string
		want string // results, "nil" for null
		newv string
	}{
		{"INCRBY u2 100 1 OVERFLOW SAT INCRBY u2 102 1", "", "1 1", strings.Repeat("\x00", 12) + "\x05"},
		{"SET i8 0 127 INCRBY i8 0 1", "", "0 -128", "\x80"},
		{"OVERFLOW SAT SET i8 0 127 INCRBY i8 0 1", "", "0 127", "\x7f"},
		{"OVERFLOW FAIL SET i8 0 127 INCRBY i8 0 1 GET i8 0", "", "0 nil 127", "\x7f"},
		{"OVERFLOW SAT SET u8 0 -1", "", "0", "\xff"},
		{"SET u8 0 -1", "", "0", "\xff"},
		{"OVERFLOW FAIL SET u8 0 256", "", "nil", "\x00"},
		{"OVERFLOW SAT INCRBY i64 0 -9223372036854775808 INCRBY i64 0 -1", "", "-9223372036854775808 -9223372036854775808", "\x80\x00\x00\x00\x00\x00\x00\x00"},
		{"INCRBY i64 0 9223372036854775807 INCRBY i64 0 1", "", "9223372036854775807 -9223372036854775808", "\x80\x00\x00\x00\x00\x00\x00\x00"},
		{"GET u4 0 GET i4 0 GET u8 4", "\xf5", "15 -1 80", "\xf5"},
		{"SET i4 #1 -1", "", "0", "\x0f"},
	}
	for _, c := range cases {
		ops, e := ParseBitfield(toBytes(strings.Fields(c.args)), false)
		if e != "" {
			t.Fatalf("ParseBitfield(%q): %s", c.args, e)
		}
		v := []byte(c.v)
		nv, res, _ := ExecBitfield(v, ops)
		var parts []string
		for _, r := range res {
			if r.Null {
				parts = append(parts, "nil")
			} else {
				parts = append(parts, itoa(r.Value))
			}
		}
		if got := strings.Join(parts, " "); got != c.want || string(nv) != c.newv {
			t.Errorf("BITFIELD %q on %q = %s (%q); want %s (%q)", c.args, c.v, got, nv, c.want, c.newv)
		}
	}
	if _, e := ParseBitfield(toBytes([]string{"SET", "i8", "0", "1"}), true); e != ErrBitfieldRO {
		t.Errorf("BITFIELD_RO SET: %q", e)
	}
	if _, e := ParseBitfield(toBytes([]string{"GET", "u64", "0"}), false); e != ErrBitfieldType {
		t.Errorf("u64: %q", e)
	}
}

func itoa(v int64) string {
	var w resp.Writer
	w.Int(v)
	return string(w.Buf[1 : len(w.Buf)-2])
}

func TestLCS(t *testing.T) {
	o, e := ParseLCSOptions(toBytes([]string{"IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"}))
	if e != "" {
		t.Fatal(e)
	}
	res, e := ComputeLCS([]byte("ohmytext"), []byte("mynewtext"), o)
	if e != "" {
		t.Fatal(e)
	}
	if res.Len != 6 || string(res.LCS) != "mytext" || len(res.Matches) != 1 ||
		res.Matches[0] != (LCSMatch{4, 7, 5, 8}) {
		t.Fatalf("LCS = %+v", res)
	}
	w := resp.Writer{Proto: 3}
	WriteLCS(&w, res, o)
	want := "%2\r\n$7\r\nmatches\r\n*1\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n$3\r\nlen\r\n:6\r\n"
	if string(w.Buf) != want {
		t.Errorf("RESP3 IDX reply %q, want %q", w.Buf, want)
	}
	for _, c := range []struct {
		args []string
		err  string
	}{
		{[]string{"LEN", "IDX"}, ErrLCSBoth}, {[]string{"MINMATCHLEN"}, ErrSyntax},
		{[]string{"MINMATCHLEN", "x", "LEN", "IDX"}, ErrNotInteger}, {[]string{"FOO"}, ErrSyntax},
	} {
		if _, e := ParseLCSOptions(toBytes(c.args)); e != c.err {
			t.Errorf("ParseLCSOptions(%q) = %q, want %q", c.args, e, c.err)
		}
	}
}

func TestStringOptions(t *testing.T) {
	const now = 1_700_000_000_000
	cases := []struct {
		args string
		at   int64
		err  string
	}{
		{"", 0, ""}, {"EX 10", now + 10_000, ""}, {"PX 10", now + 10, ""}, {"EXAT 10", 10_000, ""},
		{"PXAT 10", 10, ""}, {"ex 1 EX 2", now + 2_000, ""}, {"EX 1 PX 1", 0, ErrSyntax}, {"KEEPTTL EX 1", 0, ErrSyntax},
		{"NX XX", 0, ErrSyntax}, {"EX", 0, ErrSyntax}, {"EX 0", 0, ErrInvalidExpire("set")},
		{"EX x", 0, ErrNotInteger}, {"PERSIST", 0, ErrSyntax}, {"EX 9223372036854776", 0, ErrInvalidExpire("set")},
		{"PX 9223372036854775807", 0, ErrInvalidExpire("set")}, {"NX GET KEEPTTL", 0, ""},
	}
	for _, c := range cases {
		got, e := ParseSet(toBytes(strings.Fields(c.args)), now)
		if got.ExpireAt != c.at || e != c.err {
			t.Errorf("ParseSet(%q) = %d, %q; want %d, %q", c.args, got.ExpireAt, e, c.at, c.err)
		}
	}
	o, e := ParseGetEx(toBytes([]string{"PERSIST"}))
	if e != "" || !o.Persist {
		t.Errorf("GETEX PERSIST = %+v, %q", o, e)
	}
	if _, e := ParseGetEx(toBytes([]string{"EX", "1", "PERSIST"})); e != ErrSyntax {
		t.Errorf("GETEX EX PERSIST: %q", e)
	}
	if _, e := ParseGetEx(toBytes([]string{"NX"})); e != ErrSyntax {
		t.Errorf("GETEX NX: %q", e)
	}
	o, _ = ParseGetEx(toBytes([]string{"EX", "-1"}))
	if _, e := o.Absolute(now, "getex"); e != "ERR invalid expire time in 'getex' command" {
		t.Errorf("GETEX EX -1: %q", e)
	}
}

func TestExpireOptions(t *testing.T) {
	flags := []struct {
		args string
		err  string
	}{
		{"", ""}, {"NX", ""}, {"XX GT", ""}, {"nx xx", ErrExpireNXXX}, {"NX LT", ErrExpireNXXX},
		{"GT LT", ErrExpireGTLT}, {"foo", "ERR Unsupported option foo"}, {"NX foo", "ERR Unsupported option foo"},
	}
	for _, c := range flags {
		if _, e := ParseExpireFlags(toBytes(strings.Fields(c.args))); e != c.err {
			t.Errorf("ParseExpireFlags(%q) = %q, want %q", c.args, e, c.err)
		}
	}
	allows := []struct {
		f             ExpireFlags
		current, when int64
		want          bool
	}{
		{ExpireFlags{NX: true}, -1, 5, true}, {ExpireFlags{NX: true}, 3, 5, false},
		{ExpireFlags{XX: true}, -1, 5, false}, {ExpireFlags{GT: true}, -1, 5, false},
		{ExpireFlags{GT: true}, 3, 5, true}, {ExpireFlags{GT: true}, 5, 5, false},
		{ExpireFlags{LT: true}, -1, 5, true}, {ExpireFlags{LT: true}, 3, 5, false}, {ExpireFlags{}, 3, 1, true},
	}
	for _, c := range allows {
		if got := c.f.Allows(c.current, c.when); got != c.want {
			t.Errorf("%+v.Allows(%d, %d) = %v", c.f, c.current, c.when, got)
		}
	}
	if w, e := ExpireWhen([]byte("10"), true, 1000, "expire"); w != 11_000 || e != "" {
		t.Errorf("ExpireWhen = %d, %q", w, e)
	}
	if _, e := ExpireWhen([]byte("9223372036854776"), true, 0, "expireat"); e != "ERR invalid expire time in 'expireat' command" {
		t.Errorf("ExpireWhen overflow: %q", e)
	}
	if got := TTL(10_499, 0, false); got != 10 {
		t.Errorf("TTL = %d", got)
	}
	if got := TTL(5, 10, true); got != 0 {
		t.Errorf("PTTL past = %d", got)
	}
}
