package tiering

import (
	"bytes"
	"fmt"
	"math"

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
// In memory a sorted set is held whole: a map from member to score and a
// skiplist with spans (O(log n) insert, delete and rank). A cold one is
// promoted (loaded in the command that reads it) only up to
// zsetWholeMembers members and zsetWholeBytes, and only if the promotion
// policy admits its size (fitsWholeZSet); a hot one stays hot as it grows,
// as hashes do, for as long as it weighs at most an eighth of the hot
// budget (Engine.keepHot): writes never demote a set the budget holds.
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
	// stored is what the meta record holds of the fields writes change
	// (count, bytes, encoding), as of the open or the last Close: a Close
	// that finds them unchanged (scores updated in place) writes no meta.
	stored metaFields
}

// OpenZSet opens key (database db) as a sorted set, promoting a cold one
// if the promotion policy admits it. A missing key yields nil unless create
// is set; another type yields ErrWrongType.
func (tx *Tx) OpenZSet(db int, key []byte, create bool) (*ZSet, error) {
	e, err := tx.lookup(db, key, codec.TypeZSet, true)
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
	if e != nil {
		z.stored = metaOf(e)
	}
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
// often new) lets the store rule a missing one out by its bloom filters,
// and reads follow the store's recent field reads (GetField).
func (z *ZSet) storedScore(member []byte, probe bool) (float64, bool, error) {
	if z.created {
		return 0, false, nil
	}
	read := z.tx.batch.GetField
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
		if z.hasBound() {
			z.boundRemoved(k)
		}
	} else {
		e.Count++
		e.Bytes += zsetRecordBytes(member)
	}
	var err error
	// The index record at the new score is new (the old one, if any, is
	// deleted above), the member record too for a new member: the store
	// may drop them with their deletions (coldstore.Batch.SetNew).
	if z.kb, z.vb, err = putZSetMember(b, z.kb, z.vb, z.pdb, z.key, e.Version, member, score, true, !found); err != nil {
		return err
	}
	if z.hasBound() {
		k, err := z.scoreKey(score, member)
		if err != nil {
			return err
		}
		z.boundAdded(k)
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

// putZSetMember writes member's two records at score under (pdb, key,
// version) into b: the score index record (indexValue marks a -0) and the
// member record (the score's bits); newIndex and newMember say that the
// store holds no such record (coldstore.Batch.SetNew's promise). kb and vb
// are scratch buffers returned for reuse. ZSet.Put, duplicateZSet and
// Stage.Member share it: the layout is written in one place. A NaN score
// is an error.
func putZSetMember(b *coldstore.Batch, kb, vb []byte, pdb uint8, key []byte, version uint64, member []byte, score float64, newIndex, newMember bool) ([]byte, []byte, error) {
	kb, err := codec.AppendScoreKey(kb[:0], pdb, key, version, score, member)
	if err != nil {
		return kb, vb, err
	}
	if err := setRecord(b, kb, indexValue(score), newIndex); err != nil {
		return kb, vb, err
	}
	if vb, err = codec.AppendMemberScore(vb[:0], score); err != nil {
		return kb, vb, err
	}
	kb = codec.AppendFieldKey(kb[:0], pdb, key, version, member)
	return kb, vb, setRecord(b, kb, vb, newMember)
}

// setRecord writes a data record with SetNew when the store holds no
// record of key (isNew), else with Set.
func setRecord(b *coldstore.Batch, key, val []byte, isNew bool) error {
	if isNew {
		return b.SetNew(key, val)
	}
	return b.Set(key, val)
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
	if z.hasBound() {
		z.boundRemoved(k)
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
	if err := tx.putMetaIfChanged(z.pdb, z.key, e, &z.stored, z.created); err != nil {
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
	if !tx.settleHot(z.hk, z.key, e, true) {
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
		if to.kb, to.vb, werr = putZSetMember(tx.batch, to.kb, to.vb, pdst, dst, v, member, score, false, false); werr != nil {
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

// A sorted set used as a queue (ZPOPMIN, ZRANGEBYSCORE -inf +inf LIMIT 0 1
// then ZREM) is consumed at one end of its score index. Each removal
// leaves a Pebble tombstone there until compaction drops it, and a walk
// that starts at that end steps over all of them: with nothing else, the
// k-th pop from a cold set costs O(k). zsetBounds remembers, per cold
// sorted set walked from an end, how much of each end is known to hold no
// live index record, so such walks seek past the consumed prefix (or
// suffix) and every pop costs O(1) records. The bounds are hints kept in
// memory only: the store is the authority, a restart forgets them (the
// first walk from an end then learns them again), and a bound that might
// be wrong is dropped, never used.
type zsetBounds struct {
	m map[uint64]*zbound // by version: versions are never reused
}

// maxZBounds caps how many sorted sets have bounds; past it they are all
// forgotten (a queue relearns its bound at its next pop).
const maxZBounds = 1024

// zbound is what is known of one version's score index. Keys are whole
// score-index keys.
type zbound struct {
	lo []byte // no live record sorts before lo (nil: nothing known)
	hi []byte // no live record sorts at or after hi (nil: nothing known)
	// claim: the transaction whose own removals the bounds count on.
	claim pendingClaim
}

// hasBound reports whether z's index has bounds (one map lookup).
func (z *ZSet) hasBound() bool { return z.tx.e.zbounds.m[z.e.Version] != nil }

// bound returns the bounds of z's score index (nil if none are known),
// first checking that the transaction they depend on committed.
func (z *ZSet) bound() *zbound {
	bs := &z.tx.e.zbounds
	b := bs.m[z.e.Version]
	if b == nil {
		return nil
	}
	if !b.claim.settle(z.tx) { // it aborted (or we cannot tell)
		delete(bs.m, z.e.Version)
		return nil
	}
	return b
}

// learnable reports whether what a walk of z's index sees may be
// recorded: it sees the committed store (nothing written yet), or writes
// of the one transaction the bounds already depend on.
func (z *ZSet) learnable(b *zbound) bool {
	return z.tx.batch.Empty() || b != nil && b.claim.seq == z.tx.TxID()
}

// learnLo records that first is the least live index record of z.
func (z *ZSet) learnLo(b *zbound, first []byte) {
	if b == nil {
		b = z.newBound()
	}
	b.lo = append(b.lo[:0], first...)
}

// learnHi records that last is the greatest live index record of z.
func (z *ZSet) learnHi(b *zbound, last []byte) {
	if b == nil {
		b = z.newBound()
	}
	b.hi = append(append(b.hi[:0], last...), 0)
}

func (z *ZSet) newBound() *zbound {
	bs := &z.tx.e.zbounds
	if bs.m == nil || len(bs.m) >= maxZBounds {
		bs.m = make(map[uint64]*zbound)
	}
	b := &zbound{}
	bs.m[z.e.Version] = b
	return b
}

// boundRemoved keeps the bounds right after index record k was deleted:
// an end that stood at k moves past it, for as long as this transaction
// commits.
func (z *ZSet) boundRemoved(k []byte) {
	b := z.bound()
	if b == nil {
		return
	}
	moved := false
	if bytes.Equal(b.lo, k) {
		b.lo = append(b.lo, 0)
		moved = true
	}
	if len(b.hi) == len(k)+1 && b.hi[len(k)] == 0 && bytes.Equal(b.hi[:len(k)], k) {
		b.hi = b.hi[:len(k)]
		moved = true
	}
	if moved {
		b.claim.dependOn(z.tx, k)
	}
}

// boundAdded keeps the bounds right after index record k was written:
// an end beyond k moves back to it (which holds whatever happens to the
// transaction).
func (z *ZSet) boundAdded(k []byte) {
	b := z.bound()
	if b == nil {
		return
	}
	if b.lo != nil && bytes.Compare(k, b.lo) < 0 {
		b.lo = append(b.lo[:0], k...)
	}
	if b.hi != nil && bytes.Compare(k, b.hi) >= 0 {
		b.hi = append(append(b.hi[:0], k...), 0)
	}
}
