package strops

import (
	"bytes"
	"strconv"
	"testing"
	"time"

	"github.com/spillway/spillway/proxy/cstr"
)

// isErr reports whether a raw reply is an error.
func isErr(raw []byte) bool { return len(raw) > 0 && raw[0] == '-' }

func TestDiffSetGetExOptions(t *testing.T) {
	rc := dialRedis(t, 2)
	cases := [][]string{
		{}, {"NX"}, {"XX"}, {"nx", "xx"}, {"XX", "NX"}, {"NX", "NX"}, {"GET"}, {"NX", "GET"}, {"KEEPTTL"},
		{"EX", "10"}, {"ex", "10", "EX", "20"}, {"EX", "10", "PX", "10"}, {"EX"}, {"EX", "0"}, {"EX", "-1"},
		{"EX", "abc"}, {"EX", "1.5"}, {"PX", "100"}, {"EXAT", "1"}, {"PXAT", "1"}, {"EXAT", "0"},
		{"PXAT", "9223372036854775807"}, {"EXAT", "9223372036854775"}, {"EXAT", "9223372036854776"},
		{"EX", "9223372036854775"}, {"EX", "9223372036854000"}, {"PX", "9223372036854775807"},
		{"KEEPTTL", "EX", "10"}, {"EX", "10", "KEEPTTL"}, {"PERSIST"}, {"EX", "10", "FOO"}, {"FOO"},
		{"EX", "10", "NX", "GET"}, {"EXAT", "10", "EXAT", "20"}, {"PXAT", "1", "EX", "1"}, {"nX\x00y"},
		{"ex", "+1"}, {"EX", "01"}, {"EX", "-0"}, {"GET", "GET", "KEEPTTL", "KEEPTTL"},
	}
	for _, opts := range cases {
		// SET
		rc.do("SET", "s", "v")
		now := time.Now().UnixMilli()
		want := rc.do(append([]string{"SET", "s", "v"}, opts...)...)
		_, e := ParseSet(toBytes(opts), now)
		if e != "" {
			if !bytes.Equal(errReply(e), want) {
				t.Errorf("SET %q: got %q, redis %q", opts, e, want)
			}
		} else if isErr(want) {
			t.Errorf("SET %q: got ok, redis %q", opts, want)
		}
		// GETEX
		rc.do("SET", "s", "v")
		want = rc.do(append([]string{"GETEX", "s"}, opts...)...)
		o, e := ParseGetEx(toBytes(opts))
		if e == "" {
			_, e = o.Absolute(now, "getex")
		}
		if e != "" {
			if !bytes.Equal(errReply(e), want) {
				t.Errorf("GETEX %q: got %q, redis %q", opts, e, want)
			}
		} else if isErr(want) {
			t.Errorf("GETEX %q: got ok, redis %q", opts, want)
		}
	}
	for _, c := range []struct {
		cmd  string
		kind ExpireKind
		arg  string
	}{{"setex", ExpireEX, "0"}, {"setex", ExpireEX, "x"}, {"setex", ExpireEX, "10"}, {"psetex", ExpirePX, "-5"},
		{"psetex", ExpirePX, "9223372036854775807"}, {"setex", ExpireEX, "9223372036854776"}} {
		want := rc.do(c.cmd, "s", c.arg, "v")
		_, e := ExpireMillis([]byte(c.arg), c.kind, time.Now().UnixMilli(), c.cmd)
		if (e == "" && isErr(want)) || (e != "" && !bytes.Equal(errReply(e), want)) {
			t.Errorf("%s %s: got %q, redis %q", c.cmd, c.arg, e, want)
		}
	}
}

func TestDiffExpireOptions(t *testing.T) {
	rc := dialRedis(t, 2)
	cmds := []struct {
		name    string
		seconds bool
		at      bool
	}{{"expire", true, false}, {"pexpire", false, false}, {"expireat", true, true}, {"pexpireat", false, true}}
	cases := [][]string{
		{"100"}, {"100", "NX"}, {"100", "XX"}, {"100", "GT"}, {"100", "LT"}, {"100", "nx", "xx"},
		{"100", "NX", "GT"}, {"100", "GT", "LT"}, {"100", "XX", "GT"}, {"100", "XX", "LT"}, {"100", "foo"},
		{"100", "NX", "foo"}, {"abc", "NX"}, {"abc", "foo"}, {"abc", "GT", "LT"}, {"9223372036854775807"},
		{"-9223372036854775808"}, {"9223372036854775"}, {"9223372036854776"}, {"-9223372036854776"},
		{"9223372036854775000"}, {"-100"}, {"100", "GT", "GT"}, {"100", "lt\x00zz"},
	}
	for _, c := range cmds {
		for _, args := range cases {
			rc.do("SET", "e", "v")
			now := time.Now().UnixMilli()
			want := rc.do(append([]string{c.name, "e"}, args...)...)
			var got []byte
			f, e := ParseExpireFlags(toBytes(args[1:]))
			var when int64
			if e == "" {
				base := now
				if c.at {
					base = 0
				}
				when, e = ExpireWhen([]byte(args[0]), c.seconds, base, c.name)
			}
			if e != "" {
				got = errReply(e)
			} else if f.Allows(-1, when) {
				got = intReply(1)
			} else {
				got = intReply(0)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s e %q: got %q, redis %q", c.name, args, got, want)
			}
		}
	}
}

func TestDiffStringRanges(t *testing.T) {
	rc := dialRedis(t, 2)
	vals := []string{"", "a", "Hello World", "0123456789"}
	idx := []string{"0", "1", "-1", "-2", "3", "10", "100", "-100", "-9223372036854775808", "9223372036854775807", "x", "01"}
	for _, v := range vals {
		rc.do("SET", "r", v)
		for _, s := range idx {
			for _, e := range idx {
				want := rc.do("GETRANGE", "r", s, e)
				var got []byte
				si, ok1 := cstr.ParseInt([]byte(s))
				ei, ok2 := cstr.ParseInt([]byte(e))
				if !ok1 || !ok2 {
					got = errReply(ErrNotInteger)
				} else {
					got = bulkReply(GetRange([]byte(v), si, ei))
				}
				if !bytes.Equal(got, want) {
					t.Errorf("GETRANGE %q %s %s: got %q, redis %q", v, s, e, got, want)
				}
			}
		}
	}
	offs := []string{"0", "3", "20", "-1", "x", "536870912", "536870911", "9223372036854775807"}
	vals2 := []string{"", "X", "abc"}
	for _, old := range []string{"", "Hello"} {
		for _, off := range offs {
			for _, v := range vals2 {
				if off == "536870911" && v == "X" {
					continue // valid, would allocate 512MB
				}
				rc.do("DEL", "r")
				if old != "" {
					rc.do("SET", "r", old)
				}
				want := rc.do("SETRANGE", "r", off, v)
				wantV := rc.do("GET", "r")
				var got, gotV []byte
				o, e := ParseSetRangeOffset([]byte(off))
				cur := []byte(old)
				if e == "" {
					if v == "" {
						got = intReply(int64(len(old)))
					} else {
						cur, e = SetRange(cur, o, []byte(v))
						if e == "" {
							got = intReply(int64(len(cur)))
						}
					}
				}
				if e != "" {
					got = errReply(e)
				}
				if len(cur) == 0 && old == "" {
					gotV = []byte("$-1\r\n")
				} else {
					gotV = bulkReply(cur)
				}
				if !bytes.Equal(got, want) || !bytes.Equal(gotV, wantV) {
					t.Errorf("SETRANGE %q %s %q: got %q/%q, redis %q/%q", old, off, v, got, gotV, want, wantV)
				}
			}
		}
	}
}

func TestDiffBitArgs(t *testing.T) {
	rc := dialRedis(t, 2)
	rc.do("SET", "g", "\x5a\xff")
	for _, off := range []string{"0", "1", "7", "8", "15", "16", "-1", "x", "4294967295", "4294967296", "#1", "01", "+1"} {
		want := rc.do("GETBIT", "g", off)
		var got []byte
		o, e := ParseBitOffset([]byte(off), 0)
		if e != "" {
			got = errReply(e)
		} else {
			got = intReply(int64(GetBit([]byte("\x5a\xff"), o)))
		}
		if !bytes.Equal(got, want) {
			t.Errorf("GETBIT %s: got %q, redis %q", off, got, want)
		}
	}
	for _, c := range [][2]string{{"3", "1"}, {"9", "0"}, {"30", "1"}, {"x", "1"}, {"3", "2"}, {"3", "-1"}, {"3", "x"}, {"-3", "x"}} {
		rc.do("SET", "g", "\x5a\xff")
		want := rc.do("SETBIT", "g", c[0], c[1])
		wantV := rc.do("GET", "g")
		var got, gotV []byte
		o, e := ParseBitOffset([]byte(c[0]), 0)
		var bit int
		if e == "" {
			bit, e = ParseBitValue([]byte(c[1]))
		}
		v := []byte("\x5a\xff")
		if e != "" {
			got = errReply(e)
		} else {
			var old int
			v, old = SetBit(v, o, bit)
			got = intReply(int64(old))
		}
		gotV = bulkReply(v)
		if !bytes.Equal(got, want) || !bytes.Equal(gotV, wantV) {
			t.Errorf("SETBIT %q: got %q/%q, redis %q/%q", c, got, gotV, want, wantV)
		}
	}
	for _, bit := range []string{"0", "1", "2", "-1", "x"} {
		want := rc.do("BITPOS", "g", bit)
		b, e := ParseBitPosBit([]byte(bit))
		got := errReply(e)
		if e == "" {
			got = intReply(BitPos([]byte("\x5a\xff"), b, BitRange{}))
		}
		if !bytes.Equal(got, want) {
			t.Errorf("BITPOS g %s: got %q, redis %q", bit, got, want)
		}
	}
	srcs := map[string][]byte{"s1": []byte("\x0f\xf0\x55"), "s2": []byte("\xff"), "s3": nil}
	rc.do("DEL", "s3")
	for k, v := range srcs {
		if v != nil {
			rc.doB([]byte("SET"), []byte(k), v)
		}
	}
	for _, c := range [][]string{
		{"AND", "s1", "s2"}, {"or", "s1", "s2"}, {"XOR", "s1", "s2", "s1"}, {"NOT", "s1"}, {"NOT", "s1", "s2"},
		{"and", "s1", "s3"}, {"OR", "s3"}, {"NOT", "s3"}, {"NAND", "s1"}, {"XOR", "s2", "s3", "s1"},
	} {
		rc.do("SET", "dst", "old")
		want := rc.do(append([]string{"BITOP", c[0], "dst"}, c[1:]...)...)
		wantV := rc.do("GET", "dst")
		var got, gotV []byte
		op, e := ParseBitOp([]byte(c[0]), len(c)-1)
		gotV = bulkReply([]byte("old"))
		if e != "" {
			got = errReply(e)
		} else {
			var in [][]byte
			for _, k := range c[1:] {
				in = append(in, srcs[k])
			}
			res := BitOp(op, in)
			got = intReply(int64(len(res)))
			if res == nil {
				gotV = []byte("$-1\r\n")
			} else {
				gotV = bulkReply(res)
			}
		}
		if !bytes.Equal(got, want) || !bytes.Equal(gotV, wantV) {
			t.Errorf("BITOP %q: got %q/%q, redis %q/%q", c, got, gotV, want, wantV)
		}
	}
}

func TestDiffIncr(t *testing.T) {
	rc := dialRedis(t, 2)
	const missing = "\x00"
	curs := []string{missing, "0", "10", "-10", "9223372036854775807", "-9223372036854775808", " 1", "1.0", "", "abc", "007", "-0"}
	deltas := []string{"1", "-1", "0", "9223372036854775807", "-9223372036854775808", "x", "+1", "01", "-0", "1 "}
	for _, cur := range curs {
		for _, d := range deltas {
			for _, cmd := range []string{"INCRBY", "DECRBY"} {
				rc.do("DEL", "n")
				if cur != missing {
					rc.do("SET", "n", cur)
				}
				want := rc.do(cmd, "n", d)
				var e string
				var res int64
				delta, ok := cstr.ParseInt([]byte(d))
				if !ok {
					e = ErrNotInteger
				} else {
					if cmd == "DECRBY" {
						delta, e = NegateDecrement(delta)
					}
					if e == "" {
						res, e = IncrBy([]byte(cur), cur != missing, delta)
					}
				}
				got := intReply(res)
				if e != "" {
					got = errReply(e)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s cur=%q %s: got %q, redis %q", cmd, cur, d, got, want)
				}
			}
		}
	}
	_ = strconv.Itoa
}
