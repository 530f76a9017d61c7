// Package tiering decides where each key lives and keeps the hot tier and the
// cold store consistent.
//
// Embedded mode keeps every key in the cold store (Pebble) and a decoded copy
// of the hot ones in an in-process LRU under a byte budget. Writes go through
// to Pebble in the same atomic step that updates the hot copy (the WAL is the
// durability log, synced per appendfsync), so demotion is dropping the hot
// copy: it costs no I/O and a crash at any point leaves one consistent value.
// Reads of hot keys never touch Pebble. Reads of cold keys are served from
// Pebble and promote the key when the promotion policy admits it.
//
// All access goes through a Tx, which holds the engine's lock: commands are
// atomic, as in Redis.
package tiering

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/coldstore"
)

// Options configure an Engine.
type Options struct {
	// Databases is the number of logical databases (SELECT 0..n-1), at most 256.
	Databases int
	// HotBudget is the byte budget of the hot tier.
	HotBudget int64
	// PromoteMinHits is how many reads of a cold key (within the admission
	// window) promote it; 1 promotes on first touch.
	PromoteMinHits int
	// ColdReadMaxBytes: values larger than this are served from disk and
	// never promoted by a read.
	ColdReadMaxBytes int64
	// SweepPerTick bounds the expired keys removed per sweeper tick.
	SweepPerTick int
	// WriteThrough turns write-back off (writeback.go): every write
	// reaches the store's records at once (write-back yes|no, default
	// yes).
	WriteThrough bool
	Logger       *slog.Logger

	// For tests: keyCountSync replaces the records the start counts
	// before it leaves the rest to the background (keyCountSync), and
	// keyCountNoLoop leaves the rest to whatever needs the counts.
	keyCountSync   int
	keyCountNoLoop bool
}

// Stats are the engine's counters, readable without the lock.
type Stats struct {
	Demotions  atomic.Int64
	Promotions atomic.Int64
	// SteppedPromotions counts the promotions done in steps (big
	// structures), a subset of Promotions.
	SteppedPromotions atomic.Int64
	ColdReads         atomic.Int64
	ExpiredKeys       atomic.Int64
	EvictedKeys       atomic.Int64 // Tx.Evict
	ExpiredColdKeys   atomic.Int64
	KeyspaceHits      atomic.Int64
	KeyspaceMisses    atomic.Int64
	ReclaimedVers     atomic.Int64
	// LogOnlyWrites counts the overwrites of hot strings written to the
	// log only, Checkpoints the write-back checkpoints (writeback.go).
	LogOnlyWrites atomic.Int64
	Checkpoints   atomic.Int64
}

// ResetStats zeroes the resettable counters (CONFIG RESETSTAT).
func (s *Stats) ResetStats() {
	s.Demotions.Store(0)
	s.Promotions.Store(0)
	s.SteppedPromotions.Store(0)
	s.ColdReads.Store(0)
	s.ExpiredKeys.Store(0)
	s.ExpiredColdKeys.Store(0)
	s.EvictedKeys.Store(0)
	s.KeyspaceHits.Store(0)
	s.KeyspaceMisses.Store(0)
}

// Engine is the embedded keyspace: hot LRU plus cold store.
type Engine struct {
	mu    sync.Mutex
	cold  *coldstore.Store
	hot   *LRU
	opts  Options
	dbmap []uint8 // logical -> physical database, all 256
	keys  []int64 // per physical db: keys stored (hot and cold)
	exps  []int64 // per physical db: keys with an expiry
	// admission is the promotion policy (admission.go).
	admission *Admission
	tx        Tx
	// promoteQ feeds the stepwise promoter (big structures).
	promoteQ chan promoteJob
	// started is when the engine opened (unix ms).
	started int64
	// blockedClients is how many clients wait for a list or a sorted set (see
	// SetBlockedClients).
	blockedClients atomic.Int64
	// expiryPaused suspends the expiry sweeper (SetExpiryPaused).
	expiryPaused atomic.Bool
	// lfuLogFactor and lfuDecayMins are lfu-log-factor and
	// lfu-decay-time (SetLFU).
	lfuLogFactor, lfuDecayMins atomic.Int64
	// lfuDemotion: the hot tier demotes by LFU counters (SetLFUDemotion).
	lfuDemotion atomic.Bool
	// sweepObserver is told how long each sweep cycle took
	// (ObserveSweeps); nil: no one asked.
	sweepObserver atomic.Pointer[func(time.Duration)]
	// held is the open transaction's number (0 when none), so that a
	// goroutine can tell whether it holds the lock (Engine.HeldBy).
	held  atomic.Uint64
	txSeq uint64
	// writes counts the transactions that committed writes: a lock-free
	// cold read promotes only if it did not change in between (coldread.go).
	writes uint64
	// coldMetas: meta records of cold hashes and sets (coldread.go).
	coldMetas coldMetaCache
	// admitted is the read count of the key admit let in last, for the
	// promotion that follows it in the same hold of the lock.
	admitted uint32
	// layoutGen changes when a database's physical records move or vanish
	// wholesale (SWAPDB, FLUSHDB, FLUSHALL), under the lock: a Stage
	// written meanwhile is stale (stage.go).
	layoutGen uint64
	// reclaimGate keeps the version reclaimer off while Stages are open
	// (read-held by each; the reclaimer only try-locks it): their marked
	// versions must not be reclaimed before they are installed.
	reclaimGate sync.RWMutex
	// zbounds: how far cold sorted sets are known consumed (zset.go).
	zbounds zsetBounds
	// collHoles: the consumed parts of cold hashes and sets (coll.go).
	collHoles collHoles
	// expiryFloor: how far the expiry index is known swept (sweep.go).
	expiryFloor expiryFloor
	// floorLowered: the write log keeps log-only records for dirty hot
	// entries; wbBatch writes demoted dirty entries (writeback.go).
	floorLowered bool
	wbBatch      *coldstore.Batch
	wbKey        []byte // wbBatch's key buffer
	// checkpointMark is the log's size (LogWritten) when the last
	// checkpoint began.
	checkpointMark atomic.Int64

	Stats Stats
	// observer is told of key modifications (observe.go).
	observer observerState

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	// countsRestored reports whether this start took the key counts from
	// the record instead of scanning (for tests).
	countsRestored bool
	// count is the key count running in the background since the start
	// (nil when none runs: the counts are exact): see keyCount. countFailed:
	// it failed, so the counts are wrong and not recorded at Close.
	count       *keyCount
	countFailed bool
}

// Open builds the engine over an open cold store: it loads the database map
// and counts the keys on disk (logging progress), then starts the expiry
// sweeper and the version reclaimer.
func Open(cold *coldstore.Store, opts Options) (*Engine, error) {
	if opts.Databases <= 0 || opts.Databases > 256 {
		return nil, fmt.Errorf("tiering: databases %d out of range 1..256", opts.Databases)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.PromoteMinHits <= 0 {
		opts.PromoteMinHits = 1
	}
	if opts.SweepPerTick <= 0 {
		opts.SweepPerTick = 1000
	}
	e := &Engine{
		cold:     cold,
		hot:      NewLRU(opts.HotBudget),
		opts:     opts,
		keys:     make([]int64, 256),
		exps:     make([]int64, 256),
		stop:     make(chan struct{}),
		promoteQ: make(chan promoteJob, promoteQueueLen),
	}
	e.admission = NewAdmission(e.admissionSettings)
	e.SetLFU(defaultLFU.logFactor, defaultLFU.decayMins)
	e.tx = Tx{e: e, batch: cold.NewBatch()}
	e.wbBatch = cold.NewBatch()
	e.started = time.Now().UnixMilli()
	if err := e.loadDBMap(); err != nil {
		return nil, err
	}
	if err := e.loadKeyCounts(); err != nil {
		return nil, err
	}
	e.wg.Add(4)
	go e.sweepLoop()
	go e.reclaimLoop()
	go e.promoteLoop()
	go e.checkpointLoop()
	if e.count != nil && !e.opts.keyCountNoLoop {
		e.wg.Add(1)
		go e.countLoop()
	}
	return e, nil
}

// Close stops the background work. The caller closes the cold store.
func (e *Engine) Close() {
	e.closeOnce.Do(func() {
		close(e.stop)
		e.wg.Wait()
		// The dirty entries' records, so that the store holds everything
		// and the log can go (a failure leaves it to the next start's
		// replay).
		if _, err := e.Checkpoint(); err != nil {
			e.opts.Logger.Warn("the last write-back checkpoint failed; the next start replays the write log", "err", err)
		}
		e.saveKeyCounts()
	})
}

// saveKeyCounts durably records the key counts at a graceful shutdown, so
// that the next start skips the scan of every meta record (with ten
// million keys, a second or more). The next start trusts it only if no
// write at all reached the store in between (codec.SysKeyCountsSeq), so a
// transaction after Close or another writer makes it scan instead.
func (e *Engine) saveKeyCounts() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.counted() // a count still running is finished, so that the next start needs none
	if e.countFailed {
		e.opts.Logger.Warn("the key counts are not recorded: the key count failed; the next start counts again")
		return
	}
	seq, err := e.cold.SetSync(codec.AppendSystemKey(nil, codec.SysKeyCounts), codec.AppendKeyCounts(nil, e.keys, e.exps))
	if err == nil {
		_, err = e.cold.SetSync(codec.AppendSystemKey(nil, codec.SysKeyCountsSeq), codec.AppendUint64Value(nil, seq))
	}
	if err != nil {
		e.opts.Logger.Warn("could not record the key counts; the next start scans the store", "err", err)
	}
}

// loadKeyCounts sets the per-database key counts at start-up: from the
// record a graceful shutdown left, if nothing was written to the store
// since, or else by scanning the store. The record is deleted durably
// before anything is served, so a crash later cannot find it.
func (e *Engine) loadKeyCounts() error {
	countsKey := codec.AppendSystemKey(nil, codec.SysKeyCounts)
	seqKey := codec.AppendSystemKey(nil, codec.SysKeyCountsSeq)
	counts, found, err := e.cold.Get(countsKey, nil)
	if err != nil {
		return fmt.Errorf("tiering: read key counts: %w", err)
	}
	seqVal, seqFound, err := e.cold.Get(seqKey, nil)
	if err != nil {
		return fmt.Errorf("tiering: read key counts: %w", err)
	}
	if found || seqFound {
		next, err := e.cold.DeleteSync(countsKey, seqKey)
		if err != nil {
			return fmt.Errorf("tiering: delete key counts: %w", err)
		}
		saved, perr := codec.ParseUint64Value(seqVal)
		switch {
		case !found || !seqFound || perr != nil:
			e.opts.Logger.Warn("key counts record incomplete; scanning the store")
		case next != saved+2:
			e.opts.Logger.Warn("the store was written after the key counts were recorded; scanning it",
				"recorded_at", saved, "now", next)
		default:
			if perr = codec.ParseKeyCounts(counts, e.keys, e.exps); perr == nil {
				var n int64
				for _, k := range e.keys {
					n += k
				}
				e.opts.Logger.Info("key counts restored from the last graceful shutdown; no start-up scan", "keys_on_disk", n)
				e.countsRestored = true
				return nil
			}
			e.opts.Logger.Warn("key counts record unreadable; scanning the store", "err", perr)
		}
	}
	clear(e.keys)
	clear(e.exps)
	return e.startCount()
}

// Cold returns the cold store.
func (e *Engine) Cold() *coldstore.Store { return e.cold }

// Databases returns the number of logical databases.
func (e *Engine) Databases() int { return e.opts.Databases }

// loadDBMap loads the persisted logical-to-physical database map. The map
// always covers all 256 possible databases, whatever the configured count,
// so that changing `databases` between runs never reshuffles contents.
func (e *Engine) loadDBMap() error {
	e.dbmap = make([]uint8, 256)
	for i := range e.dbmap {
		e.dbmap[i] = uint8(i)
	}
	v, found, err := e.cold.Get(codec.AppendSystemKey(nil, codec.SysDBMap), nil)
	if err != nil {
		return fmt.Errorf("tiering: read database map: %w", err)
	}
	if !found {
		return nil
	}
	if len(v) > 256 {
		return fmt.Errorf("tiering: corrupt database map (%d bytes)", len(v))
	}
	// Entries past the stored map take the physical databases the stored
	// map does not use, in order.
	var used [256]bool
	for i, p := range v {
		if used[p] {
			return fmt.Errorf("tiering: corrupt database map: physical %d used twice", p)
		}
		used[p] = true
		e.dbmap[i] = p
	}
	next := 0
	for i := len(v); i < 256; i++ {
		for used[next] {
			next++
		}
		e.dbmap[i] = uint8(next)
		used[next] = true
	}
	return nil
}

// keyCount counts the keys stored when the engine opened (every meta
// record of a snapshot taken before any transaction), in the background:
// the engine serves meanwhile. Until the count is merged, Engine.keys and
// exps hold only what committed transactions added or removed since (as
// they always do: the deltas), which may be negative; the count's totals
// are added to them when it ends (Engine.counted). Whatever needs exact counts
// (DBSIZE, INFO's keyspace, FLUSHDB, a snapshot) calls Engine.counted
// under the lock, which finishes the count there and then; the all-hot
// shortcut and RANDOMKEY's empty check just skip theirs meanwhile.
//
// Why: after a crash (no counts saved by a graceful shutdown) the count
// read every meta record before the first command was served: about a
// second per 2,000,000 keys, five for the 10,000,000 of the restart goal,
// where the log's replay takes what the log holds.
type keyCount struct {
	// mu is held while a chunk is counted (by the background loop, or by
	// counted finishing it under the engine's lock); the loop never holds
	// it while taking the engine's lock.
	mu         sync.Mutex
	snap       *coldstore.Snapshot
	it         *coldstore.Iter
	valid      bool // it is positioned on a record not counted yet
	keys, exps [256]int64
	n          int64
	start      time.Time
	err        error
	released   bool
}

// keyCountChunk is how many meta records one hold of keyCount.mu counts;
// keyCountSync how many the start counts before it leaves the rest to
// the background (about 30 ms): a store that small is counted at once.
const (
	keyCountChunk = 4096
	keyCountSync  = 65536
)

// startCount starts the key count (the engine's counts are zero).
func (e *Engine) startCount() error {
	snap := e.cold.NewSnapshot()
	it, err := snap.NewIter([]byte{codec.NSMeta}, []byte{codec.NSMeta + 1})
	if err != nil {
		snap.Close()
		return fmt.Errorf("tiering: key count: %w", err)
	}
	c := &keyCount{snap: snap, it: it, start: time.Now()}
	c.valid = it.First()
	e.count = c
	// Not shared yet: neither lock is needed.
	if !c.step(cmp.Or(e.opts.keyCountSync, keyCountSync)) {
		e.opts.Logger.Info("counting the keys on disk in the background", "counted", c.n)
		return nil
	}
	e.counted() // a small store: counted at once
	return c.err
}

// step counts up to max records (all when max <= 0) and reports whether
// the count is over. c.mu is held.
func (c *keyCount) step(max int) bool {
	var m codec.Meta
	for i := 0; c.valid && c.err == nil && (max <= 0 || i < max); i++ {
		db, _, err := codec.ParseMetaKey(c.it.Key())
		if err == nil {
			var v []byte
			if v, err = c.it.ValueAndErr(); err == nil {
				err = codec.DecodeMeta(v, &m)
			}
		}
		if err != nil {
			c.err = fmt.Errorf("tiering: key count: %w", err)
			break
		}
		c.keys[db]++
		if m.ExpireAt != 0 {
			c.exps[db]++
		}
		c.n++
		c.valid = c.it.Next()
	}
	if !c.valid && c.err == nil {
		if err := c.it.Error(); err != nil {
			c.err = fmt.Errorf("tiering: key count: %w", err)
		}
	}
	return !c.valid || c.err != nil
}

// release closes the count's iterator and snapshot. c.mu is held, or the
// count is no longer shared.
func (c *keyCount) release() {
	if c.released {
		return
	}
	c.released = true
	c.it.Close()
	c.snap.Close()
}

// countLoop counts in chunks until the count is over, then merges it,
// unless the engine closes first (Close then finishes it).
func (e *Engine) countLoop() {
	defer e.wg.Done()
	e.mu.Lock()
	c := e.count
	e.mu.Unlock()
	if c == nil {
		return // counted already
	}
	last := time.Now()
	for {
		select {
		case <-e.stop:
			return // Close finishes it
		default:
		}
		c.mu.Lock()
		over := c.released || c.step(keyCountChunk)
		n := c.n
		c.mu.Unlock()
		if over {
			break
		}
		if time.Since(last) > 2*time.Second {
			last = time.Now()
			e.opts.Logger.Info("key count in progress", "keys", n, "elapsed", time.Since(c.start).Round(time.Millisecond))
		}
	}
	e.mu.Lock()
	e.counted()
	e.mu.Unlock()
}

// counted makes the key counts exact: it finishes the key count, if one
// runs, and adds its totals to the counts. The lock is held. A count that
// fails (a store error) leaves the counts as they are, logged.
func (e *Engine) counted() {
	c := e.count
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.released {
		return
	}
	c.step(0)
	e.count = nil
	c.release()
	if c.err != nil {
		e.countFailed = true
		e.opts.Logger.Error("the key count failed: DBSIZE and INFO keyspace are wrong until a restart", "err", c.err)
		return
	}
	for db := range c.keys {
		e.keys[db] += c.keys[db]
		e.exps[db] += c.exps[db]
	}
	e.opts.Logger.Info("key count done", "keys_on_disk", c.n, "elapsed", time.Since(c.start).Round(time.Millisecond))
}

// Hot returns the hot tier. Its methods need the engine's lock (inside a
// Tx); from elsewhere use HotStats.
func (e *Engine) Hot() HotTier { return e.hot }

// HotStats returns the hot tier's key count, used bytes and budget.
func (e *Engine) HotStats() (keys int, used, budget int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hot.Len(), e.hot.UsedBytes(), e.hot.Budget()
}

// Counting reports whether the key count of the start still runs in the
// background (KeysOnDisk would finish it, holding the lock meanwhile). A
// count runs only when the start found more keys than it counts at once:
// the store held keys then.
func (e *Engine) Counting() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.count != nil
}

// KeysOnDisk returns the number of keys stored, all databases.
func (e *Engine) KeysOnDisk() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.keysOnDisk()
}

// KeysOnDisk is Engine.KeysOnDisk for a holder of the lock (the keys the
// transaction's commands added or removed not counted yet).
func (tx *Tx) KeysOnDisk() int64 { return tx.e.keysOnDisk() }

func (e *Engine) keysOnDisk() int64 {
	e.counted()
	var n int64
	for _, k := range e.keys {
		n += k
	}
	return n
}

// CountLookups says whether the key lookups that follow count in
// Stats.KeyspaceHits or KeyspaceMisses: on for a client's read (Redis's
// lookupKeyRead), off for a write command's (lookupKeyWrite, which counts
// nothing) and for Spillway's own work (demotion, reloads, the sweeper).
// A transaction starts off; the server sets it before each command from
// the command's write flag, and a write command that reads a key (SET
// GET, SORT's source...) turns it on around that lookup, as Redis reads
// those.
func (tx *Tx) CountLookups(on bool) { tx.counted = on }

// AddLookup counts one lookup more (a hit if found) where Redis looks a
// key up that Spillway does not (XREAD's second pass over its keys, SCAN
// TYPE's candidates, OBJECT FREQ): nothing unless lookups are counted.
func (tx *Tx) AddLookup(found bool) {
	if found {
		tx.countHit()
	} else {
		tx.countMiss()
	}
}

// countHit and countMiss count a lookup's outcome unless it is a write's.
func (tx *Tx) countHit() {
	if tx.counted {
		tx.e.Stats.KeyspaceHits.Add(1)
	}
}

func (tx *Tx) countMiss() {
	if tx.counted {
		tx.e.Stats.KeyspaceMisses.Add(1)
	}
}

// begin starts a transaction: it takes the engine's lock, which commit or
// abort releases. now is the command's time in unix milliseconds. Outside
// this package the lock is taken only through Update and View.
func (e *Engine) begin() *Tx {
	e.mu.Lock()
	return e.beginHeld(0)
}

// beginHeld is begin for a caller that holds the lock already (a Run);
// nowMs is the transaction's time (Tx.Now), 0 to read the clock.
func (e *Engine) beginHeld(nowMs int64) *Tx {
	e.txSeq++
	e.held.Store(e.txSeq)
	tx := &e.tx
	if nowMs == 0 {
		nowMs = time.Now().UnixMilli()
	}
	tx.now = nowMs
	tx.collsUsed, tx.listsUsed, tx.zsetsUsed, tx.strmsUsed = 0, 0, 0, 0
	tx.ready = tx.ready[:0]
	tx.keepExpired, tx.liveExpired, tx.counted = false, false, false
	tx.touched = nil
	return tx
}

// SetExpiryPaused suspends (on) or resumes the expiry sweeper: while
// clients are paused (CLIENT PAUSE) Redis expires nothing.
func (e *Engine) SetExpiryPaused(on bool) { e.expiryPaused.Store(on) }

// TxID is the number of the transaction tx (valid while it is open).
func (tx *Tx) TxID() uint64 { return tx.e.txSeq }

// HeldBy reports whether transaction id (Tx.TxID) is still open: only its
// holder can see it so, which lets a command that panicked release the
// lock it holds (and only that one).
func (e *Engine) HeldBy(id uint64) bool { return id != 0 && e.held.Load() == id }

// AbortIfHeld aborts transaction id if it is still open: for a command
// that panicked while holding it. It reports whether it did.
func (e *Engine) AbortIfHeld(id uint64) bool {
	if !e.HeldBy(id) {
		return false
	}
	e.tx.abort()
	return true
}

// AddBlockedClients tells the engine that n more (or, negative, fewer)
// clients are blocked waiting for lists or sorted sets. While any are,
// transactions note the lists and sorted sets they create
// (Tx.TakeReady); otherwise they skip that work.
func (e *Engine) AddBlockedClients(n int64) { e.blockedClients.Add(n) }

// SetHotBudget changes the hot tier's budget and demotes down to it.
func (e *Engine) SetHotBudget(b int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hot.SetBudget(b)
	e.demoteOverBudget()
}

// SetPolicy changes the promotion policy at run time.
func (e *Engine) SetPolicy(minHits int, coldReadMax int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if minHits <= 0 {
		minHits = 1
	}
	e.opts.PromoteMinHits = minHits
	e.opts.ColdReadMaxBytes = coldReadMax
}

// demoteOverBudget drops least recently used hot copies until the hot tier
// fits its budget. Values are already durable in the cold store.
func (e *Engine) demoteOverBudget() {
	lfu := e.lfuDemotion.Load()
	var p lfuParams
	var now int64
	if lfu {
		p, now = e.lfu(), time.Now().UnixMilli()
	}
	for e.hot.used > e.hot.budget {
		var ok bool
		if lfu {
			ok = e.hot.demoteLFU(p, now)
		} else {
			ok = e.hot.demoteOldest()
		}
		if !ok {
			break
		}
		e.Stats.Demotions.Add(1)
	}
	e.writeBackEvicted()
}

// admissionSettings are the promotion policy's settings (read under the
// engine's lock).
func (e *Engine) admissionSettings() AdmissionSettings {
	return AdmissionSettings{MinHits: e.opts.PromoteMinHits, ColdReadMax: e.opts.ColdReadMaxBytes, HotBudget: e.hot.budget}
}

// admit is the promotion policy: it reports whether a cold value of size
// bytes read at nowMs should be promoted (see Admission.AdmitOver: when the
// tier has no room for it, the key must have been read more often than the
// entry it would displace). Reads are counted per hot key (physical
// database and key), hashed with codec.KeyHash. The key's read count is
// left in admitted for the promotion that follows (Tx.promote).
func (e *Engine) admit(hk []byte, size int64, nowMs int64) bool {
	full, rival := e.hot.rival(size, nowMs)
	ok, n := e.admission.AdmitOver(codec.KeyHash(hk), size, full, rival)
	e.admitted = n
	return ok
}

// keepHot reports whether a freshly written value of size bytes stays in the
// hot tier (writes allocate, unless the value would crowd out the tier).
func (e *Engine) keepHot(size int64) bool { return size <= e.hot.budget/8 }

// ErrCorrupt wraps cold records that cannot be decoded.
var ErrCorrupt = errors.New("tiering: corrupt record")

// PutSystem writes system record name (codec.Sys*) within the transaction:
// it is stored atomically with the transaction's other writes.
func (tx *Tx) PutSystem(name string, val []byte) error {
	return tx.batch.Set(codec.AppendSystemKey(nil, name), append([]byte(nil), val...))
}

// SystemRecord reads the committed system record name (codec.Sys*).
func (e *Engine) SystemRecord(name string) ([]byte, bool, error) {
	v, ok, err := e.cold.Get(codec.AppendSystemKey(nil, name), nil)
	if err != nil {
		return nil, false, fmt.Errorf("tiering: read system record %s: %w", name, err)
	}
	return v, ok, nil
}
