package proxy

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/upstream"
)

// upClient is a client's upstream-mode state.
//
// Commands on keys that are not cold are encoded into reqs and sent as one
// batch when the client's pipeline is drained (flushForwards), on a shared
// connection or on the client's pinned one; replies land in the client's
// reply buffer unchanged. From the first key check of a batch until its
// replies are in, the client holds the gate's read side (see
// upstream.Gate), which is what makes demotion safe against the batch.
type upClient struct {
	call     *upstream.Call
	ctlCall  *upstream.Call
	reqs     []byte
	n        int
	gateHeld *sync.RWMutex
	keyBuf   []int
	dump     upstream.Dump

	// pinned is the dedicated connection of a client that needs connection
	// state upstream: a non-default database, MULTI, WATCH, or a
	// subscription (passthrough).
	pinned            *upstream.Conn
	inMulti, watching bool
	// queueDB is the database commands queued in MULTI run on (a queued
	// SELECT changes it; EXEC makes it the client's).
	queueDB int
	// passthrough: the pinned connection's frames are copied to the client
	// as they come (pub/sub, MONITOR, CLIENT TRACKING), by ptLoop.
	passthrough bool
	ptClosing   atomic.Bool
	wmu         sync.Mutex // serializes socket writes in passthrough
	// protected are the keys this client keeps from demotion.
	protected []protectedKey

	// asyncOut is set while a batch sent by submitAsync is in flight: its
	// replies are written to the socket by the connection's reader.
	asyncOut    bool
	asyncFailed bool
	asyncBuf    []byte
	onDone      func() bool
}

type protectedKey struct {
	db int
	h  uint64
}

// maxBatchBytes and maxBatchCmds bound a batch of forwarded requests.
const (
	maxBatchBytes = 64 << 10
	maxBatchCmds  = 512
)

func newUpClient(c *Client) *upClient {
	u := &upClient{call: upstream.NewCall(), ctlCall: upstream.NewCall()}
	u.onDone = c.onAsyncDone
	return u
}

// submitAsync sends the batch at the end of the client's pipeline without
// waiting for it: the shared connection's reader writes the replies to the
// socket (onAsyncDone), sparing the client's goroutine a wake-up per
// batch. It reports false when the batch could not be sent; error replies
// are then in the reply buffer.
func (c *Client) submitAsync() bool {
	u := c.up
	n, reqs := u.n, u.reqs
	u.n, u.reqs = 0, u.reqs[:0]
	m, err := c.s.up.pool.Shared(c.w.Proto, c.id)
	if err == nil {
		u.call.Replies = u.asyncBuf[:0]
		u.call.OnDone = u.onDone
		u.asyncOut, u.asyncFailed = true, false
		if err = m.Submit(u.call, reqs, n); err == nil {
			return true
		}
		u.asyncOut = false
		u.call.OnDone = nil
	}
	for i := 0; i < n; i++ {
		c.err(upstream.ErrorReply(err))
	}
	c.leaveGate()
	return false
}

// onAsyncDone runs on the reader goroutine when an async batch is in (or
// failed): it leaves the gate and writes the replies with one non-blocking
// write; what the socket does not take is written by a goroutine that then
// finishes the call.
func (c *Client) onAsyncDone() bool {
	u := c.up
	call := u.call
	buf := call.Replies
	if call.Err != nil {
		msg := upstream.ErrorReply(call.Err)
		for i := call.Got(); i < call.N(); i++ {
			buf = append(buf, '-')
			buf = append(buf, msg...)
			buf = append(buf, '\r', '\n')
			c.s.stats.errorReplies.Add(1)
		}
	}
	c.leaveGate()
	u.asyncBuf = buf
	written := 0
	if c.raw != nil {
		n, err := c.raw.TryWrite(buf)
		if err != nil {
			u.asyncFailed = true
			return true
		}
		written = n
	}
	c.s.stats.netOut.Add(int64(written))
	if written == len(buf) {
		return true
	}
	go func() {
		n, err := c.nc.Write(buf[written:])
		c.s.stats.netOut.Add(int64(n))
		if err != nil {
			u.asyncFailed = true
		}
		call.Signal()
	}()
	return false
}

// awaitAsync waits for the batch in flight, if any, and reports whether
// its replies reached the socket.
func (c *Client) awaitAsync() bool {
	u := c.up
	if u == nil || !u.asyncOut {
		return true
	}
	u.call.Wait()
	u.asyncOut = false
	u.call.OnDone = nil
	u.call.Replies = nil
	return !u.asyncFailed
}

func (c *Client) enterGate() {
	if c.up.gateHeld == nil {
		c.up.gateHeld = c.s.up.gate.Enter(c.id)
	}
}

func (c *Client) leaveGate() {
	if m := c.up.gateHeld; m != nil {
		m.RUnlock()
		c.up.gateHeld = nil
	}
}

// enqueue adds a request to the batch.
func (c *Client) enqueue(args [][]byte) {
	u := c.up
	u.reqs = upstream.AppendCommand(u.reqs, args)
	u.n++
	if len(u.reqs) >= maxBatchBytes || u.n >= maxBatchCmds {
		c.flushForwards()
	}
}

// flushForwards sends the batch and appends its replies to the client's
// buffer (an error reply for each request that got none), then leaves
// the gate.
func (c *Client) flushForwards() {
	u := c.up
	if u == nil {
		return
	}
	if u.n == 0 {
		c.leaveGate()
		return
	}
	n, reqs := u.n, u.reqs
	u.n, u.reqs = 0, u.reqs[:0]
	var err error
	got := 0
	switch {
	case u.pinned != nil && u.passthrough:
		u.pinned.WriteRaw(reqs)
		err = u.pinned.Flush()
		got = n
	case u.pinned != nil:
		u.pinned.WriteRaw(reqs)
		if err = u.pinned.Flush(); err == nil {
			for got < n {
				var r []byte
				if r, err = u.pinned.Read(); err != nil {
					break
				}
				c.w.Raw(r)
				got++
			}
		}
	default:
		var m *upstream.Mux
		if m, err = c.s.up.pool.Shared(c.w.Proto, c.id); err == nil {
			u.call.Replies = c.w.Buf
			err = m.Do(u.call, reqs, n)
			c.w.Buf, u.call.Replies = u.call.Replies, nil
			got = u.call.Got()
		}
	}
	c.leaveGate()
	if err != nil {
		for ; got < n; got++ {
			c.err(upstream.ErrorReply(err))
		}
		if u.pinned != nil {
			c.dropPinned()
		}
	}
}

// upDispatch runs one command in upstream mode.
func (c *Client) upDispatch(cmd *cmdtable.Command, args [][]byte) {
	if h := upLocal[cmd]; h != nil && !c.subscribedRESP2(cmd) {
		c.flushForwards()
		h(c, args)
		return
	}
	switch {
	case c.up.passthrough:
		c.upPassthroughCmd(cmd, args)
	case c.up.inMulti:
		c.upQueue(cmd, args)
	case cmd.Is(cmdtable.FlagBlocking):
		c.upBlocking(cmd, args)
	default:
		c.upForward(cmd, args)
	}
}

// subscribedRESP2 reports whether a RESP2 client in passthrough (pub/sub)
// sends a command Spillway would answer itself: the upstream gets it, so
// the client sees Redis's "only (P|S)SUBSCRIBE ... allowed" error.
func (c *Client) subscribedRESP2(cmd *cmdtable.Command) bool {
	if !c.up.passthrough || c.w.Proto != 2 {
		return false
	}
	switch cmd.Name {
	case "quit", "reset", "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe":
		return false
	}
	return true
}

// upForwardUnknown forwards a command Spillway's table does not know (a
// newer upstream's); it has no known keys.
func (c *Client) upForwardUnknown(args [][]byte) {
	if c.up.inMulti || c.up.passthrough {
		c.enqueue(args)
		return
	}
	c.enterGate()
	c.enqueue(args)
}

// upForward forwards a command whose keys are not cold, after making them
// so: cold keys are reloaded, or the command is answered from the cold
// store (metadata commands, and reads the promotion policy keeps cold).
func (c *Client) upForward(cmd *cmdtable.Command, args [][]byte) {
	up := c.s.up
	keys, _ := cmd.KeyPositions(args, c.up.keyBuf[:0])
	c.up.keyBuf = keys
	if up.demoter.Throttling() && cmd.Is(cmdtable.FlagDenyOOM) {
		c.flushForwards()
		up.demoter.Throttle(time.Second)
	}
	idx := up.index(c.db)
	for attempt := 0; attempt < 50; attempt++ {
		c.enterGate()
		cold := false
		if idx.Len() > 0 {
			for _, p := range keys {
				if idx.Has(upstream.KeyHash(args[p])) {
					cold = true
					break
				}
			}
		}
		if !cold {
			c.enqueue(args)
			return
		}
		c.flushForwards()
		if c.upCold(cmd, args, keys) {
			return
		}
	}
	c.err("ERR spillway: the command's keys kept moving between tiers; try again")
}

// metaCmds answer from a cold key's metadata without reloading it.
var metaCmds = map[string]bool{
	"type": true, "ttl": true, "pttl": true, "expiretime": true, "pexpiretime": true,
	"persist": true, "expire": true, "pexpire": true, "expireat": true, "pexpireat": true,
}

// reloadAlways are reads never answered from a cold copy: their cursors
// would not survive the key's reload between calls.
var reloadAlways = map[string]bool{"hscan": true, "sscan": true, "zscan": true}

// countCmds count keys and may mix tiers: cold keys are counted (and
// deleted) in the store, the rest upstream.
var countCmds = map[string]bool{"del": true, "unlink": true, "exists": true, "touch": true}

// upCold handles a command with a key in the cold index. It reports true
// when the command was answered; false means its keys were reloaded (or
// found not cold) and it should be forwarded.
func (c *Client) upCold(cmd *cmdtable.Command, args [][]byte, keys []int) bool {
	up := c.s.up
	idx := up.index(c.db)
	if countCmds[cmd.Name] {
		c.upCount(cmd, args, keys)
		return true
	}
	h0 := handlers[cmd]
	if h0 != nil && sameKey(args, keys) && !reloadAlways[cmd.Name] && (metaCmds[cmd.Name] || cmd.Is(cmdtable.FlagReadonly)) {
		key := args[keys[0]]
		h := upstream.KeyHash(key)
		c.lockKey(idx, h)
		defer up.locks.Unlock(h)
		size, ok, err := upstream.ColdSize(c.s.engine, c.db, key)
		if err != nil {
			c.replyError(err)
			return true
		}
		if !ok {
			idx.Remove(h)
			return false
		}
		if metaCmds[cmd.Name] || !c.s.admitReload(h, size) {
			h0(c, args)
			if !metaCmds[cmd.Name] {
				// A read leaves the copy (an expired one is found gone later).
				up.coldReads.Add(1)
			} else if _, still, err := upstream.ColdSize(c.s.engine, c.db, key); err == nil && !still {
				idx.Remove(h)
			}
			return true
		}
		if err := c.reloadLocked(idx, c.db, key, h); err != nil {
			c.err(reloadError(key, err))
			return true
		}
		return false
	}
	for _, p := range keys {
		key := args[p]
		h := upstream.KeyHash(key)
		if !idx.Has(h) {
			continue
		}
		c.lockKey(idx, h)
		err := c.reloadLocked(idx, c.db, key, h)
		up.locks.Unlock(h)
		if err != nil {
			c.err(reloadError(key, err))
			return true
		}
	}
	return false
}

func reloadError(key []byte, err error) string {
	return "ERR spillway could not reload cold key '" + trunc(key) + "': " + firstLine(err.Error())
}

func firstLine(s string) string {
	if i := bytes.IndexAny([]byte(s), "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}

// sameKey reports whether every key position names the same key.
func sameKey(args [][]byte, keys []int) bool {
	if len(keys) == 0 {
		return false
	}
	for _, p := range keys[1:] {
		if !bytes.Equal(args[p], args[keys[0]]) {
			return false
		}
	}
	return true
}

// lockKey waits out a demotion of h, then takes h's key lock.
func (c *Client) lockKey(idx *upstream.ColdIndex, h uint64) {
	up := c.s.up
	for {
		if ch := idx.Demoting(h); ch != nil {
			<-ch
			continue
		}
		up.locks.Lock(h)
		if idx.Demoting(h) == nil {
			return
		}
		up.locks.Unlock(h)
	}
}

// reloadLocked moves key's cold copy into the upstream with RESTORE
// (atomic, TTL included) and drops it from the store. If the upstream
// already has the key (written there directly), the upstream's copy wins
// and the cold one is dropped. The caller holds the key lock.
func (c *Client) reloadLocked(idx *upstream.ColdIndex, db int, key []byte, h uint64) error {
	up := c.s.up
	u := c.up
	exp, ok, err := upstream.DumpKey(c.s.engine, db, key, &u.dump)
	if err != nil {
		return err
	}
	if !ok {
		idx.Remove(h)
		return nil
	}
	payload := u.dump.Finish()
	args := [][]byte{[]byte("RESTORE"), key, []byte("0"), payload}
	if exp > 0 {
		args[2] = strconv.AppendInt(nil, exp, 10)
		args = append(args, []byte("ABSTTL"))
	}
	up.census.RLock()
	defer up.census.RUnlock()
	r, err := c.ctlDo(db, args)
	if err != nil {
		return err
	}
	switch {
	case bytes.HasPrefix(r, []byte("-BUSYKEY")):
		up.reloadConflicts.Add(1)
	case upstream.IsError(r):
		return fmt.Errorf("%s", upstream.ReplyText(r))
	default:
		up.reloads.Add(1)
	}
	if err := upstream.DropKey(c.s.engine, db, key); err != nil {
		return err
	}
	idx.Remove(h)
	return nil
}

// ctlDo runs one request of Spillway's own on db and returns a copy of the
// reply: on a shared connection for the default database, else on the
// control connection.
func (c *Client) ctlDo(db int, args [][]byte) ([]byte, error) {
	up := c.s.up
	if db != up.defaultDB {
		return up.ctlDo(db, args)
	}
	m, err := up.pool.Shared(2, c.id)
	if err != nil {
		return nil, err
	}
	call := c.up.ctlCall
	call.Replies = call.Replies[:0]
	if err := m.Do(call, upstream.AppendCommand(nil, args), 1); err != nil {
		return nil, err
	}
	return call.Replies, nil
}

// upCount runs DEL, UNLINK, EXISTS or TOUCH across both tiers: cold keys
// are counted (and for DEL/UNLINK dropped) in the store, the others are
// forwarded in one command, and the counts are added.
func (c *Client) upCount(cmd *cmdtable.Command, args [][]byte, keys []int) {
	up := c.s.up
	idx := up.index(c.db)
	drop := cmd.Name == "del" || cmd.Name == "unlink"
	var local int64
	rest := [][]byte{args[0]}
	for _, p := range keys {
		rest = append(rest, args[p])
	}
	for attempt := 0; attempt < 50; attempt++ {
		next := rest[:1]
		for _, key := range rest[1:] {
			h := upstream.KeyHash(key)
			if idx.Has(h) {
				c.lockKey(idx, h)
				_, ok, err := upstream.ColdSize(c.s.engine, c.db, key)
				if err == nil && ok && drop {
					err = upstream.DropKey(c.s.engine, c.db, key)
					idx.Remove(h)
				} else if err == nil && !ok {
					idx.Remove(h)
				}
				up.locks.Unlock(h)
				if err != nil {
					c.replyError(err)
					return
				}
				if ok {
					local++
					continue
				}
			}
			next = append(next, key)
		}
		rest = next
		if len(rest) == 1 {
			c.w.Int(local)
			return
		}
		c.enterGate()
		clean := true
		for _, key := range rest[1:] {
			if idx.Has(upstream.KeyHash(key)) {
				clean = false
				break
			}
		}
		if !clean {
			c.leaveGate()
			continue
		}
		mark := c.w.Len()
		c.enqueue(rest)
		c.flushForwards()
		if n, ok := upstream.IntReply(c.w.Buf[mark:]); ok {
			c.w.Truncate(mark)
			c.w.Int(n + local)
		}
		return
	}
	c.err("ERR spillway: the command's keys kept moving between tiers; try again")
}

// prepareKeys reloads the cold ones among keys and, with protect, keeps
// all of them from demotion until unprotectAll.
func (c *Client) prepareKeys(db int, args [][]byte, keys []int, protect bool) bool {
	up := c.s.up
	idx := up.index(db)
	for _, p := range keys {
		key := args[p]
		h := upstream.KeyHash(key)
		c.lockKey(idx, h)
		if protect {
			idx.Protect(h)
			c.up.protected = append(c.up.protected, protectedKey{db, h})
		}
		var err error
		if idx.Has(h) {
			err = c.reloadLocked(idx, db, key, h)
		}
		up.locks.Unlock(h)
		if err != nil {
			c.err(reloadError(key, err))
			return false
		}
	}
	return true
}

func (c *Client) unprotectAll() {
	for _, p := range c.up.protected {
		c.s.up.index(p.db).Unprotect(p.h)
	}
	c.up.protected = c.up.protected[:0]
}

// pin gives the client a dedicated connection on its database.
func (c *Client) pin() bool {
	if c.up.pinned != nil {
		return true
	}
	conn, err := c.s.up.pool.Get(c.w.Proto, c.db)
	if err != nil {
		c.err(upstream.ErrorReply(err))
		return false
	}
	c.up.pinned = conn
	return true
}

// maybeUnpin returns the dedicated connection once nothing needs it.
func (c *Client) maybeUnpin() {
	u := c.up
	if u.pinned == nil || u.inMulti || u.watching || u.passthrough || c.db != c.s.up.defaultDB {
		return
	}
	if u.pinned.Proto != c.w.Proto {
		u.pinned.Close()
	} else {
		c.s.up.pool.Put(u.pinned)
	}
	u.pinned = nil
}

// dropPinned closes a broken pinned connection and forgets the state that
// lived on it.
func (c *Client) dropPinned() {
	u := c.up
	if u.passthrough {
		u.ptClosing.Store(true)
	}
	u.pinned.Close()
	u.pinned = nil
	u.inMulti, u.watching = false, false
	c.unprotectAll()
	if u.passthrough {
		u.passthrough = false
		c.quit = true // the subscription is gone; the client must reconnect
	}
}

// upClose releases what a closing client holds.
func (c *Client) upClose() {
	u := c.up
	if u == nil {
		return
	}
	c.awaitAsync()
	u.n, u.reqs = 0, nil
	c.leaveGate()
	c.unprotectAll()
	if u.pinned != nil {
		u.ptClosing.Store(true)
		u.pinned.Close()
		u.pinned = nil
	}
}

// upQueue queues a command inside MULTI: its keys are reloaded now and
// kept from demotion until the transaction ends.
func (c *Client) upQueue(cmd *cmdtable.Command, args [][]byte) {
	c.leaveGate() // never held across a wait for a demotion (see upBlocking)
	keys, _ := cmd.KeyPositions(args, c.up.keyBuf[:0])
	c.up.keyBuf = keys
	if !c.prepareKeys(c.up.queueDB, args, keys, true) {
		return
	}
	c.enqueue(args)
}

// upBlocking runs a blocking command on a dedicated connection, its keys
// reloaded and protected while it waits. A client that disconnects while
// blocked has its upstream connection closed, so the upstream stops
// waiting for it too.
func (c *Client) upBlocking(cmd *cmdtable.Command, args [][]byte) {
	// The batch before it runs first, and leaves the gate: waiting for a
	// demotion (prepareKeys) while holding it would deadlock the demoter.
	c.flushForwards()
	keys, _ := cmd.KeyPositions(args, c.up.keyBuf[:0])
	c.up.keyBuf = keys
	n := len(c.up.protected)
	defer func() {
		for _, p := range c.up.protected[n:] {
			c.s.up.index(p.db).Unprotect(p.h)
		}
		c.up.protected = c.up.protected[:n]
	}()
	if !c.prepareKeys(c.db, args, keys, true) {
		return
	}
	conn, own := c.up.pinned, false
	if conn == nil {
		var err error
		if conn, err = c.s.up.pool.Get(c.w.Proto, c.db); err != nil {
			c.err(upstream.ErrorReply(err))
			return
		}
		own = true
	}
	conn.SendArgs(args)
	if err := conn.Flush(); err != nil {
		c.blockingFailed(conn, own, err)
		return
	}
	type result struct {
		r   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := conn.Read()
		done <- result{append([]byte(nil), r...), err}
	}()
	gone, exited := make(chan struct{}), make(chan struct{})
	c.blocked.Store(true)
	c.nc.SetReadDeadline(time.Time{})
	go c.watchConn(gone, exited)
	select {
	case res := <-done:
		c.nc.SetReadDeadline(time.Now()) // stops the watcher
		<-exited
		c.nc.SetReadDeadline(time.Time{})
		c.blocked.Store(false)
		if res.err != nil {
			c.blockingFailed(conn, own, res.err)
			return
		}
		c.w.Raw(res.r)
		if own {
			c.s.up.pool.Put(conn)
		}
	case <-gone:
		c.blocked.Store(false)
		conn.Close()
		<-done
		<-exited
		if !own {
			c.up.pinned = nil
		}
		c.quit = true
	}
}

func (c *Client) blockingFailed(conn *upstream.Conn, own bool, err error) {
	c.err(upstream.ErrorReply(err))
	if own {
		conn.Close()
	} else {
		c.dropPinned()
	}
}

// upPassthroughCmd forwards a command of a client in passthrough mode;
// replies reach it through ptLoop.
func (c *Client) upPassthroughCmd(cmd *cmdtable.Command, args [][]byte) {
	keys, _ := cmd.KeyPositions(args, c.up.keyBuf[:0])
	c.up.keyBuf = keys
	if !c.prepareKeys(c.db, args, keys, false) {
		return
	}
	c.enqueue(args)
	c.flushForwards()
}

// startPassthrough pins the client and copies every frame the upstream
// sends on that connection to the client, until either side closes.
func (c *Client) startPassthrough() bool {
	if !c.pin() {
		return false
	}
	u := c.up
	if u.passthrough {
		return true
	}
	u.passthrough = true
	u.ptClosing.Store(false)
	conn := u.pinned
	go func() {
		for {
			r, err := conn.Read()
			if err != nil {
				if !u.ptClosing.Load() {
					c.nc.Close()
				}
				return
			}
			u.wmu.Lock()
			_, werr := c.nc.Write(r)
			u.wmu.Unlock()
			c.s.stats.netOut.Add(int64(len(r)))
			if werr != nil {
				return
			}
		}
	}()
	return true
}
