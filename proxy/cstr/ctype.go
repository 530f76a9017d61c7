package cstr

// IsSpace reports whether c is white space as C's isspace sees it in the
// "C" locale: ' ', '\t', '\n', '\v', '\f' or '\r'.
func IsSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

// IsDigit is C's isdigit: '0' to '9'.
func IsDigit(c byte) bool { return '0' <= c && c <= '9' }

// IsXDigit is C's isxdigit: a decimal digit or 'a'-'f' in either case.
func IsXDigit(c byte) bool {
	return IsDigit(c) || ('a' <= c|0x20 && c|0x20 <= 'f')
}

// CString returns s up to its first NUL byte: what C string functions (and
// Redis's "%s" formatting) see of it. s without a NUL comes back unchanged.
func CString[T Text](s T) T {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return s[:i]
		}
	}
	return s
}

// EqualFold reports whether s, read as a C string (cut at its first NUL),
// equals the word w ignoring ASCII case, as strcasecmp(s, w) == 0 does.
func EqualFold[T Text](s T, w string) bool {
	s = CString(s)
	if len(s) != len(w) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c, d := s[i], w[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}

// HasPrefixFold reports whether s starts with the lower-case ASCII word w,
// ignoring case (strncasecmp(s, w, len(w)) == 0 on text without NUL).
func HasPrefixFold[T Text](s T, w string) bool {
	if len(s) < len(w) {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[i] {
			return false
		}
	}
	return true
}

// MaxErrArgLen is how much of a name or argument Redis quotes in an error
// message ("%.128s").
const MaxErrArgLen = 128

// ErrArg renders an argument as Redis's "%.128s" does in error messages: cut
// at its first NUL, then to MaxErrArgLen bytes.
func ErrArg(b []byte) string {
	b = CString(b)
	if len(b) > MaxErrArgLen {
		b = b[:MaxErrArgLen]
	}
	return string(b)
}
