package hll

import "math"

// The cardinality estimate: register histograms and Redis 7.0's
// estimator (Otmar Ertl, "New cardinality estimation algorithms for
// HyperLogLog sketches", arXiv:1702.01284), with the same floating-point
// operations in the same order, so the results are Redis's to the unit.

// alphaInf is 0.5/ln(2).
const alphaInf = 0.721347520444481703680

// histogram counts the registers of each value (0..63).
type histogram [64]int

// Count computes checked value v's cardinality from its registers,
// ignoring the cached value, or returns ErrCorrupt if v is sparse and its
// opcodes are invalid.
func Count(v []byte) (uint64, error) {
	var h histogram
	r := v[HeaderSize:]
	if IsDense(v) {
		var regs [Registers]uint8
		unpackDense(r, &regs)
		for _, x := range regs {
			h[x]++
		}
	} else if !walkSparse(r, func(_, n int, val uint8) { h[val] += n }) {
		return 0, ErrCorrupt
	}
	return h.estimate(), nil
}

// estimate is hllCount's estimator over the histogram.
func (h *histogram) estimate() uint64 {
	const m = float64(Registers)
	// Explicit conversions round each product, so that no
	// multiply-add is fused (C evaluates them separately).
	z := m * tau((m-float64(h[q+1]))/m)
	for j := q; j >= 1; j-- {
		z += float64(h[j])
		z *= 0.5
	}
	z += float64(m * sigma(float64(h[0])/m))
	return uint64(math.Round(alphaInf * m * m / z))
}

// sigma is Ertl's σ(x) for 0 <= x <= 1.
func sigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		prev := z
		z += float64(x * y)
		y += y
		if prev == z {
			return z
		}
	}
}

// tau is Ertl's τ(x) for 0 <= x <= 1.
func tau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		d := 1 - x
		z -= float64(float64(d*d) * y)
		if prev == z {
			return z / 3
		}
	}
}

// Max is the register-wise maximum of HyperLogLogs: PFCOUNT of several
// keys and PFMERGE merge into it. The zero value is an empty
// HyperLogLog's registers.
type Max [Registers]uint8

// Merge raises m's registers to checked value v's, or returns ErrCorrupt
// if v is sparse and its opcodes are invalid (m may then be partly
// merged, as in Redis; the callers discard it).
func (m *Max) Merge(v []byte) error {
	r := v[HeaderSize:]
	if IsDense(v) {
		var regs [Registers]uint8
		unpackDense(r, &regs)
		for i, x := range regs {
			m[i] = max(m[i], x)
		}
		return nil
	}
	ok := walkSparse(r, func(first, n int, val uint8) {
		if val == 0 {
			return
		}
		for i := first; i < first+n; i++ {
			m[i] = max(m[i], val)
		}
	})
	if !ok {
		return ErrCorrupt
	}
	return nil
}

// Count is the cardinality of the union m represents.
func (m *Max) Count() uint64 {
	var h histogram
	for _, v := range m {
		h[v&63]++
	}
	return h.estimate()
}
