package tiering

import (
	"bytes"
	"slices"
	"sort"
)

// ScoreRange is a score interval of ZRANGEBYSCORE, ZCOUNT...: Min and Max,
// each inclusive unless its Ex flag is set ("(" in Redis). Either may be
// ±Inf.
type ScoreRange struct {
	Min, Max     float64
	MinEx, MaxEx bool
}

// gteMin reports whether score is at or above the range's lower bound.
func (r *ScoreRange) gteMin(score float64) bool {
	if r.MinEx {
		return score > r.Min
	}
	return score >= r.Min
}

// lteMax reports whether score is at or below the range's upper bound.
func (r *ScoreRange) lteMax(score float64) bool {
	if r.MaxEx {
		return score < r.Max
	}
	return score <= r.Max
}

// Contains reports whether score is in the range.
func (r *ScoreRange) Contains(score float64) bool { return r.gteMin(score) && r.lteMax(score) }

// Empty reports whether no score can be in the range.
func (r *ScoreRange) Empty() bool {
	return r.Min > r.Max || (r.Min == r.Max && (r.MinEx || r.MaxEx))
}

// LexBound is one end of a ZRANGEBYLEX interval: "-" (Inf -1, below every
// string), "+" (Inf +1, above every string), or a member, inclusive ("[")
// or exclusive ("(").
type LexBound struct {
	Value     string
	Exclusive bool
	Inf       int
}

// LexRange is a ZRANGEBYLEX interval.
type LexRange struct{ Min, Max LexBound }

// cmpBound compares member with a bound's value: -1, 0 or 1 as member
// sorts before, at or after it (a ±inf bound is never equal).
func cmpBound(member string, b *LexBound) int {
	switch {
	case b.Inf < 0:
		return 1
	case b.Inf > 0:
		return -1
	case member < b.Value:
		return -1
	case member > b.Value:
		return 1
	}
	return 0
}

// gteMin reports whether member is at or above the lower bound.
func (r *LexRange) gteMin(member string) bool {
	c := cmpBound(member, &r.Min)
	return c > 0 || c == 0 && !r.Min.Exclusive
}

// lteMax reports whether member is at or below the upper bound.
func (r *LexRange) lteMax(member string) bool {
	c := cmpBound(member, &r.Max)
	return c < 0 || c == 0 && !r.Max.Exclusive
}

// Contains reports whether member is in the range.
func (r *LexRange) Contains(member string) bool { return r.gteMin(member) && r.lteMax(member) }

// Empty reports whether no member can be in the range.
func (r *LexRange) Empty() bool {
	lo, hi := &r.Min, &r.Max
	switch {
	case lo.Inf > 0 || hi.Inf < 0:
		return true
	case lo.Inf < 0 || hi.Inf > 0:
		return false
	case lo.Value > hi.Value:
		return true
	}
	return lo.Value == hi.Value && (lo.Exclusive || hi.Exclusive)
}

// Ranges of store keys known to hold no live record, and what that
// knowledge rests on: the consumed parts of sorted sets, hashes and sets
// (zsetBounds in zset.go, collHoles in coll.go).

// holeSet is the known holes of one version's field records: sorted,
// disjoint, never touching, [start, end) of whole field keys.
type holeSet struct {
	holes []hole
	claim pendingClaim
}

type hole struct{ start, end []byte }

// pendingClaim is what in-memory knowledge of the store rests on: when seq
// is not 0, the removals of transaction seq, which hold only if it
// committed; probe is a record it deleted, absent from the committed
// store iff it did.
type pendingClaim struct {
	seq   uint64
	probe []byte
}

// settle reports whether the claims hold for tx: they rest on committed
// writes (checking, once, a transaction that has ended), or on tx's own.
func (p *pendingClaim) settle(tx *Tx) bool {
	if p.seq == 0 || p.seq == tx.TxID() {
		return true
	}
	_, found, err := tx.e.cold.Get(p.probe, nil)
	if err != nil || found {
		return false
	}
	p.seq, p.probe = 0, nil
	return true
}

// dependOn records that the claims now rest on tx's removal of key k.
func (p *pendingClaim) dependOn(tx *Tx, k []byte) {
	if p.seq == 0 {
		p.seq, p.probe = tx.TxID(), append(p.probe[:0], k...)
	}
}

// find returns the index of the hole containing k, or -1.
func (h *holeSet) find(k []byte) int {
	i, _ := slices.BinarySearchFunc(h.holes, k, func(x hole, k []byte) int { return bytes.Compare(x.start, k) })
	// holes[i].start >= k; the hole containing k starts at k or before.
	if i < len(h.holes) && bytes.Equal(h.holes[i].start, k) {
		return i
	}
	if i > 0 && bytes.Compare(k, h.holes[i-1].end) < 0 {
		return i - 1
	}
	return -1
}

// before returns the index of the last hole starting at or before k, or
// of the last hole if there is none (the order wraps around), or -1 when
// there are no holes.
func (h *holeSet) before(k []byte) int {
	i, _ := slices.BinarySearchFunc(h.holes, k, func(x hole, k []byte) int { return bytes.Compare(x.start, k) })
	if i < len(h.holes) && bytes.Equal(h.holes[i].start, k) {
		return i
	}
	if i > 0 {
		return i - 1
	}
	return len(h.holes) - 1
}

// add records that [start, end) holds no live record, merging the holes it
// overlaps or touches. A new hole is not made past maxHoles unless force.
func (h *holeSet) add(start, end []byte, force bool) {
	if bytes.Compare(start, end) >= 0 {
		return
	}
	// First hole ending at or after start, last starting at or before end.
	i := sort.Search(len(h.holes), func(i int) bool { return bytes.Compare(h.holes[i].end, start) >= 0 })
	j := sort.Search(len(h.holes), func(i int) bool { return bytes.Compare(h.holes[i].start, end) > 0 })
	if i >= j { // touches nothing: a new hole at i
		if len(h.holes) >= maxHoles && !force {
			return
		}
		h.holes = slices.Insert(h.holes, i, hole{bytes.Clone(start), bytes.Clone(end)})
		return
	}
	merged := hole{h.holes[i].start, h.holes[j-1].end}
	if bytes.Compare(start, merged.start) < 0 {
		merged.start = bytes.Clone(start)
	}
	if bytes.Compare(end, merged.end) > 0 {
		merged.end = bytes.Clone(end)
	}
	h.holes[i] = merged
	h.holes = slices.Delete(h.holes, i+1, j)
}

// cut forgets whatever hole holds k: a record was written there.
func (h *holeSet) cut(k []byte) {
	if i := h.find(k); i >= 0 {
		h.holes = slices.Delete(h.holes, i, i+1)
	}
}
