package rdb

import (
	"encoding/binary"
	"strconv"
)

// Readers of Redis's compact encodings as they appear in RDB payloads:
// listpack (listpack.c), ziplist (ziplist.c), intset (intset.c) and the
// old zipmap (zipmap.c). Each validates the whole blob as Redis's deep
// integrity checks do (lpValidateIntegrity, ziplistValidateIntegrity,
// intsetValidateIntegrity, zipmapValidateIntegrity with deep set) and
// returns the entries in order; integers come back as their decimal text.
// None panics on any input.

// listpackItems returns the entries of a listpack blob.
func listpackItems(blob []byte) ([][]byte, error) { return appendListpack(nil, blob) }

// appendListpack appends the entries of a listpack blob to items.
//
// Layout: total bytes (uint32 LE), entry count (uint16 LE, 65535 when
// unknown), entries, 0xFF. An entry is its encoding and data, then its
// backlen: the size of encoding and data in 1 to 5 bytes, 7 bits each.
func appendListpack(items [][]byte, blob []byte) ([][]byte, error) {
	const hdr = 6
	if len(blob) < hdr+1 || int(binary.LittleEndian.Uint32(blob)) != len(blob) || blob[len(blob)-1] != 0xff {
		return nil, wrapBad("listpack header")
	}
	want := int(binary.LittleEndian.Uint16(blob[4:]))
	p := blob[hdr : len(blob)-1]
	n := 0
	for len(p) > 0 {
		v, size, err := listpackEntry(p)
		if err != nil {
			return nil, err
		}
		bl := backlenSize(size)
		if size+bl > len(p) || decodeBacklen(p[size:size+bl]) != size {
			return nil, wrapBad("listpack entry length")
		}
		items = append(items, v)
		p = p[size+bl:]
		n++
	}
	if want != 65535 && want != n {
		return nil, wrapBad("listpack count")
	}
	return items, nil
}

// listpackEntry decodes the entry at the start of p: its value and the
// size of its encoding and data (without the backlen).
func listpackEntry(p []byte) ([]byte, int, error) {
	b := p[0]
	var ival int64
	var size int
	switch {
	case b&0x80 == 0: // 7-bit unsigned integer
		return strconv.AppendInt(nil, int64(b), 10), 1, nil
	case b&0xc0 == 0x80: // string of up to 63 bytes
		return lpString(p, 1, int(b&0x3f))
	case b&0xe0 == 0xc0: // 13-bit signed integer
		if len(p) < 2 {
			return nil, 0, ErrTruncated
		}
		ival = int64(b&0x1f)<<8 | int64(p[1])
		if ival >= 1<<12 {
			ival -= 1 << 13
		}
		size = 2
	case b&0xf0 == 0xe0: // string of up to 4095 bytes
		if len(p) < 2 {
			return nil, 0, ErrTruncated
		}
		return lpString(p, 2, int(b&0x0f)<<8|int(p[1]))
	case b == 0xf0: // string with a 32-bit length
		if len(p) < 5 {
			return nil, 0, ErrTruncated
		}
		return lpString(p, 5, int(binary.LittleEndian.Uint32(p[1:])))
	case b >= 0xf1 && b <= 0xf4: // 16, 24, 32 and 64-bit integers
		w := [...]int{2, 3, 4, 8}[b-0xf1]
		if len(p) < 1+w {
			return nil, 0, ErrTruncated
		}
		ival = signExtend(p[1:1+w], w)
		size = 1 + w
	default: // 0xf5..0xfe are undefined; 0xff is the end, not an entry
		return nil, 0, wrapBad("listpack encoding")
	}
	return strconv.AppendInt(nil, ival, 10), size, nil
}

// lpString returns the string of length n after a header of hdr bytes.
func lpString(p []byte, hdr, n int) ([]byte, int, error) {
	if n < 0 || n > len(p)-hdr {
		return nil, 0, ErrTruncated
	}
	return p[hdr : hdr+n], hdr + n, nil
}

// signExtend reads a little-endian two's-complement integer of w bytes.
func signExtend(p []byte, w int) int64 {
	var u uint64
	for i := w - 1; i >= 0; i-- {
		u = u<<8 | uint64(p[i])
	}
	shift := 64 - 8*uint(w)
	return int64(u<<shift) >> shift
}

// backlenSize is how many bytes lpEncodeBacklen uses for l.
func backlenSize(l int) int {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// decodeBacklen reads a backlen written left to right (its last byte
// holds the lowest 7 bits; every byte but the first has the high bit set).
// It returns -1 if the bytes are not a backlen.
func decodeBacklen(b []byte) int {
	v := 0
	for i, c := range b {
		if (i > 0) != (c&0x80 != 0) {
			return -1
		}
		v = v<<7 | int(c&0x7f)
	}
	return v
}

// ziplistItems returns the entries of a ziplist blob.
func ziplistItems(blob []byte) ([][]byte, error) { return appendZiplist(nil, blob) }

// appendZiplist appends the entries of a ziplist blob to items.
//
// Layout: total bytes (uint32 LE), offset of the last entry (uint32 LE),
// entry count (uint16 LE, 65535 when unknown), entries, 0xFF. An entry is
// the previous entry's size (1 byte, or 0xFE and 4 bytes LE), its
// encoding, then its data.
func appendZiplist(items [][]byte, blob []byte) ([][]byte, error) {
	const hdr = 10
	if len(blob) < hdr+1 || int(binary.LittleEndian.Uint32(blob)) != len(blob) || blob[len(blob)-1] != 0xff {
		return nil, wrapBad("ziplist header")
	}
	tail := int(binary.LittleEndian.Uint32(blob[4:]))
	want := int(binary.LittleEndian.Uint16(blob[8:]))
	end := len(blob) - 1
	pos, prev, last, n := hdr, 0, hdr, 0
	for pos < end {
		v, size, err := ziplistEntry(blob[pos:end], prev)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		last, prev = pos, size
		pos += size
		n++
	}
	if tail != last || (want != 65535 && want != n) {
		return nil, wrapBad("ziplist tail or count")
	}
	return items, nil
}

// ziplistEntry decodes the entry at the start of p, whose predecessor is
// prev bytes long (0 for the first entry): its value and its whole size.
func ziplistEntry(p []byte, prev int) ([]byte, int, error) {
	var plen, hs int
	switch {
	case len(p) < 1:
		return nil, 0, ErrTruncated
	case p[0] < 0xfe:
		plen, hs = int(p[0]), 1
	case p[0] == 0xfe && len(p) >= 5:
		plen, hs = int(binary.LittleEndian.Uint32(p[1:])), 5
		if plen < 0xfe {
			return nil, 0, wrapBad("ziplist prevlen")
		}
	default:
		return nil, 0, wrapBad("ziplist prevlen")
	}
	if plen != prev {
		return nil, 0, wrapBad("ziplist prevlen")
	}
	q := p[hs:]
	if len(q) < 1 {
		return nil, 0, ErrTruncated
	}
	b := q[0]
	var ival int64
	var w int
	switch b >> 6 {
	case 0: // string of up to 63 bytes
		v, size, err := lpString(q, 1, int(b&0x3f))
		return v, hs + size, err
	case 1: // string of up to 16383 bytes (14-bit length, big-endian)
		if len(q) < 2 {
			return nil, 0, ErrTruncated
		}
		v, size, err := lpString(q, 2, int(b&0x3f)<<8|int(q[1]))
		return v, hs + size, err
	case 2: // string with a 32-bit big-endian length
		if b != 0x80 || len(q) < 5 {
			return nil, 0, wrapBad("ziplist encoding")
		}
		v, size, err := lpString(q, 5, int(binary.BigEndian.Uint32(q[1:])))
		return v, hs + size, err
	}
	switch b {
	case 0xc0:
		w = 2
	case 0xd0:
		w = 4
	case 0xe0:
		w = 8
	case 0xf0:
		w = 3
	case 0xfe:
		w = 1
	default:
		if b >= 0xf1 && b <= 0xfd { // 4-bit immediate 0..12
			return strconv.AppendInt(nil, int64(b&0x0f)-1, 10), hs + 1, nil
		}
		return nil, 0, wrapBad("ziplist encoding")
	}
	if len(q) < 1+w {
		return nil, 0, ErrTruncated
	}
	ival = signExtend(q[1:1+w], w)
	return strconv.AppendInt(nil, ival, 10), hs + 1 + w, nil
}

// intsetItems returns the members of an intset blob: encoding (uint32 LE:
// 2, 4 or 8 bytes per member), count (uint32 LE), then the members,
// little-endian, strictly ascending.
func intsetItems(blob []byte) ([][]byte, error) {
	if len(blob) < 8 {
		return nil, ErrTruncated
	}
	w := int(binary.LittleEndian.Uint32(blob))
	n := uint64(binary.LittleEndian.Uint32(blob[4:]))
	if w != 2 && w != 4 && w != 8 || uint64(w)*n+8 != uint64(len(blob)) {
		return nil, wrapBad("intset header")
	}
	if n == 0 {
		return nil, wrapBad("empty intset")
	}
	items := make([][]byte, 0, n)
	var prev int64
	for i := 0; i < int(n); i++ {
		v := signExtend(blob[8+i*w:8+(i+1)*w], w)
		if i > 0 && v <= prev {
			return nil, wrapBad("intset order")
		}
		prev = v
		items = append(items, strconv.AppendInt(nil, v, 10))
	}
	return items, nil
}

// zipmapItems returns the fields and values of a zipmap blob (Redis 2.x
// small hashes): a count byte (254 when unknown), then per pair the field's length and bytes,
// the value's length, a count of free bytes, the value and the free bytes;
// then 0xFF. A length is one byte below 254, or 254 and 4 bytes LE.
func zipmapItems(blob []byte) ([][]byte, error) {
	if len(blob) < 2 || blob[len(blob)-1] != 0xff {
		return nil, wrapBad("zipmap")
	}
	p := blob[1 : len(blob)-1]
	var items [][]byte
	readLen := func() (int, bool) {
		if len(p) < 1 || p[0] == 0xff {
			return 0, false
		}
		if p[0] < 254 {
			l := int(p[0])
			p = p[1:]
			return l, true
		}
		if p[0] != 254 || len(p) < 5 {
			return 0, false
		}
		l := int(binary.LittleEndian.Uint32(p[1:]))
		p = p[5:]
		return l, l >= 254 // the long form only for lengths that need it
	}
	for len(p) > 0 {
		kl, ok := readLen()
		if !ok || kl > len(p) {
			return nil, wrapBad("zipmap field")
		}
		k := p[:kl]
		p = p[kl:]
		vl, ok := readLen()
		if !ok || len(p) < 1 {
			return nil, wrapBad("zipmap value")
		}
		free := int(p[0])
		p = p[1:]
		if vl > len(p) || free > len(p)-vl {
			return nil, wrapBad("zipmap value")
		}
		items = append(items, k, p[:vl])
		p = p[vl+free:]
	}
	// The count byte is exact below 254 (254 means "count them").
	if len(items) == 0 || blob[0] < 254 && int(blob[0]) != len(items)/2 {
		return nil, wrapBad("zipmap count")
	}
	return items, nil
}
