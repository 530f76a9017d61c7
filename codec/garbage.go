package codec

import "encoding/binary"

// Garbage is a decoded garbage record: one stale version of a collection
// whose data records await reclamation. Count is how many fields it had, so
// the reclaimer can choose one DeleteRange over the version's data prefix
// (many fields) or point deletes (few).
type Garbage struct {
	DB      uint8
	Key     []byte
	Version uint64
	Count   uint64
}

// AppendDataPrefix appends the data prefix of the stale version g names;
// every record to reclaim lies in [prefix, PrefixEnd(prefix)).
func (g *Garbage) AppendDataPrefix(dst []byte) []byte {
	return AppendDataPrefix(dst, g.DB, g.Key, g.Version)
}

// AppendGarbageKey appends the garbage key 'g' | seq(8). seq orders garbage
// by when it was produced.
func AppendGarbageKey(dst []byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, NSGarbage), seq)
}

// GarbageStart returns 'g', the first possible garbage key, a fresh slice
// each call; PrefixEnd(GarbageStart()) bounds all garbage records.
func GarbageStart() []byte { return []byte{NSGarbage} }

// ParseGarbageKey decodes the sequence number of a garbage key.
func ParseGarbageKey(b []byte) (seq uint64, err error) {
	if len(b) != 9 || b[0] != NSGarbage {
		return 0, corrupt("garbage key", "bad namespace or length %d", len(b))
	}
	return binary.BigEndian.Uint64(b[1:]), nil
}

// AppendGarbageValue appends the garbage value
// db(1) | keylen(4) | key | version(8) | count(8).
// It panics if len(key) > MaxKeyLen.
func AppendGarbageValue(dst []byte, db uint8, key []byte, version, count uint64) []byte {
	checkKeyLen(len(key))
	dst = append(dst, db)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(key)))
	dst = append(dst, key...)
	dst = binary.BigEndian.AppendUint64(dst, version)
	return binary.BigEndian.AppendUint64(dst, count)
}

// ParseGarbageValue decodes a garbage value. g.Key aliases b.
func ParseGarbageValue(b []byte) (Garbage, error) {
	const fixed = 1 + 4
	if len(b) < fixed {
		return Garbage{}, corrupt("garbage value", "length %d", len(b))
	}
	kl := uint64(binary.BigEndian.Uint32(b[1:]))
	tail := b[fixed:]
	if uint64(len(tail)) != kl+16 {
		return Garbage{}, corrupt("garbage value", "key length %d does not fit %d bytes", kl, len(tail))
	}
	return Garbage{
		DB:      b[0],
		Key:     tail[:kl:kl],
		Version: binary.BigEndian.Uint64(tail[kl:]),
		Count:   binary.BigEndian.Uint64(tail[kl+8:]),
	}, nil
}
