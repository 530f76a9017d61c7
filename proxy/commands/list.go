package commands

import (
	"bytes"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// The list commands. A list is stored in chunks; a command reads or
// rewrites only the chunks it touches. The pops (LPOP/RPOP, the LMOVE
// family, LMPOP and the blocking forms) are in list_pop.go.

func registerList(t *server.Table) {
	t.Register("lpush", func(x *server.Ctx, a [][]byte) error { return cmdPush(x, a, true, false) })
	t.Register("rpush", func(x *server.Ctx, a [][]byte) error { return cmdPush(x, a, false, false) })
	t.Register("lpushx", func(x *server.Ctx, a [][]byte) error { return cmdPush(x, a, true, true) })
	t.Register("rpushx", func(x *server.Ctx, a [][]byte) error { return cmdPush(x, a, false, true) })
	t.Register("lpop", func(x *server.Ctx, a [][]byte) error { return cmdPop(x, a, true) })
	t.Register("rpop", func(x *server.Ctx, a [][]byte) error { return cmdPop(x, a, false) })
	t.Register("llen", cmdLLen)
	t.Register("lindex", cmdLIndex)
	t.Register("lrange", cmdLRange)
	t.Register("lset", cmdLSet)
	t.Register("linsert", cmdLInsert)
	t.Register("lrem", cmdLRem)
	t.Register("ltrim", cmdLTrim)
	t.Register("lpos", cmdLPos)
	t.Register("lmove", cmdLMove)
	t.Register("rpoplpush", cmdRPopLPush)
	t.Register("lmpop", func(x *server.Ctx, a [][]byte) error { return cmdMPop(x, a, false, listEnds, newListMPop) })
	t.Register("blpop", func(x *server.Ctx, a [][]byte) error { return cmdBPop(x, a, true) })
	t.Register("brpop", func(x *server.Ctx, a [][]byte) error { return cmdBPop(x, a, false) })
	t.Register("blmove", cmdBLMove)
	t.Register("brpoplpush", cmdBRPopLPush)
	t.Register("blmpop", func(x *server.Ctx, a [][]byte) error { return cmdMPop(x, a, true, listEnds, newListMPop) })
}

// cmdPush is LPUSH/RPUSH (left) and, with onlyExisting, LPUSHX/RPUSHX,
// which push nothing to a missing key and reply 0.
func cmdPush(x *server.Ctx, args [][]byte, left, onlyExisting bool) error {
	return x.Update(func(tx *tiering.Tx) error {
		l, err := tx.OpenList(x.DB(), args[1], !onlyExisting)
		if err != nil {
			return err
		}
		if l == nil {
			x.W.Int(0)
			return nil
		}
		x.NotifyNewKey(l.Len() == 0, args[1]) // a list is never stored empty
		for _, v := range args[2:] {
			if err := l.Push(left, v); err != nil {
				return err
			}
		}
		x.W.Int(l.Len())
		x.Notify(server.NotifyList, pushEvent(left), args[1]) // after the reply, as Redis
		return l.Close()
	})
}

// cmdLLen is LLEN: the length comes from the meta record, so a cold list
// is not read.
func cmdLLen(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		e, err := tx.Peek(x.DB(), args[1])
		switch {
		case err != nil:
			return err
		case e == nil:
			x.NotifyKeyMiss(args[1])
			x.W.Int(0)
		case e.Type != codec.TypeList:
			return resp.ErrWrongType
		default:
			x.W.Int(e.Count)
		}
		return nil
	})
}

// cmdLIndex is LINDEX key index; the index is parsed (and its error
// replied) only once the key is known to hold a list, as Redis does.
func cmdLIndex(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		l, err := tx.OpenList(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		if l == nil {
			x.NotifyKeyMiss(args[1])
			x.W.Null()
			return nil
		}
		i, err := listIndex(args[2])
		if err != nil {
			return err
		}
		if i < 0 {
			i += l.Len()
		}
		if i < 0 || i >= l.Len() {
			x.W.Null()
			return nil
		}
		v, err := l.Index(i)
		if err != nil {
			return err
		}
		x.W.Bulk(v)
		return nil
	})
}

// cmdLRange is LRANGE key start stop, streamed from the list's chunks.
func cmdLRange(x *server.Ctx, args [][]byte) error {
	start, stop, err := indexPair(args[2], args[3])
	if err != nil {
		return err
	}
	return x.View(func(tx *tiering.Tx) error {
		l, err := tx.OpenList(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		if l == nil {
			x.NotifyKeyMiss(args[1])
			x.W.Array(0)
			return nil
		}
		from, to, ok := rankRange(start, stop, l.Len())
		if !ok {
			x.W.Array(0)
			return nil
		}
		x.W.Array(int(to - from + 1))
		return l.Range(from, to, false, func(_ int64, v []byte) bool {
			x.W.Bulk(v)
			return true
		})
	})
}

// cmdLSet is LSET key index element; like LINDEX it parses the index only
// once the key is known to hold a list.
func cmdLSet(x *server.Ctx, args [][]byte) error {
	return x.Update(func(tx *tiering.Tx) error {
		l, err := tx.OpenList(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		if l == nil {
			return resp.Err("ERR no such key")
		}
		i, err := listIndex(args[2])
		if err != nil {
			return err
		}
		if i < 0 {
			i += l.Len()
		}
		if i < 0 || i >= l.Len() {
			return resp.Err("ERR index out of range")
		}
		if err := l.Set(i, args[3]); err != nil {
			return err
		}
		x.W.OK()
		x.Notify(server.NotifyList, "lset", args[1]) // after the reply, as Redis
		return l.Close()
	})
}

// cmdLInsert is LINSERT key BEFORE|AFTER pivot element: it replies the new
// length, -1 if the pivot is not found, 0 if the key is missing.
func cmdLInsert(x *server.Ctx, args [][]byte) error {
	var after bool
	switch {
	case cstr.EqualFold(args[2], "after"):
		after = true
	case cstr.EqualFold(args[2], "before"):
	default:
		return resp.Err(strops.ErrSyntax)
	}
	return x.Update(func(tx *tiering.Tx) error {
		l, err := tx.OpenList(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		if l == nil {
			x.W.Int(0)
			return nil
		}
		pos := int64(-1)
		err = l.Range(0, l.Len()-1, false, func(i int64, v []byte) bool {
			if bytes.Equal(v, args[3]) {
				pos = i
				return false
			}
			return true
		})
		if err == nil && pos >= 0 {
			if after {
				pos++
			}
			err = l.Splice(pos, pos, 0, []string{string(args[4])})
		}
		if err != nil {
			return err
		}
		if pos < 0 {
			x.W.Int(-1)
		} else {
			x.Notify(server.NotifyList, "linsert", args[1])
			x.W.Int(l.Len())
		}
		return l.Close()
	})
}

// cmdLRem is LREM key count element: it removes up to |count| matches
// (all for 0), from the tail when count is negative, and the key once the
// list is empty.
func cmdLRem(x *server.Ctx, args [][]byte) error {
	count, err := listIndex(args[2])
	if err != nil {
		return err
	}
	return x.Update(func(tx *tiering.Tx) error {
		l, err := tx.OpenList(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		if l == nil {
			x.W.Int(0)
			return nil
		}
		// Find the matches (up to |count|, from the tail if count < 0),
		// then splice the span between the first and the last one.
		elem := args[3]
		limit := count
		if limit < 0 {
			limit = -limit // like Redis, -MinInt64 stays negative: no limit
		}
		limit = max(limit, 0)
		first, last, found := int64(-1), int64(-1), int64(0)
		err = l.Range(0, l.Len()-1, count < 0, func(i int64, v []byte) bool {
			if bytes.Equal(v, elem) {
				if found == 0 {
					first, last = i, i
				}
				first, last = min(first, i), max(last, i)
				found++
			}
			return limit == 0 || found < limit
		})
		if err == nil && found > 0 {
			var span []string
			span, err = l.Elements(first, last)
			var kept []string
			spanBytes := int64(0)
			for _, v := range span {
				spanBytes += int64(len(v))
				if v != string(elem) {
					kept = append(kept, v)
				}
			}
			if err == nil {
				err = l.Splice(first, last+1, spanBytes, kept)
			}
		}
		if err != nil {
			return err
		}
		if found > 0 {
			x.Notify(server.NotifyList, "lrem", args[1])
			if l.Len() == 0 {
				x.Notify(server.NotifyGeneric, "del", args[1])
			}
		}
		x.W.Int(found)
		return l.Close()
	})
}

// cmdLTrim is LTRIM key start stop; an empty range deletes the key.
func cmdLTrim(x *server.Ctx, args [][]byte) error {
	start, stop, err := indexPair(args[2], args[3])
	if err != nil {
		return err
	}
	return x.Update(func(tx *tiering.Tx) error {
		l, err := tx.OpenList(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		if l == nil {
			x.W.OK()
			return nil
		}
		from, to, keep := rankRange(start, stop, l.Len())
		if !keep {
			from, to = 1, 0
		}
		if keep && from == 0 && to == l.Len()-1 {
			x.PreventPropagation() // nothing removed: Redis's dirty stays
		}
		if err := l.Trim(from, to); err != nil {
			return err
		}
		x.Notify(server.NotifyList, "ltrim", args[1])
		if l.Len() == 0 {
			x.Notify(server.NotifyGeneric, "del", args[1])
		}
		x.W.OK()
		return l.Close()
	})
}

// cmdLPos is LPOS key element [RANK rank] [COUNT n] [MAXLEN len]: the
// index of the rank-th match (a null if none), or with COUNT an array of
// up to n matches (0: all).
func cmdLPos(x *server.Ctx, args [][]byte) error {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for j := 3; j < len(args); j++ {
		more := j+1 < len(args)
		switch {
		case cstr.EqualFold(args[j], "rank") && more:
			j++
			n, ok := cstr.ParseInt(args[j])
			if !ok {
				return resp.Err(strops.ErrNotInteger)
			}
			if n == 0 {
				return resp.Err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
			}
			rank = n
		case cstr.EqualFold(args[j], "count") && more:
			j++
			n, ok := cstr.ParseInt(args[j])
			if !ok || n < 0 {
				return resp.Err("ERR COUNT can't be negative")
			}
			count = n
		case cstr.EqualFold(args[j], "maxlen") && more:
			j++
			n, ok := cstr.ParseInt(args[j])
			if !ok || n < 0 {
				return resp.Err("ERR MAXLEN can't be negative")
			}
			maxlen = n
		default:
			return resp.Err(strops.ErrSyntax)
		}
	}
	reverse := rank < 0
	if reverse {
		rank = -rank // like Redis, -MinInt64 stays negative: every match ranks
	}
	return x.View(func(tx *tiering.Tx) error {
		l, err := tx.OpenList(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		if l == nil {
			x.NotifyKeyMiss(args[1])
			if count >= 0 {
				x.W.Array(0)
			} else {
				x.W.Null()
			}
			return nil
		}
		var hits []int64
		scanned, matches := int64(0), int64(0)
		err = l.Range(0, l.Len()-1, reverse, func(i int64, v []byte) bool {
			if maxlen > 0 && scanned >= maxlen {
				return false
			}
			scanned++
			if !bytes.Equal(v, args[2]) {
				return true
			}
			matches++
			if matches >= rank {
				hits = append(hits, i)
				if count < 0 || count > 0 && int64(len(hits)) >= count {
					return false
				}
			}
			return true
		})
		if err != nil {
			return err
		}
		switch {
		case count >= 0:
			x.W.Array(len(hits))
			for _, i := range hits {
				x.W.Int(i)
			}
		case len(hits) > 0:
			x.W.Int(hits[0])
		default:
			x.W.Null()
		}
		return nil
	})
}
