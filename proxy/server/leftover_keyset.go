package server

import (
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// Helpers that lived in cmd_keys.go and cmd_set.go, which moved to
// proxy/commands, and that server code not yet converted still uses:
// matcher (coll.go's parseScanOpts) and storeEmpty (cmd_zset.go's STORE
// commands). Delete this file once those users are gone.

// matcher returns a glob matcher for a MATCH pattern (strops.Matcher).
func matcher(pattern []byte) func([]byte) bool { return strops.Matcher(pattern) }

// storeEmpty ends a STORE command whose result is empty, as Redis does:
// it replies 0, the destination is deleted ("del" if it existed) and tx
// is committed (or, on a store error, ended with the error's reply).
func (c *Client) storeEmpty(tx *tiering.Tx, dst []byte) {
	deleted, err := tx.Delete(c.db, dst)
	if err != nil {
		c.txErr(tx, err)
		return
	}
	c.w.Int(0)
	if deleted {
		c.notify(NotifyGeneric, "del", dst)
	}
	c.commit(tx)
}
