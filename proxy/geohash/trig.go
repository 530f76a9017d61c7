package geohash

import "math"

// Correctly rounded sin, cos and asin for the distance formula. Redis calls
// glibc's, which round correctly (to the nearest double) in practice; Go's
// math.Sin, Cos and Asin are up to an ulp off in a sixth to a third of the
// cases, which shows in the last digits of STOREDIST scores. These compute
// in double-double arithmetic (about 106 bits) and round once, so they
// agree with glibc except where the exact value lies within about 2^-100
// of a midpoint between two doubles.

// dd is an unevaluated sum hi+lo with |lo| <= ulp(hi)/2.
type dd struct{ hi, lo float64 }

func twoSum(a, b float64) dd {
	s := a + b
	bb := s - a
	return dd{s, (a - (s - bb)) + (b - bb)}
}

func quickTwoSum(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

func twoProd(a, b float64) dd {
	p := a * b
	return dd{p, math.FMA(a, b, -p)}
}

func (x dd) add(y dd) dd {
	s := twoSum(x.hi, y.hi)
	t := twoSum(x.lo, y.lo)
	s.lo += t.hi
	s = quickTwoSum(s.hi, s.lo)
	s.lo += t.lo
	return quickTwoSum(s.hi, s.lo)
}

func (x dd) neg() dd { return dd{-x.hi, -x.lo} }

func (x dd) mul(y dd) dd {
	p := twoProd(x.hi, y.hi)
	p.lo += x.hi*y.lo + x.lo*y.hi
	return quickTwoSum(p.hi, p.lo)
}

func (x dd) mulF(f float64) dd {
	p := twoProd(x.hi, f)
	p.lo += x.lo * f
	return quickTwoSum(p.hi, p.lo)
}

func (x dd) divF(f float64) dd {
	q := x.hi / f
	p := twoProd(q, f)
	r := (x.hi - p.hi - p.lo + x.lo) / f
	return quickTwoSum(q, r)
}

// The constants, to double-double precision: π/2; the Taylor
// coefficients 1/n!; and sin and cos of j/64 for j up to 51 (past π/4),
// computed once by the series.
var (
	ddPiOver2 = dd{piOver2[0], piOver2[1]}
	invFact   [32]dd
	sinTab    [52]dd
	cosTab    [52]dd
)

func init() {
	invFact[0] = dd{1, 0}
	for n := 1; n < len(invFact); n++ {
		invFact[n] = invFact[n-1].divF(float64(n))
	}
	for j := range sinTab {
		sinTab[j], cosTab[j] = sinCosSeries(dd{float64(j) / 64, 0})
	}
}

// sinCosSeries returns sin r and cos r for |r| <= 0.82 by their Taylor
// series (terms to 1/29! and 1/30!, below 2^-110 there).
func sinCosSeries(r dd) (s, c dd) {
	r2 := r.mul(r)
	s, c = invFact[29], invFact[30]
	for n := 27; n >= 1; n -= 2 {
		s = s.mul(r2).neg().add(invFact[n])
		c = c.mul(r2).neg().add(invFact[n+1])
	}
	s = s.mul(r)
	c = c.mul(r2).neg().add(invFact[0])
	return s, c
}

// sinCosSmall returns sin r and cos r for |r| <= 0.8 (π/4 with room): r
// is a tabulated j/64 plus b, |b| <= 1/128, and the angle-sum formulas
// combine the table with short series in b. Only the series' leading
// terms need double-double; the rest, below 2^-33 of the result, is
// computed in double (an error under 2^-85 of the result).
func sinCosSmall(r dd) (s, c dd) {
	neg := r.hi < 0
	if neg {
		r = r.neg()
	}
	j := int(math.Round(r.hi * 64))
	b := r.add(dd{-float64(j) / 64, 0})
	b2 := twoProd(b.hi, b.hi)
	x2 := b2.hi
	// sin b = b·(1+p), cos b = 1+q.
	p := b2.divF(-6).add(dd{x2 * x2 * (1.0/120 + x2*(-1.0/5040+x2*(1.0/362880))), 0})
	q := b2.divF(-2).add(dd{x2 * x2 * (1.0/24 + x2*(-1.0/720+x2*(1.0/40320))), 0})
	sb := b.add(b.mul(p))
	sa, ca := sinTab[j], cosTab[j]
	s = sa.add(sa.mul(q)).add(ca.mul(sb))
	c = ca.add(ca.mul(q)).add(sa.mul(sb).neg())
	if neg {
		s = s.neg()
	}
	return s, c
}

// piOver2 is π/2 as the sum of three doubles (to about 2^-160).
var piOver2 = [3]float64{1.5707963267948966, 6.123233995736766e-17, -1.4973849048591698e-33}

// reduce returns x less k·π/2, k the integer nearest x/(π/2), in
// double-double (exact products and three words of π/2, so even a result
// near zero keeps its relative precision), and k mod 4.
func reduce(x float64) (dd, int) {
	if math.Abs(x) <= 0.78 {
		return dd{x, 0}, 0
	}
	k := math.Round(x / piOver2[0])
	r := dd{x, 0}.add(twoProd(k, piOver2[0]).neg())
	r = r.add(twoProd(k, piOver2[1]).neg())
	r = r.add(dd{-k * piOver2[2], 0})
	return r, int(int64(k) & 3)
}

// sinOrCos returns sin x (cos x if cosine) rounded to the nearest double,
// for |x| <= trigLimit: x reduced by quadrants, then fastSinOrCos, or the
// double-double series when the fast result is too near a rounding
// boundary to be sure of.
func sinOrCos(x float64, cosine bool) float64 {
	r, k := reduce(x)
	if cosine {
		k++ // cos x = sin(x + π/2)
	}
	odd := k&1 == 1 // sin(r + π/2) = cos r
	v, ok := fastSinOrCos(r, odd)
	if !ok {
		s, c := sinCosSmall(r)
		v = s.hi
		if odd {
			v = c.hi
		}
	}
	if k&2 != 0 {
		v = -v
	}
	return v
}

// fastSinOrCos returns sin r (cos r if cosine) for |r| <= 0.8 and true
// when it is sure of the rounding: the sum of sinCosParts rounds the same
// with 2^-60 of the result added or taken away (false for about 1.3% of
// arguments).
func fastSinOrCos(r dd, cosine bool) (float64, bool) {
	hi, tail := sinCosParts(r, cosine)
	margin := math.Abs(hi) * 0x1p-60
	v := hi + (tail + margin)
	if v != hi+(tail-margin) {
		return 0, false
	}
	return v, true
}

// sinCosParts returns sin r (cos r if cosine), |r| <= 0.8, as hi + tail
// with an error under 2^-62 of the result: r = j/64 + b, the tabulated
// sin and cos of j/64 (double-double) combined with short series in b,
// the leading product exact and the small terms in double.
func sinCosParts(r dd, cosine bool) (hi, tail float64) {
	neg := r.hi < 0
	if neg {
		r = r.neg()
	}
	j := min(int(math.Round(r.hi*64)), len(sinTab)-1)
	bh := r.hi - float64(j)/64 // exact: the two are within a factor 2
	bl := r.lo
	b2 := bh * bh
	small := bl + bh*b2*(-1.0/6+b2*(1.0/120+b2*(-1.0/5040+b2*(1.0/362880)))) // sin b - bh
	q := b2*(-0.5+b2*(1.0/24+b2*(-1.0/720+b2*(1.0/40320)))) - bh*bl          // cos b - 1
	sa, ca := sinTab[j], cosTab[j]
	if cosine { // cos a + cos a·q - sin a·sin b
		prod := twoProd(sa.hi, -bh)
		head := twoSum(ca.hi, prod.hi)
		return head.hi, head.lo + prod.lo + ca.lo + ca.hi*q - sa.hi*small - sa.lo*bh
	}
	// sin a + sin a·q + cos a·sin b
	prod := twoProd(ca.hi, bh)
	head := twoSum(sa.hi, prod.hi)
	hi, tail = head.hi, head.lo+prod.lo+sa.lo+sa.hi*q+ca.hi*small+ca.lo*bh
	if neg {
		return -hi, -tail
	}
	return hi, tail
}

// trigLimit bounds the arguments reduced here; beyond it (a search area
// far wider than the Earth) math.Sin and math.Cos serve, as only the
// bounding box uses such arguments.
const trigLimit = 1 << 12

// sin is the sine of x rounded to the nearest double.
func sin(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > trigLimit {
		return math.Sin(x)
	}
	return sinOrCos(x, false)
}

// cos is the cosine of x rounded to the nearest double.
func cos(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > trigLimit {
		return math.Cos(x)
	}
	return sinOrCos(x, true)
}

// asinNewton returns the arcsine of z in [0, 0.5] as t + corr: Go's
// estimate t refined by one Newton step on sin (sin t from sinCosParts,
// within 2^-62), and whether t + corr ± 2^-60·t give the same double,
// when mult·(t + corr) added to base (π/2 - 2·asin for asin's upper
// half, or 0 and 1) is sure to round to the result returned.
func asinNewton(z dd, base dd, mult float64) (float64, bool) {
	t := math.Asin(z.hi)
	hi, tail := sinCosParts(dd{t, 0}, false)
	corr := ((z.hi - hi) + (z.lo - tail)) / math.Cos(t)
	margin := t * 0x1p-60
	v := base.add(twoSum(t, corr+margin).mulF(mult)).hi
	if v != base.add(twoSum(t, corr-margin).mulF(mult)).hi {
		return 0, false
	}
	return v, true
}

// asinDD is the arcsine of z in [0, 0.5] in double-double: Go's estimate
// refined by one Newton step on sin, computed in double-double.
func asinDD(z dd) dd {
	t := math.Asin(z.hi)
	s, c := sinCosSmall(dd{t, 0})
	corr := z.add(s.neg()).hi / c.hi
	return twoSum(t, corr)
}

// asin is the arcsine of x rounded to the nearest double (NaN beyond
// [-1, 1]). Above 0.5 it is π/2 - 2·asin(√((1-x)/2)), where 1-x is exact.
func asin(x float64) float64 {
	switch {
	case math.IsNaN(x) || x > 1 || x < -1:
		return math.NaN()
	case x == 0:
		return x
	case x < 0:
		return -asin(-x)
	case x <= 0.5:
		if v, ok := asinNewton(dd{x, 0}, dd{}, 1); ok {
			return v
		}
		return asinDD(dd{x, 0}).hi
	}
	w := (1 - x) / 2 // exact
	z0 := math.Sqrt(w)
	z := dd{z0, 0}
	if z0 != 0 {
		z = quickTwoSum(z0, math.FMA(-z0, z0, w)/(2*z0))
	}
	if v, ok := asinNewton(z, ddPiOver2, -2); ok {
		return v
	}
	return ddPiOver2.add(asinDD(z).mulF(-2)).hi
}
