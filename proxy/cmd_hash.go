package proxy

import (
	"strconv"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

func init() {
	register("hset", func(c *Client, a [][]byte) { cmdHSet(c, a, false) })
	register("hmset", func(c *Client, a [][]byte) { cmdHSet(c, a, true) })
	register("hsetnx", cmdHSetNX)
	register("hget", cmdHGet)
	register("hmget", cmdHMGet)
	register("hgetall", func(c *Client, a [][]byte) { cmdCollAll(c, a, codec.TypeHash, replyMap, true, true) })
	register("hkeys", func(c *Client, a [][]byte) { cmdCollAll(c, a, codec.TypeHash, replyArray, true, false) })
	register("hvals", func(c *Client, a [][]byte) { cmdCollAll(c, a, codec.TypeHash, replyArray, false, true) })
	register("hdel", func(c *Client, a [][]byte) { cmdCollDel(c, a, codec.TypeHash) })
	register("hexists", func(c *Client, a [][]byte) { cmdCollHas(c, a, codec.TypeHash) })
	register("hlen", func(c *Client, a [][]byte) { cmdCollLen(c, a, codec.TypeHash) })
	register("hstrlen", cmdHStrlen)
	register("hincrby", cmdHIncrBy)
	register("hincrbyfloat", cmdHIncrByFloat)
	register("hrandfield", cmdHRandField)
	register("hscan", func(c *Client, a [][]byte) { cmdCollScan(c, a, codec.TypeHash, true) })
}

func cmdHSet(c *Client, args [][]byte, hmset bool) {
	if len(args)%2 != 0 {
		name := "hset"
		if hmset {
			name = "hmset"
		}
		c.err("ERR wrong number of arguments for '" + name + "' command")
		return
	}
	tx := c.begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, true)
	if !ok {
		return
	}
	c.notifyNewKey(h.Len() == 0, args[1]) // a structure is never stored empty
	var added int64
	for i := 2; i < len(args); i += 2 {
		created, err := h.Set(args[i], args[i+1])
		if err != nil {
			c.txErr(tx, err)
			return
		}
		if created {
			added++
		}
	}
	if hmset {
		c.w.OK()
	} else {
		c.w.Int(added)
	}
	c.notify(notifyHash, "hset", args[1]) // after the reply, as Redis
	c.closeAndCommit(tx, h)
}

func cmdHSetNX(c *Client, args [][]byte) {
	tx := c.begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, true)
	if !ok {
		return
	}
	isNew := h.Len() == 0
	exists, err := h.Has(args[2])
	if err == nil && !exists {
		_, err = h.Set(args[2], args[3])
	}
	if err != nil {
		c.txErr(tx, err)
		return
	}
	c.notifyNewKey(isNew, args[1])
	c.w.Int(b2i(!exists))
	if !exists {
		c.notify(notifyHash, "hset", args[1])
	}
	c.closeAndCommit(tx, h)
}

func cmdHGet(c *Client, args [][]byte) {
	tx := c.begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, false)
	if ok && h == nil {
		c.notifyKeyMiss(args[1])
	}
	if ok && c.replyField(tx, h, args[2]) {
		c.commit(tx)
	}
}

func cmdHMGet(c *Client, args [][]byte) {
	tx := c.begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, false)
	if !ok {
		return
	}
	if h == nil {
		c.notifyKeyMiss(args[1])
	}
	c.w.Array(len(args) - 2)
	for _, f := range args[2:] {
		if !c.replyField(tx, h, f) {
			return
		}
	}
	c.commit(tx)
}

// replyField writes the value of field in h (nil: a missing key), or a null.
// On a store error it ends tx with the error and returns false.
func (c *Client) replyField(tx *tiering.Tx, h *tiering.Coll, field []byte) bool {
	if h == nil {
		c.w.Null()
		return true
	}
	v, found, err := h.Get(field)
	if err != nil {
		c.txErr(tx, err)
		return false
	}
	if found {
		c.w.Bulk(v)
	} else {
		c.w.Null()
	}
	return true
}

func cmdHStrlen(c *Client, args [][]byte) {
	tx := c.begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, false)
	if !ok {
		return
	}
	var n int
	if h != nil {
		v, _, err := h.Get(args[2])
		if err != nil {
			c.txErr(tx, err)
			return
		}
		n = len(v)
	} else {
		c.notifyKeyMiss(args[1])
	}
	c.w.Int(int64(n))
	c.commit(tx)
}

func cmdHIncrBy(c *Client, args [][]byte) {
	delta, ok := cstr.ParseInt(args[3])
	if !ok {
		c.err(strops.ErrNotInteger)
		return
	}
	tx := c.begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, true)
	if !ok {
		return
	}
	isNew := h.Len() == 0
	cur, found, err := h.Get(args[2])
	if err != nil {
		c.txErr(tx, err)
		return
	}
	n, msg := strops.IncrBy(cur, found, delta)
	if msg == strops.ErrNotInteger {
		msg = "ERR hash value is not an integer"
	}
	if msg != "" {
		c.txFail(tx, msg)
		return
	}
	if _, err := h.Set(args[2], strconv.AppendInt(nil, n, 10)); err != nil {
		c.txErr(tx, err)
		return
	}
	c.notifyNewKey(isNew, args[1])
	c.w.Int(n)
	c.notify(notifyHash, "hincrby", args[1])
	c.closeAndCommit(tx, h)
}

func cmdHIncrByFloat(c *Client, args [][]byte) {
	if msg := strops.CheckFloatIncrement(args[3]); msg != "" {
		c.err(msg)
		return
	}
	tx := c.begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, true)
	if !ok {
		return
	}
	isNew := h.Len() == 0
	cur, found, err := h.Get(args[2])
	if err != nil {
		c.txErr(tx, err)
		return
	}
	v, msg := strops.IncrByFloat(cur, found, args[3])
	if msg == strops.ErrNotFloat {
		msg = "ERR hash value is not a float"
	}
	if msg != "" {
		c.txFail(tx, msg)
		return
	}
	if _, err := h.Set(args[2], v); err != nil {
		c.txErr(tx, err)
		return
	}
	c.notifyNewKey(isNew, args[1])
	c.w.Bulk(v)
	c.notify(notifyHash, "hincrbyfloat", args[1])
	c.closeAndCommit(tx, h)
}

func cmdHRandField(c *Client, args [][]byte) {
	if len(args) == 2 {
		tx := c.begin()
		h, ok := c.openColl(tx, args[1], codec.TypeHash, false)
		if !ok {
			return
		}
		if h == nil {
			c.notifyKeyMiss(args[1])
			c.w.Null()
			c.commit(tx)
			return
		}
		if err := h.Random(1, true, func(f, _ []byte) { c.w.Bulk(f) }); err != nil {
			c.txErr(tx, err)
			return
		}
		c.commit(tx)
		return
	}
	n, distinct, ok := c.parseRandomCount(args[2])
	if !ok {
		return
	}
	withValues := false
	if len(args) > 4 || (len(args) == 4 && !eqFold(args[3], "withvalues")) {
		c.err(strops.ErrSyntax)
		return
	}
	if len(args) == 4 {
		withValues = true
		if n > (1<<63-1)/2 {
			c.err("ERR value is out of range")
			return
		}
	}
	tx := c.begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, false)
	if !ok {
		return
	}
	if h == nil {
		c.notifyKeyMiss(args[1])
	}
	if h == nil || n == 0 {
		c.w.Array(0)
		c.commit(tx)
		return
	}
	if distinct {
		n = min(n, h.Len())
	} else if n > maxRandomCount {
		c.txFail(tx, errRandomCount)
		return
	}
	if withValues && !c.w.RESP3() {
		c.w.Array(int(2 * n))
	} else {
		c.w.Array(int(n))
	}
	var got int64
	err := h.Random(n, distinct, func(f, v []byte) {
		got++
		if !withValues {
			c.w.Bulk(f)
			return
		}
		if c.w.RESP3() {
			c.w.Array(2)
		}
		c.w.Bulk(f)
		c.w.Bulk(v)
	})
	if c.streamed(tx, args[1], n, got, err) {
		c.commit(tx)
	}
}
