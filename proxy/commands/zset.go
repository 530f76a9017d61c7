package commands

import (
	"math"
	"strconv"
	"unsafe"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// The sorted-set commands: adds, removals, lookups, pops, random members
// and scans. Ranges are in zset_range.go, set algebra in zset_ops.go.

func registerZSet(t *server.Table) {
	t.Register("zadd", cmdZAdd)
	t.Register("zincrby", cmdZIncrBy)
	t.Register("zrem", cmdZRem)
	t.Register("zcard", cmdZCard)
	t.Register("zscore", cmdZScore)
	t.Register("zmscore", cmdZMScore)
	t.Register("zrank", func(x *server.Ctx, a [][]byte) error { return cmdZRank(x, a, false) })
	t.Register("zrevrank", func(x *server.Ctx, a [][]byte) error { return cmdZRank(x, a, true) })
	t.Register("zcount", cmdZCount)
	t.Register("zlexcount", cmdZLexCount)
	t.Register("zrange", func(x *server.Ctx, a [][]byte) error { return cmdZRange(x, a, zrangeSpec{}) })
	t.Register("zrangestore", func(x *server.Ctx, a [][]byte) error {
		return cmdZRange(x, a, zrangeSpec{store: true})
	})
	t.Register("zrevrange", func(x *server.Ctx, a [][]byte) error {
		return cmdZRange(x, a, zrangeSpec{kind: byRank, rev: true, fixed: true})
	})
	t.Register("zrangebyscore", func(x *server.Ctx, a [][]byte) error {
		return cmdZRange(x, a, zrangeSpec{kind: byScore, fixed: true})
	})
	t.Register("zrevrangebyscore", func(x *server.Ctx, a [][]byte) error {
		return cmdZRange(x, a, zrangeSpec{kind: byScore, rev: true, fixed: true})
	})
	t.Register("zrangebylex", func(x *server.Ctx, a [][]byte) error {
		return cmdZRange(x, a, zrangeSpec{kind: byLex, fixed: true})
	})
	t.Register("zrevrangebylex", func(x *server.Ctx, a [][]byte) error {
		return cmdZRange(x, a, zrangeSpec{kind: byLex, rev: true, fixed: true})
	})
	t.Register("zremrangebyrank", func(x *server.Ctx, a [][]byte) error { return cmdZRemRange(x, a, byRank) })
	t.Register("zremrangebyscore", func(x *server.Ctx, a [][]byte) error { return cmdZRemRange(x, a, byScore) })
	t.Register("zremrangebylex", func(x *server.Ctx, a [][]byte) error { return cmdZRemRange(x, a, byLex) })

	t.Register("zpopmin", func(x *server.Ctx, a [][]byte) error { return cmdZPop(x, a, false) })
	t.Register("zpopmax", func(x *server.Ctx, a [][]byte) error { return cmdZPop(x, a, true) })
	t.Register("zmpop", func(x *server.Ctx, a [][]byte) error { return cmdMPop(x, a, false, zsetEnds, newZSetMPop) })
	t.Register("bzmpop", func(x *server.Ctx, a [][]byte) error { return cmdMPop(x, a, true, zsetEnds, newZSetMPop) })
	t.Register("bzpopmin", func(x *server.Ctx, a [][]byte) error { return cmdBZPop(x, a, false) })
	t.Register("bzpopmax", func(x *server.Ctx, a [][]byte) error { return cmdBZPop(x, a, true) })
	t.Register("zrandmember", cmdZRandMember)
	t.Register("zscan", cmdZScan)
	t.Register("zunion", func(x *server.Ctx, a [][]byte) error { return cmdZSetOp(x, a, zopUnion, false) })
	t.Register("zunionstore", func(x *server.Ctx, a [][]byte) error { return cmdZSetOp(x, a, zopUnion, true) })
	t.Register("zinter", func(x *server.Ctx, a [][]byte) error { return cmdZSetOp(x, a, zopInter, false) })
	t.Register("zinterstore", func(x *server.Ctx, a [][]byte) error { return cmdZSetOp(x, a, zopInter, true) })
	t.Register("zdiff", func(x *server.Ctx, a [][]byte) error { return cmdZSetOp(x, a, zopDiff, false) })
	t.Register("zdiffstore", func(x *server.Ctx, a [][]byte) error { return cmdZSetOp(x, a, zopDiff, true) })
	t.Register("zintercard", cmdZInterCard)
}

const (
	errNaNScore      = "ERR resulting score is not a number (NaN)"
	errRangeNotFloat = "ERR min or max is not a float"
	errLexRange      = "ERR min or max not valid string range item"
)

// bytesOfString returns s's bytes without copying; the caller must not
// modify them.
func bytesOfString(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// writeScored writes a member and its score: two elements in RESP2, a pair
// in RESP3 when pairs is set (WITHSCORES replies).
func writeScored(w *resp.Writer, member []byte, score float64, pairs bool) {
	if pairs && w.RESP3() {
		w.Array(2)
	}
	w.Bulk(member)
	w.Double(score)
}

// zaddFlags are ZADD's options.
type zaddFlags struct{ nx, xx, gt, lt, ch, incr bool }

func cmdZAdd(x *server.Ctx, args [][]byte) error {
	var f zaddFlags
	i := 2
	for ; i < len(args); i++ {
		switch {
		case cstr.EqualFold(args[i], "nx"):
			f.nx = true
		case cstr.EqualFold(args[i], "xx"):
			f.xx = true
		case cstr.EqualFold(args[i], "ch"):
			f.ch = true
		case cstr.EqualFold(args[i], "incr"):
			f.incr = true
		case cstr.EqualFold(args[i], "gt"):
			f.gt = true
		case cstr.EqualFold(args[i], "lt"):
			f.lt = true
		default:
			goto pairs
		}
	}
pairs:
	n := len(args) - i
	switch {
	case n == 0 || n%2 != 0:
		return resp.Err(strops.ErrSyntax)
	case f.nx && f.xx:
		return resp.Err("ERR XX and NX options at the same time are not compatible")
	case f.gt && f.nx || f.lt && f.nx || f.gt && f.lt:
		return resp.Err("ERR GT, LT, and/or NX options at the same time are not compatible")
	case f.incr && n > 2:
		return resp.Err("ERR INCR option supports a single increment-element pair")
	}
	scores := make([]float64, 0, n/2)
	for j := i; j < len(args); j += 2 {
		s, ok := cstr.ParseFloat(args[j])
		if !ok {
			return resp.Err(strops.ErrNotFloat)
		}
		scores = append(scores, s)
	}
	return zadd(x, args[1], args[i:], scores, f)
}

// zadd runs ZADD (and ZINCRBY, which is ZADD INCR) once the arguments are
// parsed: pairs alternates scores and members.
func zadd(x *server.Ctx, key []byte, pairs [][]byte, scores []float64, f zaddFlags) error {
	return x.Update(func(tx *tiering.Tx) error {
		z, err := tx.OpenZSet(x.DB(), key, !f.xx)
		if err != nil {
			return err
		}
		if z != nil {
			x.NotifyNewKey(z.Len() == 0, key) // a sorted set is never stored empty
			// Redis 7.0 creates the set as a skiplist from the start only if
			// the first member given is too long for the compact encoding.
			z.SetSkiplist(len(pairs[1]) > tiering.CompactZSetMember)
		}
		var added, updated, processed int64
		var last float64
		for k, score := range scores {
			member := pairs[2*k+1]
			if z == nil {
				break // XX on a missing key
			}
			cur, exists, err := z.Lookup(member)
			if err != nil {
				return err
			}
			switch {
			case exists && f.nx, !exists && f.xx:
				continue
			case exists:
				if f.incr {
					score += cur
					if math.IsNaN(score) {
						return resp.Err(errNaNScore)
					}
				}
				if f.lt && score >= cur || f.gt && score <= cur {
					continue
				}
				if score != cur {
					updated++
				}
			default:
				added++
			}
			if err := z.Put(member, score, cur, exists); err != nil {
				return err
			}
			processed++
			last = score
		}
		switch {
		case f.incr && processed > 0:
			x.W.Double(last)
		case f.incr:
			x.W.Null()
		case f.ch:
			x.W.Int(added + updated)
		default:
			x.W.Int(added)
		}
		if added+updated > 0 { // after the reply, as Redis
			event := "zadd"
			if f.incr {
				event = "zincr"
			}
			x.Notify(server.NotifyZSet, event, key)
		}
		return closeAll(z)
	})
}

func cmdZIncrBy(x *server.Ctx, args [][]byte) error {
	s, ok := cstr.ParseFloat(args[2])
	if !ok {
		return resp.Err(strops.ErrNotFloat)
	}
	return zadd(x, args[1], args[2:4], []float64{s}, zaddFlags{incr: true})
}

func cmdZRem(x *server.Ctx, args [][]byte) error {
	return x.Update(func(tx *tiering.Tx) error {
		z, err := tx.OpenZSet(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		var n int64
		for _, m := range args[2:] {
			if z == nil {
				break
			}
			removed, err := z.Rem(m)
			if err != nil {
				return err
			}
			n += b2i(removed)
		}
		if n > 0 {
			x.Notify(server.NotifyZSet, "zrem", args[1])
			if z.Len() == 0 {
				x.Notify(server.NotifyGeneric, "del", args[1])
			}
		}
		x.W.Int(n)
		return closeAll(z)
	})
}

func cmdZCard(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		z, err := peekZSet(x, tx, args[1])
		if err != nil {
			return err
		}
		if z == nil {
			x.NotifyKeyMiss(args[1])
			x.W.Int(0)
		} else {
			x.W.Int(z.Len())
		}
		return nil
	})
}

// peekZSet looks key up as a sorted set without promoting it (metadata
// commands): nil if it is missing, WRONGTYPE if it is not a sorted set.
func peekZSet(x *server.Ctx, tx *tiering.Tx, key []byte) (*tiering.ZSet, error) {
	e, err := tx.Peek(x.DB(), key)
	if err != nil || e == nil {
		return nil, err
	}
	if e.Type != codec.TypeZSet {
		return nil, resp.ErrWrongType
	}
	return tx.PeekZSet(x.DB(), key, e), nil
}

func cmdZScore(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		z, err := tx.OpenZSet(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		if z == nil {
			x.NotifyKeyMiss(args[1])
			x.W.Null()
			return nil
		}
		s, found, err := z.Score(args[2])
		if err != nil {
			return err
		}
		if found {
			x.W.Double(s)
		} else {
			x.W.Null()
		}
		return nil
	})
}

func cmdZMScore(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		z, err := tx.OpenZSet(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		if z == nil {
			x.NotifyKeyMiss(args[1])
		}
		x.W.Array(len(args) - 2)
		for _, m := range args[2:] {
			if z == nil {
				x.W.Null()
				continue
			}
			s, found, err := z.Score(m)
			if err != nil {
				return err
			}
			if found {
				x.W.Double(s)
			} else {
				x.W.Null()
			}
		}
		return nil
	})
}

func cmdZRank(x *server.Ctx, args [][]byte, rev bool) error {
	return x.View(func(tx *tiering.Tx) error {
		z, err := tx.OpenZSet(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		if z == nil {
			x.NotifyKeyMiss(args[1])
			x.W.Null()
			return nil
		}
		r, _, found, err := z.Rank(args[2], rev)
		if err != nil {
			return err
		}
		if found {
			x.W.Int(r)
		} else {
			x.W.Null()
		}
		return nil
	})
}

// zpopOp pops from a sorted set: ZPOPMIN/ZPOPMAX (reply the members),
// BZPOPMIN/BZPOPMAX (count -1: [key, member, score]) or ZMPOP/BZMPOP
// (mpop: [key, [[member, score]...]]).
type zpopOp struct {
	max   bool
	count int64
	mpop  bool
}

// pop removes up to n members from the low (high, if max) end of z.
func (op *zpopOp) pop(z *tiering.ZSet, n int64) ([]tiering.Member, error) {
	n = min(n, z.Len())
	if n <= 0 {
		return nil, nil
	}
	var out []tiering.Member
	err := z.RangeByRank(0, n-1, op.max, func(m []byte, s float64) bool {
		out = append(out, tiering.Member{Member: string(m), Score: s})
		return true
	})
	if err == nil {
		err = z.RemoveAll(out)
	}
	return out, err
}

// Run implements server.PopOp for the blocking forms and ZMPOP: it pops
// from key if it holds a sorted set, replying to w, and reports false
// (nothing replied) if it does not.
func (op *zpopOp) Run(ev server.Events, tx *tiering.Tx, db int, key []byte, w *resp.Writer) (bool, error) {
	z, err := tx.OpenZSet(db, key, false)
	if err != nil || z == nil {
		return false, err
	}
	n := int64(1)
	if op.mpop {
		n = op.count
	}
	popped, err := op.pop(z, n)
	if err != nil {
		return true, err
	}
	// Redis: the reply's header, the event, the members, then "del".
	if op.mpop {
		w.Array(2)
		w.Bulk(key)
		w.Array(len(popped))
		op.popEvent(ev, db, key)
		for _, m := range popped {
			w.Array(2)
			w.BulkString(m.Member)
			w.Double(m.Score)
		}
	} else {
		w.Array(3)
		w.Bulk(key)
		op.popEvent(ev, db, key)
		w.BulkString(popped[0].Member)
		w.Double(popped[0].Score)
	}
	op.delIfEmpty(ev, db, key, z.Len())
	// Propagated as ZPOPMIN/ZPOPMAX, with the count popped for [B]ZMPOP.
	name := argZPopMin
	if op.max {
		name = argZPopMax
	}
	switch {
	case !ev.Replicating():
	case op.mpop:
		ev.Propagate(db, name, key, intArg(int64(len(popped))))
	default:
		ev.Propagate(db, name, key)
	}
	return true, z.Close()
}

// popEvent publishes a sorted-set pop's event, "zpopmin" or "zpopmax".
func (op *zpopOp) popEvent(ev server.Events, db int, key []byte) {
	event := "zpopmin"
	if op.max {
		event = "zpopmax"
	}
	ev.Notify(db, server.NotifyZSet, event, key)
}

// delIfEmpty publishes "del" for a sorted set a pop left empty (left
// members remain).
func (op *zpopOp) delIfEmpty(ev server.Events, db int, key []byte, left int64) {
	if left == 0 {
		ev.Notify(db, server.NotifyGeneric, "del", key)
	}
}

func cmdZPop(x *server.Ctx, args [][]byte, max bool) error {
	if len(args) > 3 {
		return resp.Err(strops.ErrSyntax)
	}
	count := int64(1)
	if len(args) == 3 {
		n, ok := cstr.ParseInt(args[2])
		if !ok || n < 0 {
			return resp.Err("ERR value is out of range, must be positive")
		}
		count = n
	}
	return x.Update(func(tx *tiering.Tx) error {
		z, err := tx.OpenZSet(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		if z == nil || count == 0 {
			x.W.Array(0)
			return nil
		}
		op := zpopOp{max: max}
		popped, err := op.pop(z, count)
		if err != nil {
			return err
		}
		nested := len(args) == 3 && x.W.RESP3()
		if nested {
			x.W.Array(len(popped))
		} else {
			x.W.Array(2 * len(popped))
		}
		// Redis: the reply's header, the event, the members, then "del".
		op.popEvent(x.Events(), x.DB(), args[1])
		for _, m := range popped {
			writeScored(x.W, bytesOfString(m.Member), m.Score, nested)
		}
		op.delIfEmpty(x.Events(), x.DB(), args[1], z.Len())
		return closeAll(z)
	})
}

func cmdBZPop(x *server.Ctx, args [][]byte, max bool) error {
	ms, err := timeout(args[len(args)-1])
	if err != nil {
		return err
	}
	x.PreventPropagation() // propagated as ZPOPMIN/ZPOPMAX
	return x.PopOrBlock(&zpopOp{max: max, count: -1}, args[1:len(args)-1], ms, false)
}

// zsetEnds are ZMPOP's ends; newZSetMPop is its pop.
var zsetEnds = [2]string{"min", "max"}

func newZSetMPop(min bool, count int64) server.PopOp {
	return &zpopOp{max: !min, count: count, mpop: true}
}

func cmdZRandMember(x *server.Ctx, args [][]byte) error {
	if len(args) == 2 {
		return x.View(func(tx *tiering.Tx) error {
			z, err := tx.OpenZSet(x.DB(), args[1], false)
			if err != nil {
				return err
			}
			if z == nil {
				x.NotifyKeyMiss(args[1])
				x.W.Null()
				return nil
			}
			return z.Random(1, true, func(m []byte, _ float64) { x.W.Bulk(m) })
		})
	}
	n, distinct, err := parseRandomCount(args[2])
	if err != nil {
		return err
	}
	if len(args) > 4 || (len(args) == 4 && !cstr.EqualFold(args[3], "withscores")) {
		return resp.Err(strops.ErrSyntax)
	}
	withScores := len(args) == 4
	if withScores && n > (1<<63-1)/2 {
		return resp.Err("ERR value is out of range")
	}
	return x.View(func(tx *tiering.Tx) error {
		z, err := tx.OpenZSet(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		if z == nil {
			x.NotifyKeyMiss(args[1])
		}
		if z == nil || n == 0 {
			x.W.Array(0)
			return nil
		}
		if distinct {
			n = min(n, z.Len())
		} else if n > maxRandomCount {
			return errRandomCount
		}
		if withScores && !x.W.RESP3() {
			x.W.Array(int(2 * n))
		} else {
			x.W.Array(int(n))
		}
		var got int64
		err = z.Random(n, distinct, func(m []byte, s float64) {
			got++
			if withScores {
				writeScored(x.W, m, s, true)
			} else {
				x.W.Bulk(m)
			}
		})
		return streamed(args[1], n, got, err)
	})
}

func cmdZScan(x *server.Ctx, args [][]byte) error {
	cursor, err := scanCursor(args[2])
	if err != nil {
		return err
	}
	return x.View(func(tx *tiering.Tx) error {
		z, err := tx.OpenZSet(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		if z == nil {
			x.NotifyKeyMiss(args[1])
			WriteScanReply(x.W, 0, nil)
			return nil
		}
		o, err := parseScanOpts(args[3:], false)
		if err != nil {
			return err
		}
		var out [][]byte
		skiplist := z.Skiplist()
		next, err := z.Scan(cursor, o.count, func(m []byte, s float64) {
			if o.match != nil && !o.match(m) {
				return
			}
			var score []byte
			if skiplist {
				score = resp.AppendDouble(nil, s)
			} else {
				score = appendCompactScore(nil, s)
			}
			out = append(out, append([]byte(nil), m...), score)
		})
		if err != nil {
			return err
		}
		WriteScanReply(x.W, next, out)
		return nil
	})
}

// appendCompactScore appends a score as Redis's compact (listpack)
// encoding stores it, which ZSCAN returns as is: an integer when the score
// is integral and within ±LLONG_MAX/2 (so -0 is "0"), else "%.17g".
func appendCompactScore(dst []byte, s float64) []byte {
	const limit = float64(math.MaxInt64 / 2)
	if s >= -limit && s <= limit {
		if ll := int64(s); float64(ll) == s {
			return strconv.AppendInt(dst, ll, 10)
		}
	}
	return resp.AppendDouble(dst, s)
}
