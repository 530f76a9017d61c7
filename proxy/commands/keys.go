package commands

import (
	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// The generic keyspace commands: deletion, existence and type, renaming,
// copying and moving between databases, and key enumeration. Expiry is in
// keys_expire.go, OBJECT in keys_object.go.
//
// The server's upstream mode runs SCAN and RANDOMKEY through the table
// (on the cold store), parsing their replies: both must stay registered
// under those names with Redis's reply formats.

func registerKeys(t *server.Table) {
	t.Register("del", cmdDel)
	t.Register("unlink", cmdUnlink) // memory.go: DEL, and lazy-free accounting
	t.Register("exists", cmdExists)
	t.Register("type", cmdType)
	t.Register("touch", cmdTouch)
	t.Register("expire", func(x *server.Ctx, a [][]byte) error { return expireGeneric(x, a, true, false, "expire") })
	t.Register("pexpire", func(x *server.Ctx, a [][]byte) error { return expireGeneric(x, a, false, false, "pexpire") })
	t.Register("expireat", func(x *server.Ctx, a [][]byte) error { return expireGeneric(x, a, true, true, "expireat") })
	t.Register("pexpireat", func(x *server.Ctx, a [][]byte) error { return expireGeneric(x, a, false, true, "pexpireat") })
	t.Register("ttl", func(x *server.Ctx, a [][]byte) error { return ttlGeneric(x, a, false, false) })
	t.Register("pttl", func(x *server.Ctx, a [][]byte) error { return ttlGeneric(x, a, true, false) })
	t.Register("expiretime", func(x *server.Ctx, a [][]byte) error { return ttlGeneric(x, a, false, true) })
	t.Register("pexpiretime", func(x *server.Ctx, a [][]byte) error { return ttlGeneric(x, a, true, true) })
	t.Register("persist", cmdPersist)
	t.Register("rename", func(x *server.Ctx, a [][]byte) error { return renameGeneric(x, a, false) })
	t.Register("renamenx", func(x *server.Ctx, a [][]byte) error { return renameGeneric(x, a, true) })
	t.Register("copy", cmdCopy)
	t.Register("move", cmdMove)
	t.Register("keys", cmdKeys)
	t.Register("scan", cmdScan)
	t.Register("randomkey", cmdRandomKey)
	t.Register("object|encoding", cmdObjectEncoding)
	t.Register("object|idletime", cmdObjectIdle)
	t.Register("object|freq", cmdObjectFreq)
	t.Register("object|refcount", cmdObjectRefcount)
	t.Register("object|help", server.HelpHandler(objectHelp))
}

// cmdDel is DEL and UNLINK: it deletes the keys, publishing "del" for each
// one that existed, and replies how many did.
func cmdDel(x *server.Ctx, args [][]byte) error {
	return x.Update(func(tx *tiering.Tx) error {
		var n int64
		for _, k := range args[1:] {
			ok, err := tx.Delete(x.DB(), k)
			if err != nil {
				return err
			}
			if ok {
				x.Notify(server.NotifyGeneric, "del", k)
				n++
			}
		}
		x.W.Int(n)
		return nil
	})
}

// countLive counts the live keys among keys (EXISTS, TOUCH) from metadata
// only: a cold key is not promoted. A missing key is a read miss.
func countLive(x *server.Ctx, keys [][]byte, touch bool) error {
	return x.View(func(tx *tiering.Tx) error {
		var n int64
		for _, k := range keys {
			peek := tx.PeekNoTouch
			if touch {
				peek = tx.Peek
			}
			e, err := peek(x.DB(), k)
			if err != nil {
				return err
			}
			if e != nil {
				n++
			} else {
				x.NotifyKeyMiss(k)
			}
		}
		x.W.Int(n)
		return nil
	})
}

// cmdExists is EXISTS key...: how many of the keys exist (a key named
// twice counts twice). It leaves their access times alone, as Redis does.
func cmdExists(x *server.Ctx, args [][]byte) error { return countLive(x, args[1:], false) }

// cmdTouch is TOUCH key...: as EXISTS, and the keys found are marked
// recently used.
func cmdTouch(x *server.Ctx, args [][]byte) error { return countLive(x, args[1:], true) }

// cmdType is TYPE key: the type's name, or "none" (a read miss).
func cmdType(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		e, err := tx.PeekNoTouch(x.DB(), args[1])
		if err != nil {
			return err
		}
		if e == nil {
			x.NotifyKeyMiss(args[1])
			x.W.Simple("none")
		} else {
			x.W.Simple(e.Type.String())
		}
		return nil
	})
}

// renameGeneric is RENAME and (nx) RENAMENX: it replies "no such key" for
// a missing source; RENAMENX replies whether it renamed.
func renameGeneric(x *server.Ctx, args [][]byte, nx bool) error {
	return x.Update(func(tx *tiering.Tx) error {
		exists, moved, err := tx.Rename(x.DB(), args[1], x.DB(), args[2], nx)
		if err != nil {
			return err
		}
		if moved && string(args[1]) != string(args[2]) {
			// Redis deletes an existing destination and adds it anew.
			x.Notify(server.NotifyNew, "new", args[2])
			x.Notify(server.NotifyGeneric, "rename_from", args[1])
			x.Notify(server.NotifyGeneric, "rename_to", args[2])
		}
		switch {
		case !exists:
			return resp.Err("ERR no such key")
		case nx && moved:
			x.W.Int(1)
		case nx:
			x.W.Int(0)
		default:
			x.W.OK()
		}
		return nil
	})
}

// parseDB parses a database index argument (COPY ... DB, MOVE) against the
// engine's databases, with Redis's errors.
func parseDB(x *server.Ctx, arg []byte) (int, error) {
	n, ok := cstr.ParseInt(arg)
	if !ok || n < -2147483648 || n > 2147483647 {
		return 0, resp.Err(strops.ErrNotInteger)
	}
	if n < 0 || n >= int64(x.Engine().Databases()) {
		return 0, resp.Err("ERR DB index is out of range")
	}
	return int(n), nil
}

// cmdCopy is COPY source destination [DB db] [REPLACE]. The options are
// checked before the transaction.
func cmdCopy(x *server.Ctx, args [][]byte) error {
	dstDB := x.DB()
	replace := false
	for i := 3; i < len(args); i++ {
		switch {
		case cstr.EqualFold(args[i], "replace"):
			replace = true
		case cstr.EqualFold(args[i], "db") && i+1 < len(args):
			db, err := parseDB(x, args[i+1])
			if err != nil {
				return err
			}
			dstDB = db
			i++
		default:
			return resp.Err(strops.ErrSyntax)
		}
	}
	if dstDB == x.DB() && string(args[1]) == string(args[2]) {
		return resp.Err("ERR source and destination objects are the same")
	}
	return x.Update(func(tx *tiering.Tx) error {
		ok, err := tx.Copy(x.DB(), args[1], dstDB, args[2], replace)
		if err != nil {
			return err
		}
		if ok {
			// Redis deletes an existing destination and adds it anew.
			x.NotifyIn(dstDB, server.NotifyNew, "new", args[2])
			x.NotifyIn(dstDB, server.NotifyGeneric, "copy_to", args[2])
			x.W.Int(1)
			return nil
		}
		// A missing source is a read miss; an existing destination is not.
		if x.NotifyEnabled(server.NotifyKeyMiss) {
			miss, err := server.KeyIsMissing(tx, x.DB(), args[1])
			if err != nil {
				return err
			}
			if miss {
				x.NotifyKeyMiss(args[1])
			}
		}
		x.W.Int(0)
		return nil
	})
}

// cmdMove is MOVE key db: it moves key to database db unless db holds it.
func cmdMove(x *server.Ctx, args [][]byte) error {
	n, err := parseDB(x, args[2])
	if err != nil {
		return err
	}
	if n == x.DB() {
		return resp.Err("ERR source and destination objects are the same")
	}
	return x.Update(func(tx *tiering.Tx) error {
		_, moved, err := tx.Rename(x.DB(), args[1], n, args[1], true)
		if err != nil {
			return err
		}
		if moved {
			x.NotifyIn(n, server.NotifyNew, "new", args[1])
			x.Notify(server.NotifyGeneric, "move_from", args[1])
			x.NotifyIn(n, server.NotifyGeneric, "move_to", args[1])
			x.W.Int(1)
		} else {
			x.W.Int(0)
		}
		return nil
	})
}

// cmdKeys is KEYS pattern.
func cmdKeys(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		keys, err := tx.Keys(x.DB(), strops.Matcher(args[1]))
		if err != nil {
			return err
		}
		x.W.Array(len(keys))
		for _, k := range keys {
			x.W.Bulk(k)
		}
		return nil
	})
}

// cmdScan is SCAN cursor [MATCH pattern] [COUNT n] [TYPE type]; cursor and
// options are checked before the transaction. Upstream mode parses its
// reply (scanReply's format).
func cmdScan(x *server.Ctx, args [][]byte) error {
	cursor, err := scanCursor(args[1])
	if err != nil {
		return err
	}
	opts, err := ScanOptions(args[2:])
	if err != nil {
		return err
	}
	return x.View(func(tx *tiering.Tx) error {
		keys, next, err := tx.Scan(x.DB(), cursor, opts, nil)
		if err != nil {
			return err
		}
		WriteScanReply(x.W, next, keys)
		return nil
	})
}

// ScanOptions parses SCAN's options after the cursor (MATCH, COUNT, TYPE)
// into the store's, with Redis's errors (a *resp.Error). Upstream mode's
// SCAN uses it for the cold store's part of its walk.
func ScanOptions(args [][]byte) (tiering.ScanOptions, error) {
	o, err := parseScanOpts(args, true)
	if err != nil {
		return tiering.ScanOptions{}, err
	}
	opts := tiering.ScanOptions{Count: o.count, Match: o.match}
	if o.typeName != nil {
		opts.Type = typeByName(o.typeName)
		if opts.Type == 0 {
			// Redis returns nothing for a type name it does not know.
			opts.Match = func([]byte) bool { return false }
		}
	}
	return opts, nil
}

// typeByName returns the type named b (any case), or 0 if there is none.
func typeByName(b []byte) codec.Type {
	for t := codec.TypeString; t <= codec.TypeStream; t++ {
		if cstr.EqualFold(b, t.String()) {
			return t
		}
	}
	return 0
}

// cmdRandomKey is RANDOMKEY: a random key, or a null in an empty database.
func cmdRandomKey(x *server.Ctx, _ [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		k, err := tx.RandomKey(x.DB())
		if err != nil {
			return err
		}
		if k == nil {
			x.W.Null()
		} else {
			x.W.Bulk(k)
		}
		return nil
	})
}
