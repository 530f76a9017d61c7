package cstr

import (
	"bytes"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		p, s   string
		nocase bool
		want   bool
	}{
		{"h?llo", "hello", false, true}, {"h*llo", "hllo", false, true}, {"h[ae]llo", "hallo", false, true},
		{"h[^e]llo", "hello", false, false}, {"h[a-b]llo", "hbllo", false, true}, {"h[b-a]llo", "hbllo", false, true},
		{"HELLO", "hello", true, true}, {"HELLO", "hello", false, false}, {"[A-C]x", "bx", true, true},
		{"*", "", false, false}, {"**", "", false, false}, {"a*", "a", false, true}, {"\\*", "*", false, true},
		{"\\*", "a", false, false}, {"a\\", "a\\", false, true}, {"[", "[", false, false}, {"[a", "a", false, true},
		{"[\\]]", "]", false, true}, {"[]", "]", false, false}, {"[a-\xff]", "\xc3", false, false},
		{"[\xc3]", "\xc3", false, true}, {strings.Repeat("*a", 1001), strings.Repeat("a", 1100), false, false},
		{strings.Repeat("*a", 1000), strings.Repeat("a", 1100), false, true},
		{"a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 200), false, false},
	}
	for _, c := range cases {
		if got := Match([]byte(c.p), []byte(c.s), c.nocase); got != c.want {
			t.Errorf("Match(%q, %q, %v) = %v, want %v", trunc(c.p), trunc(c.s), c.nocase, got, c.want)
		}
	}
	if !IsLiteral([]byte("user:1000")) || IsLiteral([]byte("user:*")) || IsLiteral([]byte("a\\b")) {
		t.Error("IsLiteral wrong")
	}
	if !MatchesAll([]byte("*")) || MatchesAll([]byte("**")) {
		t.Error("MatchesAll wrong")
	}
}

// trunc shortens long patterns in failure messages.
func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

func FuzzMatch(f *testing.F) {
	f.Add([]byte("h[a-e]llo*"), []byte("hello world"), false)
	f.Add([]byte("a*a*a*a*a*a*a*a*a*a*b"), []byte("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), false)
	f.Add([]byte("[^\\]-z]?"), []byte("Ab"), true)
	f.Fuzz(func(t *testing.T, pattern, s []byte, nocase bool) {
		if len(pattern) > 256 || len(s) > 256 {
			return
		}
		got := Match(pattern, s, nocase)
		if IsLiteral(pattern) && !nocase && got != bytes.Equal(pattern, s) {
			t.Fatalf("literal %q vs %q: Match = %v", pattern, s, got)
		}
		// Escaping every byte of s gives a pattern matching exactly s.
		esc := make([]byte, 0, 2*len(s))
		for _, c := range s {
			esc = append(esc, '\\', c)
		}
		if !Match(esc, s, nocase) {
			t.Fatalf("escaped %q does not match itself", s)
		}
		if len(s) > 0 && Match(esc, s[:len(s)-1], nocase) {
			t.Fatalf("escaped %q matches a prefix", s)
		}
		if got && len(s) > 0 && !Match(append(append([]byte{}, pattern...), '*'), s, nocase) {
			// p matches s implies p* matches s unless p ends in a
			// lone escape or open set whose meaning the '*' changes.
			if !bytes.ContainsAny(pattern, "\\[") {
				t.Fatalf("%q matches %q but %q* does not", pattern, s, pattern)
			}
		}
	})
}

// The configuration-name patterns CONFIG GET matches (case-insensitively).
func TestMatchConfigNames(t *testing.T) {
	tests := []struct {
		p, s string
		want bool
	}{
		{"*", "abc", true}, {"", "", true}, {"", "a", false},
		{"a*c", "abbbc", true}, {"a*c", "abbb", false}, {"a**c", "ac", true},
		{"?", "a", true}, {"?", "", false}, {"a?c", "abc", true},
		{"[abc]x", "bx", true}, {"[^abc]x", "bx", false}, {"[^abc]x", "dx", true},
		{"[a-c]", "b", true}, {"[c-a]", "b", true}, {"[a-c]", "d", false},
		{`\*`, "*", true}, {`\*`, "a", false}, {`[\]]`, "]", true},
		{"MAX*", "maxmemory", true}, {"[A-Z]ort", "port", true},
		{"[abc", "b", true}, {"[abc", "d", false},
		{"*-max-*-entries", "hash-max-listpack-entries", true},
		{"*a*b*c*", "xaybzc", true}, {"*a*b*c*", "xaybz", false},
		{`a\`, `a\`, true},
	}
	for _, tc := range tests {
		if got := Match([]byte(tc.p), []byte(tc.s), true); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.p, tc.s, got, tc.want)
		}
	}
}
