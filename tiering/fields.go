// This file holds a hash's or set's fields in memory (fieldMap) and the
// structures' meta records: what a write changed (metaFields) and the
// records a transaction writes once, at its end (Tx.deferMeta).
package tiering

import (
	"bytes"
	"math/rand/v2"

	"github.com/spillway/spillway/codec"
)

// fieldMap is the hot copy of a hash or a set: each field with its value
// (sets store empty values). Fields are kept in a dense slice indexed by a
// map, so a random field is O(1) (HRANDFIELD, SPOP) and iteration needs no
// map walk. Removal swaps the last field into the hole, so positions are
// not stable across writes.
type fieldMap struct {
	idx   map[string]int32
	names []string
	vals  []string
	bytes int64 // total length of fields and values
}

// fieldOverhead approximates what one field costs in a fieldMap beyond its
// bytes: a map slot and two string headers.
const fieldOverhead = 64

func newFieldMap(n int) *fieldMap {
	return &fieldMap{
		idx:   make(map[string]int32, n),
		names: make([]string, 0, n),
		vals:  make([]string, 0, n),
	}
}

func (m *fieldMap) len() int { return len(m.names) }

// get returns field's value; the lookup does not allocate.
func (m *fieldMap) get(field []byte) (string, bool) {
	i, ok := m.idx[view(field)]
	if !ok {
		return "", false
	}
	return m.vals[i], true
}

// set stores field = val and reports whether field is new.
func (m *fieldMap) set(field, val []byte) bool {
	if i, ok := m.idx[view(field)]; ok {
		m.bytes += int64(len(val) - len(m.vals[i]))
		m.vals[i] = string(val)
		return false
	}
	f := string(field)
	m.idx[f] = int32(len(m.names))
	m.names = append(m.names, f)
	m.vals = append(m.vals, string(val))
	m.bytes += int64(len(f) + len(val))
	return true
}

// put is set for a write that may repeat the stored value: it reports
// whether field is new, and, for an existing field, whether its value
// changed; an unchanged value is left as it is (nothing is copied).
func (m *fieldMap) put(field, val []byte) (created, changed bool) {
	if i, ok := m.idx[view(field)]; ok {
		if m.vals[i] == view(val) {
			return false, false
		}
		m.bytes += int64(len(val) - len(m.vals[i]))
		m.vals[i] = string(val)
		return false, true
	}
	return m.set(field, val), true
}

// del removes field and reports whether it was there.
func (m *fieldMap) del(field []byte) bool {
	i, ok := m.idx[view(field)]
	if !ok {
		return false
	}
	m.bytes -= int64(len(m.names[i]) + len(m.vals[i]))
	delete(m.idx, m.names[i])
	last := int32(len(m.names) - 1)
	if i != last {
		m.names[i], m.vals[i] = m.names[last], m.vals[last]
		m.idx[m.names[i]] = i
	}
	m.names[last], m.vals[last] = "", ""
	m.names, m.vals = m.names[:last], m.vals[:last]
	return true
}

// random returns a uniformly chosen position; the map must not be empty.
func (m *fieldMap) random() int { return rand.IntN(len(m.names)) }

// size is what the map costs against the hot budget.
func (m *fieldMap) size() int64 { return m.bytes + int64(len(m.names))*fieldOverhead }

// metaFields are the fields of a structure's meta record that its entry
// holds (all but a stream's), for telling whether a write changed any.
// gen is the entry's metaGen then: a meta written by another path since
// (another handle on the same key in the same command, EXPIRE in a group)
// makes the record's content unknown, so the next Close writes it.
type metaFields struct {
	expireAt, count, bytes int64
	version, head, tail    uint64
	gen                    uint32
	zskip                  bool
}

func metaOf(e *Entry) metaFields {
	return metaFields{expireAt: e.ExpireAt, count: e.Count, bytes: e.Bytes,
		version: e.Version, head: e.Head, tail: e.Tail, gen: e.metaGen, zskip: e.ZSkip}
}

// putMetaIfChanged stores e's meta record unless stored, what the record
// already holds (e's fields when the handle was opened or last closed),
// says it would write the same bytes: a write that replaces a value by one
// of the same length, or a sorted set's score, leaves count and bytes
// alone, and its command then writes one record fewer. created (never
// stored) always writes. A structure's record is not written now but left
// pending, written once when the transaction ends (deferMeta). Either way
// the key is reported modified, and stored is brought up to date.
func (tx *Tx) putMetaIfChanged(pdb uint8, key []byte, e *Entry, stored *metaFields, created bool) error {
	now := metaOf(e)
	if e.Type == codec.TypeString || e.strm != nil { // written as it changes
		if err := tx.putMeta(pdb, key, e); err != nil {
			return err
		}
		*stored = metaOf(e)
		return nil
	}
	if !created && now == *stored {
		tx.observe(pdb, key, KeyModified)
		return nil
	}
	tx.observe(pdb, key, KeyModified)
	*stored = now
	return tx.deferMeta(pdb, key, e)
}

// putMeta writes e's meta record (e mirrors it exactly), superseding a
// pending one.
func (tx *Tx) putMeta(pdb uint8, key []byte, e *Entry) error {
	tx.observe(pdb, key, KeyModified)
	tx.unpend(pdb, key)
	return tx.writeMeta(pdb, key, e)
}

// writeMeta is putMeta without the event or the pending record.
func (tx *Tx) writeMeta(pdb uint8, key []byte, e *Entry) error {
	if e.dirtyAt != 0 && e.list != nil {
		// A written-back list's element records first (writeback.go).
		if err := tx.writeBackList(pdb, key, e); err != nil {
			return err
		}
	}
	fillMeta(&tx.meta, e)
	e.metaGen++
	tx.cleanOnWrite(e)
	return tx.batch.PutMeta(pdb, key, &tx.meta)
}

// fillMeta sets m to e's meta record.
func fillMeta(m *codec.Meta, e *Entry) {
	*m = codec.Meta{Type: e.Type, ExpireAt: e.ExpireAt}
	if e.Type == codec.TypeString {
		m.Value = e.Str
	} else {
		m.Version, m.Count, m.Bytes = e.Version, uint64(e.Count), uint64(e.Bytes)
		m.Head, m.Tail = e.Head, e.Tail
		if e.ZSkip {
			m.Flags = codec.ZSetSkiplist
		}
		if e.strm != nil {
			syncStreamMeta(e)
			m.Count, m.Bytes, m.Stream = uint64(e.Count), uint64(e.Bytes), e.strm.meta
		}
	}
}

// Meta records written once per transaction. A hash's, set's, list's or
// sorted set's meta record (count, bytes, head, tail) changes with almost
// every write: a script or MULTI that writes one structure N times would
// put N meta records in its batch, each an insert into the batch's index.
// Close leaves the record pending instead (deferMeta), and the transaction
// writes each pending record once, with the entry's state then
// (flushMeta): when it commits, before anything iterates the meta records
// through the batch (SCAN, RANDOMKEY), and when too many are pending. A
// pending key's entry is what a lookup in the same transaction finds
// (pendingEntry: the batch does not hold its record yet). A later write of
// the key's meta by another path (putMeta) or its deletion (drop, a flush)
// supersedes the pending record, which is forgotten (unpend). The batch is
// atomic, so a crash sees every record of the transaction or none:
// crash safety is unchanged.

// metaPending is one meta record left to write: e's, under (pdb, key).
type metaPending struct {
	pdb uint8
	key []byte // owned, its buffer reused
	e   *Entry
}

// maxMetaPending bounds the pending records of a transaction (each lookup
// of a key the hot tier lacks scans them): past it they are written.
const maxMetaPending = 32

// deferMeta leaves e's meta record, under (pdb, key), to be written when
// the transaction ends (see above).
func (tx *Tx) deferMeta(pdb uint8, key []byte, e *Entry) error {
	if i := tx.pendingAt(pdb, key); i >= 0 {
		tx.metaPend[i].e = e // the key's entry now: its state is what is written
		return nil
	}
	if len(tx.metaPend) == maxMetaPending {
		if err := tx.flushMeta(); err != nil {
			return err
		}
	}
	n := len(tx.metaPend)
	if n < cap(tx.metaPend) {
		tx.metaPend = tx.metaPend[:n+1]
	} else {
		tx.metaPend = append(tx.metaPend, metaPending{})
	}
	p := &tx.metaPend[n]
	p.pdb, p.key, p.e = pdb, append(p.key[:0], key...), e
	return nil
}

// pendingEntry returns the entry whose meta record under (pdb, key) is
// pending, or nil.
func (tx *Tx) pendingEntry(pdb uint8, key []byte) *Entry {
	if i := tx.pendingAt(pdb, key); i >= 0 {
		return tx.metaPend[i].e
	}
	return nil
}

// pendingAt returns the index in metaPend of (pdb, key)'s pending meta
// record (a key has at most one), or -1.
func (tx *Tx) pendingAt(pdb uint8, key []byte) int {
	for i := range tx.metaPend {
		if p := &tx.metaPend[i]; p.pdb == pdb && bytes.Equal(p.key, key) {
			return i
		}
	}
	return -1
}

// unpend forgets the pending meta record of (pdb, key), if any: the
// caller writes or deletes that record itself.
func (tx *Tx) unpend(pdb uint8, key []byte) {
	if i := tx.pendingAt(pdb, key); i >= 0 {
		tx.dropPending(i)
	}
}

// unpendDB forgets the pending meta records of physical database pdb
// (flushed).
func (tx *Tx) unpendDB(pdb uint8) {
	for i := 0; i < len(tx.metaPend); {
		if tx.metaPend[i].pdb == pdb {
			tx.dropPending(i)
			continue
		}
		i++
	}
}

func (tx *Tx) dropPending(i int) {
	last := len(tx.metaPend) - 1
	tx.metaPend[i].pdb, tx.metaPend[last].pdb = tx.metaPend[last].pdb, tx.metaPend[i].pdb
	tx.metaPend[i].key, tx.metaPend[last].key = tx.metaPend[last].key, tx.metaPend[i].key
	tx.metaPend[i].e = tx.metaPend[last].e
	tx.metaPend[last].e = nil
	tx.metaPend = tx.metaPend[:last]
}

// flushMeta writes the pending meta records into the batch, each with its
// entry's state now, and forgets them.
func (tx *Tx) flushMeta() error {
	for i := range tx.metaPend {
		p := &tx.metaPend[i]
		err := tx.writeMeta(p.pdb, p.key, p.e)
		p.e = nil
		if err != nil {
			tx.metaPend = tx.metaPend[:0]
			return err
		}
	}
	tx.metaPend = tx.metaPend[:0]
	return nil
}

// clearMeta forgets the pending meta records (the transaction aborts).
func (tx *Tx) clearMeta() {
	for i := range tx.metaPend {
		tx.metaPend[i].e = nil
	}
	tx.metaPend = tx.metaPend[:0]
}

// outgrew notes that hot structure e outgrew the hot tier's share
// (Engine.keepHot): it stays resident until the transaction ends, when
// demoteOutgrown demotes it. A script or MULTI that grows a structure past
// the share keeps writing it in memory, rather than probing the store for
// every later member and reading back its own batch; the transaction's
// batch holds every record it wrote meanwhile anyway.
func (tx *Tx) outgrew(e *Entry) {
	for _, o := range tx.outgrown {
		if o == e {
			return
		}
	}
	tx.outgrown = append(tx.outgrown, e)
}

// demoteOutgrown demotes the structures noted by outgrew that the hot tier
// still holds over its share; with drop, it only forgets them (the
// transaction aborted: the hot tier is purged).
func (tx *Tx) demoteOutgrown(drop bool) {
	for i, e := range tx.outgrown {
		tx.outgrown[i] = nil
		if drop || e.fields == nil || tx.e.keepHot(e.size) || tx.e.hot.m[e.hk] != e {
			continue
		}
		tx.e.hot.drop(e)
		e.fields, e.loading = nil, nil
		tx.e.Stats.Demotions.Add(1)
	}
	tx.outgrown = tx.outgrown[:0]
}
