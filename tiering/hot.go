package tiering

import (
	"math/bits"
	"unsafe"

	"github.com/spillway/spillway/codec"
)

// HotTier is where hot keys live. Embedded mode uses the in-process LRU
// below; upstream mode (a later issue) uses the upstream Redis, which keeps
// the values itself and exposes the same accounting. Callers hold the
// engine's lock.
type HotTier interface {
	// Contains reports whether key (in physical database db) is hot, without
	// touching its recency.
	Contains(db uint8, key []byte) bool
	// Len is the number of hot keys.
	Len() int
	// UsedBytes is the memory the hot keys take, as the budget counts it.
	UsedBytes() int64
	// Budget is the byte budget; over it, the coldest keys are demoted.
	Budget() int64
}

// Entry is a decoded value held in the hot tier. It mirrors the key's meta
// record in the cold store exactly (write-through), so dropping it from the
// hot tier loses nothing, except while it is dirty: a hot string whose
// latest record is in the write log only (writeback.go).
//
// The fields a hot read touches (type, expiry, value, recency, counters,
// the loading state) come first, within the first 72 bytes, where they
// were spread over all of the entry's 200: an entry is read at a random
// place in memory, and each further cache line it spans may be a further
// miss. The order also packs the entry into 192 bytes, an allocation size
// class whose objects start on cache lines (208 before).
type Entry struct {
	Type codec.Type
	// ZSkip mirrors a sorted set's ZSetSkiplist meta flag.
	ZSkip bool
	// spared: LFU demotion passed the entry over once since its last
	// access (LRU.demoteLFU).
	spared bool
	// hits counts the key's reads: those that earned its promotion, then
	// every access while hot (the admission policy's weight, rivalHits).
	hits     uint32
	ExpireAt int64 // unix ms; 0 means no expiry
	// Str is a string's value. It is never modified in place: writers
	// replace it, so a reader holding the old slice sees a consistent value.
	Str []byte
	// access is when the key was last read or written (unix ms), for
	// OBJECT IDLETIME.
	access int64
	// lfu is the key's LFU counter (lfu.go) while hot.
	lfu lfuState
	// pos is when the entry was placed at the front of the tier's recency
	// list (LRU.clock).
	pos uint64
	// loading is set while a big structure is promoted in steps: fields
	// then holds only the fields up to loading's cursor, and reads are
	// served from the store.
	loading *loadState
	// fields is the decoded content of a hash or set held hot; nil for a
	// cold entry (read from the store).
	fields *fieldMap
	// list is the hot part of a list (nil for a cold one).
	list *listCache
	// zset is the hot copy of a sorted set (nil for a cold one).
	zset *zsetMem
	// strm is a stream's meta fields and, when loaded, its model.
	strm *streamState
	// prev and next link the entry in the tier's recency list.
	prev, next *Entry
	// Version, Count and Bytes mirror a structure's meta record: the version
	// its data records are written under, its field (member) count and the
	// total length of its fields and values.
	Version uint64
	Count   int64
	Bytes   int64
	// Head and Tail mirror a list's meta record: its elements are at
	// indexes Head..Tail-1.
	Head, Tail uint64
	size       int64
	// hk is the key's hot key (the tier's map key).
	hk string
	// metaGen counts the meta records written for the entry (Tx.putMeta),
	// so that a handle can tell whether anything else stored its meta
	// since it opened it (putMetaIfChanged).
	metaGen uint32
	// dirtyAt is the entry's place in LRU.dirty plus one, 0 when its
	// store record is its value (writeback.go). It fills the padding
	// after metaGen: the entry stays 192 bytes.
	dirtyAt uint32
}

// entryOverhead is what a hot entry costs on the Go heap beyond its key
// and value allocations: the Entry itself (its recency links included) and
// its map slot (with the map's growth slack). Measured, not guessed:
// TestHotStringAccountingMatchesHeap holds entrySize within 0.9x-1.3x of
// the heap a string entry really takes, so a change to Entry or to the LRU
// that moves it fails there.
const entryOverhead = 232

// allocSize approximates the bytes the Go allocator hands out for an
// n-byte object: its size classes step by 16 bytes up to 128 and by about
// an eighth of the size above (a 1,000-byte value takes 1,024); objects
// over 32 KB take whole 8 KB pages.
func allocSize(n int64) int64 {
	switch {
	case n <= 0:
		return 0
	case n <= 8:
		return 8
	case n <= 128:
		return (n + 15) &^ 15
	case n > 32<<10:
		return (n + 8<<10 - 1) &^ (8<<10 - 1)
	}
	step := int64(1) << (bits.Len64(uint64(n-1)) - 3)
	return (n + step - 1) &^ (step - 1)
}

// stringEntrySize is what a string entry of key holding val costs.
func stringEntrySize(key, val []byte) int64 {
	return allocSize(int64(len(key))+1) + allocSize(int64(len(val))) + entryOverhead
}

// entrySize is what e costs (or would cost) in the hot tier. A cold
// structure is weighed by its meta record's counts.
func entrySize(key []byte, e *Entry) int64 {
	n := stringEntrySize(key, e.Str)
	switch {
	case e.fields != nil:
		n += e.fields.size()
	case e.list != nil:
		n += e.list.size()
	case e.zset != nil:
		n += e.zset.size()
	case e.strm != nil && e.strm.mem != nil:
		n += e.strm.mem.Size()
	case e.Type != codec.TypeString:
		n += e.Bytes + e.Count*coldOverhead(e.Type)
	}
	return n
}

// coldOverhead is what one field, element or member of a cold structure
// is estimated to cost once loaded, beyond its bytes. The estimates are
// upper bounds of the hot copies' real cost, so that a structure admitted
// by its estimate is not demoted by its real size at its next write (and
// loaded again at its next read).
func coldOverhead(t codec.Type) int64 {
	switch t {
	case codec.TypeList:
		return 48 // a deque slot (string header, up to 2x slack) per element
	case codec.TypeZSet:
		return 128 // a skiplist node with its levels and a map entry
	}
	return fieldOverhead
}

// resident reports whether e holds its whole structure in memory.
func (e *Entry) resident() bool { return e.fields != nil && e.loading == nil }

// LRU is the embedded hot tier: decoded values in least-recently-used order
// under a byte budget. It is not safe for concurrent use; the Engine's lock
// guards it.
//
// The order is a doubly-linked list threaded through the entries
// themselves (Entry.prev, Entry.next: no list element of its own to reach
// and keep), most recently used first. A read moves its entry to the front
// unless the entry is already among the most recently placed eighth of the
// tier (touchWindow), where a move would change nothing demotion can see
// for a while: a hot key read over and over costs no list move, and
// demotion is exact LRU order but for keys within that eighth (a key read
// there is demoted as if read when it was last placed; with up to 15 keys,
// where the window is the front entry, the order is exact). Reads' moves
// are deferred and made in batches (LRU.touches), in the same order.
type LRU struct {
	m map[string]*Entry
	// root is the list's sentinel: root.next is the most recently used
	// entry, root.prev the least.
	root Entry
	// clock counts placements at the front (Entry.pos).
	clock  uint64
	used   int64
	budget int64
	// peak is the most used has been (stats.go); raised on growth only.
	peak int64
	// perDB counts the hot keys of each physical database: when it equals
	// the database's stored key count, every key is hot and a miss needs
	// no store lookup (Tx.loadCold).
	perDB [256]int64
	// touches are the entries reads marked recently used since the list
	// last changed, in the order of the reads, not moved yet: they are
	// moved to the front together (flushTouches) before anything else
	// reads or changes the list, so the order is as if each had moved at
	// its read. A move writes the entry's two neighbours, entries at
	// random places in memory: one move at a time, each read waited for
	// both cache misses; in a batch the CPU overlaps the misses of several
	// moves (GET -P 16 over 200,000 keys: the moves' share of the server's
	// CPU fell from about 12% to 5%).
	touches [touchBatch]*Entry
	nTouch  int

	// Write-back (writeback.go). dirty holds the entries whose store
	// record lags their value (Entry.dirtyAt), dirtyBytes about what
	// their keys and values take; evicted the dirty entries demotion
	// dropped, to be written (Engine.writeBackEvicted); undo what the
	// open transaction did to dirty entries (restoreDirty; restoring
	// while it runs), listUndo the lists' states undo refers to.
	dirty      []*Entry
	dirtyBytes int64
	evicted    []*Entry
	undo       []dirtyUndo
	listUndo   []listUndo
	restoring  bool
}

// touchBatch is how many reads' moves are deferred at most (LRU.touches).
const touchBatch = 16

// touchWindowShift sets the share of the tier (1/8: the most recently
// placed entries) whose reads do not move their entry (LRU).
const touchWindowShift = 3

// NewLRU returns an empty hot tier with the given byte budget.
func NewLRU(budget int64) *LRU {
	l := &LRU{m: make(map[string]*Entry), budget: budget}
	l.root.next, l.root.prev = &l.root, &l.root
	return l
}

// hotKey builds the LRU key (physical db byte + key) in buf.
func hotKey(buf []byte, db uint8, key []byte) []byte {
	buf = append(buf[:0], db)
	return append(buf, key...)
}

// view returns a string sharing b's bytes, for map lookups that do not
// retain the key.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// pushFront links e, not in the list, as the most recently used entry.
func (l *LRU) pushFront(e *Entry) {
	l.clock++
	e.pos = l.clock
	e.prev, e.next = &l.root, l.root.next
	l.root.next.prev = e
	l.root.next = e
}

// unlink takes e out of the list.
func (l *LRU) unlink(e *Entry) {
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = nil, nil
}

// moveFront makes e, in the list, the most recently used entry.
func (l *LRU) moveFront(e *Entry) {
	if l.root.next != e {
		l.unlink(e)
		l.pushFront(e)
	}
}

// touch marks e, in the list, recently used: it is moved to the front
// unless it is among the most recently placed eighth of the entries. The
// move is deferred (LRU.touches).
func (l *LRU) touch(e *Entry) {
	// The deferred moves will have advanced the clock by up to nTouch:
	// judged against that, an entry a move would have pushed out of the
	// window is moved (the order stays exact wherever it was: up to 15
	// keys, where the window is the front entry alone).
	if l.clock+uint64(l.nTouch)-e.pos >= uint64(len(l.m))>>touchWindowShift {
		if l.nTouch == len(l.touches) {
			l.flushTouches()
		}
		l.touches[l.nTouch] = e
		l.nTouch++
	}
}

// flushTouches moves the entries of the deferred touches to the front, in
// the order they were read. Every list operation but touch calls it first.
func (l *LRU) flushTouches() {
	for i, e := range l.touches[:l.nTouch] {
		l.moveFront(e)
		l.touches[i] = nil
	}
	l.nTouch = 0
}

// get returns the entry of hk and marks it recently used.
func (l *LRU) get(hk []byte) (*Entry, bool) {
	e, ok := l.m[view(hk)]
	if ok {
		l.touch(e)
	}
	return e, ok
}

// peek returns the entry of hk without touching its recency.
func (l *LRU) peek(hk []byte) (*Entry, bool) {
	e, ok := l.m[view(hk)]
	return e, ok
}

// put inserts or replaces hk's entry and marks it most recently used. The
// tier's key string is e.hk if it holds hk (stringValue's), else a copy of
// hk (or the replaced entry's).
func (l *LRU) put(hk []byte, e *Entry) {
	l.flushTouches()
	e.size = entrySize(hk[1:], e)
	own := e.hk == view(hk)
	if old, ok := l.m[view(hk)]; ok {
		l.used -= old.size
		if old != e {
			if !own {
				e.hk = old.hk
			}
			l.leaving(old, false)
			l.unlink(old)
			l.m[e.hk] = e // an existing key's string is replaced too
			l.pushFront(e)
		} else {
			l.moveFront(e)
		}
	} else {
		if !own {
			e.hk = string(hk)
		}
		l.m[e.hk] = e
		l.pushFront(e)
		l.perDB[hk[0]]++
	}
	l.used += e.size
	l.peak = max(l.peak, l.used)
}

// resize re-accounts e after its value changed in place.
func (l *LRU) resize(hk []byte, e *Entry) {
	n := entrySize(hk[1:], e)
	l.used += n - e.size
	e.size = n
	l.peak = max(l.peak, l.used)
}

// remove drops hk; it reports whether it was hot.
func (l *LRU) remove(hk []byte) bool {
	if e, ok := l.m[view(hk)]; ok {
		l.drop(e)
		return true
	}
	return false
}

// drop removes e, which the tier holds.
func (l *LRU) drop(e *Entry) {
	l.leaving(e, false)
	l.flushTouches()
	l.used -= e.size
	delete(l.m, e.hk)
	l.unlink(e)
	l.perDB[e.hk[0]]--
}

// oldest returns the least recently used entry, or nil.
func (l *LRU) oldest() *Entry {
	l.flushTouches()
	if e := l.root.prev; e != &l.root {
		return e
	}
	return nil
}

// rival reports whether taking a value of size bytes would displace an
// entry (the tier has no room for it) and, if so, the read count of the
// entry demoted first: the least recently used one's hits, halved per
// rivalHalfLifeMs since its last access.
func (l *LRU) rival(size, nowMs int64) (full bool, hits uint32) {
	if l.used+size <= l.budget {
		return false, 0
	}
	e := l.oldest()
	if e == nil {
		return false, 0
	}
	return true, e.hits >> min(max(nowMs-e.access, 0)/rivalHalfLifeMs, 31)
}

// demoteOldest drops the least recently used entry; it reports false when
// the tier is empty.
func (l *LRU) demoteOldest() bool {
	e := l.oldest()
	if e != nil {
		l.leaving(e, true)
		l.drop(e)
	}
	return e != nil
}

// lfuChances is how many entries one LFU demotion looks at, at most, as
// Redis samples maxmemory-samples (5) keys per eviction.
const lfuChances = 5

// demoteLFU drops one entry under an LFU maxmemory policy: the least
// recently used one, unless its LFU counter (decayed to now) says it was
// accessed since it was stored (above the initial 5) and it has not been
// passed over since its last access: then it moves to the most recently
// used end, once, and the next is considered, up to lfuChances entries
// (then the oldest goes whatever its counter). A key read often but not
// lately thus survives a scan of keys stored once, which the plain LRU
// order lets push it out. It reports false when the tier is empty.
func (l *LRU) demoteLFU(p lfuParams, nowMs int64) bool {
	for range lfuChances {
		e := l.oldest()
		if e == nil {
			return false
		}
		if e.spared || e.lfu.decayed(p, nowMs) <= lfuInitVal {
			break
		}
		e.spared = true
		l.moveFront(e) // passed over: now the most recently used
	}
	return l.demoteOldest()
}

// purge drops every entry.
func (l *LRU) purge() {
	l.flushTouches()
	for e := l.root.next; e != &l.root; {
		next := e.next
		l.leaving(e, false)
		e.prev, e.next = nil, nil
		e = next
	}
	clear(l.m)
	l.root.next, l.root.prev = &l.root, &l.root
	l.used = 0
	l.perDB = [256]int64{}
}

// removeDB drops every entry of physical database db.
func (l *LRU) removeDB(db uint8) {
	for hk, e := range l.m {
		if hk[0] == db {
			l.drop(e)
		}
	}
}

// Contains implements HotTier.
func (l *LRU) Contains(db uint8, key []byte) bool {
	var buf [64]byte
	_, ok := l.m[view(hotKey(buf[:0], db, key))]
	return ok
}

// LenDB is the number of hot keys of physical database db.
func (l *LRU) LenDB(db uint8) int64 { return l.perDB[db] }

// Len implements HotTier.
func (l *LRU) Len() int { return len(l.m) }

// UsedBytes implements HotTier.
func (l *LRU) UsedBytes() int64 { return l.used }

// Budget implements HotTier.
func (l *LRU) Budget() int64 { return l.budget }

// SetBudget changes the budget; the caller demotes down to it.
func (l *LRU) SetBudget(b int64) { l.budget = b }

// stringValue returns a copy of val for a string entry of hot key hk
// (nil if val is empty), allocated behind a copy of hk, and that copy as a
// string, to be the entry's hk: the tier's lookup compares the key and the
// command then reads the value in the same allocation, one memory access
// where two allocations cost two. The bytes are never modified.
func stringValue(hk, val []byte) (key string, str []byte) {
	buf := make([]byte, len(hk)+len(val))
	copy(buf, hk)
	copy(buf[len(hk):], val)
	key = unsafe.String(unsafe.SliceData(buf), len(hk))
	if len(val) > 0 {
		str = buf[len(hk):len(buf):len(buf)]
	}
	return key, str
}

// overwriteString is SetString over e, a hot string that stays hot: the
// entry is reused rather than replaced (no allocation but the value's
// copy: Str itself is never modified in place), and its recency is moved
// only if this transaction's lookup did not move it already. It ends as a
// fresh entry would (write with inherit): same LFU counter, touched once,
// read count reset. tx.hk must hold the key's hot key.
func (tx *Tx) overwriteString(pdb uint8, key []byte, e *Entry, val []byte, expireAt int64) error {
	touched := e == tx.touched
	tx.touched = nil
	logOnly := !tx.e.opts.WriteThrough && expireAt == e.ExpireAt
	if logOnly || e.dirtyAt != 0 {
		tx.e.hot.noteOverwrite(e)
	}
	if logOnly {
		if err := tx.overwriteLogOnly(pdb, key, e, val); err != nil {
			return err
		}
	} else {
		if err := tx.moveExpiry(pdb, key, e, expireAt); err != nil {
			return err
		}
		// Its record is written below: clean, at the weight it was
		// counted at (before the value changes).
		tx.e.hot.clean(e)
		e.ExpireAt = expireAt
		e.hk, e.Str = stringValue(tx.hk, val)
		if err := tx.putMeta(pdb, key, e); err != nil {
			return err
		}
	}
	tx.e.hot.m[e.hk] = e // the key string moves to the new allocation
	if !touched {
		e.lfu.touch(tx.e.lfu(), tx.now)
		tx.e.hot.flushTouches()
		tx.e.hot.moveFront(e) // most recently used
	}
	e.access, e.hits, e.spared = tx.now, 0, false
	tx.e.hot.resize(tx.hk, e)
	return nil
}
