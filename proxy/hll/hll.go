// Package hll is Redis 7.0's HyperLogLog representation, byte for byte:
// pure functions and a working copy over a string value (bytes in, bytes
// out, no I/O, nothing of the project imported).
//
// A HyperLogLog is an ordinary string. Its 16-byte header is the magic
// "HYLL", an encoding byte (0 dense, 1 sparse), three unused bytes and
// the cached cardinality, a little-endian 64-bit integer whose most
// significant bit set means "stale". The dense encoding follows with
// 16384 6-bit registers packed least significant bit first (12288
// bytes). The sparse encoding follows with run-length opcodes: ZERO
// (00xxxxxx: 1..64 zero registers), XZERO (01xxxxxx yyyyyyyy: 1..16384
// zero registers) and VAL (1vvvvvxx: 1..4 registers of value 1..32).
//
// Every operation here does what Redis's hyperloglog.c does to the same
// bytes, including on corrupted values: the same changes, the same
// detections (ErrCorrupt where Redis replies INVALIDOBJ, ErrNotHLL where
// it replies WRONGTYPE), and where Redis reads the byte after a value (an
// sds string's terminator) these functions read 0. No input makes them
// panic.
package hll

import (
	"encoding/binary"
	"errors"
	"math/bits"
)

// The layout's constants (Redis's HLL_* defines).
const (
	// P is the number of hash bits that select a register.
	P = 14
	// Registers is the number of registers, 2^P.
	Registers = 1 << P
	// HeaderSize is the size of the header both encodings start with.
	HeaderSize = 16
	// DenseSize is the exact size of a dense HyperLogLog.
	DenseSize = HeaderSize + (Registers*regBits+7)/8

	q         = 64 - P // hash bits left to count zeros in
	regBits   = 6
	regMax    = 1<<regBits - 1
	encDense  = 0
	encSparse = 1
	// maxEncoding is the largest encoding byte a valid value has.
	maxEncoding = encSparse
	// hashSeed is the seed Redis hashes elements with.
	hashSeed = 0xadc83b19
)

var (
	// ErrNotHLL is a string that is not a HyperLogLog: too short, bad
	// magic, unknown encoding, or a dense one of the wrong length (Redis:
	// "WRONGTYPE Key is not a valid HyperLogLog string value.").
	ErrNotHLL = errors.New("hll: not a valid HyperLogLog string value")
	// ErrCorrupt is a HyperLogLog whose registers do not decode (Redis:
	// "INVALIDOBJ Corrupted HLL object detected").
	ErrCorrupt = errors.New("hll: corrupted HyperLogLog")
	// ErrNotSparse is PFDEBUG DECODE of a dense HyperLogLog.
	ErrNotSparse = errors.New("hll: encoding is not sparse")
)

// Check reports whether v may be used as a HyperLogLog, as Redis's
// isHLLObjectOrReply: nil, or ErrNotHLL. It does not decode the
// registers: a value that passes may still be ErrCorrupt.
func Check(v []byte) error {
	if len(v) < HeaderSize || string(v[:4]) != "HYLL" || v[4] > maxEncoding {
		return ErrNotHLL
	}
	if v[4] == encDense && len(v) != DenseSize {
		return ErrNotHLL
	}
	return nil
}

// IsDense reports whether checked value v is dense-encoded.
func IsDense(v []byte) bool { return v[4] == encDense }

// Empty returns a new empty HyperLogLog, as Redis creates one: sparse,
// one XZERO opcode of 16384 registers, cached cardinality 0 (valid).
func Empty() []byte {
	v := make([]byte, HeaderSize, HeaderSize+2)
	copy(v, "HYLL")
	v[4] = encSparse
	return appendXZero(v, Registers)
}

// Cached returns checked value v's cached cardinality and whether it is
// valid (the stale bit clear).
func Cached(v []byte) (uint64, bool) {
	card := binary.LittleEndian.Uint64(v[8:16])
	return card, card>>63 == 0
}

// SetCached stores card as checked value v's cached cardinality, in
// place (a cardinality below 2^63 also marks it valid).
func SetCached(v []byte, card uint64) { binary.LittleEndian.PutUint64(v[8:16], card) }

// invalidate marks v's cached cardinality stale.
func invalidate(v []byte) { v[15] |= 0x80 }

// MurmurHash64A is Redis's 64-bit MurmurHash2, endian-neutral (the
// 8-byte blocks are read little endian).
func MurmurHash64A(key []byte, seed uint32) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := uint64(seed) ^ uint64(len(key))*m
	for len(key) >= 8 {
		k := binary.LittleEndian.Uint64(key)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		key = key[8:]
	}
	if len(key) > 0 {
		for i := len(key) - 1; i >= 0; i-- {
			h ^= uint64(key[i]) << (8 * uint(i))
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// PatLen returns the register an element selects and the value it
// offers it: one plus the number of zeros above the register bits of the
// element's hash before the first one (at most q+1).
func PatLen(elem []byte) (index int, count uint8) {
	h := MurmurHash64A(elem, hashSeed)
	index = int(h & (Registers - 1))
	h >>= P
	h |= 1 << q // the run ends by bit q at the latest
	return index, uint8(bits.TrailingZeros64(h) + 1)
}

// denseGet returns register i of dense registers r (12288 bytes; a byte
// past the end reads 0).
func denseGet(r []byte, i int) uint8 {
	b := i * regBits / 8
	fb := uint(i * regBits & 7)
	b0 := uint(r[b])
	var b1 uint
	if b+1 < len(r) {
		b1 = uint(r[b+1])
	}
	return uint8((b0>>fb | b1<<(8-fb)) & regMax)
}

// unpackDense writes the registers of dense registers r (12288 bytes) to
// out: every 3 bytes hold 4 registers.
func unpackDense(r []byte, out *[Registers]uint8) {
	r = r[:Registers*regBits/8]
	for i, j := 0, 0; j+2 < len(r); i, j = i+4, j+3 {
		b0, b1, b2 := r[j], r[j+1], r[j+2]
		out[i] = b0 & regMax
		out[i+1] = (b0>>6 | b1<<2) & regMax
		out[i+2] = (b1>>4 | b2<<4) & regMax
		out[i+3] = b2 >> 2
	}
}

// denseSet sets register i of dense registers r to val (at most 63).
func denseSet(r []byte, i int, val uint8) {
	b := i * regBits / 8
	fb := uint(i * regBits & 7)
	v := uint(val)
	r[b] = byte(uint(r[b])&^(regMax<<fb) | v<<fb)
	if b+1 < len(r) {
		r[b+1] = byte(uint(r[b+1])&^(regMax>>(8-fb)) | v>>(8-fb))
	}
}

// denseMax raises register i of dense registers r to count if it is
// lower, reporting whether it did.
func denseMax(r []byte, i int, count uint8) bool {
	if count > denseGet(r, i) {
		denseSet(r, i, count)
		return true
	}
	return false
}
