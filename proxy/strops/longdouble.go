package strops

import "github.com/spillway/spillway/proxy/cstr"

// IncrByFloat computes INCRBYFLOAT: current (the stored value; exists false
// for a missing key, read as 0) plus incr, both parsed as long doubles,
// added in x87 80-bit precision and formatted as Redis does ("%.17Lf" with
// trailing zeros and a trailing dot removed, "-0" printed as "0"). Errors:
// ErrNotFloat for an unparsable current value or increment, ErrNaNOrInf
// when the sum is not finite. The caller checks the key's type first.
// Sums of two subnormals are not rounded to the subnormal grid; their
// output ("0") is the same either way.
func IncrByFloat(current []byte, exists bool, incr []byte) ([]byte, string) {
	var v cstr.LongDouble
	if exists {
		var ok bool
		if v, ok = cstr.ParseLongDouble(current); !ok {
			return nil, ErrNotFloat
		}
	}
	d, ok := cstr.ParseLongDouble(incr)
	if !ok {
		return nil, ErrNotFloat
	}
	// inf+x is inf and inf-inf is NaN: both rejected, as is overflow.
	sum := v.Add(d)
	if sum.IsInf() {
		return nil, ErrNaNOrInf
	}
	return sum.AppendHuman(nil), ""
}

// CheckFloatIncrement validates HINCRBYFLOAT's increment before the key is
// looked up, as Redis does: ErrNotFloat if it is not a long double (NaN
// included), "value is NaN or Infinity" for an infinity.
func CheckFloatIncrement(incr []byte) string {
	d, ok := cstr.ParseLongDouble(incr)
	if !ok {
		return ErrNotFloat
	}
	if d.IsInf() {
		return "ERR value is NaN or Infinity"
	}
	return ""
}
