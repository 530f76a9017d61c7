package tiering

import (
	"bytes"
	"fmt"

	"github.com/spillway/spillway/codec"
)

// Lock-free cold reads. A read of a cold string would otherwise hold the
// engine's lock across a store lookup (a block read and decompression),
// and every other command would queue behind it. Instead a read runs in
// three steps:
//
//  1. under the lock, GetOrProbe answers from the hot tier, or returns a
//     ColdProbe when only the store knows the key;
//  2. without the lock, Engine.ReadCold reads the key's committed meta
//     record: every transaction queues its batch in the store's commit
//     order before it releases the lock (write-through), and a read of the
//     store first waits for the batches queued before it, so the store
//     alone holds a consistent current state of every key, and this read
//     is a linearizable read of the key at the moment it runs;
//  3. under the lock again, Tx.FinishGet accounts the read and promotes
//     the key when the policy admits it and nothing has been written since
//     step 1 (otherwise the value read may be older than the current one,
//     which is fine to reply with but not to cache).
//
// A database mapping changed by SWAPDB in between, or a value read that has
// expired, sends step 3 back to the ordinary locked lookup.
//
// A read of one field of a cold hash or set (HGET) runs the same three
// steps: CollOrProbe, ReadColdField (the meta record, then the field's
// record under the version it names) and FinishField. Two records are read
// at two moments, so FinishField uses them only if no transaction wrote
// anything in between (then both show the state of step 1); otherwise it
// reads again under the lock.

// ColdProbe names a key that step 1 found only in the store.
type ColdProbe struct {
	pdb    uint8
	writes uint64 // Engine.writes at step 1
	layout uint64 // Engine.layoutGen at step 1
	cold   bool
	// meta is the key's meta record as the cold meta cache knew it at step
	// 1 (known set): step 2 then reads only the field's record.
	meta  coldMeta
	known bool
}

// Cold reports whether the key must be read from the store (step 2).
func (p ColdProbe) Cold() bool { return p.cold }

// ColdBuffers are a reader's reusable buffers for ReadCold; one per client.
type ColdBuffers struct {
	key, val   []byte
	fkey, fval []byte
	meta       codec.Meta
	// str is the entry ReadCold returns for a string: its value aliases
	// val, so that a read served from disk allocates nothing.
	str Entry
}

// GetOrProbe is Get's first half: a hot key (or, when every stored key is
// hot, an absent one) is answered as Get answers it; otherwise the returned
// probe is Cold and the entry is nil. The transaction then holds no writes
// from this call and may be aborted.
func (tx *Tx) GetOrProbe(db int, key []byte) (*Entry, ColdProbe, error) {
	pdb := tx.pdb(db)
	tx.hk = hotKey(tx.hk, pdb, key)
	if e, ok := tx.e.hot.get(tx.hk); ok {
		e, err := tx.hotHit(pdb, key, e, true)
		return e, ColdProbe{}, err
	}
	if tx.allHot(pdb) {
		tx.countMiss()
		return nil, ColdProbe{}, nil
	}
	return nil, ColdProbe{pdb: pdb, writes: tx.e.writes, layout: tx.e.layoutGen, cold: true}, nil
}

// ReadCold reads the probed key's committed meta record without the
// engine's lock (step 2): nil when the key is not stored. A string's entry
// and its value alias b until b's next use (FinishGet copies what it
// keeps). It may be called concurrently with transactions and other
// ReadColds.
func (e *Engine) ReadCold(p ColdProbe, key []byte, b *ColdBuffers) (*Entry, error) {
	var found bool
	var err error
	b.key, b.val, found, err = e.cold.GetMeta(p.pdb, key, &b.meta, b.key, b.val)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if !found {
		return nil, nil
	}
	if b.meta.Type == codec.TypeString {
		b.str = Entry{Type: codec.TypeString, ExpireAt: b.meta.ExpireAt, Str: b.meta.Value}
		return &b.str, nil
	}
	return entryOfMeta(&b.meta), nil
}

// FinishGet completes a cold read (step 3) with the entry ReadCold
// returned, and returns what Get would have: the key's live entry or nil
// (read itself when it is not promoted, aliasing the reader's buffers).
func (tx *Tx) FinishGet(db int, key []byte, p ColdProbe, read *Entry) (*Entry, error) {
	pdb := tx.pdb(db)
	if pdb != p.pdb || (read != nil && tx.expired(read)) {
		return tx.Get(db, key) // rare: redo it under the lock
	}
	tx.hk = hotKey(tx.hk, pdb, key)
	if _, ok := tx.e.hot.peek(tx.hk); ok {
		return tx.Get(db, key) // promoted or written meanwhile: newer
	}
	if read == nil {
		tx.countMiss()
		return nil, nil
	}
	tx.countHit()
	if tx.e.writes == p.writes && read.Type == codec.TypeString &&
		tx.e.admit(tx.hk, tx.promotedSize(key, read), tx.now) {
		// The hot tier keeps an entry of its own (read is the reader's).
		kept := &Entry{Type: codec.TypeString, ExpireAt: read.ExpireAt, Str: bytes.Clone(read.Str)}
		tx.promote(kept)
		return kept, nil
	}
	tx.e.Stats.ColdReads.Add(1)
	return read, nil
}

// CollOrProbe is OpenColl's first half for a read of one field (HGET): a
// hot structure, or, when every stored key is hot, an absent one, is
// opened as OpenColl(db, key, t, false) opens it; otherwise the returned
// probe is Cold and the Coll nil, and the transaction holds no writes from
// this call. A hot key of another type yields ErrWrongType.
func (tx *Tx) CollOrProbe(db int, key []byte, t codec.Type) (*Coll, ColdProbe, error) {
	pdb := tx.pdb(db)
	tx.hk = hotKey(tx.hk, pdb, key)
	if e, ok := tx.e.hot.get(tx.hk); ok {
		e, err := tx.hotHit(pdb, key, e, true)
		switch {
		case err != nil || e == nil:
			return nil, ColdProbe{}, err
		case e.Type != t:
			return nil, ColdProbe{}, ErrWrongType
		}
		return tx.coll(pdb, key, e), ColdProbe{}, nil
	}
	if tx.allHot(pdb) {
		tx.countMiss()
		return nil, ColdProbe{}, nil
	}
	p := ColdProbe{pdb: pdb, writes: tx.e.writes, layout: tx.e.layoutGen, cold: true}
	p.meta, p.known = tx.e.coldMetas.get(tx.hk, p.writes, p.layout)
	return nil, p, nil
}

// ReadColdField reads the probed key's committed meta record and, when it
// is a hash or a set, field's record under the version the meta names,
// without the engine's lock (step 2). It returns the key's entry (nil when
// the key is not stored) and, for a hash or set, field's value and whether
// it exists; val aliases b until its next use. It may be called
// concurrently with transactions and other cold reads.
func (e *Engine) ReadColdField(p ColdProbe, key, field []byte, b *ColdBuffers) (read *Entry, val []byte, found bool, err error) {
	if p.known {
		read = p.meta.entry()
	} else {
		read, err = e.ReadCold(p, key, b)
	}
	if err != nil || read == nil || (read.Type != codec.TypeHash && read.Type != codec.TypeSet) {
		return read, nil, false, err
	}
	b.fkey = codec.AppendFieldKey(b.fkey[:0], p.pdb, key, read.Version, field)
	b.fval, found, err = e.cold.GetField(b.fkey, b.fval)
	if err != nil {
		return nil, nil, false, fmt.Errorf("tiering: read field of %q: %w", key, err)
	}
	return read, b.fval, found, nil
}

// FinishField completes a lock-free field read (step 3) with the entry
// ReadColdField returned. When fresh is set, what step 2 read is the key's
// current state (the read is accounted, the structure promoted if the
// policy admits it): read nil is a missing key, a read of another type than
// t is ErrWrongType, otherwise step 2's field value is the answer. When
// fresh is false (a write or SWAPDB came in between, the key expired or was
// promoted meanwhile), step 2's read is discarded and c is the structure
// opened under the lock as OpenColl(db, key, t, false) opens it (nil if
// missing), to read the field from.
func (tx *Tx) FinishField(db int, key []byte, t codec.Type, p ColdProbe, read *Entry) (c *Coll, fresh bool, err error) {
	pdb := tx.pdb(db)
	tx.hk = hotKey(tx.hk, pdb, key)
	if pdb != p.pdb || tx.e.writes != p.writes || tx.e.layoutGen != p.layout || (read != nil && tx.expired(read)) {
		c, err = tx.OpenColl(db, key, t, false)
		return c, false, err
	}
	if _, ok := tx.e.hot.peek(tx.hk); ok {
		c, err = tx.OpenColl(db, key, t, false)
		return c, false, err
	}
	if read == nil {
		tx.countMiss()
		return nil, true, nil
	}
	tx.countHit()
	if read.Type != t {
		return nil, true, ErrWrongType
	}
	if !tx.promotable(key, read) || !tx.e.admit(tx.hk, tx.promotedSize(key, read), tx.now) {
		if !p.known {
			tx.e.coldMetas.put(tx.hk, read, p.writes, p.layout)
		}
		tx.e.Stats.ColdReads.Add(1)
		return nil, true, nil
	}
	if needsSteps(read) {
		// Answered from disk this time; loaded in the background.
		tx.startPromotion(pdb, key, read)
		tx.e.Stats.ColdReads.Add(1)
		return nil, true, nil
	}
	if err := tx.loadFields(pdb, key, read); err != nil {
		return nil, false, err
	}
	tx.promote(read)
	return nil, true, nil
}

// coldMetaEntries bounds the cold meta cache: about 1.3 MB at most.
const coldMetaEntries = 16384

// coldMetaCache remembers the meta records of cold hashes and sets that
// lock-free field reads found, so that the next read of a field of one of
// them reads only the field's record. An entry is valid only while no
// transaction has committed a write, and no SWAPDB or FLUSH has moved
// records, since it was read (Engine.writes and Engine.layoutGen): a
// write anywhere retires every entry at once, without a scan, so the
// cache serves read-mostly periods and is never wrong. It is guarded by
// the engine's lock.
type coldMetaCache struct {
	m map[string]coldMeta
}

// coldMeta is what a field read needs of a meta record, and when it was
// read.
type coldMeta struct {
	typ                    codec.Type
	version                uint64
	count, bytes, expireAt int64
	writes, layout         uint64
}

// get returns hk's meta if it is still valid at writes and layout.
func (c *coldMetaCache) get(hk []byte, writes, layout uint64) (coldMeta, bool) {
	m, ok := c.m[view(hk)]
	if !ok || m.writes != writes || m.layout != layout {
		return coldMeta{}, false
	}
	return m, true
}

// put remembers e, a hash's or set's cold entry read at writes and layout.
func (c *coldMetaCache) put(hk []byte, e *Entry, writes, layout uint64) {
	if e.Type != codec.TypeHash && e.Type != codec.TypeSet {
		return
	}
	if c.m == nil {
		c.m = make(map[string]coldMeta)
	}
	m := coldMeta{typ: e.Type, version: e.Version, count: e.Count, bytes: e.Bytes, expireAt: e.ExpireAt,
		writes: writes, layout: layout}
	// An assignment to an existing key stores the key given (the map
	// updates string keys), so it must be a string of its own, never a
	// view of hk.
	if _, ok := c.m[view(hk)]; !ok && len(c.m) >= coldMetaEntries {
		for k := range c.m { // an arbitrary entry makes room
			delete(c.m, k)
			break
		}
	}
	c.m[string(hk)] = m
}

// entry returns a new cold entry of m.
func (m coldMeta) entry() *Entry {
	return &Entry{Type: m.typ, Version: m.version, Count: m.count, Bytes: m.bytes, ExpireAt: m.expireAt}
}
