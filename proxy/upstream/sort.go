package upstream

import (
	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/commands"
	"github.com/spillway/spillway/proxy/upstream/link"
	"github.com/spillway/spillway/tiering/uptier"
)

// SORT and SORT_RO in upstream mode. Their BY and GET patterns reach keys
// no key position names: the upstream would read a key moved to the store
// as missing. When some key of the database is cold and a pattern reaches
// other keys, Spillway first reads the elements (SORT key BY nosort on its
// control connection, with the key made hot), reloads every cold key the
// patterns reach for them, then forwards the command with the gate held,
// so none of them is demoted again before it runs. With nothing cold, or
// no pattern, SORT is forwarded as any command. Inside MULTI the keys are
// reloaded when the SORT is queued (they may be demoted again before
// EXEC, as any key a transaction names).

// upSort is the local handler of sort and sort_ro.
func upSort(c *client, cmd *cmdtable.Command, args [][]byte) {
	idx := c.f.index(c.DB())
	var patterns [][]byte
	if idx.Len() > 0 && len(args) > 2 {
		patterns = commands.SortPatterns(args[2:])
	}
	if len(patterns) == 0 {
		c.forwardKeyed(cmd, args)
		return
	}
	c.flushForwards()
	if !c.prepareKeys(c.DB(), args, []int{1}, false) {
		return
	}
	r, err := c.f.ctlDo(c.DB(), [][]byte{[]byte("SORT"), args[1], []byte("BY"), []byte("nosort")})
	if err != nil {
		c.Err(link.ErrorReply(err))
		return
	}
	if link.IsError(r) {
		c.forwardKeyed(cmd, args) // the upstream gives the error itself
		return
	}
	elems, err := link.ParseBulks(r)
	if err != nil {
		c.forwardKeyed(cmd, args)
		return
	}
	keys := commands.SortPatternKeys(nil, patterns, elems)
	if c.inMulti || c.passthrough {
		if c.reloadCold(keys) {
			c.forwardKeyed(cmd, args)
		}
		return
	}
	for attempt := 0; attempt < 50; attempt++ {
		if !c.reloadCold(keys) {
			return
		}
		c.enterGate()
		if !anyCold(idx, keys) {
			c.upForward(cmd, args) // under the gate: nothing is demoted meanwhile
			return
		}
		c.flushForwards()
	}
	c.Err("ERR spillway: the keys SORT reaches kept moving between tiers; try again")
}

// reloadCold reloads the cold keys among keys (in the client's database)
// into the upstream, reporting false (the error replied) on a failure.
func (c *client) reloadCold(keys [][]byte) bool {
	idx := c.f.index(c.DB())
	for _, key := range keys {
		h := codec.KeyHash(key)
		if !idx.Has(h) {
			continue
		}
		c.lockKey(idx, h)
		var err error
		if idx.Has(h) {
			err = c.reloadLocked(idx, c.DB(), key, h)
		}
		c.f.locks.Unlock(h)
		if err != nil {
			c.Err(reloadError(key, err))
			return false
		}
	}
	return true
}

// anyCold reports whether some key of keys is in the cold index.
func anyCold(idx *uptier.ColdIndex, keys [][]byte) bool {
	for _, k := range keys {
		if idx.Has(codec.KeyHash(k)) {
			return true
		}
	}
	return false
}

// forwardKeyed forwards a keyed, non-blocking command as upDispatch does.
func (c *client) forwardKeyed(cmd *cmdtable.Command, args [][]byte) {
	switch {
	case c.passthrough:
		c.upPassthroughCmd(cmd, args)
	case c.inMulti:
		c.upQueue(cmd, args)
	default:
		c.upForward(cmd, args)
	}
}
