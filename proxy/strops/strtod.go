package strops

import (
	"math"
	"strconv"
)

// ParseStrtod parses b as C's strtod when the caller only checks that the
// whole string was consumed and the result is not NaN (Redis's
// ZRANGEBYSCORE bounds): leading white space is skipped, an empty or
// all-blank string is 0, overflow gives ±inf and underflow 0.
func ParseStrtod(b []byte) (float64, bool) {
	i := 0
	for i < len(b) && (b[i] == ' ' || (b[i] >= '\t' && b[i] <= '\r')) {
		i++
	}
	b = b[i:]
	if len(b) == 0 {
		return 0, true
	}
	var f cfloat
	if !f.scan(b) {
		return 0, false
	}
	switch {
	case f.inf && f.neg:
		return math.Inf(-1), true
	case f.inf:
		return math.Inf(1), true
	case f.zero && f.neg:
		return math.Copysign(0, -1), true
	case f.zero:
		return 0, true
	}
	s := string(b)
	if f.hex && !f.hasExp {
		s += "p0"
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(v, 0) && v != 0 {
		return 0, false
	}
	return v, true
}
