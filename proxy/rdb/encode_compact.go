package rdb

import (
	"encoding/binary"
	"slices"
)

// Writers of the compact encodings an RDB file holds for small values
// (listpack.c's and intset.c's layouts, as compact.go reads them).

// Listpack builds a listpack blob entry by entry, encoding each entry as
// lpAppend does: a string that is the canonical decimal form of a 64-bit
// integer (at most 20 bytes) as the smallest integer encoding, any other
// string by its length. The zero value is empty and ready; Reset reuses
// the buffer.
type Listpack struct {
	buf []byte // header room, then the entries
	n   int
}

const lpHeader = 6

// Reset empties the listpack, keeping its buffer.
func (l *Listpack) Reset() {
	l.buf = l.buf[:0]
	l.n = 0
}

// Len is the number of entries.
func (l *Listpack) Len() int { return l.n }

// Size is the blob's length if it were finished now.
func (l *Listpack) Size() int {
	if len(l.buf) == 0 {
		return lpHeader + 1
	}
	return len(l.buf) + 1
}

// Append adds one entry.
func (l *Listpack) Append(s []byte) {
	if len(l.buf) == 0 {
		l.buf = append(l.buf, make([]byte, lpHeader)...)
	}
	l.buf = lpAppendString(l.buf, s)
	l.n++
}

// lpAppendString appends an entry holding s (lpAppend): as an integer,
// in its smallest encoding, when s is one in canonical form, else as a
// string.
func lpAppendString(lp, s []byte) []byte {
	if v, ok := canonicalInt(s); ok && len(s) <= 20 {
		return lpAppendInt(lp, v)
	}
	start := len(lp)
	switch n := len(s); {
	case n <= 63:
		lp = append(lp, 0x80|byte(n))
	case n <= 4095:
		lp = append(lp, 0xe0|byte(n>>8), byte(n))
	default:
		lp = binary.LittleEndian.AppendUint32(append(lp, 0xf0), uint32(n))
	}
	lp = append(lp, s...)
	return appendBacklen(lp, len(lp)-start)
}

// lpAppendInt appends an integer entry in its smallest encoding.
func lpAppendInt(lp []byte, v int64) []byte {
	start := len(lp)
	switch {
	case v >= 0 && v <= 127:
		lp = append(lp, byte(v))
	case v >= -4096 && v <= 4095:
		u := uint16(v) & 0x1fff
		lp = append(lp, 0xc0|byte(u>>8), byte(u))
	case v >= -32768 && v <= 32767:
		lp = binary.LittleEndian.AppendUint16(append(lp, 0xf1), uint16(v))
	case v >= -8388608 && v <= 8388607:
		lp = append(lp, 0xf2, byte(v), byte(v>>8), byte(v>>16))
	case v >= -2147483648 && v <= 2147483647:
		lp = binary.LittleEndian.AppendUint32(append(lp, 0xf3), uint32(v))
	default:
		lp = binary.LittleEndian.AppendUint64(append(lp, 0xf4), uint64(v))
	}
	return appendBacklen(lp, len(lp)-start)
}

// appendBacklen appends lpEncodeBacklen's form of size: 7 bits a byte,
// most significant group first, every byte but the first with its high
// bit set.
func appendBacklen(b []byte, size int) []byte {
	n := backlenSize(size)
	for i := n - 1; i >= 0; i-- {
		c := byte(size>>(7*uint(i))) & 0x7f
		if i != n-1 {
			c |= 0x80
		}
		b = append(b, c)
	}
	return b
}

// Finish returns the whole blob: header (total bytes, entry count or
// 65535 when it does not fit 16 bits), entries, 0xFF terminator. It aliases
// the builder's buffer, valid until the next Append or Reset.
func (l *Listpack) Finish() []byte {
	if len(l.buf) == 0 {
		l.buf = append(l.buf, make([]byte, lpHeader)...)
	}
	out := append(l.buf, 0xff)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	n := l.n
	if n > 65535 {
		n = 65535
	}
	binary.LittleEndian.PutUint16(out[4:], uint16(n))
	return out
}

// AppendStringPlain appends s as rdbSaveRawString does with rdbcompression
// no: as an integer when s is the canonical decimal form of a 32-bit
// integer, else its length and bytes.
func AppendStringPlain(buf, s []byte) []byte {
	if len(s) <= 11 {
		if _, ok := canonicalInt(s); ok {
			return AppendString(buf, s) // an integer: never compressed
		}
	}
	buf = AppendLen(buf, uint64(len(s)))
	return append(buf, s...)
}

// StringWriter appends RDB strings as AppendString does (or, with Plain,
// AppendStringPlain), reusing its LZF compressor's memory from call to
// call: AppendString clears a fresh 256 KB table for every compressible
// string, which dominates writing millions of small values. The zero value
// is ready; it is not safe for concurrent use.
type StringWriter struct {
	// Plain: no LZF compression (rdbcompression no).
	Plain bool
	lzf   *lzfState
}

// Append appends s as an RDB string.
func (w *StringWriter) Append(buf, s []byte) []byte {
	if w.Plain {
		return AppendStringPlain(buf, s)
	}
	if w.lzf == nil && len(s) > 20 {
		w.lzf = new(lzfState)
	}
	return appendString(buf, s, w.lzf)
}

// ParseInt reports whether s is the canonical decimal form of a 64-bit
// integer (what Redis's string2ll accepts and ll2string gives back), and
// its value: the members an intset may hold.
func ParseInt(s []byte) (int64, bool) { return canonicalInt(s) }

// AppendIntset appends the intset blob of vals (distinct; sorted here):
// encoding (the width in bytes: 2, 4 or 8, uint32 LE), count (uint32 LE),
// then the values ascending, each that wide, little-endian.
func AppendIntset(dst []byte, vals []int64) []byte {
	slices.Sort(vals)
	w := 2
	for _, v := range vals {
		switch {
		case v < -2147483648 || v > 2147483647:
			w = 8
		case (v < -32768 || v > 32767) && w < 4:
			w = 4
		}
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(w))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(vals)))
	for _, v := range vals {
		switch w {
		case 2:
			dst = binary.LittleEndian.AppendUint16(dst, uint16(v))
		case 4:
			dst = binary.LittleEndian.AppendUint32(dst, uint32(v))
		default:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(v))
		}
	}
	return dst
}
