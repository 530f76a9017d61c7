package server

import (
	"bytes"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// What the server's not-yet-converted sorted-set commands (cmd_zset.go,
// cmd_zsetops.go) and notify_test.go still use of the old cmd_list.go,
// whose list commands moved to proxy/commands (list.go, list_pop.go).
// Delete this file once they have moved too (the command library has its
// own copies: commands/pop.go).

// listIndex parses an index argument (ZRANGE...), replying on error.
func (c *Client) listIndex(arg []byte) (int64, bool) {
	n, ok := cstr.ParseInt(arg)
	if !ok {
		c.err(strops.ErrNotInteger)
	}
	return n, ok
}

// indexPair parses a start and a stop index (ZRANGE...), replying on
// error.
func (c *Client) indexPair(a, b []byte) (start, stop int64, ok bool) {
	if start, ok = c.listIndex(a); ok {
		stop, ok = c.listIndex(b)
	}
	return start, stop, ok
}

// rangeOf normalises Redis range arguments against length n. It returns
// ok false for an empty range.
func rangeOf(start, stop, n int64) (int64, int64, bool) {
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	start = max(start, 0)
	if start > stop || start >= n {
		return 0, 0, false
	}
	return start, min(stop, n-1), true
}

// runNow runs op on the first of keys that holds something to pop,
// replying on c. It reports false if none does (nothing replied, tx still
// open).
func (c *Client) runNow(tx *tiering.Tx, op PopOp, keys [][]byte) bool {
	for _, k := range keys {
		done, err := op.Run(c.events(), tx, c.db, k, &c.w)
		if err == tiering.ErrWrongType {
			c.txFail(tx, errWrongType)
			return true
		}
		if err != nil {
			c.txErr(tx, err)
			return true
		}
		if done {
			c.commit(tx)
			return true
		}
	}
	return false
}

// popOrBlock runs op on the first key that holds something to pop or, if
// none does, blocks the client on keys for timeoutMs (0: for ever); inside
// a group it replies a null array at once (the sorted-set pops: no move).
// op must not alias the request's buffers: a blocked client's op outlives
// them.
func (c *Client) popOrBlock(op PopOp, keys [][]byte, timeoutMs int64) {
	tx := c.begin()
	if c.runNow(tx, op, keys) {
		return
	}
	if tx == c.group {
		c.w.NullArray()
		return
	}
	w := &waiter{c: c, db: c.db, op: op, proto: c.w.Proto, done: make(chan struct{})}
	for _, k := range keys {
		dup := false
		for _, seen := range w.keys {
			dup = dup || bytes.Equal(seen, k)
		}
		if !dup {
			w.keys = append(w.keys, bytes.Clone(k))
		}
	}
	c.s.blocking.add(w)
	if !c.commit(tx) {
		c.s.blocking.cancel(w, nil)
		return
	}
	if !c.block(w, timeoutMs) {
		c.quit = true
	}
}

// timeout parses a blocking command's timeout, replying on error.
func (c *Client) timeout(arg []byte) (int64, bool) {
	ms, msg := strops.ParseTimeout(arg)
	if msg != "" {
		c.err(msg)
		return 0, false
	}
	return ms, true
}

// cmdMPop is ZMPOP numkeys key... MIN|MAX [COUNT n] and its blocking form
// BZMPOP, whose timeout comes first (and is checked after the other
// arguments). ends are the two accepted ends; newOp builds the pop for the
// first end or the other.
func cmdMPop(c *Client, args [][]byte, blocking bool, ends [2]string, newOp func(first bool, count int64) PopOp) {
	at := 1
	if blocking {
		at = 2
	}
	numkeys, ok := cstr.ParseInt(args[at])
	if !ok || numkeys < 1 {
		c.err("ERR numkeys should be greater than 0")
		return
	}
	whereAt := int64(at) + numkeys + 1
	if numkeys >= int64(len(args)) || whereAt >= int64(len(args)) {
		c.err(strops.ErrSyntax)
		return
	}
	first := eqFold(args[whereAt], ends[0])
	if !first && !eqFold(args[whereAt], ends[1]) {
		c.err(strops.ErrSyntax)
		return
	}
	count := int64(-1)
	for j := int(whereAt) + 1; j < len(args); j++ {
		if count == -1 && eqFold(args[j], "count") && j+1 < len(args) {
			j++
			n, ok := cstr.ParseInt(args[j])
			if !ok || n < 1 {
				c.err("ERR count should be greater than 0")
				return
			}
			count = n
			continue
		}
		c.err(strops.ErrSyntax)
		return
	}
	if count == -1 {
		count = 1
	}
	op := newOp(first, count)
	keys := args[at+1 : whereAt]
	if blocking {
		ms, ok := c.timeout(args[1])
		if !ok {
			return
		}
		c.popOrBlock(op, keys, ms)
		return
	}
	tx := c.begin()
	if !c.runNow(tx, op, keys) {
		c.w.NullArray()
		c.commit(tx)
	}
}

// popped publishes a list pop's events: "lpop" or "rpop", then "del" if
// the list is left empty (left elements remain). Only notify_test.go uses
// it now (commands.popped is the list commands' copy).
func (ev Events) popped(db int, key []byte, leftEnd bool, left int64) {
	event := "rpop"
	if leftEnd {
		event = "lpop"
	}
	ev.Notify(db, NotifyList, event, key)
	if left == 0 {
		ev.Notify(db, NotifyGeneric, "del", key)
	}
}
