package server

import (
	"time"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/upstream"
)

// Upstream-mode clients that need connection state: a dedicated (pinned)
// connection for SELECT, transactions and subscriptions, one per blocking
// command, and the relay of a subscribed client's frames.
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
