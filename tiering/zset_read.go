package tiering

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/coldstore"
)

// Reads of a sorted set (see zset.go for how one is stored): ZRANK, the
// ranges by rank, score and lex and their counts, iteration in order,
// ZSCAN and ZRANDMEMBER.

// Rank returns member's rank (0-based, from the highest score if rev) and
// score. Cold, it counts the index records before (after) the member.
func (z *ZSet) Rank(member []byte, rev bool) (int64, float64, bool, error) {
	score, found, err := z.Score(member)
	if err != nil || !found {
		return 0, 0, false, err
	}
	if m := z.e.zset; m != nil {
		r := int64(m.zsl.rank(score, view(member))) - 1
		if rev {
			r = z.e.Count - 1 - r
		}
		return r, score, true, nil
	}
	var n int64
	target := string(member)
	err = z.scanIndex(nil, rev, func(mb []byte, s float64) bool {
		if s == score && string(mb) == target {
			return false
		}
		n++
		return true
	})
	return n, score, true, err
}

// RangeByRank calls fn for ranks start..stop (0 <= start <= stop < Len), in
// score order or, if rev, from the highest, until fn returns false.
func (z *ZSet) RangeByRank(start, stop int64, rev bool, fn func(member []byte, score float64) bool) error {
	if m := z.e.zset; m != nil {
		var n *zslNode
		if rev {
			n = m.zsl.byRank(int(z.e.Count - start))
		} else {
			n = m.zsl.byRank(int(start + 1))
		}
		for i := start; i <= stop && n != nil; i++ {
			if !fn(bytesOf(n.member), n.score) {
				return nil
			}
			if rev {
				n = n.prev()
			} else {
				n = n.next()
			}
		}
		return nil
	}
	if last := z.e.Count - 1; start > last-stop {
		// Nearer the other end: scan from there and emit in reverse.
		var ms []Member
		i := int64(0)
		err := z.scanIndex(nil, !rev, func(member []byte, score float64) bool {
			if i >= last-stop {
				ms = append(ms, Member{Member: string(member), Score: score})
			}
			i++
			return i <= last-start
		})
		for k := len(ms) - 1; k >= 0 && err == nil; k-- {
			if !fn(bytesOf(ms[k].Member), ms[k].Score) {
				break
			}
		}
		return err
	}
	i := int64(0)
	return z.scanIndex(nil, rev, func(member []byte, score float64) bool {
		if i >= start && !fn(member, score) {
			return false
		}
		i++
		return i <= stop
	})
}

// RangeByScore calls fn for the members in r, in score order or, if rev,
// from the highest, skipping the first offset and stopping after limit
// (limit < 0: no limit) or when fn returns false. Cold, it is a seek of
// the score index and a scan of offset+limit records.
func (z *ZSet) RangeByScore(r *ScoreRange, rev bool, offset, limit int64, fn func(member []byte, score float64) bool) error {
	if r.Empty() || limit == 0 {
		return nil
	}
	emit := limiter(offset, limit, fn)
	if m := z.e.zset; m != nil {
		if rev {
			for n := m.zsl.lastInRange(r); n != nil && r.gteMin(n.score); n = n.prev() {
				if !emit(bytesOf(n.member), n.score) {
					return nil
				}
			}
			return nil
		}
		for n := m.zsl.firstInRange(r); n != nil && r.lteMax(n.score); n = n.next() {
			if !emit(bytesOf(n.member), n.score) {
				return nil
			}
		}
		return nil
	}
	// Seek to the first key of the bound's score, or past all of them
	// when the bound is exclusive (forward; the reverse mirrors it).
	bound, past := r.Min, r.MinEx
	if rev {
		bound, past = r.Max, !r.MaxEx
	}
	seek, err := codec.AppendScoreKey(nil, z.pdb, z.key, z.e.Version, bound, nil)
	if err != nil {
		return err
	}
	if past {
		seek = codec.PrefixEnd(seek)
	}
	return z.scanIndex(seek, rev, func(member []byte, score float64) bool {
		if rev {
			if !r.lteMax(score) {
				return true
			}
			if !r.gteMin(score) {
				return false
			}
		} else {
			if !r.gteMin(score) {
				return true
			}
			if !r.lteMax(score) {
				return false
			}
		}
		return emit(member, score)
	})
}

// RangeByLex is RangeByScore for a lexicographic range, meaningful (as in
// Redis) when all members have the same score. Cold, the seek uses the
// score of the first (last, if rev) member.
func (z *ZSet) RangeByLex(r *LexRange, rev bool, offset, limit int64, fn func(member []byte, score float64) bool) error {
	if r.Empty() || limit == 0 || z.e.Count == 0 {
		return nil
	}
	emit := limiter(offset, limit, fn)
	if m := z.e.zset; m != nil {
		if rev {
			for n := m.zsl.lastInLexRange(r); n != nil && r.gteMin(n.member); n = n.prev() {
				if !emit(bytesOf(n.member), n.score) {
					return nil
				}
			}
			return nil
		}
		for n := m.zsl.firstInLexRange(r); n != nil && r.lteMax(n.member); n = n.next() {
			if !emit(bytesOf(n.member), n.score) {
				return nil
			}
		}
		return nil
	}
	bound := &r.Min
	if rev {
		bound = &r.Max
	}
	var seek []byte
	if bound.Inf == 0 {
		var endScore float64
		err := z.scanIndex(nil, rev, func(_ []byte, s float64) bool { endScore = s; return false })
		if err != nil {
			return err
		}
		seek, err = codec.AppendScoreKey(nil, z.pdb, z.key, z.e.Version, endScore, []byte(bound.Value))
		if err != nil {
			return err
		}
		if rev {
			seek = append(seek, 0) // after every member equal to the bound
		}
	}
	return z.scanIndex(seek, rev, func(member []byte, score float64) bool {
		s := view(member)
		if rev {
			if !r.lteMax(s) {
				return true
			}
			if !r.gteMin(s) {
				return false
			}
		} else {
			if !r.gteMin(s) {
				return true
			}
			if !r.lteMax(s) {
				return false
			}
		}
		return emit(member, score)
	})
}

// limiter wraps fn to skip the first offset calls and stop after limit
// (limit < 0: no limit).
func limiter(offset, limit int64, fn func([]byte, float64) bool) func([]byte, float64) bool {
	return func(member []byte, score float64) bool {
		if offset > 0 {
			offset--
			return true
		}
		if !fn(member, score) {
			return false
		}
		if limit > 0 {
			limit--
			return limit > 0
		}
		return true
	}
}

// CountByScore returns the number of members in r: two rank lookups hot,
// a scan of the range cold.
func (z *ZSet) CountByScore(r *ScoreRange) (int64, error) {
	if m := z.e.zset; m != nil {
		if r.Empty() {
			return 0, nil
		}
		first := m.zsl.firstInRange(r)
		if first == nil {
			return 0, nil
		}
		last := m.zsl.lastInRange(r)
		return int64(m.zsl.rank(last.score, last.member) - m.zsl.rank(first.score, first.member) + 1), nil
	}
	var n int64
	err := z.RangeByScore(r, false, 0, -1, func([]byte, float64) bool { n++; return true })
	return n, err
}

// CountByLex returns the number of members in r.
func (z *ZSet) CountByLex(r *LexRange) (int64, error) {
	if m := z.e.zset; m != nil {
		if r.Empty() {
			return 0, nil
		}
		first := m.zsl.firstInLexRange(r)
		if first == nil {
			return 0, nil
		}
		last := m.zsl.lastInLexRange(r)
		if last == nil {
			return 0, nil
		}
		return max(int64(m.zsl.rank(last.score, last.member)-m.zsl.rank(first.score, first.member)+1), 0), nil
	}
	var n int64
	err := z.RangeByLex(r, false, 0, -1, func([]byte, float64) bool { n++; return true })
	return n, err
}

// scanIndex walks the score index from seek (nil: from the start, or the
// end if rev) forward, or backward from just before seek if rev, until fn
// returns false.
func (z *ZSet) scanIndex(seek []byte, rev bool, fn func(member []byte, score float64) bool) error {
	if z.created {
		return nil
	}
	lo := codec.AppendScorePrefix(nil, z.pdb, z.key, z.e.Version)
	// A walk from an end (or from inside the part of it known to be
	// consumed) starts past the consumed part, and records where the first
	// live record was (see zsetBounds).
	b := z.bound()
	fromEnd := seek == nil || atIndexEnd(seek, len(lo), rev)
	switch {
	case b == nil:
	case !rev && b.lo != nil && (fromEnd || bytes.Compare(seek, b.lo) <= 0):
		seek, fromEnd = b.lo, true
	case rev && b.hi != nil && (fromEnd || bytes.Compare(seek, b.hi) >= 0):
		seek, fromEnd = b.hi, true
	}
	learn := fromEnd && z.learnable(b)
	// The iterator is bounded by where the walk starts: it never steps
	// back over it, and the records of the part consumed before it (a
	// queue's pops, pending in the store) then do not make it wait for an
	// application round (coldstore's structSpans).
	lower, upper := lo, codec.PrefixEnd(lo)
	if seek != nil && bytes.HasPrefix(seek, lo) {
		if rev {
			upper = seek
		} else {
			lower = seek
		}
	}
	it, err := z.tx.batch.NewIter(lower, upper)
	if err != nil {
		return err
	}
	defer it.Close()
	var valid bool
	switch {
	case seek == nil && rev:
		valid = it.Last()
	case seek == nil:
		valid = it.First()
	case rev:
		valid = it.SeekLT(seek)
	default:
		valid = it.SeekGE(seek)
	}
	if valid && learn {
		if rev {
			z.learnHi(b, it.Key())
		} else {
			z.learnLo(b, it.Key())
		}
	}
	for ; valid; valid = step(it, rev) {
		score, member, err := codec.ParseScoreRest(it.Key()[len(lo):])
		if err != nil {
			return fmt.Errorf("tiering: %q: %w", z.key, err)
		}
		if score == 0 && len(it.Value()) > 0 {
			score = math.Copysign(0, -1) // marked -0
		}
		if !fn(member, score) {
			return nil
		}
	}
	return it.Error()
}

// atIndexEnd reports whether seek, a score-index key of prefix length
// prefixLen, is at the end a walk starts from: forward, no record sorts
// before it (the -inf score with no member); backward (rev), none at or
// after it (past every +inf member).
func atIndexEnd(seek []byte, prefixLen int, rev bool) bool {
	rest := seek[prefixLen:]
	if !rev {
		return len(rest) == 8 && binary.BigEndian.Uint64(rest) == negInfScore
	}
	// PrefixEnd of the +inf score: its last byte incremented.
	return len(rest) == 8 && binary.BigEndian.Uint64(rest) == posInfScore+1
}

// negInfScore and posInfScore are the index encodings of -inf and +inf.
var negInfScore, posInfScore = mustEncodeScore(math.Inf(-1)), mustEncodeScore(math.Inf(1))

func mustEncodeScore(f float64) uint64 {
	u, err := codec.EncodeScore(f)
	if err != nil {
		panic(err)
	}
	return u
}

func step(it *coldstore.Iter, rev bool) bool {
	if rev {
		return it.Prev()
	}
	return it.Next()
}

// Members calls fn for every member in score order.
func (z *ZSet) Members(fn func(member []byte, score float64) bool) error {
	if z.e.Count == 0 {
		return nil
	}
	return z.RangeByRank(0, z.e.Count-1, false, fn)
}

// coll views the member records as a Coll (field = member, value = the
// encoded score), for scans and random draws by field hash.
func (z *ZSet) coll() *Coll {
	return &Coll{tx: z.tx, pdb: z.pdb, key: z.key, hk: z.hk, e: &Entry{Type: codec.TypeZSet, Version: z.e.Version, Count: z.e.Count}, created: z.created}
}

// Scan is HSCAN for sorted sets: a small hot set is visited whole, others
// by member hash from cursor (see Coll.Scan).
func (z *ZSet) Scan(cursor uint64, count int, fn func(member []byte, score float64)) (uint64, error) {
	if m := z.e.zset; m != nil && z.e.Count <= smallScan {
		for n := m.zsl.first(); n != nil; n = n.next() {
			fn(bytesOf(n.member), n.score)
		}
		return 0, nil
	}
	var perr error
	next, err := z.coll().Scan(cursor, count, func(f, v []byte) {
		s, err := codec.ParseMemberScore(v)
		if err != nil {
			perr = err
			return
		}
		fn(f, s)
	})
	if err == nil {
		err = perr
	}
	return next, err
}

// Random calls fn for n members chosen at random, distinct ones (all if n
// >= Len) when distinct is set, otherwise n independent draws. Hot draws
// are uniform (a random rank); cold ones are by member hash, as for
// hashes.
func (z *ZSet) Random(n int64, distinct bool, fn func(member []byte, score float64)) error {
	if n <= 0 || z.e.Count == 0 {
		return nil
	}
	if distinct && n >= z.e.Count {
		return z.Members(func(m []byte, s float64) bool { fn(m, s); return true })
	}
	if m := z.e.zset; m != nil {
		size := int64(m.zsl.len())
		pick := func(rank int64) { nd := m.zsl.byRank(int(rank + 1)); fn(bytesOf(nd.member), nd.score) }
		if !distinct {
			for range n {
				pick(rand.Int64N(size))
			}
			return nil
		}
		for _, r := range sampleDistinct(size, n) {
			pick(r)
		}
		return nil
	}
	var perr error
	err := z.coll().Random(n, distinct, func(f, v []byte) {
		s, err := codec.ParseMemberScore(v)
		if err != nil {
			perr = err
			return
		}
		fn(f, s)
	})
	if err == nil {
		err = perr
	}
	return err
}
