package commands

import (
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// Sorted-set ranges: ZCOUNT, ZLEXCOUNT, every ZRANGE form, ZRANGESTORE and
// ZREMRANGEBY*.

// parseScoreRange parses ZRANGEBYSCORE bounds: "(" makes one exclusive;
// the rest is read as strtod reads it (Redis's zslParseRange).
func parseScoreRange(min, max []byte) (tiering.ScoreRange, bool) {
	var r tiering.ScoreRange
	bound := func(b []byte, v *float64, ex *bool) bool {
		if len(b) > 0 && b[0] == '(' {
			*ex = true
			b = b[1:]
		}
		f, ok := cstr.ParseStrtod(cstr.CString(b))
		if !ok || len(cstr.CString(b)) != len(b) {
			return false
		}
		*v = f
		return true
	}
	ok := bound(min, &r.Min, &r.MinEx) && bound(max, &r.Max, &r.MaxEx)
	return r, ok
}

// parseLexRange parses ZRANGEBYLEX bounds: "-", "+", "[member" or
// "(member".
func parseLexRange(min, max []byte) (tiering.LexRange, bool) {
	var r tiering.LexRange
	bound := func(b []byte, lb *tiering.LexBound) bool {
		if len(b) == 0 {
			return false
		}
		switch b[0] {
		case '-', '+':
			if len(b) != 1 {
				return false
			}
			lb.Inf = 1
			if b[0] == '-' {
				lb.Inf = -1
			}
		case '(', '[':
			lb.Exclusive = b[0] == '('
			lb.Value = string(b[1:])
		default:
			return false
		}
		return true
	}
	ok := bound(min, &r.Min) && bound(max, &r.Max)
	return r, ok
}

func cmdZCount(x *server.Ctx, args [][]byte) error {
	r, ok := parseScoreRange(args[2], args[3])
	if !ok {
		return resp.Err(errRangeNotFloat)
	}
	return zcount(x, args[1], func(z *tiering.ZSet) (int64, error) { return z.CountByScore(&r) })
}

func cmdZLexCount(x *server.Ctx, args [][]byte) error {
	r, ok := parseLexRange(args[2], args[3])
	if !ok {
		return resp.Err(errLexRange)
	}
	return zcount(x, args[1], func(z *tiering.ZSet) (int64, error) { return z.CountByLex(&r) })
}

// zcount replies with count's result for the sorted set at key (0 if it is
// missing).
func zcount(x *server.Ctx, key []byte, count func(*tiering.ZSet) (int64, error)) error {
	return x.View(func(tx *tiering.Tx) error {
		z, err := tx.OpenZSet(x.DB(), key, false)
		if err != nil {
			return err
		}
		var n int64
		if z != nil {
			if n, err = count(z); err != nil {
				return err
			}
		} else {
			x.NotifyKeyMiss(key)
		}
		x.W.Int(n)
		return nil
	})
}

// rangeKind is how a ZRANGE-family command selects members.
type rangeKind uint8

const (
	byAuto rangeKind = iota
	byRank
	byScore
	byLex
)

// zrangeSpec is what a ZRANGE-family command fixes before its options:
// ZRANGEBYSCORE is ZRANGE with kind byScore fixed, ZREVRANGE with rev...
type zrangeSpec struct {
	kind  rangeKind
	rev   bool
	fixed bool // kind and direction come from the command name
	store bool // ZRANGESTORE dst src ...
}

// zrangeQuery is a parsed ZRANGE-family request.
type zrangeQuery struct {
	kind          rangeKind
	rev           bool
	withScores    bool
	offset, limit int64
	start, stop   int64
	score         tiering.ScoreRange
	lex           tiering.LexRange
}

// parseZRange parses the arguments after the key(s) as Redis 7.0's
// zrangeGenericCommand does, returning its errors.
func parseZRange(args [][]byte, spec zrangeSpec) (zrangeQuery, error) {
	q := zrangeQuery{kind: spec.kind, rev: spec.rev, limit: -1}
	revSet := spec.fixed
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch {
		case cstr.EqualFold(args[j], "withscores") && !spec.store:
			q.withScores = true
		case cstr.EqualFold(args[j], "limit") && left >= 2:
			var err error
			if q.offset, err = listIndex(args[j+1]); err != nil {
				return q, err
			}
			if q.limit, err = listIndex(args[j+2]); err != nil {
				return q, err
			}
			j += 2
		case !revSet && cstr.EqualFold(args[j], "rev"):
			q.rev, revSet = true, true
		case q.kind == byAuto && cstr.EqualFold(args[j], "bylex"):
			q.kind = byLex
		case q.kind == byAuto && cstr.EqualFold(args[j], "byscore"):
			q.kind = byScore
		default:
			return q, resp.Err(strops.ErrSyntax)
		}
	}
	if q.kind == byAuto {
		q.kind = byRank
	}
	switch {
	case q.limit != -1 && q.kind == byRank: // as Redis: LIMIT n -1 passes
		return q, resp.Err("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
	case q.withScores && q.kind == byLex:
		return q, resp.Err("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
	}
	min, max := args[0], args[1]
	if q.rev && q.kind != byRank {
		min, max = max, min
	}
	switch q.kind {
	case byRank:
		var err error
		if q.start, q.stop, err = indexPair(min, max); err != nil {
			return q, err
		}
	case byScore:
		var ok bool
		if q.score, ok = parseScoreRange(min, max); !ok {
			return q, resp.Err(errRangeNotFloat)
		}
	case byLex:
		var ok bool
		if q.lex, ok = parseLexRange(min, max); !ok {
			return q, resp.Err(errLexRange)
		}
	}
	return q, nil
}

// run calls fn for the members q selects from z, in reply order.
func (q *zrangeQuery) run(z *tiering.ZSet, fn func(member []byte, score float64) bool) error {
	switch q.kind {
	case byRank:
		from, to, ok := rankRange(q.start, q.stop, z.Len())
		if !ok {
			return nil
		}
		return z.RangeByRank(from, to, q.rev, fn)
	case byScore:
		if q.offset < 0 {
			return nil
		}
		return z.RangeByScore(&q.score, q.rev, q.offset, q.limit, fn)
	default:
		if q.offset < 0 {
			return nil
		}
		return z.RangeByLex(&q.lex, q.rev, q.offset, q.limit, fn)
	}
}

// cmdZRange is every ZRANGE form and ZRANGESTORE (spec.store).
func cmdZRange(x *server.Ctx, args [][]byte, spec zrangeSpec) error {
	src, rest := args[1], args[2:]
	if spec.store {
		src, rest = args[2], args[3:]
	}
	q, err := parseZRange(rest, spec)
	if err != nil {
		return err
	}
	return x.Update(func(tx *tiering.Tx) error {
		z, err := tx.OpenZSet(x.DB(), src, false)
		if err != nil {
			return err
		}
		var picked []tiering.Member
		if z != nil {
			err := q.run(z, func(m []byte, s float64) bool {
				picked = append(picked, tiering.Member{Member: string(m), Score: s})
				return true
			})
			if err != nil {
				return err
			}
		} else {
			x.NotifyKeyMiss(src)
		}
		if spec.store {
			// Redis 7.0 starts the destination compact and converts it as
			// members are added.
			return storeZSet(x, tx, args[1], picked, false, true, "zrangestore")
		}
		x.W.Array(len(picked) * (1 + int(b2i(q.withScores && !x.W.RESP3()))))
		for _, m := range picked {
			if q.withScores {
				writeScored(x.W, bytesOfString(m.Member), m.Score, true)
			} else {
				x.W.BulkString(m.Member)
			}
		}
		return nil
	})
}

// storeZSet replaces dst with a sorted set of members (deleting it if
// there are none) and replies with their number. The set starts as a
// skiplist if skiplist is set; with incremental, it converts as members
// are added (ZRANGESTORE), otherwise its encoding is chosen by its final
// content (ZUNIONSTORE and friends build a skiplist and convert it back
// if it is small).
func storeZSet(x *server.Ctx, tx *tiering.Tx, dst []byte, members []tiering.Member, skiplist, incremental bool, event string) error {
	if len(members) == 0 {
		return storeEmpty(x, tx, dst)
	}
	isNew, err := x.KeyIsNew(tx, x.DB(), dst)
	if err != nil {
		return err
	}
	z, err := tx.CreateZSet(x.DB(), dst)
	if err != nil {
		return err
	}
	if !incremental {
		longest := 0
		for _, m := range members {
			longest = max(longest, len(m.Member))
		}
		skiplist = len(members) > tiering.CompactZSetMembers || longest > tiering.CompactZSetMember
	}
	z.SetSkiplist(skiplist)
	for _, m := range members {
		if _, err := z.Add(bytesOfString(m.Member), m.Score); err != nil {
			return err
		}
	}
	x.NotifyNewKey(isNew, dst)
	x.W.Int(int64(len(members)))
	x.Notify(server.NotifyZSet, event, dst)
	return closeAll(z)
}

// zremRangeEvents are the events of ZREMRANGEBYRANK, BYSCORE and BYLEX.
var zremRangeEvents = [...]string{byRank: "zremrangebyrank", byScore: "zremrangebyscore", byLex: "zremrangebylex"}

// cmdZRemRange is ZREMRANGEBYRANK, ZREMRANGEBYSCORE and ZREMRANGEBYLEX.
func cmdZRemRange(x *server.Ctx, args [][]byte, kind rangeKind) error {
	q := zrangeQuery{kind: kind, limit: -1}
	switch kind {
	case byRank:
		var err error
		if q.start, q.stop, err = indexPair(args[2], args[3]); err != nil {
			return err
		}
	case byScore:
		var ok bool
		if q.score, ok = parseScoreRange(args[2], args[3]); !ok {
			return resp.Err(errRangeNotFloat)
		}
	case byLex:
		var ok bool
		if q.lex, ok = parseLexRange(args[2], args[3]); !ok {
			return resp.Err(errLexRange)
		}
	}
	return x.Update(func(tx *tiering.Tx) error {
		z, err := tx.OpenZSet(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		if z == nil {
			x.W.Int(0)
			return nil
		}
		var doomed []tiering.Member
		err = q.run(z, func(m []byte, s float64) bool {
			doomed = append(doomed, tiering.Member{Member: string(m), Score: s})
			return true
		})
		if err == nil {
			err = z.RemoveAll(doomed)
		}
		if err != nil {
			return err
		}
		if len(doomed) > 0 {
			x.Notify(server.NotifyZSet, zremRangeEvents[kind], args[1])
			if z.Len() == 0 {
				x.Notify(server.NotifyGeneric, "del", args[1])
			}
		}
		x.W.Int(int64(len(doomed)))
		return closeAll(z)
	})
}
