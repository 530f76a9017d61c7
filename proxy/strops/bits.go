package strops

import (
	"math/bits"

	"github.com/spillway/spillway/proxy/cstr"
)

// MaxBitOffset is the largest bit offset SETBIT, GETBIT and BITFIELD accept
// (2^32-1, the last bit of a MaxBulkLen string).
const MaxBitOffset = MaxBulkLen*8 - 1

// ParseBitOffset parses a SETBIT/GETBIT offset, or a BITFIELD offset when
// width > 0 (then "#n" means n*width). Errors: ErrBitOffset for anything not
// an integer, negative, or beyond MaxBitOffset.
func ParseBitOffset(arg []byte, width int) (uint64, string) {
	hash := 0
	if width > 0 && len(arg) > 0 && arg[0] == '#' {
		hash = 1
	}
	v, ok := cstr.ParseInt(arg[hash:])
	if !ok {
		return 0, ErrBitOffset
	}
	if hash == 1 {
		v *= int64(width) // wraps like the C multiplication
	}
	if v < 0 || v>>3 >= MaxBulkLen {
		return 0, ErrBitOffset
	}
	return uint64(v), ""
}

// ParseBitValue parses SETBIT's value: 0 or 1, else ErrBitValue.
func ParseBitValue(arg []byte) (int, string) {
	v, ok := cstr.ParseInt(arg)
	if !ok || v&^1 != 0 {
		return 0, ErrBitValue
	}
	return int(v), ""
}

// GetBit returns the bit at off (bit 0 is the most significant bit of the
// first byte); bits past the end are 0.
func GetBit(v []byte, off uint64) int {
	i := off >> 3
	if i >= uint64(len(v)) {
		return 0
	}
	return int(v[i]>>(7-off&7)) & 1
}

// SetBit sets the bit at off to bit (0 or 1), growing v with zero bytes as
// needed, and returns the new value (v's array may be reused) and the
// previous bit. off must come from ParseBitOffset.
func SetBit(v []byte, off uint64, bit int) ([]byte, int) {
	i := int(off >> 3)
	if i >= len(v) {
		v = growZero(v, i+1)
	}
	shift := 7 - off&7
	old := int(v[i]>>shift) & 1
	v[i] = v[i]&^(1<<shift) | byte(bit&1)<<shift
	return v, old
}

// BitRange is the optional range of BITCOUNT or BITPOS.
type BitRange struct {
	HasStart, HasEnd bool
	Start, End       int64
	Bit              bool // BIT unit instead of BYTE
}

// ParseBitCountArgs parses BITCOUNT's arguments after the key. Redis 7.0
// parses them only when the key exists (a missing key replies 0 whatever
// follows), and after the type check. Errors: ErrNotInteger, ErrSyntax.
func ParseBitCountArgs(args [][]byte) (BitRange, string) {
	var r BitRange
	switch len(args) {
	case 0:
		return r, ""
	case 2, 3:
	default:
		return r, ErrSyntax
	}
	var ok bool
	if r.Start, ok = cstr.ParseInt(args[0]); !ok {
		return r, ErrNotInteger
	}
	if r.End, ok = cstr.ParseInt(args[1]); !ok {
		return r, ErrNotInteger
	}
	r.HasStart, r.HasEnd = true, true
	if r.Start < 0 && r.End < 0 && r.Start > r.End {
		// Redis replies 0 here, before looking at the unit.
		return r, ""
	}
	if len(args) == 3 {
		unit, e := parseBitUnit(args[2])
		if e != "" {
			return r, e
		}
		r.Bit = unit
	}
	return r, ""
}

// ParseBitPosBit parses BITPOS's bit argument; Redis checks it before the
// key lookup. Errors: ErrNotInteger, ErrBitArg.
func ParseBitPosBit(arg []byte) (int, string) {
	v, ok := cstr.ParseInt(arg)
	if !ok {
		return 0, ErrNotInteger
	}
	if v != 0 && v != 1 {
		return 0, ErrBitArg
	}
	return int(v), ""
}

// ParseBitPosArgs parses BITPOS's arguments after the bit. Redis 7.0 parses
// them only when the key exists (a missing key replies -1 for bit 1 and 0
// for bit 0 whatever follows), after the type check. The order of checks is
// Redis's: start, unit, end. Errors: ErrNotInteger, ErrSyntax.
func ParseBitPosArgs(args [][]byte) (BitRange, string) {
	var r BitRange
	if len(args) == 0 {
		return r, ""
	}
	if len(args) > 3 {
		return r, ErrSyntax
	}
	var ok bool
	if r.Start, ok = cstr.ParseInt(args[0]); !ok {
		return r, ErrNotInteger
	}
	r.HasStart = true
	if len(args) == 3 {
		unit, e := parseBitUnit(args[2])
		if e != "" {
			return r, e
		}
		r.Bit = unit
	}
	if len(args) >= 2 {
		if r.End, ok = cstr.ParseInt(args[1]); !ok {
			return r, ErrNotInteger
		}
		r.HasEnd = true
	}
	return r, ""
}

func parseBitUnit(arg []byte) (bool, string) {
	switch {
	case cstr.EqualFold(arg, "bit"):
		return true, ""
	case cstr.EqualFold(arg, "byte"):
		return false, ""
	}
	return false, ErrSyntax
}

// normRange applies Redis's negative-index rules to [start, end] over a
// length of n units and reports whether the range is non-empty.
func normRange(start, end, n int64) (int64, int64, bool) {
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	if end < 0 {
		end = 0
	}
	if end >= n {
		end = n - 1
	}
	return start, end, start <= end
}

// BitCount counts the set bits of v within r (the whole string when
// !r.HasStart), as BITCOUNT on an existing key.
func BitCount(v []byte, r BitRange) int64 {
	if !r.HasStart {
		return popcount(v)
	}
	n := int64(len(v))
	if r.Bit {
		n <<= 3
	}
	if r.Start < 0 && r.End < 0 && r.Start > r.End {
		return 0
	}
	start, end, ok := normRange(r.Start, r.End, n)
	if !ok {
		return 0
	}
	if !r.Bit {
		return popcount(v[start : end+1])
	}
	sb, eb := start>>3, end>>3
	c := popcount(v[sb : eb+1])
	c -= int64(bits.OnesCount8(v[sb] & ^byte(0xff>>(start&7))))
	c -= int64(bits.OnesCount8(v[eb] & byte(0xff>>(end&7+1))))
	return c
}

func popcount(v []byte) int64 {
	var c int
	for len(v) >= 8 {
		c += bits.OnesCount64(uint64(v[0]) | uint64(v[1])<<8 | uint64(v[2])<<16 | uint64(v[3])<<24 |
			uint64(v[4])<<32 | uint64(v[5])<<40 | uint64(v[6])<<48 | uint64(v[7])<<56)
		v = v[8:]
	}
	for _, b := range v {
		c += bits.OnesCount8(b)
	}
	return int64(c)
}

// BitPos returns the position of the first bit equal to bit (0 or 1) in v
// within r, as BITPOS on an existing key: -1 when there is none, except
// that when looking for 0 without an explicit end the string is taken as
// padded with zeros, so the answer is the first bit past the range.
func BitPos(v []byte, bit int, r BitRange) int64 {
	n := int64(len(v))
	start, end := int64(0), n-1
	if r.HasStart {
		total := n
		if r.Bit {
			total <<= 3
		}
		end = total - 1
		if r.HasEnd {
			end = r.End
		}
		var ok bool
		if start, end, ok = normRange(r.Start, end, total); !ok {
			return -1
		}
		if !r.Bit {
			start, end = start<<3, end<<3|7
		}
	} else {
		if n == 0 {
			return -1
		}
		end = n<<3 - 1
	}
	if p := findBit(v, bit, start, end); p >= 0 {
		return p
	}
	if bit == 1 || r.HasEnd {
		return -1
	}
	return end + 1
}

// findBit returns the first bit equal to bit in the bit range [from, to]
// of v, or -1.
func findBit(v []byte, bit int, from, to int64) int64 {
	skip := byte(0) // a byte with no wanted bit
	if bit == 0 {
		skip = 0xff
	}
	for p := from; p <= to; {
		if p&7 == 0 && p+7 <= to && v[p>>3] == skip {
			p += 8
			continue
		}
		if GetBit(v, uint64(p)) == bit {
			return p
		}
		p++
	}
	return -1
}

// BitOpKind is a BITOP operation.
type BitOpKind uint8

// BITOP operations.
const (
	BitAnd BitOpKind = iota
	BitOr
	BitXor
	BitNot
)

// ParseBitOp parses BITOP's operation name given the number of source keys.
// Errors: ErrSyntax for an unknown operation, ErrBitOpNot for NOT with other
// than one source. Redis checks both before any key lookup.
func ParseBitOp(name []byte, nsrc int) (BitOpKind, string) {
	var op BitOpKind
	switch {
	case cstr.EqualFold(name, "and"):
		op = BitAnd
	case cstr.EqualFold(name, "or"):
		op = BitOr
	case cstr.EqualFold(name, "xor"):
		op = BitXor
	case cstr.EqualFold(name, "not"):
		op = BitNot
	default:
		return 0, ErrSyntax
	}
	if op == BitNot && nsrc != 1 {
		return 0, ErrBitOpNot
	}
	return op, ""
}

// BitOp computes BITOP over srcs (nil or empty for missing keys), shorter
// sources padded with zero bytes. It returns nil when every source is empty:
// Redis then deletes the destination and replies 0; otherwise it stores the
// result and replies with its length.
func BitOp(op BitOpKind, srcs [][]byte) []byte {
	maxLen := 0
	for _, s := range srcs {
		maxLen = max(maxLen, len(s))
	}
	if maxLen == 0 {
		return nil
	}
	res := make([]byte, maxLen)
	if op == BitNot {
		s := srcs[0]
		for i := range res {
			res[i] = ^s[i]
		}
		return res
	}
	copy(res, srcs[0])
	for _, s := range srcs[1:] {
		switch op {
		case BitAnd:
			for i := range res {
				if i < len(s) {
					res[i] &= s[i]
				} else {
					res[i] = 0
				}
			}
		case BitOr:
			for i := range s {
				res[i] |= s[i]
			}
		case BitXor:
			for i := range s {
				res[i] ^= s[i]
			}
		}
	}
	return res
}
