package commands

import (
	"cmp"
	"math"
	"slices"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// Sorted-set algebra: ZUNION, ZINTER, ZDIFF, their STORE forms and
// ZINTERCARD, over sorted sets and sets (whose members score 1).

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

// len is the source's number of members (0 for a missing key).
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

// openSources looks up a set operation's input keys (sorted sets or sets),
// publishing "keymiss" for missing ones; any other type is WRONGTYPE.
func openSources(x *server.Ctx, tx *tiering.Tx, keys [][]byte) ([]opSource, error) {
	src := make([]opSource, len(keys))
	for i, k := range keys {
		src[i].weight = 1
		e, err := tx.Peek(x.DB(), k)
		if err != nil {
			return nil, err
		}
		switch {
		case e == nil:
			x.NotifyKeyMiss(k)
		case e.Type == codec.TypeZSet:
			src[i].z = tx.PeekZSet(x.DB(), k, e)
		case e.Type == codec.TypeSet:
			src[i].s = tx.PeekColl(x.DB(), k, e)
		default:
			return nil, resp.ErrWrongType
		}
	}
	return src, nil
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

// cmdZSetOp is ZUNION, ZINTER, ZDIFF and their STORE forms. As Redis, the
// options are parsed after the keys are looked up (WRONGTYPE first).
func cmdZSetOp(x *server.Ctx, args [][]byte, op zsetOp, store bool) error {
	at := 1
	if store {
		at = 2
	}
	numkeys, ok := cstr.ParseInt(args[at])
	if !ok {
		return resp.Err(strops.ErrNotInteger)
	}
	if numkeys < 1 {
		return resp.Err("ERR at least 1 input key is needed for '" + strops.LowerASCII(args[0]) + "' command")
	}
	if numkeys > int64(len(args)-at-1) {
		return resp.Err(strops.ErrSyntax)
	}
	keys := args[at+1 : at+1+int(numkeys)]
	return x.Update(func(tx *tiering.Tx) error {
		src, err := openSources(x, tx, keys)
		if err != nil {
			return err
		}
		agg, withScores := aggSum, false
		for j := at + 1 + int(numkeys); j < len(args); j++ {
			left := len(args) - j
			switch {
			case op != zopDiff && left >= len(keys)+1 && cstr.EqualFold(args[j], "weights"):
				for i := range src {
					j++
					w, ok := cstr.ParseFloat(args[j])
					if !ok {
						return resp.Err("ERR weight value is not a float")
					}
					src[i].weight = w
				}
			case op != zopDiff && left >= 2 && cstr.EqualFold(args[j], "aggregate"):
				j++
				switch {
				case cstr.EqualFold(args[j], "sum"):
					agg = aggSum
				case cstr.EqualFold(args[j], "min"):
					agg = aggMin
				case cstr.EqualFold(args[j], "max"):
					agg = aggMax
				default:
					return resp.Err(strops.ErrSyntax)
				}
			case !store && cstr.EqualFold(args[j], "withscores"):
				withScores = true
			default:
				return resp.Err(strops.ErrSyntax)
			}
		}
		res, err := compute(op, src, agg)
		if err != nil {
			return err
		}
		if store {
			return storeZSet(x, tx, args[1], res, false, false, zsetStoreEvents[op])
		}
		if withScores && !x.W.RESP3() {
			x.W.Array(2 * len(res))
		} else {
			x.W.Array(len(res))
		}
		for _, m := range res {
			if withScores {
				writeScored(x.W, bytesOfString(m.Member), m.Score, true)
			} else {
				x.W.BulkString(m.Member)
			}
		}
		return nil
	})
}

// cmdZInterCard is ZINTERCARD numkeys key... [LIMIT n]: the size of the
// intersection, counting stopping at n (0: no limit).
func cmdZInterCard(x *server.Ctx, args [][]byte) error {
	numkeys, ok := cstr.ParseInt(args[1])
	if !ok {
		return resp.Err(strops.ErrNotInteger)
	}
	if numkeys < 1 {
		return resp.Err("ERR at least 1 input key is needed for 'zintercard' command")
	}
	if numkeys > int64(len(args)-2) {
		return resp.Err(strops.ErrSyntax)
	}
	keys := args[2 : 2+numkeys]
	return x.View(func(tx *tiering.Tx) error {
		src, err := openSources(x, tx, keys)
		if err != nil {
			return err
		}
		limit := int64(0)
		for j := 2 + int(numkeys); j < len(args); j++ {
			if len(args)-j >= 2 && cstr.EqualFold(args[j], "limit") {
				j++
				n, ok := cstr.ParseInt(args[j])
				if !ok || n < 0 {
					return resp.Err("ERR LIMIT can't be negative")
				}
				limit = n
				continue
			}
			return resp.Err(strops.ErrSyntax)
		}
		slices.SortStableFunc(src, func(a, b opSource) int { return cmp.Compare(a.len(), b.len()) })
		var n int64
		var ierr error
		err = src[0].each(func(m []byte, _ float64) bool {
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
			return err
		}
		x.W.Int(n)
		return nil
	})
}
