package server

import "github.com/spillway/spillway/tiering"

// The engine lock, taken and released in one place. Handlers reach it
// through Ctx.Update and Ctx.View; the server's own code (EXEC, scripts,
// WATCH bookkeeping, INFO) through withLock and runGroup. Nothing else
// calls Engine.Begin, Tx.Commit or Tx.Abort.

// withLock runs fn in a transaction: the group's, if the client runs a
// group (fn's non-reply error then fails the group), else its own, which
// it commits when fn returns nil or a Redis error and aborts otherwise (or
// when fn panics). A commit serves the clients blocked on keys fn filled
// and, under appendfsync always, makes the client's replies wait for the
// write to be durable. It returns fn's error, or the commit's.
func (c *Client) withLock(fn func(tx *tiering.Tx) error) error {
	if tx := c.group; tx != nil {
		err := fn(tx)
		if err != nil && !isReplyError(err) && c.groupErr == nil {
			c.groupErr = err // the group aborts as a whole
		}
		return err
	}
	tx := c.s.engine.Begin()
	c.txID = tx.TxID()
	finished := false
	defer func() {
		if !finished {
			tx.Abort() // fn panicked
		}
	}()
	err := fn(tx)
	finished = true
	if err != nil && !isReplyError(err) {
		tx.Abort()
		return err
	}
	if cerr := c.commitTx(tx); cerr != nil {
		return cerr
	}
	return err
}

// commitTx commits tx, serving the clients blocked on keys it filled, and
// keeps what the client must wait for before its replies go out.
func (c *Client) commitTx(tx *tiering.Tx) error {
	served := c.s.blocking.serveReadyFrom(c, tx)
	p, err := tx.Commit()
	deliver(served, err)
	if err != nil {
		return err
	}
	if !p.IsZero() {
		c.pending = p
	}
	return nil
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
		if err := fn(tx); err != nil && !isReplyError(err) && c.groupErr == nil {
			c.groupErr = err
		}
		return nil
	}
	tx := c.s.engine.Begin()
	c.txID = tx.TxID()
	c.group, c.groupErr, c.groupMark = tx, nil, c.w.Len()
	finished := false
	defer func() {
		if !finished {
			tx.Abort()
		}
	}()
	err := fn(tx)
	finished = true
	if err != nil && !isReplyError(err) && c.groupErr == nil {
		c.groupErr = err
	}
	c.group = nil
	if err := c.groupErr; err != nil {
		c.groupErr = nil
		tx.Abort()
		return err
	}
	return c.commitTx(tx)
}
