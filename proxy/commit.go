package proxy

import "github.com/spillway/spillway/tiering"

// commit commits tx after the handler wrote its reply. If the commit fails,
// the reply is replaced by the error; if the write must be synced before it
// is acknowledged (appendfsync always), the sync is awaited before the
// connection's replies are flushed, so one sync covers a whole pipeline.
func (c *Client) commit(tx *tiering.Tx) bool {
	served := c.s.blocking.serveReady(tx)
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
