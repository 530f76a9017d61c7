package server

import (
	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

func init() {
	register("get", cmdGet)
	register("set", cmdSet)
	register("setnx", cmdSetNX)
	register("setex", func(c *Client, a [][]byte) { cmdSetEx(c, a, strops.ExpireEX, "setex") })
	register("psetex", func(c *Client, a [][]byte) { cmdSetEx(c, a, strops.ExpirePX, "psetex") })
	register("getset", cmdGetSet)
	register("getdel", cmdGetDel)
	register("getex", cmdGetEx)
	register("mget", cmdMGet)
	register("mset", cmdMSet)
	register("msetnx", cmdMSetNX)
	register("append", cmdAppend)
	register("strlen", cmdStrlen)
	register("incr", func(c *Client, a [][]byte) { incrBy(c, a[1], 1) })
	register("decr", func(c *Client, a [][]byte) { incrBy(c, a[1], -1) })
	register("incrby", cmdIncrBy)
	register("decrby", cmdDecrBy)
	register("incrbyfloat", cmdIncrByFloat)
	register("getrange", cmdGetRange)
	register("substr", cmdGetRange)
	register("setrange", cmdSetRange)
	register("lcs", cmdLCS)
}

// getString looks key up for a string command. It returns the entry (nil if
// missing) and false after replying WRONGTYPE (tx is then finished).
func (c *Client) getString(tx *tiering.Tx, key []byte) (*tiering.Entry, bool) {
	e, err := tx.Get(c.db, key)
	if err != nil {
		c.txErr(tx, err)
		return nil, false
	}
	if e != nil && e.Type != codec.TypeString {
		c.txFail(tx, errWrongType)
		return nil, false
	}
	return e, true
}

// cmdGet reads a cold key without holding the engine's lock across the
// store lookup (see tiering/coldread.go), so cold reads overlap each other
// and everything else.
func cmdGet(c *Client, args [][]byte) {
	tx := c.begin()
	e, probe, err := tx.GetOrProbe(c.db, args[1])
	if err == nil && probe.Cold() && tx == c.group {
		// A group must read under its hold of the lock.
		e, err = tx.Get(c.db, args[1])
	} else if err == nil && probe.Cold() {
		tx.Abort() // nothing written: it only released the lock
		var read *tiering.Entry
		read, err = c.s.engine.ReadCold(probe, args[1], &c.coldBufs)
		tx = c.begin()
		if err == nil {
			e, err = tx.FinishGet(c.db, args[1], probe, read)
		}
	}
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if e != nil && e.Type != codec.TypeString {
		c.txFail(tx, errWrongType)
		return
	}
	if e == nil {
		c.notifyKeyMiss(args[1])
		c.w.Null()
	} else {
		c.w.Bulk(e.Str)
	}
	c.commit(tx)
}

func cmdSet(c *Client, args [][]byte) {
	tx := c.begin()
	o, msg := strops.ParseSet(args[3:], tx.Now())
	if msg != "" {
		c.txFail(tx, msg)
		return
	}
	var old *tiering.Entry
	var err error
	looked := o.Get || o.NX || o.XX || o.KeepTTL
	if o.Get {
		var ok bool
		if old, ok = c.getString(tx, args[1]); !ok {
			return
		}
	} else if looked {
		if old, err = tx.Peek(c.db, args[1]); err != nil {
			c.txErr(tx, err)
			return
		}
	}
	if o.Get {
		if old == nil {
			c.notifyKeyMiss(args[1])
			c.w.Null()
		} else {
			c.w.Bulk(old.Str)
		}
	}
	if (o.NX && old != nil) || (o.XX && old == nil) {
		if !o.Get {
			c.w.Null()
		}
		c.commit(tx)
		return
	}
	at := o.ExpireAt
	if o.KeepTTL && old != nil {
		at = old.ExpireAt
	}
	isNew := old == nil
	if !looked {
		var ok bool
		if isNew, ok = c.keyIsNew(tx, c.db, args[1]); !ok {
			return
		}
	}
	if err := tx.SetString(c.db, args[1], args[2], at); err != nil {
		c.txErr(tx, err)
		return
	}
	c.notifySet(isNew, args[1], o.ExpireAt != 0)
	if !o.Get {
		c.w.OK()
	}
	c.commit(tx)
}

// NotifySet publishes a SET's events: "new" if it created key, "set", and
// "expire" if it gave key a time to live.
func (c *Client) notifySet(isNew bool, key []byte, expire bool) {
	c.notifyNewKey(isNew, key)
	c.notify(NotifyString, "set", key)
	if expire {
		c.notify(NotifyGeneric, "expire", key)
	}
}

func cmdSetNX(c *Client, args [][]byte) {
	tx := c.begin()
	old, err := tx.Peek(c.db, args[1])
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if old != nil {
		c.w.Int(0)
		c.commit(tx)
		return
	}
	if err := tx.SetString(c.db, args[1], args[2], 0); err != nil {
		c.txErr(tx, err)
		return
	}
	c.notifySet(true, args[1], false)
	c.w.Int(1)
	c.commit(tx)
}

func cmdSetEx(c *Client, args [][]byte, kind strops.ExpireKind, name string) {
	tx := c.begin()
	at, msg := strops.ExpireMillis(args[2], kind, tx.Now(), name)
	if msg != "" {
		c.txFail(tx, msg)
		return
	}
	isNew, ok := c.keyIsNew(tx, c.db, args[1])
	if !ok {
		return
	}
	if err := tx.SetString(c.db, args[1], args[3], at); err != nil {
		c.txErr(tx, err)
		return
	}
	c.notifySet(isNew, args[1], true)
	c.w.OK()
	c.commit(tx)
}

func cmdGetSet(c *Client, args [][]byte) {
	tx := c.begin()
	old, ok := c.getString(tx, args[1])
	if !ok {
		return
	}
	if old == nil {
		c.notifyKeyMiss(args[1])
		c.w.Null()
	} else {
		c.w.Bulk(old.Str)
	}
	if err := tx.SetString(c.db, args[1], args[2], 0); err != nil {
		c.txErr(tx, err)
		return
	}
	c.notifySet(old == nil, args[1], false)
	c.commit(tx)
}

func cmdGetDel(c *Client, args [][]byte) {
	tx := c.begin()
	old, ok := c.getString(tx, args[1])
	if !ok {
		return
	}
	if old == nil {
		c.notifyKeyMiss(args[1])
		c.w.Null()
		c.commit(tx)
		return
	}
	c.w.Bulk(old.Str)
	if _, err := tx.Delete(c.db, args[1]); err != nil {
		c.txErr(tx, err)
		return
	}
	c.notify(NotifyGeneric, "del", args[1])
	c.commit(tx)
}

func cmdGetEx(c *Client, args [][]byte) {
	tx := c.begin()
	o, msg := strops.ParseGetEx(args[2:])
	if msg != "" {
		c.txFail(tx, msg)
		return
	}
	e, ok := c.getString(tx, args[1])
	if !ok {
		return
	}
	if e == nil {
		c.notifyKeyMiss(args[1])
		c.w.Null()
		c.commit(tx)
		return
	}
	at, msg := o.Absolute(tx.Now(), "getex")
	if msg != "" {
		c.txFail(tx, msg)
		return
	}
	c.w.Bulk(e.Str)
	var err error
	event := ""
	switch {
	case (o.Kind == strops.ExpireEXAT || o.Kind == strops.ExpirePXAT) && at <= tx.Now():
		_, err = tx.Delete(c.db, args[1])
		event = "del"
	case o.Kind != strops.NoExpire:
		_, err = tx.SetExpire(c.db, args[1], at)
		event = "expire"
	case o.Persist && e.ExpireAt != 0:
		_, err = tx.SetExpire(c.db, args[1], 0)
		event = "persist"
	}
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if event != "" {
		c.notify(NotifyGeneric, event, args[1])
	}
	c.commit(tx)
}

func cmdMGet(c *Client, args [][]byte) {
	tx := c.begin()
	c.w.Array(len(args) - 1)
	for _, k := range args[1:] {
		e, err := tx.Get(c.db, k)
		if err != nil {
			c.txErr(tx, err)
			return
		}
		if e == nil {
			c.notifyKeyMiss(k)
		}
		if e == nil || e.Type != codec.TypeString {
			c.w.Null()
		} else {
			c.w.Bulk(e.Str)
		}
	}
	c.commit(tx)
}

func cmdMSet(c *Client, args [][]byte) {
	if len(args)%2 == 0 {
		c.err("ERR wrong number of arguments for '" + strops.LowerASCII(args[0]) + "' command")
		return
	}
	tx := c.begin()
	if !c.msetPairs(tx, args) {
		return
	}
	c.w.OK()
	c.commit(tx)
}

func cmdMSetNX(c *Client, args [][]byte) {
	if len(args)%2 == 0 {
		c.err("ERR wrong number of arguments for 'msetnx' command")
		return
	}
	tx := c.begin()
	for i := 1; i < len(args); i += 2 {
		e, err := tx.Peek(c.db, args[i])
		if err != nil {
			c.txErr(tx, err)
			return
		}
		if e != nil {
			c.w.Int(0)
			c.commit(tx)
			return
		}
	}
	if !c.msetPairs(tx, args) {
		return
	}
	c.w.Int(1)
	c.commit(tx)
}

// msetPairs stores MSET's key-value pairs in order, each with its events
// ("new" if it creates the key, then "set"). On a storage error it ends
// tx and reports false.
func (c *Client) msetPairs(tx *tiering.Tx, args [][]byte) bool {
	for i := 1; i < len(args); i += 2 {
		isNew, ok := c.keyIsNew(tx, c.db, args[i])
		if !ok {
			return false
		}
		if err := tx.SetString(c.db, args[i], args[i+1], 0); err != nil {
			c.txErr(tx, err)
			return false
		}
		c.notifySet(isNew, args[i], false)
	}
	return true
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

func cmdAppend(c *Client, args [][]byte) {
	tx := c.begin()
	e, ok := c.getString(tx, args[1])
	if !ok {
		return
	}
	var cur []byte
	if e != nil {
		cur = e.Str
		if msg := strops.CheckStringLength(int64(len(cur)), int64(len(args[2]))); msg != "" {
			c.txFail(tx, msg)
			return
		}
	}
	v := make([]byte, 0, len(cur)+len(args[2]))
	v = append(append(v, cur...), args[2]...)
	if err := replaceString(tx, c.db, args[1], e, v); err != nil {
		c.txErr(tx, err)
		return
	}
	c.notifyNewKey(e == nil, args[1])
	c.notify(NotifyString, "append", args[1])
	c.w.Int(int64(len(v)))
	c.commit(tx)
}

func cmdStrlen(c *Client, args [][]byte) {
	tx := c.begin()
	e, ok := c.getString(tx, args[1])
	if !ok {
		return
	}
	if e == nil {
		c.notifyKeyMiss(args[1])
		c.w.Int(0)
	} else {
		c.w.Int(int64(len(e.Str)))
	}
	c.commit(tx)
}

func cmdIncrBy(c *Client, args [][]byte) {
	d, ok := cstr.ParseInt(args[2])
	if !ok {
		c.err(strops.ErrNotInteger)
		return
	}
	incrBy(c, args[1], d)
}

func cmdDecrBy(c *Client, args [][]byte) {
	d, ok := cstr.ParseInt(args[2])
	if !ok {
		c.err(strops.ErrNotInteger)
		return
	}
	d, msg := strops.NegateDecrement(d)
	if msg != "" {
		c.err(msg)
		return
	}
	incrBy(c, args[1], d)
}

func incrBy(c *Client, key []byte, delta int64) {
	tx := c.begin()
	e, ok := c.getString(tx, key)
	if !ok {
		return
	}
	var cur []byte
	if e != nil {
		cur = e.Str
	}
	n, msg := strops.IncrBy(cur, e != nil, delta)
	if msg != "" {
		c.txFail(tx, msg)
		return
	}
	var buf [24]byte
	if err := replaceString(tx, c.db, key, e, appendInt(buf[:0], n)); err != nil {
		c.txErr(tx, err)
		return
	}
	c.notifyNewKey(e == nil, key)
	c.notify(NotifyString, "incrby", key)
	c.w.Int(n)
	c.commit(tx)
}

func cmdIncrByFloat(c *Client, args [][]byte) {
	tx := c.begin()
	e, ok := c.getString(tx, args[1])
	if !ok {
		return
	}
	var cur []byte
	if e != nil {
		cur = e.Str
	}
	v, msg := strops.IncrByFloat(cur, e != nil, args[2])
	if msg != "" {
		c.txFail(tx, msg)
		return
	}
	if err := replaceString(tx, c.db, args[1], e, v); err != nil {
		c.txErr(tx, err)
		return
	}
	c.notifyNewKey(e == nil, args[1])
	c.notify(NotifyString, "incrbyfloat", args[1])
	c.w.Bulk(v)
	c.commit(tx)
}

func cmdGetRange(c *Client, args [][]byte) {
	start, ok1 := cstr.ParseInt(args[2])
	end, ok2 := cstr.ParseInt(args[3])
	if !ok1 || !ok2 {
		c.err(strops.ErrNotInteger)
		return
	}
	tx := c.begin()
	e, ok := c.getString(tx, args[1])
	if !ok {
		return
	}
	if e == nil {
		c.notifyKeyMiss(args[1])
		c.w.BulkString("")
	} else {
		c.w.Bulk(strops.GetRange(e.Str, start, end))
	}
	c.commit(tx)
}

func cmdSetRange(c *Client, args [][]byte) {
	off, msg := strops.ParseSetRangeOffset(args[2])
	if msg != "" {
		c.err(msg)
		return
	}
	tx := c.begin()
	e, ok := c.getString(tx, args[1])
	if !ok {
		return
	}
	val := args[3]
	if len(val) == 0 {
		if e == nil {
			c.w.Int(0)
		} else {
			c.w.Int(int64(len(e.Str)))
		}
		c.commit(tx)
		return
	}
	var cur []byte
	if e != nil {
		cur = append([]byte(nil), e.Str...)
	}
	v, msg := strops.SetRange(cur, off, val)
	if msg != "" {
		c.txFail(tx, msg)
		return
	}
	if err := replaceString(tx, c.db, args[1], e, v); err != nil {
		c.txErr(tx, err)
		return
	}
	c.notifyNewKey(e == nil, args[1])
	c.notify(NotifyString, "setrange", args[1])
	c.w.Int(int64(len(v)))
	c.commit(tx)
}

func cmdLCS(c *Client, args [][]byte) {
	tx := c.begin()
	// Redis looks both keys up before checking their types.
	var vals [2][]byte
	wrongType := false
	for i := 0; i < 2; i++ {
		e, err := tx.Get(c.db, args[1+i])
		if err != nil {
			c.txErr(tx, err)
			return
		}
		switch {
		case e == nil:
			c.notifyKeyMiss(args[1+i])
		case e.Type != codec.TypeString:
			wrongType = true
		default:
			vals[i] = e.Str
		}
	}
	if wrongType {
		c.txFail(tx, strops.ErrLCSType)
		return
	}
	o, msg := strops.ParseLCSOptions(args[3:])
	if msg != "" {
		c.txFail(tx, msg)
		return
	}
	res, msg := strops.ComputeLCS(vals[0], vals[1], o)
	if msg != "" {
		c.txFail(tx, msg)
		return
	}
	strops.WriteLCS(&c.w, res, o)
	c.commit(tx)
}
