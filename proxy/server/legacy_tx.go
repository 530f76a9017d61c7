package server

// Transitional: the families not yet moved to proxy/commands still take
// the engine lock by hand with these. They go with the last of them.

import "github.com/spillway/spillway/tiering"

// begin starts a transaction for the current command, remembering it so
// that recoverPanic can release it. Inside a group (EXEC, a script) it
// returns the group's transaction instead: every command of the group runs
// under one hold of the engine's lock.
func (c *Client) begin() *tiering.Tx {
	if c.group != nil {
		return c.group
	}
	tx := c.s.engine.Begin()
	c.txID = tx.TxID()
	return tx
}

// commit commits tx after the handler wrote its reply. If the commit fails,
// the reply is replaced by the error; if the write must be synced before it
// is acknowledged (appendfsync always), the sync is awaited before the
// connection's replies are flushed, so one sync covers a whole pipeline.
// A group's transaction is left open (endGroup commits it).
func (c *Client) commit(tx *tiering.Tx) bool {
	if tx == c.group {
		return true
	}
	served := c.s.blocking.serveReadyFrom(c, tx)
	p, err := tx.Commit()
	deliver(served, err)
	if err != nil {
		c.replyError(err)
		return false
	}
	if !p.IsZero() {
		c.pending = p
	}
	return true
}

// release ends a transaction that wrote nothing (it only releases the
// lock); a group's transaction stays open.
func (c *Client) release(tx *tiering.Tx) {
	if tx != c.group {
		tx.Abort()
	}
}

// txErr aborts tx after a storage error and replies with it. Inside a group
// the group is marked failed: endGroup aborts it as a whole.
func (c *Client) txErr(tx *tiering.Tx, err error) {
	if tx == c.group {
		if c.groupErr == nil {
			c.groupErr = err
		}
		c.replyError(err)
		return
	}
	tx.Abort()
	c.replyError(err)
}

// txFail commits tx (it may hold lazy expirations) and replies with msg.
func (c *Client) txFail(tx *tiering.Tx, msg string) {
	c.err(msg)
	c.commit(tx)
}
