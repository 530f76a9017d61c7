package tiering

import (
	"math"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/coldstore"
	"github.com/spillway/spillway/tiering/deque"
)

// Write-back of hot strings and lists.
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
// A list held whole in the hot tier is written back the same way: a push
// or pop logs its element's record (coldstore's SetLogOnly, DeleteLogOnly)
// and the list's meta record; Pebble keeps the records of the list as it
// was when it became dirty (listCache.stored). Its write-back writes the
// elements whose records differ (every index outside listCache.kept, the
// stored elements no pop has reached) and deletes the stored ones no
// longer in the list: a queue whose elements are pushed and popped
// between two checkpoints costs Pebble nothing. Every other change of a
// dirty list (LSET, LINSERT, LREM, LTRIM, an expiry, the list outgrowing
// its share of the tier) writes it back first, then writes through.
//
// What keeps it right:
//   - every reader of a string's value or a list's elements looks in the
//     hot tier first; those that read the store directly see only what
//     stays the same (type, expiry: SCAN, KEYS, RANDOMKEY, the key
//     counts), or take the dirty values with them (Snapshot: an overlay of
//     the dirty strings and lists).
//   - an entry stops being dirty only when its record is written the
//     ordinary way or the key is deleted or replaced by a record; a
//     transaction that aborts puts back the dirty entries it changed or
//     dropped (LRU.undo, restoreDirty; a list's pushes and pops are undone
//     one by one, its write-back from a copy of its elements) and purges
//     only clean ones.
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
	// list, if not 0, is 1 + the index in LRU.listUndo of a list's
	// change (the fields above are unused).
	list int32
}

// A list's changes in a transaction, for restoreDirty.
const (
	listPushLeft uint8 = iota
	listPushRight
	listPopLeft
	listPopRight
	listWritten // written back
	listEdited  // about to be edited in place: snap holds its elements
)

// listWriteBackMax bounds what a dirty list's write-back writes (its
// wbBytes): past it, the next push or pop writes it back first, so that
// no write-back holds the lock for long.
const listWriteBackMax = 256 << 10

// boolOp is 1 for true: listPushLeft+boolOp(right) is the push's op.
func boolOp(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// listUndo is a list's state before one change: its counts and expiry
// (changed in place, unrecorded, once the list is clean), its write-back
// state and dirtiness, and what undoes the change to its
// elements (the element popped, or every element when it was written
// back, as later changes may rewrite them in place).
type listUndo struct {
	op           uint8
	dirty        bool
	s            string
	snap         []string
	lc           *listCache
	head, tail   uint64
	count, bytes int64
	exp          int64
	stored, kept [2]uint64
	wbBytes      int64
	gc           [2]uint64
	popped       [2]uint32
}

// markDirty adds e to the dirty set.
func (l *LRU) markDirty(e *Entry) {
	if e.dirtyAt != 0 {
		return
	}
	l.dirty = append(l.dirty, e)
	e.dirtyAt = uint32(len(l.dirty))
	l.dirtyBytes += dirtyWeight(e)
}

// dirtyWeight is what the dirty set counts for e (LRU.dirtyBytes): what
// its write-back writes, about.
func dirtyWeight(e *Entry) int64 {
	if e.list != nil {
		return e.list.wbBytes
	}
	return int64(len(e.hk) + len(e.Str))
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
	l.dirtyBytes = max(l.dirtyBytes-dirtyWeight(e), 0)
}

// leaving is called for an entry that leaves the tier: a dirty one is
// cleaned, and recorded for an abort (undo) or for its write-back
// (evicted).
func (l *LRU) leaving(e *Entry, evicted bool) {
	if e.dirtyAt == 0 {
		if evicted && e.list.hasPopped() {
			l.evicted = append(l.evicted, e) // for its garbage spans
		}
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
		if u.list != 0 {
			l.restoreList(e, &l.listUndo[u.list-1])
			u.e = nil
			continue
		}
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
	clear(l.listUndo)
	l.listUndo = l.listUndo[:0]
	l.restoring = false
	l.purgeClean()
}

// forgetUndo ends a transaction that committed.
func (l *LRU) forgetUndo() {
	clear(l.undo)
	l.undo = l.undo[:0]
	clear(l.listUndo)
	l.listUndo = l.listUndo[:0]
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
	tx.lowerFloor()
	l.markDirty(e)
	tx.e.Stats.LogOnlyWrites.Add(1)
	return nil
}

// lowerFloor is called for a log-only record: the log must keep this
// batch (and all after it) until the record is written the ordinary way.
func (tx *Tx) lowerFloor() {
	if !tx.e.floorLowered {
		tx.e.cold.LowerLogFloor(tx.e.cold.NextBatchNumber())
		tx.e.floorLowered = true
	}
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
// before: the tier no longer holds them, so the store must. A list held
// by its ends is there for the deletion of its garbage spans
// (listCache.gc) only.
func (e *Engine) writeBackEvicted() {
	l := e.hot
	if len(l.evicted) == 0 {
		return
	}
	b := e.wbBatch
	var err error
	var m codec.Meta
	for i, d := range l.evicted {
		l.evicted[i] = nil
		if err == nil {
			pdb, key := d.hk[0], unsafe.Slice(unsafe.StringData(d.hk[1:]), len(d.hk)-1)
			if d.list.hasPopped() {
				e.wbKey, err = deletePoppedRecords(b, e.wbKey, pdb, key, d)
				continue
			}
			if d.list != nil {
				e.wbKey, err = writeListRecords(b, e.wbKey, pdb, key, d)
			}
			if err == nil {
				fillMeta(&m, d)
				err = b.PutMeta(pdb, key, &m)
			}
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
			touchEntries(chunk)
			for _, d := range chunk {
				// A dirty entry is in the tier (LRU.leaving cleans one
				// that leaves; CheckInvariants holds the dirty set to
				// the tier's dirty entries): one written meanwhile, or
				// gone, is clean.
				if d.dirtyAt == 0 {
					continue
				}
				pdb, key := d.hk[0], unsafe.Slice(unsafe.StringData(d.hk[1:]), len(d.hk)-1)
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

// touchEntries reads the entries' cache lines, then their keys', in loops
// of independent loads, so that the processor overlaps their cache misses
// (an entry met one at a time, among many, cost a checkpoint about 0.6 µs
// of stalls).
func touchEntries(es []*Entry) {
	var sink uint32
	for _, d := range es {
		sink += uint32(d.Type) + d.dirtyAt
		if d.list != nil {
			sink++
		}
	}
	for _, d := range es {
		if d.dirtyAt != 0 && len(d.hk) > 0 {
			sink += uint32(d.hk[0])
		}
	}
	touchSink.Store(sink)
}

// touchSink keeps touchEntries' loads from being optimised away.
var touchSink atomic.Uint32

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
		if d.Type == codec.TypeString {
			m[d.hk] = d.Str
		}
	}
	for i := len(l.undo) - 1; i >= 0; i-- {
		u := &l.undo[i]
		if u.list != 0 || u.e.Type != codec.TypeString {
			continue // listOverlay's
		}
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

// listImage is a dirty list as a Snapshot sees it: its counts and its
// elements, head first.
type listImage struct {
	head, tail   uint64
	count, bytes int64
	elems        []string
}

// listOverlay returns the lists whose element records lagged when the
// transaction began, as they were then (hot key to image): nil when
// none did. The transaction's changes are undone on copies.
func (tx *Tx) listOverlay() map[string]*listImage {
	l := tx.e.hot
	type image struct {
		listImage
		elems deque.Deque
		dirty bool
	}
	var imgs map[*Entry]*image
	get := func(e *Entry) *image {
		if im, ok := imgs[e]; ok {
			return im
		}
		if imgs == nil {
			imgs = make(map[*Entry]*image)
		}
		im := &image{listImage: listImage{head: e.Head, tail: e.Tail, count: e.Count, bytes: e.Bytes}, dirty: e.dirtyAt != 0}
		if e.list != nil {
			im.elems.Fill(e.list.front.Slice())
		}
		imgs[e] = im
		return im
	}
	for _, d := range l.dirty {
		if d.list != nil {
			get(d)
		}
	}
	for i := len(l.undo) - 1; i >= 0; i-- {
		u := &l.undo[i]
		if u.e.Type != codec.TypeList {
			continue
		}
		im := get(u.e)
		if u.list == 0 {
			im.dirty = u.dropped || u.dirty // dropped or given an expiry
			continue
		}
		r := &l.listUndo[u.list-1]
		r.undoOn(&im.elems)
		im.head, im.tail, im.count, im.bytes, im.dirty = r.head, r.tail, r.count, r.bytes, r.dirty
	}
	var m map[string]*listImage
	for e, im := range imgs {
		if !im.dirty {
			continue
		}
		if m == nil {
			m = make(map[string]*listImage)
		}
		im.listImage.elems = im.elems.Slice()
		m[e.hk] = &im.listImage
	}
	return m
}

// logOnly reports whether the list's push (or pop) is written back (see
// above): write-back is on, the list is held whole by the hot tier, and
// it was stored before this open; a push, only while the list is dirty
// (a pop made it so) or has undo records in this transaction (which must
// then record every change). A list only pushed writes through: each
// element would be logged twice (log-only, then written back) with no
// pop to save its records. A dirty list whose write-back has grown past
// listWriteBackMax is written back first.
func (l *List) logOnly(push bool) (bool, error) {
	e := l.e
	lc := e.list
	if l.tx.e.opts.WriteThrough || l.created || lc == nil || !lc.whole ||
		push && e.dirtyAt == 0 && lc.noted != l.tx.TxID() {
		return false, nil
	}
	if cur, ok := l.tx.e.hot.peek(l.hk); !ok || cur != e {
		return false, nil
	}
	if e.dirtyAt != 0 && lc.wbBytes > listWriteBackMax {
		if err := l.tx.writeMeta(l.pdb, l.key, e); err != nil {
			return false, err
		}
	}
	return true, nil
}

// beforeEdit prepares the list for an edit that writes through and may
// change its elements in place (LSET, LINSERT, LREM, LTRIM, cutting it
// down to its ends): a dirty list is written back, and a list that has
// undo records in this transaction gets one holding its elements, which
// an abort puts back.
func (l *List) beforeEdit() error {
	e := l.e
	lc := e.list
	if lc == nil || e.dirtyAt == 0 && lc.noted != l.tx.TxID() {
		return nil
	}
	l.tx.e.hot.noteList(l.tx.TxID(), e, listEdited, "", lc.front.Slice())
	if e.dirtyAt == 0 {
		return nil
	}
	return l.tx.writeMeta(l.pdb, l.key, e)
}

// listRecordWeight is what a list element's record of n bytes adds to the
// list's write-back (listCache.wbBytes).
func listRecordWeight(hk []byte, n int) int64 { return int64(len(hk) + 16 + n) }

// addDirtyWeight adds d to dirty list e's write-back weight.
func (l *LRU) addDirtyWeight(e *Entry, d int64) {
	e.list.wbBytes += d
	l.dirtyBytes += d
}

// noteListOp records e's state before a push or pop written to the log
// only (op, s the element popped), for restoreDirty, and makes e dirty if
// it was not: the store's records are then those of e's elements now.
func (tx *Tx) noteListOp(hk []byte, e *Entry, op uint8, s string) {
	l := tx.e.hot
	lc := e.list
	l.noteList(tx.TxID(), e, op, s, nil)
	tx.e.Stats.LogOnlyWrites.Add(1)
	if e.dirtyAt != 0 {
		return
	}
	lc.stored = [2]uint64{e.Head, e.Tail}
	lc.kept = lc.stored
	lc.wbBytes = int64(len(hk)) // its meta record; the caller adds the element's
	tx.lowerFloor()
	l.markDirty(e)
}

// noteList appends e's state (a list's) to the transaction's undo records.
func (l *LRU) noteList(txID uint64, e *Entry, op uint8, s string, snap []string) {
	lc := e.list
	lc.noted = txID
	l.listUndo = append(l.listUndo, listUndo{
		op: op, dirty: e.dirtyAt != 0, s: s, snap: snap, lc: lc,
		head: e.Head, tail: e.Tail, count: e.Count, bytes: e.Bytes, exp: e.ExpireAt,
		stored: lc.stored, kept: lc.kept, wbBytes: lc.wbBytes, gc: lc.gc, popped: lc.popped,
	})
	l.undo = append(l.undo, dirtyUndo{e: e, list: int32(len(l.listUndo))})
}

// undoOn undoes u's change on d, the elements of the list (held whole)
// after it.
func (u *listUndo) undoOn(d *deque.Deque) {
	switch u.op {
	case listPushLeft:
		d.PopFront()
	case listPushRight:
		d.PopBack()
	case listPopLeft:
		d.PushFront(u.s)
	case listPopRight:
		d.PushBack(u.s)
	case listEdited:
		d.Fill(u.snap)
	}
}

// restoreList undoes one change of list e (restoreDirty).
func (l *LRU) restoreList(e *Entry, u *listUndo) {
	lc := u.lc
	e.list = lc
	u.undoOn(&lc.front)
	if u.op == listEdited {
		lc.whole = true
		lc.back.Reset()
	}
	if e.dirtyAt != 0 {
		l.clean(e) // marked again below, at its weight then
	}
	e.Head, e.Tail, e.Count, e.Bytes, e.ExpireAt = u.head, u.tail, u.count, u.bytes, u.exp
	lc.stored, lc.kept, lc.wbBytes, lc.gc, lc.popped = u.stored, u.kept, u.wbBytes, u.gc, u.popped
	hk := unsafe.Slice(unsafe.StringData(e.hk), len(e.hk))
	switch {
	case l.m[e.hk] == e:
		l.resize(hk, e)
		if u.dirty {
			l.markDirty(e)
		}
	case u.dirty:
		// Written back, then dropped from the tier (cut down, demoted):
		// the store's records are undone, so it is the authority again.
		l.put(hk, e)
		l.markDirty(e)
	}
}

// putMetaLogOnly is putMeta for a dirty list that stays so: its meta
// record goes to the log only.
func (tx *Tx) putMetaLogOnly(pdb uint8, key []byte, e *Entry) error {
	tx.observe(pdb, key, KeyModified)
	tx.unpend(pdb, key)
	fillMeta(&tx.meta, e)
	e.metaGen++
	return tx.batch.PutMetaLogOnly(pdb, key, &tx.meta)
}

// writeBackList writes the element records of dirty list e that the store
// lacks and deletes those it holds in excess (writeListRecords); the
// caller writes its meta record. e is clean after it.
func (tx *Tx) writeBackList(pdb uint8, key []byte, e *Entry) error {
	lc := e.list
	tx.e.hot.noteList(tx.TxID(), e, listWritten, "", nil)
	var err error
	if tx.kb, err = writeListRecords(tx.batch, tx.kb, pdb, key, e); err != nil {
		return err
	}
	tx.e.hot.clean(e)
	lc.stored = [2]uint64{e.Head, e.Tail}
	lc.kept = lc.stored
	return nil
}

// writeListRecords writes into b what makes the store's element records
// of dirty list e (held whole) its elements: the elements at the indexes
// outside lc.kept, and deletions of the stored indexes outside
// Head..Tail. kb is a scratch buffer returned for reuse.
func writeListRecords(b *coldstore.Batch, kb []byte, pdb uint8, key []byte, e *Entry) ([]byte, error) {
	lc := e.list
	klo, khi := lc.kept[0], lc.kept[1]
	var err error
	for i, n := 0, lc.front.Len(); i < n; i++ {
		idx := e.Head + uint64(i)
		if idx == klo && khi > klo {
			i += int(khi-klo) - 1 // unchanged in the store
			continue
		}
		if kb, err = putListElem(b, kb, pdb, key, e.Version, idx, bytesOf(lc.front.At(i))); err != nil {
			return kb, err
		}
	}
	// The stored indexes below Head, then those at or above Tail.
	slo, shi := lc.stored[0], lc.stored[1]
	cut := min(shi, max(slo, e.Head))
	if kb, err = deleteListElems(b, kb, pdb, key, e.Version, slo, cut); err != nil {
		return kb, err
	}
	return deleteListElems(b, kb, pdb, key, e.Version, max(cut, e.Tail), shi)
}
