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
	f.mu.Lock()
	f.on = append(f.on, e)
	f.n.Store(int32(len(f.on)))
	f.mu.Unlock()
	return e
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
	t := time.NewTimer(fenceWaitMax)
	defer t.Stop()
	disconnected := false
wait:
	for _, e := range ahead {
		select {
		case <-e.done:
		case <-t.C:
			break wait
		case <-gone:
			disconnected = true
			break wait
		}
	}
	unblock(disconnected)
	return pos
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
