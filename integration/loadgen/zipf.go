package loadgen

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// Sampler draws indexes in [0, N()) from a distribution. Sample must be
// safe for concurrent use with different *rand.Rand values: a Sampler holds
// only immutable state, and each goroutine brings its own generator.
type Sampler interface {
	N() int
	Sample(r *rand.Rand) int
}

// Uniform draws every index of [0, n) with the same probability.
type Uniform struct{ n int }

// NewUniform returns the uniform distribution over [0, n); n must be
// positive.
func NewUniform(n int) (*Uniform, error) {
	if n <= 0 {
		return nil, fmt.Errorf("uniform: n = %d, want > 0", n)
	}
	return &Uniform{n: n}, nil
}

// N returns the size of the range.
func (u *Uniform) N() int { return u.n }

// Sample returns an index in [0, n).
func (u *Uniform) Sample(r *rand.Rand) int { return r.IntN(u.n) }

// Zipfian draws ranks in [0, n) with P(rank k) ∝ 1/(k+1)^theta, for
// 0 < theta < 1 (math/rand/v2's Zipf needs an exponent above 1), with the
// generator of Gray et al., "Quickly Generating Billion-Record Synthetic
// Databases" (SIGMOD 1994), the one YCSB uses: ranks 0 and 1 get their
// exact probability, higher ranks a close approximation (see zipf_test.go).
//
// Unscrambled, rank 0 is index 0, rank 1 index 1 and so on. Scrambled, rank
// k is mapped to index perm(k) for a fixed pseudo-random permutation of
// [0, n) (as YCSB's ScrambledZipfian hashes the rank, but without
// collisions): the hot indexes are spread over the keyspace, the same ones
// in every process and whatever the seed of the *rand.Rand.
type Zipfian struct {
	n          int
	theta      float64
	alpha      float64 // 1/(1-theta)
	zetan      float64 // sum over i in [1, n] of 1/i^theta
	eta        float64
	half       float64 // 1 + 0.5^theta: u*zetan below it means rank 1
	scrambled  bool
	perm       feistel
	zeta2theta float64
}

// zetaExactMax is the largest n whose zeta sum is computed term by term;
// above it the tail is summed with the Euler–Maclaurin formula (relative
// error far below 1e-12 at that point).
const zetaExactMax = 1 << 20

// NewZipfian returns the Zipfian distribution over [0, n) with exponent
// theta in (0, 1); scrambled chooses whether ranks are permuted over the
// range (see Zipfian).
func NewZipfian(n int, theta float64, scrambled bool) (*Zipfian, error) {
	if n <= 0 {
		return nil, fmt.Errorf("zipfian: n = %d, want > 0", n)
	}
	if !(theta > 0 && theta < 1) {
		return nil, fmt.Errorf("zipfian: theta = %v, want 0 < theta < 1", theta)
	}
	z := &Zipfian{n: n, theta: theta, alpha: 1 / (1 - theta), scrambled: scrambled}
	z.zetan = zeta(n, theta)
	z.zeta2theta = zeta(2, theta)
	z.half = 1 + math.Pow(0.5, theta)
	if n > 2 {
		z.eta = (1 - math.Pow(2/float64(n), 1-theta)) / (1 - z.zeta2theta/z.zetan)
	}
	if scrambled {
		z.perm = newFeistel(uint64(n), scrambleKey)
	}
	return z, nil
}

// scrambleKey keys the permutation of scrambled Zipfians. It is a constant
// so that every run, worker and process agrees on which keys are hot.
const scrambleKey = 0x5370696c6c776179 // "Spillway"

// N returns the size of the range.
func (z *Zipfian) N() int { return z.n }

// Theta returns the exponent.
func (z *Zipfian) Theta() float64 { return z.theta }

// Prob returns the exact Zipf probability of rank k, 1/((k+1)^theta *
// zeta(n)): what Sample approximates (0 outside [0, n)).
func (z *Zipfian) Prob(rank int) float64 {
	if rank < 0 || rank >= z.n {
		return 0
	}
	return math.Pow(float64(rank+1), -z.theta) / z.zetan
}

// Index returns the index rank k is drawn as: k itself unscrambled, its
// image under the permutation scrambled. k must be in [0, n).
func (z *Zipfian) Index(rank int) int {
	if !z.scrambled {
		return rank
	}
	return int(z.perm.apply(uint64(rank)))
}

// Rank draws a rank in [0, n) (0 the most probable), before scrambling.
func (z *Zipfian) Rank(r *rand.Rand) int {
	u := r.Float64()
	uz := u * z.zetan
	if uz < 1 || z.n == 1 {
		return 0
	}
	if uz < z.half || z.n == 2 {
		return 1
	}
	v := int(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	return min(max(v, 0), z.n-1)
}

// Sample returns an index in [0, n): Index(Rank(r)).
func (z *Zipfian) Sample(r *rand.Rand) int { return z.Index(z.Rank(r)) }

// zeta returns the sum over i in [1, n] of 1/i^theta.
func zeta(n int, theta float64) float64 {
	m := min(n, zetaExactMax)
	sum := 0.0
	// Smallest terms first, for accuracy.
	for i := m; i >= 1; i-- {
		sum += math.Pow(float64(i), -theta)
	}
	if n == m {
		return sum
	}
	// Euler–Maclaurin for the terms in (m, n]: the integral, the end
	// corrections and the first derivative term.
	f := func(x float64) float64 { return math.Pow(x, -theta) }
	df := func(x float64) float64 { return -theta * math.Pow(x, -theta-1) }
	a, b := float64(m), float64(n)
	integral := (math.Pow(b, 1-theta) - math.Pow(a, 1-theta)) / (1 - theta)
	return sum + integral + (f(b)-f(a))/2 + (df(b)-df(a))/12
}

// feistel is a keyed permutation of [0, n): a balanced Feistel network on
// the smallest even number of bits covering n, with cycle walking to stay
// inside the range.
type feistel struct {
	n        uint64
	halfBits uint
	mask     uint64 // of one half
	keys     [4]uint64
}

func newFeistel(n, key uint64) feistel {
	width := uint(bits.Len64(max(n-1, 1)))
	width += width & 1
	f := feistel{n: n, halfBits: width / 2, mask: 1<<(width/2) - 1}
	s := key
	for i := range f.keys {
		s = splitmix64(s)
		f.keys[i] = s
	}
	return f
}

// apply maps x in [0, n) to its image in [0, n). Cycle walking ends within
// the length of x's cycle (it comes back to x at the latest); the expected
// number of rounds is below 4 since the domain is under 4n.
func (f feistel) apply(x uint64) uint64 {
	limit := uint64(1) << (2 * f.halfBits)
	y := x
	for i := uint64(0); i < limit; i++ {
		y = f.round(y)
		if y < f.n {
			return y
		}
	}
	return x // unreachable: the cycle through x < n comes back into range
}

func (f feistel) round(x uint64) uint64 {
	l, r := x>>f.halfBits, x&f.mask
	for _, k := range f.keys {
		l, r = r, l^(splitmix64(r^k)&f.mask)
	}
	return l<<f.halfBits | r
}

// splitmix64 is the finaliser of SplitMix64: a good 64-bit mixer.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
