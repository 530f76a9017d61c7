package strops

import (
	"math"
	"testing"
)

func TestParseTimeout(t *testing.T) {
	tests := []struct {
		in   string
		ms   int64
		want string // error text, "" for none
	}{
		{"0", 0, ""},
		{"1", 1000, ""},
		{"0.1", 100, ""},
		{"0.001", 1, ""},  // 0.001*1000 is 0.99999...: rounded up
		{"0.0001", 1, ""}, // under a millisecond waits one
		{"1e-3", 1, ""},
		{"1.5", 1500, ""},
		{"-0", 0, ""},
		{"-0.0001", 0, ""}, // rounds up to 0: waits for ever
		{"1e10", 10000000000000, ""},
		{"-1", 0, "ERR timeout is negative"},
		{"inf", 0, "ERR timeout is negative"},
		{"-inf", 0, "ERR timeout is negative"},
		{"1e30", 0, "ERR timeout is negative"},
		{"nan", 0, "ERR timeout is not a float or out of range"},
		{"abc", 0, "ERR timeout is not a float or out of range"},
		{"", 0, "ERR timeout is not a float or out of range"},
		{" 1", 0, "ERR timeout is not a float or out of range"},
		{"0x10", 16000, ""},
	}
	for _, tt := range tests {
		ms, msg := ParseTimeout([]byte(tt.in))
		if msg != tt.want || (msg == "" && ms != tt.ms) {
			t.Errorf("ParseTimeout(%q) = %d %q, want %d %q", tt.in, ms, msg, tt.ms, tt.want)
		}
	}
}

func TestParseStrtod(t *testing.T) {
	tests := []struct {
		in string
		v  float64
		ok bool
	}{
		{"", 0, true}, {"  ", 0, true}, {" 1", 1, true}, {"1 ", 0, false}, {"1.5", 1.5, true},
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
