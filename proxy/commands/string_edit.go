package commands

import (
	"strconv"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// The string commands that read or edit part of a value, or compute with
// it: APPEND, STRLEN, the INCR family, GETRANGE, SETRANGE and LCS. An edit
// keeps the key's time to live (replaceString).

// appendInt appends n in decimal to dst.
func appendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// cmdAppend is APPEND key value; it replies the new length.
func cmdAppend(x *server.Ctx, args [][]byte) error {
	return x.Update(func(tx *tiering.Tx) error {
		e, err := getString(x, tx, args[1])
		if err != nil {
			return err
		}
		var cur []byte
		if e != nil {
			cur = e.Str
			if msg := strops.CheckStringLength(int64(len(cur)), int64(len(args[2]))); msg != "" {
				return resp.Err(msg)
			}
		}
		v := make([]byte, 0, len(cur)+len(args[2]))
		v = append(append(v, cur...), args[2]...)
		if err := replaceString(tx, x.DB(), args[1], e, v); err != nil {
			return err
		}
		x.NotifyNewKey(e == nil, args[1])
		x.Notify(server.NotifyString, "append", args[1])
		x.W.Int(int64(len(v)))
		return nil
	})
}

// cmdStrlen is STRLEN key (0 for a missing key).
func cmdStrlen(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		e, err := getString(x, tx, args[1])
		if err != nil {
			return err
		}
		if e == nil {
			x.NotifyKeyMiss(args[1])
			x.W.Int(0)
		} else {
			x.W.Int(int64(len(e.Str)))
		}
		return nil
	})
}

// cmdIncrBy is INCRBY key increment; the increment is checked first.
func cmdIncrBy(x *server.Ctx, args [][]byte) error {
	d, ok := cstr.ParseInt(args[2])
	if !ok {
		return resp.Err(strops.ErrNotInteger)
	}
	return incrBy(x, args[1], d)
}

// cmdDecrBy is DECRBY key decrement: INCRBY by the negated decrement,
// which must have one.
func cmdDecrBy(x *server.Ctx, args [][]byte) error {
	d, ok := cstr.ParseInt(args[2])
	if !ok {
		return resp.Err(strops.ErrNotInteger)
	}
	d, msg := strops.NegateDecrement(d)
	if msg != "" {
		return resp.Err(msg)
	}
	return incrBy(x, args[1], d)
}

// incrBy adds delta to the integer stored at key (0 if missing), keeping
// its time to live, and replies the result (INCR, DECR, INCRBY, DECRBY).
func incrBy(x *server.Ctx, key []byte, delta int64) error {
	return x.Update(func(tx *tiering.Tx) error {
		e, err := getString(x, tx, key)
		if err != nil {
			return err
		}
		var cur []byte
		if e != nil {
			cur = e.Str
		}
		n, msg := strops.IncrBy(cur, e != nil, delta)
		if msg != "" {
			return resp.Err(msg)
		}
		var buf [24]byte
		if err := replaceString(tx, x.DB(), key, e, appendInt(buf[:0], n)); err != nil {
			return err
		}
		x.NotifyNewKey(e == nil, key)
		x.Notify(server.NotifyString, "incrby", key)
		x.W.Int(n)
		return nil
	})
}

// cmdIncrByFloat is INCRBYFLOAT key increment; it replies the new value
// as stored.
func cmdIncrByFloat(x *server.Ctx, args [][]byte) error {
	return x.Update(func(tx *tiering.Tx) error {
		e, err := getString(x, tx, args[1])
		if err != nil {
			return err
		}
		var cur []byte
		if e != nil {
			cur = e.Str
		}
		v, msg := strops.IncrByFloat(cur, e != nil, args[2])
		if msg != "" {
			return resp.Err(msg)
		}
		if err := replaceString(tx, x.DB(), args[1], e, v); err != nil {
			return err
		}
		x.NotifyNewKey(e == nil, args[1])
		x.Notify(server.NotifyString, "incrbyfloat", args[1])
		// Propagated as the value it made, so float formatting cannot
		// make a replica differ.
		if x.Replicating() {
			x.RewriteArgs(argSet, args[1], v, argKeepTTL)
		}
		x.W.Bulk(v)
		return nil
	})
}

// cmdGetRange is GETRANGE (and SUBSTR) key start end; the indexes are
// checked before the key is looked up.
func cmdGetRange(x *server.Ctx, args [][]byte) error {
	start, ok1 := cstr.ParseInt(args[2])
	end, ok2 := cstr.ParseInt(args[3])
	if !ok1 || !ok2 {
		return resp.Err(strops.ErrNotInteger)
	}
	return x.View(func(tx *tiering.Tx) error {
		e, err := getString(x, tx, args[1])
		if err != nil {
			return err
		}
		if e == nil {
			x.NotifyKeyMiss(args[1])
			x.W.BulkString("")
		} else {
			x.W.Bulk(strops.GetRange(e.Str, start, end))
		}
		return nil
	})
}

// cmdSetRange is SETRANGE key offset value; it replies the new length. An
// empty value changes nothing (and creates no key).
func cmdSetRange(x *server.Ctx, args [][]byte) error {
	off, msg := strops.ParseSetRangeOffset(args[2])
	if msg != "" {
		return resp.Err(msg)
	}
	return x.Update(func(tx *tiering.Tx) error {
		e, err := getString(x, tx, args[1])
		if err != nil {
			return err
		}
		val := args[3]
		if len(val) == 0 {
			if e == nil {
				x.W.Int(0)
			} else {
				x.W.Int(int64(len(e.Str)))
			}
			return nil
		}
		var cur []byte
		if e != nil {
			cur = append([]byte(nil), e.Str...)
		}
		v, msg := strops.SetRange(cur, off, val)
		if msg != "" {
			return resp.Err(msg)
		}
		if err := replaceString(tx, x.DB(), args[1], e, v); err != nil {
			return err
		}
		x.NotifyNewKey(e == nil, args[1])
		x.Notify(server.NotifyString, "setrange", args[1])
		x.W.Int(int64(len(v)))
		return nil
	})
}

// cmdLCS is LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]. As
// Redis, it looks both keys up before checking their types, and parses
// its options after.
func cmdLCS(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		// Redis looks both keys up before checking their types.
		var vals [2][]byte
		wrongType := false
		for i := 0; i < 2; i++ {
			e, err := tx.Get(x.DB(), args[1+i])
			if err != nil {
				return err
			}
			switch {
			case e == nil:
				x.NotifyKeyMiss(args[1+i])
			case e.Type != codec.TypeString:
				wrongType = true
			default:
				vals[i] = e.Str
			}
		}
		if wrongType {
			return resp.Err(strops.ErrLCSType)
		}
		o, msg := strops.ParseLCSOptions(args[3:])
		if msg != "" {
			return resp.Err(msg)
		}
		res, msg := strops.ComputeLCS(vals[0], vals[1], o)
		if msg != "" {
			return resp.Err(msg)
		}
		strops.WriteLCS(x.W, res, o)
		return nil
	})
}
