package strops

import (
	"math"

	"github.com/spillway/spillway/proxy/cstr"
)

// BitfieldOpcode is a BITFIELD subcommand.
type BitfieldOpcode uint8

// BITFIELD subcommands.
const (
	BitfieldGet BitfieldOpcode = iota
	BitfieldSet
	BitfieldIncrBy
)

// Overflow is a BITFIELD OVERFLOW behaviour.
type Overflow uint8

// OVERFLOW behaviours.
const (
	OverflowWrap Overflow = iota
	OverflowSat
	OverflowFail
)

// BitfieldOp is one parsed GET, SET or INCRBY of a BITFIELD command.
type BitfieldOp struct {
	Op       BitfieldOpcode
	Overflow Overflow // in effect for this op
	Signed   bool
	Bits     uint8  // 1..64 signed, 1..63 unsigned
	Offset   uint64 // bit offset, '#' already multiplied out
	Value    int64  // SET value or INCRBY increment
}

// BitfieldResult is one reply element: Null is set when an OVERFLOW FAIL
// op overflowed (Redis replies a null bulk and writes nothing).
type BitfieldResult struct {
	Value int64
	Null  bool
}

// ParseBitfield parses the arguments of BITFIELD (or BITFIELD_RO when
// readOnly) after the key, with Redis's errors in Redis's order: ErrSyntax
// for an unknown subcommand or missing arguments, ErrBitfieldOvf,
// ErrBitfieldType, ErrBitOffset, ErrNotInteger for a SET/INCRBY value; and
// once everything parsed, ErrBitfieldRO when readOnly and any op writes.
// Redis reports these before looking the key up.
func ParseBitfield(args [][]byte, readOnly bool) ([]BitfieldOp, string) {
	var ops []BitfieldOp
	ow := OverflowWrap
	writes := false
	for j := 0; j < len(args); j++ {
		rem := len(args) - j - 1
		var op BitfieldOp
		switch sub := args[j]; {
		case cstr.EqualFold(sub, "get") && rem >= 2:
			op.Op = BitfieldGet
		case cstr.EqualFold(sub, "set") && rem >= 3:
			op.Op = BitfieldSet
		case cstr.EqualFold(sub, "incrby") && rem >= 3:
			op.Op = BitfieldIncrBy
		case cstr.EqualFold(sub, "overflow") && rem >= 1:
			j++
			switch t := args[j]; {
			case cstr.EqualFold(t, "wrap"):
				ow = OverflowWrap
			case cstr.EqualFold(t, "sat"):
				ow = OverflowSat
			case cstr.EqualFold(t, "fail"):
				ow = OverflowFail
			default:
				return nil, ErrBitfieldOvf
			}
			continue
		default:
			return nil, ErrSyntax
		}
		signed, width, e := parseBitfieldType(args[j+1])
		if e != "" {
			return nil, e
		}
		off, e := ParseBitOffset(args[j+2], width)
		if e != "" {
			return nil, e
		}
		op.Overflow, op.Signed, op.Bits, op.Offset = ow, signed, uint8(width), off
		if op.Op != BitfieldGet {
			writes = true
			v, ok := cstr.ParseInt(args[j+3])
			if !ok {
				return nil, ErrNotInteger
			}
			op.Value = v
			j++
		}
		j += 2
		ops = append(ops, op)
	}
	if readOnly && writes {
		return nil, ErrBitfieldRO
	}
	return ops, ""
}

// parseBitfieldType parses "i1".."i64" or "u1".."u63" (lower case only);
// the number is read as a C string.
func parseBitfieldType(t []byte) (signed bool, width int, err string) {
	t = cstr.CString(t)
	if len(t) == 0 {
		return false, 0, ErrBitfieldType
	}
	switch t[0] {
	case 'i':
		signed = true
	case 'u':
	default:
		return false, 0, ErrBitfieldType
	}
	n, ok := cstr.ParseInt(t[1:])
	if !ok || n < 1 || (signed && n > 64) || (!signed && n > 63) {
		return false, 0, ErrBitfieldType
	}
	return signed, int(n), ""
}

// BitfieldWrites reports whether any op writes (BITFIELD then creates or
// grows the key even if every write fails with OVERFLOW FAIL, and counts
// as a modification).
func BitfieldWrites(ops []BitfieldOp) bool {
	for i := range ops {
		if ops[i].Op != BitfieldGet {
			return true
		}
	}
	return false
}

// ExecBitfield runs ops in order against v (nil for a missing key) and
// returns the new value (v's array may be reused), one result per op, and
// whether the command wrote (any SET or INCRBY, even a failed one). When it
// wrote, the value has first been grown with zero bytes to cover the
// furthest bit any SET or INCRBY touches, as Redis does. When !changed,
// newv is v unchanged (and a missing key stays missing). The caller checks
// the key's type first.
func ExecBitfield(v []byte, ops []BitfieldOp) (newv []byte, results []BitfieldResult, changed bool) {
	var highest uint64
	for i := range ops {
		if op := &ops[i]; op.Op != BitfieldGet {
			changed = true
			highest = max(highest, op.Offset+uint64(op.Bits)-1)
		}
	}
	if changed && uint64(len(v)) < highest>>3+1 {
		v = growZero(v, int(highest>>3+1))
	}
	results = make([]BitfieldResult, len(ops))
	for i := range ops {
		op := &ops[i]
		if op.Op == BitfieldGet {
			results[i].Value = getBitfield(v, op.Offset, op.Bits, op.Signed)
			continue
		}
		old := getBitfield(v, op.Offset, op.Bits, op.Signed)
		var nv, ret int64
		var ovf bool
		if op.Signed {
			if op.Op == BitfieldIncrBy {
				nv, ovf = signedOverflow(old, op.Value, op.Bits, op.Overflow)
				ret = nv
			} else {
				nv, ovf = signedOverflow(op.Value, 0, op.Bits, op.Overflow)
				ret = old
			}
		} else {
			var u uint64
			if op.Op == BitfieldIncrBy {
				u, ovf = unsignedOverflow(uint64(old), op.Value, op.Bits, op.Overflow)
				ret = int64(u)
			} else {
				u, ovf = unsignedOverflow(uint64(op.Value), 0, op.Bits, op.Overflow)
				ret = old
			}
			nv = int64(u)
		}
		if ovf && op.Overflow == OverflowFail {
			results[i].Null = true
			continue
		}
		results[i].Value = ret
		setBitfield(v, op.Offset, op.Bits, uint64(nv))
	}
	return v, results, changed
}

// getBitfield reads a big-endian field of width bits at bit offset off;
// bits past the end of v read as 0. Signed fields are sign-extended.
func getBitfield(v []byte, off uint64, width uint8, signed bool) int64 {
	var u uint64
	for i := uint64(0); i < uint64(width); i++ {
		u = u<<1 | uint64(GetBit(v, off+i))
	}
	if signed && width < 64 && u&(1<<(width-1)) != 0 {
		u |= math.MaxUint64 << width
	}
	return int64(u)
}

// setBitfield writes the low width bits of u at bit offset off; v must be
// long enough.
func setBitfield(v []byte, off uint64, width uint8, u uint64) {
	for i := uint64(0); i < uint64(width); i++ {
		b := u >> (uint64(width) - 1 - i) & 1
		p := off + i
		shift := 7 - p&7
		v[p>>3] = v[p>>3]&^(1<<shift) | byte(b)<<shift
	}
}

// signedOverflow computes value+incr in a signed field of width bits and
// reports overflow; on overflow the result is wrapped or saturated per ow
// (for FAIL the result is unused).
func signedOverflow(value, incr int64, width uint8, ow Overflow) (int64, bool) {
	maxv := int64(math.MaxInt64)
	if width < 64 {
		maxv = 1<<(width-1) - 1
	}
	minv := -maxv - 1
	maxincr := int64(uint64(maxv) - uint64(value))
	minincr := minv - value
	var sat int64
	switch {
	case value > maxv || (width != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr):
		sat = maxv
	case value < minv || (width != 64 && incr < minincr) || (value < 0 && incr < 0 && incr < minincr):
		sat = minv
	default:
		return value + incr, false
	}
	if ow == OverflowSat {
		return sat, true
	}
	c := uint64(value) + uint64(incr)
	if width < 64 {
		mask := uint64(math.MaxUint64) << width
		if c&(1<<(width-1)) != 0 {
			c |= mask
		} else {
			c &^= mask
		}
	}
	return int64(c), true
}

// unsignedOverflow is signedOverflow for unsigned fields (width <= 63).
func unsignedOverflow(value uint64, incr int64, width uint8, ow Overflow) (uint64, bool) {
	maxv := uint64(1)<<width - 1
	maxincr := int64(maxv - value)
	minincr := -int64(value)
	var sat uint64
	switch {
	case value > maxv || (incr > 0 && incr > maxincr):
		sat = maxv
	case incr < 0 && incr < minincr:
		sat = 0
	default:
		return value + uint64(incr), false
	}
	if ow == OverflowSat {
		return sat, true
	}
	return (value + uint64(incr)) &^ (uint64(math.MaxUint64) << width), true
}
