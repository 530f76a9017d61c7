package tiering

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/coldstore"
)

// A sorted set is stored as two records per member under its version: a
// member record (DataPrefix | 'f' | hash | member -> encoded score), for
// ZSCORE and friends, and a score-index record (DataPrefix | 's' | score |
// member), ordered by score then member as Redis orders a sorted set. Range
// reads by score, by lex and by rank are seeks and scans of the score
// index, so a cold sorted set is never loaded to answer them.
//
// In memory a sorted set up to zsetWholeMembers members and
// zsetWholeBytes is held whole: a map from member to score and a skiplist
// with spans (O(log n) insert, delete and rank). A bigger one is always
// served from the store.
const (
	zsetWholeMembers = 4096
	zsetWholeBytes   = 1 << 20
	// zsetDictOverhead approximates a member's map entry (slot and string
	// header; the member's bytes are shared with its skiplist node).
	zsetDictOverhead = 40
)

// zsetMem is the hot copy of a sorted set.
type zsetMem struct {
	dict map[string]float64
	zsl  *zsl
}

func newZSetMem(n int) *zsetMem {
	return &zsetMem{dict: make(map[string]float64, n), zsl: newZSL()}
}

func (m *zsetMem) size() int64 { return m.zsl.size() + int64(len(m.dict))*zsetDictOverhead }

// zsetRecordBytes is what a member weighs in the meta record's byte count:
// its bytes and its 8-byte score.
func zsetRecordBytes(member []byte) int64 { return int64(len(member)) + 8 }

// fitsWholeZSet reports whether a sorted set of e's counts may be held in
// memory.
func (e *Engine) fitsWholeZSet(key []byte, z *Entry) bool {
	if z.Count > zsetWholeMembers || z.Bytes > zsetWholeBytes {
		return false
	}
	size := int64(len(key)) + entryOverhead + z.Bytes + z.Count*coldOverhead(codec.TypeZSet)
	return e.admissionSettings().Fits(size)
}

// loadZSet reads a cold sorted set into memory, in score order.
func (tx *Tx) loadZSet(pdb uint8, key []byte, e *Entry) error {
	z := &ZSet{tx: tx, pdb: pdb, key: key, e: e}
	m := newZSetMem(int(e.Count))
	err := z.scanIndex(nil, false, func(member []byte, score float64) bool {
		s := string(member)
		m.dict[s] = score
		m.zsl.insert(score, s)
		return true
	})
	if err != nil {
		return err
	}
	if int64(len(m.dict)) != e.Count {
		return fmt.Errorf("%w: %q counts %d members, %d indexed", ErrCorrupt, key, e.Count, len(m.dict))
	}
	e.zset = m
	return nil
}

// ZSet is a live sorted set opened by a Tx. Writes go through to the store
// and update the hot copy when there is one; after writing, Close must be
// called to store the meta record or delete the emptied key. Ranks are
// 0-based. Member slices passed to callbacks alias buffers or the hot copy:
// copy them to keep them.
type ZSet struct {
	tx      *Tx
	db      int
	pdb     uint8
	key     []byte
	hk      []byte
	e       *Entry
	created bool
	dirty   bool
	kb, vb  []byte
}

// OpenZSet opens key (database db) as a sorted set, promoting a cold one
// if the promotion policy admits it. A missing key yields nil unless create
// is set; another type yields ErrWrongType.
func (tx *Tx) OpenZSet(db int, key []byte, create bool) (*ZSet, error) {
	e, err := tx.lookup(db, key, codec.TypeZSet)
	if err != nil {
		return nil, err
	}
	switch {
	case e != nil && e.Type != codec.TypeZSet:
		return nil, ErrWrongType
	case e == nil && !create:
		return nil, nil
	}
	z := tx.PeekZSet(db, key, e)
	if e == nil {
		return z, tx.initZSet(z)
	}
	return z, nil
}

// PeekZSet wraps an entry returned by Peek (a sorted set) for reading
// without promotion.
func (tx *Tx) PeekZSet(db int, key []byte, e *Entry) *ZSet {
	if tx.zsetsUsed == len(tx.zsets) {
		tx.zsets = append(tx.zsets, new(ZSet))
	}
	z := tx.zsets[tx.zsetsUsed]
	tx.zsetsUsed++
	pdb := tx.pdb(db)
	*z = ZSet{tx: tx, db: db, pdb: pdb, key: key, hk: hotKey(z.hk, pdb, key), e: e, kb: z.kb[:0], vb: z.vb[:0]}
	return z
}

// CreateZSet replaces whatever key holds with an empty sorted set, for the
// commands that store a result (ZUNIONSTORE...): fill it, then Close it;
// an empty result deletes key.
func (tx *Tx) CreateZSet(db int, key []byte) (*ZSet, error) {
	pdb := tx.pdb(db)
	old, _, err := tx.live(pdb, key)
	if err != nil {
		return nil, err
	}
	if old != nil {
		if err := tx.remove(pdb, key, old); err != nil {
			return nil, err
		}
	}
	z := tx.PeekZSet(db, key, nil)
	return z, tx.initZSet(z)
}

func (tx *Tx) initZSet(z *ZSet) error {
	v, err := tx.e.cold.NextVersion()
	if err != nil {
		return fmt.Errorf("tiering: new zset: %w", err)
	}
	z.e = &Entry{Type: codec.TypeZSet, Version: v, zset: newZSetMem(0)}
	z.created = true
	return nil
}

// Len returns the number of members.
func (z *ZSet) Len() int64 { return z.e.Count }

// Hot reports whether the sorted set is held in memory.
func (z *ZSet) Hot() bool { return z.e.zset != nil }

func (z *ZSet) memberKey(member []byte) []byte {
	z.kb = codec.AppendFieldKey(z.kb[:0], z.pdb, z.key, z.e.Version, member)
	return z.kb
}

func (z *ZSet) scoreKey(score float64, member []byte) ([]byte, error) {
	var err error
	z.kb, err = codec.AppendScoreKey(z.kb[:0], z.pdb, z.key, z.e.Version, score, member)
	return z.kb, err
}

// Score returns member's score and whether it is a member.
func (z *ZSet) Score(member []byte) (float64, bool, error) {
	if m := z.e.zset; m != nil {
		s, ok := m.dict[view(member)]
		return s, ok, nil
	}
	return z.storedScore(member, false)
}

// storedScore reads member's record; probe (for writes, whose member is
// often new) lets the store rule a missing one out by its bloom filters.
func (z *ZSet) storedScore(member []byte, probe bool) (float64, bool, error) {
	if z.created {
		return 0, false, nil
	}
	read := z.tx.batch.GetData
	if probe {
		read = z.tx.batch.ProbeData
	}
	buf, found, err := read(z.memberKey(member), z.vb)
	z.vb = buf
	if err != nil || !found {
		return 0, false, err
	}
	s, err := codec.ParseMemberScore(buf)
	if err != nil {
		return 0, false, fmt.Errorf("tiering: %q member %q: %w", z.key, member, err)
	}
	return s, true, nil
}

// Add sets member's score (never NaN; -0 is stored as 0) and reports
// whether member is new.
func (z *ZSet) Add(member []byte, score float64) (bool, error) {
	old, found, err := z.Lookup(member)
	if err != nil {
		return false, err
	}
	return !found, z.Put(member, score, old, found)
}

// Lookup is Score for a command about to write member: a cold member is
// probed with the store's bloom filters (new members are common).
func (z *ZSet) Lookup(member []byte) (float64, bool, error) {
	if m := z.e.zset; m != nil {
		s, ok := m.dict[view(member)]
		return s, ok, nil
	}
	return z.storedScore(member, true)
}

// Put sets member's score, given what Lookup returned for it (old, found),
// so that a read-modify-write (ZADD's options, ZINCRBY) reads once.
func (z *ZSet) Put(member []byte, score, old float64, found bool) error {
	e := z.e
	if !found && !e.ZSkip && (e.Count+1 > CompactZSetMembers || len(member) > CompactZSetMember) {
		e.ZSkip = true // Redis converts to a skiplist, for good
	}
	if score == 0 && !e.ZSkip {
		score = 0 // the compact encoding has no -0
	}
	if found && old == score {
		return nil // as Redis: 0 and -0 are the same score, no update
	}
	b := z.tx.batch
	if found {
		k, err := z.scoreKey(old, member)
		if err != nil {
			return err
		}
		if err := b.Delete(k); err != nil {
			return err
		}
	} else {
		e.Count++
		e.Bytes += zsetRecordBytes(member)
	}
	k, err := z.scoreKey(score, member)
	if err != nil {
		return err
	}
	if err := b.Set(k, indexValue(score)); err != nil {
		return err
	}
	z.vb, err = codec.AppendMemberScore(z.vb[:0], score)
	if err != nil {
		return err
	}
	if err := b.Set(z.memberKey(member), z.vb); err != nil {
		return err
	}
	if m := e.zset; m != nil {
		if found {
			// Assigning to an existing string key replaces the key too:
			// use the node's own copy, never the caller's buffer.
			n := m.zsl.updateScore(old, view(member), score)
			m.dict[n.member] = score
		} else {
			s := string(member)
			m.zsl.insert(score, s)
			m.dict[s] = score
		}
	}
	z.dirty = true
	return nil
}

// indexValue is the value of score's index record: it marks a -0.
func indexValue(score float64) []byte {
	if score == 0 && math.Signbit(score) {
		return codec.NegZeroMark
	}
	return nil
}

// Compact-encoding limits of Redis 7.0's sorted sets
// (zset-max-listpack-entries, zset-max-listpack-value).
const (
	CompactZSetMembers = 128
	CompactZSetMember  = 64
)

// Skiplist reports whether Redis would hold this set in its skiplist
// encoding (see codec.ZSetSkiplist).
func (z *ZSet) Skiplist() bool { return z.e.ZSkip }

// SetSkiplist chooses the encoding of a set this command created, before
// anything is added (Redis picks it from the command's size hint).
func (z *ZSet) SetSkiplist(skiplist bool) {
	if z.created && z.e.Count == 0 {
		z.e.ZSkip = skiplist
	}
}

// Rem removes member and reports whether it was there.
func (z *ZSet) Rem(member []byte) (bool, error) {
	score, found, err := z.Score(member)
	if err != nil || !found {
		return false, err
	}
	return true, z.remKnown(member, score)
}

// remKnown removes member, whose score the caller read.
func (z *ZSet) remKnown(member []byte, score float64) error {
	e := z.e
	k, err := z.scoreKey(score, member)
	if err != nil {
		return err
	}
	if err := z.tx.batch.Delete(k); err != nil {
		return err
	}
	if err := z.tx.batch.Delete(z.memberKey(member)); err != nil {
		return err
	}
	if m := e.zset; m != nil {
		m.zsl.delete(score, view(member))
		delete(m.dict, view(member))
	}
	e.Count--
	e.Bytes -= zsetRecordBytes(member)
	z.dirty = true
	return nil
}

// Member is a member and its score, copied out of the set.
type Member struct {
	Member string
	Score  float64
}

// RemoveAll removes the given members (read from this set, with their
// scores).
func (z *ZSet) RemoveAll(ms []Member) error {
	for _, m := range ms {
		if err := z.remKnown(bytesOf(m.Member), m.Score); err != nil {
			return err
		}
	}
	return nil
}

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
	it, err := z.tx.batch.NewIter(lo, codec.PrefixEnd(lo))
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

// Close stores the sorted set's meta record after writes, or deletes the
// key if it was emptied. It keeps the hot tier's accounting right: a set
// that outgrew what may be held in memory is demoted.
// Closing a nil handle (a key that was not there) does nothing.
func (z *ZSet) Close() error {
	if z == nil || !z.dirty {
		return nil
	}
	z.dirty = false
	tx, e := z.tx, z.e
	tx.hk = append(tx.hk[:0], z.hk...)
	if e.Count == 0 {
		if z.created {
			return nil
		}
		z.created = true
		return tx.remove(z.pdb, z.key, e)
	}
	if err := tx.putMeta(z.pdb, z.key, e); err != nil {
		return err
	}
	if z.created {
		z.created = false
		tx.addKeys(z.pdb, 1)
		tx.NoteReady(z.db, z.key)
	}
	if e.zset == nil {
		return nil
	}
	if !tx.settleHot(z.hk, z.key, e, tx.e.fitsWholeZSet(z.key, e)) {
		e.zset = nil
	}
	return nil
}

// duplicateZSet writes a copy of sorted set e (src) as dst's records under
// version v and returns the new entry (in memory if e is).
func (tx *Tx) duplicateZSet(psrc uint8, src []byte, e *Entry, pdst uint8, dst []byte, v uint64) (*Entry, error) {
	ne := &Entry{Type: e.Type, ExpireAt: e.ExpireAt, Version: v, Count: e.Count, Bytes: e.Bytes, ZSkip: e.ZSkip}
	if e.zset != nil {
		ne.zset = newZSetMem(int(e.Count))
	}
	from := &ZSet{tx: tx, pdb: psrc, key: src, e: e}
	to := &ZSet{tx: tx, pdb: pdst, key: dst, e: ne}
	var werr error
	err := from.Members(func(member []byte, score float64) bool {
		var k []byte
		if k, werr = to.scoreKey(score, member); werr != nil {
			return false
		}
		if werr = tx.batch.Set(k, indexValue(score)); werr != nil {
			return false
		}
		to.vb, _ = codec.AppendMemberScore(to.vb[:0], score)
		if werr = tx.batch.Set(to.memberKey(member), to.vb); werr != nil {
			return false
		}
		if ne.zset != nil {
			s := string(member)
			ne.zset.dict[s] = score
			ne.zset.zsl.insert(score, s)
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return ne, err
}
