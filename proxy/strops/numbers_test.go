package strops

import (
	"math"
	"testing"
)

func TestParseInt(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"-1", -1, true}, {"99", 99, true},
		{"9223372036854775807", math.MaxInt64, true}, {"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
		{"18446744073709551616", 0, false}, {"99999999999999999999", 0, false},
		{"", 0, false}, {"-", 0, false}, {"+1", 0, false}, {" 1", 0, false}, {"1 ", 0, false},
		{"01", 0, false}, {"00", 0, false}, {"-0", 0, false}, {"-01", 0, false}, {"1a", 0, false},
		{"1.0", 0, false}, {"1\x00", 0, false}, {"000000000000000000001", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseInt([]byte(c.in))
		if ok != c.ok || got != c.want {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseUint(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true}, {"5", 5, true}, {"+5", 5, true}, {" 5", 5, true}, {"007", 7, true},
		{"-0", 0, true}, {"-1", 0, false}, {"18446744073709551615", math.MaxUint64, true},
		{"18446744073709551616", 0, false}, {"-18446744073709551615", 1, true}, {"5 ", 0, false},
		{"", 0, false}, {"+", 0, false}, {"5\x00junk", 5, true}, {"x", 0, false},
	}
	for _, c := range cases {
		got, ok := ParseUint([]byte(c.in))
		if ok != c.ok || got != c.want {
			t.Errorf("ParseUint(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestParseFloat(t *testing.T) {
	cases := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1.5", 1.5, true}, {"-0", math.Copysign(0, -1), true}, {"0", 0, true}, {".5", 0.5, true},
		{"5.", 5, true}, {"0x10", 16, true}, {"0x1p-2", 0.25, true}, {"inf", math.Inf(1), true},
		{"-Infinity", math.Inf(-1), true}, {"1e-310", 1e-310, true}, {"1e-400", 0, false},
		{"1e309", 0, false}, {"nan", 0, false}, {" 1", 0, false}, {"1 ", 0, false}, {"", 0, false},
		{".", 0, false}, {"1e", 0, false}, {"0x", 0, false}, {"1_0", 0, false}, {"1\x00", 0, false},
		{"infinit", 0, false}, {"0e99999999999999999999", 0, true},
	}
	for _, c := range cases {
		got, ok := ParseFloat([]byte(c.in))
		if ok != c.ok || got != c.want || math.Signbit(got) != math.Signbit(c.want) {
			t.Errorf("ParseFloat(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestIncrByFloat(t *testing.T) {
	cases := []struct {
		cur    string
		exists bool
		incr   string
		want   string
		err    string
	}{
		{"10.5", true, "0.1", "10.6", ""},
		{"3.0e3", true, "2.0e3", "5000", ""},
		{"5.0e3", true, "2.0e3", "7000", ""},
		{"", false, "1e-20", "0", ""},
		{"", false, "-1e-20", "0", ""},
		{"-0", true, "0", "0", ""},
		{"", false, "0.000003814697265625", "0.00000381469726562", ""}, // exact tie: to even
		{"", false, "1e20", "100000000000000000000", ""},
		{"", false, "0.1", "0.1", ""},
		{"1.1", true, "2.2", "3.3", ""},
		{"", false, "1e400", "1" + zeros(400), ""}, // checked against Redis in the diff test
		{"", false, "1e-5000", "", ErrNotFloat},
		{"", false, "1e5000", "", ErrNotFloat},
		{"", false, "inf", "", ErrNaNOrInf},
		{"1e4932", true, "1e4932", "", ErrNaNOrInf},
		{"abc", true, "1", "", ErrNotFloat},
		{"", true, "1", "", ErrNotFloat},
		{"1", true, "nan", "", ErrNotFloat},
		{"1", true, "1 ", "", ErrNotFloat},
	}
	for _, c := range cases {
		got, e := IncrByFloat([]byte(c.cur), c.exists, []byte(c.incr))
		if c.incr == "1e400" {
			if e != "" || len(got) != 401 || got[0] != '1' {
				t.Errorf("IncrByFloat(1e400) = %q, %q", trunc(string(got)), e)
			}
			continue
		}
		if string(got) != c.want || e != c.err {
			t.Errorf("IncrByFloat(%q, %v, %q) = %q, %q; want %q, %q", c.cur, c.exists, c.incr, got, e, c.want, c.err)
		}
	}
}

func zeros(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = '0'
	}
	return string(b)
}

func TestIncrBy(t *testing.T) {
	cases := []struct {
		cur    string
		exists bool
		delta  int64
		want   int64
		err    string
	}{
		{"", false, 5, 5, ""}, {"10", true, -3, 7, ""}, {"9223372036854775807", true, 1, 0, ErrOverflow},
		{"-9223372036854775808", true, -1, 0, ErrOverflow}, {"-9223372036854775808", true, 1, math.MinInt64 + 1, ""},
		{" 1", true, 1, 0, ErrNotInteger}, {"", true, 1, 0, ErrNotInteger}, {"1.0", true, 1, 0, ErrNotInteger},
	}
	for _, c := range cases {
		got, e := IncrBy([]byte(c.cur), c.exists, c.delta)
		if got != c.want || e != c.err {
			t.Errorf("IncrBy(%q, %v, %d) = %d, %q; want %d, %q", c.cur, c.exists, c.delta, got, e, c.want, c.err)
		}
	}
	if _, e := NegateDecrement(math.MinInt64); e != ErrDecrOverflow {
		t.Errorf("NegateDecrement(MinInt64) error = %q", e)
	}
	if d, e := NegateDecrement(5); d != -5 || e != "" {
		t.Errorf("NegateDecrement(5) = %d, %q", d, e)
	}
}
