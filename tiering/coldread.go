package tiering

import (
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

// ColdProbe names a key that step 1 found only in the store.
type ColdProbe struct {
	pdb    uint8
	writes uint64 // Engine.writes at step 1
	cold   bool
}

// Cold reports whether the key must be read from the store (step 2).
func (p ColdProbe) Cold() bool { return p.cold }

// ColdBuffers are a reader's reusable buffers for ReadCold; one per client.
type ColdBuffers struct {
	key, val []byte
	meta     codec.Meta
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
	return nil, ColdProbe{pdb: pdb, writes: tx.e.writes, cold: true}, nil
}

// ReadCold reads the probed key's committed meta record without the
// engine's lock (step 2): nil when the key is not stored. It may be called
// concurrently with transactions and other ReadColds.
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
	return entryOfMeta(&b.meta), nil
}

// FinishGet completes a cold read (step 3) with the entry ReadCold
// returned, and returns what Get would have: the key's live entry or nil.
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
		tx.e.admit(tx.hk, tx.promotedSize(key, read)) {
		tx.promote(read)
		return read, nil
	}
	tx.e.Stats.ColdReads.Add(1)
	return read, nil
}
