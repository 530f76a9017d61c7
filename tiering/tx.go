package tiering

import (
	"fmt"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/coldstore"
)

// Tx is one atomic unit of work (a command, later a MULTI/EXEC or a script)
// over the keyspace, run by Engine.Update or Engine.View: it holds the
// engine's lock for the whole call. Databases are given by logical index.
//
// Entries returned by a Tx may be shared with the hot tier: callers must not
// modify them and must not keep them after the transaction ends.
type Tx struct {
	e   *Engine
	now int64
	// keepExpired: expired keys met are reported absent, not deleted
	// (KeepExpired).
	keepExpired bool
	// liveExpired: keys whose expiry passed are live (LiveExpired).
	liveExpired bool
	// counted: lookups are a client's reads, counted in
	// KeyspaceHits/KeyspaceMisses (CountLookups).
	counted bool
	batch   *coldstore.Batch
	hk      []byte
	mbuf    []byte
	kb      []byte // a record key buffer (writeBackList)
	meta    codec.Meta
	// deltas to the per-database counters, applied on commit
	keyDelta map[uint8]int64
	expDelta map[uint8]int64
	// swaps are the SWAPDBs applied to the engine's map by this transaction
	swaps [][2]int
	// colls is the pool of structure handles (see Tx.coll).
	colls     []*Coll
	collsUsed int
	lists     []*List
	listsUsed int
	zsets     []*ZSet
	zsetsUsed int
	strms     []*Stream
	strmsUsed int
	// ready are the lists created by this transaction while clients were
	// blocked (see Engine.SetBlockedClients).
	ready []ReadyKey
	// touched is the hot entry a lookup of this transaction last counted
	// as an access (LFU), so that a write over it does not count the same
	// command's access twice (Entry.inherit).
	touched *Entry
	// metaPend are the meta records left to write (Tx.deferMeta).
	metaPend []metaPending
	// outgrown are hot structures to demote at the end (Tx.outgrew).
	outgrown []*Entry
}

// ReadyKey names a key that became a list (or a sorted set): clients
// blocked on it may now be served.
type ReadyKey struct {
	DB  int
	Key []byte
}

// NoteReady records that key (logical database db) may now hold a list,
// if any client is blocked (otherwise nobody needs to know).
func (tx *Tx) NoteReady(db int, key []byte) {
	if tx.e.blockedClients.Load() == 0 {
		return
	}
	tx.ready = append(tx.ready, ReadyKey{DB: db, Key: append([]byte(nil), key...)})
}

// TakeReady returns and forgets the keys noted ready so far.
func (tx *Tx) TakeReady() []ReadyKey {
	r := tx.ready
	tx.ready = nil
	return r
}

// Now returns the transaction's clock, unix milliseconds.
func (tx *Tx) Now() int64 { return tx.now }

// Engine returns the engine the transaction runs on.
func (tx *Tx) Engine() *Engine { return tx.e }

func (tx *Tx) pdb(db int) uint8 { return tx.e.dbmap[db] }

func (tx *Tx) addKeys(pdb uint8, n int64) {
	if tx.keyDelta == nil {
		tx.keyDelta = make(map[uint8]int64)
	}
	tx.keyDelta[pdb] += n
}

func (tx *Tx) addExps(pdb uint8, n int64) {
	if n == 0 {
		return
	}
	if tx.expDelta == nil {
		tx.expDelta = make(map[uint8]int64)
	}
	tx.expDelta[pdb] += n
}

// commit queues the transaction's writes in the store's commit order
// (coldstore's Batch.Enqueue: atomically, as one batch) and releases the
// lock; Update then applies them outside it (Store.Drain), and every read
// of the store waits for them meanwhile. The returned Pending must be
// waited on before the writes are acknowledged (it is a no-op unless
// appendfsync is always). On error nothing was written and the hot tier is
// rebuilt from the cold store on demand.
func (tx *Tx) commit() (coldstore.Pending, error) {
	defer tx.e.mu.Unlock()
	return tx.commitHeld()
}

// commitHeld is commit without releasing the lock (a Run keeps it).
func (tx *Tx) commitHeld() (coldstore.Pending, error) {
	e := tx.e
	defer e.held.Store(0)
	err := tx.flushMeta()
	if !tx.batch.Empty() {
		e.writes++
	}
	var p coldstore.Pending
	if err == nil {
		p, err = tx.batch.Enqueue()
	} else {
		tx.batch.Abort()
	}
	if err != nil {
		// The hot copies may hold writes the store refused: drop them all so
		// that the cold store, which is unchanged, is the only authority
		// (but for the dirty entries, put back as they were).
		e.hot.restoreDirty()
		tx.demoteOutgrown(true)
		tx.undoSwaps()
		tx.resetDeltas()
		return coldstore.Pending{}, err
	}
	tx.demoteOutgrown(false)
	tx.swaps = tx.swaps[:0]
	for db, n := range tx.keyDelta {
		e.keys[db] += n
	}
	for db, n := range tx.expDelta {
		e.exps[db] += n
	}
	tx.resetDeltas()
	e.hot.forgetUndo()
	e.demoteOverBudget()
	e.settleFloor()
	return p, nil
}

// abort discards the transaction's writes and releases the lock.
func (tx *Tx) abort() {
	defer tx.e.mu.Unlock()
	tx.abortHeld()
}

// abortHeld is abort without releasing the lock (a Run keeps it).
func (tx *Tx) abortHeld() {
	e := tx.e
	defer e.held.Store(0)
	if !tx.batch.Empty() || len(tx.metaPend) > 0 || len(e.hot.undo) > 0 {
		e.hot.restoreDirty()
	}
	tx.clearMeta()
	tx.demoteOutgrown(true)
	tx.batch.Abort()
	tx.undoSwaps()
	tx.resetDeltas()
}

// allHot reports whether every key stored in physical database pdb,
// counting this transaction's writes, is in the hot tier. Hot entries
// mirror stored meta records (write-through), so equal counts mean the
// same set of keys.
func (tx *Tx) allHot(pdb uint8) bool {
	return tx.e.count == nil && tx.e.hot.LenDB(pdb) == tx.e.keys[pdb]+tx.keyDelta[pdb]
}

func (tx *Tx) resetDeltas() {
	clear(tx.keyDelta)
	clear(tx.expDelta)
}

func (tx *Tx) expired(e *Entry) bool {
	return e.ExpireAt != 0 && tx.now > e.ExpireAt && !tx.liveExpired
}

// LiveExpired makes the rest of the transaction treat keys whose expiry
// has passed as live, as a Redis replica's master client does: the
// replica applies its master's stream, where the master's DEL removes an
// expired key, and never decides an expiry itself (a command the master
// ran just before the expiry must find the key).
func (tx *Tx) LiveExpired() { tx.liveExpired = true }

// ExpiredLive reports whether LiveExpired is in effect: an expiry time
// already past is then set, not acted on by deleting the key (Redis's
// checkAlreadyExpired is false on a replica).
func (tx *Tx) ExpiredLive() bool { return tx.liveExpired }

// stored returns key's stored entry, expired or not, hot or cold, without
// promoting it or touching its recency. hk must hold the key's hot key.
func (tx *Tx) stored(pdb uint8, key, hk []byte) (*Entry, bool, error) {
	if e, ok := tx.e.hot.peek(hk); ok {
		return e, true, nil
	}
	e, err := tx.loadCold(pdb, key)
	return e, false, err
}

// live returns key's stored entry if it has not expired, setting tx.hk to
// its hot key. An expired key found here is deleted and counted, as Redis
// does when any command finds one, and reported as absent.
func (tx *Tx) live(pdb uint8, key []byte) (*Entry, bool, error) {
	tx.hk = hotKey(tx.hk, pdb, key)
	e, wasHot, err := tx.stored(pdb, key, tx.hk)
	if err != nil || e == nil {
		return nil, wasHot, err
	}
	if tx.expired(e) {
		return nil, wasHot, tx.expire(pdb, key, e, wasHot)
	}
	return e, wasHot, nil
}

// loadCold decodes key's meta record into a fresh Entry, or nil. When
// every stored key of the database is hot, a key the hot tier does not hold
// does not exist, and the store is not asked (GET of a missing key, SET of
// a new one cost no disk access while the dataset fits the budget).
func (tx *Tx) loadCold(pdb uint8, key []byte) (*Entry, error) {
	if e := tx.pendingEntry(pdb, key); e != nil {
		return e, nil // its record is not in the batch yet
	} else if tx.allHot(pdb) {
		return nil, nil
	}
	buf, found, err := tx.batch.GetMeta(pdb, key, &tx.meta, tx.mbuf)
	tx.mbuf = buf
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if !found {
		return nil, nil
	}
	return entryOfMeta(&tx.meta), nil
}

// entryOfMeta decodes a meta record into a fresh Entry (a string's value
// copied).
func entryOfMeta(m *codec.Meta) *Entry {
	e := &Entry{Type: m.Type, ExpireAt: m.ExpireAt}
	if m.Type == codec.TypeString {
		e.Str = append([]byte(nil), m.Value...)
	} else {
		e.Version, e.Count, e.Bytes = m.Version, int64(m.Count), int64(m.Bytes)
		e.Head, e.Tail = m.Head, m.Tail
		e.ZSkip = m.Flags&codec.ZSetSkiplist != 0
		if m.Type == codec.TypeStream {
			e.strm = &streamState{meta: m.Stream}
		}
	}
	return e
}

// Get returns key's live value, or nil if it does not exist or has expired
// (an expired key is deleted, as Redis's lazy expiry does). A hot key is
// marked recently used; a cold one is promoted if the policy admits it,
// otherwise it is served from disk and counted as a cold read.
func (tx *Tx) Get(db int, key []byte) (*Entry, error) {
	return tx.lookup(db, key, codec.TypeString, true)
}

// Peek is Get for commands that need only metadata (TYPE, TTL, EXISTS...):
// a cold key is answered from its meta record and never promoted.
func (tx *Tx) Peek(db int, key []byte) (*Entry, error) {
	return tx.lookup(db, key, codec.TypeNone, true)
}

// PeekNoTouch is Peek that leaves a hot key's access time alone (Redis's
// LOOKUP_NOTOUCH): TYPE, TTL, EXISTS and OBJECT look at a key without
// making it recently used, for OBJECT IDLETIME and for demotion alike.
func (tx *Tx) PeekNoTouch(db int, key []byte) (*Entry, error) {
	return tx.lookup(db, key, codec.TypeNone, false)
}

// lookup finds key's live entry. A cold key of type promote (TypeNone: none)
// is promoted if the policy admits it; a command that finds another type
// only needs the type (for WRONGTYPE), so that key stays cold.
func (tx *Tx) lookup(db int, key []byte, promote codec.Type, touch bool) (*Entry, error) {
	pdb := tx.pdb(db)
	tx.hk = hotKey(tx.hk, pdb, key)
	if e, ok := tx.e.hot.get(tx.hk); ok {
		return tx.hotHit(pdb, key, e, touch)
	}
	e, err := tx.loadCold(pdb, key)
	if err != nil || e == nil {
		tx.countMiss()
		return nil, err
	}
	if tx.expired(e) {
		tx.countMiss()
		return nil, tx.expire(pdb, key, e, false)
	}
	tx.countHit()
	if promote != codec.TypeNone && e.Type == promote && tx.promotable(key, e) && tx.e.admit(tx.hk, tx.promotedSize(key, e), tx.now) {
		switch {
		case e.Type == codec.TypeList:
			if err := tx.cacheList(pdb, key, e); err != nil {
				return nil, err
			}
		case e.Type == codec.TypeZSet:
			if err := tx.loadZSet(pdb, key, e); err != nil {
				return nil, err
			}
		case e.Type != codec.TypeString:
			if needsSteps(e) {
				// Served from disk this time; loaded in the background.
				tx.startPromotion(pdb, key, e)
				tx.e.Stats.ColdReads.Add(1)
				return e, nil
			}
			if err := tx.loadFields(pdb, key, e); err != nil {
				return nil, err
			}
		}
		tx.promote(e)
		return e, nil
	}
	tx.e.Stats.ColdReads.Add(1)
	return e, nil
}

// promote puts cold entry e, loaded whole, into the hot tier under tx.hk.
func (tx *Tx) promote(e *Entry) {
	e.access = tx.now
	e.hits, tx.e.admitted = tx.e.admitted, 0
	tx.e.hot.put(tx.hk, e)
	tx.e.Stats.Promotions.Add(1)
}

// hotHit accounts a lookup that found e in the hot tier (tx.hk): an
// expired entry is deleted and reported absent.
func (tx *Tx) hotHit(pdb uint8, key []byte, e *Entry, touch bool) (*Entry, error) {
	if tx.expired(e) {
		tx.countMiss()
		return nil, tx.expire(pdb, key, e, true)
	}
	tx.countHit()
	if touch {
		e.access = tx.now
		if e.hits != ^uint32(0) {
			e.hits++
		}
		e.lfu.touch(tx.e.lfu(), tx.now)
		e.spared = false
		tx.touched = e
	}
	if e.loading != nil {
		tx.e.Stats.ColdReads.Add(1)
	}
	return e, nil
}

// KeepExpired makes the rest of the transaction report the expired keys
// it meets absent without deleting or counting them, as Redis leaves the
// dataset alone while clients are paused (CLIENT PAUSE): the server calls
// it for a command that writes nothing. A transaction that writes must
// not call it (a write over a kept key would count the key twice).
func (tx *Tx) KeepExpired() { tx.keepExpired = true }

// expire deletes an expired key found by a lookup (unless KeepExpired).
func (tx *Tx) expire(pdb uint8, key []byte, e *Entry, wasHot bool) error {
	if tx.keepExpired {
		return nil
	}
	tx.e.Stats.ExpiredKeys.Add(1)
	if !wasHot {
		tx.e.Stats.ExpiredColdKeys.Add(1)
	}
	tx.observe(pdb, key, KeyExpired)
	return tx.drop(pdb, key, e)
}

// remove deletes a stored key (both tiers). tx.hk must hold its hot key.
func (tx *Tx) remove(pdb uint8, key []byte, old *Entry) error {
	tx.observe(pdb, key, KeyDeleted)
	return tx.drop(pdb, key, old)
}

// drop is remove without the observer's event.
func (tx *Tx) drop(pdb uint8, key []byte, old *Entry) error {
	// dropData reads the meta record: it must run before the delete.
	if err := tx.dropData(pdb, key, old); err != nil {
		return err
	}
	tx.unpend(pdb, key)
	if err := tx.batch.DeleteMeta(pdb, key); err != nil {
		return err
	}
	if old.ExpireAt != 0 {
		if err := tx.batch.DeleteExpiry(old.ExpireAt, pdb, key); err != nil {
			return err
		}
		tx.addExps(pdb, -1)
	}
	tx.addKeys(pdb, -1)
	tx.e.hot.remove(tx.hk)
	if old.Type == codec.TypeStream {
		tx.noteStreamGone(pdb, key)
	}
	return nil
}

// dropData schedules the data records of a structure for reclamation, in
// O(1): a garbage record the background reclaimer acts on. Strings have
// none: their value is in the meta record.
func (tx *Tx) dropData(pdb uint8, key []byte, old *Entry) error {
	count := uint64(old.Count)
	if old.dirtyAt != 0 && old.list != nil {
		// A written-back list: the store holds its records as they were.
		count = max(count, old.list.stored[1]-old.list.stored[0])
	}
	if old.Type == codec.TypeString || count == 0 && old.Type != codec.TypeStream {
		return nil
	}
	return tx.batch.DropVersion(pdb, key, old.Version, count)
}

// Evict removes key as Redis's eviction does, when the memory budget
// cannot be met and maxmemory-policy asks for it (the caller applies the
// policy: volatile keeps keys without an expiry): the key is gone from
// both tiers, observed as KeyEvicted and counted in Stats.EvictedKeys. It
// reports whether a live key was removed. Demotion is not eviction; this
// is the only way a key is evicted.
func (tx *Tx) Evict(db int, key []byte) (bool, error) {
	pdb := tx.pdb(db)
	old, _, err := tx.live(pdb, key)
	if err != nil || old == nil {
		return false, err
	}
	tx.e.Stats.EvictedKeys.Add(1)
	tx.observe(pdb, key, KeyEvicted)
	return true, tx.drop(pdb, key, old)
}

// Delete removes key; it reports whether a live key was removed.
func (tx *Tx) Delete(db int, key []byte) (bool, error) {
	pdb := tx.pdb(db)
	old, _, err := tx.live(pdb, key)
	if err != nil || old == nil {
		return false, err
	}
	return true, tx.remove(pdb, key, old)
}

// SetString stores val (copied) as key's string value with the given expiry
// (unix ms, 0 for none), replacing whatever key held.
func (tx *Tx) SetString(db int, key, val []byte, expireAt int64) error {
	pdb := tx.pdb(db)
	old, wasHot, err := tx.live(pdb, key)
	if err != nil {
		return err
	}
	if wasHot && old != nil && old.Type == codec.TypeString &&
		tx.e.keepHot(stringEntrySize(key, val)) {
		return tx.overwriteString(pdb, key, old, val, expireAt)
	}
	e := &Entry{Type: codec.TypeString, ExpireAt: expireAt}
	e.hk, e.Str = stringValue(tx.hk, val) // the hot tier's key and the value in one allocation
	e.inherit(old, old != nil && old == tx.touched, tx.e.lfu(), tx.now)
	tx.touched = nil
	return tx.write(pdb, key, old, e)
}

// write stores e under key, replacing old (nil if absent). tx.hk must hold
// the key's hot key. e becomes owned by the tier.
func (tx *Tx) write(pdb uint8, key []byte, old, e *Entry) error {
	if old != nil && old.Type == codec.TypeStream {
		tx.noteStreamGone(pdb, key)
	}
	if old == nil {
		tx.addKeys(pdb, 1)
	} else if old.Type != codec.TypeString && (old.Type != e.Type || old.Version != e.Version) {
		if err := tx.dropData(pdb, key, old); err != nil {
			return err
		}
	}
	if err := tx.moveExpiry(pdb, key, old, e.ExpireAt); err != nil {
		return err
	}
	if err := tx.putMeta(pdb, key, e); err != nil {
		return err
	}
	if tx.e.keepHot(entrySize(key, e)) && (e.Type == codec.TypeString || e.resident() || e.list != nil || e.zset != nil || e.strm != nil && e.strm.mem != nil) {
		e.access = tx.now
		tx.e.hot.put(tx.hk, e)
	} else {
		tx.e.hot.remove(tx.hk)
	}
	return nil
}

// settleHot keeps e, whose in-memory part a write just changed, in the hot
// tier if it may stay there (allowed, and within keepHot's share of the
// budget): it is accounted at its new size, or put there if it was not.
// Otherwise it is demoted, and settleHot reports false: the caller drops
// the in-memory part (the store holds everything).
func (tx *Tx) settleHot(hk, key []byte, e *Entry, allowed bool) bool {
	_, hot := tx.e.hot.peek(hk)
	switch {
	case !allowed || !tx.e.keepHot(entrySize(key, e)):
		if hot {
			tx.e.hot.remove(hk)
			tx.e.Stats.Demotions.Add(1)
		}
		return false
	case hot:
		tx.e.hot.resize(hk, e)
	default:
		e.access = tx.now
		tx.e.hot.put(hk, e)
	}
	return true
}

// moveExpiry updates the expiry index for a key whose expiry changes from
// old's (nil: none) to at.
func (tx *Tx) moveExpiry(pdb uint8, key []byte, old *Entry, at int64) error {
	var was int64
	if old != nil {
		was = old.ExpireAt
	}
	if was == at {
		return nil
	}
	if was != 0 {
		if err := tx.batch.DeleteExpiry(was, pdb, key); err != nil {
			return err
		}
		tx.addExps(pdb, -1)
	}
	if at != 0 {
		if err := tx.batch.PutExpiry(at, pdb, key); err != nil {
			return err
		}
		tx.e.expiryWritten(at, pdb, key) // the sweeper's floor (sweep.go)
		tx.addExps(pdb, 1)
	}
	return nil
}

// SetExpire sets a live key's expiry (unix ms; 0 removes it, as PERSIST). It
// reports whether the key exists. A cold key stays cold.
func (tx *Tx) SetExpire(db int, key []byte, at int64) (bool, error) {
	pdb := tx.pdb(db)
	old, wasHot, err := tx.live(pdb, key)
	if err != nil || old == nil {
		return false, err
	}
	if old.ExpireAt == at {
		return true, nil
	}
	if old.dirtyAt != 0 {
		tx.e.hot.noteOverwrite(old) // its expiry changes in place
	}
	if err := tx.moveExpiry(pdb, key, old, at); err != nil {
		return true, err
	}
	if err := tx.rewriteMeta(pdb, key, old, at); err != nil {
		return true, err
	}
	if wasHot {
		old.ExpireAt = at
	}
	return true, nil
}

// rewriteMeta rewrites key's meta record with a new expiry.
func (tx *Tx) rewriteMeta(pdb uint8, key []byte, old *Entry, at int64) error {
	was := old.ExpireAt
	old.ExpireAt = at
	err := tx.putMeta(pdb, key, old)
	old.ExpireAt = was
	return err
}

// Copy copies src (db) to dst (dstDB), keeping its expiry. With replace it
// overwrites an existing dst; without, an existing dst makes it a no-op that
// returns false. It reports whether a copy was made.
func (tx *Tx) Copy(db int, src []byte, dstDB int, dst []byte, replace bool) (bool, error) {
	e, err := tx.Peek(db, src)
	if err != nil || e == nil {
		return false, err
	}
	psrc, pdst := tx.pdb(db), tx.pdb(dstDB)
	old, _, err := tx.live(pdst, dst)
	if err != nil {
		return false, err
	}
	if old != nil && !replace {
		return false, nil
	}
	ne, err := tx.duplicate(psrc, src, e, pdst, dst)
	if err != nil {
		return false, err
	}
	tx.hk = hotKey(tx.hk, pdst, dst)
	if err := tx.write(pdst, dst, old, ne); err != nil {
		return false, err
	}
	tx.noteWritten(dstDB, dst, ne)
	return true, nil
}

// noteWritten notes a key that a copy or a move made a list as ready.
func (tx *Tx) noteWritten(db int, key []byte, e *Entry) {
	if e.Type == codec.TypeList || e.Type == codec.TypeZSet || e.Type == codec.TypeStream {
		tx.NoteReady(db, key)
	}
}

// promotable reports whether cold entry e may be promoted at all: a sorted
// set too big to be held whole is always served from the store.
func (tx *Tx) promotable(key []byte, e *Entry) bool {
	return e.Type != codec.TypeZSet || tx.e.fitsWholeZSet(key, e)
}

// promotedSize is what promoting cold entry e would cost the hot tier: a
// list too big to be held whole is held by its ends.
func (tx *Tx) promotedSize(key []byte, e *Entry) int64 {
	if e.Type == codec.TypeList && !tx.e.fitsWhole(key, e) {
		return listEndsSize(key)
	}
	return entrySize(key, e)
}

// Rename moves src (db) to dst (dstDB), overwriting dst unless nx, in which
// case an existing dst leaves everything unchanged. It returns whether src
// existed and whether the move happened.
func (tx *Tx) Rename(db int, src []byte, dstDB int, dst []byte, nx bool) (exists, moved bool, err error) {
	e, err := tx.Peek(db, src)
	if err != nil || e == nil {
		return false, false, err
	}
	psrc, pdst := tx.pdb(db), tx.pdb(dstDB)
	if psrc == pdst && string(src) == string(dst) {
		return true, !nx, nil
	}
	old, _, err := tx.live(pdst, dst)
	if err != nil {
		return true, false, err
	}
	if old != nil && nx {
		return true, false, nil
	}
	ne, err := tx.duplicate(psrc, src, e, pdst, dst)
	if err != nil {
		return true, false, err
	}
	tx.hk = hotKey(tx.hk, pdst, dst)
	if err := tx.write(pdst, dst, old, ne); err != nil {
		return true, false, err
	}
	tx.noteWritten(dstDB, dst, ne)
	tx.hk = hotKey(tx.hk, psrc, src)
	return true, true, tx.remove(psrc, src, e)
}

// IdleMillis returns how long key has gone untouched, without touching it:
// exact for a hot key; for a cold key (whose access time is not kept) the
// time since the engine started, a lower bound. It reports false if key
// does not exist.
func (tx *Tx) IdleMillis(db int, key []byte) (int64, bool, error) {
	e, wasHot, err := tx.live(tx.pdb(db), key)
	if err != nil || e == nil {
		return 0, false, err
	}
	if wasHot {
		return max(tx.now-e.access, 0), true, nil
	}
	return max(tx.now-tx.e.started, 0), true, nil
}

// SetIdleMillis backdates the last access of key (database db) by ms
// milliseconds, as RESTORE ... IDLETIME sets a key's LRU clock, so that
// IdleMillis reports it. Only a hot key keeps an access time: for a cold
// or missing key it does nothing and reports false.
func (tx *Tx) SetIdleMillis(db int, key []byte, ms int64) (bool, error) {
	e, wasHot, err := tx.live(tx.pdb(db), key)
	if err != nil || e == nil || !wasHot {
		return false, err
	}
	e.access = tx.now - ms
	return true, nil
}

// DBSize returns the number of keys in db, hot and cold (keys that expired
// but were not yet swept included, as Redis counts them).
func (tx *Tx) DBSize(db int) int64 {
	pdb := tx.pdb(db)
	tx.e.counted()
	return tx.e.keys[pdb] + tx.keyDelta[pdb]
}

// Expires returns the number of keys with an expiry in db.
func (tx *Tx) Expires(db int) int64 {
	pdb := tx.pdb(db)
	tx.e.counted()
	return tx.e.exps[pdb] + tx.expDelta[pdb]
}

// FlushDB removes every key of db from both tiers, in O(1) store writes.
func (tx *Tx) FlushDB(db int) error {
	pdb := tx.pdb(db)
	if err := tx.flushPhysical(pdb); err != nil {
		return err
	}
	tx.e.hot.removeDB(pdb)
	return nil
}

// FlushAll removes every key of every database.
func (tx *Tx) FlushAll() error {
	for db := 0; db < tx.e.opts.Databases; db++ {
		if err := tx.flushPhysical(tx.pdb(db)); err != nil {
			return err
		}
	}
	tx.e.hot.purge()
	return nil
}

func (tx *Tx) flushPhysical(pdb uint8) error {
	tx.e.layoutGen++ // open Stages of pdb are stale
	tx.unpendDB(pdb)
	for _, ns := range []byte{codec.NSMeta, codec.NSData} {
		lo := []byte{ns, pdb}
		if err := tx.batch.DeleteRange(lo, codec.PrefixEnd(lo)); err != nil {
			return err
		}
	}
	// Expiry index entries of the flushed keys are left for the sweeper,
	// which drops entries whose key no longer carries that expiry.
	tx.e.counted()
	tx.addKeys(pdb, -(tx.e.keys[pdb] + tx.keyDelta[pdb]))
	tx.addExps(pdb, -(tx.e.exps[pdb] + tx.expDelta[pdb]))
	return nil
}

// SwapDB exchanges two logical databases in O(1). The swap is undone if
// the transaction aborts or fails to commit.
func (tx *Tx) SwapDB(a, b int) error {
	m := tx.e.dbmap
	m[a], m[b] = m[b], m[a]
	tx.e.layoutGen++ // open Stages of a and b are stale
	tx.swaps = append(tx.swaps, [2]int{a, b})
	return tx.batch.Set(codec.AppendSystemKey(nil, codec.SysDBMap), append([]byte(nil), m...))
}

// undoSwaps reverts the database swaps of a transaction that did not commit.
func (tx *Tx) undoSwaps() {
	m := tx.e.dbmap
	for i := len(tx.swaps) - 1; i >= 0; i-- {
		a, b := tx.swaps[i][0], tx.swaps[i][1]
		m[a], m[b] = m[b], m[a]
	}
	tx.swaps = tx.swaps[:0]
}

// Demote drops key's hot copy now (its record written first if it lags:
// writeback.go) and reports whether it was hot. It is demotion on demand,
// for tests and tools: the key's next read is a cold read.
func (tx *Tx) Demote(db int, key []byte) (bool, error) {
	pdb := tx.pdb(db)
	tx.hk = hotKey(tx.hk, pdb, key)
	if e, ok := tx.e.hot.peek(tx.hk); ok && e.dirtyAt != 0 {
		// Its record lags (writeback.go): written first.
		if err := tx.writeMeta(pdb, key, e); err != nil {
			return false, err
		}
	} else if ok && e.list.hasPopped() {
		var err error // a list held by its ends: its garbage spans go
		if tx.kb, err = deletePoppedRecords(tx.batch, tx.kb, pdb, key, e); err != nil {
			return false, err
		}
	}
	if !tx.e.hot.remove(tx.hk) {
		return false, nil
	}
	tx.e.Stats.Demotions.Add(1)
	return true, nil
}
