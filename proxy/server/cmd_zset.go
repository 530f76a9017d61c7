package server

import (
	"math"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

func init() {
	register("zadd", cmdZAdd)
	register("zincrby", cmdZIncrBy)
	register("zrem", cmdZRem)
	register("zcard", cmdZCard)
	register("zscore", cmdZScore)
	register("zmscore", cmdZMScore)
	register("zrank", func(c *Client, a [][]byte) { cmdZRank(c, a, false) })
	register("zrevrank", func(c *Client, a [][]byte) { cmdZRank(c, a, true) })
	register("zcount", cmdZCount)
	register("zlexcount", cmdZLexCount)
	register("zrange", func(c *Client, a [][]byte) { cmdZRange(c, a, zrangeSpec{}) })
	register("zrangestore", func(c *Client, a [][]byte) { cmdZRange(c, a, zrangeSpec{store: true}) })
	register("zrevrange", func(c *Client, a [][]byte) { cmdZRange(c, a, zrangeSpec{kind: byRank, rev: true, fixed: true}) })
	register("zrangebyscore", func(c *Client, a [][]byte) { cmdZRange(c, a, zrangeSpec{kind: byScore, fixed: true}) })
	register("zrevrangebyscore", func(c *Client, a [][]byte) {
		cmdZRange(c, a, zrangeSpec{kind: byScore, rev: true, fixed: true})
	})
	register("zrangebylex", func(c *Client, a [][]byte) { cmdZRange(c, a, zrangeSpec{kind: byLex, fixed: true}) })
	register("zrevrangebylex", func(c *Client, a [][]byte) { cmdZRange(c, a, zrangeSpec{kind: byLex, rev: true, fixed: true}) })
	register("zremrangebyrank", func(c *Client, a [][]byte) { cmdZRemRange(c, a, byRank) })
	register("zremrangebyscore", func(c *Client, a [][]byte) { cmdZRemRange(c, a, byScore) })
	register("zremrangebylex", func(c *Client, a [][]byte) { cmdZRemRange(c, a, byLex) })
}

const (
	errNotFloat      = "ERR value is not a valid float"
	errNaNScore      = "ERR resulting score is not a number (NaN)"
	errRangeNotFloat = "ERR min or max is not a float"
	errLexRange      = "ERR min or max not valid string range item"
)

// openZSet opens key as a sorted set (see Tx.OpenZSet). On WRONGTYPE or a
// store error it replies, ends tx and returns ok false.
func (c *Client) openZSet(tx *tiering.Tx, key []byte, create bool) (*tiering.ZSet, bool) {
	z, err := tx.OpenZSet(c.db, key, create)
	if err != nil {
		c.collErr(tx, err)
		return nil, false
	}
	return z, true
}

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

func cmdZAdd(c *Client, args [][]byte) {
	var f zaddFlags
	i := 2
	for ; i < len(args); i++ {
		switch {
		case eqFold(args[i], "nx"):
			f.nx = true
		case eqFold(args[i], "xx"):
			f.xx = true
		case eqFold(args[i], "ch"):
			f.ch = true
		case eqFold(args[i], "incr"):
			f.incr = true
		case eqFold(args[i], "gt"):
			f.gt = true
		case eqFold(args[i], "lt"):
			f.lt = true
		default:
			goto pairs
		}
	}
pairs:
	n := len(args) - i
	switch {
	case n == 0 || n%2 != 0:
		c.err(strops.ErrSyntax)
		return
	case f.nx && f.xx:
		c.err("ERR XX and NX options at the same time are not compatible")
		return
	case f.gt && f.nx || f.lt && f.nx || f.gt && f.lt:
		c.err("ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	case f.incr && n > 2:
		c.err("ERR INCR option supports a single increment-element pair")
		return
	}
	scores := make([]float64, 0, n/2)
	for j := i; j < len(args); j += 2 {
		s, ok := cstr.ParseFloat(args[j])
		if !ok {
			c.err(errNotFloat)
			return
		}
		scores = append(scores, s)
	}
	zadd(c, args[1], args[i:], scores, f)
}

// zadd runs ZADD (and ZINCRBY, which is ZADD INCR) once the arguments are
// parsed: pairs alternates scores and members.
func zadd(c *Client, key []byte, pairs [][]byte, scores []float64, f zaddFlags) {
	tx := c.begin()
	z, ok := c.openZSet(tx, key, !f.xx)
	if !ok {
		return
	}
	if z != nil {
		c.notifyNewKey(z.Len() == 0, key) // a sorted set is never stored empty
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
			c.txErr(tx, err)
			return
		}
		switch {
		case exists && f.nx, !exists && f.xx:
			continue
		case exists:
			if f.incr {
				score += cur
				if math.IsNaN(score) {
					c.txFail(tx, errNaNScore)
					return
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
			c.txErr(tx, err)
			return
		}
		processed++
		last = score
	}
	switch {
	case f.incr && processed > 0:
		c.w.Double(last)
	case f.incr:
		c.w.Null()
	case f.ch:
		c.w.Int(added + updated)
	default:
		c.w.Int(added)
	}
	if added+updated > 0 { // after the reply, as Redis
		event := "zadd"
		if f.incr {
			event = "zincr"
		}
		c.notify(NotifyZSet, event, key)
	}
	c.closeAndCommit(tx, z)
}

func cmdZIncrBy(c *Client, args [][]byte) {
	s, ok := cstr.ParseFloat(args[2])
	if !ok {
		c.err(errNotFloat)
		return
	}
	zadd(c, args[1], args[2:4], []float64{s}, zaddFlags{incr: true})
}

func cmdZRem(c *Client, args [][]byte) {
	tx := c.begin()
	z, ok := c.openZSet(tx, args[1], false)
	if !ok {
		return
	}
	var n int64
	for _, m := range args[2:] {
		if z == nil {
			break
		}
		removed, err := z.Rem(m)
		if err != nil {
			c.txErr(tx, err)
			return
		}
		n += b2i(removed)
	}
	if n > 0 {
		c.notify(NotifyZSet, "zrem", args[1])
		if z.Len() == 0 {
			c.notify(NotifyGeneric, "del", args[1])
		}
	}
	c.w.Int(n)
	c.closeAndCommit(tx, z)
}

func cmdZCard(c *Client, args [][]byte) {
	tx := c.begin()
	z, ok := c.peekZSet(tx, args[1])
	if !ok {
		return
	}
	if z == nil {
		c.notifyKeyMiss(args[1])
		c.w.Int(0)
	} else {
		c.w.Int(z.Len())
	}
	c.commit(tx)
}

// peekZSet looks key up as a sorted set without promoting it (metadata
// commands). On WRONGTYPE or error it replies and ends tx.
func (c *Client) peekZSet(tx *tiering.Tx, key []byte) (*tiering.ZSet, bool) {
	e, err := tx.Peek(c.db, key)
	if err != nil {
		c.txErr(tx, err)
		return nil, false
	}
	if e == nil {
		return nil, true
	}
	if e.Type != zsetType {
		c.txFail(tx, errWrongType)
		return nil, false
	}
	return tx.PeekZSet(c.db, key, e), true
}

func cmdZScore(c *Client, args [][]byte) {
	tx := c.begin()
	z, ok := c.openZSet(tx, args[1], false)
	if !ok {
		return
	}
	if z == nil {
		c.notifyKeyMiss(args[1])
		c.w.Null()
		c.commit(tx)
		return
	}
	s, found, err := z.Score(args[2])
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if found {
		c.w.Double(s)
	} else {
		c.w.Null()
	}
	c.commit(tx)
}

func cmdZMScore(c *Client, args [][]byte) {
	tx := c.begin()
	z, ok := c.openZSet(tx, args[1], false)
	if !ok {
		return
	}
	if z == nil {
		c.notifyKeyMiss(args[1])
	}
	c.w.Array(len(args) - 2)
	for _, m := range args[2:] {
		if z == nil {
			c.w.Null()
			continue
		}
		s, found, err := z.Score(m)
		if err != nil {
			c.txErr(tx, err)
			return
		}
		if found {
			c.w.Double(s)
		} else {
			c.w.Null()
		}
	}
	c.commit(tx)
}

func cmdZRank(c *Client, args [][]byte, rev bool) {
	tx := c.begin()
	z, ok := c.openZSet(tx, args[1], false)
	if !ok {
		return
	}
	if z == nil {
		c.notifyKeyMiss(args[1])
		c.w.Null()
		c.commit(tx)
		return
	}
	r, _, found, err := z.Rank(args[2], rev)
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if found {
		c.w.Int(r)
	} else {
		c.w.Null()
	}
	c.commit(tx)
}

func cmdZCount(c *Client, args [][]byte) {
	r, ok := parseScoreRange(args[2], args[3])
	if !ok {
		c.err(errRangeNotFloat)
		return
	}
	zcount(c, args[1], func(z *tiering.ZSet) (int64, error) { return z.CountByScore(&r) })
}

func cmdZLexCount(c *Client, args [][]byte) {
	r, ok := parseLexRange(args[2], args[3])
	if !ok {
		c.err(errLexRange)
		return
	}
	zcount(c, args[1], func(z *tiering.ZSet) (int64, error) { return z.CountByLex(&r) })
}

func zcount(c *Client, key []byte, count func(*tiering.ZSet) (int64, error)) {
	tx := c.begin()
	z, ok := c.openZSet(tx, key, false)
	if !ok {
		return
	}
	var n int64
	if z != nil {
		var err error
		if n, err = count(z); err != nil {
			c.txErr(tx, err)
			return
		}
	} else {
		c.notifyKeyMiss(key)
	}
	c.w.Int(n)
	c.commit(tx)
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
// zrangeGenericCommand does, replying on error.
func (c *Client) parseZRange(args [][]byte, spec zrangeSpec) (zrangeQuery, bool) {
	q := zrangeQuery{kind: spec.kind, rev: spec.rev, limit: -1}
	revSet := spec.fixed
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch {
		case eqFold(args[j], "withscores") && !spec.store:
			q.withScores = true
		case eqFold(args[j], "limit") && left >= 2:
			var ok bool
			if q.offset, ok = c.listIndex(args[j+1]); !ok {
				return q, false
			}
			if q.limit, ok = c.listIndex(args[j+2]); !ok {
				return q, false
			}
			j += 2
		case !revSet && eqFold(args[j], "rev"):
			q.rev, revSet = true, true
		case q.kind == byAuto && eqFold(args[j], "bylex"):
			q.kind = byLex
		case q.kind == byAuto && eqFold(args[j], "byscore"):
			q.kind = byScore
		default:
			c.err(strops.ErrSyntax)
			return q, false
		}
	}
	if q.kind == byAuto {
		q.kind = byRank
	}
	switch {
	case q.limit != -1 && q.kind == byRank: // as Redis: LIMIT n -1 passes
		c.err("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
		return q, false
	case q.withScores && q.kind == byLex:
		c.err("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
		return q, false
	}
	min, max := args[0], args[1]
	if q.rev && q.kind != byRank {
		min, max = max, min
	}
	switch q.kind {
	case byRank:
		var ok bool
		if q.start, q.stop, ok = c.indexPair(min, max); !ok {
			return q, false
		}
	case byScore:
		var ok bool
		if q.score, ok = parseScoreRange(min, max); !ok {
			c.err(errRangeNotFloat)
			return q, false
		}
	case byLex:
		var ok bool
		if q.lex, ok = parseLexRange(min, max); !ok {
			c.err(errLexRange)
			return q, false
		}
	}
	return q, true
}

// run calls fn for the members q selects from z, in reply order.
func (q *zrangeQuery) run(z *tiering.ZSet, fn func(member []byte, score float64) bool) error {
	switch q.kind {
	case byRank:
		from, to, ok := rangeOf(q.start, q.stop, z.Len())
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

func cmdZRange(c *Client, args [][]byte, spec zrangeSpec) {
	src, rest := args[1], args[2:]
	if spec.store {
		src, rest = args[2], args[3:]
	}
	q, ok := c.parseZRange(rest, spec)
	if !ok {
		return
	}
	tx := c.begin()
	z, ok := c.openZSet(tx, src, false)
	if !ok {
		return
	}
	var picked []tiering.Member
	if z != nil {
		err := q.run(z, func(m []byte, s float64) bool {
			picked = append(picked, tiering.Member{Member: string(m), Score: s})
			return true
		})
		if err != nil {
			c.txErr(tx, err)
			return
		}
	} else {
		c.notifyKeyMiss(src)
	}
	if spec.store {
		// Redis 7.0 starts the destination compact and converts it as
		// members are added.
		storeZSet(c, tx, args[1], picked, false, true, "zrangestore")
		return
	}
	c.w.Array(len(picked) * (1 + int(b2i(q.withScores && !c.w.RESP3()))))
	for _, m := range picked {
		if q.withScores {
			writeScored(&c.w, bytesOfString(m.Member), m.Score, true)
		} else {
			c.w.BulkString(m.Member)
		}
	}
	c.commit(tx)
}

// storeZSet replaces dst with a sorted set of members (deleting it if
// there are none) and replies with their number. The set starts as a
// skiplist if skiplist is set; with incremental, it converts as members
// are added (ZRANGESTORE), otherwise its encoding is chosen by its final
// content (ZUNIONSTORE and friends build a skiplist and convert it back
// if it is small).
func storeZSet(c *Client, tx *tiering.Tx, dst []byte, members []tiering.Member, skiplist, incremental bool, event string) {
	if len(members) == 0 {
		c.storeEmpty(tx, dst)
		return
	}
	isNew, ok := c.keyIsNew(tx, c.db, dst)
	if !ok {
		return
	}
	z, err := tx.CreateZSet(c.db, dst)
	if err != nil {
		c.txErr(tx, err)
		return
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
			c.txErr(tx, err)
			return
		}
	}
	c.notifyNewKey(isNew, dst)
	c.w.Int(int64(len(members)))
	c.notify(NotifyZSet, event, dst)
	c.closeAndCommit(tx, z)
}

// zremRangeEvents are the events of ZREMRANGEBYRANK, BYSCORE and BYLEX.
var zremRangeEvents = [...]string{byRank: "zremrangebyrank", byScore: "zremrangebyscore", byLex: "zremrangebylex"}

func cmdZRemRange(c *Client, args [][]byte, kind rangeKind) {
	q := zrangeQuery{kind: kind, limit: -1}
	switch kind {
	case byRank:
		var ok bool
		if q.start, q.stop, ok = c.indexPair(args[2], args[3]); !ok {
			return
		}
	case byScore:
		var ok bool
		if q.score, ok = parseScoreRange(args[2], args[3]); !ok {
			c.err(errRangeNotFloat)
			return
		}
	case byLex:
		var ok bool
		if q.lex, ok = parseLexRange(args[2], args[3]); !ok {
			c.err(errLexRange)
			return
		}
	}
	tx := c.begin()
	z, ok := c.openZSet(tx, args[1], false)
	if !ok {
		return
	}
	if z == nil {
		c.w.Int(0)
		c.commit(tx)
		return
	}
	var doomed []tiering.Member
	err := q.run(z, func(m []byte, s float64) bool {
		doomed = append(doomed, tiering.Member{Member: string(m), Score: s})
		return true
	})
	if err == nil {
		err = z.RemoveAll(doomed)
	}
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if len(doomed) > 0 {
		c.notify(NotifyZSet, zremRangeEvents[kind], args[1])
		if z.Len() == 0 {
			c.notify(NotifyGeneric, "del", args[1])
		}
	}
	c.w.Int(int64(len(doomed)))
	c.closeAndCommit(tx, z)
}
