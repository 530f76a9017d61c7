package codec

import "encoding/binary"

// AppendExpiryKey appends the expiry-index key 'x' | expireAt(8) | db | key
// (empty value). Keys sort by expireAt first, so a sweeper scans from
// ExpiryStart up to AppendExpiryTimePrefix(now+1). expireAt is Unix
// milliseconds and must be positive; negative times do not sort correctly
// and are rejected by ParseExpiryKey.
//
// The index is a hint: the meta record is the authority. A sweeper must check
// that the key's meta still carries this expireAt before deleting anything,
// and drop entries that no longer match (FLUSHDB, PERSIST, overwrite).
func AppendExpiryKey(dst []byte, expireAt int64, db uint8, key []byte) []byte {
	dst = AppendExpiryTimePrefix(dst, expireAt)
	dst = append(dst, db)
	return append(dst, key...)
}

// AppendExpiryTimePrefix appends 'x' | expireAt(8), the prefix of every
// expiry-index key of that instant. Every entry due strictly before t sorts
// before AppendExpiryTimePrefix(nil, t).
func AppendExpiryTimePrefix(dst []byte, expireAt int64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, NSExpiry), uint64(expireAt))
}

// ExpiryStart returns the first possible expiry-index key, 'x', a fresh
// slice each call; PrefixEnd(ExpiryStart()) bounds the whole index.
func ExpiryStart() []byte { return []byte{NSExpiry} }

// ParseExpiryKey splits an expiry-index key. key aliases b.
func ParseExpiryKey(b []byte) (expireAt int64, db uint8, key []byte, err error) {
	const fixed = 1 + 8 + 1
	if len(b) < fixed || b[0] != NSExpiry {
		return 0, 0, nil, corrupt("expiry key", "bad namespace or length %d", len(b))
	}
	expireAt = int64(binary.BigEndian.Uint64(b[1:]))
	if expireAt < 0 {
		return 0, 0, nil, corrupt("expiry key", "negative time %d", expireAt)
	}
	return expireAt, b[9], b[fixed:], nil
}
