package script

import (
	"math"
	"strconv"
	"strings"
)

// Number parsing as C Lua 5.1 does it on glibc: lua_str2number is strtod,
// which also accepts "inf", "nan" and hexadecimal floats.

// strtod parses the longest prefix of s glibc's strtod accepts and returns
// the value and the number of bytes used (0: no conversion).
func strtod(s string) (float64, int) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	start := i
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	sign := func(f float64) float64 {
		if neg {
			return -f
		}
		return f
	}
	rest := s[i:]
	switch {
	case hasPrefixFold(rest, "infinity"):
		return sign(math.Inf(1)), i + 8
	case hasPrefixFold(rest, "inf"):
		return sign(math.Inf(1)), i + 3
	case hasPrefixFold(rest, "nan"):
		n := i + 3
		if n < len(s) && s[n] == '(' {
			j := n + 1
			for j < len(s) && (isAlnum(s[j]) || s[j] == '_') {
				j++
			}
			if j < len(s) && s[j] == ')' {
				n = j + 1
			}
		}
		return sign(math.NaN()), n
	case len(rest) >= 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X'):
		if f, n := parseHexFloat(rest[2:]); n > 0 {
			return sign(f), i + 2 + n
		}
		return sign(0), i + 1
	}
	j := i
	digits := 0
	for j < len(s) && isDigit(s[j]) {
		j++
		digits++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && isDigit(s[j]) {
			j++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			for k < len(s) && isDigit(s[k]) {
				k++
			}
			j = k
		}
	}
	f, err := strconv.ParseFloat(s[start:j], 64)
	if err != nil && !isRangeErr(err) {
		return 0, 0
	}
	return f, j
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// parseHexFloat parses the part of a hexadecimal float after "0x".
func parseHexFloat(s string) (float64, int) {
	var mant uint64
	exp := 0
	j := 0
	digits := 0
	overflow := false
	for ; j < len(s) && isHexDigit(s[j]); j++ {
		digits++
		if mant>>60 != 0 {
			exp += 4
			overflow = true
			continue
		}
		mant = mant<<4 | uint64(hexVal(s[j]))
	}
	if j < len(s) && s[j] == '.' {
		k := j + 1
		for ; k < len(s) && isHexDigit(s[k]); k++ {
			digits++
			if mant>>60 != 0 {
				continue
			}
			mant = mant<<4 | uint64(hexVal(s[k]))
			exp -= 4
		}
		if digits > 0 {
			j = k
		}
	}
	_ = overflow
	if digits == 0 {
		return 0, 0
	}
	if j < len(s) && (s[j] == 'p' || s[j] == 'P') {
		k := j + 1
		eneg := false
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			eneg = s[k] == '-'
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			e := 0
			for ; k < len(s) && isDigit(s[k]); k++ {
				if e < 100000 {
					e = e*10 + int(s[k]-'0')
				}
			}
			if eneg {
				e = -e
			}
			exp += e
			j = k
		}
	}
	return math.Ldexp(float64(mant), exp), j
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isAlnum(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// str2number is luaO_str2d: the whole C string must be a number, surrounding
// spaces allowed.
func str2number(s string) (float64, bool) {
	s = cstring(s)
	f, n := strtod(s)
	if n == 0 {
		return 0, false
	}
	if n < len(s) && (s[n] == 'x' || s[n] == 'X') {
		u, m := strtoul(s, 16)
		f, n = float64(u), m
	}
	for n < len(s) && isCSpace(s[n]) {
		n++
	}
	return f, n == len(s)
}

// strtoul parses s as C's strtoul(s, &end, base) and returns the value and
// the bytes used (0: no digits). Overflow saturates as strtoul does.
func strtoul(s string, base int) (uint64, int) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if base == 16 && i+1 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') && i+2 < len(s) && isHexDigit(s[i+2]) {
		i += 2
	}
	var v uint64
	digits := 0
	over := false
	for ; i < len(s); i++ {
		d := digitVal(s[i])
		if d < 0 || d >= base {
			break
		}
		digits++
		if v > (math.MaxUint64-uint64(d))/uint64(base) {
			over = true
		}
		v = v*uint64(base) + uint64(d)
	}
	if digits == 0 {
		return 0, 0
	}
	if over {
		return math.MaxUint64, i
	}
	if neg {
		v = -v
	}
	return v, i
}

func digitVal(c byte) int {
	switch {
	case isDigit(c):
		return int(c - '0')
	case 'a' <= c && c <= 'z':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'Z':
		return int(c-'A') + 10
	}
	return -1
}
