package geohash

import (
	"math"
	"strconv"
)

// AppendDistance appends a distance as Redis replies with it (geo.c's
// addReplyDoubleDistance, util.c's fixedpoint_d2string with 4 digits):
// d*10000 rounded half to even to an integer (llrint; a NaN or an
// out-of-range product is the integer minimum, as on x86-64), printed
// with four decimals; zero (either sign) is "0.0000".
func AppendDistance(dst []byte, d float64) []byte {
	if d == 0 {
		return append(dst, "0.0000"...)
	}
	var v int64
	if r := math.RoundToEven(d * 10000); r >= -0x1p63 && r < 0x1p63 {
		v = int64(r)
	} else {
		v = math.MinInt64
	}
	mag := uint64(v)
	if v < 0 {
		dst = append(dst, '-')
		mag = -mag // two's complement: MinInt64 gives 2^63
	}
	dst = strconv.AppendUint(dst, mag/10000, 10)
	frac := mag % 10000
	dst = append(dst, '.', byte('0'+frac/1000), byte('0'+frac/100%10), byte('0'+frac/10%10), byte('0'+frac%10))
	return dst
}

// AppendHuman appends a coordinate as Redis replies with it (util.c's
// ld2string in human mode, "%.17Lf" of the value, exact): 17 decimals with
// the trailing zeros and a trailing point removed, "-0" as "0", infinities
// as "inf" and "-inf".
func AppendHuman(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		return append(dst, "nan"...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'f', 17, 64)
	for dst[len(dst)-1] == '0' {
		dst = dst[:len(dst)-1]
	}
	if dst[len(dst)-1] == '.' {
		dst = dst[:len(dst)-1]
	}
	if string(dst[start:]) == "-0" {
		dst = append(dst[:start], '0')
	}
	return dst
}

// AppendFixed6 appends f as C's printf "%f" does (GEOADD's error for an
// invalid pair): six decimals, infinities as "inf" and "-inf".
func AppendFixed6(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		return append(dst, "nan"...)
	}
	return strconv.AppendFloat(dst, f, 'f', 6, 64)
}
