package hll

import (
	"strconv"
	"strings"
)

// The sparse encoding: opcodes, the in-place register update with its
// promotion to dense, the conversion to dense, and PFDEBUG DECODE.

const (
	sparseValMax   = 32    // largest value a VAL opcode holds
	sparseValLen   = 4     // longest run of a VAL opcode
	sparseZeroLen  = 64    // longest run of a ZERO opcode
	sparseXZeroLen = 16384 // longest run of an XZERO opcode
)

func isZero(op byte) bool  { return op&0xc0 == 0 }
func isXZero(op byte) bool { return op&0xc0 == 0x40 }
func isVal(op byte) bool   { return op&0x80 != 0 }

func zeroLen(op byte) int         { return int(op&0x3f) + 1 }
func xzeroLen(op, lo byte) int    { return int(op&0x3f)<<8 | int(lo) + 1 }
func valValue(op byte) uint8      { return (op>>2)&0x1f + 1 }
func valLen(op byte) int          { return int(op&3) + 1 }
func valOp(val uint8, n int) byte { return 0x80 | (val-1)<<2 | byte(n-1) }

// appendXZero appends an XZERO opcode of n (1..16384) registers.
func appendXZero(b []byte, n int) []byte {
	n--
	return append(b, 0x40|byte(n>>8), byte(n))
}

// appendZeros appends the opcode Redis writes for a run of n (1..16384)
// zero registers: ZERO up to 64, XZERO above.
func appendZeros(b []byte, n int) []byte {
	if n > sparseZeroLen {
		return appendXZero(b, n)
	}
	return append(b, byte(n-1))
}

// at returns b[i], or 0 past the end (Redis reads the sds terminator).
func at(b []byte, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}

// opSpan returns the registers the opcode at p covers and its length.
func opSpan(b []byte, p int) (span, oplen int) {
	switch op := b[p]; {
	case isZero(op):
		return zeroLen(op), 1
	case isVal(op):
		return valLen(op), 1
	default:
		return xzeroLen(op, at(b, p+1)), 2
	}
}

// walkSparse calls fn(first, n, val) for each opcode of sparse registers
// r in order (val 0 for the zero runs). It reports false, stopping, at a
// run that would go past the last register, or if the runs do not cover
// exactly all of them: Redis's validity rule.
func walkSparse(r []byte, fn func(first, n int, val uint8)) bool {
	idx := 0
	for p := 0; p < len(r); {
		n, oplen := opSpan(r, p)
		if idx+n > Registers {
			return false
		}
		var val uint8
		if isVal(r[p]) {
			val = valValue(r[p])
		}
		fn(idx, n, val)
		idx += n
		p += oplen
	}
	return idx == Registers
}

// sparseToDense returns sparse value v converted to dense (its header
// copied, cached cardinality included), or ErrCorrupt.
func sparseToDense(v []byte) ([]byte, error) {
	d := make([]byte, DenseSize)
	copy(d, v[:HeaderSize])
	d[4] = encDense
	regs := d[HeaderSize:]
	ok := walkSparse(v[HeaderSize:], func(first, n int, val uint8) {
		if val == 0 {
			return
		}
		for i := first; i < first+n; i++ {
			denseSet(regs, i, val)
		}
	})
	if !ok {
		return nil, ErrCorrupt
	}
	return d, nil
}

// sparseSet is Redis's hllSparseSet: it raises register index of the
// sketch's sparse value to count if lower, rewriting the opcode that
// covers it in place, merging adjacent VAL opcodes, and invalidating the
// cached cardinality. It promotes the value to dense when count does not
// fit a VAL opcode or the value would grow past the sparse limit. It
// reports whether the register changed, or ErrCorrupt (nothing changed)
// when the opcodes do not cover the register or the promotion finds them
// invalid.
func (s *Sketch) sparseSet(index int, count uint8) (bool, error) {
	if count > sparseValMax {
		return s.promote(index, count)
	}
	b := s.b
	end := len(b)
	// Step 1: find the opcode covering the register.
	p, first, span, prev := HeaderSize, 0, 0, -1
	for p < end {
		var oplen int
		span, oplen = opSpan(b, p)
		if index <= first+span-1 {
			break
		}
		prev = p
		p += oplen
		first += span
	}
	if span == 0 || p >= end {
		return false, ErrCorrupt
	}
	op := b[p]
	oldlen := 1
	if isXZero(op) {
		oldlen = 2
	}
	next := p + oldlen
	if next >= end {
		next = -1
	}

	// Step 2: the trivial cases, rewriting one byte; else build the
	// sequence replacing the opcode.
	switch {
	case isVal(op) && valValue(op) >= count:
		return false, nil
	case isVal(op) && span == 1, isZero(op) && span == 1:
		b[p] = valOp(count, 1)
	default:
		var seq [5]byte
		n := seq[:0]
		last := first + span - 1
		if isVal(op) {
			cur := valValue(op)
			if index != first {
				n = append(n, valOp(cur, index-first))
			}
			n = append(n, valOp(count, 1))
			if index != last {
				n = append(n, valOp(cur, last-index))
			}
		} else {
			if index != first {
				n = appendZeros(n, index-first)
			}
			n = append(n, valOp(count, 1))
			if index != last {
				n = appendZeros(n, last-index)
			}
		}
		// Step 3: put the sequence in the opcode's place.
		delta := len(n) - oldlen
		if delta > 0 && int64(len(b)+delta) > s.sparseMax {
			return s.promote(index, count)
		}
		newEnd := end + delta
		// An XZERO cut short by the end of the value is replaced as if
		// whole; the sequence's tail past the new end is lost, as in Redis.
		need := max(newEnd, p+len(n))
		if need > len(b) {
			b = append(b, make([]byte, need-len(b))...)
		}
		if delta != 0 && next >= 0 {
			copy(b[next+delta:], b[next:end])
		}
		copy(b[p:], n)
		b = b[:newEnd]
		end = newEnd
	}

	// Step 4: merge adjacent VAL opcodes of equal value, scanning up to
	// five opcodes from the one before the change.
	p = prev
	if p < 0 {
		p = HeaderSize
	}
	for scan := 5; p < end && scan > 0; {
		scan--
		op := b[p]
		if isXZero(op) {
			p += 2
			continue
		}
		if isZero(op) {
			p++
			continue
		}
		if p+1 < end && isVal(b[p+1]) {
			v1, v2 := valValue(op), valValue(b[p+1])
			if l := valLen(op) + valLen(b[p+1]); v1 == v2 && l <= sparseValLen {
				b[p+1] = valOp(v1, l)
				copy(b[p:end], b[p+1:end])
				end--
				b = b[:end]
				continue
			}
		}
		p++
	}
	invalidate(b)
	s.b = b
	return true, nil
}

// promote converts the sketch to dense and sets the register there.
func (s *Sketch) promote(index int, count uint8) (bool, error) {
	d, err := sparseToDense(s.b)
	if err != nil {
		return false, err
	}
	s.b = d
	return denseMax(d[HeaderSize:], index, count), nil
}

// Decode is PFDEBUG DECODE: checked sparse value v's opcodes as
// "z:N" (ZERO), "Z:N" (XZERO) and "v:V,N" (VAL), space-separated. It
// does not validate them. ErrNotSparse if v is dense.
func Decode(v []byte) (string, error) {
	if IsDense(v) {
		return "", ErrNotSparse
	}
	var out strings.Builder
	r := v[HeaderSize:]
	for p := 0; p < len(r); {
		n, oplen := opSpan(r, p)
		if out.Len() > 0 {
			out.WriteByte(' ')
		}
		switch op := r[p]; {
		case isZero(op):
			out.WriteString("z:" + strconv.Itoa(n))
		case isXZero(op):
			out.WriteString("Z:" + strconv.Itoa(n))
		default:
			out.WriteString("v:" + strconv.Itoa(int(valValue(op))) + "," + strconv.Itoa(n))
		}
		p += oplen
	}
	return out.String(), nil
}
