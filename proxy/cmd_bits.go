package proxy

import (
	"strconv"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/strops"
)

func init() {
	register("setbit", cmdSetBit)
	register("getbit", cmdGetBit)
	register("bitcount", cmdBitCount)
	register("bitpos", cmdBitPos)
	register("bitop", cmdBitOp)
	register("bitfield", func(c *Client, a [][]byte) { cmdBitfield(c, a, false) })
	register("bitfield_ro", func(c *Client, a [][]byte) { cmdBitfield(c, a, true) })
}

func appendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// cloneBytes copies a hot value before an algorithm that may modify it in
// place: hot entries are never modified in place.
func cloneBytes(b []byte) []byte { return append([]byte(nil), b...) }

func cmdSetBit(c *Client, args [][]byte) {
	off, msg := strops.ParseBitOffset(args[2], 1)
	if msg != "" {
		c.err(msg)
		return
	}
	bit, msg := strops.ParseBitValue(args[3])
	if msg != "" {
		c.err(msg)
		return
	}
	tx := c.begin()
	e, ok := c.getString(tx, args[1])
	if !ok {
		return
	}
	var cur []byte
	if e != nil {
		cur = cloneBytes(e.Str)
	}
	v, old := strops.SetBit(cur, off, bit)
	if err := replaceString(tx, c.db, args[1], e, v); err != nil {
		c.txErr(tx, err)
		return
	}
	c.w.Int(int64(old))
	c.commit(tx)
}

func cmdGetBit(c *Client, args [][]byte) {
	off, msg := strops.ParseBitOffset(args[2], 1)
	if msg != "" {
		c.err(msg)
		return
	}
	tx := c.begin()
	e, ok := c.getString(tx, args[1])
	if !ok {
		return
	}
	if e == nil {
		c.w.Int(0)
	} else {
		c.w.Int(int64(strops.GetBit(e.Str, off)))
	}
	c.commit(tx)
}

func cmdBitCount(c *Client, args [][]byte) {
	tx := c.begin()
	e, ok := c.getString(tx, args[1])
	if !ok {
		return
	}
	if e == nil {
		// Redis 7.0 replies 0 for a missing key whatever the range says.
		c.w.Int(0)
		c.commit(tx)
		return
	}
	r, msg := strops.ParseBitCountArgs(args[2:])
	if msg != "" {
		c.txFail(tx, msg)
		return
	}
	c.w.Int(strops.BitCount(e.Str, r))
	c.commit(tx)
}

func cmdBitPos(c *Client, args [][]byte) {
	bit, msg := strops.ParseBitPosBit(args[2])
	if msg != "" {
		c.err(msg)
		return
	}
	tx := c.begin()
	e, ok := c.getString(tx, args[1])
	if !ok {
		return
	}
	if e == nil {
		if bit == 1 {
			c.w.Int(-1)
		} else {
			c.w.Int(0)
		}
		c.commit(tx)
		return
	}
	r, msg := strops.ParseBitPosArgs(args[3:])
	if msg != "" {
		c.txFail(tx, msg)
		return
	}
	c.w.Int(strops.BitPos(e.Str, bit, r))
	c.commit(tx)
}

func cmdBitOp(c *Client, args [][]byte) {
	op, msg := strops.ParseBitOp(args[1], len(args)-3)
	if msg != "" {
		c.err(msg)
		return
	}
	tx := c.begin()
	srcs := make([][]byte, 0, len(args)-3)
	for _, k := range args[3:] {
		e, err := tx.Get(c.db, k)
		if err != nil {
			c.txErr(tx, err)
			return
		}
		if e == nil {
			srcs = append(srcs, nil)
			continue
		}
		if e.Type != codec.TypeString {
			c.txFail(tx, errWrongType)
			return
		}
		srcs = append(srcs, e.Str)
	}
	res := strops.BitOp(op, srcs)
	var err error
	if res == nil {
		_, err = tx.Delete(c.db, args[2])
	} else {
		err = tx.SetString(c.db, args[2], res, 0)
	}
	if err != nil {
		c.txErr(tx, err)
		return
	}
	c.w.Int(int64(len(res)))
	c.commit(tx)
}

func cmdBitfield(c *Client, args [][]byte, readOnly bool) {
	ops, msg := strops.ParseBitfield(args[2:], readOnly)
	if msg != "" {
		c.err(msg)
		return
	}
	tx := c.begin()
	e, ok := c.getString(tx, args[1])
	if !ok {
		return
	}
	var cur []byte
	if e != nil {
		cur = cloneBytes(e.Str)
	}
	v, results, changed := strops.ExecBitfield(cur, ops)
	if changed {
		if err := replaceString(tx, c.db, args[1], e, v); err != nil {
			c.txErr(tx, err)
			return
		}
	}
	c.w.Array(len(results))
	for _, r := range results {
		if r.Null {
			c.w.Null()
		} else {
			c.w.Int(r.Value)
		}
	}
	c.commit(tx)
}
