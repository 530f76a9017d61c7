package codec

import (
	"errors"
	"fmt"
	"math"
)

// FormatVersion is the on-disk format written by this package. It is the
// first byte of every meta value and the value of the "format" system record.
const FormatVersion = 1

// Namespace bytes: the first byte of every key in the store.
const (
	NSMeta    byte = 'm' // 'm' | db | hash | userkey
	NSData    byte = 'd' // 'd' | db | keylen | userkey | version | tag | ...
	NSExpiry  byte = 'x' // 'x' | expireAt | db | userkey
	NSGarbage byte = 'g' // 'g' | seq
	NSSystem  byte = 's' // 's' | name
)

// Data record tags: the byte after the version in a data key.
const (
	TagField byte = 'f' // hash field, set member, zset member -> score
	TagList  byte = 'l' // list element by index
	TagScore byte = 's' // zset score index: score | member -> empty

	// Stream records (stream.go).
	TagStreamEntry    byte = 'e' // entry: ms | seq -> fields and values
	TagStreamNode     byte = 'n' // listpack node Redis would hold: master ms | seq -> counts
	TagStreamGroup    byte = 'g' // consumer group: name -> last ID, entries read
	TagStreamConsumer byte = 'c' // consumer: grouplen | group | name -> seen time
	TagStreamPending  byte = 'p' // pending entry: grouplen | group | ms | seq -> delivery
	// consumer's pending index: grouplen | group | namelen | name | ms | seq -> empty
	TagStreamConsumerPending byte = 'q'
)

// MaxKeyLen is the longest user key a data key can hold (its length is
// stored in 4 bytes). Builders of data keys panic on longer keys; the
// protocol layer must reject them first (Redis caps bulk strings far lower).
const MaxKeyLen = math.MaxUint32

// ListStartIndex is the head and tail index of a new, empty list. LPUSH
// decrements head and writes at the new head; RPUSH writes at tail and then
// increments it, so both ends have 2^63 slots of room.
const ListStartIndex uint64 = 1 << 63

// Type is the Redis type of a key, as stored in its meta record.
type Type uint8

// Types of keys. TypeNone is never stored; it stands for a missing key.
const (
	TypeNone   Type = 0
	TypeString Type = 1
	TypeList   Type = 2
	TypeSet    Type = 3
	TypeZSet   Type = 4
	TypeHash   Type = 5
	TypeStream Type = 6
)

// String returns the name the Redis TYPE command replies with ("none" for
// TypeNone); an invalid type prints as "unknown(N)".
func (t Type) String() string {
	switch t {
	case TypeNone:
		return "none"
	case TypeString:
		return "string"
	case TypeList:
		return "list"
	case TypeSet:
		return "set"
	case TypeZSet:
		return "zset"
	case TypeHash:
		return "hash"
	case TypeStream:
		return "stream"
	}
	return fmt.Sprintf("unknown(%d)", uint8(t))
}

// Valid reports whether t is a type that can be stored (not TypeNone).
func (t Type) Valid() bool { return t >= TypeString && t <= TypeStream }

// ErrCorrupt is wrapped by every error about malformed input.
var ErrCorrupt = errors.New("codec: corrupt record")

// ErrUnknownFormat is matched (errors.Is) by a *FormatError: a meta value
// written by a format this package does not know.
var ErrUnknownFormat = errors.New("codec: unknown format")

// ErrNaN is returned when asked to encode a NaN score.
var ErrNaN = errors.New("codec: score is NaN")

// FormatError reports a meta value whose format byte is not FormatVersion.
type FormatError struct {
	Format byte // the format byte found
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("codec: unknown format %d (this build reads format %d)", e.Format, FormatVersion)
}

// Is makes errors.Is(err, ErrUnknownFormat) true for a *FormatError.
func (e *FormatError) Is(target error) bool { return target == ErrUnknownFormat }

// corrupt builds an error wrapping ErrCorrupt; only called on failure paths.
func corrupt(what, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrCorrupt, what, fmt.Sprintf(format, args...))
}

// PrefixEnd returns the smallest key greater than every key that starts with
// prefix: the exclusive upper bound of a prefix scan. It returns nil (no
// upper bound) when prefix is empty or all 0xff bytes. It allocates; see
// AppendPrefixEnd to reuse a buffer.
func PrefixEnd(prefix []byte) []byte {
	end, ok := AppendPrefixEnd(nil, prefix)
	if !ok {
		return nil
	}
	return end
}

// AppendPrefixEnd appends PrefixEnd(prefix) to dst. ok is false, and dst is
// returned unchanged, when prefix has no upper bound (empty or all 0xff).
// dst may be prefix[:0].
func AppendPrefixEnd(dst, prefix []byte) (end []byte, ok bool) {
	n := len(prefix)
	for n > 0 && prefix[n-1] == 0xff {
		n--
	}
	if n == 0 {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, prefix[:n]...)
	dst[start+n-1]++
	return dst, true
}

// checkKeyLen panics if a key of n bytes cannot be stored in a 4-byte length.
func checkKeyLen(n int) {
	if uint64(n) > MaxKeyLen {
		panic(fmt.Sprintf("codec: key of %d bytes exceeds MaxKeyLen", n))
	}
}
