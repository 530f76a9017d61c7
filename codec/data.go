package codec

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// AppendDataPrefix appends the prefix shared by every data record of one
// version of key: 'd' | db | keylen(4) | key | version(8). Because the key
// length precedes the key, the ranges of two different keys never overlap,
// so one DeleteRange over [prefix, PrefixEnd(prefix)) reclaims a version.
// It panics if len(key) > MaxKeyLen.
func AppendDataPrefix(dst []byte, db uint8, key []byte, version uint64) []byte {
	checkKeyLen(len(key))
	dst = append(dst, NSData, db)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(key)))
	dst = append(dst, key...)
	return binary.BigEndian.AppendUint64(dst, version)
}

// AppendFieldPrefix appends DataPrefix | 'f', the prefix of all hash fields,
// set members or zset member->score records of one version of key.
func AppendFieldPrefix(dst []byte, db uint8, key []byte, version uint64) []byte {
	return append(AppendDataPrefix(dst, db, key, version), TagField)
}

// AppendFieldKey appends the key of one hash field, set member or zset
// member: DataPrefix | 'f' | FieldHash(field)(4) | field. Fields sort by
// hash, so an HSCAN cursor can be the hash to resume from (stateless and
// stable across tier moves, like SCAN's).
func AppendFieldKey(dst []byte, db uint8, key []byte, version uint64, field []byte) []byte {
	dst = AppendFieldPrefix(dst, db, key, version)
	dst = binary.BigEndian.AppendUint32(dst, FieldHash(field))
	return append(dst, field...)
}

// AppendFieldHashKey appends DataPrefix | 'f' | hash(4): the first possible
// field key of that version whose field hashes to hash or more.
func AppendFieldHashKey(dst []byte, db uint8, key []byte, version uint64, hash uint32) []byte {
	return binary.BigEndian.AppendUint32(AppendFieldPrefix(dst, db, key, version), hash)
}

// FieldHash is the 32-bit hash ordering the fields of a structure: the high
// half of xxHash64 (fixed forever: it is part of the on-disk format).
func FieldHash(field []byte) uint32 { return uint32(xxhash.Sum64(field) >> 32) }

// fieldHashLen is the length of the hash before the field in a field key.
const fieldHashLen = 4

// ParseFieldRest splits what follows TagField in a data key into the
// field's hash and the field (aliasing rest). A hash that is not
// FieldHash(field) is corrupt: no lookup could reach the record.
func ParseFieldRest(rest []byte) (hash uint32, field []byte, err error) {
	if len(rest) < fieldHashLen {
		return 0, nil, corrupt("field key", "length %d, want at least %d", len(rest), fieldHashLen)
	}
	hash, field = binary.BigEndian.Uint32(rest), rest[fieldHashLen:]
	if hash != FieldHash(field) {
		return 0, nil, corrupt("field key", "hash %#08x does not match field", hash)
	}
	return hash, field, nil
}

// AppendListPrefix appends DataPrefix | 'l', the prefix of all elements of
// one version of a list, in index order.
func AppendListPrefix(dst []byte, db uint8, key []byte, version uint64) []byte {
	return append(AppendDataPrefix(dst, db, key, version), TagList)
}

// AppendListKey appends the key of the list element at index:
// DataPrefix | 'l' | index(8).
func AppendListKey(dst []byte, db uint8, key []byte, version, index uint64) []byte {
	return binary.BigEndian.AppendUint64(AppendListPrefix(dst, db, key, version), index)
}

// AppendScorePrefix appends DataPrefix | 's', the prefix of the score index
// of one version of a zset, ordered by (score, member).
func AppendScorePrefix(dst []byte, db uint8, key []byte, version uint64) []byte {
	return append(AppendDataPrefix(dst, db, key, version), TagScore)
}

// AppendScoreKey appends the score-index key DataPrefix | 's' | score(8) |
// member. With an empty member it is the first key of that score, a seek
// target for a range by score. A NaN score yields ErrNaN and dst unchanged.
func AppendScoreKey(dst []byte, db uint8, key []byte, version uint64, score float64, member []byte) ([]byte, error) {
	u, err := EncodeScore(score)
	if err != nil {
		return dst, err
	}
	dst = AppendScorePrefix(dst, db, key, version)
	dst = binary.BigEndian.AppendUint64(dst, u)
	return append(dst, member...), nil
}

// ParseDataKey splits a data key. key and rest alias b. rest is what follows
// the tag: hash and field for TagField (see ParseFieldRest), the 8-byte index for TagList (see
// ParseListRest), score and member for TagScore (see ParseScoreRest). It
// checks the tag is known and that rest is well-formed for it.
func ParseDataKey(b []byte) (db uint8, key []byte, version uint64, tag byte, rest []byte, err error) {
	const fixed = 1 + 1 + 4 // 'd' | db | keylen
	if len(b) < fixed || b[0] != NSData {
		return 0, nil, 0, 0, nil, corrupt("data key", "bad namespace or length %d", len(b))
	}
	kl := uint64(binary.BigEndian.Uint32(b[2:]))
	tail := b[fixed:]
	if uint64(len(tail)) < kl+8+1 {
		return 0, nil, 0, 0, nil, corrupt("data key", "key length %d overruns %d bytes", kl, len(tail))
	}
	key = tail[:kl:kl]
	version = binary.BigEndian.Uint64(tail[kl:])
	tag = tail[kl+8]
	rest = tail[kl+9:]
	switch tag {
	case TagField:
		if _, _, err = ParseFieldRest(rest); err != nil {
			return 0, nil, 0, 0, nil, err
		}
	case TagList:
		if _, err = ParseListRest(rest); err != nil {
			return 0, nil, 0, 0, nil, err
		}
	case TagScore:
		if _, _, err = ParseScoreRest(rest); err != nil {
			return 0, nil, 0, 0, nil, err
		}
	case TagStreamEntry, TagStreamNode, TagStreamGroup, TagStreamConsumer, TagStreamPending, TagStreamConsumerPending:
		if err = validStreamRest(tag, rest); err != nil {
			return 0, nil, 0, 0, nil, err
		}
	default:
		return 0, nil, 0, 0, nil, corrupt("data key", "unknown tag %#x", tag)
	}
	return b[1], key, version, tag, rest, nil
}

// ParseListRest decodes the index that follows TagList in a data key.
func ParseListRest(rest []byte) (uint64, error) {
	if len(rest) != 8 {
		return 0, corrupt("list key", "index length %d, want 8", len(rest))
	}
	return binary.BigEndian.Uint64(rest), nil
}

// ParseScoreRest decodes the score and member that follow TagScore in a
// data key. member aliases rest.
func ParseScoreRest(rest []byte) (score float64, member []byte, err error) {
	if len(rest) < 8 {
		return 0, nil, corrupt("score key", "length %d, want at least 8", len(rest))
	}
	score, err = DecodeScore(binary.BigEndian.Uint64(rest))
	if err != nil {
		return 0, nil, err
	}
	return score, rest[8:], nil
}
