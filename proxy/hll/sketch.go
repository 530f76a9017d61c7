package hll

// Sketch is a private working copy of a HyperLogLog value, changed in
// place by the writing operations (PFADD, PFMERGE's destination, PFDEBUG
// TODENSE). Bytes returns the value to store.
type Sketch struct {
	b []byte
	// sparseMax is hll-sparse-max-bytes: a sparse value that would grow
	// past it is promoted to dense.
	sparseMax int64
}

// Open returns a working copy of v, which Check accepted; sparseMax is
// hll-sparse-max-bytes. v itself is never changed.
func Open(v []byte, sparseMax int64) *Sketch {
	b := make([]byte, len(v), len(v)+8)
	copy(b, v)
	return &Sketch{b: b, sparseMax: sparseMax}
}

// Bytes returns the sketch's current value (shared with the sketch until
// its next change).
func (s *Sketch) Bytes() []byte { return s.b }

// Dense reports whether the sketch is dense-encoded.
func (s *Sketch) Dense() bool { return IsDense(s.b) }

// Add is Redis's hllAdd: it raises the register elem selects to the
// value elem offers, reporting whether the register changed, or
// ErrCorrupt (the sketch unchanged) if a sparse sketch's opcodes do not
// cover that register. A sparse sketch's change also invalidates its
// cached cardinality; a dense one's does not (see Invalidate).
func (s *Sketch) Add(elem []byte) (bool, error) {
	index, count := PatLen(elem)
	return s.Set(index, count)
}

// Set raises register index (0..Registers-1) to count (1..63) if lower,
// as Add does for an element.
func (s *Sketch) Set(index int, count uint8) (bool, error) {
	if s.Dense() {
		return denseMax(s.b[HeaderSize:], index, count), nil
	}
	return s.sparseSet(index, count)
}

// Invalidate marks the cached cardinality stale.
func (s *Sketch) Invalidate() { invalidate(s.b) }

// ToDense converts a sparse sketch to dense (PFDEBUG TODENSE and
// GETREG), keeping its header. It reports whether it converted, or
// ErrCorrupt (the sketch unchanged) if the sparse opcodes are invalid.
func (s *Sketch) ToDense() (bool, error) {
	if s.Dense() {
		return false, nil
	}
	d, err := sparseToDense(s.b)
	if err != nil {
		return false, err
	}
	s.b = d
	return true, nil
}

// DenseRegisters returns the registers of checked dense value v, in
// order (PFDEBUG GETREG).
func DenseRegisters(v []byte) []uint8 {
	var regs [Registers]uint8
	unpackDense(v[HeaderSize:], &regs)
	return regs[:]
}
