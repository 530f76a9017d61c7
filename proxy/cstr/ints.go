package cstr

import "math"

// ParseInt parses b exactly as Redis's string2ll: an optional '-', then
// decimal digits with no leading zero (the lone "0" excepted), nothing else,
// at most 20 bytes. "+1", " 1", "01", "-0", "" and out-of-range values are
// rejected. This is what every integer argument (INCRBY, EXPIRE, SETRANGE
// offsets, ...), every RESP length header and integer config values accept.
func ParseInt[T Text](b T) (int64, bool) {
	n := len(b)
	if n == 0 || n > 20 {
		return 0, false
	}
	if n == 1 && b[0] == '0' {
		return 0, true
	}
	i, neg := 0, false
	if b[0] == '-' {
		neg, i = true, 1
		if n == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < n; i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return int64(-v), true
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	return int64(v), true
}

// ParseUint parses b as Redis's string2ull: b is read as a C string (cut at
// its first NUL); a string2ll-valid value must be non-negative, anything
// else falls back to strtoull, which skips leading white space, takes an
// optional sign (negating modulo 2^64) and allows leading zeros; the whole
// string must be used and overflow (ERANGE) is rejected.
func ParseUint[T Text](b T) (uint64, bool) {
	b = CString(b)
	if v, ok := ParseInt(b); ok {
		if v < 0 {
			return 0, false
		}
		return uint64(v), true
	}
	v, n, erange := Strtoull(b, 10)
	if n == 0 || n != len(b) || erange {
		return 0, false
	}
	return v, true
}

// Strtoull mirrors glibc's strtoull(s, &end, base) for a base from 2 to 36:
// leading isspace blanks, an optional sign ('-' negates modulo 2^64), for
// base 16 an optional "0x"/"0X" (taken only when a hex digit follows), then
// digits of the base in either case. n is the number of bytes used (end -
// s), 0 when there are no digits (then v is 0). On overflow v is
// math.MaxUint64 and erange is true (errno ERANGE). s is used as given: a
// NUL byte simply stops the digits.
func Strtoull[T Text](s T, base int) (v uint64, n int, erange bool) {
	neg, mag, over, n := scanInteger(s, base)
	if n == 0 {
		return 0, 0, false
	}
	if over {
		return math.MaxUint64, n, true
	}
	if neg {
		mag = -mag
	}
	return mag, n, false
}

// Strtoll mirrors glibc's strtoll(s, &end, base) as Strtoull does, but
// saturates out-of-range values to math.MinInt64 or math.MaxInt64 with
// erange true (errno ERANGE).
func Strtoll[T Text](s T, base int) (v int64, n int, erange bool) {
	neg, mag, over, n := scanInteger(s, base)
	switch {
	case n == 0:
		return 0, 0, false
	case neg && (over || mag > 1<<63):
		return math.MinInt64, n, true
	case neg:
		return int64(-mag), n, false
	case over || mag > math.MaxInt64:
		return math.MaxInt64, n, true
	}
	return int64(mag), n, false
}

// scanInteger is the scanner shared by Strtoull and Strtoll: the sign, the
// magnitude (over: it exceeded 2^64-1) and the bytes used (0: no digits).
func scanInteger[T Text](s T, base int) (neg bool, mag uint64, over bool, n int) {
	i := 0
	for i < len(s) && IsSpace(s[i]) {
		i++
	}
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if base == 16 && i+2 < len(s) && s[i] == '0' && s[i+1]|0x20 == 'x' && IsXDigit(s[i+2]) {
		i += 2
	}
	digits := 0
	for ; i < len(s); i++ {
		d := digitVal(s[i])
		if d < 0 || d >= base {
			break
		}
		digits++
		if mag > (math.MaxUint64-uint64(d))/uint64(base) {
			over = true
		}
		mag = mag*uint64(base) + uint64(d)
	}
	if digits == 0 {
		return false, 0, false, 0
	}
	return neg, mag, over, i
}

func digitVal(c byte) int {
	switch {
	case IsDigit(c):
		return int(c - '0')
	case 'a' <= c && c <= 'z':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'Z':
		return int(c-'A') + 10
	}
	return -1
}
