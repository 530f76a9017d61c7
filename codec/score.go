package codec

import (
	"encoding/binary"
	"math"
)

const signBit = 1 << 63

// EncodeScore maps a float64 to a uint64 whose big-endian bytes sort in the
// score's numeric order: -inf < finite negatives < 0 < finite positives <
// +inf. -0 is normalised to +0 first, so they encode identically. NaN has no
// place in that order and yields ErrNaN.
func EncodeScore(score float64) (uint64, error) {
	if score != score {
		return 0, ErrNaN
	}
	if score == 0 {
		score = 0 // turns -0 into +0
	}
	bits := math.Float64bits(score)
	if bits&signBit != 0 {
		return ^bits, nil
	}
	return bits | signBit, nil
}

// DecodeScore inverts EncodeScore. It accepts exactly the values EncodeScore
// can produce: the encodings of NaN and of -0 are rejected (ErrCorrupt).
func DecodeScore(u uint64) (float64, error) {
	var bits uint64
	if u&signBit != 0 {
		bits = u &^ signBit
	} else {
		bits = ^u
	}
	f := math.Float64frombits(bits)
	if f != f {
		return 0, corrupt("score", "encoding %#016x is NaN", u)
	}
	if bits == signBit {
		return 0, corrupt("score", "encoding %#016x is -0", u)
	}
	return f, nil
}

// AppendScore appends the 8-byte order-preserving encoding of score, the
// value of a zset member record. NaN yields ErrNaN and dst unchanged.
func AppendScore(dst []byte, score float64) ([]byte, error) {
	u, err := EncodeScore(score)
	if err != nil {
		return dst, err
	}
	return binary.BigEndian.AppendUint64(dst, u), nil
}

// ParseScore decodes an 8-byte score written by AppendScore.
func ParseScore(b []byte) (float64, error) {
	if len(b) != 8 {
		return 0, corrupt("score", "length %d, want 8", len(b))
	}
	return DecodeScore(binary.BigEndian.Uint64(b))
}

// AppendMemberScore appends the value of a zset member record: the score's
// IEEE-754 bits, big-endian. Unlike the index encoding it keeps the sign of
// zero. NaN yields ErrNaN and dst unchanged.
func AppendMemberScore(dst []byte, score float64) ([]byte, error) {
	if score != score {
		return dst, ErrNaN
	}
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(score)), nil
}

// ParseMemberScore decodes a member record's value (AppendMemberScore).
func ParseMemberScore(b []byte) (float64, error) {
	if len(b) != 8 {
		return 0, corrupt("member score", "length %d, want 8", len(b))
	}
	f := math.Float64frombits(binary.BigEndian.Uint64(b))
	if f != f {
		return 0, corrupt("member score", "NaN")
	}
	return f, nil
}

// NegZeroMark is the value of a score-index record whose score is -0 (the
// key, like every index key, holds the normalised 0, so that -0 and 0 sort
// together by member as in Redis); other index records have empty values.
var NegZeroMark = []byte{'-'}
