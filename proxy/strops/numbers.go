package strops

import (
	"math"
	"strconv"
)

// ParseInt parses b exactly as Redis's string2ll: an optional '-', then
// decimal digits with no leading zero (the lone "0" excepted), nothing else.
// "+1", " 1", "01", "-0" and out-of-range values are rejected. This is what
// every integer argument (INCRBY, EXPIRE, SETRANGE offsets, ...) accepts.
func ParseInt(b []byte) (int64, bool) {
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
// optional sign (negating modulo 2^64) and allows leading zeros.
func ParseUint(b []byte) (uint64, bool) {
	b = CString(b)
	if v, ok := ParseInt(b); ok {
		if v < 0 {
			return 0, false
		}
		return uint64(v), true
	}
	if len(b) == 0 {
		return 0, false
	}
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	start := i
	var v uint64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false // ERANGE
		}
		v = v*10 + d
	}
	if i == start || i != len(b) {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// isSpace is C's isspace in the C locale.
func isSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

// ParseFloat parses b as Redis's string2d (getDoubleFromObject): the whole
// of b must be a strtod number (decimal, hexadecimal, inf or infinity, any
// case, optional sign); leading space, NaN, overflow and underflow to zero
// are rejected. Subnormal results are accepted.
func ParseFloat(b []byte) (float64, bool) {
	var f cfloat
	if !f.scan(b) {
		return 0, false
	}
	if f.inf {
		if f.neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if f.zero {
		if f.neg {
			return math.Copysign(0, -1), true
		}
		return 0, true
	}
	s := string(b)
	if f.hex && !f.hasExp {
		s += "p0"
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v == 0 {
		// Overflow to infinity or underflow to zero: ERANGE in strtod.
		return 0, false
	}
	return v, true
}

// IncrBy adds delta to the integer held in current, as INCR, DECR, INCRBY
// and DECRBY do. exists is false for a missing key (current ignored, value
// 0). Errors: ErrNotInteger if current is not a string2ll integer,
// ErrOverflow if the sum overflows int64. DECRBY must negate its argument
// with NegateDecrement first.
func IncrBy(current []byte, exists bool, delta int64) (int64, string) {
	var v int64
	if exists {
		var ok bool
		if v, ok = ParseInt(current); !ok {
			return 0, ErrNotInteger
		}
	}
	if (delta < 0 && v < 0 && delta < math.MinInt64-v) ||
		(delta > 0 && v > 0 && delta > math.MaxInt64-v) {
		return 0, ErrOverflow
	}
	return v + delta, ""
}

// NegateDecrement turns DECRBY's argument into the delta for IncrBy,
// rejecting math.MinInt64 with ErrDecrOverflow as Redis does.
func NegateDecrement(d int64) (int64, string) {
	if d == math.MinInt64 {
		return 0, ErrDecrOverflow
	}
	return -d, ""
}

// cfloat is the result of scanning a strtod/strtold number.
type cfloat struct {
	neg, inf, hex, zero, hasExp bool
	mant                        []byte // significant digits, no dot, leading zeros stripped
	fracDigits                  int    // digits of mant after the radix point
	exp                         int64  // explicit exponent (saturated), decimal or binary
}

// scan validates that the whole of b is one strtod number with no leading
// white space, as Redis requires, and records its parts. NaN in any form is
// rejected. b may contain no NUL byte (callers cut at NUL where C would).
func (f *cfloat) scan(b []byte) bool {
	*f = cfloat{}
	i, n := 0, len(b)
	if n == 0 {
		return false
	}
	if b[0] == '+' || b[0] == '-' {
		f.neg = b[0] == '-'
		i++
	}
	rest := b[i:]
	if equalFold(rest, "inf") || equalFold(rest, "infinity") {
		if len(CString(rest)) != len(rest) {
			return false
		}
		f.inf = true
		return true
	}
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	if n-i >= 3 && b[i] == '0' && (b[i+1] == 'x' || b[i+1] == 'X') && (isHex(b[i+2]) || (b[i+2] == '.' && n-i >= 4 && isHex(b[i+3]))) {
		f.hex = true
		isDigit = isHex
		i += 2
	}
	digits, seenDot, nonzero := 0, false, false
	for ; i < n; i++ {
		c := b[i]
		switch {
		case isDigit(c):
			digits++
			if c != '0' {
				nonzero = true
			}
			if nonzero {
				f.mant = append(f.mant, c)
				if seenDot {
					f.fracDigits++
				}
			} else if seenDot {
				f.fracDigits++ // a leading zero after the point still scales
			}
			continue
		case c == '.' && !seenDot:
			seenDot = true
			continue
		}
		break
	}
	if digits == 0 {
		return false
	}
	if !nonzero {
		f.zero = true
	}
	if i < n && ((!f.hex && (b[i] == 'e' || b[i] == 'E')) || (f.hex && (b[i] == 'p' || b[i] == 'P'))) {
		j := i + 1
		eneg := false
		if j < n && (b[j] == '+' || b[j] == '-') {
			eneg = b[j] == '-'
			j++
		}
		if j == n || !isDigitDec(b[j]) {
			return false // strtod stops before the 'e': trailing garbage
		}
		var e int64
		for ; j < n && isDigitDec(b[j]); j++ {
			if e < 1e15 {
				e = e*10 + int64(b[j]-'0')
			}
		}
		if eneg {
			e = -e
		}
		f.exp, f.hasExp, i = e, true, j
	}
	return i == n
}

func isDigitDec(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}
