package coldstore

import "sync/atomic"

// lookupMix picks how point lookups of one kind (meta records; fields and
// members of collections) are read, from what recent ones found. Pebble's
// Get skips the bloom filters of the last level (L6, where most records
// live), assuming a lookup finds its key: a key that is not there costs a
// data block read and its decompression. A probe (probeInto: an iterator
// with every level's filters) answers most misses from a filter but costs
// more than Get when the key exists. Measured on a store of 163,840 cold
// 1 KB strings under --maxmemory 32mb (server CPU a GET, redis-benchmark
// -c 50): a miss 32-37 µs by Get, 20-26 by a probe; a hit 42-61 by Get,
// about 5 more by a probe. So lookups probe while more than a third of the
// recent ones of their kind missed, and use Get otherwise (cold reads of
// keys that exist). Meta lookups miss for GETs of absent keys and for the
// meta read of every SET, HSET, LPUSH... of a new key once the store holds
// keys (a bulk load of 2,000,000 new keys under --maxmemory 64mb took 23 s
// instead of 49); field reads for membership tests answered no (SISMEMBER
// of a cold set, 90% absent: 39-43 -> 25-35 µs).
//
// Safe for concurrent use; the counts are approximate under concurrency
// (a window may lose a few lookups), which only moves the switch a little.
type lookupMix struct {
	n, missed atomic.Uint32
	probe     atomic.Bool
}

// mixWindow is how many lookups a decision looks back on.
const mixWindow = 256

// probing reports whether lookups of m's kind should probe.
func (m *lookupMix) probing() bool { return m.probe.Load() }

// note counts one lookup and whether it found its key; every mixWindow
// lookups it decides the next window's way.
func (m *lookupMix) note(found bool) {
	if !found {
		m.missed.Add(1)
	}
	if m.n.Add(1) != mixWindow {
		return
	}
	missed := m.missed.Swap(0)
	m.n.Store(0)
	m.probe.Store(3*missed > mixWindow)
}

// readMeta is readPoint for a meta record, by Get or by probe as the recent
// meta lookups say.
func (s *Store) readMeta(g getter, key, buf []byte, own *Batch) ([]byte, bool, error) {
	return s.readMixed(&s.metaMix, g, key, buf, own)
}

// GetField reads the record of a collection's field or member (an encoded
// data key), as Get does, but by Get or by probe as the recent field reads
// say: HGET, HEXISTS, SISMEMBER, ZSCORE of cold collections, whose member
// may well be absent (a membership test mostly answered no).
func (s *Store) GetField(key, buf []byte) ([]byte, bool, error) {
	return s.readMixed(&s.fieldMix, s.db, key, buf, nil)
}

// GetField is Store.GetField seeing this batch.
func (b *Batch) GetField(key, buf []byte) ([]byte, bool, error) {
	g, err := b.getter()
	if err != nil {
		return buf, false, err
	}
	return b.s.readMixed(&b.s.fieldMix, g, key, buf, b)
}

// readMixed is readPoint by Get or by probe as m says, noting what it found
// in m.
func (s *Store) readMixed(m *lookupMix, g getter, key, buf []byte, own *Batch) ([]byte, bool, error) {
	buf, found, err := s.readPoint(g, key, buf, own, m.probing())
	if err == nil {
		m.note(found)
	}
	return buf, found, err
}
