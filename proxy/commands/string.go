package commands

import (
	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// The string commands: reading and writing whole values (this file) and
// editing them in place (string_edit.go: APPEND, the INCR family, ranges,
// LCS). A string is one record; GET reads a cold one without holding the
// engine's lock.

func registerString(t *server.Table) {
	t.Register("get", cmdGet)
	t.Register("set", cmdSet)
	t.Register("setnx", cmdSetNX)
	t.Register("setex", func(x *server.Ctx, a [][]byte) error { return cmdSetEx(x, a, strops.ExpireEX, "setex") })
	t.Register("psetex", func(x *server.Ctx, a [][]byte) error { return cmdSetEx(x, a, strops.ExpirePX, "psetex") })
	t.Register("getset", cmdGetSet)
	t.Register("getdel", cmdGetDel)
	t.Register("getex", cmdGetEx)
	t.Register("mget", cmdMGet)
	t.Register("mset", cmdMSet)
	t.Register("msetnx", cmdMSetNX)
	t.Register("append", cmdAppend)
	t.Register("strlen", cmdStrlen)
	t.Register("incr", func(x *server.Ctx, a [][]byte) error { return incrBy(x, a[1], 1) })
	t.Register("decr", func(x *server.Ctx, a [][]byte) error { return incrBy(x, a[1], -1) })
	t.Register("incrby", cmdIncrBy)
	t.Register("decrby", cmdDecrBy)
	t.Register("incrbyfloat", cmdIncrByFloat)
	t.Register("getrange", cmdGetRange)
	t.Register("substr", cmdGetRange)
	t.Register("setrange", cmdSetRange)
	t.Register("lcs", cmdLCS)
}

// getString looks key up in the client's database for a string command.
// It returns the entry (nil if missing), or resp.ErrWrongType if key holds
// another type, or a storage error.
func getString(x *server.Ctx, tx *tiering.Tx, key []byte) (*tiering.Entry, error) {
	e, err := tx.Get(x.DB(), key)
	if err != nil {
		return nil, err
	}
	if e != nil && e.Type != codec.TypeString {
		return nil, resp.ErrWrongType
	}
	return e, nil
}

// cmdGet reads a cold key without holding the engine's lock across the
// store lookup (see tiering/coldread.go), so cold reads overlap each other
// and everything else: it probes under the lock, reads the cold record
// without it (ReadCold) and finishes under the lock again (FinishGet).
// Inside a group, which may not release the lock, it reads under it.
func cmdGet(x *server.Ctx, args [][]byte) error {
	key := args[1]
	var probe tiering.ColdProbe
	cold := false
	err := x.View(func(tx *tiering.Tx) error {
		e, p, err := tx.GetOrProbe(x.DB(), key)
		if err == nil && p.Cold() && x.InGroup() {
			// A group must read under its hold of the lock.
			e, err = tx.Get(x.DB(), key)
		} else if err == nil && p.Cold() {
			// Nothing written: committing only releases the lock.
			probe, cold = p, true
			return nil
		}
		if err != nil {
			return err
		}
		return replyGet(x, key, e)
	})
	if err != nil || !cold {
		return err
	}
	read, err := x.Engine().ReadCold(probe, key, x.ColdBuffers())
	if err != nil {
		return err
	}
	return x.View(func(tx *tiering.Tx) error {
		e, err := tx.FinishGet(x.DB(), key, probe, read)
		if err != nil {
			return err
		}
		return replyGet(x, key, e)
	})
}

// replyGet answers GET with e, key's entry (nil if missing; "keymiss"
// then), or returns resp.ErrWrongType if it is not a string.
func replyGet(x *server.Ctx, key []byte, e *tiering.Entry) error {
	if e != nil && e.Type != codec.TypeString {
		return resp.ErrWrongType
	}
	if e == nil {
		x.NotifyKeyMiss(key)
		x.W.Null()
	} else {
		x.W.Bulk(e.Str)
	}
	return nil
}

// cmdSet is SET key value [NX|XX] [GET] [EX|PX|EXAT|PXAT|KEEPTTL]. Its
// options are parsed inside the transaction (expiry times are relative to
// the transaction's clock).
func cmdSet(x *server.Ctx, args [][]byte) error {
	return x.Update(func(tx *tiering.Tx) error {
		o, msg := strops.ParseSet(args[3:], tx.Now())
		if msg != "" {
			return resp.Err(msg)
		}
		var old *tiering.Entry
		var err error
		looked := o.Get || o.NX || o.XX || o.KeepTTL
		if o.Get {
			tx.CountLookups(true) // Redis reads the old value (keyspace_hits)
			old, err = getString(x, tx, args[1])
			tx.CountLookups(false)
			if err != nil {
				return err
			}
		} else if looked {
			if old, err = tx.Peek(x.DB(), args[1]); err != nil {
				return err
			}
		}
		if o.Get {
			if old == nil {
				x.NotifyKeyMiss(args[1])
				x.W.Null()
			} else {
				x.W.Bulk(old.Str)
			}
		}
		if (o.NX && old != nil) || (o.XX && old == nil) {
			if !o.Get {
				x.W.Null()
			}
			return nil
		}
		at := o.ExpireAt
		if o.KeepTTL && old != nil {
			at = old.ExpireAt
		}
		isNew := old == nil
		if !looked {
			if isNew, err = x.KeyIsNew(tx, x.DB(), args[1]); err != nil {
				return err
			}
		}
		if err := tx.SetString(x.DB(), args[1], args[2], at); err != nil {
			return err
		}
		notifySet(x, isNew, args[1], o.ExpireAt != 0)
		switch {
		case !x.Replicating():
		case o.ExpireAt != 0:
			// Any time to live propagates as an absolute one.
			x.RewriteArgs(argSet, args[1], args[2], argPXAT, intArg(o.ExpireAt))
		case o.Get:
			// GET changes nothing on a replica: propagated without it.
			rw := make([][]byte, 0, len(args))
			for i, a := range args {
				if i < 3 || !cstr.EqualFold(a, "get") {
					rw = append(rw, a)
				}
			}
			x.RewriteArgs(rw...)
		}
		if !o.Get {
			x.W.OK()
		}
		return nil
	})
}

// notifySet publishes a SET's events: "new" if it created key, "set", and
// "expire" if it gave key a time to live.
func notifySet(x *server.Ctx, isNew bool, key []byte, expire bool) {
	x.NotifyNewKey(isNew, key)
	x.Notify(server.NotifyString, "set", key)
	if expire {
		x.Notify(server.NotifyGeneric, "expire", key)
	}
}

// cmdSetNX is SETNX key value: it sets key only if it does not exist.
func cmdSetNX(x *server.Ctx, args [][]byte) error {
	return x.Update(func(tx *tiering.Tx) error {
		old, err := tx.Peek(x.DB(), args[1])
		if err != nil {
			return err
		}
		if old != nil {
			x.W.Int(0)
			return nil
		}
		if err := tx.SetString(x.DB(), args[1], args[2], 0); err != nil {
			return err
		}
		notifySet(x, true, args[1], false)
		x.W.Int(1)
		return nil
	})
}

// cmdSetEx is SETEX (kind ExpireEX) and PSETEX (ExpirePX): key, time to
// live, value; name is the command's name for the error messages.
func cmdSetEx(x *server.Ctx, args [][]byte, kind strops.ExpireKind, name string) error {
	return x.Update(func(tx *tiering.Tx) error {
		at, msg := strops.ExpireMillis(args[2], kind, tx.Now(), name)
		if msg != "" {
			return resp.Err(msg)
		}
		isNew, err := x.KeyIsNew(tx, x.DB(), args[1])
		if err != nil {
			return err
		}
		if err := tx.SetString(x.DB(), args[1], args[3], at); err != nil {
			return err
		}
		notifySet(x, isNew, args[1], true)
		if x.Replicating() {
			x.RewriteArgs(argSet, args[1], args[3], argPXAT, intArg(at))
		}
		x.W.OK()
		return nil
	})
}

// cmdGetSet is GETSET key value: it replies the old value and sets the
// new one without a time to live.
func cmdGetSet(x *server.Ctx, args [][]byte) error {
	return x.Update(func(tx *tiering.Tx) error {
		old, err := getString(x, tx, args[1])
		if err != nil {
			return err
		}
		if old == nil {
			x.NotifyKeyMiss(args[1])
			x.W.Null()
		} else {
			x.W.Bulk(old.Str)
		}
		if err := tx.SetString(x.DB(), args[1], args[2], 0); err != nil {
			return err
		}
		notifySet(x, old == nil, args[1], false)
		if x.Replicating() {
			x.RewriteArgs(argSet, args[1], args[2])
		}
		return nil
	})
}

// cmdGetDel is GETDEL key: it replies the value and deletes the key.
func cmdGetDel(x *server.Ctx, args [][]byte) error {
	return x.Update(func(tx *tiering.Tx) error {
		old, err := getString(x, tx, args[1])
		if err != nil {
			return err
		}
		if old == nil {
			x.NotifyKeyMiss(args[1])
			x.W.Null()
			return nil
		}
		x.W.Bulk(old.Str)
		if _, err := tx.Delete(x.DB(), args[1]); err != nil {
			return err
		}
		x.Notify(server.NotifyGeneric, "del", args[1])
		if x.Replicating() {
			x.RewriteArgs(delArg(x, "lazyfree-lazy-user-del"), args[1])
		}
		return nil
	})
}

// cmdGetEx is GETEX key [EX|PX|EXAT|PXAT|PERSIST]: it replies the value
// and sets or removes its time to live (a time in the past deletes it).
// The options' syntax is checked before the key is looked up, their
// values only for an existing key, as Redis does.
func cmdGetEx(x *server.Ctx, args [][]byte) error {
	return x.Update(func(tx *tiering.Tx) error {
		o, msg := strops.ParseGetEx(args[2:])
		if msg != "" {
			return resp.Err(msg)
		}
		e, err := getString(x, tx, args[1])
		if err != nil {
			return err
		}
		if e == nil {
			x.NotifyKeyMiss(args[1])
			x.W.Null()
			return nil
		}
		at, msg := o.Absolute(tx.Now(), "getex")
		if msg != "" {
			return resp.Err(msg)
		}
		x.W.Bulk(e.Str)
		event := ""
		switch {
		case (o.Kind == strops.ExpireEXAT || o.Kind == strops.ExpirePXAT) && at <= tx.Now():
			_, err = tx.Delete(x.DB(), args[1])
			event = "del"
		case o.Kind != strops.NoExpire:
			_, err = tx.SetExpire(x.DB(), args[1], at)
			event = "expire"
		case o.Persist && e.ExpireAt != 0:
			_, err = tx.SetExpire(x.DB(), args[1], 0)
			event = "persist"
		}
		if err != nil {
			return err
		}
		if event != "" {
			x.Notify(server.NotifyGeneric, event, args[1])
		}
		if event != "" && x.Replicating() {
			// GETEX never propagates as itself.
			switch event {
			case "del":
				x.RewriteArgs(delArg(x, "lazyfree-lazy-expire"), args[1])
			case "expire":
				x.RewriteArgs(argPExpireAt, args[1], intArg(at))
			default:
				x.RewriteArgs(argPersist, args[1])
			}
		}
		return nil
	})
}

// cmdMGet is MGET key...: a null for a missing key or one of another type.
func cmdMGet(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		x.W.Array(len(args) - 1)
		for _, k := range args[1:] {
			e, err := tx.Get(x.DB(), k)
			if err != nil {
				return err
			}
			if e == nil {
				x.NotifyKeyMiss(k)
			}
			if e == nil || e.Type != codec.TypeString {
				x.W.Null()
			} else {
				x.W.Bulk(e.Str)
			}
		}
		return nil
	})
}

// cmdMSet is MSET key value [key value ...].
func cmdMSet(x *server.Ctx, args [][]byte) error {
	if len(args)%2 == 0 {
		return resp.Err("ERR wrong number of arguments for '" + strops.LowerASCII(args[0]) + "' command")
	}
	return x.Update(func(tx *tiering.Tx) error {
		if err := msetPairs(x, tx, args); err != nil {
			return err
		}
		x.W.OK()
		return nil
	})
}

// cmdMSetNX is MSETNX key value [key value ...]: it sets them all only if
// none exists.
func cmdMSetNX(x *server.Ctx, args [][]byte) error {
	if len(args)%2 == 0 {
		return resp.Err("ERR wrong number of arguments for 'msetnx' command")
	}
	return x.Update(func(tx *tiering.Tx) error {
		for i := 1; i < len(args); i += 2 {
			e, err := tx.Peek(x.DB(), args[i])
			if err != nil {
				return err
			}
			if e != nil {
				x.W.Int(0)
				return nil
			}
		}
		if err := msetPairs(x, tx, args); err != nil {
			return err
		}
		x.W.Int(1)
		return nil
	})
}

// msetPairs stores MSET's key-value pairs (args[1:]) in order, each with
// its events ("new" if it creates the key, then "set"). It returns the
// first storage error.
func msetPairs(x *server.Ctx, tx *tiering.Tx, args [][]byte) error {
	for i := 1; i < len(args); i += 2 {
		isNew, err := x.KeyIsNew(tx, x.DB(), args[i])
		if err != nil {
			return err
		}
		if err := tx.SetString(x.DB(), args[i], args[i+1], 0); err != nil {
			return err
		}
		notifySet(x, isNew, args[i], false)
	}
	return nil
}

// replaceString stores v as key's new value, keeping the expiry of old (nil
// for a new key).
func replaceString(tx *tiering.Tx, db int, key []byte, old *tiering.Entry, v []byte) error {
	var at int64
	if old != nil {
		at = old.ExpireAt
	}
	return tx.SetString(db, key, v, at)
}
