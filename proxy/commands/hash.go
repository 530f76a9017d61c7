package commands

import (
	"strconv"

	"github.com/spillway/spillway/proxy/cstr"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// The hash commands. A hash is stored one record per field; a cold hash is
// read field by field, never loaded to answer a command about a few fields.

func registerHash(t *server.Table) {
	t.Register("hset", func(x *server.Ctx, a [][]byte) error { return cmdHSet(x, a, false) })
	t.Register("hmset", func(x *server.Ctx, a [][]byte) error { return cmdHSet(x, a, true) })
	t.Register("hsetnx", cmdHSetNX)
	t.Register("hget", cmdHGet)
	t.Register("hmget", cmdHMGet)
	t.Register("hgetall", func(x *server.Ctx, a [][]byte) error {
		return cmdCollAll(x, a, codec.TypeHash, replyMap, true, true)
	})
	t.Register("hkeys", func(x *server.Ctx, a [][]byte) error {
		return cmdCollAll(x, a, codec.TypeHash, replyArray, true, false)
	})
	t.Register("hvals", func(x *server.Ctx, a [][]byte) error {
		return cmdCollAll(x, a, codec.TypeHash, replyArray, false, true)
	})
	t.Register("hdel", func(x *server.Ctx, a [][]byte) error { return cmdCollDel(x, a, codec.TypeHash) })
	t.Register("hexists", func(x *server.Ctx, a [][]byte) error { return cmdCollHas(x, a, codec.TypeHash) })
	t.Register("hlen", func(x *server.Ctx, a [][]byte) error { return cmdCollLen(x, a, codec.TypeHash) })
	t.Register("hstrlen", cmdHStrlen)
	t.Register("hincrby", cmdHIncrBy)
	t.Register("hincrbyfloat", cmdHIncrByFloat)
	t.Register("hrandfield", cmdHRandField)
	t.Register("hscan", func(x *server.Ctx, a [][]byte) error { return cmdCollScan(x, a, codec.TypeHash, true) })
}

func cmdHSet(x *server.Ctx, args [][]byte, hmset bool) error {
	if len(args)%2 != 0 {
		name := "hset"
		if hmset {
			name = "hmset"
		}
		return resp.Err("ERR wrong number of arguments for '" + name + "' command")
	}
	return x.Update(func(tx *tiering.Tx) error {
		h, err := tx.OpenColl(x.DB(), args[1], codec.TypeHash, true)
		if err != nil {
			return err
		}
		x.NotifyNewKey(h.Len() == 0, args[1]) // a structure is never stored empty
		var added int64
		for i := 2; i < len(args); i += 2 {
			created, err := h.Set(args[i], args[i+1])
			if err != nil {
				return err
			}
			added += b2i(created)
		}
		if hmset {
			x.W.OK()
		} else {
			x.W.Int(added)
		}
		x.Notify(server.NotifyHash, "hset", args[1]) // after the reply, as Redis
		return h.Close()
	})
}

func cmdHSetNX(x *server.Ctx, args [][]byte) error {
	return x.Update(func(tx *tiering.Tx) error {
		h, err := tx.OpenColl(x.DB(), args[1], codec.TypeHash, true)
		if err != nil {
			return err
		}
		isNew := h.Len() == 0
		exists, err := h.Has(args[2])
		if err == nil && !exists {
			_, err = h.Set(args[2], args[3])
		}
		if err != nil {
			return err
		}
		x.NotifyNewKey(isNew, args[1])
		x.W.Int(b2i(!exists))
		if !exists {
			x.Notify(server.NotifyHash, "hset", args[1])
		}
		return h.Close()
	})
}

// cmdHGet reads a field of a cold hash without holding the engine's lock
// across the store lookups, as cmdGet does (tiering/coldread.go): probe
// under the lock, read the meta and field records without it, finish under
// the lock. Inside a group it reads under the lock.
func cmdHGet(x *server.Ctx, args [][]byte) error {
	key, field := args[1], args[2]
	var probe tiering.ColdProbe
	err := x.View(func(tx *tiering.Tx) error {
		h, p, err := tx.CollOrProbe(x.DB(), key, codec.TypeHash)
		if err == nil && p.Cold() && !x.InGroup() {
			probe = p // nothing written: committing only releases the lock
			return nil
		} else if err == nil && p.Cold() {
			h, err = tx.OpenColl(x.DB(), key, codec.TypeHash, false)
		}
		if err != nil {
			return err
		}
		if h == nil {
			x.NotifyKeyMiss(key)
		}
		return replyField(x.W, h, field)
	})
	if err != nil || !probe.Cold() {
		return err
	}
	read, val, found, err := x.Engine().ReadColdField(probe, key, field, x.ColdBuffers())
	if err != nil {
		return err
	}
	return x.View(func(tx *tiering.Tx) error {
		h, fresh, err := tx.FinishField(x.DB(), key, codec.TypeHash, probe, read)
		switch {
		case err != nil:
			return err
		case !fresh:
			if h == nil {
				x.NotifyKeyMiss(key)
			}
			return replyField(x.W, h, field)
		case read == nil:
			x.NotifyKeyMiss(key)
			x.W.Null()
		case found:
			x.W.Bulk(val)
		default:
			x.W.Null()
		}
		return nil
	})
}

func cmdHMGet(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		h, err := tx.OpenColl(x.DB(), args[1], codec.TypeHash, false)
		if err != nil {
			return err
		}
		if h == nil {
			x.NotifyKeyMiss(args[1])
		}
		x.W.Array(len(args) - 2)
		for _, f := range args[2:] {
			if err := replyField(x.W, h, f); err != nil {
				return err
			}
		}
		return nil
	})
}

// replyField writes the value of field in h (nil: a missing key), or a null.
func replyField(w *resp.Writer, h *tiering.Coll, field []byte) error {
	if h == nil {
		w.Null()
		return nil
	}
	v, found, err := h.Get(field)
	if err != nil {
		return err
	}
	if found {
		w.Bulk(v)
	} else {
		w.Null()
	}
	return nil
}

func cmdHStrlen(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		h, err := tx.OpenColl(x.DB(), args[1], codec.TypeHash, false)
		if err != nil {
			return err
		}
		var n int
		if h != nil {
			v, _, err := h.Get(args[2])
			if err != nil {
				return err
			}
			n = len(v)
		} else {
			x.NotifyKeyMiss(args[1])
		}
		x.W.Int(int64(n))
		return nil
	})
}

func cmdHIncrBy(x *server.Ctx, args [][]byte) error {
	delta, ok := cstr.ParseInt(args[3])
	if !ok {
		return resp.Err(strops.ErrNotInteger)
	}
	return x.Update(func(tx *tiering.Tx) error {
		h, err := tx.OpenColl(x.DB(), args[1], codec.TypeHash, true)
		if err != nil {
			return err
		}
		isNew := h.Len() == 0
		cur, found, err := h.Get(args[2])
		if err != nil {
			return err
		}
		n, msg := strops.IncrBy(cur, found, delta)
		if msg == strops.ErrNotInteger {
			msg = "ERR hash value is not an integer"
		}
		if msg != "" {
			return resp.Err(msg)
		}
		if _, err := h.Set(args[2], strconv.AppendInt(nil, n, 10)); err != nil {
			return err
		}
		x.NotifyNewKey(isNew, args[1])
		x.W.Int(n)
		x.Notify(server.NotifyHash, "hincrby", args[1])
		return h.Close()
	})
}

func cmdHIncrByFloat(x *server.Ctx, args [][]byte) error {
	if msg := strops.CheckFloatIncrement(args[3]); msg != "" {
		return resp.Err(msg)
	}
	return x.Update(func(tx *tiering.Tx) error {
		h, err := tx.OpenColl(x.DB(), args[1], codec.TypeHash, true)
		if err != nil {
			return err
		}
		isNew := h.Len() == 0
		cur, found, err := h.Get(args[2])
		if err != nil {
			return err
		}
		v, msg := strops.IncrByFloat(cur, found, args[3])
		if msg == strops.ErrNotFloat {
			msg = "ERR hash value is not a float"
		}
		if msg != "" {
			return resp.Err(msg)
		}
		if _, err := h.Set(args[2], v); err != nil {
			return err
		}
		x.NotifyNewKey(isNew, args[1])
		x.W.Bulk(v)
		x.Notify(server.NotifyHash, "hincrbyfloat", args[1])
		if x.Replicating() {
			x.RewriteArgs(argHSet, args[1], args[2], v)
		}
		return h.Close()
	})
}

func cmdHRandField(x *server.Ctx, args [][]byte) error {
	if len(args) == 2 {
		return x.View(func(tx *tiering.Tx) error {
			h, err := tx.OpenColl(x.DB(), args[1], codec.TypeHash, false)
			if err != nil {
				return err
			}
			if h == nil {
				x.NotifyKeyMiss(args[1])
				x.W.Null()
				return nil
			}
			return h.Random(1, true, func(f, _ []byte) { x.W.Bulk(f) })
		})
	}
	n, distinct, err := parseRandomCount(args[2])
	if err != nil {
		return err
	}
	withValues := false
	if len(args) > 4 || (len(args) == 4 && !cstr.EqualFold(args[3], "withvalues")) {
		return resp.Err(strops.ErrSyntax)
	}
	if len(args) == 4 {
		withValues = true
		if n > (1<<63-1)/2 {
			return resp.Err("ERR value is out of range")
		}
	}
	return x.View(func(tx *tiering.Tx) error {
		h, err := tx.OpenColl(x.DB(), args[1], codec.TypeHash, false)
		if err != nil {
			return err
		}
		if h == nil {
			x.NotifyKeyMiss(args[1])
		}
		if h == nil || n == 0 {
			x.W.Array(0)
			return nil
		}
		if distinct {
			n = min(n, h.Len())
		} else if n > maxRandomCount {
			return errRandomCount
		}
		w := x.W
		if withValues && !w.RESP3() {
			w.Array(int(2 * n))
		} else {
			w.Array(int(n))
		}
		var got int64
		err = h.Random(n, distinct, func(f, v []byte) {
			got++
			if !withValues {
				w.Bulk(f)
				return
			}
			if w.RESP3() {
				w.Array(2)
			}
			w.Bulk(f)
			w.Bulk(v)
		})
		return streamed(args[1], n, got, err)
	})
}
