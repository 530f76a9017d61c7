package server

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// Sorted-set pops, random members, scans and set algebra.

func init() {
	register("zpopmin", func(c *Client, a [][]byte) { cmdZPop(c, a, false) })
	register("zpopmax", func(c *Client, a [][]byte) { cmdZPop(c, a, true) })
	register("zmpop", func(c *Client, a [][]byte) { cmdMPop(c, a, false, zsetEnds, newZSetMPop) })
	register("bzmpop", func(c *Client, a [][]byte) { cmdMPop(c, a, true, zsetEnds, newZSetMPop) })
	register("bzpopmin", func(c *Client, a [][]byte) { cmdBZPop(c, a, false) })
	register("bzpopmax", func(c *Client, a [][]byte) { cmdBZPop(c, a, true) })
	register("zrandmember", cmdZRandMember)
	register("zscan", cmdZScan)
	register("zunion", func(c *Client, a [][]byte) { cmdZSetOp(c, a, zopUnion, false) })
	register("zunionstore", func(c *Client, a [][]byte) { cmdZSetOp(c, a, zopUnion, true) })
	register("zinter", func(c *Client, a [][]byte) { cmdZSetOp(c, a, zopInter, false) })
	register("zinterstore", func(c *Client, a [][]byte) { cmdZSetOp(c, a, zopInter, true) })
	register("zdiff", func(c *Client, a [][]byte) { cmdZSetOp(c, a, zopDiff, false) })
	register("zdiffstore", func(c *Client, a [][]byte) { cmdZSetOp(c, a, zopDiff, true) })
	register("zintercard", cmdZInterCard)
}

const zsetType = codec.TypeZSet

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

// run implements PopOp for the blocking forms and ZMPOP.
func (op *zpopOp) Run(ev Events, tx *tiering.Tx, db int, key []byte, w *resp.Writer) (bool, error) {
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
	return true, z.Close()
}

func cmdZPop(c *Client, args [][]byte, max bool) {
	if len(args) > 3 {
		c.err(strops.ErrSyntax)
		return
	}
	count := int64(1)
	if len(args) == 3 {
		n, ok := cstr.ParseInt(args[2])
		if !ok || n < 0 {
			c.err("ERR value is out of range, must be positive")
			return
		}
		count = n
	}
	tx := c.begin()
	z, ok := c.openZSet(tx, args[1], false)
	if !ok {
		return
	}
	if z == nil || count == 0 {
		c.w.Array(0)
		c.commit(tx)
		return
	}
	op := zpopOp{max: max}
	popped, err := op.pop(z, count)
	if err != nil {
		c.txErr(tx, err)
		return
	}
	nested := len(args) == 3 && c.w.RESP3()
	if nested {
		c.w.Array(len(popped))
	} else {
		c.w.Array(2 * len(popped))
	}
	// Redis: the reply's header, the event, the members, then "del".
	op.popEvent(c.events(), c.db, args[1])
	for _, m := range popped {
		writeScored(&c.w, bytesOfString(m.Member), m.Score, nested)
	}
	op.delIfEmpty(c.events(), c.db, args[1], z.Len())
	c.closeAndCommit(tx, z)
}

func cmdBZPop(c *Client, args [][]byte, max bool) {
	ms, ok := c.timeout(args[len(args)-1])
	if !ok {
		return
	}
	c.popOrBlock(&zpopOp{max: max, count: -1}, args[1:len(args)-1], ms)
}

// zsetEnds are ZMPOP's ends; newZSetMPop is its pop.
var zsetEnds = [2]string{"min", "max"}

func newZSetMPop(min bool, count int64) PopOp { return &zpopOp{max: !min, count: count, mpop: true} }

func cmdZRandMember(c *Client, args [][]byte) {
	if len(args) == 2 {
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
		if err := z.Random(1, true, func(m []byte, _ float64) { c.w.Bulk(m) }); err != nil {
			c.txErr(tx, err)
			return
		}
		c.commit(tx)
		return
	}
	n, distinct, ok := c.parseRandomCount(args[2])
	if !ok {
		return
	}
	if len(args) > 4 || (len(args) == 4 && !eqFold(args[3], "withscores")) {
		c.err(strops.ErrSyntax)
		return
	}
	withScores := len(args) == 4
	if withScores && n > (1<<63-1)/2 {
		c.err("ERR value is out of range")
		return
	}
	tx := c.begin()
	z, ok := c.openZSet(tx, args[1], false)
	if !ok {
		return
	}
	if z == nil {
		c.notifyKeyMiss(args[1])
	}
	if z == nil || n == 0 {
		c.w.Array(0)
		c.commit(tx)
		return
	}
	if distinct {
		n = min(n, z.Len())
	} else if n > maxRandomCount {
		c.txFail(tx, errRandomCount)
		return
	}
	if withScores && !c.w.RESP3() {
		c.w.Array(int(2 * n))
	} else {
		c.w.Array(int(n))
	}
	var got int64
	err := z.Random(n, distinct, func(m []byte, s float64) {
		got++
		if withScores {
			writeScored(&c.w, m, s, true)
		} else {
			c.w.Bulk(m)
		}
	})
	if c.streamed(tx, args[1], n, got, err) {
		c.commit(tx)
	}
}

func cmdZScan(c *Client, args [][]byte) {
	cursor, ok := c.scanCursor(args[2])
	if !ok {
		return
	}
	tx := c.begin()
	z, ok := c.openZSet(tx, args[1], false)
	if !ok {
		return
	}
	if z == nil {
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
		c.txErr(tx, err)
		return
	}
	c.scanReply(next, out)
	c.commit(tx)
}

// zsetOp is a ZUNION/ZINTER/ZDIFF operation.
type zsetOp uint8

const (
	zopUnion zsetOp = iota
	zopInter
	zopDiff
)

// aggregate is how ZUNION and ZINTER combine the scores of one member.
type aggregate uint8

const (
	aggSum aggregate = iota
	aggMin
	aggMax
)

// combine folds val into target as Redis's zunionInterAggregate does: a
// NaN sum is 0, and MIN/MAX keep target unless val compares below (above)
// it, so a NaN val is ignored.
func (a aggregate) combine(target, val float64) float64 {
	switch a {
	case aggMin:
		if val < target {
			return val
		}
		return target
	case aggMax:
		if val > target {
			return val
		}
		return target
	}
	s := target + val
	if math.IsNaN(s) { // inf + -inf
		return 0
	}
	return s
}

// opSource is one input of a set operation: a sorted set or a set (whose
// members score 1), nil when the key is missing.
type opSource struct {
	z      *tiering.ZSet
	s      *tiering.Coll
	weight float64
}

func (o *opSource) len() int64 {
	switch {
	case o.z != nil:
		return o.z.Len()
	case o.s != nil:
		return o.s.Len()
	}
	return 0
}

// each calls fn for every member with its (unweighted) score.
func (o *opSource) each(fn func(member []byte, score float64) bool) error {
	switch {
	case o.z != nil:
		return o.z.Members(fn)
	case o.s != nil:
		return o.s.Each(func(f, _ []byte) bool { return fn(f, 1) })
	}
	return nil
}

// score returns member's (unweighted) score, if it is a member.
func (o *opSource) score(member []byte) (float64, bool, error) {
	switch {
	case o.z != nil:
		return o.z.Score(member)
	case o.s != nil:
		ok, err := o.s.Has(member)
		return 1, ok, err
	}
	return 0, false, nil
}

// weighted is weight*score, 0 where that is NaN (0 * inf), as Redis does.
func weighted(w, s float64) float64 {
	v := w * s
	if math.IsNaN(v) {
		return 0
	}
	return v
}

// openSources looks up a set operation's input keys (sorted sets or sets).
func (c *Client) openSources(tx *tiering.Tx, keys [][]byte) ([]opSource, bool) {
	src := make([]opSource, len(keys))
	for i, k := range keys {
		src[i].weight = 1
		e, err := tx.Peek(c.db, k)
		if err != nil {
			c.txErr(tx, err)
			return nil, false
		}
		switch {
		case e == nil:
			c.notifyKeyMiss(k)
		case e.Type == codec.TypeZSet:
			src[i].z = tx.PeekZSet(c.db, k, e)
		case e.Type == codec.TypeSet:
			src[i].s = tx.PeekColl(c.db, k, e)
		default:
			c.txFail(tx, errWrongType)
			return nil, false
		}
	}
	return src, true
}

// compute runs op over src and returns the result in ZRANGE order.
func compute(op zsetOp, src []opSource, agg aggregate) ([]tiering.Member, error) {
	if len(src) == 0 {
		return nil, nil
	}
	if op != zopDiff {
		// Smallest first, as Redis does (its order of summing).
		slices.SortStableFunc(src, func(a, b opSource) int { return cmp.Compare(a.len(), b.len()) })
	}
	acc := map[string]float64{}
	var err error
	switch op {
	case zopUnion:
		for i := range src {
			w := src[i].weight
			err = src[i].each(func(m []byte, s float64) bool {
				v := weighted(w, s)
				if cur, ok := acc[string(m)]; ok {
					acc[string(m)] = agg.combine(cur, v)
				} else {
					acc[string(m)] = v
				}
				return true
			})
			if err != nil {
				return nil, err
			}
		}
	case zopInter:
		if src[0].len() == 0 {
			return nil, nil
		}
		var ierr error
		err = src[0].each(func(m []byte, s float64) bool {
			v := weighted(src[0].weight, s)
			for j := 1; j < len(src); j++ {
				sj, ok, err := src[j].score(m)
				if err != nil {
					ierr = err
					return false
				}
				if !ok {
					return true
				}
				// Unlike the first term, later ones are not cleared of NaN.
				v = agg.combine(v, src[j].weight*sj)
			}
			acc[string(m)] = v
			return true
		})
		if err == nil {
			err = ierr
		}
	case zopDiff:
		var ierr error
		err = src[0].each(func(m []byte, s float64) bool {
			for j := 1; j < len(src); j++ {
				_, ok, err := src[j].score(m)
				if err != nil {
					ierr = err
					return false
				}
				if ok {
					return true
				}
			}
			acc[string(m)] = s
			return true
		})
		if err == nil {
			err = ierr
		}
	}
	if err != nil {
		return nil, err
	}
	out := make([]tiering.Member, 0, len(acc))
	for m, s := range acc {
		out = append(out, tiering.Member{Member: m, Score: s})
	}
	slices.SortFunc(out, func(a, b tiering.Member) int {
		if c := cmp.Compare(a.Score, b.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Member, b.Member)
	})
	return out, nil
}

// zsetStoreEvents are the events of ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE.
var zsetStoreEvents = [...]string{zopUnion: "zunionstore", zopInter: "zinterstore", zopDiff: "zdiffstore"}

// cmdZSetOp is ZUNION, ZINTER, ZDIFF and their STORE forms.
func cmdZSetOp(c *Client, args [][]byte, op zsetOp, store bool) {
	at := 1
	if store {
		at = 2
	}
	numkeys, ok := cstr.ParseInt(args[at])
	if !ok {
		c.err(strops.ErrNotInteger)
		return
	}
	if numkeys < 1 {
		c.err("ERR at least 1 input key is needed for '" + strops.LowerASCII(args[0]) + "' command")
		return
	}
	if numkeys > int64(len(args)-at-1) {
		c.err(strops.ErrSyntax)
		return
	}
	keys := args[at+1 : at+1+int(numkeys)]
	tx := c.begin()
	src, ok := c.openSources(tx, keys)
	if !ok {
		return
	}
	agg, withScores := aggSum, false
	for j := at + 1 + int(numkeys); j < len(args); j++ {
		left := len(args) - j
		switch {
		case op != zopDiff && left >= len(keys)+1 && eqFold(args[j], "weights"):
			for i := range src {
				j++
				w, ok := cstr.ParseFloat(args[j])
				if !ok {
					c.txFail(tx, "ERR weight value is not a float")
					return
				}
				src[i].weight = w
			}
		case op != zopDiff && left >= 2 && eqFold(args[j], "aggregate"):
			j++
			switch {
			case eqFold(args[j], "sum"):
				agg = aggSum
			case eqFold(args[j], "min"):
				agg = aggMin
			case eqFold(args[j], "max"):
				agg = aggMax
			default:
				c.txFail(tx, strops.ErrSyntax)
				return
			}
		case !store && eqFold(args[j], "withscores"):
			withScores = true
		default:
			c.txFail(tx, strops.ErrSyntax)
			return
		}
	}
	res, err := compute(op, src, agg)
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if store {
		storeZSet(c, tx, args[1], res, false, false, zsetStoreEvents[op])
		return
	}
	if withScores && !c.w.RESP3() {
		c.w.Array(2 * len(res))
	} else {
		c.w.Array(len(res))
	}
	for _, m := range res {
		if withScores {
			writeScored(&c.w, bytesOfString(m.Member), m.Score, true)
		} else {
			c.w.BulkString(m.Member)
		}
	}
	c.commit(tx)
}

func cmdZInterCard(c *Client, args [][]byte) {
	numkeys, ok := cstr.ParseInt(args[1])
	if !ok {
		c.err(strops.ErrNotInteger)
		return
	}
	if numkeys < 1 {
		c.err("ERR at least 1 input key is needed for 'zintercard' command")
		return
	}
	if numkeys > int64(len(args)-2) {
		c.err(strops.ErrSyntax)
		return
	}
	keys := args[2 : 2+numkeys]
	tx := c.begin()
	src, ok := c.openSources(tx, keys)
	if !ok {
		return
	}
	limit := int64(0)
	for j := 2 + int(numkeys); j < len(args); j++ {
		if len(args)-j >= 2 && eqFold(args[j], "limit") {
			j++
			n, ok := cstr.ParseInt(args[j])
			if !ok || n < 0 {
				c.txFail(tx, "ERR LIMIT can't be negative")
				return
			}
			limit = n
			continue
		}
		c.txFail(tx, strops.ErrSyntax)
		return
	}
	slices.SortStableFunc(src, func(a, b opSource) int { return cmp.Compare(a.len(), b.len()) })
	var n int64
	var ierr error
	err := src[0].each(func(m []byte, _ float64) bool {
		for j := 1; j < len(src); j++ {
			_, ok, err := src[j].score(m)
			if err != nil {
				ierr = err
				return false
			}
			if !ok {
				return true
			}
		}
		n++
		return limit == 0 || n < limit
	})
	if err == nil {
		err = ierr
	}
	if err != nil {
		c.txErr(tx, err)
		return
	}
	c.w.Int(n)
	c.commit(tx)
}

// zsetEncoding reports the encoding Redis 7.0 would hold z in: listpack
// until the set once grew past 128 members or held a member over 64 bytes,
// skiplist from then on.
func zsetEncoding(z *tiering.ZSet) (string, error) {
	if z.Skiplist() {
		return "skiplist", nil
	}
	return "listpack", nil
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

// popEvent publishes a sorted-set pop's event, "zpopmin" or "zpopmax".
func (op *zpopOp) popEvent(ev Events, db int, key []byte) {
	event := "zpopmin"
	if op.max {
		event = "zpopmax"
	}
	ev.Notify(db, NotifyZSet, event, key)
}

// delIfEmpty publishes "del" for a sorted set a pop left empty (left
// members remain).
func (op *zpopOp) delIfEmpty(ev Events, db int, key []byte, left int64) {
	if left == 0 {
		ev.Notify(db, NotifyGeneric, "del", key)
	}
}
