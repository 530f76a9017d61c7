package server

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// Helpers shared by the hash and set commands.

// maxRandomCount bounds HRANDFIELD/SRANDMEMBER counts, whose reply is built
// in memory: Redis 7.0 tries any count and dies of it.
const maxRandomCount = 1 << 24

// errRandomCount is the reply to a count over maxRandomCount.
const errRandomCount = "ERR value is out of range"

// openColl opens key as a structure of type t (see Tx.OpenColl). On
// WRONGTYPE or a store error it replies, ends tx and returns ok false.
func (c *Client) openColl(tx *tiering.Tx, key []byte, t codec.Type, create bool) (*tiering.Coll, bool) {
	coll, err := tx.OpenColl(c.db, key, t, create)
	if err != nil {
		c.collErr(tx, err)
		return nil, false
	}
	return coll, true
}

// collErr ends tx with err's reply: WRONGTYPE as Redis sends it, anything
// else as a server error.
func (c *Client) collErr(tx *tiering.Tx, err error) {
	if errors.Is(err, tiering.ErrWrongType) {
		c.txFail(tx, errWrongType)
		return
	}
	c.txErr(tx, err)
}

// closer is a structure handle (*tiering.Coll, *tiering.List,
// *tiering.ZSet), whose Close stores its writes; nil handles are no-ops.
type closer interface{ Close() error }

// closeAndCommit stores the handles' writes and commits tx; on error the
// reply is replaced by the error.
func (c *Client) closeAndCommit(tx *tiering.Tx, handles ...closer) {
	for _, h := range handles {
		if err := h.Close(); err != nil {
			c.txErr(tx, err)
			return
		}
	}
	c.commit(tx)
}

// streamed checks that a reply streamed from a structure had as many
// elements as its header announced (the meta record's count); if not, the
// store is inconsistent and the reply is replaced by an error.
func (c *Client) streamed(tx *tiering.Tx, key []byte, want, got int64, err error) bool {
	if err == nil && want != got {
		err = fmt.Errorf("%w: %q counts %d fields, %d stored", tiering.ErrCorrupt, key, want, got)
	}
	if err != nil {
		c.txErr(tx, err)
		return false
	}
	return true
}

// scanCursor parses a SCAN-family cursor as Redis does, with C's strtoul:
// an optional sign and decimal digits (empty is 0; "-n" wraps to 2^64-n),
// replying "invalid cursor" if it is not one or overflows.
func (c *Client) scanCursor(arg []byte) (uint64, bool) {
	s := string(cstr.CString(arg)) // C stops at a NUL
	if s == "" {
		return 0, true // strtoul reads nothing and stops at the end
	}
	neg := s[0] == '-'
	if neg || s[0] == '+' {
		s = s[1:]
	}
	cursor, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		c.err("ERR invalid cursor")
		return 0, false
	}
	if neg {
		cursor = -cursor
	}
	return cursor, true
}

// scanOpts are the parsed options of SCAN, HSCAN and SSCAN.
type scanOpts struct {
	count    int
	match    func([]byte) bool
	typeName []byte
}

// parseScanOpts parses COUNT, MATCH and (for SCAN only) TYPE, replying and
// returning false on a bad option as Redis does.
func (c *Client) parseScanOpts(args [][]byte, allowType bool) (scanOpts, bool) {
	o := scanOpts{count: 10}
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			c.err(strops.ErrSyntax)
			return o, false
		}
		v := args[i+1]
		switch {
		case eqFold(args[i], "count"):
			n, ok := cstr.ParseInt(v)
			if !ok {
				c.err(strops.ErrNotInteger)
				return o, false
			}
			if n < 1 {
				c.err(strops.ErrSyntax)
				return o, false
			}
			o.count = int(min(n, 1<<30))
		case eqFold(args[i], "match"):
			o.match = matcher(v)
		case allowType && eqFold(args[i], "type"):
			o.typeName = v
		default:
			c.err(strops.ErrSyntax)
			return o, false
		}
	}
	return o, true
}

// cmdCollScan is HSCAN and SSCAN: args are key, cursor, options. Pairs
// replies field and value (HSCAN).
func cmdCollScan(c *Client, args [][]byte, t codec.Type, pairs bool) {
	cursor, ok := c.scanCursor(args[2])
	if !ok {
		return
	}
	tx := c.begin()
	coll, ok := c.openColl(tx, args[1], t, false)
	if !ok {
		return
	}
	if coll == nil {
		c.notifyKeyMiss(args[1])
		c.scanReply(0, nil)
		c.commit(tx)
		return
	}
	o, ok := c.parseScanOpts(args[3:], false)
	if !ok {
		c.commit(tx)
		return
	}
	var out [][]byte
	next, err := coll.Scan(cursor, o.count, func(f, v []byte) {
		if o.match != nil && !o.match(f) {
			return
		}
		out = append(out, append([]byte(nil), f...))
		if pairs {
			out = append(out, append([]byte(nil), v...))
		}
	})
	if err != nil {
		c.txErr(tx, err)
		return
	}
	c.scanReply(next, out)
	c.commit(tx)
}

// scanReply writes a SCAN-family reply: the next cursor and the items.
func (c *Client) scanReply(next uint64, items [][]byte) {
	c.w.Array(2)
	c.w.BulkString(strconv.FormatUint(next, 10))
	c.w.Array(len(items))
	for _, b := range items {
		c.w.Bulk(b)
	}
}

// parseRandomCount parses HRANDFIELD/SRANDMEMBER's count: it returns how
// many to draw and whether they must be distinct (count >= 0).
func (c *Client) parseRandomCount(arg []byte) (n int64, distinct bool, ok bool) {
	l, ok := cstr.ParseInt(arg)
	if !ok {
		c.err(strops.ErrNotInteger)
		return 0, false, false
	}
	if l == -1<<63 {
		c.err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return 0, false, false
	}
	if l >= 0 {
		return l, true, true
	}
	return -l, false, true
}

// collEncoding is the encoding Redis 7.0 reports for a hash or set of the
// same content: its compact encoding (listpack for hashes of at most 512
// fields of at most 64 bytes, Redis 7.0's built-in defaults; intset for
// sets of at most 512 integers)
// else hashtable. Redis never converts back after a structure shrinks;
// this reports the encoding of the current content.
func collEncoding(coll *tiering.Coll, t codec.Type) (string, error) {
	compact, limit := "listpack", int64(512)
	if t == codec.TypeSet {
		compact, limit = "intset", 512
	}
	if coll.Len() > limit {
		return "hashtable", nil
	}
	fits := true
	err := coll.Each(func(f, v []byte) bool {
		if t == codec.TypeSet {
			_, isInt := cstr.ParseInt(f)
			fits = isInt
		} else {
			fits = len(f) <= 64 && len(v) <= 64
		}
		return fits
	})
	if !fits {
		return "hashtable", err
	}
	return compact, err
}

// cmdCollLen is HLEN and SCARD: the count comes from the meta record, so a
// cold structure is not read.
func cmdCollLen(c *Client, args [][]byte, t codec.Type) {
	tx := c.begin()
	e, err := tx.Peek(c.db, args[1])
	if err != nil {
		c.txErr(tx, err)
		return
	}
	switch {
	case e == nil:
		c.notifyKeyMiss(args[1])
		c.w.Int(0)
	case e.Type != t:
		c.txFail(tx, errWrongType)
		return
	default:
		c.w.Int(e.Count)
	}
	c.commit(tx)
}

// cmdCollHas is HEXISTS and SISMEMBER.
func cmdCollHas(c *Client, args [][]byte, t codec.Type) {
	tx := c.begin()
	coll, ok := c.openColl(tx, args[1], t, false)
	if !ok {
		return
	}
	var found bool
	if coll != nil {
		var err error
		if found, err = coll.Has(args[2]); err != nil {
			c.txErr(tx, err)
			return
		}
	} else {
		c.notifyKeyMiss(args[1])
	}
	c.w.Int(b2i(found))
	c.commit(tx)
}

// cmdCollDel is HDEL and SREM: it deletes the named fields (members), and
// the key once it is empty.
func cmdCollDel(c *Client, args [][]byte, t codec.Type) {
	tx := c.begin()
	coll, ok := c.openColl(tx, args[1], t, false)
	if !ok {
		return
	}
	var deleted int64
	for _, f := range args[2:] {
		if coll == nil || coll.Len() == 0 {
			break
		}
		ok, err := coll.Del(f)
		if err != nil {
			c.txErr(tx, err)
			return
		}
		deleted += b2i(ok)
	}
	if deleted > 0 {
		event := "hdel"
		class := NotifyHash
		if t == codec.TypeSet {
			event, class = "srem", NotifySet
		}
		c.notify(class, event, args[1])
		if coll.Len() == 0 {
			c.notify(NotifyGeneric, "del", args[1])
		}
	}
	c.w.Int(deleted)
	c.closeAndCommit(tx, coll)
}

// replyKind is the aggregate a whole-structure reply is sent as.
type replyKind int

const (
	replyArray replyKind = iota
	replyMap             // field-value pairs (HGETALL): a RESP3 map
	replySet             // members (SMEMBERS): a RESP3 set
)

// cmdCollAll is HGETALL, HKEYS, HVALS and SMEMBERS: the whole structure,
// fields and/or values, as a kind reply. A cold structure is streamed from
// the store into the reply, never loaded.
func cmdCollAll(c *Client, args [][]byte, t codec.Type, kind replyKind, fields, vals bool) {
	tx := c.begin()
	coll, ok := c.openColl(tx, args[1], t, false)
	if !ok {
		return
	}
	var n int64
	if coll != nil {
		n = coll.Len()
	} else {
		c.notifyKeyMiss(args[1])
	}
	switch kind {
	case replyMap:
		c.w.Map(int(n))
	case replySet:
		c.w.Set(int(n))
	default:
		c.w.Array(int(n))
	}
	if coll == nil {
		c.commit(tx)
		return
	}
	var got int64
	err := coll.Each(func(f, v []byte) bool {
		if fields {
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
