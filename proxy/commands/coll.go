package commands

import (
	"fmt"
	"strconv"

	"github.com/spillway/spillway/proxy/cstr"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// Helpers shared by the hash and set commands.

// maxRandomCount bounds HRANDFIELD/SRANDMEMBER counts, whose reply is built
// in memory: Redis 7.0 tries any count and dies of it.
const maxRandomCount = 1 << 24

// errRandomCount is the reply to a count over maxRandomCount.
var errRandomCount = resp.Err("ERR value is out of range")

// streamed checks that a reply streamed from a structure had as many
// elements as its header announced (the meta record's count); if not, the
// store is inconsistent and the command fails with tiering.ErrCorrupt.
func streamed(key []byte, want, got int64, err error) error {
	if err == nil && want != got {
		err = fmt.Errorf("%w: %q counts %d fields, %d stored", tiering.ErrCorrupt, key, want, got)
	}
	return err
}

// scanCursor parses a SCAN-family cursor (strops.ParseCursor).
func scanCursor(arg []byte) (uint64, error) {
	cursor, ok := strops.ParseCursor(arg)
	if !ok {
		return 0, resp.Err("ERR invalid cursor")
	}
	return cursor, nil
}

// scanOpts are the parsed options of SCAN, HSCAN, SSCAN and ZSCAN.
type scanOpts struct {
	count    int
	match    func([]byte) bool
	typeName []byte
}

// parseScanOpts parses COUNT, MATCH and (for SCAN only) TYPE, with Redis's
// errors.
func parseScanOpts(args [][]byte, allowType bool) (scanOpts, error) {
	o := scanOpts{count: 10}
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return o, resp.Err(strops.ErrSyntax)
		}
		v := args[i+1]
		switch {
		case cstr.EqualFold(args[i], "count"):
			n, ok := cstr.ParseInt(v)
			if !ok {
				return o, resp.Err(strops.ErrNotInteger)
			}
			if n < 1 {
				return o, resp.Err(strops.ErrSyntax)
			}
			o.count = int(min(n, 1<<30))
		case cstr.EqualFold(args[i], "match"):
			o.match = strops.Matcher(v)
		case allowType && cstr.EqualFold(args[i], "type"):
			o.typeName = v
		default:
			return o, resp.Err(strops.ErrSyntax)
		}
	}
	return o, nil
}

// cmdCollScan is HSCAN and SSCAN: args are key, cursor, options. Pairs
// replies field and value (HSCAN).
func cmdCollScan(x *server.Ctx, args [][]byte, t codec.Type, pairs bool) error {
	cursor, err := scanCursor(args[2])
	if err != nil {
		return err
	}
	return x.View(func(tx *tiering.Tx) error {
		coll, err := tx.OpenColl(x.DB(), args[1], t, false)
		if err != nil {
			return err
		}
		if coll == nil {
			x.NotifyKeyMiss(args[1])
			WriteScanReply(x.W, 0, nil)
			return nil
		}
		o, err := parseScanOpts(args[3:], false)
		if err != nil {
			return err
		}
		if t == codec.TypeSet {
			if done, err := scanIntset(x.W, coll, o.match); done || err != nil {
				return err
			}
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
			return err
		}
		WriteScanReply(x.W, next, out)
		return nil
	})
}

// WriteScanReply writes a SCAN-family reply: the next cursor and the
// items (upstream mode's SCAN writes its merged walk with it too).
func WriteScanReply(w *resp.Writer, next uint64, items [][]byte) {
	w.Array(2)
	w.BulkString(strconv.FormatUint(next, 10))
	w.Array(len(items))
	for _, b := range items {
		w.Bulk(b)
	}
}

// parseRandomCount parses HRANDFIELD/SRANDMEMBER's count: it returns how
// many to draw and whether they must be distinct (count >= 0).
func parseRandomCount(arg []byte) (n int64, distinct bool, err error) {
	l, ok := cstr.ParseInt(arg)
	if !ok {
		return 0, false, resp.Err(strops.ErrNotInteger)
	}
	if l == -1<<63 {
		return 0, false, resp.Err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
	}
	if l >= 0 {
		return l, true, nil
	}
	return -l, false, nil
}

// collEncoding is the encoding Redis 7.0 reports for a hash or set of the
// same content: its compact encoding (listpack for hashes of at most 512
// fields of at most 64 bytes, Redis 7.0's built-in defaults; intset for
// sets of at most 512 integers) else hashtable. Redis never converts back
// after a structure shrinks; this reports the encoding of the current
// content.
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
func cmdCollLen(x *server.Ctx, args [][]byte, t codec.Type) error {
	return x.View(func(tx *tiering.Tx) error {
		e, err := tx.Peek(x.DB(), args[1])
		switch {
		case err != nil:
			return err
		case e == nil:
			x.NotifyKeyMiss(args[1])
			x.W.Int(0)
		case e.Type != t:
			return resp.ErrWrongType
		default:
			x.W.Int(e.Count)
		}
		return nil
	})
}

// cmdCollHas is HEXISTS and SISMEMBER.
func cmdCollHas(x *server.Ctx, args [][]byte, t codec.Type) error {
	return x.View(func(tx *tiering.Tx) error {
		coll, err := tx.OpenColl(x.DB(), args[1], t, false)
		if err != nil {
			return err
		}
		var found bool
		if coll != nil {
			if found, err = coll.Has(args[2]); err != nil {
				return err
			}
		} else {
			x.NotifyKeyMiss(args[1])
		}
		x.W.Int(b2i(found))
		return nil
	})
}

// cmdCollDel is HDEL and SREM: it deletes the named fields (members), and
// the key once it is empty.
func cmdCollDel(x *server.Ctx, args [][]byte, t codec.Type) error {
	return x.Update(func(tx *tiering.Tx) error {
		coll, err := tx.OpenColl(x.DB(), args[1], t, false)
		if err != nil {
			return err
		}
		var deleted int64
		for _, f := range args[2:] {
			if coll == nil || coll.Len() == 0 {
				break
			}
			ok, err := coll.Del(f)
			if err != nil {
				return err
			}
			deleted += b2i(ok)
		}
		if deleted > 0 {
			event, class := "hdel", server.NotifyHash
			if t == codec.TypeSet {
				event, class = "srem", server.NotifySet
			}
			x.Notify(class, event, args[1])
			if coll.Len() == 0 {
				x.Notify(server.NotifyGeneric, "del", args[1])
			}
		}
		x.W.Int(deleted)
		return closeAll(coll)
	})
}

// closer is a structure handle (*tiering.Coll, *tiering.List,
// *tiering.ZSet), whose Close stores its writes; nil handles are no-ops.
type closer interface{ Close() error }

// closeAll stores the handles' writes, stopping at the first error.
func closeAll(handles ...closer) error {
	for _, h := range handles {
		if err := h.Close(); err != nil {
			return err
		}
	}
	return nil
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
func cmdCollAll(x *server.Ctx, args [][]byte, t codec.Type, kind replyKind, fields, vals bool) error {
	return x.View(func(tx *tiering.Tx) error {
		coll, err := tx.OpenColl(x.DB(), args[1], t, false)
		if err != nil {
			return err
		}
		var n int64
		if coll != nil {
			n = coll.Len()
		} else {
			x.NotifyKeyMiss(args[1])
		}
		switch kind {
		case replyMap:
			x.W.Map(int(n))
		case replySet:
			x.W.Set(int(n))
		default:
			x.W.Array(int(n))
		}
		if coll == nil {
			return nil
		}
		var got int64
		err = coll.Each(func(f, v []byte) bool {
			if fields {
				x.W.Bulk(f)
			}
			if vals {
				x.W.Bulk(v)
			}
			got++
			return true
		})
		return streamed(args[1], n, got, err)
	})
}

// storeEmpty ends a STORE command whose result is empty, as Redis does:
// it replies 0, and the destination is deleted ("del" if it existed).
func storeEmpty(x *server.Ctx, tx *tiering.Tx, dst []byte) error {
	deleted, err := tx.Delete(x.DB(), dst)
	if err != nil {
		return err
	}
	x.W.Int(0)
	if deleted {
		x.Notify(server.NotifyGeneric, "del", dst)
	}
	return nil
}
