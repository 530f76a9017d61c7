package strops

import (
	"math"
	"math/big"
)

// ParseTimeout parses a blocking command's timeout in seconds (BLPOP...)
// as Redis 7.0's getTimeoutFromObjectOrReply does: a long double, times
// 1000, truncated toward zero to milliseconds (so 0.0001 and -0.0001 mean
// 0: wait for ever); a value whose milliseconds do not fit in 64 bits
// (inf, 1e30) converts, as on x86, to the most negative integer and so is
// "negative". It returns the timeout in milliseconds (0: none) or Redis's
// error text.
func ParseTimeout(arg []byte, nowMs int64) (int64, string) {
	ld, ok := parseLongDouble(arg)
	if !ok {
		return 0, "ERR timeout is not a float or out of range"
	}
	ms := int64(math.MinInt64)
	if !ld.inf {
		x := newLD().Mul(ld.f, big.NewFloat(1000))
		if i, acc := x.Int64(); acc == big.Exact || (i != math.MaxInt64 && i != math.MinInt64) {
			ms = i
		}
	}
	if ms < 0 {
		return 0, "ERR timeout is negative"
	}
	if ms > 0 && ms > math.MaxInt64-nowMs {
		return 0, "ERR timeout is out of range"
	}
	return ms, ""
}
