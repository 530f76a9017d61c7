package upstream

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/acl"
	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/upstream/aclmirror"
	"github.com/spillway/spillway/proxy/upstream/link"
	"github.com/spillway/spillway/tiering/uptier"
)

// Upstream-mode clients that need connection state: a dedicated (pinned)
// connection for SELECT, transactions and subscriptions, one per blocking
// command, and the relay of a subscribed client's frames.
// pin gives the client a dedicated connection on its database.
// A restricted ACL user's pinned connection is logged in as the user's
// mirror (aclmirror), so that its scripts, in MULTI or while subscribed,
// run checked by the upstream for the user's rules; any other client's is
// logged in as Spillway's upstream user. What Spillway sends there itself
// is the client's own commands (which Spillway checked for the same
// rules), HELLO and AUTH (which every user may run), and, inside MULTI,
// DISCARD (Spillway's own commands in MULTI, REPLICAOF and FAILOVER
// among them, are queued by Spillway: multilocal.go).
func (c *client) pin() bool {
	if c.pinned != nil {
		return true
	}
	var conn *link.Conn
	var err error
	c.pinnedAs = nil
	if u := c.mirrorUser(); u != nil {
		conn, err = c.f.mirrors.Get(u, c.w.Proto, c.DB())
		if err != nil {
			c.Err(err.Error())
			return false
		}
		c.pinnedAs = u
	} else if conn, err = c.f.pool.Get(c.w.Proto, c.DB()); err != nil {
		c.Err(link.ErrorReply(err))
		return false
	}
	c.pinned = conn
	return true
}

// mirrorUser is the user whose upstream mirror the client's pinned
// connection is logged in as: its ACL user when restricted, else nil
// (Spillway's own upstream login).
func (c *client) mirrorUser() *acl.User {
	if u := c.User(); aclmirror.Needed(u) {
		return u
	}
	return nil
}

// scriptLoginFits reports whether a script may go to the pinned
// connection (in MULTI, or subscribed): it is logged in as the client's
// user needs (its mirror while restricted, else Spillway's), the mirror
// following the user's current rules. Otherwise it refuses the script,
// which never runs as another user.
func (c *client) scriptLoginFits() bool {
	u := c.mirrorUser()
	if c.pinnedAs != u {
		c.refuse(errScriptPinned)
		return false
	}
	if u != nil {
		if _, _, err := c.f.mirrors.Login(u); err != nil {
			c.refuse(err.Error())
			return false
		}
	}
	return true
}

// fitPinnedLogin logs the pinned connection in as the client's user needs
// (its user changed since it was pinned: AUTH, HELLO AUTH), before MULTI
// or a subscription starts on it; a restricted user's mirror is brought
// to its current rules. It reports success, having replied the error
// otherwise.
func (c *client) fitPinnedLogin() bool {
	u := c.mirrorUser()
	if u != nil && c.pinnedAs == u {
		if _, _, err := c.f.mirrors.Login(u); err != nil {
			c.Err(err.Error())
			return false
		}
		return true
	}
	if c.pinnedAs == u {
		return true
	}
	var user, pass string
	if u != nil {
		var err error
		if user, pass, err = c.f.mirrors.Login(u); err != nil {
			c.Err(err.Error())
			return false
		}
	} else {
		t := c.f.pool.Target()
		user, pass = t.Username, t.Password
		if user == "" {
			user = "default"
		}
	}
	r, err := c.pinned.Do("AUTH", user, pass)
	if err != nil || link.IsError(r) {
		if err == nil {
			err = fmt.Errorf("%s", link.ReplyText(r))
		}
		c.dropPinned()
		c.Err("ERR spillway: cannot log the client's upstream connection in as its ACL user: " + link.FirstLine(err.Error()))
		return false
	}
	c.pinnedAs = u
	return true
}

// maybeUnpin returns the dedicated connection once nothing needs it.
func (c *client) maybeUnpin() {
	if c.pinned == nil || c.inMulti || c.watching || c.passthrough || c.DB() != c.f.defaultDB {
		return
	}
	switch {
	case c.pinned.Proto != c.w.Proto:
		c.pinned.Close()
	case c.pinnedAs != nil:
		c.f.mirrors.Put(c.pinnedAs, c.pinned) // closed if the mirror was replaced
	default:
		c.f.pool.Put(c.pinned)
	}
	c.pinned, c.pinnedAs = nil, nil
}

// dropPinned closes a broken pinned connection and forgets the state that
// lived on it.
func (c *client) dropPinned() {
	c.f.passAddrs.Delete(c.id)
	c.f.monitors.remove(c)
	if c.passthrough {
		c.ptClosing.Store(true)
	}
	c.pinned.Close()
	c.pinned = nil
	c.inMulti, c.watching, c.txRefused = false, false, false
	c.localQ, c.multiQueued = nil, 0
	c.unprotectAll()
	if c.passthrough {
		c.passthrough, c.subscribed = false, false
		c.Quit() // the subscription is gone; the client must reconnect
	}
}

// upClose releases what a closing client holds.
func (c *client) upClose() {
	c.f.clients.Delete(c.id)
	c.closeSink()
	c.f.passAddrs.Delete(c.id)
	c.f.monitors.remove(c)
	c.awaitAsync()
	c.n, c.reqs = 0, nil
	c.orderDrop()
	c.leaveGate()
	c.unprotectAll()
	if c.pinned != nil {
		c.ptClosing.Store(true)
		c.pinned.Close()
		c.pinned = nil
	}
}

// upQueue queues a command inside MULTI: its keys are reloaded now and
// kept from demotion until the transaction ends.
func (c *client) upQueue(cmd *cmdtable.Command, args [][]byte) {
	c.leaveGate() // never held across a wait for a demotion (see upBlocking)
	keys, _ := cmd.KeyPositions(args, c.keyBuf[:0])
	c.keyBuf = keys
	if c.f.writesHeld.Load() && c.queueColdRead(cmd, args, keys) {
		return
	}
	if !c.prepareKeys(c.queueDB, args, keys, true) {
		c.txRefused = true // not queued: EXEC aborts, as Redis's rejectCommand
		return
	}
	c.enqueue(args)
}

// blockSettle is how long a blocking command sent upstream is given to
// reach the upstream's event loop before another client's blocking
// command may follow it (see Conn.AwaitOthers).
const blockSettle = 300 * time.Microsecond

// upBlocking runs a blocking command, or a script (Front.scripts), on a
// dedicated connection, its keys reloaded and protected while it waits. A client that disconnects while
// blocked has its upstream connection closed, so the upstream stops
// waiting for it too.
func (c *client) upBlocking(cmd *cmdtable.Command, args [][]byte) {
	keys, _ := cmd.KeyPositions(args, c.keyBuf[:0])
	c.keyBuf = keys
	var fence *fenceEntry
	if cmd.Is(cmdtable.FlagBlocking) {
		// Writes the front gets from now on wait until it is upstream.
		fence = c.f.fence.enter(c.DB(), args, keys)
		defer c.f.fence.leave(fence)
		defer c.f.fence.unblocked(fence)
	}
	// The batch before it runs first, and leaves the gate: waiting for a
	// demotion (prepareKeys) while holding it would deadlock the demoter.
	c.flushForwards()
	n := len(c.protected)
	defer func() {
		for _, p := range c.protected[n:] {
			c.f.index(p.db).Unprotect(p.h)
		}
		c.protected = c.protected[:n]
	}()
	if !c.prepareKeys(c.DB(), args, keys, true) {
		return
	}
	conn, own := c.pinned, false
	putBack := c.f.pool.Put
	var u *acl.User
	if c.f.scripts[cmd] {
		u = c.User()
	}
	if aclmirror.Needed(u) {
		// A restricted user's script runs as its mirror: the upstream
		// checks its redis.call (aclmirror).
		var err error
		if conn, err = c.f.mirrors.Get(u, c.w.Proto, c.DB()); err != nil {
			c.Err(err.Error())
			return
		}
		own, putBack = true, func(conn *link.Conn) { c.f.mirrors.Put(u, conn) }
	} else if conn == nil {
		var err error
		if conn, err = c.f.pool.Get(c.w.Proto, c.DB()); err != nil {
			c.Err(link.ErrorReply(err))
			return
		}
		own = true
	}
	if cmd.Is(cmdtable.FlagBlocking) {
		// BRPOPLPUSH sent earlier elsewhere blocks first. (A write waiting
		// for this command at the fence shows as blocked: not waited for.)
		c.AwaitOthers()
	}
	c.f.setBlocked(c.ID(), conn)
	defer c.f.setBlocked(c.ID(), nil)
	conn.SendArgs(args)
	err := conn.Flush()
	c.orderDrop() // written: later commands may follow (fence.go)
	if err != nil {
		c.blockingFailed(conn, own, err)
		return
	}
	if cmd.Is(cmdtable.FlagBlocking) {
		// Other clients' blocking commands wait for this one until it
		// is marked blocked (Block): give the upstream time to read it
		// first, as it reads sockets ready at once in any order.
		time.Sleep(blockSettle)
		c.f.fence.leave(fence)
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
	gone, unblock := c.Block()
	select {
	case res := <-done:
		unblock(false)
		if res.err != nil {
			c.blockingFailed(conn, own, res.err)
			return
		}
		c.w.Raw(res.r)
		if own {
			putBack(conn)
		}
	case <-gone:
		unblock(true)
		conn.Close()
		<-done
		if !own {
			c.pinned = nil
		}
		c.Quit()
	}
}

func (c *client) blockingFailed(conn *link.Conn, own bool, err error) {
	c.Err(link.ErrorReply(err))
	if own {
		conn.Close()
	} else {
		c.dropPinned()
	}
}

// upPassthroughCmd forwards a command of a client in passthrough mode;
// replies reach it through ptLoop.
func (c *client) upPassthroughCmd(cmd *cmdtable.Command, args [][]byte) {
	keys, _ := cmd.KeyPositions(args, c.keyBuf[:0])
	c.keyBuf = keys
	if !c.prepareKeys(c.DB(), args, keys, false) {
		return
	}
	c.enqueue(args)
	c.flushForwards()
}

// startPassthrough pins the client and copies every frame the upstream
// sends on that connection to the client, until either side closes.
func (c *client) startPassthrough() bool {
	if !c.pin() {
		return false
	}
	if c.passthrough {
		return true
	}
	if !c.fitPinnedLogin() {
		return false
	}
	c.passthrough = true
	c.ptClosing.Store(false)
	conn := c.pinned
	pool := c.f.pool
	c.f.passAddrs.Store(c.id, conn.LocalAddr())
	go func() {
		for {
			r, err := conn.Read()
			if err != nil {
				if !c.ptClosing.Load() {
					c.CloseSocket()
				}
				return
			}
			if addr := monitorAddr(r); addr != nil && pool.IsInternal(addr) {
				c.f.relayMark(c, r) // a local command's line goes here (monitor.go)
				continue            // Spillway's own command, not a client's
			} else if addr != nil && link.IsAcceptProbe(r) {
				continue // a new connection's probe (link.Pool.Get)
			}
			var drop bool
			if r, drop = c.ptFixes.apply(r); drop {
				continue // the reply to a HELLO the client had answered
			}
			c.wmu.Lock()
			_, werr := c.WriteSocket(r)
			c.wmu.Unlock()
			c.AddNetOut(int64(len(r)))
			if werr != nil {
				return
			}
		}
	}()
	return true
}

// setBlocked records (conn non-nil) or forgets the upstream connection
// client id is blocked on.
func (f *Front) setBlocked(id int64, conn *link.Conn) {
	f.blockedMu.Lock()
	if conn != nil {
		f.blocked[id] = conn
	} else {
		delete(f.blocked, id)
	}
	f.blockedMu.Unlock()
}

// upClientUnblock is CLIENT UNBLOCK: a client blocked upstream is
// unblocked there, with the reason given, by the upstream's id of the
// connection it waits on (found in the upstream's CLIENT LIST by the
// connection's address), and the upstream's answer is the reply; any other
// case (a malformed call, a client not blocked) is the server's.
func upClientUnblock(c *client, args [][]byte) {
	reasonOK := len(args) == 3 || cstr.EqualFold(args[3], "timeout") || cstr.EqualFold(args[3], "error")
	id, idOK := cstr.ParseInt(args[2])
	var addr string
	if reasonOK && idOK {
		c.f.blockedMu.Lock()
		if conn := c.f.blocked[id]; conn != nil {
			addr = conn.LocalAddr()
		}
		c.f.blockedMu.Unlock()
	}
	upID := ""
	if addr != "" {
		var err error
		if upID, err = c.f.upstreamClientID(addr); err != nil {
			c.Err(link.ErrorReply(err))
			return
		}
	}
	if upID == "" {
		c.Call(c.f.clientUnblock, args)
		return
	}
	fwd := [][]byte{[]byte("CLIENT"), []byte("UNBLOCK"), []byte(upID)}
	if len(args) == 4 {
		fwd = append(fwd, args[3])
	}
	r, err := c.f.ctlDo(c.f.defaultDB, fwd)
	if err != nil {
		c.Err(link.ErrorReply(err))
		return
	}
	c.w.Raw(r)
}

// upstreamClientID returns the upstream's id of its client connected from
// addr (one of Spillway's connections), or "" if it lists none.
func (f *Front) upstreamClientID(addr string) (string, error) {
	r, err := f.ctlDo(f.defaultDB, [][]byte{[]byte("CLIENT"), []byte("LIST")})
	if err != nil {
		return "", err
	}
	return clientIDByAddr(link.ReplyText(r), addr), nil
}

// clientIDByAddr returns the id= of the CLIENT LIST line whose addr= is
// addr, or "".
func clientIDByAddr(list, addr string) string {
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " addr="+addr+" ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if id, ok := strings.CutPrefix(f, "id="); ok {
				return id
			}
		}
	}
	return ""
}

// monitorAddr returns the client address of a MONITOR line
// ("+<time> [<db> <addr>] ..."), or nil if r is not one.
func monitorAddr(r []byte) []byte {
	if len(r) < 4 || r[0] != '+' {
		return nil
	}
	open := bytes.IndexByte(r, '[')
	if open < 0 {
		return nil
	}
	rest := r[open+1:]
	sp := bytes.IndexByte(rest, ' ')
	end := bytes.IndexByte(rest, ']')
	if sp < 0 || end < sp {
		return nil
	}
	return rest[sp+1 : end]
}

// queueColdRead queues, while the upstream refuses writes (so no cold key
// can be reloaded: oom.go), a read of one cold key inside MULTI as a local
// command (multilocal.go): at EXEC it is answered from the store, or
// upstream if the key was reloaded meanwhile. It reports whether it queued
// cmd.
func (c *client) queueColdRead(cmd *cmdtable.Command, args [][]byte, keys []int) bool {
	h0 := c.f.srv.Handler(cmd)
	db := c.queueDB
	if h0 == nil || db != c.DB() || !sameKey(args, keys) || !cmd.Is(cmdtable.FlagReadonly) ||
		reloadAlways[cmd.Name] || !c.f.index(db).Has(codec.KeyHash(args[keys[0]])) {
		return false
	}
	pos := keys[0] // keys is the client's buffer: reused
	c.queueLocal(func(c *client, args [][]byte) {
		idx, key := c.f.index(db), args[pos]
		h := codec.KeyHash(key)
		c.lockKey(idx, h)
		defer c.f.locks.Unlock(h)
		if _, ok, err := uptier.ColdSize(c.f.engine, db, key); err == nil && ok {
			c.Call(h0, args)
			c.f.coldReads.Add(1)
			return
		}
		r, err := c.ctlDo(db, args)
		if err != nil {
			c.Err(link.ErrorReply(err))
			return
		}
		c.w.Raw(r)
	}, cmd, args)
	return true
}
