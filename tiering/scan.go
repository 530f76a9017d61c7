package tiering

import (
	"bytes"
	"math/rand/v2"

	"github.com/spillway/spillway/codec"
)

// ScanOptions filter a Scan.
type ScanOptions struct {
	// Count is how many stored keys to visit (Redis's COUNT hint).
	Count int
	// Match, if set, keeps only keys it accepts.
	Match func(key []byte) bool
	// Type, if non-zero, keeps only keys of that type; each key Match
	// accepted counts as a read lookup (keyspace_hits), as Redis's SCAN
	// TYPE looks every candidate up.
	Type codec.Type
}

// ScanCursorBits is the width of the cursors Scan returns. Clients that
// read cursors as IEEE doubles (JavaScript's numbers) need them below 2^53;
// Scan's are below 2^52, which leaves upstream mode one bit to mark the
// store's part of its merged walk. A cursor is the top ScanCursorBits bits
// of the key hash to resume at.
const ScanCursorBits = 52

// Scan walks db's keys, hot and cold alike, in the order of their hash, from
// cursor. It visits about opts.Count stored keys, always finishing a run of
// keys whose hashes share their top ScanCursorBits bits, appends the live
// keys that pass the filters to dst, and returns the cursor to continue from
// (0 when the walk is complete; otherwise below 2^ScanCursorBits).
//
// The cursor is a hash prefix to resume at, so it stays valid across
// promotions, demotions and restarts: a key present for a whole iteration is
// returned at least once, as Redis guarantees. A cursor of 2^ScanCursorBits
// or more, which Scan never returns, ends the walk (no keys, cursor 0).
func (tx *Tx) Scan(db int, cursor uint64, opts ScanOptions, dst [][]byte) ([][]byte, uint64, error) {
	return tx.scan(db, cursor, ScanCursorBits, opts, dst)
}

// scan is Scan with cursors of the given width (1 to 64 bits): a cursor c
// resumes at hash c<<(64-bits). Tests use narrow cursors to make runs of
// keys sharing a cursor common.
func (tx *Tx) scan(db int, cursor uint64, bits uint, opts ScanOptions, dst [][]byte) ([][]byte, uint64, error) {
	shift := 64 - bits
	if bits < 64 && cursor>>bits != 0 {
		return dst, 0, nil
	}
	pdb := tx.pdb(db)
	lo := codec.AppendMetaHashPrefix(nil, pdb, cursor<<shift)
	hi := codec.PrefixEnd([]byte{codec.NSMeta, pdb})
	if err := tx.flushMeta(); err != nil { // the iterator reads meta records
		return dst, 0, err
	}
	it, err := tx.batch.NewIter(lo, hi)
	if err != nil {
		return dst, 0, err
	}
	defer it.Close()
	if opts.Count <= 0 {
		opts.Count = 10
	}
	visited := 0
	var last uint64 // the cursor (hash prefix) of the last key visited
	var m codec.Meta
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		// Keys are in hash order: a prefix different from the last one is
		// greater, hence not 0, and resuming there skips nothing unvisited.
		p := codec.MetaKeyHash(k) >> shift
		if visited >= opts.Count && p != last {
			return dst, p, nil
		}
		visited++
		last = p
		_, key, err := codec.ParseMetaKey(k)
		if err != nil {
			return dst, 0, err
		}
		if opts.Match != nil && !opts.Match(key) {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return dst, 0, err
		}
		if err := codec.DecodeMeta(v, &m); err != nil {
			return dst, 0, err
		}
		expired := m.ExpireAt != 0 && tx.now > m.ExpireAt
		if opts.Type != 0 {
			// Redis looks the key up to read its type (keyspace_hits).
			tx.AddLookup(!expired)
		}
		if expired || opts.Type != 0 && m.Type != opts.Type {
			continue
		}
		dst = append(dst, append([]byte(nil), key...))
	}
	return dst, 0, it.Error()
}

// Keys returns every live key of db that match accepts (all if nil).
func (tx *Tx) Keys(db int, match func([]byte) bool) ([][]byte, error) {
	keys, _, err := tx.Scan(db, 0, ScanOptions{Count: int(^uint(0) >> 1), Match: match}, nil)
	return keys, err
}

// RandomKey returns a random live key of db, or nil if it has none.
func (tx *Tx) RandomKey(db int) ([]byte, error) {
	pdb := tx.pdb(db)
	if tx.e.count == nil && tx.DBSize(db) == 0 { // no shortcut while keys are counted
		return nil, nil
	}
	lo := []byte{codec.NSMeta, pdb}
	hi := codec.PrefixEnd(lo)
	if err := tx.flushMeta(); err != nil { // the iterator reads meta records
		return nil, err
	}
	it, err := tx.batch.NewIter(lo, hi)
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var m codec.Meta
	// One pass from a random hash to the end, then from the start up to
	// that hash: every key is visited at most once.
	seek := codec.AppendMetaHashPrefix(nil, pdb, rand.Uint64())
	for pass := 0; pass < 2; pass++ {
		var valid bool
		if pass == 0 {
			valid = it.SeekGE(seek)
		} else {
			valid = it.First()
		}
		for ; valid; valid = it.Next() {
			if pass == 1 && bytes.Compare(it.Key(), seek) >= 0 {
				break
			}
			v, err := it.ValueAndErr()
			if err != nil {
				return nil, err
			}
			if err := codec.DecodeMeta(v, &m); err != nil {
				return nil, err
			}
			if m.ExpireAt != 0 && tx.now > m.ExpireAt {
				continue
			}
			_, key, err := codec.ParseMetaKey(it.Key())
			if err != nil {
				return nil, err
			}
			return append([]byte(nil), key...), nil
		}
		if err := it.Error(); err != nil {
			return nil, err
		}
	}
	return nil, nil
}
