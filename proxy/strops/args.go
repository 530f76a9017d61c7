package strops

import (
	"strconv"

	"github.com/spillway/spillway/proxy/cstr"
)

// ParseCursor parses a SCAN-family cursor as Redis does, with C's strtoul:
// an optional sign and decimal digits, stopping at a NUL (empty is 0; "-n"
// wraps to 2^64-n). ok is false when it is not one or overflows (Redis
// replies "ERR invalid cursor").
func ParseCursor(arg []byte) (cursor uint64, ok bool) {
	s := string(cstr.CString(arg)) // C stops at a NUL
	if s == "" {
		return 0, true // strtoul reads nothing and stops at the end
	}
	neg := s[0] == '-'
	if neg || s[0] == '+' {
		s = s[1:]
	}
	cursor, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		cursor = -cursor
	}
	return cursor, true
}

// Matcher returns a glob matcher for a MATCH or KEYS pattern (nil when the
// pattern matches everything, "*"). It copies the pattern, so the request's
// buffers may be reused.
func Matcher(pattern []byte) func([]byte) bool {
	if cstr.MatchesAll(pattern) {
		return nil
	}
	p := append([]byte(nil), pattern...)
	return func(k []byte) bool { return cstr.Match(p, k, false) }
}

// LowerASCII returns b with ASCII letters lowered, other bytes unchanged
// (Redis's tolower over option names in error messages).
func LowerASCII(b []byte) string {
	out := make([]byte, len(b))
	for i, ch := range b {
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		out[i] = ch
	}
	return string(out)
}
