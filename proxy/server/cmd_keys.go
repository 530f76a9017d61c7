package server

import (
	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

func init() {
	register("del", cmdDel)
	register("unlink", cmdDel)
	register("exists", cmdExists)
	register("type", cmdType)
	register("touch", cmdTouch)
	register("expire", func(c *Client, a [][]byte) { expireGeneric(c, a, true, false, "expire") })
	register("pexpire", func(c *Client, a [][]byte) { expireGeneric(c, a, false, false, "pexpire") })
	register("expireat", func(c *Client, a [][]byte) { expireGeneric(c, a, true, true, "expireat") })
	register("pexpireat", func(c *Client, a [][]byte) { expireGeneric(c, a, false, true, "pexpireat") })
	register("ttl", func(c *Client, a [][]byte) { ttlGeneric(c, a, false, false) })
	register("pttl", func(c *Client, a [][]byte) { ttlGeneric(c, a, true, false) })
	register("expiretime", func(c *Client, a [][]byte) { ttlGeneric(c, a, false, true) })
	register("pexpiretime", func(c *Client, a [][]byte) { ttlGeneric(c, a, true, true) })
	register("persist", cmdPersist)
	register("rename", func(c *Client, a [][]byte) { renameGeneric(c, a, false) })
	register("renamenx", func(c *Client, a [][]byte) { renameGeneric(c, a, true) })
	register("copy", cmdCopy)
	register("move", cmdMove)
	register("keys", cmdKeys)
	register("scan", cmdScan)
	register("randomkey", cmdRandomKey)
	register("object|encoding", cmdObjectEncoding)
	register("object|idletime", cmdObjectIdle)
	register("object|freq", cmdObjectFreq)
	register("object|refcount", cmdObjectRefcount)
	register("object|help", func(c *Client, _ [][]byte) { c.help(objectHelp) })
}

func cmdDel(c *Client, args [][]byte) {
	tx := c.begin()
	var n int64
	for _, k := range args[1:] {
		ok, err := tx.Delete(c.db, k)
		if err != nil {
			c.txErr(tx, err)
			return
		}
		if ok {
			c.notify(NotifyGeneric, "del", k)
			n++
		}
	}
	c.w.Int(n)
	c.commit(tx)
}

// countLive counts the live keys among keys (EXISTS, TOUCH) from metadata
// only: a cold key is not promoted.
func countLive(c *Client, keys [][]byte) {
	tx := c.begin()
	var n int64
	for _, k := range keys {
		e, err := tx.Peek(c.db, k)
		if err != nil {
			c.txErr(tx, err)
			return
		}
		if e != nil {
			n++
		} else {
			c.notifyKeyMiss(k)
		}
	}
	c.w.Int(n)
	c.commit(tx)
}

func cmdExists(c *Client, args [][]byte) { countLive(c, args[1:]) }
func cmdTouch(c *Client, args [][]byte)  { countLive(c, args[1:]) }

func cmdType(c *Client, args [][]byte) {
	tx := c.begin()
	e, err := tx.Peek(c.db, args[1])
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if e == nil {
		c.notifyKeyMiss(args[1])
		c.w.Simple("none")
	} else {
		c.w.Simple(e.Type.String())
	}
	c.commit(tx)
}

func expireGeneric(c *Client, args [][]byte, seconds, absolute bool, name string) {
	flags, msg := strops.ParseExpireFlags(args[3:])
	if msg != "" {
		c.err(msg)
		return
	}
	tx := c.begin()
	var base int64
	if !absolute {
		base = tx.Now()
	}
	when, msg := strops.ExpireWhen(args[2], seconds, base, name)
	if msg != "" {
		c.txFail(tx, msg)
		return
	}
	e, err := tx.Peek(c.db, args[1])
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if e == nil {
		c.w.Int(0)
		c.commit(tx)
		return
	}
	cur := int64(-1)
	if e.ExpireAt != 0 {
		cur = e.ExpireAt
	}
	if !flags.Allows(cur, when) {
		c.w.Int(0)
		c.commit(tx)
		return
	}
	past := when <= tx.Now()
	if past {
		_, err = tx.Delete(c.db, args[1])
	} else {
		_, err = tx.SetExpire(c.db, args[1], when)
	}
	if err != nil {
		c.txErr(tx, err)
		return
	}
	// Redis: "del" then the reply, or the reply then "expire".
	if past {
		c.notify(NotifyGeneric, "del", args[1])
	}
	c.w.Int(1)
	if !past {
		c.notify(NotifyGeneric, "expire", args[1])
	}
	c.commit(tx)
}

func ttlGeneric(c *Client, args [][]byte, ms, absolute bool) {
	tx := c.begin()
	e, err := tx.Peek(c.db, args[1])
	if err != nil {
		c.txErr(tx, err)
		return
	}
	switch {
	case e == nil:
		c.notifyKeyMiss(args[1])
		c.w.Int(-2)
	case e.ExpireAt == 0:
		c.w.Int(-1)
	case absolute && ms:
		c.w.Int(e.ExpireAt)
	case absolute:
		c.w.Int(e.ExpireAt / 1000)
	default:
		c.w.Int(strops.TTL(e.ExpireAt, tx.Now(), ms))
	}
	c.commit(tx)
}

func cmdPersist(c *Client, args [][]byte) {
	tx := c.begin()
	e, err := tx.Peek(c.db, args[1])
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if e == nil || e.ExpireAt == 0 {
		c.w.Int(0)
		c.commit(tx)
		return
	}
	if _, err := tx.SetExpire(c.db, args[1], 0); err != nil {
		c.txErr(tx, err)
		return
	}
	c.notify(NotifyGeneric, "persist", args[1])
	c.w.Int(1)
	c.commit(tx)
}

func renameGeneric(c *Client, args [][]byte, nx bool) {
	tx := c.begin()
	exists, moved, err := tx.Rename(c.db, args[1], c.db, args[2], nx)
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if moved && string(args[1]) != string(args[2]) {
		// Redis deletes an existing destination and adds it anew.
		c.notify(NotifyNew, "new", args[2])
		c.notify(NotifyGeneric, "rename_from", args[1])
		c.notify(NotifyGeneric, "rename_to", args[2])
	}
	switch {
	case !exists:
		c.err("ERR no such key")
	case nx && moved:
		c.w.Int(1)
	case nx:
		c.w.Int(0)
	default:
		c.w.OK()
	}
	c.commit(tx)
}

// parseDB parses a database index argument; it replies and reports false
// when it is not a valid index.
func (c *Client) parseDB(arg []byte) (int, bool) {
	n, ok := cstr.ParseInt(arg)
	if !ok || n < -2147483648 || n > 2147483647 {
		c.err(strops.ErrNotInteger)
		return 0, false
	}
	if n < 0 || n >= int64(c.s.engine.Databases()) {
		c.err("ERR DB index is out of range")
		return 0, false
	}
	return int(n), true
}

func cmdCopy(c *Client, args [][]byte) {
	dstDB := c.db
	replace := false
	for i := 3; i < len(args); i++ {
		switch {
		case eqFold(args[i], "replace"):
			replace = true
		case eqFold(args[i], "db") && i+1 < len(args):
			db, ok := c.parseDB(args[i+1])
			if !ok {
				return
			}
			dstDB = db
			i++
		default:
			c.err(strops.ErrSyntax)
			return
		}
	}
	if dstDB == c.db && string(args[1]) == string(args[2]) {
		c.err("ERR source and destination objects are the same")
		return
	}
	tx := c.begin()
	ok, err := tx.Copy(c.db, args[1], dstDB, args[2], replace)
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if ok {
		// Redis deletes an existing destination and adds it anew.
		c.notifyIn(dstDB, NotifyNew, "new", args[2])
		c.notifyIn(dstDB, NotifyGeneric, "copy_to", args[2])
		c.w.Int(1)
	} else {
		// A missing source is a read miss; an existing destination is not.
		if c.s.notifyEnabled(NotifyKeyMiss) {
			miss, ok := c.keyIsMissing(tx, c.db, args[1])
			if !ok {
				return
			}
			if miss {
				c.notifyKeyMiss(args[1])
			}
		}
		c.w.Int(0)
	}
	c.commit(tx)
}

func cmdMove(c *Client, args [][]byte) {
	n, ok := cstr.ParseInt(args[2])
	if !ok || n < -2147483648 || n > 2147483647 {
		c.err(strops.ErrNotInteger)
		return
	}
	if n < 0 || n >= int64(c.s.engine.Databases()) {
		c.err("ERR DB index is out of range")
		return
	}
	if int(n) == c.db {
		c.err("ERR source and destination objects are the same")
		return
	}
	tx := c.begin()
	_, moved, err := tx.Rename(c.db, args[1], int(n), args[1], true)
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if moved {
		c.notifyIn(int(n), NotifyNew, "new", args[1])
		c.notify(NotifyGeneric, "move_from", args[1])
		c.notifyIn(int(n), NotifyGeneric, "move_to", args[1])
		c.w.Int(1)
	} else {
		c.w.Int(0)
	}
	c.commit(tx)
}

func matcher(pattern []byte) func([]byte) bool {
	if cstr.MatchesAll(pattern) {
		return nil
	}
	p := append([]byte(nil), pattern...)
	return func(k []byte) bool { return cstr.Match(p, k, false) }
}

func cmdKeys(c *Client, args [][]byte) {
	tx := c.begin()
	keys, err := tx.Keys(c.db, matcher(args[1]))
	if err != nil {
		c.txErr(tx, err)
		return
	}
	c.w.Array(len(keys))
	for _, k := range keys {
		c.w.Bulk(k)
	}
	c.commit(tx)
}

func cmdScan(c *Client, args [][]byte) {
	cursor, ok := c.scanCursor(args[1])
	if !ok {
		return
	}
	o, ok := c.parseScanOpts(args[2:], true)
	if !ok {
		return
	}
	opts := tiering.ScanOptions{Count: o.count, Match: o.match}
	if o.typeName != nil {
		opts.Type = typeByName(o.typeName)
		if opts.Type == 0 {
			// Redis returns nothing for a type name it does not know.
			opts.Match = func([]byte) bool { return false }
		}
	}
	tx := c.begin()
	keys, next, err := tx.Scan(c.db, cursor, opts, nil)
	if err != nil {
		c.txErr(tx, err)
		return
	}
	c.scanReply(next, keys)
	c.commit(tx)
}

func typeByName(b []byte) codec.Type {
	for t := codec.TypeString; t <= codec.TypeHash; t++ {
		if eqFold(b, t.String()) {
			return t
		}
	}
	return 0
}

func cmdRandomKey(c *Client, _ [][]byte) {
	tx := c.begin()
	k, err := tx.RandomKey(c.db)
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if k == nil {
		c.w.Null()
	} else {
		c.w.Bulk(k)
	}
	c.commit(tx)
}

// objectLookup finds key for OBJECT subcommands without promoting it; it
// replies null and returns nil for a missing key.
func objectLookup(c *Client, tx *tiering.Tx, key []byte) *tiering.Entry {
	e, err := tx.Peek(c.db, key)
	if err != nil {
		c.txErr(tx, err)
		return nil
	}
	if e == nil {
		c.w.Null()
		c.commit(tx)
	}
	return e
}

// stringEncoding reports the encoding Redis 7.0 would use for a string.
func stringEncoding(v []byte) string {
	if len(v) <= 20 {
		if _, ok := cstr.ParseInt(v); ok {
			return "int"
		}
	}
	if len(v) <= 44 {
		return "embstr"
	}
	return "raw"
}

func cmdObjectEncoding(c *Client, args [][]byte) {
	tx := c.begin()
	e := objectLookup(c, tx, args[2])
	if e == nil {
		return
	}
	switch e.Type {
	case codec.TypeString:
		c.w.BulkString(stringEncoding(e.Str))
	case codec.TypeHash, codec.TypeSet:
		enc, err := collEncoding(tx.PeekColl(c.db, args[2], e), e.Type)
		if err != nil {
			c.txErr(tx, err)
			return
		}
		c.w.BulkString(enc)
	case codec.TypeList:
		c.w.BulkString("quicklist") // Redis 7.0's only list encoding
	case codec.TypeZSet:
		enc, err := zsetEncoding(tx.PeekZSet(c.db, args[2], e))
		if err != nil {
			c.txErr(tx, err)
			return
		}
		c.w.BulkString(enc)
	default:
		c.w.BulkString("hashtable")
	}
	c.commit(tx)
}

func cmdObjectIdle(c *Client, args [][]byte) {
	tx := c.begin()
	ms, ok, err := tx.IdleMillis(c.db, args[2])
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if !ok {
		c.w.Null()
	} else {
		c.w.Int(ms / 1000)
	}
	c.commit(tx)
}

func cmdObjectFreq(c *Client, args [][]byte) {
	tx := c.begin()
	e := objectLookup(c, tx, args[2])
	if e == nil {
		return
	}
	c.txFail(tx, "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
}

func cmdObjectRefcount(c *Client, args [][]byte) {
	tx := c.begin()
	e := objectLookup(c, tx, args[2])
	if e == nil {
		return
	}
	// Redis shares the integers 0..9999 (refcount INT_MAX).
	if e.Type == codec.TypeString && stringEncoding(e.Str) == "int" {
		if n, _ := cstr.ParseInt(e.Str); n >= 0 && n < 10000 {
			c.w.Int(2147483647)
			c.commit(tx)
			return
		}
	}
	c.w.Int(1)
	c.commit(tx)
}
