package tiering

import (
	"bytes"
	"fmt"
	"math"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/coldstore"
	"github.com/spillway/spillway/tiering/deque"
)

// A list is stored as one record per element, keyed by an absolute index:
// the elements are at Head..Tail-1 (meta record), LPUSH writes at Head-1
// and RPUSH at Tail. Pushes and pops at either end therefore cost one
// record each, and element i is one point read, however long the list.
//
// In memory a list is held in one of two ways (listCache):
//
//   - whole: every element, in a deque. A cold list is loaded whole when
//     it is small (listWholeElems, listWholeBytes and the promotion
//     policy's size limits); a whole list stays whole as it grows while it
//     weighs at most the hot tier's share for one key (Engine.keepHot);
//   - by its ends, when it is bigger: a window of at most listWindowElems
//     elements (listWindowBytes) at each end, refilled from the store
//     listRefill elements (or listWindowBytes at the list's average
//     element size) at a time. A queue (pushed at one end, popped at the
//     other) is served from memory at both ends while its middle stays on
//     disk, however long it grows. A refill costs an iterator (tens of
//     µs) besides its elements, so it reads many at a time. A pop from a
//     window writes no tombstone: its element's record is left outside
//     Head..Tail, where nothing reads, and deleted later with the others
//     popped at that end, in one range deletion (listCache.gc).
const (
	listWholeElems  = 4096
	listWholeBytes  = 1 << 20
	listWindowElems = 1024
	listWindowBytes = 32 << 10
	listRefill      = 512
	listPoppedMax   = 4096
)

// listCache is the hot part of a list. When whole, front holds every
// element and back is empty. Otherwise front holds the elements at
// Head..Head+front.Len()-1 and back those at Tail-back.Len()..Tail-1, and
// together they hold fewer than Count elements (the windows never meet:
// when they would, they are merged into a whole list).
type listCache struct {
	whole bool
	front deque.Deque
	back  deque.Deque
	// The write-back state of a dirty list (writeback.go): stored is
	// Head..Tail of the store's element records when it became dirty,
	// kept the indexes among them whose records still hold the element
	// (empty when kept[0] >= kept[1]), wbBytes what its write-back would
	// write, about (what the dirty set counts for it), noted the last
	// transaction that recorded an undo of it (Tx.TxID).
	stored, kept [2]uint64
	wbBytes      int64
	noted        uint64
	// gc and popped, for a list held by its ends: the records of the
	// elements popped from it are left in the store (garbage: nothing
	// reads outside Head..Tail), within gc[0]..Head-1 and Tail..gc[1]-1;
	// popped counts the pops at each end since deletePopped last deleted
	// those spans (one range deletion each). It does once listPoppedMax
	// pops accumulate at an end, when the list is held whole again, and
	// when it leaves the hot tier (demotion deletes them after the
	// demoting commit: writeBackEvicted). A list loaded by its ends starts
	// with spans listPoppedMax indexes past each end: what a crash, which
	// forgets the spans, may have left there. An aborted transaction
	// drops clean entries and their spans with them: those records stay
	// until such a load's deletion or the list's. Unused when whole.
	gc     [2]uint64
	popped [2]uint32
}

// holdByEnds sets the garbage spans of a list that starts being held by
// its ends: suspect indexes past each end (listCache.gc).
func (lc *listCache) holdByEnds(e *Entry, suspect uint64) {
	lc.gc = [2]uint64{e.Head - min(e.Head, suspect), e.Tail + min(math.MaxUint64-e.Tail, suspect)}
	lc.popped = [2]uint32{}
}

// hasPopped reports whether elements were popped from the list, held by
// its ends, since their records were last deleted.
func (lc *listCache) hasPopped() bool {
	return lc != nil && !lc.whole && lc.popped != [2]uint32{}
}

// widenGC extends the garbage spans to the list's ends after an edit that
// may have moved them outwards (a push, a splice): records inside
// Head..Tail are live.
func (lc *listCache) widenGC(e *Entry) {
	lc.gc[0], lc.gc[1] = min(lc.gc[0], e.Head), max(lc.gc[1], e.Tail)
}

func (lc *listCache) size() int64 { return lc.front.Size() + lc.back.Size() }

// trimWindows drops elements from the inner side of windows over their
// limits: they are in the store.
func (lc *listCache) trimWindows() {
	if lc.whole {
		return
	}
	for lc.front.Len() > listWindowElems || lc.front.Len() > 1 && lc.front.Bytes() > listWindowBytes {
		lc.front.PopBack()
	}
	for lc.back.Len() > listWindowElems || lc.back.Len() > 1 && lc.back.Bytes() > listWindowBytes {
		lc.back.PopFront()
	}
}

// fitsWhole reports whether a list of e's counts may be held whole.
func (e *Engine) fitsWhole(key []byte, l *Entry) bool {
	if l.Count > listWholeElems || l.Bytes > listWholeBytes {
		return false
	}
	size := int64(len(key)) + entryOverhead + l.Bytes + l.Count*coldOverhead(codec.TypeList)
	return e.admissionSettings().Fits(size)
}

// listEndsSize is what a list held by its ends is weighed at when it is
// promoted (its windows are empty then and fill as it is used).
func listEndsSize(key []byte) int64 { return int64(len(key)) + entryOverhead }

// cacheList gives a cold list entry its hot part: the whole list if it is
// small, otherwise empty windows. The caller puts e in the hot tier.
func (tx *Tx) cacheList(pdb uint8, key []byte, e *Entry) error {
	lc := &listCache{}
	if tx.e.fitsWhole(key, e) {
		l := &List{tx: tx, pdb: pdb, key: key, e: e}
		err := l.scanStore(0, e.Count-1, false, func(_ int64, v []byte) bool {
			lc.front.PushBack(string(v))
			return true
		})
		if err != nil {
			return err
		}
		lc.whole = true
	} else {
		lc.holdByEnds(e, listPoppedMax)
	}
	e.list = lc
	return nil
}

// List is a live list opened by a Tx. Indexes are positions from the head,
// 0..Len()-1; callers normalise Redis's negative indexes. Writes go
// through to the store and update the hot part when there is one; after
// writing, Close must be called to store the meta record or delete the
// emptied key.
//
// A List is valid until its Tx ends. Byte slices it returns alias its
// buffers or the hot copy: read them before the next call, never modify
// them.
type List struct {
	tx      *Tx
	db      int
	pdb     uint8
	key     []byte
	hk      []byte
	e       *Entry
	created bool // not stored yet: created by this open
	dirty   bool
	kb      []byte
	vb      []byte
}

// OpenList opens key (database db) as a list. A cold list gets a hot part
// if the promotion policy admits it. If key does not exist it returns nil,
// unless create is set, in which case it returns an empty list that is
// stored on Close if anything was pushed. A key of another type yields
// ErrWrongType.
func (tx *Tx) OpenList(db int, key []byte, create bool) (*List, error) {
	e, err := tx.lookup(db, key, codec.TypeList, true)
	if err != nil {
		return nil, err
	}
	switch {
	case e != nil && e.Type != codec.TypeList:
		return nil, ErrWrongType
	case e == nil && !create:
		return nil, nil
	}
	l := tx.list(db, key, e)
	if e == nil {
		v, err := tx.e.cold.NextVersion()
		if err != nil {
			return nil, fmt.Errorf("tiering: new list: %w", err)
		}
		l.e = &Entry{Type: codec.TypeList, Version: v, Head: codec.ListStartIndex,
			Tail: codec.ListStartIndex, list: &listCache{whole: true}}
		l.created = true
	}
	return l, nil
}

// PeekList wraps an entry returned by Peek (a list) for reading without
// promotion.
func (tx *Tx) PeekList(db int, key []byte, e *Entry) *List { return tx.list(db, key, e) }

// list returns a List for key from the transaction's pool (see Tx.coll).
func (tx *Tx) list(db int, key []byte, e *Entry) *List {
	if tx.listsUsed == len(tx.lists) {
		tx.lists = append(tx.lists, new(List))
	}
	l := tx.lists[tx.listsUsed]
	tx.listsUsed++
	pdb := tx.pdb(db)
	*l = List{tx: tx, db: db, pdb: pdb, key: key, hk: hotKey(l.hk, pdb, key), e: e, kb: l.kb[:0], vb: l.vb[:0]}
	return l
}

// Len returns the number of elements.
func (l *List) Len() int64 { return l.e.Count }

// Whole reports whether every element is held in memory.
func (l *List) Whole() bool { return l.e.list != nil && l.e.list.whole }

func (l *List) elemKey(i int64) []byte {
	l.kb = codec.AppendListKey(l.kb[:0], l.pdb, l.key, l.e.Version, l.e.Head+uint64(i))
	return l.kb
}

// cached returns element i from the hot part, if it holds it.
func (l *List) cached(i int64) (string, bool) {
	lc := l.e.list
	if lc == nil {
		return "", false
	}
	if i < int64(lc.front.Len()) {
		return lc.front.At(int(i)), true
	}
	if j := i - (l.e.Count - int64(lc.back.Len())); j >= 0 {
		return lc.back.At(int(j)), true
	}
	return "", false
}

// Index returns element i (0 <= i < Len).
func (l *List) Index(i int64) ([]byte, error) {
	if v, ok := l.cached(i); ok {
		return bytesOf(v), nil
	}
	l.countColdRead()
	buf, found, err := l.tx.batch.GetData(l.elemKey(i), l.vb)
	l.vb = buf
	if err != nil {
		return nil, fmt.Errorf("tiering: read element of %q: %w", l.key, err)
	}
	if !found {
		return nil, fmt.Errorf("%w: %q has no element %d of %d", ErrCorrupt, l.key, i, l.e.Count)
	}
	return buf, nil
}

// countColdRead counts a store read of a list held hot by its ends (reads
// of cold keys are counted by lookup).
func (l *List) countColdRead() {
	if l.e.list != nil {
		l.tx.e.Stats.ColdReads.Add(1)
	}
}

// Range calls fn for elements from..to (0 <= from <= to < Len) in order,
// or in reverse order if reverse is set, until fn returns false: from
// memory when the hot part holds them, otherwise as one seek and a scan of
// the store.
func (l *List) Range(from, to int64, reverse bool, fn func(i int64, v []byte) bool) error {
	if from > to {
		return nil
	}
	if lc := l.e.list; lc != nil {
		var d *deque.Deque
		var off int64
		switch {
		case to < int64(lc.front.Len()):
			d = &lc.front
		case from >= l.e.Count-int64(lc.back.Len()):
			d, off = &lc.back, l.e.Count-int64(lc.back.Len())
		}
		if d != nil {
			for k := range to - from + 1 {
				i := from + k
				if reverse {
					i = to - k
				}
				if !fn(i, bytesOf(d.At(int(i-off)))) {
					return nil
				}
			}
			return nil
		}
	}
	l.countColdRead()
	return l.scanStore(from, to, reverse, fn)
}

// scanStore is Range served from the store.
func (l *List) scanStore(from, to int64, reverse bool, fn func(i int64, v []byte) bool) error {
	lo := codec.AppendListKey(nil, l.pdb, l.key, l.e.Version, l.e.Head+uint64(from))
	hi := codec.AppendListKey(nil, l.pdb, l.key, l.e.Version, l.e.Head+uint64(to)+1)
	it, err := l.tx.batch.NewIter(lo, hi)
	if err != nil {
		return err
	}
	defer it.Close()
	step, valid, i := it.Next, it.First(), from
	if reverse {
		step, valid, i = it.Prev, it.Last(), to
	}
	n := int64(0)
	for ; valid; valid = step() {
		idx, err := codec.ParseListRest(it.Key()[len(lo)-8:])
		if err != nil {
			return fmt.Errorf("tiering: %q: %w", l.key, err)
		}
		if idx != l.e.Head+uint64(i) {
			return fmt.Errorf("%w: %q element %d is missing", ErrCorrupt, l.key, i)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		n++
		if !fn(i, v) {
			return nil
		}
		if reverse {
			i--
		} else {
			i++
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	if n != to-from+1 {
		return fmt.Errorf("%w: %q counts %d elements, %d of %d..%d stored", ErrCorrupt, l.key, l.e.Count, n, from, to)
	}
	return nil
}

// Push adds val at the head (left) or the tail.
func (l *List) Push(left bool, val []byte) error {
	e := l.e
	logOnly, err := l.logOnly(true)
	if err != nil {
		return err
	}
	if logOnly {
		l.tx.noteListOp(l.hk, e, listPushLeft+boolOp(!left), "")
		l.tx.e.hot.addDirtyWeight(e, listRecordWeight(l.hk, len(val)))
	}
	var idx uint64
	if left {
		e.Head--
		idx = e.Head
	} else {
		idx = e.Tail
		e.Tail++
	}
	e.Count++
	e.Bytes += int64(len(val))
	l.dirty = true
	if lc := e.list; lc != nil {
		s := string(val)
		switch {
		case lc.whole && left:
			lc.front.PushFront(s)
		case lc.whole:
			lc.front.PushBack(s)
		case left:
			lc.front.PushFront(s)
			lc.widenGC(e)
		default:
			lc.back.PushBack(s)
			lc.widenGC(e)
		}
		lc.trimWindows()
	}
	if logOnly {
		l.kb = codec.AppendListKey(l.kb[:0], l.pdb, l.key, e.Version, idx)
		return l.tx.batch.SetLogOnly(l.kb, val)
	}
	l.kb, err = putListElem(l.tx.batch, l.kb, l.pdb, l.key, e.Version, idx, val)
	return err
}

// putListElem writes the record of a list's element val at index idx under
// (pdb, key, version) into b, kb being a scratch buffer returned for reuse.
// List.Push, duplicateList and Stage.Push share it: the layout is written
// in one place.
func putListElem(b *coldstore.Batch, kb []byte, pdb uint8, key []byte, version, idx uint64, val []byte) ([]byte, error) {
	kb = codec.AppendListKey(kb[:0], pdb, key, version, idx)
	return kb, b.Set(kb, val)
}

// Pop removes up to n elements from the head (left) or the tail and calls
// fn with each, in pop order. It returns how many it popped.
func (l *List) Pop(left bool, n int64, fn func(v []byte)) (int64, error) {
	e := l.e
	var popped int64
	logOnly, err := l.logOnly(false)
	if err != nil {
		return 0, err
	}
	for popped < n && e.Count > 0 {
		if lc := e.list; lc != nil {
			if logOnly { // whole: every element is in front
				var s string
				if left {
					s = lc.front.PopFront()
				} else {
					s = lc.front.PopBack()
				}
				if err := l.dropEndLogOnly(left, s); err != nil {
					return popped, err
				}
				fn(bytesOf(s))
				popped++
				continue
			}
			if err := l.refill(left); err != nil {
				return popped, err
			}
			var s string
			switch {
			case left:
				s = lc.front.PopFront()
			case lc.whole:
				s = lc.front.PopBack()
			default:
				s = lc.back.PopBack()
			}
			if lc.whole {
				err = l.dropEnd(left, int64(len(s)))
			} else {
				err = l.leaveEnd(left, int64(len(s)))
			}
			if err != nil {
				return popped, err
			}
			fn(bytesOf(s))
			popped++
			continue
		}
		// Cold: one scan for the whole run.
		m := min(n-popped, e.Count)
		from, to := int64(0), m-1
		if !left {
			from, to = e.Count-m, e.Count-1
		}
		var vals [][]byte
		err := l.scanStore(from, to, !left, func(_ int64, v []byte) bool {
			vals = append(vals, bytes.Clone(v))
			return true
		})
		if err != nil {
			return popped, err
		}
		for _, v := range vals {
			if err := l.dropEnd(left, int64(len(v))); err != nil {
				return popped, err
			}
			fn(v)
			popped++
		}
	}
	return popped, nil
}

// dropEnd deletes the element record at the head (left) or the tail, of
// size bytes, and moves the end past it.
func (l *List) dropEnd(left bool, size int64) error {
	idx := l.takeEnd(left, size)
	l.kb = codec.AppendListKey(l.kb[:0], l.pdb, l.key, l.e.Version, idx)
	return l.tx.batch.Delete(l.kb)
}

// leaveEnd is dropEnd for a list held by its ends: the record stays, in
// the garbage span of its end (listCache.gc), deleted with the others
// once listPoppedMax have been popped at that end.
func (l *List) leaveEnd(left bool, size int64) error {
	l.takeEnd(left, size)
	lc := l.e.list
	end := 1
	if left {
		end = 0
	}
	if lc.popped[end]++; lc.popped[end] < listPoppedMax {
		return nil
	}
	return l.deletePopped()
}

// deletePopped deletes the garbage spans of the list, held by its ends
// (listCache.gc).
func (l *List) deletePopped() error {
	var err error
	l.kb, err = deletePoppedRecords(l.tx.batch, l.kb, l.pdb, l.key, l.e)
	return err
}

// flushPopped deletes the garbage spans of a list held by its ends from
// which elements were popped (listCache.gc): before an edit that moves its
// ends or may make it whole, when it is held whole again, and when it is
// demoted.
func (l *List) flushPopped() error {
	if !l.e.list.hasPopped() {
		return nil
	}
	return l.deletePopped()
}

// deletePoppedRecords writes into b the deletion of the garbage spans of
// list e (listCache.gc), held by its ends, whose key is (pdb, key), and
// empties them. kb is a scratch buffer returned for reuse. Whatever the
// spans, it deletes nothing inside Head..Tail.
func deletePoppedRecords(b *coldstore.Batch, kb []byte, pdb uint8, key []byte, e *Entry) ([]byte, error) {
	lc := e.list
	kb, err := deleteListElems(b, kb, pdb, key, e.Version, min(lc.gc[0], e.Head), e.Head)
	if err != nil {
		return kb, err
	}
	if kb, err = deleteListElems(b, kb, pdb, key, e.Version, e.Tail, max(lc.gc[1], e.Tail)); err != nil {
		return kb, err
	}
	lc.holdByEnds(e, 0)
	return kb, nil
}

// takeEnd moves the head (left) or the tail past its element, of size
// bytes, and returns that element's index.
func (l *List) takeEnd(left bool, size int64) uint64 {
	e := l.e
	var idx uint64
	if left {
		idx = e.Head
		e.Head++
	} else {
		e.Tail--
		idx = e.Tail
	}
	e.Count--
	e.Bytes -= size
	l.dirty = true
	return idx
}

// dropEndLogOnly is dropEnd for a list written back (logOnly), whose
// element s was just taken off its end: the record's deletion goes to the
// write log only.
func (l *List) dropEndLogOnly(left bool, s string) error {
	e := l.e
	l.tx.noteListOp(l.hk, e, listPopLeft+boolOp(!left), s)
	lc := e.list
	idx := l.takeEnd(left, int64(len(s)))
	if idx >= lc.kept[0] && idx < lc.kept[1] {
		// A stored element: its record is deleted by the write-back.
		if left {
			lc.kept[0] = e.Head
		} else {
			lc.kept[1] = e.Tail
		}
	} else {
		l.tx.e.hot.addDirtyWeight(e, -listRecordWeight(l.hk, len(s)))
	}
	l.kb = codec.AppendListKey(l.kb[:0], l.pdb, l.key, e.Version, idx)
	return l.tx.batch.DeleteLogOnly(l.kb)
}

// refill makes sure the window at one end of a list held by its ends holds
// an element: if it is empty, the next listRefill elements are read from
// the store; when they reach the other window the two are merged into a
// whole list.
func (l *List) refill(left bool) error {
	lc, e := l.e.list, l.e
	if lc.whole || (left && lc.front.Len() > 0) || (!left && lc.back.Len() > 0) {
		return nil
	}
	middle := e.Count - int64(lc.front.Len()+lc.back.Len())
	// listRefill elements, or listWindowBytes at the list's average size.
	m := min(int64(listRefill), middle)
	if e.Bytes > 0 {
		m = min(m, max(1, listWindowBytes*e.Count/e.Bytes))
	}
	from, to := int64(0), m-1
	if !left {
		from, to = e.Count-m, e.Count-1
	}
	l.tx.e.Stats.ColdReads.Add(1)
	err := l.scanStore(from, to, false, func(_ int64, v []byte) bool {
		if left {
			lc.front.PushBack(string(v))
		} else {
			lc.back.PushBack(string(v))
		}
		return true
	})
	if err != nil {
		return err
	}
	if m == middle {
		// Held whole again: the garbage spans go first.
		if err := l.flushPopped(); err != nil {
			return err
		}
		for lc.back.Len() > 0 {
			lc.front.PushBack(lc.back.PopFront())
		}
		lc.back.Reset()
		lc.whole = true
	}
	lc.trimWindows() // elements bigger than the average
	return nil
}

// Close stores the list's meta record after writes, or deletes the key if
// it was emptied (Redis never keeps an empty list). It keeps the hot tier's
// accounting right: a whole list stays whole as it grows while it weighs at
// most the hot tier's share for one key (Engine.keepHot, as hashes, sets and
// sorted sets do); past that it is cut down to its ends, and a list that
// outgrew the hot tier is demoted.
// Closing a nil handle (a key that was not there) does nothing.
func (l *List) Close() error {
	if l == nil || !l.dirty {
		return nil
	}
	l.dirty = false
	tx, e := l.tx, l.e
	tx.hk = append(tx.hk[:0], l.hk...)
	if e.Count == 0 {
		if l.created {
			return nil
		}
		l.created = true
		return tx.remove(l.pdb, l.key, e)
	}
	stays := e.list != nil && e.list.whole && tx.e.keepHot(entrySize(l.key, e))
	if e.dirtyAt != 0 && stays {
		// Written back, and it stays so: its meta record too.
		if err := tx.putMetaLogOnly(l.pdb, l.key, e); err != nil {
			return err
		}
	} else {
		if e.list != nil && !stays {
			// It stops being whole or leaves the hot tier: a dirty list
			// is written back first.
			if err := l.beforeEdit(); err != nil {
				return err
			}
		}
		if err := tx.putMeta(l.pdb, l.key, e); err != nil {
			return err
		}
	}
	if l.created {
		l.created = false
		tx.addKeys(l.pdb, 1)
		tx.NoteReady(l.db, l.key)
	}
	lc := e.list
	if lc == nil {
		return nil
	}
	if lc.whole && !tx.e.keepHot(entrySize(l.key, e)) {
		lc.whole = false
		lc.holdByEnds(e, 0)
		for lc.front.Len() > listWindowElems {
			lc.back.PushFront(lc.front.PopBack())
		}
		lc.trimWindows()
		// The cut windows keep their ends; the deques give back memory.
		lc.front.Fill(lc.front.Slice())
		lc.back.Fill(lc.back.Slice())
		if int64(lc.front.Len()+lc.back.Len()) >= e.Count {
			lc.front.PopBack() // the windows must not meet
		}
	}
	if !tx.settleHot(l.hk, l.key, e, true) {
		if err := l.flushPopped(); err != nil { // demoted: its garbage spans go
			return err
		}
		e.list = nil
	}
	return nil
}

// duplicateList writes a copy of list e (src) as dst's elements under
// version v, at the same indexes, and returns the new entry: whole in
// memory if e is, otherwise cold.
func (tx *Tx) duplicateList(psrc uint8, src []byte, e *Entry, pdst uint8, dst []byte, v uint64) (*Entry, error) {
	ne := &Entry{Type: e.Type, ExpireAt: e.ExpireAt, Version: v, Count: e.Count, Bytes: e.Bytes, Head: e.Head, Tail: e.Tail}
	from := &List{tx: tx, pdb: psrc, key: src, e: e}
	if e.list != nil && e.list.whole {
		ne.list = &listCache{whole: true}
		ne.list.front.Fill(e.list.front.Slice())
	}
	var kbuf []byte
	var werr error
	err := from.Range(0, e.Count-1, false, func(i int64, val []byte) bool {
		kbuf, werr = putListElem(tx.batch, kbuf, pdst, dst, v, e.Head+uint64(i), val)
		return werr == nil
	})
	if err == nil {
		err = werr
	}
	return ne, err
}
