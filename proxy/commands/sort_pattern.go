package commands

import (
	"bytes"
	"errors"
	"math"
	"math/big"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/tiering"
)

// SORT's BY and GET patterns, and its numbers.

// cString returns b up to its first NUL byte: what C's string functions
// see of it (Redis searches patterns and parses numbers so).
func cString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// sortLookup returns the value pattern names for element el, and whether
// there is one, as Redis's lookupKeyByPattern:
//
//   - "#" names el itself;
//   - otherwise the first '*' is replaced by el to make a key name, and a
//     pattern without '*' names nothing;
//   - if "->" follows the '*' with something after it, the key must hold a
//     hash and the value is the field named by what follows the first
//     such "->" (the key name ends before it); otherwise the key must hold
//     a string, its value.
//
// The search for '*' and "->" stops at a NUL byte, as C's does. The key is
// read as a command reads it (a missing key is a keyspace miss, an expired
// one is deleted), hot or from the store. The value may alias the store's
// buffers or the hot copy: use it before the next lookup.
func sortLookup(x *server.Ctx, tx *tiering.Tx, pattern, el []byte) ([]byte, bool, error) {
	cs := cString(pattern)
	if len(cs) == 1 && cs[0] == '#' {
		return el, true, nil
	}
	key, field, ok := sortPatternKey(pattern, el)
	if !ok {
		return nil, false, nil
	}
	if field != nil {
		h, err := tx.OpenColl(x.DB(), key, codec.TypeHash, false)
		switch {
		case errors.Is(err, tiering.ErrWrongType):
			return nil, false, nil
		case err != nil:
			return nil, false, err
		case h == nil:
			x.NotifyKeyMiss(key)
			return nil, false, nil
		}
		return h.Get(field)
	}
	e, err := tx.Get(x.DB(), key)
	switch {
	case err != nil:
		return nil, false, err
	case e == nil:
		x.NotifyKeyMiss(key)
		return nil, false, nil
	case e.Type != codec.TypeString:
		return nil, false, nil
	}
	return e.Str, true, nil
}

// minNormal is the smallest positive normal double.
const minNormal = 0x1p-1022

// sortScore parses v as SORT's numeric sort does, with C's strtod: the C
// string (v up to a NUL) must be one number whole, blanks before it
// allowed, and the empty string is 0. NaN, and a number glibc's strtod
// reports out of range (ERANGE: overflow, underflow to zero, an inexact
// subnormal), are not scores.
func sortScore(v []byte) (float64, bool) {
	cs := cString(v)
	f, n := cstr.Strtod(cs)
	switch {
	case n != len(cs) || math.IsNaN(f):
		return f, false
	case n == 0:
		return 0, true
	}
	return f, !strtodRange(cs, f)
}

// strtodRange reports whether glibc's strtod sets ERANGE parsing s, a
// whole number whose value it returns as f.
func strtodRange(s []byte, f float64) bool {
	t := s
	for len(t) > 0 && cstr.IsSpace(t[0]) {
		t = t[1:]
	}
	if len(t) > 0 && (t[0] == '+' || t[0] == '-') {
		t = t[1:]
	}
	switch {
	case math.IsInf(f, 0):
		return t[0]|0x20 != 'i' // an overflow, unless it reads "inf"
	case math.Abs(f) >= minNormal:
		return false
	case f == 0:
		return mantissaNonzero(t)
	}
	// A subnormal: out of range unless it is exact. The exponent of such
	// a number is small unless the mantissa is as long, so big.Rat is
	// fast; a huge exponent is taken as inexact.
	if exp := exponentDigits(t); exp > 6 {
		return true
	}
	r, ok := new(big.Rat).SetString(string(t))
	return !ok || r.Cmp(new(big.Rat).SetFloat64(math.Abs(f))) != 0
}

// isHex reports whether t (a number without its sign) is hexadecimal.
func isHex(t []byte) bool { return len(t) > 1 && t[0] == '0' && t[1]|0x20 == 'x' }

// mantissaNonzero reports whether t's mantissa (before its exponent) has a
// digit other than 0.
func mantissaNonzero(t []byte) bool {
	hex := isHex(t)
	if hex {
		t = t[2:]
	}
	for _, c := range t {
		switch {
		case c == '.' || c == '0':
		case hex && cstr.IsXDigit(c), !hex && cstr.IsDigit(c):
			return true
		default:
			return false
		}
	}
	return false
}

// exponentDigits returns the number of significant digits of t's
// exponent (0: none).
func exponentDigits(t []byte) int {
	marker := byte('e')
	if isHex(t) {
		marker, t = 'p', t[2:]
	}
	i := bytes.IndexFunc(t, func(r rune) bool { return r|0x20 == rune(marker) })
	if i < 0 {
		return 0
	}
	exp := bytes.TrimLeft(t[i+1:], "+-")
	return len(bytes.TrimLeft(exp, "0"))
}

// sortPatternKey returns the key a BY or GET pattern reaches for element
// el (its first '*' replaced by el), and the hash field after "->" when
// the pattern names one (nil otherwise); ok is false for a pattern with
// no '*' (a constant, or "#"), which reaches no key. The search for '*'
// and "->" stops at a NUL byte, as C's does.
func sortPatternKey(pattern, el []byte) (key, field []byte, ok bool) {
	cs := cString(pattern)
	star := bytes.IndexByte(cs, '*')
	if star < 0 {
		return nil, nil, false
	}
	keyEnd := len(pattern)
	if f := bytes.Index(cs[star+1:], []byte("->")); f >= 0 {
		f += star + 1
		if f+2 < len(pattern) && pattern[f+2] != 0 {
			field, keyEnd = pattern[f+2:], f
		}
	}
	key = make([]byte, 0, keyEnd-1+len(el))
	key = append(append(append(key, pattern[:star]...), el...), pattern[star+1:keyEnd]...)
	return key, field, true
}

// SortPatterns returns the BY and GET patterns of SORT's options (opts:
// the arguments after the key) that reach other keys (those with a '*';
// a constant BY sorts nothing and reaches none), or nil when there are
// none or the options are malformed (SORT then fails before any lookup).
func SortPatterns(opts [][]byte) [][]byte {
	o, err := parseSortOpts(opts, false, func() bool { return true })
	if err != nil {
		return nil
	}
	var ps [][]byte
	if o.by != nil && !o.dontsort {
		ps = append(ps, o.by)
	}
	for _, g := range o.gets {
		if bytes.IndexByte(cString(g), '*') >= 0 {
			ps = append(ps, g)
		}
	}
	return ps
}

// SortPatternKeys appends to dst the keys patterns (SortPatterns) reach
// for elems, as SORT would look them up.
func SortPatternKeys(dst, patterns, elems [][]byte) [][]byte {
	for _, el := range elems {
		for _, p := range patterns {
			if k, _, ok := sortPatternKey(p, el); ok {
				dst = append(dst, k)
			}
		}
	}
	return dst
}
