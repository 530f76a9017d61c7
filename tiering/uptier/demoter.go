package uptier

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/tiering"
)

// DemoterOptions configure a Demoter.
type DemoterOptions struct {
	// Budget returns the upstream's used_memory budget (maxmemory); 0
	// disables demotion.
	Budget func() int64
	// Interval is how often used_memory is polled while under budget.
	Interval time.Duration
	// Batch is how many keys one demotion round moves at most.
	Batch int
	// Databases is the number of databases to demote from.
	Databases int
	// Census, if set, is held shared while keys are in both tiers (from the
	// store write to the upstream UNLINK), so that a count taken under its
	// exclusive side counts each key once.
	Census *sync.RWMutex
	Logger *slog.Logger
	// Cluster, if set, reports whether the upstream is a Redis Cluster
	// node: a demotion then moves the keys of one hash slot at a time
	// (demoteBySlot), as the node refuses WATCH and transactions across
	// slots (CROSSSLOT).
	Cluster func() bool
	// Demoted, if set, is told the keys of each demotion that moved, while
	// the Census is still held (SlotDirectory.Demoted).
	Demoted func(db int, keys [][]byte)
	// UnlinkMarker, if set, is added as a last key to each demotion's
	// UNLINK (a key that never exists: UNLINK ignores it), so that a
	// reader of the upstream's replication stream can tell demotions from
	// clients' deletions (Spillway's replication relay leaves them out;
	// the upstream's own replicas apply them). Not in cluster mode, where
	// it would cross slots.
	UnlinkMarker []byte
	// BeforeUnlink, if set, runs once the keys' cold copies are written
	// and synced, before they are removed upstream: an error aborts the
	// demotion (the copies are dropped, the keys stay upstream). A cluster
	// sidecar waits there for its cold followers' acknowledgement.
	BeforeUnlink func(db int, keys [][]byte) error
	// Dropped, if set, is told the keys whose cold copies an aborted
	// demotion dropped.
	Dropped func(db int, keys [][]byte)
	// Paused, if set, holds demotion rounds while it reports true (a
	// cluster sidecar whose node is a replica, or whose replicas have no
	// cold follower yet).
	Paused func() bool
}

// Demoter keeps the upstream under its memory budget. Each round samples
// keys (RANDOMKEY), ranks them by the upstream's own access clock (OBJECT
// IDLETIME, or OBJECT FREQ under an LFU policy) and moves the coldest:
//
//  1. mark them in the cold index (clients touching them now wait), unless
//     a client protects them (MULTI, WATCH, a blocking command);
//  2. pass the Gate's barrier: no request that missed the mark is in flight;
//  3. WATCH them and read type, expiry and content (big structures in
//     chunks of chunkSize elements);
//  4. write them to the cold store and sync it;
//  5. MULTI, UNLINK, EXEC: if any changed since WATCH, EXEC fails and the
//     cold copies are dropped, so a racing write is never lost.
//
// While used_memory is over 1.3 times the budget, writers are slowed
// (Throttle) until it is back under 1.15 times (see watchMemory).
type Demoter struct {
	opts  DemoterOptions
	up    Upstream
	eng   *tiering.Engine
	index func(db int) *ColdIndex
	locks *KeyLocks
	gate  *Gate

	conn   Conn
	connDB int

	// UsedMemory is the upstream's used_memory at the last poll; PeakUsed
	// the highest seen.
	UsedMemory, PeakUsed atomic.Int64
	Demoted, Aborted     atomic.Int64
	ThrottledWrites      atomic.Int64
	throttling           atomic.Bool
	// stuck is set while a round finds nothing to demote.
	stuck  atomic.Bool
	thMu   sync.Mutex
	thCond *sync.Cond

	// mu serializes rounds and on-demand demotions (the connection).
	mu      sync.Mutex
	useFreq bool
	kick    chan struct{}
	stop    chan struct{}
	wg      sync.WaitGroup
}

// DemotionMarker is the extra key Spillway adds to its demotions' UNLINKs
// (DemoterOptions.UnlinkMarker, and the re-UNLINKs after a Sentinel
// failover): a name no dataset uses, which UNLINK ignores, and by which a
// reader of the upstream's replication stream tells them apart.
const DemotionMarker = "__spillway:demotion-marker__"

// chunkSize bounds the elements read from the upstream per request when
// demoting a big structure.
const chunkSize = 1000

// NewDemoter returns a demoter; Start runs it.
func NewDemoter(opts DemoterOptions, up Upstream, eng *tiering.Engine, index func(db int) *ColdIndex, locks *KeyLocks, gate *Gate) *Demoter {
	if opts.Interval <= 0 {
		opts.Interval = 100 * time.Millisecond
	}
	if opts.Batch <= 0 {
		opts.Batch = 128
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	d := &Demoter{opts: opts, up: up, eng: eng, index: index, locks: locks, gate: gate,
		kick: make(chan struct{}, 1), stop: make(chan struct{})}
	d.thCond = sync.NewCond(&d.thMu)
	return d
}

// Start runs the demotion loop and the memory watcher in the background.
func (d *Demoter) Start() {
	d.wg.Add(2)
	go d.loop()
	go d.watchMemory()
}

// Throttling thresholds, as fractions of the budget: writers are slowed
// from throttleOn until used_memory is back under throttleOff.
const (
	throttleOn  = 1.3
	throttleOff = 1.15
)

// watchMemory polls the upstream's used_memory on its own connection,
// every 20 ms while over budget (every Interval otherwise), wakes the
// demoter when over budget, and turns writer throttling on and off with
// hysteresis. A bulk load can add megabytes in 50 ms, so the throttle is
// not left to the demotion rounds, which may take longer than that.
func (d *Demoter) watchMemory() {
	defer d.wg.Done()
	var c Conn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	wait := d.opts.Interval
	for {
		select {
		case <-d.stop:
			return
		case <-time.After(wait):
		}
		wait = d.opts.Interval
		if c == nil {
			var err error
			if c, err = d.up.Dial(d.up.DB()); err != nil {
				d.setThrottle(false)
				continue
			}
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		used, err := c.UsedMemory()
		if err != nil {
			c.Close()
			c = nil
			d.setThrottle(false)
			continue
		}
		d.noteUsed(used)
		budget := d.opts.Budget()
		switch {
		case budget <= 0 || d.stuck.Load():
			d.setThrottle(false)
		case float64(used) > throttleOn*float64(budget):
			d.setThrottle(true)
		case float64(used) < throttleOff*float64(budget):
			d.setThrottle(false)
		}
		if budget > 0 && used > budget {
			wait = 20 * time.Millisecond
			d.Kick()
		}
	}
}

// Stop ends the loop, waiting for the round in progress.
func (d *Demoter) Stop() {
	select {
	case <-d.stop:
		return
	default:
	}
	close(d.stop)
	d.setThrottle(false)
	d.wg.Wait()
	if d.conn != nil {
		d.conn.Close()
	}
}

// Kick asks for a poll now.
func (d *Demoter) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Throttling reports whether writers are being slowed.
func (d *Demoter) Throttling() bool { return d.throttling.Load() }

// Throttle makes a write wait while the upstream is far over budget, for
// at most max: demotion is catching up.
func (d *Demoter) Throttle(max time.Duration) {
	if !d.throttling.Load() {
		return
	}
	d.ThrottledWrites.Add(1)
	deadline := time.Now().Add(max)
	t := time.AfterFunc(max, func() {
		d.thMu.Lock()
		d.thCond.Broadcast()
		d.thMu.Unlock()
	})
	defer t.Stop()
	d.thMu.Lock()
	for d.throttling.Load() && time.Now().Before(deadline) {
		d.thCond.Wait()
	}
	d.thMu.Unlock()
}

func (d *Demoter) setThrottle(on bool) {
	if d.throttling.Swap(on) && !on {
		d.thMu.Lock()
		d.thCond.Broadcast()
		d.thMu.Unlock()
	}
}

func (d *Demoter) loop() {
	defer d.wg.Done()
	t := time.NewTicker(d.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		case <-d.kick:
		}
		d.mu.Lock()
		err := d.round()
		d.mu.Unlock()
		if err != nil {
			if !errors.Is(err, ErrUnavailable) {
				d.opts.Logger.Warn("demotion round failed", "err", err)
			}
			d.closeConn()
		}
	}
}

func (d *Demoter) closeConn() {
	if d.conn != nil {
		d.conn.Close()
		d.conn = nil
	}
}

// connFor returns the demoter's connection, on db.
func (d *Demoter) connFor(db int) (Conn, error) {
	if d.conn == nil {
		c, err := d.up.Dial(db)
		if err != nil {
			return nil, err
		}
		d.conn, d.connDB = c, db
	}
	if d.connDB != db {
		if err := d.conn.Select(db); err != nil {
			return nil, err
		}
		d.connDB = db
	}
	d.conn.SetDeadline(time.Now().Add(30 * time.Second))
	return d.conn, nil
}

// poll reads used_memory and the databases that hold keys.
func (d *Demoter) poll() (used int64, dbs []int, err error) {
	c, err := d.connFor(d.connDBOr0())
	if err != nil {
		return 0, nil, err
	}
	used, dbs, err = c.Poll(d.opts.Databases)
	if err != nil {
		return 0, nil, err
	}
	d.noteUsed(used)
	return used, dbs, nil
}

// noteUsed records used_memory as polled.
func (d *Demoter) noteUsed(used int64) {
	d.UsedMemory.Store(used)
	if used > d.PeakUsed.Load() {
		d.PeakUsed.Store(used)
	}
}

func (d *Demoter) connDBOr0() int {
	if d.conn != nil {
		return d.connDB
	}
	return d.up.DB()
}

// round polls, and demotes while the upstream is over budget.
func (d *Demoter) round() error {
	if d.opts.Paused != nil && d.opts.Paused() {
		return nil
	}
	used, dbs, err := d.poll()
	if err != nil {
		return err
	}
	budget := d.opts.Budget()
	if budget <= 0 || used <= budget {
		d.stuck.Store(false)
		return nil
	}
	if len(dbs) == 0 {
		d.noteStuck(used, budget) // over budget with no key at all
		return nil
	}
	low := budget - budget/20
	next := 0
	idle := 0
	for used > low {
		select {
		case <-d.stop:
			return nil
		default:
		}
		// Far over budget (a bulk load), rounds move more keys at once.
		batch := d.opts.Batch
		if used > budget+budget/10 {
			batch *= 8
		}
		n, err := d.DemoteSample(dbs[next%len(dbs)], batch)
		if err != nil {
			return err
		}
		next++
		if n == 0 {
			if idle++; idle >= 2*len(dbs) {
				// Nothing demotable right now: slowing writers would not help.
				d.noteStuck(used, budget)
				break
			}
		} else {
			idle = 0
			d.stuck.Store(false)
		}
		if used, dbs, err = d.poll(); err != nil {
			return err
		}
		if len(dbs) == 0 {
			break
		}
	}
	return nil
}

// noteStuck records that the upstream is over budget with nothing left to
// demote (a budget below what the upstream needs empty, or only module
// values): writers are not throttled then, and the log says so once.
func (d *Demoter) noteStuck(used, budget int64) {
	if !d.stuck.Swap(true) {
		d.opts.Logger.Warn("upstream over budget with nothing left to demote; is maxmemory below what the upstream uses empty?",
			"used_memory", used, "maxmemory", budget)
	}
}

// DemoteSample demotes up to n of the coldest keys among a random sample
// of db and returns how many it moved.
func (d *Demoter) DemoteSample(db, n int) (int, error) {
	c, err := d.connFor(db)
	if err != nil {
		return 0, err
	}
	sample, err := c.RandomKeys(2 * n)
	if err != nil {
		return 0, err
	}
	seen := map[string]bool{}
	var keys [][]byte
	for _, k := range sample {
		if k != nil && !seen[string(k)] {
			seen[string(k)] = true
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return 0, nil
	}
	ranked, err := d.rank(c, keys)
	if err != nil {
		return 0, err
	}
	if len(ranked) > n {
		ranked = ranked[:n]
	}
	return d.Demote(db, ranked)
}

// rank orders keys coldest first by OBJECT IDLETIME (or FREQ).
func (d *Demoter) rank(c Conn, keys [][]byte) ([][]byte, error) {
	sub := "IDLETIME"
	if d.useFreq {
		sub = "FREQ"
	}
	replies, err := c.Object(sub, keys)
	if err != nil {
		return nil, err
	}
	type ranked struct {
		key  []byte
		cold int64
	}
	out := make([]ranked, 0, len(keys))
	switchFreq := false
	for i, k := range keys {
		r := replies[i]
		v, ok := r.N, r.IsInt
		if !ok {
			if r.IsErr {
				switchFreq = true // the other policy family is in force
			}
			continue
		}
		if d.useFreq {
			v = -v // least frequent first
		}
		out = append(out, ranked{k, v})
	}
	if switchFreq && len(out) == 0 {
		d.useFreq = !d.useFreq
	}
	slices.SortStableFunc(out, func(a, b ranked) int {
		switch {
		case a.cold > b.cold:
			return -1
		case a.cold < b.cold:
			return 1
		}
		return 0
	})
	keys = keys[:0]
	for _, r := range out {
		keys = append(keys, r.key)
	}
	return keys, nil
}

// Demote moves keys of db to the cold store, as the type comment says, and
// returns how many moved. Keys protected or already moving are skipped;
// keys of types the cold store does not hold (modules) stay.
func (d *Demoter) Demote(db int, keys [][]byte) (int, error) {
	if len(keys) > 1 && d.opts.Cluster != nil && d.opts.Cluster() {
		return d.demoteBySlot(db, keys)
	}
	return d.demote(db, keys)
}

// demote is Demote for keys the upstream may WATCH and UNLINK together.
func (d *Demoter) demote(db int, keys [][]byte) (int, error) {
	done := make(chan struct{})
	defer close(done)
	var marked [][]byte
	var hashes []uint64
	idx := d.index(db)
	for _, k := range keys {
		h := codec.KeyHash(k)
		d.locks.Lock(h)
		ok := idx.StartDemotion(h, done)
		d.locks.Unlock(h)
		if ok {
			marked = append(marked, k)
			hashes = append(hashes, h)
		}
	}
	if len(marked) == 0 {
		return 0, nil
	}
	execSent := false
	moved, nKeep := 0, 0
	defer func() {
		for i, h := range hashes {
			// After EXEC was sent without an answer, the copies stay: the
			// upstream may or may not have removed the keys, and a key in
			// both tiers is resolved in the upstream's favour when touched.
			cold := i < moved || (execSent && i < nKeep)
			idx.EndDemotion(h, cold)
		}
	}()
	d.gate.Barrier()

	c, err := d.connFor(db)
	if err != nil {
		return 0, err
	}
	vals, err := d.read(c, marked)
	if err != nil {
		return 0, err
	}
	// Only keys read whole are removed upstream; order them first so that
	// the deferred EndDemotion can tell them apart by index.
	var keep [][]byte
	var keepH []uint64
	var rest []uint64
	for i, v := range vals {
		if v != nil {
			keep = append(keep, marked[i])
			keepH = append(keepH, hashes[i])
		} else {
			rest = append(rest, hashes[i])
		}
	}
	hashes = append(keepH, rest...)
	vals = slices.DeleteFunc(vals, func(v *Value) bool { return v == nil })
	if len(vals) == 0 {
		c.Unwatch()
		return 0, nil
	}
	if cs := d.opts.Census; cs != nil {
		cs.RLock()
		defer cs.RUnlock()
	}
	if err := Import(d.eng, db, vals); err != nil {
		c.Unwatch()
		return 0, err
	}
	nKeep = len(keep)
	if err := d.eng.Cold().SyncWAL(); err != nil {
		d.drop(db, keep)
		c.Unwatch()
		return 0, fmt.Errorf("upstream: sync cold store before demotion: %w", err)
	}
	if hook := d.opts.BeforeUnlink; hook != nil {
		if err := hook(db, keep); err != nil {
			d.drop(db, keep)
			c.Unwatch()
			return 0, err
		}
	}
	execSent = true
	unlink := keep
	if m := d.opts.UnlinkMarker; m != nil && (d.opts.Cluster == nil || !d.opts.Cluster()) {
		unlink = append(keep[:len(keep):len(keep)], m)
	}
	applied, err := c.UnlinkWatched(unlink)
	if err != nil && errors.Is(err, ErrUnavailable) {
		return 0, err // EXEC's outcome is unknown: the copies stay
	}
	execSent = false
	if err != nil {
		// EXEC refused: nothing was removed upstream.
		d.drop(db, keep)
		return 0, err
	}
	if !applied {
		// A key changed since WATCH: its writer wins, nothing moves.
		d.drop(db, keep)
		d.Aborted.Add(1)
		return 0, nil
	}
	moved = len(keep)
	if d.opts.Demoted != nil {
		d.opts.Demoted(db, keep)
	}
	d.Demoted.Add(int64(moved))
	return moved, nil
}

// drop deletes cold copies written for a demotion that did not happen.
func (d *Demoter) drop(db int, keys [][]byte) {
	for _, k := range keys {
		if err := DropKey(d.eng, db, k); err != nil {
			d.opts.Logger.Error("could not drop the cold copy of an aborted demotion", "key", string(k), "err", err)
		}
	}
	if d.opts.Dropped != nil {
		d.opts.Dropped(db, keys)
	}
}

// DemoteNow demotes the given keys of db at once (a test and operations
// hook) and returns how many moved.
func (d *Demoter) DemoteNow(db int, keys [][]byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n, err := d.Demote(db, keys)
	if err != nil {
		d.closeConn()
	}
	return n, err
}

// DemoteAll demotes every key of db it can and returns how many moved.
func (d *Demoter) DemoteAll(db int) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	total := 0
	var cursor uint64
	for {
		c, err := d.connFor(db)
		if err != nil {
			return total, err
		}
		next, keys, err := c.Scan(cursor, 200)
		if err != nil {
			if errors.Is(err, ErrUnavailable) {
				d.closeConn()
			}
			return total, err
		}
		if len(keys) > 0 {
			n, err := d.Demote(db, keys)
			total += n
			if err != nil {
				d.closeConn()
				return total, err
			}
		}
		if next == 0 {
			return total, nil
		}
		cursor = next
	}
}
