package commands

import (
	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// The bit commands: strings read and written as bit arrays. The
// algorithms are strops'; these handlers look the strings up and store
// the results.

func registerBits(t *server.Table) {
	t.Register("setbit", cmdSetBit)
	t.Register("getbit", cmdGetBit)
	t.Register("bitcount", cmdBitCount)
	t.Register("bitpos", cmdBitPos)
	t.Register("bitop", cmdBitOp)
	t.Register("bitfield", func(x *server.Ctx, a [][]byte) error { return cmdBitfield(x, a, false) })
	t.Register("bitfield_ro", func(x *server.Ctx, a [][]byte) error { return cmdBitfield(x, a, true) })
}

// cloneBytes copies a hot value before an algorithm that may modify it in
// place: hot entries are never modified in place.
func cloneBytes(b []byte) []byte { return append([]byte(nil), b...) }

// cmdSetBit is SETBIT key offset value; it replies the bit's old value.
// Offset and value are checked before the key is looked up.
func cmdSetBit(x *server.Ctx, args [][]byte) error {
	off, msg := strops.ParseBitOffset(args[2], 1)
	if msg != "" {
		return resp.Err(msg)
	}
	bit, msg := strops.ParseBitValue(args[3])
	if msg != "" {
		return resp.Err(msg)
	}
	return x.Update(func(tx *tiering.Tx) error {
		e, err := getString(x, tx, args[1])
		if err != nil {
			return err
		}
		var cur []byte
		if e != nil {
			cur = cloneBytes(e.Str)
		}
		grew := e == nil || int(off>>3) >= len(e.Str)
		v, old := strops.SetBit(cur, off, bit)
		if err := replaceString(tx, x.DB(), args[1], e, v); err != nil {
			return err
		}
		x.NotifyNewKey(e == nil, args[1])
		if grew || old != bit {
			// Redis notifies when the string was created or grown, or the
			// bit changed.
			x.Notify(server.NotifyString, "setbit", args[1])
		}
		x.W.Int(int64(old))
		return nil
	})
}

// cmdGetBit is GETBIT key offset (0 past the end or for a missing key).
func cmdGetBit(x *server.Ctx, args [][]byte) error {
	off, msg := strops.ParseBitOffset(args[2], 1)
	if msg != "" {
		return resp.Err(msg)
	}
	return x.View(func(tx *tiering.Tx) error {
		e, err := getString(x, tx, args[1])
		if err != nil {
			return err
		}
		if e == nil {
			x.NotifyKeyMiss(args[1])
			x.W.Int(0)
		} else {
			x.W.Int(int64(strops.GetBit(e.Str, off)))
		}
		return nil
	})
}

// cmdBitCount is BITCOUNT key [start end [BYTE|BIT]]. The range is parsed
// only for an existing key, as Redis 7.0 does.
func cmdBitCount(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		e, err := getString(x, tx, args[1])
		if err != nil {
			return err
		}
		if e == nil {
			// Redis 7.0 replies 0 for a missing key whatever the range says.
			x.NotifyKeyMiss(args[1])
			x.W.Int(0)
			return nil
		}
		r, msg := strops.ParseBitCountArgs(args[2:])
		if msg != "" {
			return resp.Err(msg)
		}
		x.W.Int(strops.BitCount(e.Str, r))
		return nil
	})
}

// cmdBitPos is BITPOS key bit [start [end [BYTE|BIT]]]. The bit is checked
// first, the range only for an existing key, as Redis 7.0 does.
func cmdBitPos(x *server.Ctx, args [][]byte) error {
	bit, msg := strops.ParseBitPosBit(args[2])
	if msg != "" {
		return resp.Err(msg)
	}
	return x.View(func(tx *tiering.Tx) error {
		e, err := getString(x, tx, args[1])
		if err != nil {
			return err
		}
		if e == nil {
			x.NotifyKeyMiss(args[1])
			if bit == 1 {
				x.W.Int(-1)
			} else {
				x.W.Int(0)
			}
			return nil
		}
		r, msg := strops.ParseBitPosArgs(args[3:])
		if msg != "" {
			return resp.Err(msg)
		}
		x.W.Int(strops.BitPos(e.Str, bit, r))
		return nil
	})
}

// cmdBitOp is BITOP operation destkey key...: it stores the result in
// destkey (deleting it for an empty result) and replies its length.
func cmdBitOp(x *server.Ctx, args [][]byte) error {
	op, msg := strops.ParseBitOp(args[1], len(args)-3)
	if msg != "" {
		return resp.Err(msg)
	}
	return x.Update(func(tx *tiering.Tx) error {
		srcs := make([][]byte, 0, len(args)-3)
		for _, k := range args[3:] {
			e, err := tx.Get(x.DB(), k)
			if err != nil {
				return err
			}
			if e == nil {
				x.NotifyKeyMiss(k)
				srcs = append(srcs, nil)
				continue
			}
			if e.Type != codec.TypeString {
				return resp.ErrWrongType
			}
			srcs = append(srcs, e.Str)
		}
		res := strops.BitOp(op, srcs)
		if res == nil {
			deleted, err := tx.Delete(x.DB(), args[2])
			if err != nil {
				return err
			}
			if deleted {
				x.Notify(server.NotifyGeneric, "del", args[2])
			}
		} else {
			isNew, err := x.KeyIsNew(tx, x.DB(), args[2])
			if err != nil {
				return err
			}
			if err := tx.SetString(x.DB(), args[2], res, 0); err != nil {
				return err
			}
			notifySet(x, isNew, args[2], false)
		}
		x.W.Int(int64(len(res)))
		return nil
	})
}

// cmdBitfield is BITFIELD (readOnly false) and BITFIELD_RO (true): its
// operations are parsed before the key is looked up; the string is
// stored only if a write changed it.
func cmdBitfield(x *server.Ctx, args [][]byte, readOnly bool) error {
	ops, msg := strops.ParseBitfield(args[2:], readOnly)
	if msg != "" {
		return resp.Err(msg)
	}
	return x.Update(func(tx *tiering.Tx) error {
		if !readOnly && onlyGets(ops) {
			tx.CountLookups(true) // Redis reads the key then (keyspace_hits)
		}
		e, err := getString(x, tx, args[1])
		tx.CountLookups(readOnly)
		if err != nil {
			return err
		}
		var cur []byte
		if e != nil {
			cur = cloneBytes(e.Str)
		}
		var before []byte
		if e != nil {
			before = e.Str // entries are never modified in place
		}
		v, results, changed := strops.ExecBitfield(cur, ops)
		if changed {
			if err := replaceString(tx, x.DB(), args[1], e, v); err != nil {
				return err
			}
			x.NotifyNewKey(e == nil, args[1])
		} else if e == nil {
			x.NotifyKeyMiss(args[1]) // only GETs: Redis looks the key up for reading
		}
		x.W.Array(len(results))
		for _, r := range results {
			if r.Null {
				x.W.Null()
			} else {
				x.W.Int(r.Value)
			}
		}
		// Checked even with notifications off: the event also counts the
		// change (INFO rdb_changes_since_last_save).
		if changed && bitfieldChanged(before, e == nil, ops, results) {
			x.Notify(server.NotifyString, "setbit", args[1]) // after the reply, as Redis
		}
		return nil
	})
}

// onlyGets reports whether ops are all GETs.
func onlyGets(ops []strops.BitfieldOp) bool {
	for _, op := range ops {
		if op.Op != strops.BitfieldGet {
			return false
		}
	}
	return true
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
