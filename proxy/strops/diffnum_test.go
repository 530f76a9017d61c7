package strops

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
)

// ParseUint is string2ull, which XADD uses for the parts of an ID.
func TestDiffParseUint(t *testing.T) {
	rc := dialRedis(t, 2)
	for i, s := range []string{
		"5", "+5", " 5", "\t5", "-0", "007", "-1", "0", "18446744073709551615", "18446744073709551616",
		"-18446744073709551615", "5 ", "", "+", "-", "x", "1x", "9223372036854775808", "+-1", "- 1",
	} {
		key := "st" + strconv.Itoa(i)
		want := rc.do("XADD", key, "1-"+s, "f", "v")
		var got []byte
		v, ok := cstr.ParseUint([]byte(s))
		switch {
		case !ok:
			got = errReply("ERR Invalid stream ID specified as stream command argument")
		default:
			got = bulkReply([]byte("1-" + strconv.FormatUint(v, 10)))
		}
		if !bytes.Equal(got, want) {
			t.Errorf("cstr.ParseUint(%q) via XADD: got %q, redis %q", s, got, want)
		}
		rc.do("DEL", key)
	}
}

// ParseFloat is string2d, which ZADD uses for scores. ("-0" is left to the
// unit tests: a zset stores -0 as the integer 0.)
func TestDiffParseFloat(t *testing.T) {
	rc := dialRedis(t, 2)
	for _, s := range []string{
		"1", "1.5", "-1.5", "+1.5", ".5", "5.", ".", "1e10", "1E-10", "1e", "1e+", "0x10", "0x1p-2", "0X1.8P1",
		"0x.8", "0x", "inf", "-inf", "+Infinity", "INF", "infinit", "nan", "-nan", "NaN", " 1", "1 ", "",
		"1e309", "-1e309", "1e-400", "1e-310", "4.9e-324", "2e-324", "0.0", "0e999999", "1\x00",
		"1_0", "0b1", "123456789012345678901234567890", "0.1", "1.7976931348623157e308", "1.7976931348623159e308",
		"1.7976931348623158e308", "0x1.fffffffffffff8p1023", "0x1p-1075", "0x1.0000000001p-1075",
	} {
		rc.do("DEL", "z")
		want := rc.do("ZADD", "z", s, "m")
		v, ok := cstr.ParseFloat([]byte(s))
		if !ok {
			if !bytes.Equal(errReply(ErrNotFloat), want) {
				t.Errorf("cstr.ParseFloat(%q): rejected, redis %q", s, want)
			}
			continue
		}
		if isErr(want) {
			t.Errorf("cstr.ParseFloat(%q) = %v, redis %q", s, v, want)
			continue
		}
		want = rc.do("ZSCORE", "z", "m")
		var w resp.Writer
		w.Double(v)
		if !bytes.Equal(w.Buf, want) {
			t.Errorf("cstr.ParseFloat(%q) = %q, redis %q", s, w.Buf, want)
		}
	}
}
