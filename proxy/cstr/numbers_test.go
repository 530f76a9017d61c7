package cstr

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

func TestParseStrtod(t *testing.T) {
	tests := []struct {
		in string
		v  float64
		ok bool
	}{
		{"", 0, true}, {"  ", 0, false}, {" 1", 1, true}, {"1 ", 0, false}, {"1.5", 1.5, true},
		{"-inf", math.Inf(-1), true}, {"+inf", math.Inf(1), true}, {"inf", math.Inf(1), true},
		{"1e400", math.Inf(1), true}, {"-1e400", math.Inf(-1), true}, {"1e-400", 0, true},
		{"nan", 0, false}, {"abc", 0, false}, {"0x10", 16, true}, {"1e", 0, false},
	}
	for _, tt := range tests {
		v, ok := ParseStrtod([]byte(tt.in))
		if ok != tt.ok || (ok && v != tt.v) {
			t.Errorf("ParseStrtod(%q) = %v %v, want %v %v", tt.in, v, ok, tt.v, tt.ok)
		}
	}
}

// The cases config's integer values were tested with (strings, not
// byte slices).
func TestParseIntString(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"-1", -1, true}, {"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true}, {"9223372036854775808", 0, false},
		{"", 0, false}, {"-", 0, false}, {"-0", 0, false}, {"01", 0, false}, {"+1", 0, false},
		{" 1", 0, false}, {"1k", 0, false}, {"1.0", 0, false},
	}
	for _, tc := range tests {
		got, ok := ParseInt(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseInt(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
