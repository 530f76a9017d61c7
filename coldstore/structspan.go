package coldstore

import "encoding/binary"

// Where one structure's pending records are, for iterators over part of
// it. An iterator inside a structure with pending records used to wait for
// an application round whatever part it read; but the commonest such
// iterators read where nothing is pending: a list held by its ends refills
// its tail window from the store while its pops' deletions (just past that
// window) and its pushes (at the other end) are pending, and a sorted set
// popped at its head is read past the deleted members. So the index keeps,
// per structure, a few intervals of keys that together hold every pending
// record of it (structSpans), and an iterator waits only when its range
// meets one of them.

// maxStructSpans is how many intervals a structure's pending records are
// bounded by: enough for a structure written at both ends and somewhere
// in the middle.
const maxStructSpans = 4

// structSpans is a set of at most maxStructSpans closed key intervals
// covering the keys of the pending records of one structure (or of the
// structures whose prefixes share a hash: the intervals then cover them
// all, which only makes iterators wait more). An interval is held as the
// offsets, in the indexed buffer, of the records whose keys are its ends,
// and the positions of those keys (spanPos), which say how near a new key
// is to each interval.
type structSpans struct {
	n      int
	lo, hi [maxStructSpans]int32
	lp, hp [maxStructSpans]uint64
}

// spanPos is the position of key k of a structure whose prefix is plen
// bytes long: the 8 bytes after the prefix as a big-endian number (a
// list element's index, a sorted-set score's order-preserving encoding,
// a field's first bytes), zero-padded. Keys in order have positions in
// order; it only chooses which interval a key widens.
func spanPos(k []byte, plen int) uint64 {
	var b [8]byte
	if plen < len(k) {
		copy(b[:], k[plen:])
	}
	return binary.BigEndian.Uint64(b[:])
}

// keyAt is the key of the record at offset off of buf (recordAt's).
func keyAt(buf []byte, off int32) []byte {
	_, k, _, _ := recordAt(buf, int(off))
	return k
}

// add widens the intervals to cover key k, the key of the record at
// offset off of buf, whose structure prefix is plen bytes long: nothing
// if an interval holds it, a new interval if there is room, otherwise the
// nearest interval by position grows to it.
func (s *structSpans) add(buf []byte, off int32, k []byte, plen int) {
	for i := range s.n {
		if string(keyAt(buf, s.lo[i])) <= string(k) && string(k) <= string(keyAt(buf, s.hi[i])) {
			return
		}
	}
	p := spanPos(k, plen)
	if s.n < maxStructSpans {
		s.lo[s.n], s.hi[s.n], s.lp[s.n], s.hp[s.n] = off, off, p, p
		s.n++
		return
	}
	best, bestDist, below := 0, ^uint64(0), false
	for i := range s.n {
		if string(k) < string(keyAt(buf, s.lo[i])) {
			if d := s.lp[i] - min(p, s.lp[i]); d < bestDist {
				best, bestDist, below = i, d, true
			}
		} else if d := p - min(p, s.hp[i]); d < bestDist {
			best, bestDist, below = i, d, false
		}
	}
	if below {
		s.lo[best], s.lp[best] = off, p
	} else {
		s.hi[best], s.hp[best] = off, p
	}
}

// meets reports whether an interval holds a key in [lower, upper).
func (s *structSpans) meets(buf, lower, upper []byte) bool {
	for i := range s.n {
		if string(keyAt(buf, s.lo[i])) < string(upper) && string(lower) <= string(keyAt(buf, s.hi[i])) {
			return true
		}
	}
	return false
}
