package strops

import (
	"math/big"
)

// x87 80-bit long double parameters: a 64-bit significand, values below
// 2^-16382 are subnormal with a fixed quantum of 2^-16445, and anything that
// rounds to 2^16384 or more overflows.
const (
	ldPrec       = 64
	ldMaxExp     = 16384  // big.Float MantExp exponent of 2^16384
	ldMinNormExp = -16381 // MantExp exponent of 2^-16382
	ldQuantumExp = -16445 // exponent of the smallest subnormal
	maxLDChars   = 5 * 1024
)

// longDouble is a value of the C long double type held in a big.Float of
// precision 64; inf marks an infinity.
type longDouble struct {
	f   *big.Float
	inf bool
}

func newLD() *big.Float {
	return new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven)
}

// parseLongDouble parses b as Redis's string2ld (getLongDoubleFromObject):
// at most 5119 bytes, all of them part of one strtold number (so no NUL),
// no leading space, no NaN, no overflow to infinity and no underflow to
// zero.
func parseLongDouble(b []byte) (longDouble, bool) {
	if len(b) == 0 || len(b) >= maxLDChars {
		return longDouble{}, false
	}
	var f cfloat
	if isSpace(b[0]) || !f.scan(b) {
		return longDouble{}, false
	}
	if f.inf {
		z := newLD().SetInf(f.neg)
		return longDouble{f: z, inf: true}, true
	}
	if f.zero {
		z := newLD()
		if f.neg {
			z.Neg(z)
		}
		return longDouble{f: z}, true
	}
	z, ok := f.roundLD()
	if !ok {
		return longDouble{}, false
	}
	return longDouble{f: z}, true
}

// roundLD rounds the exact value of a scanned finite non-zero number to a
// long double as strtold does. It reports false on overflow or underflow to
// zero (both ERANGE, which Redis rejects).
func (f *cfloat) roundLD() (*big.Float, bool) {
	base := 10
	if f.hex {
		base = 16
	}
	num, ok := new(big.Int).SetString(string(f.mant), base)
	if !ok {
		return nil, false
	}
	den := big.NewInt(1)
	var shift int64 // binary scaling applied after the division
	if f.hex {
		shift = f.exp - 4*int64(f.fracDigits)
		top := int64(num.BitLen()) + shift // value in [2^(top-1), 2^top)
		if top > ldMaxExp+2 {
			return nil, false
		}
		if top < ldQuantumExp-2 {
			return nil, false
		}
	} else {
		e10 := f.exp - int64(f.fracDigits)
		top := int64(len(f.mant)) + e10 // value in [10^(top-1), 10^top)
		if top-1 >= 4933 {              // >= 1e4933 > LDBL_MAX
			return nil, false
		}
		if top < -4951 { // < 1e-4951, below half the smallest subnormal
			return nil, false
		}
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(abs64(e10)), nil)
		if e10 >= 0 {
			num.Mul(num, p)
		} else {
			den = p
		}
	}
	exact := func(x *big.Int) *big.Float {
		prec := uint(x.BitLen())
		if prec < ldPrec {
			prec = ldPrec
		}
		return new(big.Float).SetPrec(prec).SetInt(x)
	}
	n, d := exact(num), exact(den)
	z := newLD().Quo(n, d)
	acc := z.Acc()
	z.SetMantExp(z, int(shift))
	e := z.MantExp(nil)
	if e > ldMaxExp {
		return nil, false
	}
	if e <= ldMinNormExp-1 { // subnormal: fewer significant bits
		bits := e - 1 - ldQuantumExp + 1
		switch {
		case bits >= 1:
			z = new(big.Float).SetPrec(uint(bits)).SetMode(big.ToNearestEven).Quo(n, d)
			z.SetMantExp(z, int(shift))
			z = newLD().Set(z)
		case bits == 0:
			// In [2^-16446, 2^-16445): rounds up to the smallest
			// subnormal unless at or below the halfway point 2^-16446
			// (a tie goes to the even 0).
			if isPow2(z) && acc != big.Below {
				return nil, false
			}
			z = newLD().SetMantExp(big.NewFloat(0.5), ldQuantumExp+1)
		default:
			return nil, false
		}
		if f.neg {
			z.Neg(z)
		}
		return z, true
	}
	if f.neg {
		z.Neg(z)
	}
	return z, true
}

// isPow2 reports whether the positive z is a power of two.
func isPow2(z *big.Float) bool {
	m := new(big.Float)
	z.MantExp(m)
	return m.Cmp(big.NewFloat(0.5)) == 0
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// IncrByFloat computes INCRBYFLOAT: current (the stored value; exists false
// for a missing key, read as 0) plus incr, both parsed as long doubles,
// added in x87 80-bit precision and formatted as Redis does ("%.17Lf" with
// trailing zeros and a trailing dot removed, "-0" printed as "0"). Errors:
// ErrNotFloat for an unparsable current value or increment, ErrNaNOrInf
// when the sum is not finite. The caller checks the key's type first.
// Sums of two subnormals are not rounded to the subnormal grid; their
// output ("0") is the same either way.
func IncrByFloat(current []byte, exists bool, incr []byte) ([]byte, string) {
	var v longDouble
	if exists {
		var ok bool
		if v, ok = parseLongDouble(current); !ok {
			return nil, ErrNotFloat
		}
	} else {
		v = longDouble{f: newLD()}
	}
	d, ok := parseLongDouble(incr)
	if !ok {
		return nil, ErrNotFloat
	}
	if v.inf || d.inf {
		// inf+x is inf and inf-inf is NaN: both rejected.
		return nil, ErrNaNOrInf
	}
	sum := newLD().Add(v.f, d.f)
	if sum.Sign() != 0 && sum.MantExp(nil) > ldMaxExp {
		return nil, ErrNaNOrInf
	}
	return formatLongDoubleHuman(nil, sum), ""
}

// formatLongDoubleHuman appends x as Redis's ld2string in LD_STR_HUMAN mode.
func formatLongDoubleHuman(dst []byte, x *big.Float) []byte {
	start := len(dst)
	dst = x.Append(dst, 'f', 17)
	// "%.17Lf" always has a dot: trim zeros, then the dot.
	l := len(dst)
	for l > start && dst[l-1] == '0' {
		l--
	}
	if l > start && dst[l-1] == '.' {
		l--
	}
	dst = dst[:l]
	if len(dst)-start == 2 && dst[start] == '-' && dst[start+1] == '0' {
		dst = append(dst[:start], '0')
	}
	return dst
}

// CheckFloatIncrement validates HINCRBYFLOAT's increment before the key is
// looked up, as Redis does: ErrNotFloat if it is not a long double (NaN
// included), "value is NaN or Infinity" for an infinity.
func CheckFloatIncrement(incr []byte) string {
	d, ok := parseLongDouble(incr)
	if !ok {
		return ErrNotFloat
	}
	if d.inf {
		return "ERR value is NaN or Infinity"
	}
	return ""
}
