package proxy

import (
	"strconv"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/strops"
)

func init() {
	register("hset", func(c *Client, a [][]byte) { cmdHSet(c, a, false) })
	register("hmset", func(c *Client, a [][]byte) { cmdHSet(c, a, true) })
	register("hsetnx", cmdHSetNX)
	register("hget", cmdHGet)
	register("hmget", cmdHMGet)
	register("hgetall", func(c *Client, a [][]byte) { cmdHGetAll(c, a, true, true) })
	register("hkeys", func(c *Client, a [][]byte) { cmdHGetAll(c, a, true, false) })
	register("hvals", func(c *Client, a [][]byte) { cmdHGetAll(c, a, false, true) })
	register("hdel", cmdHDel)
	register("hexists", cmdHExists)
	register("hlen", cmdHLen)
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
	tx := c.s.engine.Begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, true)
	if !ok {
		return
	}
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
	c.closeAndCommit(tx, h)
}

func cmdHSetNX(c *Client, args [][]byte) {
	tx := c.s.engine.Begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, true)
	if !ok {
		return
	}
	exists, err := h.Has(args[2])
	if err == nil && !exists {
		_, err = h.Set(args[2], args[3])
	}
	if err != nil {
		c.txErr(tx, err)
		return
	}
	c.w.Int(b2i(!exists))
	c.closeAndCommit(tx, h)
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func cmdHGet(c *Client, args [][]byte) {
	tx := c.s.engine.Begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, false)
	if !ok {
		return
	}
	if h == nil {
		c.w.Null()
		c.commit(tx)
		return
	}
	v, found, err := h.Get(args[2])
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if found {
		c.w.Bulk(v)
	} else {
		c.w.Null()
	}
	c.commit(tx)
}

func cmdHMGet(c *Client, args [][]byte) {
	tx := c.s.engine.Begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, false)
	if !ok {
		return
	}
	c.w.Array(len(args) - 2)
	for _, f := range args[2:] {
		if h == nil {
			c.w.Null()
			continue
		}
		v, found, err := h.Get(f)
		if err != nil {
			c.txErr(tx, err)
			return
		}
		if found {
			c.w.Bulk(v)
		} else {
			c.w.Null()
		}
	}
	c.commit(tx)
}

// cmdHGetAll is HGETALL (keys and vals), HKEYS and HVALS. A cold hash is
// streamed from the store into the reply, never loaded.
func cmdHGetAll(c *Client, args [][]byte, keys, vals bool) {
	tx := c.s.engine.Begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, false)
	if !ok {
		return
	}
	var n int64
	if h != nil {
		n = h.Len()
	}
	if keys && vals {
		c.w.Map(int(n))
	} else {
		c.w.Array(int(n))
	}
	if h == nil {
		c.commit(tx)
		return
	}
	var got int64
	err := h.Each(func(f, v []byte) bool {
		if keys {
			c.w.Bulk(f)
		}
		if vals {
			c.w.Bulk(v)
		}
		got++
		return true
	})
	if c.streamed(tx, args[1], n, got, err) {
		c.commit(tx)
	}
}

func cmdHDel(c *Client, args [][]byte) {
	tx := c.s.engine.Begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, false)
	if !ok {
		return
	}
	var deleted int64
	for _, f := range args[2:] {
		if h == nil || h.Len() == 0 {
			break
		}
		ok, err := h.Del(f)
		if err != nil {
			c.txErr(tx, err)
			return
		}
		deleted += b2i(ok)
	}
	c.w.Int(deleted)
	c.closeAndCommit(tx, h)
}

func cmdHExists(c *Client, args [][]byte) {
	tx := c.s.engine.Begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, false)
	if !ok {
		return
	}
	var found bool
	if h != nil {
		var err error
		if found, err = h.Has(args[2]); err != nil {
			c.txErr(tx, err)
			return
		}
	}
	c.w.Int(b2i(found))
	c.commit(tx)
}

func cmdHLen(c *Client, args [][]byte) {
	tx := c.s.engine.Begin()
	e, err := tx.Peek(c.db, args[1])
	if err != nil {
		c.txErr(tx, err)
		return
	}
	switch {
	case e == nil:
		c.w.Int(0)
	case e.Type != codec.TypeHash:
		c.txFail(tx, errWrongType)
		return
	default:
		c.w.Int(e.Count)
	}
	c.commit(tx)
}

func cmdHStrlen(c *Client, args [][]byte) {
	tx := c.s.engine.Begin()
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
	}
	c.w.Int(int64(n))
	c.commit(tx)
}

func cmdHIncrBy(c *Client, args [][]byte) {
	delta, ok := strops.ParseInt(args[3])
	if !ok {
		c.err(strops.ErrNotInteger)
		return
	}
	tx := c.s.engine.Begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, true)
	if !ok {
		return
	}
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
	c.w.Int(n)
	c.closeAndCommit(tx, h)
}

func cmdHIncrByFloat(c *Client, args [][]byte) {
	if msg := strops.CheckFloatIncrement(args[3]); msg != "" {
		c.err(msg)
		return
	}
	tx := c.s.engine.Begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, true)
	if !ok {
		return
	}
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
	c.w.Bulk(v)
	c.closeAndCommit(tx, h)
}

func cmdHRandField(c *Client, args [][]byte) {
	if len(args) == 2 {
		tx := c.s.engine.Begin()
		h, ok := c.openColl(tx, args[1], codec.TypeHash, false)
		if !ok {
			return
		}
		if h == nil {
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
	tx := c.s.engine.Begin()
	h, ok := c.openColl(tx, args[1], codec.TypeHash, false)
	if !ok {
		return
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
