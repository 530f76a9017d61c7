package cstr

import "math/big"

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

// LongDouble is a value of C's long double type as Redis's x86-64 build
// has it (x87 80-bit extended precision: a 64-bit significand). The zero
// value is +0.
type LongDouble struct {
	f   *big.Float // nil: +0; precision 64 otherwise
	inf bool
}

func newLD() *big.Float {
	return new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven)
}

func (x LongDouble) big() *big.Float {
	if x.f == nil {
		return newLD()
	}
	return x.f
}

// Big returns x as a new big.Float of precision 64 rounding to nearest
// even, which the caller may change: arithmetic on it rounds as the x87
// FPU does (without its exponent range).
func (x LongDouble) Big() *big.Float {
	return newLD().Set(x.big())
}

// IsInf reports whether x is an infinity.
func (x LongDouble) IsInf() bool { return x.inf }

// Add returns x+y rounded to long double as the x87 FPU adds (round to
// nearest even); a sum of 2^16384 or more in magnitude is an infinity, as
// is any sum with an infinite operand (inf-inf, NaN in C, is reported as an
// infinity too: callers reject both alike). Sums of two subnormals are not
// rounded to the subnormal grid; AppendHuman prints them as "0" either way.
func (x LongDouble) Add(y LongDouble) LongDouble {
	if x.inf || y.inf {
		return LongDouble{f: newLD().SetInf(x.inf && x.f.Signbit() || !x.inf && y.f.Signbit()), inf: true}
	}
	sum := newLD().Add(x.big(), y.big())
	if sum.Sign() != 0 && sum.MantExp(nil) > ldMaxExp {
		return LongDouble{f: newLD().SetInf(sum.Sign() < 0), inf: true}
	}
	return LongDouble{f: sum}
}

// ParseLongDouble parses b as Redis's string2ld (getLongDoubleFromObject,
// INCRBYFLOAT and HINCRBYFLOAT arguments): at most 5119 bytes, all of them
// part of one strtold number (so no NUL), no leading space, no NaN, no
// overflow to infinity and no underflow to zero. "inf" and "infinity" (any
// case, optional sign) give an infinity.
func ParseLongDouble(b []byte) (LongDouble, bool) {
	if len(b) == 0 || len(b) >= maxLDChars {
		return LongDouble{}, false
	}
	var f cfloat
	if IsSpace(b[0]) || !f.scan(b) {
		return LongDouble{}, false
	}
	if f.inf {
		z := newLD().SetInf(f.neg)
		return LongDouble{f: z, inf: true}, true
	}
	if f.zero {
		z := newLD()
		if f.neg {
			z.Neg(z)
		}
		return LongDouble{f: z}, true
	}
	z, ok := f.roundLD()
	if !ok {
		return LongDouble{}, false
	}
	return LongDouble{f: z}, true
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

// AppendHuman appends the finite x as Redis's ld2string does in
// LD_STR_HUMAN mode (INCRBYFLOAT replies): "%.17Lf" with trailing zeros and
// then a trailing point removed, and "-0" printed as "0". An infinity is
// appended as "inf" or "-inf".
func (x LongDouble) AppendHuman(dst []byte) []byte {
	if x.inf {
		if x.f.Signbit() {
			return append(dst, "-inf"...)
		}
		return append(dst, "inf"...)
	}
	start := len(dst)
	dst = x.big().Append(dst, 'f', 17)
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

// cfloat is the result of scanning a strtold number: the exact decimal or
// hexadecimal digits, which ParseLongDouble rounds to 64 bits (Strtod
// rounds to 53 through strconv instead).
type cfloat struct {
	neg, inf, hex, zero, hasExp bool
	mant                        []byte // significant digits, no dot, leading zeros stripped
	fracDigits                  int    // digits of mant after the radix point
	exp                         int64  // explicit exponent (saturated), decimal or binary
}

// scan validates, as strtold does for Redis's string2ld, that the whole of b
// is one number with no leading white space, and records its parts. NaN in
// any form is rejected, and so is a NUL byte (strtold stops there).
func (f *cfloat) scan(b []byte) bool {
	*f = cfloat{}
	i, n := 0, len(b)
	if n == 0 {
		return false
	}
	if b[0] == '+' || b[0] == '-' {
		f.neg = b[0] == '-'
		i++
	}
	rest := b[i:]
	if EqualFold(rest, "inf") || EqualFold(rest, "infinity") {
		if len(CString(rest)) != len(rest) {
			return false
		}
		f.inf = true
		return true
	}
	isDigit := IsDigit
	if n-i >= 3 && b[i] == '0' && (b[i+1] == 'x' || b[i+1] == 'X') && (IsXDigit(b[i+2]) || (b[i+2] == '.' && n-i >= 4 && IsXDigit(b[i+3]))) {
		f.hex = true
		isDigit = IsXDigit
		i += 2
	}
	digits, seenDot, nonzero := 0, false, false
	for ; i < n; i++ {
		c := b[i]
		switch {
		case isDigit(c):
			digits++
			if c != '0' {
				nonzero = true
			}
			if nonzero {
				f.mant = append(f.mant, c)
				if seenDot {
					f.fracDigits++
				}
			} else if seenDot {
				f.fracDigits++ // a leading zero after the point still scales
			}
			continue
		case c == '.' && !seenDot:
			seenDot = true
			continue
		}
		break
	}
	if digits == 0 {
		return false
	}
	if !nonzero {
		f.zero = true
	}
	if i < n && ((!f.hex && (b[i] == 'e' || b[i] == 'E')) || (f.hex && (b[i] == 'p' || b[i] == 'P'))) {
		j := i + 1
		eneg := false
		if j < n && (b[j] == '+' || b[j] == '-') {
			eneg = b[j] == '-'
			j++
		}
		if j == n || !IsDigit(b[j]) {
			return false // strtod stops before the 'e': trailing garbage
		}
		var e int64
		for ; j < n && IsDigit(b[j]); j++ {
			if e < 1e15 {
				e = e*10 + int64(b[j]-'0')
			}
		}
		if eneg {
			e = -e
		}
		f.exp, f.hasExp, i = e, true, j
	}
	return i == n
}
