package strops

import (
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
