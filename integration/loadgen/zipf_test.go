package loadgen

import (
	"math"
	"math/rand/v2"
	"testing"
)

// grayProb is the probability Gray et al.'s generator gives rank k: ranks
// 0 and 1 exactly Zipf's, rank k >= 2 the mass of u with
// floor(n·(1 - eta·(1-u))^alpha) = k above 1+0.5^theta (over zeta(n)).
func grayProb(z *Zipfian, k int) float64 {
	if k < 2 {
		return z.Prob(k)
	}
	atLeast := func(k int) float64 { // P(u >= threshold of rank k)
		thr := 1 - (1-math.Pow(float64(k)/float64(z.n), 1-z.theta))/z.eta
		return 1 - max(thr, z.half/z.zetan)
	}
	return atLeast(k) - atLeast(k+1)
}

// TestZipfianFrequencies draws a million ranks and compares the frequency
// of ranks 0..9 with Zipf's law: ranks 0 and 1 within sampling error, the
// others within Gray's approximation (which gives rank 2 about 19% too
// much, rank 9 about 3%) plus sampling error; and with the generator's
// own law within sampling error.
func TestZipfianFrequencies(t *testing.T) {
	const draws = 1_000_000
	for _, tc := range []struct {
		n     int
		theta float64
	}{
		{1000, 0.99},
		{163_840, 0.99},
		{10_000, 0.5},
	} {
		z, err := NewZipfian(tc.n, tc.theta, false)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		var counts [10]int
		for range draws {
			k := z.Rank(r)
			if k < 0 || k >= tc.n {
				t.Fatalf("n=%d: rank %d out of range", tc.n, k)
			}
			if k < len(counts) {
				counts[k]++
			}
		}
		for k, c := range counts {
			got := float64(c) / draws
			zipf, gray := z.Prob(k), grayProb(z, k)
			sigma := math.Sqrt(gray * (1 - gray) / draws)
			if math.Abs(got-gray) > 5*sigma {
				t.Errorf("n=%d theta=%v rank %d: frequency %.5f, generator's law %.5f (5σ = %.5f)",
					tc.n, tc.theta, k, got, gray, 5*sigma)
			}
			approx := 0.0 // Gray's relative error allowance
			if k >= 2 {
				approx = 0.6 / float64(k+1)
			}
			if math.Abs(got-zipf) > approx*zipf+5*sigma {
				t.Errorf("n=%d theta=%v rank %d: frequency %.5f, Zipf %.5f (tolerance %.0f%% + 5σ)",
					tc.n, tc.theta, k, got, zipf, 100*approx)
			}
		}
	}
}

// TestZipfianTopMass checks the hot set: the share of draws in the top 1%
// of ranks is Zipf's within a few percent.
func TestZipfianTopMass(t *testing.T) {
	const n, draws = 100_000, 500_000
	z, err := NewZipfian(n, 0.99, false)
	if err != nil {
		t.Fatal(err)
	}
	want := 0.0
	for k := range n / 100 {
		want += z.Prob(k)
	}
	r := rand.New(rand.NewPCG(3, 4))
	hits := 0
	for range draws {
		if z.Rank(r) < n/100 {
			hits++
		}
	}
	if got := float64(hits) / draws; math.Abs(got-want) > 0.03*want {
		t.Errorf("top 1%% of ranks: %.4f of draws, Zipf %.4f", got, want)
	}
}

func TestSamplersInRange(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 17, 1000, 1 << 20, 1<<20 + 1} {
		u, err := NewUniform(n)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := NewZipfian(n, 0.99, false)
		if err != nil {
			t.Fatal(err)
		}
		scr, err := NewZipfian(n, 0.99, true)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(uint64(n), 9))
		for i := range 20_000 {
			for _, s := range []Sampler{u, plain, scr} {
				if s.N() != n {
					t.Fatalf("N() = %d, want %d", s.N(), n)
				}
				if v := s.Sample(r); v < 0 || v >= n {
					t.Fatalf("n=%d draw %d: %T gave %d", n, i, s, v)
				}
			}
		}
	}
}

// TestScramblePermutes checks that scrambling is a bijection of [0, n),
// the same in every Zipfian of that size, and spreads the hot ranks.
func TestScramblePermutes(t *testing.T) {
	for _, n := range []int{1, 2, 3, 10, 1000, 4097, 65_536} {
		z, err := NewZipfian(n, 0.99, true)
		if err != nil {
			t.Fatal(err)
		}
		z2, _ := NewZipfian(n, 0.8, true)
		seen := make([]bool, n)
		for k := range n {
			v := z.Index(k)
			if v < 0 || v >= n || seen[v] {
				t.Fatalf("n=%d: rank %d maps to %d (out of range or taken)", n, k, v)
			}
			seen[v] = true
			if z2.Index(k) != v {
				t.Fatalf("n=%d: rank %d maps to %d and %d in two Zipfians", n, k, v, z2.Index(k))
			}
		}
		if n >= 1000 {
			// The 10 hottest ranks must not sit together at the start.
			low := 0
			for k := range 10 {
				if z.Index(k) < n/10 {
					low++
				}
			}
			if low > 5 {
				t.Errorf("n=%d: %d of the 10 hottest indexes in the first tenth", n, low)
			}
		}
	}
}

func TestDeterminism(t *testing.T) {
	z, err := NewZipfian(10_000, 0.99, true)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := NewUniform(10_000)
	for _, s := range []Sampler{z, u} {
		draw := func(seed uint64) []int {
			r := rand.New(rand.NewPCG(seed, 0))
			out := make([]int, 1000)
			for i := range out {
				out[i] = s.Sample(r)
			}
			return out
		}
		a, b, c := draw(1), draw(1), draw(2)
		same := 0
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%T: seed 1 gave %d then %d at draw %d", s, a[i], b[i], i)
			}
			if a[i] == c[i] {
				same++
			}
		}
		if same > len(a)/4 {
			t.Errorf("%T: seeds 1 and 2 agree on %d of %d draws", s, same, len(a))
		}
	}
}

// TestZetaTail compares the Euler–Maclaurin tail with the exact sum.
func TestZetaTail(t *testing.T) {
	for _, n := range []int{zetaExactMax + 1, 3_000_000} {
		exact := 0.0
		for i := n; i >= 1; i-- {
			exact += math.Pow(float64(i), -0.99)
		}
		if got := zeta(n, 0.99); math.Abs(got-exact)/exact > 1e-12 {
			t.Errorf("zeta(%d) = %.15g, exact %.15g", n, got, exact)
		}
	}
}

func TestSamplerErrors(t *testing.T) {
	for _, tc := range []struct {
		n     int
		theta float64
	}{{0, 0.99}, {-1, 0.99}, {10, 0}, {10, 1}, {10, 1.5}, {10, math.NaN()}} {
		if _, err := NewZipfian(tc.n, tc.theta, true); err == nil {
			t.Errorf("NewZipfian(%d, %v) did not fail", tc.n, tc.theta)
		}
	}
	if _, err := NewUniform(0); err == nil {
		t.Error("NewUniform(0) did not fail")
	}
}
