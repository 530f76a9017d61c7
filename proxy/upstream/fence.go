package upstream

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cmdtable"
)

// The blocking fence. Redis runs commands in the order their bytes reach
// it: an XREADGROUP BLOCK sent, then another client's DEL of the stream,
// blocks first and is woken by the DEL with an error; an XREAD BLOCK ...
// $ sent before a DEL and an XADD blocks first and gets the XADD's entry.
// In upstream mode a blocking command travels further than a write: it
// waits for a dedicated connection (dialed if none is idle), for the
// other clients' earlier input (AwaitOthers), and then blockSettle, while
// a write goes straight onto a shared connection. Without an order of its
// own the write overtakes it: the XREADGROUP then answers NOGROUP, and the
// XREAD waits for ever (its $ now names the XADD's entry).
//
// So a blocking command holds a fence on its keys from the moment the
// front gets it until it has reached the upstream (blockSettle after it
// was sent), and a write command naming one of those keys (or naming no
// key: FLUSHALL, FLUSHDB, SWAPDB) that the front gets meanwhile waits for
// it, at most fenceWaitMax. With no blocking command on its way a write
// pays one atomic load (and, below, one more; and once a blocking command
// has run, a map lookup per command).

// A write Spillway reads before the blocking command (their goroutines
// race: the later bytes can be read first) would still go first. So the
// writes that end what a blocked reader waits for (deleting, overwriting,
// flushing or swapping keys, and EXEC, which may do any of those) also
// wait until the other clients have run the input they had
// (Conn.AwaitOthers): a blocking command read meanwhile enters the fence,
// and the write then waits for it there. They do so only for a key a
// blocking command named in the last orderWindow (EXEC: one of the keys
// it queued; FLUSHALL, FLUSHDB, SWAPDB: any blocking command in that
// window), as AwaitOthers costs a look at every client: the first
// blocking command ever on a key still races a write sent right after it.
var orderWriteNames = []string{"del", "unlink", "set", "flushall", "flushdb", "swapdb", "exec"}

// orderWindow is how long after a blocking command on a key
// orderWriteNames of that key wait for the other clients' input.
const orderWindow = time.Second

// orderRounds is how many times a write of orderWriteNames waits for the
// other clients' input (AwaitOthers, bounded at 50 ms each) while they
// stay busy and no blocking command has entered the fence: on a machine
// so loaded that a client's goroutine waits for a CPU longer than 50 ms,
// one bound is not enough for the blocking command sent first to be read.
const orderRounds = 4

// awaitLongMin is how long an AwaitOthers that ended at its bound took at
// least (orderWaitMax, 50 ms, less a margin).
const awaitLongMin = 40 * time.Millisecond

// recentMax bounds the keys remembered as recently blocked on.
const recentMax = 4096

// recentKey is a key blocked on recently: database and key hash.
type recentKey struct {
	db int
	h  uint64
}

// fenceWaitMax bounds a write's wait for the blocking commands ahead of
// it: beyond AwaitOthers' own bound (50 ms) plus a dial and blockSettle.
const fenceWaitMax = 200 * time.Millisecond

// blockFence is the set of blocking commands on their way upstream.
type blockFence struct {
	n    atomic.Int32 // len(on), read without the lock
	last atomic.Int64 // when the last blocking command entered (unix ns)
	mu   sync.Mutex
	on   []*fenceEntry
	// recentKeys maps the keys of the blocking commands of the last
	// orderWindow (at least) to when they arrived (unix ns); rmu guards
	// it (writes read it, blocking commands write it).
	rmu        sync.RWMutex
	recentKeys map[recentKey]int64
	// waiting counts the keys of blockedOn, which maps the keys clients
	// are blocked on upstream (from enter to unblocked) to how many are;
	// wmu guards it.
	waiting   atomic.Int32
	wmu       sync.RWMutex
	blockedOn map[recentKey]int32
}

// fenceEntry is one blocking command on its way: its database and keys
// (copied), and done, closed when it has reached the upstream.
type fenceEntry struct {
	db   int
	keys [][]byte
	done chan struct{}
}

// enter records a blocking command of database db with the keys at
// positions pos of args; leave must follow.
func (f *blockFence) enter(db int, args [][]byte, pos []int) *fenceEntry {
	now := time.Now().UnixNano()
	f.last.Store(now)
	e := &fenceEntry{db: db, done: make(chan struct{}), keys: make([][]byte, len(pos))}
	for i, p := range pos {
		e.keys[i] = bytes.Clone(args[p])
	}
	f.rmu.Lock()
	if f.recentKeys == nil || len(f.recentKeys) >= recentMax {
		f.pruneRecent(now)
	}
	for _, k := range e.keys {
		f.recentKeys[recentKey{db, codec.KeyHash(k)}] = now
	}
	f.rmu.Unlock()
	f.wmu.Lock()
	if f.blockedOn == nil {
		f.blockedOn = map[recentKey]int32{}
	}
	for _, k := range e.keys {
		f.blockedOn[recentKey{db, codec.KeyHash(k)}]++
	}
	f.waiting.Store(int32(len(f.blockedOn)))
	f.wmu.Unlock()
	f.mu.Lock()
	f.on = append(f.on, e)
	f.n.Store(int32(len(f.on)))
	f.mu.Unlock()
	return e
}

// unblocked removes e's keys from the keys blocked on (enter added them):
// its command has its reply, or failed.
func (f *blockFence) unblocked(e *fenceEntry) {
	f.wmu.Lock()
	for _, k := range e.keys {
		rk := recentKey{e.db, codec.KeyHash(k)}
		if f.blockedOn[rk]--; f.blockedOn[rk] <= 0 {
			delete(f.blockedOn, rk)
		}
	}
	f.waiting.Store(int32(len(f.blockedOn)))
	f.wmu.Unlock()
}

// wakes reports whether a write of database db names, at positions pos of
// args, a key a client is blocked on upstream: it may serve that client.
func (f *blockFence) wakes(db int, args [][]byte, pos []int) bool {
	f.wmu.RLock()
	defer f.wmu.RUnlock()
	for _, p := range pos {
		if f.blockedOn[recentKey{db, codec.KeyHash(args[p])}] > 0 {
			return true
		}
	}
	return false
}

// leave removes e: its command has reached the upstream (or failed).
// Calling it again does nothing.
func (f *blockFence) leave(e *fenceEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, o := range f.on {
		if o == e {
			f.on = append(f.on[:i], f.on[i+1:]...)
			f.n.Store(int32(len(f.on)))
			close(e.done)
			return
		}
	}
}

// waitFor makes a write command (database db) wait until the blocking
// commands on its way that it concerns have reached the upstream, at
// most fenceWaitMax in all. keyBuf is scratch space for key positions.
// block marks the waiting client blocked (server.Conn.Block): a blocking
// command ahead of it, waiting for the other clients' earlier input
// (AwaitOthers), must not take it for a client with input of its own to
// run first, or the two would wait for each other until AwaitOthers'
// bound and then race.
func (f *blockFence) waitFor(db int, cmd *cmdtable.Command, args [][]byte, keyBuf []int,
	block func() (<-chan struct{}, func(bool))) []int {
	if f.n.Load() == 0 {
		return keyBuf
	}
	pos, _ := cmd.KeyPositions(args, keyBuf[:0])
	var ahead []*fenceEntry
	f.mu.Lock()
	for _, e := range f.on {
		// A write naming no key (FLUSHALL, FLUSHDB, SWAPDB) waits for all.
		if len(pos) == 0 || e.db == db && e.names(args, pos) {
			ahead = append(ahead, e)
		}
	}
	f.mu.Unlock()
	if len(ahead) == 0 {
		return pos
	}
	gone, unblock := block()
	unblock(awaitClosed(ahead, func(e *fenceEntry) chan struct{} { return e.done }, fenceWaitMax, gone))
	return pos
}

// awaitClosed waits until the channel of every item is closed, at most
// max, unless gone closes first (the waiting client disconnected: it
// returns true).
func awaitClosed[T any](items []T, ch func(T) chan struct{}, max time.Duration, gone <-chan struct{}) bool {
	t := time.NewTimer(max)
	defer t.Stop()
	for _, it := range items {
		select {
		case <-ch(it):
		case <-t.C:
			return false
		case <-gone:
			return true
		}
	}
	return false
}

// pruneRecent drops the keys blocked on before the last orderWindow (all
// of them if that is not enough). The caller holds rmu.
func (f *blockFence) pruneRecent(now int64) {
	if f.recentKeys == nil {
		f.recentKeys = map[recentKey]int64{}
		return
	}
	for k, at := range f.recentKeys {
		if now-at >= int64(orderWindow) {
			delete(f.recentKeys, k)
		}
	}
	if len(f.recentKeys) >= recentMax {
		clear(f.recentKeys)
	}
}

// recent reports whether a blocking command arrived in the last
// orderWindow.
func (f *blockFence) recent() bool {
	l := f.last.Load()
	return l != 0 && time.Now().UnixNano()-l < int64(orderWindow)
}

// blockedRecently reports whether a write of database db must wait for
// the other clients' input (see orderWriteNames): it names, at positions
// pos of args, a key a blocking command named in the last orderWindow, or
// one of queued does (EXEC's), or it names none and is not EXEC (FLUSHALL,
// FLUSHDB, SWAPDB) while any blocking command arrived in that window.
func (f *blockFence) blockedRecently(db int, args [][]byte, pos []int, exec bool, queued []protectedKey) bool {
	if !f.recent() {
		return false
	}
	if len(pos) == 0 && !exec {
		return true
	}
	now := time.Now().UnixNano()
	f.rmu.RLock()
	defer f.rmu.RUnlock()
	hit := func(k recentKey) bool {
		at, ok := f.recentKeys[k]
		return ok && now-at < int64(orderWindow)
	}
	for _, p := range pos {
		if hit(recentKey{db, codec.KeyHash(args[p])}) {
			return true
		}
	}
	for _, q := range queued {
		if hit(recentKey{q.db, q.h}) {
			return true
		}
	}
	return false
}

// names reports whether one of args' keys at pos is one of e's.
func (e *fenceEntry) names(args [][]byte, pos []int) bool {
	for _, p := range pos {
		for _, k := range e.keys {
			if bytes.Equal(args[p], k) {
				return true
			}
		}
	}
	return false
}

// awaitOthersLong waits for the other clients' input (Conn.AwaitOthers)
// up to orderRounds times while each wait ends at its bound and no
// blocking command has entered the fence meanwhile.
func (c *client) awaitOthersLong() {
	for range orderRounds {
		began := time.Now()
		c.AwaitOthers()
		if time.Since(began) < awaitLongMin || c.f.fence.n.Load() != 0 {
			return
		}
	}
}

// The forwarding order. Redis runs commands in the order their bytes
// reach it; Spillway reads each client in its own goroutine and writes to
// the upstream on several connections: a client's pinned one (SELECT,
// MULTI, WATCH, Pub/Sub), a dedicated one (scripts) or a shared one. A
// command Spillway got after another client's could reach the upstream
// first: the goroutines race, and the first one may wait on its way (an
// EXEC waits for the other clients' input, awaitOthersLong). Then an
// LPUSH sent right after an EXEC serves a blocked BRPOPLPUSH first, which
// touches a key the transaction WATCHes, and the EXEC fails as it never
// does on Redis.
//
// So a command whose order the upstream can tell (orderBegin) takes a
// ticket when the front gets it, and gives it back once its bytes are
// written upstream (or it turned out to write nothing); a command of
// another client the front gets meanwhile, on any connection, waits for
// the tickets taken before it (at most orderWaitMax), its client marked
// blocked meanwhile so that a waiting EXEC does not wait for its input in
// return (Conn.AwaitOthers ignores blocked clients). A blocking command
// outside MULTI neither takes nor waits for a ticket: the blocking fence
// above orders it, and an EXEC or write that waits for the other clients'
// input does so to let such a command, read late but sent first, go
// first. The cost where no ticket is out, as on the shared connections'
// path: one atomic load per command, a nil test and a flag per forward.

// orderFirstNames are the commands that take a ticket even when the
// client is not pinned (on a pinned connection every command does, but a
// blocking one): those that start a pinned connection's state (MULTI,
// WATCH, a subscription, MONITOR, CLIENT TRACKING), scripts (on a
// connection of their own), and the local commands that change keys
// upstream through a connection of Spillway's (FLUSHDB, FLUSHALL, SWAPDB,
// MOVE, COPY).
var orderFirstNames = []string{"multi", "exec", "discard", "watch",
	"subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe", "monitor", "client|tracking",
	"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro",
	"flushdb", "flushall", "swapdb", "move", "copy"}

// awaitIfWaking makes a write that names a key a client is blocked on
// upstream (it may serve that client, whose reply may change a key another
// client's transaction WATCHes) wait, first until the other clients have
// run the input they have (Conn.AwaitOthers: a command that reached
// Spillway before it, and whose goroutine has not got it to the front
// yet, gets its ticket meanwhile), then for the tickets out. Redis, single
// threaded, runs an EXEC sent before an LPUSH first; here the LPUSH's
// goroutine often gets to the front first. Only while clients are blocked
// upstream does it cost more than one atomic load per command.
func (c *client) awaitIfWaking(cmd *cmdtable.Command, args [][]byte) {
	if !cmd.Is(cmdtable.FlagWrite) || cmd.Is(cmdtable.FlagBlocking) || c.inMulti || c.passthrough {
		return
	}
	keys, _ := cmd.KeyPositions(args, c.keyBuf[:0])
	c.keyBuf = keys
	if len(keys) == 0 || !c.f.fence.wakes(c.DB(), args, keys) {
		return
	}
	c.flushForwards()
	c.AwaitOthers()
	if c.f.order.n.Load() != 0 {
		c.orderWait()
	}
}

// orderWaitMax bounds a command's wait for the tickets taken before it:
// longer than what a ticket's holder may wait on its way (awaitOthersLong's
// rounds, fenceWaitMax), after which it goes on as if none were out.
const orderWaitMax = 500 * time.Millisecond

// fwdOrder is the set of tickets out.
type fwdOrder struct {
	n   atomic.Int32 // len(on), read without the lock
	mu  sync.Mutex
	seq uint64
	on  []*orderTicket
}

// orderTicket is a client's ticket (one per client, reused).
type orderTicket struct {
	seq uint64
	// held: the ticket is out; queued: the command it orders is in the
	// client's batch, so that writing the batch gives it back.
	held, queued bool
	// done is closed when the ticket is given back; made by the first
	// command that waits for it (under fwdOrder.mu), nil until then.
	done chan struct{}
}

// take hands t out with the next number.
func (o *fwdOrder) take(t *orderTicket) {
	o.mu.Lock()
	o.seq++
	t.seq, t.held, t.queued, t.done = o.seq, true, false, nil
	o.on = append(o.on, t)
	o.n.Store(int32(len(o.on)))
	o.mu.Unlock()
}

// give takes t back and wakes the commands waiting for it.
func (o *fwdOrder) give(t *orderTicket) {
	o.mu.Lock()
	for i, x := range o.on {
		if x == t {
			last := len(o.on) - 1
			copy(o.on[i:], o.on[i+1:])
			o.on[last] = nil
			o.on = o.on[:last]
			break
		}
	}
	o.n.Store(int32(len(o.on)))
	t.held, t.queued = false, false
	if t.done != nil {
		close(t.done)
		t.done = nil
	}
	o.mu.Unlock()
}

// ahead appends to buf the channels closed when the tickets out before
// mine (every ticket if mine is not held) other than mine are given back.
func (o *fwdOrder) ahead(mine *orderTicket, buf []chan struct{}) []chan struct{} {
	o.mu.Lock()
	for _, t := range o.on {
		if t == mine || mine.held && t.seq > mine.seq {
			continue
		}
		if t.done == nil {
			t.done = make(chan struct{})
		}
		buf = append(buf, t.done)
	}
	o.mu.Unlock()
	return buf
}

// orderBegin runs first in upDispatch when a ticket is out or cmd may need
// one (the client is pinned, or special is set): cmd takes a ticket if the
// upstream can tell its order (orderFirstNames, or a command forwarded on
// the client's pinned connection), then waits for the tickets taken
// before it, unless it is a blocking command outside MULTI.
func (c *client) orderBegin(cmd *cmdtable.Command, special bool) {
	blocking := cmd.Is(cmdtable.FlagBlocking) && !c.inMulti && !c.passthrough
	if blocking {
		return
	}
	// A pinned client's local commands (WAIT, KEYS...) take none: they
	// may run long, and what they send upstream goes on connections of
	// Spillway's.
	if special && c.f.orderFirst[cmd] || c.pinned != nil && (!special || c.f.local[cmd] == nil) {
		c.orderHold()
	}
	if n := c.f.order.n.Load(); n > 1 || n == 1 && !c.ord.held {
		c.orderWait()
	}
}

// orderHold makes the command being dispatched hold the client's ticket:
// taken now if it is not out (a command of the client's batch not yet
// written may hold it already, with an earlier number), and given back
// only once this command is written too.
func (c *client) orderHold() {
	if !c.ord.held {
		c.f.order.take(&c.ord)
	}
	c.ord.queued = false
}

// orderWait waits, marked blocked, until the tickets taken before the
// client's (all of them if it holds none) are given back, at most
// orderWaitMax. Its batch goes first: the front got it before them.
func (c *client) orderWait() {
	chans := c.f.order.ahead(&c.ord, c.orderBuf[:0])
	c.orderBuf = chans[:0]
	if len(chans) == 0 {
		return
	}
	c.flushForwards()
	gone, unblock := c.Block()
	disconnected := awaitClosed(chans, func(ch chan struct{}) chan struct{} { return ch }, orderWaitMax, gone)
	clear(chans)
	unblock(disconnected)
}

// orderWritten gives the client's ticket back if the command holding it
// was in the batch just written.
func (c *client) orderWritten() {
	if c.ord.queued {
		c.f.order.give(&c.ord)
	}
}

// orderEnd runs after a dispatch while the client holds its ticket: given
// back if nothing of the client's waits to be written, else when its
// batch is.
func (c *client) orderEnd() {
	if c.n == 0 {
		c.f.order.give(&c.ord)
		return
	}
	c.ord.queued = true
}

// orderDrop gives the ticket back whatever the command holding it did
// (its bytes went out on a connection of their own; the client closes).
func (c *client) orderDrop() {
	if c.ord.held {
		c.f.order.give(&c.ord)
	}
}
