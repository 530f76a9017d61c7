package coldstore

import (
	"encoding/binary"
	"hash/maphash"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/batchrepr"

	"github.com/spillway/spillway/codec"
)

// pendIndex says what the records of a buffer of batches write: the
// commit queue's pending buffer (frames, commitq.go), the buffer of the
// round being applied, or one transaction's own batch (Batch.ownState).
// It is built as its buffer grows, never under the engine's lock:
// enqueueing a batch costs a slice append, and the commit queue's indexer
// (commitq.go) catches the index up off the queue's mutex every
// indexChunk bytes; a reader catches up the rest, and an application
// round coalesces with the index (an odd buffer's round builds its own:
// applier.applyFrames). A transaction's own batch is indexed when it
// first reads (Batch.ownState).
//
// Not safe for concurrent use: the queue's index is used under the
// queue's mutex, a Batch's by its one user.
type pendIndex struct {
	// keys maps a point key's hash to the offset in the buffer of the
	// last record of that hash.
	keys keyTable
	// records counts the records indexed; dropped has the bit of every
	// point record (by that count) that a later record of the same key
	// overwrites, which an application round need not apply.
	records int
	dropped []uint64
	// ranges are the offsets of the range deletions, in order.
	ranges []int
	// indexed is how much of the buffer is indexed, in bytes.
	indexed int
	// bornAt is how many of the buffer's born offsets (the records that
	// create their key: Batch.SetNew) the indexed part holds.
	bornAt int
	// odd: a record of an unexpected kind or a malformed one was seen;
	// every answer is then pendingUnknown.
	odd bool

	// For iterators, indexed apart, and only when an iterator needs it
	// (an iterator over the expiry index need not pay for the point
	// keys' table): span* for the first spanIndexed bytes of the buffer,
	// the namespace bits (nsBit) of every record, a range deletion's
	// whole span included, the range deletions' offsets, and whether a
	// record was odd; and the hashes of the structure prefixes
	// (structPrefix) of the data records in the first structsIndexed
	// bytes, each mapped to its entry of spans, where its records are
	// (structspan.go); structsAll when a data key had no such prefix
	// (every data iterator waits).
	spanNs      uint8
	spanRanges  []int
	spanOdd     bool
	spanIndexed int
	// expLo and expHi are the least and the greatest key of the expiry
	// index (codec.NSExpiry) among the point records in the first
	// spanIndexed bytes (slices of the buffer, whose bytes never change),
	// nil when none is: the sweeper's iterator over the entries due by
	// now need not wait for pending entries at later times (touches).
	expLo, expHi   []byte
	structs        keyTable
	spans          []structSpans
	structsIndexed int
	structsAll     bool
}

// maxPendingRanges bounds the range deletions a point read checks one by
// one; with more pending, reads of pending state are answered by applying
// (pendingUnknown).
const maxPendingRanges = 64

// reset empties the index, for a new buffer.
func (ix *pendIndex) reset() {
	ix.keys.reset()
	clear(ix.dropped[:min(len(ix.dropped), (ix.records+63)/64)])
	ix.ranges = ix.ranges[:0]
	ix.indexed, ix.odd, ix.records, ix.bornAt = 0, false, 0, 0
	ix.spanNs, ix.spanRanges, ix.spanOdd, ix.spanIndexed = 0, ix.spanRanges[:0], false, 0
	ix.expLo, ix.expHi = nil, nil
	ix.structs.reset()
	ix.spans = ix.spans[:0]
	ix.structsIndexed, ix.structsAll = 0, false
}

// isDropped reports whether record number i is overwritten by a later
// record of its key.
func (ix *pendIndex) isDropped(i int) bool {
	return i/64 < len(ix.dropped) && ix.dropped[i/64]&(1<<(i%64)) != 0
}

// catchUp indexes the frames of buf (a run of frames, wlog.go) after the
// part already indexed. born has the offsets in buf of the records that
// create their key (Batch.SetNew), in order (nil: none is known to).
func (ix *pendIndex) catchUp(buf []byte, born []int32, seed maphash.Seed) {
	if !eachFrame(buf, &ix.indexed, func(start, end int) bool {
		ix.add(buf, born, start, end, seed)
		return true
	}) {
		ix.odd = true
	}
}

// eachFrame calls fn with the records of each frame of buf (a run of
// frames, wlog.go) from offset *at on, as buf[start:end] (the batch
// without its header), moving *at past the frame first. It returns false
// at a torn frame (with *at at len(buf)) or when fn does.
func eachFrame(buf []byte, at *int, fn func(start, end int) bool) bool {
	for *at < len(buf) {
		repr, rest, ok := splitFrame(buf[*at:])
		if !ok {
			*at = len(buf)
			return false
		}
		start := *at + frameHeader + batchrepr.HeaderLen
		*at = len(buf) - len(rest)
		if !fn(start, start+len(repr)-batchrepr.HeaderLen) {
			return false
		}
	}
	return true
}

// catchUpBatch indexes the records of one batch's representation after
// the part already indexed (it only grows until the batch is reset).
func (ix *pendIndex) catchUpBatch(repr []byte, seed maphash.Seed) {
	if ix.indexed < batchrepr.HeaderLen {
		ix.indexed = batchrepr.HeaderLen
	}
	if ix.indexed >= len(repr) {
		return
	}
	ix.add(repr, nil, ix.indexed, len(repr), seed)
	ix.indexed = len(repr)
}

// add indexes the records of buf[start:end]; born is as for catchUp.
//
// A record of a key marks the key's earlier record in the buffer dropped:
// an application round need not apply it. And a key whose first record in
// the buffer created it (born: the store did not hold it before) is not
// in Pebble as far as the buffer goes, so its deletion is dropped too,
// with everything before it: a member added and removed within a round
// (a sorted set's score changed twice, a set's member added and popped)
// never reaches Pebble, where it cost a memtable insert, a tombstone and
// their compactions. What its records leave after the deletion stays born: the
// key is again not in Pebble.
func (ix *pendIndex) add(buf []byte, born []int32, start, end int, seed maphash.Seed) {
	r := batchrepr.Reader(buf[start:end])
	for ; ; ix.records++ {
		off := end - len(r)
		kind, ukey, _, ok, err := r.Next()
		if err != nil {
			ix.odd = true
			return
		}
		if !ok {
			return
		}
		switch kind {
		case pebble.InternalKeyKindRangeDelete:
			ix.ranges = append(ix.ranges, off)
			continue
		case pebble.InternalKeyKindLogData:
			continue // log-only (logonly.go): readers do not see it
		case pebble.InternalKeyKindSet, pebble.InternalKeyKindDelete:
		default:
			ix.odd = true
		}
		isBorn := kind == pebble.InternalKeyKindSet && ix.takeBorn(born, off)
		if prev, slot, ok := ix.keys.put(maphash.Bytes(seed, ukey), off, ix.records, isBorn); ok && !ix.odd {
			// The key's earlier record (not another key's of the same
			// hash) is overwritten.
			if _, pk, _, ok := recordAt(buf, prev.off); ok && string(pk) == string(ukey) {
				ix.drop(prev.rec)
				// Born or not is the key's first record's say.
				slot.setBorn(prev.born)
				if prev.born && kind == pebble.InternalKeyKindDelete {
					ix.drop(ix.records)
				}
			}
		}
	}
}

// takeBorn reports whether the record at off is one of born's, moving
// the index's place in born past off.
func (ix *pendIndex) takeBorn(born []int32, off int) bool {
	for ix.bornAt < len(born) && int(born[ix.bornAt]) < off {
		ix.bornAt++
	}
	if ix.bornAt < len(born) && int(born[ix.bornAt]) == off {
		ix.bornAt++
		return true
	}
	return false
}

func (ix *pendIndex) drop(i int) {
	for i/64 >= len(ix.dropped) {
		ix.dropped = append(ix.dropped, 0)
	}
	ix.dropped[i/64] |= 1 << (i % 64)
}

// find tells what the indexed records of buf say about key (h is its
// hash): notPending when none touches it; pendingSet with the value (in
// buf) when the last one sets it; pendingDel when the last one deletes
// it, a range deletion included; pendingUnknown when the index cannot
// tell (a hash collision with another key, too many range deletions, an
// odd record).
func (ix *pendIndex) find(buf, key []byte, h uint64) ([]byte, pendingState) {
	if ix.odd || len(ix.ranges) > maxPendingRanges {
		return nil, pendingUnknown
	}
	pointOff := -1
	var kind pebble.InternalKeyKind
	var rest []byte
	if e, ok := ix.keys.get(h); ok {
		off := e.off
		var k []byte
		kind, k, rest, ok = recordAt(buf, off)
		if !ok || string(k) != string(key) {
			return nil, pendingUnknown
		}
		pointOff = off
	}
	// A range deletion after the key's last point record deletes it.
	for i := len(ix.ranges) - 1; i >= 0 && ix.ranges[i] > pointOff; i-- {
		_, start, rest, ok := recordAt(buf, ix.ranges[i])
		if !ok {
			return nil, pendingUnknown
		}
		_, end, ok := batchrepr.DecodeStr(rest)
		if !ok {
			return nil, pendingUnknown
		}
		if string(start) <= string(key) && string(key) < string(end) {
			return nil, pendingDel
		}
	}
	if pointOff < 0 {
		return nil, notPending
	}
	switch kind {
	case pebble.InternalKeyKindSet:
		if _, v, ok := batchrepr.DecodeStr(rest); ok {
			return v, pendingSet
		}
	case pebble.InternalKeyKindDelete:
		return nil, pendingDel
	}
	return nil, pendingUnknown
}

// touches reports whether the indexed records of buf (a run of frames)
// may change what an iterator over [lower, upper) sees; span is the
// namespaces of that range (nsSpan). An iterator inside one data
// structure (structPrefix) only meets the records of that structure whose
// keys may be in its range (structSpans) and the range deletions
// overlapping it: reading a cold hash while other structures are written,
// or a list's tail while its head is pushed, needs no round.
func (ix *pendIndex) touches(buf, lower, upper []byte, span uint8, seed maphash.Seed, wantStructs *bool) bool {
	ix.catchUpSpans(buf)
	hits := ix.spanNs & span
	if ix.spanOdd {
		return true
	}
	if hits == 0 {
		return false
	}
	if hits == nsBitExpiry {
		// The expiry index alone (the sweeper's iterator, every 100 ms,
		// over the entries due by now): the entries that setting and
		// moving expiries write are mostly due later, outside its range,
		// where a round each time held the engine's lock for a whole
		// window's application under a load of SET ... EX.
		return ix.expLo != nil && (len(upper) == 0 || string(ix.expLo) < string(upper)) && string(lower) <= string(ix.expHi) ||
			ix.rangesMeet(buf, lower, upper)
	}
	p, ok := structPrefix(lower)
	if !ok || hits != nsBitData || len(upper) == 0 || !inStruct(p, upper) || len(ix.spanRanges) > maxPendingRanges {
		return true
	}
	*wantStructs = true
	ix.catchUpStructs(buf, seed)
	if ix.structsAll {
		return true
	}
	if e, ok := ix.structs.get(maphash.Bytes(seed, p)); ok && ix.spans[e.off].meets(buf, lower, upper) {
		return true
	}
	return ix.rangesMeet(buf, lower, upper)
}

// rangesMeet reports whether a pending range deletion may overlap
// [lower, upper) (an empty upper: no bound): one does, or there are too
// many to check, or one cannot be read.
func (ix *pendIndex) rangesMeet(buf, lower, upper []byte) bool {
	if len(ix.spanRanges) > maxPendingRanges {
		return true
	}
	for _, off := range ix.spanRanges {
		_, start, rest, ok := recordAt(buf, off)
		if !ok {
			return true
		}
		_, end, ok := batchrepr.DecodeStr(rest)
		if !ok || (len(upper) == 0 || string(start) < string(upper)) && string(lower) < string(end) {
			return true
		}
	}
	return false
}

// catchUpSpans notes the namespaces and range deletions of the records
// of buf after the part already scanned for them.
func (ix *pendIndex) catchUpSpans(buf []byte) {
	if !eachFrame(buf, &ix.spanIndexed, func(start, end int) bool {
		r := batchrepr.Reader(buf[start:end])
		for {
			off := end - len(r)
			kind, ukey, value, ok, err := r.Next()
			if err != nil {
				return false
			}
			if !ok {
				return true
			}
			switch {
			case kind == pebble.InternalKeyKindLogData:
			case kind == pebble.InternalKeyKindRangeDelete:
				ix.spanRanges = append(ix.spanRanges, off)
				ix.spanNs |= nsSpan(ukey, value)
			case kind != pebble.InternalKeyKindSet && kind != pebble.InternalKeyKindDelete:
				ix.spanOdd = true
			case len(ukey) > 0:
				ix.spanNs |= nsBit(ukey[0])
				if ukey[0] == codec.NSExpiry {
					if ix.expLo == nil || string(ukey) < string(ix.expLo) {
						ix.expLo = ukey
					}
					if ix.expHi == nil || string(ukey) > string(ix.expHi) {
						ix.expHi = ukey
					}
				}
			default:
				ix.spanNs |= nsBitOther
			}
		}
	}) {
		ix.spanOdd = true
	}
}

// catchUpStructs indexes the structure prefixes of the data records of
// buf after the part already indexed for them.
func (ix *pendIndex) catchUpStructs(buf []byte, seed maphash.Seed) {
	if !eachFrame(buf, &ix.structsIndexed, func(start, end int) bool {
		r := batchrepr.Reader(buf[start:end])
		for {
			off := end - len(r)
			kind, ukey, _, ok, err := r.Next()
			if err != nil {
				return false
			}
			if !ok {
				return true
			}
			if kind == pebble.InternalKeyKindRangeDelete || kind == pebble.InternalKeyKindLogData || len(ukey) == 0 || ukey[0] != codec.NSData {
				continue
			}
			p, ok := structPrefix(ukey)
			if !ok {
				ix.structsAll = true
				continue
			}
			h := maphash.Bytes(seed, p)
			e, ok := ix.structs.get(h)
			if !ok {
				e.off = len(ix.spans)
				ix.spans = append(ix.spans, structSpans{})
				ix.structs.put(h, e.off, 0, false)
			}
			ix.spans[e.off].add(buf, int32(off), ukey, len(p))
		}
	}) {
		ix.structsAll = true
	}
}

// structPrefix returns the prefix of data key k that one structure's
// records of one kind share: 'd' | db | keylen | key | version | tag
// (codec's data keys); ok is false when k is not that long.
func structPrefix(k []byte) ([]byte, bool) {
	const fixed = 1 + 1 + 4
	if len(k) < fixed || k[0] != codec.NSData {
		return nil, false
	}
	n := fixed + uint64(binary.BigEndian.Uint32(k[2:fixed])) + 8 + 1
	if uint64(len(k)) < n {
		return nil, false
	}
	return k[:n], true
}

// inStruct reports whether upper, an iterator's exclusive upper bound,
// keeps it inside the keys starting with p: upper starts with p, or is
// the first key after them (p with its last byte below 0xff incremented).
func inStruct(p, upper []byte) bool {
	if len(upper) >= len(p) && string(upper[:len(p)]) == string(p) {
		return true
	}
	end, ok := codec.AppendPrefixEnd(nil, p)
	return ok && string(upper) <= string(end)
}

// recordAt decodes the kind and key of the record at offset off of buf,
// and returns what follows the key (a Set's value, a range deletion's end).
func recordAt(buf []byte, off int) (pebble.InternalKeyKind, []byte, []byte, bool) {
	if off < 0 || off >= len(buf) {
		return 0, nil, nil, false
	}
	rest, k, ok := batchrepr.DecodeStr(buf[off+1:])
	return pebble.InternalKeyKind(buf[off]), k, rest, ok
}

// splitFrame splits the first frame off p without checking its checksum:
// for frames built in memory (the queue's buffers), which nothing could
// have damaged.
func splitFrame(p []byte) (repr, rest []byte, ok bool) {
	if len(p) < frameHeader {
		return nil, p, false
	}
	n := int(binary.LittleEndian.Uint32(p[:4]))
	if n == 0 || n > len(p)-frameHeader {
		return nil, p, false
	}
	return p[frameHeader : frameHeader+n], p[frameHeader+n:], true
}

// keyTable maps a key's hash to where its last record is: an
// open-addressing table (linear probing), which costs one probe sequence
// per record where a Go map lookup and insert cost two, and is cleared,
// not freed, between rounds.
type keyTable struct {
	slots []keySlot // a power of two long, at most half full
	n     int
}

// keySlot is one entry; h == 0 marks a free slot (a hash of 0 is stored
// as 1).
type keySlot struct {
	h   uint64
	off int32
	// rec is the record number, complemented (negative) when the key's
	// records in the buffer began with one that created it (born:
	// pendIndex.add); the slot stays 16 bytes, four to a cache line.
	rec int32
}

// setRec sets the slot's record number and born.
func (s *keySlot) setRec(rec int, born bool) {
	s.rec = int32(rec)
	if born {
		s.rec = ^s.rec
	}
}

// loc returns the slot's location.
func (s *keySlot) loc() keyLoc {
	if s.rec < 0 {
		return keyLoc{int(s.off), int(^s.rec), true}
	}
	return keyLoc{int(s.off), int(s.rec), false}
}

// setBorn sets the slot's born, keeping its record number.
func (s *keySlot) setBorn(born bool) { s.setRec(s.loc().rec, born) }

// keyLoc is where a key's record is: its offset and its record number,
// and the slot's born.
type keyLoc struct {
	off, rec int
	born     bool
}

// reset empties the table. A table far bigger than what it last held (a
// burst's) is dropped rather than cleared, so that it does not hold its
// memory, outside the budget, for good.
func (t *keyTable) reset() {
	if t.n == 0 {
		return
	}
	if len(t.slots) > 1<<10 && 8*t.n < len(t.slots) {
		// Clearing costs the capacity, not what was used: a table grown
		// by a burst and cleared after every small round (a cold sorted
		// set popped one member a command, each pop's round clearing a
		// 65,536-slot table: 10 µs) is dropped instead.
		t.slots = nil
	} else {
		clear(t.slots)
	}
	t.n = 0
}

// put maps h to (off, rec, born) and returns what it mapped before, if
// anything, and its slot (valid until the next put).
func (t *keyTable) put(h uint64, off, rec int, born bool) (keyLoc, *keySlot, bool) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	h = max(h, 1)
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch s.h {
		case 0:
			*s = keySlot{h: h, off: int32(off)}
			s.setRec(rec, born)
			t.n++
			return keyLoc{}, s, false
		case h:
			prev := s.loc()
			s.off = int32(off)
			s.setRec(rec, born)
			return prev, s, true
		}
	}
}

// get returns what h maps to.
func (t *keyTable) get(h uint64) (keyLoc, bool) {
	if t.n == 0 {
		return keyLoc{}, false
	}
	h = max(h, 1)
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch s := &t.slots[i]; s.h {
		case 0:
			return keyLoc{}, false
		case h:
			return s.loc(), true
		}
	}
}

func (t *keyTable) grow() {
	old := t.slots
	t.slots = make([]keySlot, max(16, 2*len(old)))
	t.n = 0
	for _, s := range old {
		if s.h != 0 {
			l := s.loc()
			t.put(s.h, l.off, l.rec, l.born)
		}
	}
}
