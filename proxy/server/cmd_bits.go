package server

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
	grew := e == nil || int(off>>3) >= len(e.Str)
	v, old := strops.SetBit(cur, off, bit)
	if err := replaceString(tx, c.db, args[1], e, v); err != nil {
		c.txErr(tx, err)
		return
	}
	c.notifyNewKey(e == nil, args[1])
	if grew || old != bit {
		// Redis notifies when the string was created or grown, or the
		// bit changed.
		c.notify(NotifyString, "setbit", args[1])
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
		c.notifyKeyMiss(args[1])
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
		c.notifyKeyMiss(args[1])
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
		c.notifyKeyMiss(args[1])
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
			c.notifyKeyMiss(k)
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
	if res == nil {
		deleted, err := tx.Delete(c.db, args[2])
		if err != nil {
			c.txErr(tx, err)
			return
		}
		if deleted {
			c.notify(NotifyGeneric, "del", args[2])
		}
	} else {
		isNew, ok := c.keyIsNew(tx, c.db, args[2])
		if !ok {
			return
		}
		if err := tx.SetString(c.db, args[2], res, 0); err != nil {
			c.txErr(tx, err)
			return
		}
		c.notifySet(isNew, args[2], false)
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
	var before []byte
	notifyStr := c.s.notifyEnabled(NotifyString)
	if e != nil && notifyStr {
		before = e.Str // entries are never modified in place
	}
	v, results, changed := strops.ExecBitfield(cur, ops)
	if changed {
		if err := replaceString(tx, c.db, args[1], e, v); err != nil {
			c.txErr(tx, err)
			return
		}
		c.notifyNewKey(e == nil, args[1])
	} else if e == nil {
		c.notifyKeyMiss(args[1]) // only GETs: Redis looks the key up for reading
	}
	c.w.Array(len(results))
	for _, r := range results {
		if r.Null {
			c.w.Null()
		} else {
			c.w.Int(r.Value)
		}
	}
	if changed && notifyStr && bitfieldChanged(before, e == nil, ops, results) {
		c.notify(NotifyString, "setbit", args[1]) // after the reply, as Redis
	}
	c.commit(tx)
}

// bitfieldChanged reports whether BITFIELD counts a change, as Redis 7.0
// does to decide on its "setbit" event: a SET or INCRBY that did not fail
// (OVERFLOW FAIL) changes something if the string was created or grown
// for the command, or if it changed its field's value. old is the value
// before the command (created: there was none); results are
// ExecBitfield's.
func bitfieldChanged(old []byte, created bool, ops []strops.BitfieldOp, results []strops.BitfieldResult) bool {
	size := len(old)
	for i := range ops {
		if ops[i].Op != strops.BitfieldGet {
			size = max(size, int((ops[i].Offset+uint64(ops[i].Bits)-1)>>3+1))
		}
	}
	if created || size > len(old) {
		for i := range ops {
			if ops[i].Op != strops.BitfieldGet && !results[i].Null {
				return true
			}
		}
		return false
	}
	// Not grown: replay the ops one at a time, comparing the bytes each
	// successful write leaves.
	cur := cloneBytes(old)
	for i := range ops {
		if ops[i].Op == strops.BitfieldGet {
			continue
		}
		prev := cloneBytes(cur)
		var res []strops.BitfieldResult
		cur, res, _ = strops.ExecBitfield(cur, ops[i:i+1])
		if !res[0].Null && string(prev) != string(cur) {
			return true
		}
	}
	return false
}
