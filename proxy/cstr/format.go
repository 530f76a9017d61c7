package cstr

import (
	"math"
	"strconv"
)

// AppendG appends f formatted as glibc's printf("%.<prec>g", f): prec
// significant digits (0 means 1), trailing zeros and a bare point removed,
// the exponent form ("1e+21", at least two exponent digits) when the
// exponent is below -4 or at least prec. Infinities are "inf" and "-inf";
// NaN is "nan", or "-nan" when its sign bit is set. Redis replies use
// prec 17 (addReplyDouble), Lua's number-to-string prec 14.
func AppendG(dst []byte, f float64, prec int) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		if math.Signbit(f) {
			return append(dst, "-nan"...)
		}
		return append(dst, "nan"...)
	}
	if prec < 1 {
		prec = 1
	}
	return strconv.AppendFloat(dst, f, 'g', prec, 64)
}

// FormatG returns AppendG(nil, f, prec) as a string.
func FormatG(f float64, prec int) string {
	var tmp [32]byte
	return string(AppendG(tmp[:0], f, prec))
}
