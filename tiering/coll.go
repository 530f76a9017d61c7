package tiering

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"unsafe"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/coldstore"
)

// ErrWrongType is returned when a key holds another type than the command
// works on. Its text is Redis's reply.
var ErrWrongType = errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")

// Coll is a live hash or set opened by a Tx: one record per field in the
// cold store, and, when the structure is hot, a decoded copy in memory.
//
// Reads of a hot structure never touch the store. Reads of a cold one are
// point lookups or bounded iterations of its field records: the structure
// is never loaded to answer them. Writes go through to the store field by
// field (so they cost in proportion to the fields touched, hot or cold) and
// update the hot copy when there is one. After writing, Close must be
// called to store the meta record (count, bytes) or delete the emptied key.
//
// A Coll is valid until its Tx ends. Byte slices it returns alias its
// buffers or the hot copy: read them before the next call, never modify
// them.
type Coll struct {
	tx      *Tx
	pdb     uint8
	key     []byte
	hk      []byte
	e       *Entry
	created bool // not stored yet: created by this open
	dirty   bool
	fk      []byte
	vb      []byte
	stored  metaFields // see ZSet.stored
}

// OpenColl opens key (database db) as a structure of type t. A cold
// structure is promoted if the promotion policy admits it. If key does not
// exist it returns nil, unless create is set, in which case it returns an
// empty structure that is stored on Close if anything was added. A key of
// another type yields ErrWrongType.
func (tx *Tx) OpenColl(db int, key []byte, t codec.Type, create bool) (*Coll, error) {
	e, err := tx.lookup(db, key, t, true)
	if err != nil {
		return nil, err
	}
	pdb := tx.pdb(db)
	c := tx.coll(pdb, key, e)
	switch {
	case e != nil && e.Type != t:
		return nil, ErrWrongType
	case e != nil:
		return c, nil
	case !create:
		return nil, nil
	}
	return tx.newColl(c, t)
}

// PeekColl wraps an entry returned by Peek (a hash or set) for reading
// without promotion.
func (tx *Tx) PeekColl(db int, key []byte, e *Entry) *Coll {
	pdb := tx.pdb(db)
	return tx.coll(pdb, key, e)
}

// coll returns a Coll for key from the transaction's pool: handles and
// their buffers are reused across commands, so opening a hot structure
// allocates nothing. The pool is rewound when the next transaction begins.
func (tx *Tx) coll(pdb uint8, key []byte, e *Entry) *Coll {
	if tx.collsUsed == len(tx.colls) {
		tx.colls = append(tx.colls, new(Coll))
	}
	c := tx.colls[tx.collsUsed]
	tx.collsUsed++
	*c = Coll{tx: tx, pdb: pdb, key: key, hk: hotKey(c.hk, pdb, key), e: e, fk: c.fk[:0], vb: c.vb[:0]}
	if e != nil {
		c.stored = metaOf(e)
	}
	return c
}

// newColl makes c a fresh, empty structure of type t under a new version.
func (tx *Tx) newColl(c *Coll, t codec.Type) (*Coll, error) {
	v, err := tx.e.cold.NextVersion()
	if err != nil {
		return nil, fmt.Errorf("tiering: new %s: %w", t, err)
	}
	c.e = &Entry{Type: t, Version: v, fields: newFieldMap(0)}
	c.created = true
	return c, nil
}

// CreateColl replaces whatever key holds (any type, its expiry included)
// with an empty structure of type t, for commands that store a result
// (SINTERSTORE...). Fill it, then Close it: an empty result deletes key.
func (tx *Tx) CreateColl(db int, key []byte, t codec.Type) (*Coll, error) {
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
	return tx.newColl(tx.coll(pdb, key, nil), t)
}

// Len returns the number of fields.
func (c *Coll) Len() int64 { return c.e.Count }

// Resident reports whether the structure is held hot.
func (c *Coll) Resident() bool { return c.e.resident() }

// ExpireAt returns the structure's expiry (unix ms, 0 for none).
func (c *Coll) ExpireAt() int64 { return c.e.ExpireAt }

func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

func (c *Coll) fieldKey(field []byte) []byte {
	c.fk = codec.AppendFieldKey(c.fk[:0], c.pdb, c.key, c.e.Version, field)
	return c.fk
}

// Get returns field's value and whether it exists.
func (c *Coll) Get(field []byte) ([]byte, bool, error) {
	if c.e.resident() {
		v, ok := c.e.fields.get(field)
		return bytesOf(v), ok, nil
	}
	return c.readStored(field, false)
}

// probe is Get's store read for a write, whose field is often new: it lets
// the store rule a missing field out by its bloom filters.
func (c *Coll) probe(field []byte) ([]byte, bool, error) {
	return c.readStored(field, true)
}

// readStored reads field's record from the store, probing (ProbeData)
// when a miss is likely, else as the store's recent field reads say
// (GetField).
func (c *Coll) readStored(field []byte, probe bool) ([]byte, bool, error) {
	if c.created {
		return nil, false, nil
	}
	read := c.tx.batch.GetField
	if probe {
		read = c.tx.batch.ProbeData
	}
	buf, found, err := read(c.fieldKey(field), c.vb)
	c.vb = buf
	if err != nil {
		return nil, false, fmt.Errorf("tiering: read field of %q: %w", c.key, err)
	}
	return buf, found, nil
}

// Has reports whether field exists.
func (c *Coll) Has(field []byte) (bool, error) {
	_, ok, err := c.Get(field)
	return ok, err
}

// Set stores field = val (sets: val nil) and reports whether field is new.
// A field that already holds val is not written again (its record holds
// the same bytes), but the structure still counts as written: Close
// reports the key modified, as Redis's HSET signals it.
func (c *Coll) Set(field, val []byte) (bool, error) {
	e := c.e
	var created bool
	if e.resident() {
		f := e.fields
		var changed bool
		created, changed = f.put(field, val)
		if !changed {
			c.dirty = c.dirty || e.Type != codec.TypeSet // a member already: nothing at all
			return false, nil
		}
		e.Count, e.Bytes = int64(f.len()), f.bytes
	} else {
		if e.loading != nil && e.loading.covers(field) {
			e.fields.set(field, val)
		}
		old, found, err := c.probe(field)
		if err != nil {
			return false, err
		}
		created = !found
		if found && e.Type != codec.TypeSet && bytes.Equal(old, val) {
			c.dirty = true
			return false, nil
		}
		if found {
			e.Bytes -= int64(len(old))
		} else {
			e.Count++
			e.Bytes += int64(len(field))
		}
		e.Bytes += int64(len(val))
	}
	if !created && e.Type == codec.TypeSet {
		return false, nil // already a member: nothing changes
	}
	c.dirty = true
	var err error
	// A created field's record is new to the store (coldstore.Batch.SetNew).
	if c.fk, err = putField(c.tx.batch, c.fk, c.pdb, c.key, e.Version, field, val, created); err != nil {
		return false, err
	}
	if created && c.hasHoles() {
		c.fieldWritten(c.fk)
	}
	return created, nil
}

// putField writes the record of a hash's field = val (a set's member:
// val empty) under (pdb, key, version) into b, kb being a scratch buffer
// returned for reuse; isNew says that the store holds no record of the
// field (coldstore.Batch.SetNew's promise). Coll.Set, duplicate and
// Stage.Field share it: the layout is written in one place.
func putField(b *coldstore.Batch, kb []byte, pdb uint8, key []byte, version uint64, field, val []byte, isNew bool) ([]byte, error) {
	kb = codec.AppendFieldKey(kb[:0], pdb, key, version, field)
	return kb, setRecord(b, kb, val, isNew)
}

// fieldBytes is what a field adds to its structure's bytes (Entry.Bytes).
func fieldBytes(field, val []byte) int64 { return int64(len(field) + len(val)) }

// Del removes field and reports whether it existed.
func (c *Coll) Del(field []byte) (bool, error) {
	e := c.e
	if e.resident() {
		f := e.fields
		if !f.del(field) {
			return false, nil
		}
		e.Count, e.Bytes = int64(f.len()), f.bytes
	} else {
		if e.loading != nil && e.loading.covers(field) {
			e.fields.del(field)
		}
		old, found, err := c.Get(field)
		if err != nil || !found {
			return false, err
		}
		e.Count--
		e.Bytes -= int64(len(field) + len(old))
	}
	c.dirty = true
	if err := c.tx.batch.Delete(c.fieldKey(field)); err != nil {
		return false, err
	}
	if c.hasHoles() {
		c.fieldDeleted(c.fk)
	}
	return true, nil
}

// Close stores the structure's meta record after writes, or deletes the key
// if it was emptied (Redis never keeps an empty hash or set). It keeps the
// hot tier's accounting right; a structure that outgrew the hot tier's
// share (Engine.keepHot) is demoted when the transaction ends (Tx.outgrew).
// Closing a nil handle (a key that was not there) does nothing.
func (c *Coll) Close() error {
	if c == nil || !c.dirty {
		return nil
	}
	c.dirty = false
	tx, e := c.tx, c.e
	tx.hk = append(tx.hk[:0], c.hk...)
	if e.Count == 0 {
		if c.created {
			return nil
		}
		c.created = true // the key is gone; a later write recreates it
		return tx.remove(c.pdb, c.key, e)
	}
	if err := tx.putMetaIfChanged(c.pdb, c.key, e, &c.stored, c.created); err != nil {
		return err
	}
	if c.created {
		c.created = false
		tx.addKeys(c.pdb, 1)
		if tx.e.keepHot(entrySize(c.key, e)) {
			e.access = tx.now
			tx.e.hot.put(c.hk, e)
		} else {
			e.fields = nil
		}
		return nil
	}
	if e.fields != nil { // resident or being promoted
		tx.e.hot.resize(c.hk, e)
		if !tx.e.keepHot(e.size) {
			tx.outgrew(e) // demoted when the transaction ends
		}
	}
	return nil
}

// iter returns an iterator over the structure's field records, in hash
// order, seeing the transaction's writes.
func (c *Coll) iter() (*coldstore.Iter, []byte, error) {
	lo := codec.AppendFieldPrefix(nil, c.pdb, c.key, c.e.Version)
	it, err := c.tx.batch.NewIter(lo, codec.PrefixEnd(lo))
	return it, lo, err
}

// fieldOf splits the current record of a field iterator.
func fieldOf(it *coldstore.Iter, prefixLen int) (hash uint32, field, val []byte, err error) {
	hash, field, err = codec.ParseFieldRest(it.Key()[prefixLen:])
	if err != nil {
		return 0, nil, nil, err
	}
	val, err = it.ValueAndErr()
	return hash, field, val, err
}

// Each calls fn for every field until fn returns false: from memory for a
// hot structure, streamed from the store for a cold one. fn must not write
// to the structure.
func (c *Coll) Each(fn func(field, val []byte) bool) error {
	if c.e.resident() {
		f := c.e.fields
		for i := range f.names {
			if !fn(bytesOf(f.names[i]), bytesOf(f.vals[i])) {
				return nil
			}
		}
		return nil
	}
	if c.created {
		return nil
	}
	it, lo, err := c.iter()
	if err != nil {
		return err
	}
	defer it.Close()
	for valid := it.First(); valid; valid = it.Next() {
		_, field, val, err := fieldOf(it, len(lo))
		if err != nil {
			return fmt.Errorf("tiering: %q: %w", c.key, err)
		}
		if !fn(field, val) {
			return nil
		}
	}
	return it.Error()
}

// smallScan is the size up to which a hot structure is returned whole by
// one HSCAN/SSCAN call, as Redis does for its compact encodings.
const smallScan = 128

// Scan visits about count fields from cursor, in field-hash order, always
// finishing a run of fields with the same hash, and returns the cursor to
// continue from (0 when done). The cursor is a field hash (32 bits, so
// below 2^53 as clients reading cursors as doubles need), so it stays
// valid across writes and tier moves: a field present for a whole
// iteration is returned at least once. A small hot structure is visited
// whole in one call; a cursor above 32 bits, which Scan never returns,
// ends the walk.
func (c *Coll) Scan(cursor uint64, count int, fn func(field, val []byte)) (uint64, error) {
	if c.e.resident() && c.e.Count <= smallScan || c.created {
		return 0, c.Each(func(f, v []byte) bool { fn(f, v); return true })
	}
	if cursor > 0xffffffff {
		return 0, nil
	}
	if count <= 0 {
		count = 10
	}
	it, lo, err := c.iter()
	if err != nil {
		return 0, err
	}
	defer it.Close()
	seek := codec.AppendFieldHashKey(nil, c.pdb, c.key, c.e.Version, uint32(cursor))
	visited := 0
	var last uint32
	for valid := it.SeekGE(seek); valid; valid = it.Next() {
		h, field, val, err := fieldOf(it, len(lo))
		if err != nil {
			return 0, fmt.Errorf("tiering: %q: %w", c.key, err)
		}
		if visited >= count && h != last {
			return uint64(h), nil
		}
		visited++
		last = h
		fn(field, val)
	}
	return 0, it.Error()
}

// Random calls fn for n fields chosen at random: distinct ones (all of
// them if n >= Len) when distinct is set, otherwise n independent draws
// that may repeat. For a cold structure, a distinct sample is a run of n
// consecutive fields from a random point of the hash order (the
// structure is not loaded), and each independent draw is one seek.
func (c *Coll) Random(n int64, distinct bool, fn func(field, val []byte)) error {
	if n <= 0 || c.e.Count == 0 {
		return nil
	}
	all := distinct && n >= c.e.Count
	if all && (c.e.resident() || c.created) {
		return c.Each(func(f, v []byte) bool { fn(f, v); return true })
	}
	if c.e.resident() {
		return c.randomHot(c.e.fields, n, distinct, fn)
	}
	it, lo, err := c.iter()
	if err != nil {
		return err
	}
	defer it.Close()
	w := c.holeWalker(it, lo)
	seek := func() (bool, error) {
		k := codec.AppendFieldHashKey(nil, c.pdb, c.key, c.e.Version, rand.Uint32())
		if all { // every field, in hash order (as Each), past the holes
			k, n = lo, c.e.Count
		}
		return w.seek(k, !all), it.Error()
	}
	emit := func() error {
		_, field, val, err := fieldOf(it, len(lo))
		if err != nil {
			return fmt.Errorf("tiering: %q: %w", c.key, err)
		}
		fn(field, val)
		return nil
	}
	valid, err := seek()
	for i := int64(0); i < n; i++ {
		if err != nil {
			return err
		}
		if !valid {
			return fmt.Errorf("tiering: %q: %d fields counted, none found", c.key, c.e.Count)
		}
		if err := emit(); err != nil {
			return err
		}
		switch {
		case i+1 == n: // done: no step past the last one
		case distinct:
			valid = w.next()
			err = it.Error()
		default:
			valid, err = seek()
		}
	}
	return err
}

func (c *Coll) randomHot(f *fieldMap, n int64, distinct bool, fn func(field, val []byte)) error {
	size := int64(f.len())
	if !distinct {
		for range n {
			i := f.random()
			fn(bytesOf(f.names[i]), bytesOf(f.vals[i]))
		}
		return nil
	}
	for _, p := range sampleDistinct(size, n) {
		fn(bytesOf(f.names[p]), bytesOf(f.vals[p]))
	}
	return nil
}

// sampleDistinct returns n distinct positions of 0..size-1 (n < size) in
// random order: a partial shuffle when n is a large part of size, rejection
// of repeats otherwise.
func sampleDistinct(size, n int64) []int64 {
	out := make([]int64, 0, n)
	if n*3 > size {
		perm := make([]int64, size)
		for i := range perm {
			perm[i] = int64(i)
		}
		for i := int64(0); i < n; i++ {
			j := i + rand.Int64N(size-i)
			perm[i], perm[j] = perm[j], perm[i]
			out = append(out, perm[i])
		}
		return out
	}
	seen := make(map[int64]struct{}, n)
	for int64(len(out)) < n {
		r := rand.Int64N(size)
		if _, dup := seen[r]; !dup {
			seen[r] = struct{}{}
			out = append(out, r)
		}
	}
	return out
}

// loadFields reads a cold structure's fields into memory, making e
// resident. The caller puts e in the hot tier.
func (tx *Tx) loadFields(pdb uint8, key []byte, e *Entry) error {
	c := &Coll{tx: tx, pdb: pdb, key: key, e: e}
	f := newFieldMap(int(e.Count))
	err := c.Each(func(field, val []byte) bool {
		f.set(field, val)
		return true
	})
	if err != nil {
		return err
	}
	if int64(f.len()) != e.Count {
		return fmt.Errorf("%w: %q counts %d fields, %d stored", ErrCorrupt, key, e.Count, f.len())
	}
	e.fields, e.Bytes = f, f.bytes
	return nil
}

// duplicate returns a copy of src's entry e to be stored as dst: the same
// string, or the same fields written under a new version of dst.
func (tx *Tx) duplicate(psrc uint8, src []byte, e *Entry, pdst uint8, dst []byte) (*Entry, error) {
	if e.Type == codec.TypeString {
		return &Entry{Type: e.Type, ExpireAt: e.ExpireAt, Str: e.Str}, nil
	}
	v, err := tx.e.cold.NextVersion()
	if err != nil {
		return nil, fmt.Errorf("tiering: copy %s: %w", e.Type, err)
	}
	switch e.Type {
	case codec.TypeList:
		return tx.duplicateList(psrc, src, e, pdst, dst, v)
	case codec.TypeZSet:
		return tx.duplicateZSet(psrc, src, e, pdst, dst, v)
	case codec.TypeStream:
		return tx.duplicateStream(psrc, src, e, pdst, dst, v)
	}
	ne := &Entry{Type: e.Type, ExpireAt: e.ExpireAt, Version: v, Count: e.Count, Bytes: e.Bytes}
	if e.resident() {
		ne.fields = newFieldMap(int(e.Count))
	}
	from := &Coll{tx: tx, pdb: psrc, key: src, e: e}
	var kbuf []byte
	var werr error
	err = from.Each(func(field, val []byte) bool {
		if kbuf, werr = putField(tx.batch, kbuf, pdst, dst, v, field, val, false); werr != nil {
			return false
		}
		if ne.fields != nil {
			ne.fields.set(field, val)
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return ne, err
}

// A set popped by SPOP (or a hash drawn from and deleted) loses members at
// random points of its field order, and each leaves a Pebble tombstone
// until compaction drops it: a later draw that seeks a random point steps
// over every tombstone between it and the next live member, so with most
// of the set popped each draw would cost O(members popped). collHoles
// remembers, per cold structure drawn from, the ranges of its field
// records known to hold no live record (the holes the pops left), so a
// draw seeks past them. The holes are hints kept in memory only, like
// the sorted sets' bounds (zsetBounds): a restart forgets them, and holes
// that might be wrong are dropped, never used.
type collHoles struct {
	m map[uint64]*holeSet // by version: versions are never reused
}

// maxHoleSets caps how many structures have holes (past it they are all
// forgotten); maxHoles caps the holes of one: past it a draw that lands
// outside every hole starts from the end of the hole before it instead,
// so that its pop grows a hole rather than making a new one.
const (
	maxHoleSets = 256
	maxHoles    = 1024
)

// holes returns the holes of c's records, nil if none are known (or they
// rested on a transaction that did not commit); with create, an empty set
// of holes is made if there is none.
func (c *Coll) holes(create bool) *holeSet {
	hs := &c.tx.e.collHoles
	h := hs.m[c.e.Version]
	if h != nil && !h.claim.settle(c.tx) {
		delete(hs.m, c.e.Version)
		h = nil
	}
	if h == nil && create {
		if hs.m == nil || len(hs.m) >= maxHoleSets {
			hs.m = make(map[uint64]*holeSet)
		}
		h = &holeSet{}
		hs.m[c.e.Version] = h
	}
	return h
}

// learnable reports whether what an iterator of c sees may be recorded
// (see ZSet.learnable).
func (c *Coll) learnable(h *holeSet) bool {
	return c.tx.batch.Empty() || h != nil && h.claim.seq == c.tx.TxID()
}

// hasHoles reports whether c's records have known holes (one map lookup).
func (c *Coll) hasHoles() bool { return c.tx.e.collHoles.m[c.e.Version] != nil }

// fieldWritten keeps c's holes right after field record k was written.
func (c *Coll) fieldWritten(k []byte) {
	if h := c.holes(false); h != nil {
		h.cut(k)
	}
}

// fieldDeleted keeps c's holes right after field record k was deleted:
// a hole touching k grows over it, for as long as this transaction
// commits.
func (c *Coll) fieldDeleted(k []byte) {
	h := c.holes(false)
	if h == nil {
		return
	}
	n := len(h.holes)
	h.add(k, append(bytes.Clone(k), 0), false)
	if len(h.holes) != n || h.find(k) >= 0 {
		h.claim.dependOn(c.tx, k)
	}
}

// holeWalker positions an iterator of c's field records on live records
// only, seeking past the known holes, and records the holes it finds
// (the ranges between where it was sent and where it landed).
type holeWalker struct {
	c      *Coll
	it     *coldstore.Iter
	lo, hi []byte // the records' bounds: [lo, hi)
	h      *holeSet
	learn  bool
}

func (c *Coll) holeWalker(it *coldstore.Iter, lo []byte) *holeWalker {
	if c.e.Type == codec.TypeZSet {
		// A sorted set's member records, drawn by ZRANDMEMBER: its writes
		// do not keep holes (it is not popped at random).
		return &holeWalker{c: c, it: it, lo: lo, hi: codec.PrefixEnd(lo)}
	}
	h := c.holes(c.tx.batch.Empty())
	return &holeWalker{c: c, it: it, lo: lo, hi: codec.PrefixEnd(lo), h: h, learn: c.learnable(h)}
}

// seek moves to the first live record at or after k, wrapping around to
// the first record; it reports false if there is none. k is a random
// point when draw is set: with maxHoles holes, it moves to the hole before
// it (so that no new hole is made).
func (w *holeWalker) seek(k []byte, draw bool) bool {
	if w.h == nil {
		if w.it.SeekGE(k) {
			return true
		}
		return w.it.First()
	}
	if draw && w.learn && len(w.h.holes) >= maxHoles && w.h.find(k) < 0 {
		// No new holes: start from the end of the hole before k.
		k = w.h.holes[w.h.before(k)].start
	}
	if w.from(k) {
		return true
	}
	return w.from(w.lo)
}

// from moves to the first live record at or after k, without wrapping,
// and records the hole from k (or from the hole k is in) to it. Each seek
// is bounded above by the next known hole, so that it never steps over the
// tombstones of one: when the gap before that hole holds nothing live,
// the walk goes on from the hole's end.
func (w *holeWalker) from(k []byte) bool {
	start := k
	if i := w.h.find(k); i >= 0 {
		start, k = w.h.holes[i].start, w.h.holes[i].end
	}
	for {
		upper, last := w.hi, true
		j := sort.Search(len(w.h.holes), func(j int) bool { return bytes.Compare(w.h.holes[j].start, k) > 0 })
		if j < len(w.h.holes) {
			upper, last = w.h.holes[j].start, false
		}
		w.it.SetBounds(w.lo, upper)
		if w.it.SeekGE(k) {
			if w.learn {
				w.h.add(start, w.it.Key(), false)
			}
			return true
		}
		if w.it.Error() != nil {
			return false
		}
		if w.learn {
			w.h.add(start, upper, false) // nothing live in [start, upper)
		}
		if last {
			return false
		}
		if !w.learn {
			start = k
		}
		k = w.h.holes[w.h.find(upper)].end
	}
}

// next moves to the live record after the current one, wrapping around.
func (w *holeWalker) next() bool {
	if w.h == nil {
		if w.it.Next() {
			return true
		}
		return w.it.First()
	}
	return w.seek(append(bytes.Clone(w.it.Key()), 0), false)
}
