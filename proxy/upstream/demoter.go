package upstream

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

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
	pool  *Pool
	eng   *tiering.Engine
	index func(db int) *ColdIndex
	locks *KeyLocks
	gate  *Gate

	conn   *Conn
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

// chunkSize bounds the elements read from the upstream per request when
// demoting a big structure.
const chunkSize = 1000

// NewDemoter returns a demoter; Start runs it.
func NewDemoter(opts DemoterOptions, pool *Pool, eng *tiering.Engine, index func(db int) *ColdIndex, locks *KeyLocks, gate *Gate) *Demoter {
	if opts.Interval <= 0 {
		opts.Interval = 100 * time.Millisecond
	}
	if opts.Batch <= 0 {
		opts.Batch = 128
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	d := &Demoter{opts: opts, pool: pool, eng: eng, index: index, locks: locks, gate: gate,
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
	var c *Conn
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
			if c, err = d.pool.Dial(2, d.pool.Target().DB); err != nil {
				d.setThrottle(false)
				continue
			}
		}
		c.SetDeadline(time.Now().Add(5 * time.Second))
		r, err := c.Do("INFO", "memory")
		if err != nil {
			c.Close()
			c = nil
			d.setThrottle(false)
			continue
		}
		used := d.noteUsed(r)
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
func (d *Demoter) connFor(db int) (*Conn, error) {
	if d.conn == nil {
		c, err := d.pool.Dial(2, db)
		if err != nil {
			return nil, err
		}
		d.conn, d.connDB = c, db
	}
	if d.connDB != db {
		r, err := d.conn.Do("SELECT", strconv.Itoa(db))
		if err != nil {
			return nil, err
		}
		if IsError(r) {
			return nil, fmt.Errorf("upstream: SELECT %d: %s", db, ReplyText(r))
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
	c.Send("INFO", "memory")
	c.Send("INFO", "keyspace")
	if err := c.Flush(); err != nil {
		return 0, nil, lost(err)
	}
	r, err := c.Read()
	if err != nil {
		return 0, nil, lost(err)
	}
	used = d.noteUsed(r)
	r, err = c.Read()
	if err != nil {
		return 0, nil, lost(err)
	}
	info := BulkPayload(r)
	for db := 0; db < d.opts.Databases; db++ {
		if _, ok := InfoField(info, "db"+strconv.Itoa(db)); ok {
			dbs = append(dbs, db)
		}
	}
	return used, dbs, nil
}

// noteUsed records used_memory from an INFO memory reply and returns it.
func (d *Demoter) noteUsed(info []byte) int64 {
	v, _ := InfoField(BulkPayload(info), "used_memory")
	used, _ := strconv.ParseInt(v, 10, 64)
	d.UsedMemory.Store(used)
	if used > d.PeakUsed.Load() {
		d.PeakUsed.Store(used)
	}
	return used
}

func (d *Demoter) connDBOr0() int {
	if d.conn != nil {
		return d.connDB
	}
	return d.pool.Target().DB
}

// round polls, and demotes while the upstream is over budget.
func (d *Demoter) round() error {
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
// demote (a budget below what the upstream needs empty, or only streams):
// writers are not throttled then, and the log says so once.
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
	sample := 2 * n
	for i := 0; i < sample; i++ {
		c.Send("RANDOMKEY")
	}
	if err := c.Flush(); err != nil {
		return 0, lost(err)
	}
	seen := map[string]bool{}
	var keys [][]byte
	for i := 0; i < sample; i++ {
		r, err := c.Read()
		if err != nil {
			return 0, lost(err)
		}
		k := BulkPayload(r)
		if k != nil && !seen[string(k)] {
			seen[string(k)] = true
			keys = append(keys, append([]byte{}, k...))
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
func (d *Demoter) rank(c *Conn, keys [][]byte) ([][]byte, error) {
	sub := "IDLETIME"
	if d.useFreq {
		sub = "FREQ"
	}
	for _, k := range keys {
		c.SendArgs([][]byte{[]byte("OBJECT"), []byte(sub), k})
	}
	if err := c.Flush(); err != nil {
		return nil, lost(err)
	}
	type ranked struct {
		key  []byte
		cold int64
	}
	out := make([]ranked, 0, len(keys))
	switchFreq := false
	for _, k := range keys {
		r, err := c.Read()
		if err != nil {
			return nil, lost(err)
		}
		v, ok := IntReply(r)
		if !ok {
			if IsError(r) {
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
// keys of types the cold store does not hold (streams, modules) stay.
func (d *Demoter) Demote(db int, keys [][]byte) (int, error) {
	done := make(chan struct{})
	defer close(done)
	var marked [][]byte
	var hashes []uint64
	idx := d.index(db)
	for _, k := range keys {
		h := KeyHash(k)
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
		c.Do("UNWATCH")
		return 0, nil
	}
	if cs := d.opts.Census; cs != nil {
		cs.RLock()
		defer cs.RUnlock()
	}
	if err := Import(d.eng, db, vals); err != nil {
		c.Do("UNWATCH")
		return 0, err
	}
	nKeep = len(keep)
	if err := d.eng.Cold().SyncWAL(); err != nil {
		d.drop(db, keep)
		c.Do("UNWATCH")
		return 0, fmt.Errorf("upstream: sync cold store before demotion: %w", err)
	}
	c.Send("MULTI")
	unlink := make([][]byte, 0, len(keep)+1)
	unlink = append(unlink, []byte("UNLINK"))
	unlink = append(unlink, keep...)
	c.SendArgs(unlink)
	c.Send("EXEC")
	execSent = true
	if err := c.Flush(); err != nil {
		return 0, lost(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := c.Read(); err != nil {
			return 0, lost(err)
		}
	}
	r, err := c.Read()
	if err != nil {
		return 0, lost(err)
	}
	execSent = false
	if len(r) >= 3 && r[0] == '*' && r[1] == '-' {
		// A key changed since WATCH: its writer wins, nothing moves.
		d.drop(db, keep)
		d.Aborted.Add(1)
		return 0, nil
	}
	if IsError(r) {
		d.drop(db, keep)
		return 0, fmt.Errorf("upstream: demotion EXEC: %s", ReplyText(r))
	}
	moved = len(keep)
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
		r, err := c.Do("SCAN", strconv.FormatUint(cursor, 10), "COUNT", "200")
		if err != nil {
			d.closeConn()
			return total, lost(err)
		}
		next, keys, err := ParseScan(r)
		if err != nil {
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
