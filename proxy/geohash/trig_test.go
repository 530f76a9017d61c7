package geohash

import (
	"math"
	"math/big"
	"math/rand"
	"testing"
)

// The reference: sin and cos by their Taylor series in 256-bit floats.
const refPrec = 256

func bigSinCos(x float64) (s, c *big.Float) {
	bx := new(big.Float).SetPrec(refPrec).SetFloat64(x)
	x2 := new(big.Float).SetPrec(refPrec).Mul(bx, bx)
	s = new(big.Float).SetPrec(refPrec)
	c = new(big.Float).SetPrec(refPrec)
	termS := new(big.Float).SetPrec(refPrec).Set(bx)         // x^(2k+1)/(2k+1)!
	termC := new(big.Float).SetPrec(refPrec).SetFloat64(1.0) // x^(2k)/(2k)!
	// Stop once the terms are 2^-264 below x's (and 1's) scale, or zero.
	small := func(term *big.Float, scale int) bool { return term.Sign() == 0 || term.MantExp(nil) < scale-refPrec-8 }
	for k := 0; k < 80 && !(small(termS, bx.MantExp(nil)) && small(termC, 1)); k++ {
		if k%2 == 0 {
			s.Add(s, termS)
			c.Add(c, termC)
		} else {
			s.Sub(s, termS)
			c.Sub(c, termC)
		}
		n := float64(2*k + 2)
		termC.Mul(termC, x2).Quo(termC, new(big.Float).SetFloat64(n*(n-1)))
		termS.Mul(termS, x2).Quo(termS, new(big.Float).SetFloat64((n+1)*n))
	}
	return s, c
}

func nearest(f *big.Float) float64 {
	v, _ := f.Float64()
	return v
}

// TestSinCosCorrectlyRounded: sin and cos are the nearest doubles to the
// exact values over the arguments the distance formula uses (|x| <= π).
func TestSinCosCorrectlyRounded(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	xs := []float64{math.Pi, -math.Pi, math.Pi / 2, math.Pi / 4, 0.785, 0.8, 1e-300, 5e-324, 1e-8, 3.14159}
	for range 3000 {
		xs = append(xs, (rng.Float64()*2-1)*math.Pi)
	}
	for _, x := range xs {
		s, c := bigSinCos(x)
		if got, want := sin(x), nearest(s); got != want {
			t.Errorf("sin(%v) = %v; want %v", x, got, want)
		}
		if got, want := cos(x), nearest(c); got != want {
			t.Errorf("cos(%v) = %v; want %v", x, got, want)
		}
	}
	if sin(0) != 0 || cos(0) != 1 || !math.IsNaN(sin(math.Inf(1))) {
		t.Error("sin(0), cos(0) or sin(inf) wrong")
	}
}

// TestAsinCorrectlyRounded: asin(a) is the nearest double to the exact
// arcsine: a lies between the sines of the midpoints to its neighbours.
func TestAsinCorrectlyRounded(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	as := []float64{0, 1, 0.5, 0.5000000000000001, 0.49999999999999994, 1e-300, 0.7071067811865476}
	for i := range 800 {
		as = append(as, rng.Float64())
		as = append(as, 1-float64(i+1)*0x1p-53)
	}
	half := func(a, b float64) *big.Float {
		m := new(big.Float).SetPrec(refPrec).SetFloat64(a)
		return m.Add(m, new(big.Float).SetFloat64(b)).Quo(m, new(big.Float).SetFloat64(2))
	}
	sinOf := func(m *big.Float) *big.Float {
		// sin of a midpoint: exact in 54 bits, so the series of bigSinCos
		// applies to its two halves: sin(a+b) = sin a cos b + cos a sin b.
		hi, _ := m.Float64()
		lo, _ := new(big.Float).SetPrec(refPrec).Sub(m, new(big.Float).SetFloat64(hi)).Float64()
		sa, ca := bigSinCos(hi)
		sb, cb := bigSinCos(lo)
		r := new(big.Float).SetPrec(refPrec).Mul(sa, cb)
		return r.Add(r, new(big.Float).SetPrec(refPrec).Mul(ca, sb))
	}
	for _, a := range as {
		y := asin(a)
		ba := new(big.Float).SetFloat64(a)
		if y > 0 {
			if sinOf(half(y, math.Nextafter(y, 0))).Cmp(ba) > 0 {
				t.Errorf("asin(%v) = %v: too high", a, y)
			}
		}
		if y < math.Pi/2 {
			if sinOf(half(y, math.Nextafter(y, 2))).Cmp(ba) < 0 {
				t.Errorf("asin(%v) = %v: too low", a, y)
			}
		}
	}
	if asin(1) != math.Pi/2 || asin(-0.5) != -asin(0.5) || !math.IsNaN(asin(1.0000000000000002)) {
		t.Error("asin(1), asin(-0.5) or asin(>1) wrong")
	}
}

// TestFastPathAgrees: the fast sine and cosine, where sure of their
// rounding, agree with the double-double series over the arguments the
// distance formula and the bounding box use, and are unsure rarely.
func TestFastPathAgrees(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	unsure := 0
	const n = 200000
	for i := range n {
		x := (rng.Float64()*2 - 1) * math.Pi
		if i%10 == 0 {
			x = (rng.Float64()*2 - 1) * trigLimit
		}
		r, k := reduce(x)
		s, c := sinCosSmall(r)
		for _, cosine := range []bool{false, true} {
			kk := k
			if cosine {
				kk++
			}
			want := s.hi
			if kk&1 == 1 {
				want = c.hi
			}
			if kk&2 != 0 {
				want = -want
			}
			if got := sinOrCos(x, cosine); got != want {
				t.Fatalf("sinOrCos(%v, %v) = %v; the series gives %v", x, cosine, got, want)
			}
			if _, ok := fastSinOrCos(r, kk&1 == 1); !ok {
				unsure++
			}
		}
	}
	if unsure > 2*n/20 {
		t.Errorf("the fast path was unsure %d times in %d", unsure, 2*n)
	}
	t.Logf("unsure %d times in %d", unsure, 2*n)
}

// TestAsinFastPathAgrees: the Newton step's result, where sure, agrees
// with the double-double one, and is unsure rarely.
func TestAsinFastPathAgrees(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	unsure := 0
	const n = 200000
	for i := range n {
		x := rng.Float64() / 2
		if i%2 == 1 {
			x = 1 - x
		}
		var want float64
		base, mult, z := dd{}, 1.0, dd{x, 0}
		if x > 0.5 {
			w := (1 - x) / 2
			z0 := math.Sqrt(w)
			z = quickTwoSum(z0, math.FMA(-z0, z0, w)/(2*z0))
			base, mult = ddPiOver2, -2
		}
		want = base.add(asinDD(z).mulF(mult)).hi
		if got := asin(x); got != want {
			t.Fatalf("asin(%v) = %v; double-double gives %v", x, got, want)
		}
		if _, ok := asinNewton(z, base, mult); !ok {
			unsure++
		}
	}
	if unsure > n/20 {
		t.Errorf("the Newton step was unsure %d times in %d", unsure, n)
	}
	t.Logf("unsure %d times in %d", unsure, n)
}
