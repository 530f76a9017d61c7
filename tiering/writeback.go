package tiering

import (
	"math"
	"time"
	"unsafe"

	"github.com/spillway/spillway/codec"
)

// Write-back of hot strings.
//
// Overwriting a hot string whose expiry stays the same (SET, INCR, APPEND
// over a hot key: the commonest write) changes the hot entry and writes
// the key's new meta record to the write log only
// (coldstore.Batch.PutMetaLogOnly): it is as durable as any write, but
// Pebble keeps the key's previous record, which differs from the new one
// only in the value. The entry is then dirty: the hot tier is the key's
// authority, and the store's record is written the ordinary way when the
// entry leaves the tier by demotion (writeBackEvicted, Tx.Demote), or at a
// checkpoint. A key written over and over costs Pebble nothing meanwhile:
// no memtable insert, no flush, no compaction (about half the CPU of a
// SET at -P 16 went there).
//
// What keeps it right:
//   - every reader of a string's value looks in the hot tier first; those
//     that read the store directly see only what stays the same (type,
//     expiry: SCAN, KEYS, RANDOMKEY, the key counts), or take the dirty
//     values with them (Snapshot: an overlay of the dirty values).
//   - an entry stops being dirty only when its record is written the
//     ordinary way or the key is deleted or replaced by a record; a
//     transaction that aborts puts back the dirty entries it changed or
//     dropped (LRU.undo, restoreDirty) and purges only clean ones.
//   - the write log keeps the frames of the log-only records still needed
//     (coldstore's log floor): lowered when the first entry becomes dirty,
//     raised when a checkpoint has written every entry dirty at its start,
//     or when none is dirty. A restart replays them as ordinary records.
//   - the log does not grow without bound: once it has grown by four
//     times the dirty values (and at least checkpointMinLog) since the
//     last checkpoint, a checkpoint writes every dirty entry
//     (checkpointLoop): a quarter of what was logged, at most.

// checkpointMinLog is how much the write log grows, at least, between
// two checkpoints; checkpointFactor how many times the dirty values: a
// checkpoint rewrites at most a quarter of what was logged since the
// last (below checkpointMaxLog), and a crash's replay reads a log about
// that long.
const (
	checkpointMinLog = 64 << 20
	checkpointFactor = 4
	// checkpointMaxLog bounds the log between checkpoints whatever the
	// dirty values take, and so a crash's replay.
	checkpointMaxLog = 1 << 30
)

// checkpointChunk is how many dirty entries one hold of the lock writes
// during a checkpoint.
const checkpointChunk = 256

// dirtyUndo records what a transaction did to a dirty (or newly dirty)
// entry, for restoreDirty: either an overwrite or cleaning (the entry's
// hot key, value and dirtiness before it), or the entry leaving the tier
// while dirty (dropped).
type dirtyUndo struct {
	e       *Entry
	hk      string
	str     []byte
	exp     int64
	dirty   bool
	dropped bool
}

// markDirty adds e to the dirty set.
func (l *LRU) markDirty(e *Entry) {
	if e.dirtyAt != 0 {
		return
	}
	l.dirty = append(l.dirty, e)
	e.dirtyAt = uint32(len(l.dirty))
	l.dirtyBytes += int64(len(e.hk) + len(e.Str))
}

// clean removes e from the dirty set.
func (l *LRU) clean(e *Entry) {
	i := int(e.dirtyAt) - 1
	if i < 0 {
		return
	}
	last := len(l.dirty) - 1
	l.dirty[i] = l.dirty[last]
	l.dirty[i].dirtyAt = uint32(i + 1)
	l.dirty[last] = nil
	l.dirty = l.dirty[:last]
	e.dirtyAt = 0
	l.dirtyBytes = max(l.dirtyBytes-int64(len(e.hk)+len(e.Str)), 0)
}

// leaving is called for an entry that leaves the tier: a dirty one is
// cleaned, and recorded for an abort (undo) or for its write-back
// (evicted).
func (l *LRU) leaving(e *Entry, evicted bool) {
	if e.dirtyAt == 0 {
		return
	}
	l.clean(e)
	if evicted {
		l.evicted = append(l.evicted, e)
	} else if !l.restoring {
		l.undo = append(l.undo, dirtyUndo{e: e, dropped: true})
	}
}

// noteOverwrite records e's state before the transaction changes its
// value or cleans it.
func (l *LRU) noteOverwrite(e *Entry) {
	l.undo = append(l.undo, dirtyUndo{e: e, hk: e.hk, str: e.Str, exp: e.ExpireAt, dirty: e.dirtyAt != 0})
}

// purgeClean drops every entry that is not dirty.
func (l *LRU) purgeClean() {
	l.flushTouches()
	for e := l.root.next; e != &l.root; {
		next := e.next
		if e.dirtyAt == 0 {
			l.drop(e)
		}
		e = next
	}
}

// restoreDirty undoes what the transaction did to dirty entries (l.undo,
// newest first), then drops every clean entry, which the transaction may
// have changed in place: the store, unchanged, holds those. Dirty entries
// end as they were when the transaction began.
func (l *LRU) restoreDirty() {
	l.restoring = true
	for i := len(l.undo) - 1; i >= 0; i-- {
		u := &l.undo[i]
		e := u.e
		if u.dropped {
			l.put(unsafe.Slice(unsafe.StringData(e.hk), len(e.hk)), e)
			l.markDirty(e)
			continue
		}
		inTier := l.m[e.hk] == e
		if e.dirtyAt != 0 {
			l.clean(e)
		}
		e.hk, e.Str, e.ExpireAt = u.hk, u.str, u.exp
		switch {
		case inTier:
			l.m[e.hk] = e // the key string back in its own allocation
			l.resize(unsafe.Slice(unsafe.StringData(e.hk), len(e.hk)), e)
			if u.dirty {
				l.markDirty(e)
			}
		case u.dirty:
			// Cleaned, then dropped (Tx.Demote): the record written is
			// undone, so the entry is the key's authority again.
			l.put(unsafe.Slice(unsafe.StringData(e.hk), len(e.hk)), e)
			l.markDirty(e)
		}
		u.e, u.str = nil, nil
	}
	l.undo = l.undo[:0]
	l.restoring = false
	l.purgeClean()
}

// forgetUndo ends a transaction that committed.
func (l *LRU) forgetUndo() {
	clear(l.undo)
	l.undo = l.undo[:0]
}

// overwriteLogOnly is overwriteString's store write when the key's record
// may lag (see above): the new record goes to the write log only and e
// becomes dirty. The caller has noted e's state (noteOverwrite).
func (tx *Tx) overwriteLogOnly(pdb uint8, key []byte, e *Entry, val []byte) error {
	l := tx.e.hot
	if e.dirtyAt != 0 {
		l.dirtyBytes += int64(len(val) - len(e.Str))
	}
	e.hk, e.Str = stringValue(tx.hk, val)
	tx.observe(pdb, key, KeyModified)
	tx.meta = metaOfString(e)
	e.metaGen++
	if err := tx.batch.PutMetaLogOnly(pdb, key, &tx.meta); err != nil {
		return err
	}
	if len(l.dirty) == 0 && !tx.e.floorLowered {
		// The log must keep this batch (and all after it) until the
		// record is written the ordinary way.
		tx.e.cold.LowerLogFloor(tx.e.cold.NextBatchNumber())
		tx.e.floorLowered = true
	}
	l.markDirty(e)
	tx.e.Stats.LogOnlyWrites.Add(1)
	return nil
}

// cleanOnWrite notes that e's record is being written the ordinary way
// (writeMeta): it is no longer dirty.
func (tx *Tx) cleanOnWrite(e *Entry) {
	if e.dirtyAt == 0 {
		return
	}
	tx.e.hot.noteOverwrite(e)
	tx.e.hot.clean(e)
}

// metaOfString is a string entry's meta record.
func metaOfString(e *Entry) codec.Meta {
	return codec.Meta{Type: codec.TypeString, ExpireAt: e.ExpireAt, Value: e.Str}
}

// writeBackEvicted writes the records of the dirty entries demotion just
// dropped (LRU.evicted), in a batch of their own queued after everything
// before: the tier no longer holds them, so the store must.
func (e *Engine) writeBackEvicted() {
	l := e.hot
	if len(l.evicted) == 0 {
		return
	}
	b := e.wbBatch
	var err error
	for i, d := range l.evicted {
		l.evicted[i] = nil
		if err == nil {
			m := metaOfString(d)
			err = b.PutMeta(d.hk[0], unsafe.Slice(unsafe.StringData(d.hk[1:]), len(d.hk)-1), &m)
		}
	}
	l.evicted = l.evicted[:0]
	if err == nil {
		_, err = b.Enqueue()
	} else {
		b.Abort()
	}
	if err != nil {
		// The store refuses writes (its sticky error): every later
		// command reports it too.
		e.opts.Logger.Error("writing demoted keys to the store failed", "err", err)
	}
}

// settleFloor raises the log's floor when no entry is dirty any more
// (every log-only record is superseded by records queued so far). Called
// under the lock after a commit.
func (e *Engine) settleFloor() {
	if e.floorLowered && len(e.hot.dirty) == 0 {
		e.cold.RaiseLogFloor(math.MaxUint64, e.cold.NextBatchNumber()-1)
		e.floorLowered = false
	}
}

// checkpointDue reports whether the write log has grown, since the last
// checkpoint began, past checkpointFactor times what a checkpoint would
// write (and checkpointMinLog).
func (e *Engine) checkpointDue() bool {
	e.mu.Lock()
	dirty, bytes := len(e.hot.dirty), e.hot.dirtyBytes
	e.mu.Unlock()
	return dirty > 0 && e.cold.LogWritten()-e.checkpointMark.Load() > max(checkpointMinLog, min(checkpointFactor*bytes, checkpointMaxLog))
}

// checkpointLoop makes a checkpoint whenever one is due (checked every
// 100 ms) until the engine closes.
func (e *Engine) checkpointLoop() {
	e.every(100*time.Millisecond, func() {
		if !e.checkpointDue() {
			return
		}
		start := time.Now()
		n, err := e.Checkpoint()
		if err != nil {
			e.opts.Logger.Error("write-back checkpoint failed", "err", err)
			return
		}
		e.opts.Logger.Debug("write-back checkpoint", "keys", n, "took", time.Since(start).Round(time.Millisecond))
	})
}

// Checkpoint writes the record of every entry dirty when it starts, a
// chunk per hold of the lock, then lets the write log drop the log-only
// records it superseded. It returns how many it wrote.
func (e *Engine) Checkpoint() (int, error) {
	e.checkpointMark.Store(e.cold.LogWritten())
	e.mu.Lock()
	start := e.cold.NextBatchNumber()
	pass := append([]*Entry(nil), e.hot.dirty...)
	e.mu.Unlock()
	written := 0
	for i := 0; i < len(pass); i += checkpointChunk {
		chunk := pass[i:min(i+checkpointChunk, len(pass))]
		_, err := e.Update(func(tx *Tx) error {
			for _, d := range chunk {
				if d.dirtyAt == 0 || tx.e.hot.m[d.hk] != d {
					continue // written or gone meanwhile
				}
				pdb, key := d.hk[0], []byte(d.hk[1:])
				if err := tx.writeMeta(pdb, key, d); err != nil {
					return err
				}
				written++
			}
			return nil
		})
		clear(chunk)
		if err != nil {
			return written, err
		}
	}
	e.mu.Lock()
	if len(e.hot.dirty) == 0 {
		e.settleFloor()
	} else {
		e.cold.RaiseLogFloor(start, e.cold.NextBatchNumber()-1)
	}
	e.mu.Unlock()
	e.Stats.Checkpoints.Add(1)
	return written, nil
}

// DirtyKeys is how many hot strings' records lag their values (written to
// the log only).
func (e *Engine) DirtyKeys() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.hot.dirty)
}

// DirtyKeys is Engine.DirtyKeys for a holder of the lock.
func (tx *Tx) DirtyKeys() int { return len(tx.e.hot.dirty) }

// dirtyOverlay returns the dirty values as the transaction found them
// (hot key to value), for a Snapshot: nil when none is dirty.
func (tx *Tx) dirtyOverlay() map[string][]byte {
	l := tx.e.hot
	if len(l.dirty) == 0 && len(l.undo) == 0 {
		return nil
	}
	m := make(map[string][]byte, len(l.dirty))
	for _, d := range l.dirty {
		m[d.hk] = d.Str
	}
	for i := len(l.undo) - 1; i >= 0; i-- {
		u := &l.undo[i]
		switch {
		case u.dropped:
			m[u.e.hk] = u.e.Str
		case u.dirty:
			m[u.hk] = u.str
		default:
			delete(m, u.hk)
		}
	}
	return m
}
