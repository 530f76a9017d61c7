package rdb

import (
	"encoding/binary"
	"errors"
	"strconv"
)

// RDB strings (rdbSaveRawString / rdbGenericLoadStringObject): a length
// then the bytes, or a special encoding introduced by a length byte whose
// two high bits are 11: an integer of 8, 16 or 32 bits (little-endian), or
// an LZF-compressed string (compressed length, plain length, data).

const (
	encVal                              = 3 // RDB_ENCVAL: the length byte's high bits of an encoded string
	encInt8, encInt16, encInt32, encLZF = 0, 1, 2, 3
)

// ErrTruncated is returned when a length or string runs past its input.
var ErrTruncated = errors.New("rdb: truncated data")

// errEncoding is returned for a length or string encoding Redis does not
// define.
var errEncoding = errors.New("rdb: unknown length or string encoding")

// AppendString appends s as rdbSaveRawString does with rdbcompression yes:
// as an integer when s is the canonical decimal form of a 32-bit integer
// (at most 11 bytes), LZF-compressed when longer than 20 bytes and
// compression saves at least 4 bytes, else plain. The result is byte for
// byte Redis 7.0's.
func AppendString(buf, s []byte) []byte { return appendString(buf, s, nil) }

// appendString is AppendString compressing with lzf's memory (nil: a new
// compressor's, made only for a string long enough to try).
func appendString(buf, s []byte, lzf *lzfState) []byte {
	if len(s) <= 11 {
		if n, ok := canonicalInt(s); ok {
			switch {
			case n >= -(1<<7) && n <= 1<<7-1:
				return append(buf, encVal<<6|encInt8, byte(n))
			case n >= -(1<<15) && n <= 1<<15-1:
				return append(buf, encVal<<6|encInt16, byte(n), byte(n>>8))
			case n >= -(1<<31) && n <= 1<<31-1:
				return append(buf, encVal<<6|encInt32, byte(n), byte(n>>8), byte(n>>16), byte(n>>24))
			}
		}
	}
	if len(s) > 20 {
		if lzf == nil {
			lzf = new(lzfState)
		}
		if c := lzf.compress(s, len(s)-4); c != nil {
			buf = append(buf, encVal<<6|encLZF)
			buf = AppendLen(buf, uint64(len(c)))
			buf = AppendLen(buf, uint64(len(s)))
			return append(buf, c...)
		}
	}
	buf = AppendLen(buf, uint64(len(s)))
	return append(buf, s...)
}

// canonicalInt parses s when it is exactly the decimal form Redis prints
// for the value (string2ll then ll2string gives s back): no sign other than
// a leading '-', no leading zeros, no "-0".
func canonicalInt(s []byte) (int64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	d := s
	if neg {
		d = s[1:]
	}
	if len(d) == 0 || len(d) > 19 || d[0] == '0' && (len(d) > 1 || neg) {
		return 0, false
	}
	var u uint64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return int64(-u), true
	}
	if u > 1<<63-1 {
		return 0, false
	}
	return int64(u), true
}

// ReadLen is rdbLoadLenByRef: it reads a length from the start of b and
// returns it, whether it is a string encoding type (the 11 prefix: n is
// then encInt8..encLZF) rather than a length, and the bytes read.
func ReadLen(b []byte) (n uint64, encoded bool, size int, err error) {
	if len(b) < 1 {
		return 0, false, 0, ErrTruncated
	}
	switch b[0] >> 6 {
	case 0:
		return uint64(b[0] & 0x3f), false, 1, nil
	case 1:
		if len(b) < 2 {
			return 0, false, 0, ErrTruncated
		}
		return uint64(b[0]&0x3f)<<8 | uint64(b[1]), false, 2, nil
	case 3:
		return uint64(b[0] & 0x3f), true, 1, nil
	}
	switch b[0] {
	case 0x80:
		if len(b) < 5 {
			return 0, false, 0, ErrTruncated
		}
		return uint64(binary.BigEndian.Uint32(b[1:])), false, 5, nil
	case 0x81:
		if len(b) < 9 {
			return 0, false, 0, ErrTruncated
		}
		return binary.BigEndian.Uint64(b[1:]), false, 9, nil
	}
	return 0, false, 0, errEncoding
}

// MaxStringLen bounds the length of a string ReadString decompresses
// (Redis's proto-max-bulk-len default, 512 MB): a payload cannot make the
// reader allocate more.
const MaxStringLen = 512 << 20

// ReadString is rdbGenericLoadStringObject: it reads an RDB string from
// the start of b and returns it and the bytes read. A plain string aliases
// b; an integer or compressed one is a new slice.
func ReadString(b []byte) ([]byte, int, error) {
	n, enc, size, err := ReadLen(b)
	if err != nil {
		return nil, 0, err
	}
	if !enc {
		if n > uint64(len(b)-size) {
			return nil, 0, ErrTruncated
		}
		return b[size : size+int(n)], size + int(n), nil
	}
	p := b[size:]
	switch n {
	case encInt8:
		if len(p) < 1 {
			return nil, 0, ErrTruncated
		}
		return strconv.AppendInt(nil, int64(int8(p[0])), 10), size + 1, nil
	case encInt16:
		if len(p) < 2 {
			return nil, 0, ErrTruncated
		}
		return strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(p))), 10), size + 2, nil
	case encInt32:
		if len(p) < 4 {
			return nil, 0, ErrTruncated
		}
		return strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(p))), 10), size + 4, nil
	case encLZF:
		clen, _, s1, err := ReadLen(p) // lengths as rdbLoadLen reads them
		if err != nil {
			return nil, 0, err
		}
		ulen, _, s2, err := ReadLen(p[s1:])
		if err != nil {
			return nil, 0, err
		}
		start := s1 + s2
		// A back reference (3 bytes at most) expands to 264 bytes at most,
		// so a plain length over 88 times the compressed one cannot be
		// right: refuse it before allocating.
		if clen > uint64(len(p)-start) || ulen > MaxStringLen || ulen > 88*clen {
			return nil, 0, ErrTruncated
		}
		if ulen == 0 {
			// lzf_decompress into 0 bytes returns 0 whatever the data,
			// which Redis takes for success: an empty string.
			return []byte{}, size + start + int(clen), nil
		}
		out, err := LZFDecompress(p[start:start+int(clen)], int(ulen))
		if err != nil {
			return nil, 0, err
		}
		return out, size + start + int(clen), nil
	}
	return nil, 0, errEncoding
}
