package cstr

import (
	"math/rand/v2"
	"testing"
)

// TestAppendRepr checks sdscatrepr's quoting on known values and that
// SplitArgs reads every byte string back from it.
func TestAppendRepr(t *testing.T) {
	for in, want := range map[string]string{
		"":              `""`,
		"abc":           `"abc"`,
		"a\"b\\c":       `"a\"b\\c"`,
		"\n\r\t\a\b":    `"\n\r\t\a\b"`,
		"\x00\x7f\xff ": `"\x00\x7f\xff "`,
	} {
		if got := string(AppendRepr(nil, []byte(in))); got != want {
			t.Errorf("AppendRepr(%q) = %s; want %s", in, got, want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		in := make([]byte, r.IntN(20))
		for i := range in {
			in[i] = byte(r.IntN(256))
		}
		args, ok := SplitArgs(string(AppendRepr(nil, in)))
		if !ok || len(args) != 1 || args[0] != string(in) {
			t.Fatalf("SplitArgs(AppendRepr(%q)) = %q, %v", in, args, ok)
		}
	}
}
