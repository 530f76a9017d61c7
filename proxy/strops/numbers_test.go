package strops

import (
	"math"
	"testing"
)

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
