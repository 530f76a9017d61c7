package codec

import (
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
)

// Meta value sizes.
const (
	metaHeaderLen     = 1 + 1 + 8               // format | type | expireAt
	metaCollectionLen = metaHeaderLen + 8*3     // + version | count | bytes
	metaListLen       = metaCollectionLen + 8*2 // + head | tail
	metaZSetLen       = metaCollectionLen + 1   // + flags
)

// ZSetSkiplist is the zset meta flag recording that Redis would hold the
// set in its skiplist encoding (it grew past the compact encoding's limits
// once: Redis never converts back). It decides OBJECT ENCODING, and
// whether a score of -0 keeps its sign, as it does only in a skiplist.
const ZSetSkiplist uint8 = 1

// Meta is the decoded meta record of one key. Which fields are meaningful
// depends on Type:
//
//	TypeString:                    Value
//	TypeHash, TypeSet:             Version, Count, Bytes
//	TypeZSet:                      Version, Count, Bytes, Flags (ZSetSkiplist)
//	TypeList:                      Version, Count, Bytes, Head, Tail (Count == Tail-Head)
//	TypeStream:                    Version, Count, Bytes, Stream
//
// Bytes is the total length of the structure's fields and values (members,
// elements): what the promotion policy weighs a cold structure by.
//
// ExpireAt is the expiry time in Unix milliseconds, 0 for none; it is never
// negative.
type Meta struct {
	Type     Type
	ExpireAt int64
	Version  uint64
	Count    uint64
	Bytes    uint64
	Head     uint64
	Tail     uint64
	Flags    uint8
	Value    []byte
	// Stream is a stream's own part (TypeStream only).
	Stream StreamMeta
}

// AppendMetaKey appends the meta key of key in database db:
// 'm' | db | hash(8) | key, where hash is KeyHash(key). Meta keys of a
// database are ordered by hash, so a SCAN cursor can be the hash to resume
// from: stateless, and stable across restarts and tier moves.
func AppendMetaKey(dst []byte, db uint8, key []byte) []byte {
	dst = append(dst, NSMeta, db)
	dst = binary.BigEndian.AppendUint64(dst, KeyHash(key))
	return append(dst, key...)
}

// KeyHash is the 64-bit hash ordering meta keys (xxHash64, fixed forever:
// it is part of the on-disk format).
func KeyHash(key []byte) uint64 { return xxhash.Sum64(key) }

// AppendMetaPrefix appends 'm' | db, the prefix of every meta key of db.
func AppendMetaPrefix(dst []byte, db uint8) []byte {
	return append(dst, NSMeta, db)
}

// AppendMetaHashPrefix appends 'm' | db | hash: the first possible meta key
// of db whose key hashes to hash or more.
func AppendMetaHashPrefix(dst []byte, db uint8, hash uint64) []byte {
	dst = append(dst, NSMeta, db)
	return binary.BigEndian.AppendUint64(dst, hash)
}

// metaKeyHeader is the length of 'm' | db | hash.
const metaKeyHeader = 2 + 8

// ParseMetaKey splits a meta key. key aliases b. A key whose hash field is
// not KeyHash(key) is corrupt: no lookup could ever reach it.
func ParseMetaKey(b []byte) (db uint8, key []byte, err error) {
	if len(b) < metaKeyHeader || b[0] != NSMeta {
		return 0, nil, corrupt("meta key", "bad namespace or length %d", len(b))
	}
	key = b[metaKeyHeader:]
	if h := binary.BigEndian.Uint64(b[2:]); h != KeyHash(key) {
		return 0, nil, corrupt("meta key", "hash %#016x does not match key", h)
	}
	return b[1], key, nil
}

// MetaKeyHash returns the hash field of a meta key (0 if it is malformed).
func MetaKeyHash(b []byte) uint64 {
	if len(b) < metaKeyHeader {
		return 0
	}
	return binary.BigEndian.Uint64(b[2:metaKeyHeader])
}

// AppendMeta appends the encoding of m to dst, in format FormatVersion.
// Fields that m.Type does not use are not written. m.Type must be valid; for
// an invalid type only the header is written, which DecodeMeta rejects.
func AppendMeta(dst []byte, m *Meta) []byte {
	dst = append(dst, FormatVersion, byte(m.Type))
	dst = binary.BigEndian.AppendUint64(dst, uint64(m.ExpireAt))
	switch m.Type {
	case TypeString:
		dst = append(dst, m.Value...)
	case TypeHash, TypeSet, TypeZSet, TypeStream:
		dst = binary.BigEndian.AppendUint64(dst, m.Version)
		dst = binary.BigEndian.AppendUint64(dst, m.Count)
		dst = binary.BigEndian.AppendUint64(dst, m.Bytes)
		if m.Type == TypeZSet {
			dst = append(dst, m.Flags)
		}
		if m.Type == TypeStream {
			dst = appendStreamMeta(dst, &m.Stream)
		}
	case TypeList:
		dst = binary.BigEndian.AppendUint64(dst, m.Version)
		dst = binary.BigEndian.AppendUint64(dst, m.Count)
		dst = binary.BigEndian.AppendUint64(dst, m.Bytes)
		dst = binary.BigEndian.AppendUint64(dst, m.Head)
		dst = binary.BigEndian.AppendUint64(dst, m.Tail)
	}
	return dst
}

// DecodeMeta decodes a meta value into m, overwriting every field. It does
// not allocate: for strings m.Value aliases b. A format byte other than
// FormatVersion yields a *FormatError (errors.Is ErrUnknownFormat); any other
// malformation (length, type, negative expiry, list count != tail-head)
// wraps ErrCorrupt.
func DecodeMeta(b []byte, m *Meta) error {
	*m = Meta{}
	if len(b) == 0 {
		return corrupt("meta value", "empty")
	}
	if b[0] != FormatVersion {
		return &FormatError{Format: b[0]}
	}
	if len(b) < metaHeaderLen {
		return corrupt("meta value", "length %d, want at least %d", len(b), metaHeaderLen)
	}
	t := Type(b[1])
	expireAt := int64(binary.BigEndian.Uint64(b[2:]))
	if expireAt < 0 {
		return corrupt("meta value", "negative expiry %d", expireAt)
	}
	want := metaCollectionLen
	switch t {
	case TypeString:
		m.Type, m.ExpireAt, m.Value = t, expireAt, b[metaHeaderLen:]
		return nil
	case TypeHash, TypeSet:
	case TypeZSet:
		want = metaZSetLen
	case TypeList:
		want = metaListLen
	case TypeStream:
		want = metaStreamLen
	default:
		return corrupt("meta value", "unknown type %d", uint8(t))
	}
	if len(b) != want {
		return corrupt("meta value", "%s length %d, want %d", t, len(b), want)
	}
	version := binary.BigEndian.Uint64(b[10:])
	count := binary.BigEndian.Uint64(b[18:])
	size := binary.BigEndian.Uint64(b[26:])
	var head, tail uint64
	var flags uint8
	if t == TypeZSet {
		flags = b[34]
		if flags&^ZSetSkiplist != 0 {
			return corrupt("meta value", "zset flags %#x", flags)
		}
	}
	if t == TypeList {
		head = binary.BigEndian.Uint64(b[34:])
		tail = binary.BigEndian.Uint64(b[42:])
		if head > tail || tail-head != count {
			return corrupt("meta value", "list head %d tail %d count %d", head, tail, count)
		}
	}
	*m = Meta{Type: t, ExpireAt: expireAt, Version: version, Count: count, Bytes: size, Head: head, Tail: tail, Flags: flags}
	if t == TypeStream {
		decodeStreamMeta(b[metaCollectionLen:], &m.Stream)
	}
	return nil
}
