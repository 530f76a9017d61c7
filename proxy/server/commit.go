package server

import (
	"github.com/spillway/spillway/coldstore"
	"github.com/spillway/spillway/tiering"
)

// The engine lock, as the server takes it. Handlers reach it through
// Ctx.Update and Ctx.View; the server's own code (EXEC, scripts, WATCH
// bookkeeping, INFO) through withLock and runGroup. Both open their
// transaction with tiering.Engine.Update, which always releases the lock.

// withLock runs fn in a transaction: the group's, if the client runs a
// group (fn's non-reply error then fails the group), else its own, which
// is committed when fn returns nil or a Redis error and aborted otherwise
// (or when fn panics). A commit serves the clients blocked on keys fn
// filled and, under appendfsync always, makes the client's replies wait
// for the write to be durable. It returns fn's error, or the commit's.
func (c *Client) withLock(fn func(tx *tiering.Tx) error) error {
	if tx := c.group; tx != nil {
		err := fn(tx)
		c.failGroup(err)
		if c.trk.On() && c.trkCmd != nil {
			c.rememberRead() // notify.go
		}
		return err
	}
	var ferr error
	var served []*waiter
	p, err := c.s.engine.Update(func(tx *tiering.Tx) error {
		c.txID = tx.TxID()
		c.s.trkCur = c // tracking's current client (notify.go)
		defer func() { c.s.trkCur = nil }()
		if c.s.paused.Load() {
			c.keepExpiredIfReading(tx) // client.go
		}
		ferr = fn(tx)
		if ferr != nil && !isReplyError(ferr) {
			return ferr // aborted
		}
		if c.trk.On() && c.trkCmd != nil {
			c.rememberRead() // under the lock the read held
		}
		served = c.s.blocking.serveReadyFrom(c, tx)
		return nil
	})
	return c.committed(served, p, err, ferr)
}

// failGroup records err as the failure of the client's group if it is a
// failure of the store (not a Redis error reply) and the first: the group
// is then aborted as a whole when it ends.
func (c *Client) failGroup(err error) {
	if err != nil && !isReplyError(err) && c.groupErr == nil {
		c.groupErr = err
	}
}

// committed finishes a transaction the client ran: it hands the clients
// it served their replies (or the commit's error) and keeps what the
// client must wait for before its replies go out. It returns err (the
// transaction's) or else ferr (a Redis error its function returned).
func (c *Client) committed(served []*waiter, p coldstore.Pending, err, ferr error) error {
	if served != nil {
		deliver(served, err)
	}
	if err != nil {
		return err
	}
	if !p.IsZero() {
		c.pending = p
	}
	return ferr
}

// runGroup runs fn as a group (EXEC, a script): every command the client
// runs until fn returns shares one transaction, under one hold of the
// engine's lock. The group is committed when fn returns, or aborted as a
// whole if fn or one of its commands failed on a storage error; runGroup
// then returns that error, and the caller replaces the group's replies
// with it. A group inside a group (a script run by EXEC) runs in the outer
// one, which ends it. If fn panics, the transaction is aborted and the
// client is left in the group, so that the panic recovery drops the
// group's whole reply.
func (c *Client) runGroup(fn func(tx *tiering.Tx) error) error {
	if tx := c.group; tx != nil {
		c.failGroup(fn(tx))
		return nil
	}
	var served []*waiter
	p, err := c.s.engine.Update(func(tx *tiering.Tx) error {
		c.txID = tx.TxID()
		c.s.trkCur = c
		defer func() { c.s.trkCur = nil }()
		c.group, c.groupErr, c.groupMark = tx, nil, c.w.Len()
		c.failGroup(fn(tx))
		c.group = nil
		if gerr := c.groupErr; gerr != nil {
			c.groupErr = nil
			return gerr // aborted
		}
		served = c.s.blocking.serveReadyFrom(c, tx)
		return nil
	})
	return c.committed(served, p, err, nil)
}
