package strops

import (
	"math"
	"math/big"

	"github.com/spillway/spillway/proxy/cstr"
)

// ParseTimeout parses a blocking command's timeout in seconds (BLPOP...)
// as Redis 7.0's getTimeoutFromObjectOrReply does: a long double, times
// 1000, rounded up to whole milliseconds (so 0.0001 waits 1 ms, and
// -0.0001 rounds to 0: wait for ever); milliseconds that do not fit in 64
// bits (inf, 1e30) convert, as on x86, to the most negative integer and so
// are "negative". It returns the timeout in milliseconds (0: none) or
// Redis's error text.
func ParseTimeout(arg []byte) (int64, string) {
	ld, ok := cstr.ParseLongDouble(arg)
	if !ok {
		return 0, "ERR timeout is not a float or out of range"
	}
	ms := int64(math.MinInt64)
	if !ld.IsInf() {
		x := ld.Big()
		x.Mul(x, big.NewFloat(1000))
		i, acc := x.Int64() // truncated toward zero
		if acc == big.Exact || (i != math.MaxInt64 && i != math.MinInt64) {
			ms = i
			if acc == big.Below && x.Sign() > 0 { // ceil of a positive fraction
				ms++
			}
		}
	}
	if ms < 0 {
		return 0, "ERR timeout is negative"
	}
	return ms, ""
}
