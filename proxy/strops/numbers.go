package strops

import (
	"math"

	"github.com/spillway/spillway/proxy/cstr"
)

// IncrBy adds delta to the integer held in current, as INCR, DECR, INCRBY
// and DECRBY do. exists is false for a missing key (current ignored, value
// 0). Errors: ErrNotInteger if current is not a string2ll integer,
// ErrOverflow if the sum overflows int64. DECRBY must negate its argument
// with NegateDecrement first.
func IncrBy(current []byte, exists bool, delta int64) (int64, string) {
	var v int64
	if exists {
		var ok bool
		if v, ok = cstr.ParseInt(current); !ok {
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
