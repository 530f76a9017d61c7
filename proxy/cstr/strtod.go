package cstr

import (
	"math"
	"strconv"
	"strings"
)

// Strtod mirrors glibc's strtod(s, &end) in the "C" locale: it parses the
// longest prefix of s that is a number (leading isspace blanks, an optional
// sign, decimal or hexadecimal digits with an optional point and exponent,
// "inf", "infinity", "nan" or "nan(chars)", any case) and returns its value
// and the number of bytes used (end - s), or (0, 0) when there is no number.
// Overflow gives ±Inf and underflow 0 (or a subnormal), as strtod returns
// with errno ERANGE; "0x" not followed by a hex digit is the number 0 of one
// byte. A NaN with a numeric payload ("nan(0x7)") carries it in its
// mantissa as glibc does. s is used as given: a NUL byte ends the number.
func Strtod[T Text](s T) (float64, int) {
	v, n, _ := strtod(s)
	return v, n
}

// strtod is Strtod that also reports ERANGE on overflow to ±Inf or
// underflow to zero (what Redis's string2d checks).
func strtod[T Text](s T) (v float64, n int, erange bool) {
	i := 0
	for i < len(s) && IsSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	v, n, erange = strtodUnsigned(s[i:])
	if n == 0 {
		return 0, 0, false
	}
	if neg {
		v = -v
	}
	return v, i + n, erange
}

func strtodUnsigned[T Text](s T) (float64, int, bool) {
	switch {
	case HasPrefixFold(s, "infinity"):
		return math.Inf(1), 8, false
	case HasPrefixFold(s, "inf"):
		return math.Inf(1), 3, false
	case HasPrefixFold(s, "nan"):
		v, n := parseNaN(s)
		return v, n, false
	case len(s) >= 2 && s[0] == '0' && s[1]|0x20 == 'x':
		if v, n, erange := parseHexFloat(s[2:]); n > 0 {
			return v, n + 2, erange
		}
		return 0, 1, false // just the "0"
	}
	return parseDecimal(s)
}

// parseNaN handles "nan" and "nan(n-char-sequence)"; glibc stores a numeric
// sequence in the mantissa of the quiet NaN it returns.
func parseNaN[T Text](s T) (float64, int) {
	bits := uint64(0x7ff8000000000000)
	n := 3
	if len(s) > 3 && s[3] == '(' {
		j := 4
		for j < len(s) && (IsDigit(s[j]) || ('a' <= s[j]|0x20 && s[j]|0x20 <= 'z') || s[j] == '_') {
			j++
		}
		if j < len(s) && s[j] == ')' {
			if m, ok := parseNaNPayload(string(s[4:j])); ok {
				bits |= m & 0x000fffffffffffff
			}
			n = j + 1
		}
	}
	return math.Float64frombits(bits), n
}

// parseNaNPayload mirrors strtoull(seq, &end, 0) consuming all of seq.
func parseNaNPayload(seq string) (uint64, bool) {
	base := 10
	switch {
	case len(seq) > 2 && seq[0] == '0' && seq[1]|0x20 == 'x':
		base, seq = 16, seq[2:]
	case len(seq) > 1 && seq[0] == '0':
		base, seq = 8, seq[1:]
	}
	if seq == "" {
		return 0, false
	}
	m, err := strconv.ParseUint(seq, base, 64)
	if err != nil {
		if isRangeErr(err) {
			return math.MaxUint64, true
		}
		return 0, false
	}
	return m, true
}

// scanMantissa reads digits (as isDigit tells them) with an optional
// fraction: it returns where they end, how many digits it read and whether
// any of them is not a zero.
func scanMantissa[T Text](s T, isDigit func(byte) bool) (end, digits int, nonzero bool) {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		nonzero = nonzero || s[i] != '0'
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			nonzero = nonzero || s[i] != '0'
			i++
			digits++
		}
	}
	return i, digits, nonzero
}

// parseHexFloat parses the part of a hexadecimal float after "0x". It needs
// at least one hex digit; the binary exponent is optional.
func parseHexFloat[T Text](s T) (float64, int, bool) {
	i, digits, nonzero := scanMantissa(s, IsXDigit)
	if digits == 0 {
		return 0, 0, false
	}
	mant := string(s[:i])
	exp := "0"
	if j := expEnd(s, i, 'p'); j > i {
		exp = string(s[i+1 : j])
		i = j
	}
	v, err := strconv.ParseFloat("0x"+strings.TrimSuffix(mant, ".")+"p"+clampExp(exp), 64)
	if err != nil && !isRangeErr(err) {
		return 0, 0, false
	}
	return v, i, isRangeErr(err) || (v == 0 && nonzero)
}

// parseDecimal parses digits with an optional fraction and exponent.
func parseDecimal[T Text](s T) (float64, int, bool) {
	i, digits, nonzero := scanMantissa(s, IsDigit)
	if digits == 0 {
		return 0, 0, false
	}
	mant := string(s[:i])
	exp := ""
	if j := expEnd(s, i, 'e'); j > i {
		exp = "e" + clampExp(string(s[i+1:j]))
		i = j
	}
	mant = strings.TrimSuffix(mant, ".")
	if strings.HasPrefix(mant, ".") {
		mant = "0" + mant
	}
	v, err := strconv.ParseFloat(mant+exp, 64)
	if err != nil && !isRangeErr(err) {
		return 0, 0, false
	}
	return v, i, isRangeErr(err) || (v == 0 && nonzero)
}

// expEnd returns the end of an exponent ("e-12", "p+3") starting at s[i], or
// i when there is none (the marker must be followed by at least one digit).
func expEnd[T Text](s T, i int, marker byte) int {
	if i >= len(s) || s[i]|0x20 != marker {
		return i
	}
	j := i + 1
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		j++
	}
	if j >= len(s) || !IsDigit(s[j]) {
		return i
	}
	for j < len(s) && IsDigit(s[j]) {
		j++
	}
	return j
}

// clampExp keeps an exponent's sign but limits its magnitude, so strconv sees
// a value that overflows or underflows the same way without huge numbers.
func clampExp(e string) string {
	sign := ""
	if e != "" && (e[0] == '+' || e[0] == '-') {
		sign, e = e[:1], e[1:]
	}
	e = strings.TrimLeft(e, "0")
	if len(e) > 6 {
		e = "999999"
	}
	if e == "" {
		e = "0"
	}
	return sign + e
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// ParseStrtod parses b as C's strtod when the caller only checks that the
// whole string was consumed and the result is not NaN (Redis's
// ZRANGEBYSCORE bounds, zslParseRange): leading white space is skipped,
// overflow gives ±Inf and underflow 0, NaN is rejected. An empty string
// is 0 (strtod converts nothing and stops at the terminating NUL); an
// all-blank one is rejected (strtod converts nothing and leaves the end at
// the first blank), as redis-server 7.0 answers ZRANGEBYSCORE z "  " 1
// with "ERR min or max is not a float". b is used as given: callers cut at
// a NUL where C would.
func ParseStrtod[T Text](b T) (float64, bool) {
	v, n := Strtod(b)
	if n == 0 {
		return 0, len(b) == 0
	}
	return v, n == len(b) && !math.IsNaN(v)
}

// ParseFloat parses b as Redis's string2d (getDoubleFromObject, ZADD
// scores): the whole of b must be one strtod number (decimal, hexadecimal,
// inf or infinity, any case, optional sign); an empty b, a leading isspace
// blank, a NUL byte, NaN, overflow to ±Inf and underflow to zero are
// rejected. Subnormal results are accepted.
func ParseFloat[T Text](b T) (float64, bool) {
	if len(b) == 0 || IsSpace(b[0]) {
		return 0, false
	}
	v, n, erange := strtod(b)
	if n != len(b) || erange || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}
