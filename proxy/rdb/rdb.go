// Package rdb is Redis's RDB format as DUMP-style payloads use it, bytes in
// and out: the length encoding, strings (integer and LZF encodings, LZF
// itself), Redis's CRC-64 and the payload footer (RDB version and
// checksum); Dump, the encoder of DUMP payloads (embedded mode's DUMP and
// MIGRATE in proxy/commands, upstream mode's reloads in
// proxy/upstream/link); and Decode, which reads every value encoding Redis
// 7.0 RESTOREs. FUNCTION DUMP payloads (proxy/script) use its strings and
// footer. It imports nothing of the project.
package rdb

import (
	"encoding/binary"
	"math"
)

// AppendLen appends n in RDB length encoding (rdbSaveLen): 00xxxxxx for
// n < 64, 01xxxxxx xxxxxxxx (14 bits, big-endian) for n < 16384, 0x80 + 4
// bytes big-endian up to 2^32-1, else 0x81 + 8 bytes big-endian.
func AppendLen(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, 0x40|byte(n>>8), byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0x80), uint32(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, 0x81), n)
	}
}

// crc64Table is the byte-wise table for Redis's CRC-64 (Jones polynomial
// 0xad93d23594c935a9, processed reflected, so the table uses its bit
// reversal 0x95ac9329ac4bc9b5).
var crc64Table = func() (t [256]uint64) {
	const poly = 0x95ac9329ac4bc9b5
	for i := range t {
		c := uint64(i)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ poly
			} else {
				c >>= 1
			}
		}
		t[i] = c
	}
	return t
}()

// CRC64 continues Redis's CRC-64 (reflected, init 0, no final xor) from
// crc over p. CRC64(0, "123456789") == 0xe9c6d914c4b8d9ca.
func CRC64(crc uint64, p []byte) uint64 {
	for _, b := range p {
		crc = crc64Table[byte(crc)^b] ^ crc>>8
	}
	return crc
}

// AppendFooter ends a payload as DUMP does: the RDB version (2 bytes,
// little-endian), then the CRC-64 of everything before (8 bytes,
// little-endian).
func AppendFooter(b []byte, version uint16) []byte {
	b = binary.LittleEndian.AppendUint16(b, version)
	return binary.LittleEndian.AppendUint64(b, CRC64(0, b))
}

// FooterOK reports whether p ends with a footer whose version is at most
// maxVersion and whose checksum matches, as RESTORE checks it.
func FooterOK(p []byte, maxVersion uint16) bool {
	if len(p) < 10 {
		return false
	}
	footer := p[len(p)-10:]
	if binary.LittleEndian.Uint16(footer) > maxVersion {
		return false
	}
	return CRC64(0, p[:len(p)-8]) == binary.LittleEndian.Uint64(footer[2:])
}
