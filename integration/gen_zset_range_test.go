package integration

import (
	"strconv"
	"strings"
)

// Sorted-set generator (see gen_zset_test.go): ranks, score and lex bounds,
// LIMIT and store destinations, and the ZRANGE family and ZREMRANGEBY*
// commands built from them.

// zrank is a rank index for k: mostly within (or just outside) its likely
// size, sometimes far out of range or not an integer.
func (g *gen) zrank(k string) string {
	switch n := g.r.Intn(100); {
	case n < 4:
		return g.pick(lgenIndexBad)
	case n < 9:
		return g.pick(lgenIndexFar)
	case zgenIsBig(k) && n < 55:
		return strconv.Itoa(g.r.Intn(3500))
	case zgenIsBig(k) && n < 90:
		return strconv.Itoa(-1 - g.r.Intn(3500))
	}
	return strconv.Itoa(g.r.Intn(13) - 6)
}

// zrankRange is a start and stop for k: mostly a non-empty window, on a
// big zset a short one.
func (g *gen) zrankRange(k string) (string, string) {
	switch g.r.Intn(10) {
	case 0:
		return "0", "-1"
	case 1:
		return g.pick([]string{"1", "0", "-3", "2"}), g.pick([]string{"-2", "-1", "1", "0"})
	case 2:
		return g.pick([]string{"5", "-1", "3", "100"}), g.pick([]string{"2", "-2", "0", "-100"})
	}
	if zgenIsBig(k) && g.chance(0.8) {
		s := g.r.Intn(3000) - 1500
		return strconv.Itoa(s), strconv.Itoa(s + g.r.Intn(100))
	}
	start, stop := g.zrank(k), g.zrank(k)
	a, errA := strconv.Atoi(start)
	b, errB := strconv.Atoi(stop)
	if errA == nil && errB == nil && (a < 0) == (b < 0) && a > b && g.chance(0.7) {
		start, stop = stop, start
	}
	return start, stop
}

// zscoreBound is one end of a score range for k.
func (g *gen) zscoreBound(k string) string {
	switch n := g.r.Intn(100); {
	case n < 3:
		return g.pick(zgenScoreBoundsBad)
	case n < 5:
		return g.pick(zgenScoreBoundsOdd)
	case zgenIsBig(k) && n < 85:
		b := strconv.Itoa(g.r.Intn(10000))
		if g.chance(0.3) {
			b = "(" + b
		}
		return b
	case n < 80:
		return g.pick(zgenScoreBounds)
	default:
		b := strconv.Itoa(g.r.Intn(25) - 5)
		if g.chance(0.3) {
			b = "(" + b
		}
		return b
	}
}

// zscoreRange is a min and max for k, mostly in that order; on a big zset
// mostly a narrow window.
func (g *gen) zscoreRange(k string) (string, string) {
	if zgenIsBig(k) && g.chance(0.6) {
		lo := g.r.Intn(10000)
		min, max := strconv.Itoa(lo), strconv.Itoa(lo+g.r.Intn(400))
		if g.chance(0.3) {
			min = "(" + min
		}
		if g.chance(0.3) {
			max = "(" + max
		}
		return min, max
	}
	if g.chance(0.15) {
		return g.pick([]string{"-inf", "(-inf", "-1e300"}), g.pick([]string{"+inf", "inf", "(+inf", "1e300"})
	}
	min, max := g.zscoreBound(k), g.zscoreBound(k)
	if scoreBoundValue(min) > scoreBoundValue(max) && g.chance(0.7) {
		min, max = max, min
	}
	return min, max
}

// scoreBoundValue is the number in a score bound, for ordering a range
// (NaN, which compares false, for one that does not parse).
func scoreBoundValue(b string) float64 {
	b = strings.TrimPrefix(b, "(")
	f, err := strconv.ParseFloat(b, 64)
	if err != nil {
		return 0
	}
	return f
}

// zlexBound is one end of a lex range for lex key k.
func (g *gen) zlexBound(k string) string {
	switch n := g.r.Intn(100); {
	case n < 4:
		return g.pick(zgenLexBoundsBad)
	case strings.HasPrefix(k, "bzl:") && n < 85:
		return g.pick([]string{"[", "("}) + "m:" + strconv.Itoa(g.r.Intn(zgenBigNS))
	default:
		return g.pick(zgenLexBounds)
	}
}

// zlexRange is a min and max for k, mostly in that order.
func (g *gen) zlexRange(k string) (string, string) {
	min, max := g.zlexBound(k), g.zlexBound(k)
	if lexBoundKey(min) > lexBoundKey(max) && g.chance(0.7) {
		min, max = max, min
	}
	return min, max
}

// lexBoundKey orders lex bounds: "-" first, "+" last, others by content.
func lexBoundKey(b string) string {
	switch {
	case b == "-":
		return ""
	case b == "+":
		return "\xff\xff\xff"
	case len(b) > 0:
		return "\x01" + b[1:]
	}
	return b
}

// zlimit is a LIMIT offset and count for k: mostly valid, now and then not
// an integer.
func (g *gen) zlimit(k string) []string {
	off, cnt := g.pick(zgenLimitOffsets), g.pick(zgenLimitCounts)
	if zgenIsBig(k) && g.chance(0.6) {
		off, cnt = strconv.Itoa(g.r.Intn(30)), strconv.Itoa(1+g.r.Intn(100))
		if g.chance(0.2) {
			off = strconv.Itoa(g.r.Intn(2000))
		}
	}
	if g.chance(0.05) {
		if g.chance(0.5) {
			off = g.pick(zgenLimitBad)
		} else {
			cnt = g.pick(zgenLimitBad)
		}
	}
	return []string{g.pick([]string{"LIMIT", "LIMIT", "limit"}), off, cnt}
}

// zstoreDst is a destination for a store command: a lex-pool key only
// when lexOK (the result's scores are all 0), else a small zset, the store
// key, a many-small zset, a string or one of srcs that is not a lex key.
func (g *gen) zstoreDst(lexOK bool, srcs []string) string {
	if lexOK && g.chance(0.5) {
		return g.pick(zgenLexKeys)
	}
	var own []string
	for _, s := range srcs {
		if !zgenIsLex(s) && !zgenIsBig(s) {
			own = append(own, s)
		}
	}
	switch n := g.r.Intn(10); {
	case n < 2:
		return g.pick(zgenSmallKeys)
	case n < 6:
		return "zs:store"
	case n < 8 && len(own) > 0:
		return g.pick(own)
	case n < 9:
		return "zm:" + strconv.Itoa(g.r.Intn(zgenManyZSets))
	default:
		return g.pick(zgenStrKeys)
	}
}

// genZRange emits ZRANGE (or ZRANGESTORE) by rank, BYSCORE or BYLEX, with
// REV, LIMIT and WITHSCORES in any order, and now and then the
// combinations Redis rejects.
func (g *gen) genZRange(store bool) {
	mode := g.r.Intn(10) // 0-4 rank, 5-7 score, 8-9 lex
	var src string
	if mode >= 8 {
		src = g.zlexKey()
	} else {
		src = g.zreadKey()
	}
	rev := g.chance(0.3)
	var start, stop, by string
	switch {
	case mode < 5:
		start, stop = g.zrankRange(src)
	case mode < 8:
		start, stop = g.zscoreRange(src)
		by = "BYSCORE"
	default:
		start, stop = g.zlexRange(src)
		by = "BYLEX"
	}
	if rev && by != "" {
		start, stop = stop, start // REV takes max first
	}
	var opts [][]string
	if by != "" {
		opts = append(opts, []string{g.pick([]string{by, by, strings.ToLower(by)})})
	}
	if rev {
		opts = append(opts, []string{g.pick([]string{"REV", "REV", "rev"})})
	}
	if (by != "" && g.chance(0.35)) || g.chance(0.03) {
		opts = append(opts, g.zlimit(src))
	}
	if !store && ((by != "BYLEX" && g.chance(0.45)) || g.chance(0.03)) {
		opts = append(opts, []string{g.pick([]string{"WITHSCORES", "WITHSCORES", "withscores"})})
	}
	if g.chance(0.03) {
		// A repeated or stray option; BYLEX only on a lex key, where it
		// may win over BYSCORE (the last one given counts).
		junk := []string{"LIMIT 1", "FOO", "LIMIT", "WITHSCORES", "REV REV", "BYSCORE"}
		if zgenIsLex(src) {
			junk = append(junk, "BYSCORE BYLEX", "BYLEX")
		}
		opts = append(opts, strings.Fields(g.pick(junk)))
	}
	g.r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	args := []string{"ZRANGE", src, start, stop}
	if store {
		args = []string{"ZRANGESTORE", g.zstoreDst(zgenIsLex(src), []string{src}), src, start, stop}
	}
	for _, o := range opts {
		args = append(args, o...)
	}
	g.emit(args...)
	if store {
		g.zreadBack(args[1])
	}
}

// genZRevRange emits ZREVRANGE with or without WITHSCORES.
func (g *gen) genZRevRange(k string) {
	start, stop := g.zrankRange(k)
	args := []string{"ZREVRANGE", k, start, stop}
	if g.chance(0.5) {
		args = append(args, g.pick([]string{"WITHSCORES", "withscores"}))
	}
	if g.chance(0.03) {
		args = append(args, g.pick([]string{"LIMIT", "FOO", "WITHSCORES"}))
	}
	g.emit(args...)
}

// genZRangeByScore emits ZRANGEBYSCORE or ZREVRANGEBYSCORE (max first) with
// WITHSCORES and LIMIT in either order.
func (g *gen) genZRangeByScore(k string) {
	cmd := g.pick([]string{"ZRANGEBYSCORE", "ZREVRANGEBYSCORE"})
	min, max := g.zscoreRange(k)
	if cmd == "ZREVRANGEBYSCORE" {
		min, max = max, min
	}
	var opts [][]string
	if g.chance(0.5) {
		opts = append(opts, []string{g.pick([]string{"WITHSCORES", "withscores"})})
	}
	if g.chance(0.35) {
		opts = append(opts, g.zlimit(k))
	}
	if g.chance(0.03) {
		opts = append(opts, strings.Fields(g.pick([]string{"LIMIT 1", "FOO", "BYSCORE", "REV"})))
	}
	g.r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	args := []string{cmd, k, min, max}
	for _, o := range opts {
		args = append(args, o...)
	}
	g.emit(args...)
}

// genZRangeByLex emits ZRANGEBYLEX or ZREVRANGEBYLEX (max first) on a lex
// key, with or without LIMIT.
func (g *gen) genZRangeByLex(k string) {
	cmd := g.pick([]string{"ZRANGEBYLEX", "ZREVRANGEBYLEX"})
	min, max := g.zlexRange(k)
	if cmd == "ZREVRANGEBYLEX" {
		min, max = max, min
	}
	args := []string{cmd, k, min, max}
	if g.chance(0.35) {
		args = append(args, g.zlimit(k)...)
	}
	if g.chance(0.03) {
		args = append(args, g.pick([]string{"WITHSCORES", "FOO", "LIMIT"}))
	}
	g.emit(args...)
}

// genZRemRangeByRank removes a short run of ranks, so zsets stay
// populated.
func (g *gen) genZRemRangeByRank(k string) {
	var start, stop string
	switch n := g.r.Intn(10); {
	case n < 7 && zgenIsBig(k):
		s := g.r.Intn(3000)
		if g.chance(0.5) {
			s = -1 - s
		}
		start, stop = strconv.Itoa(s), strconv.Itoa(s+g.r.Intn(40))
	case n < 7:
		s := g.r.Intn(5)
		if g.chance(0.4) {
			s = -1 - s
		}
		start, stop = strconv.Itoa(s), strconv.Itoa(s+g.r.Intn(2))
	default:
		start, stop = g.zrankRange(k)
	}
	g.emit("ZREMRANGEBYRANK", k, start, stop)
}

// genZRemRangeByScore removes a narrow score range mostly.
func (g *gen) genZRemRangeByScore(k string) {
	var min, max string
	switch n := g.r.Intn(10); {
	case n < 6 && zgenIsBig(k):
		lo := g.r.Intn(10000)
		min, max = strconv.Itoa(lo), strconv.Itoa(lo+g.r.Intn(60))
	case n < 6:
		v := g.pick([]string{"0", "1", "2", "3", "5", "10", "-1", "0.1", "1.1", "2.5", "inf", "-inf"})
		min, max = v, v
		if g.chance(0.3) {
			min = "(" + min
		}
	default:
		min, max = g.zscoreRange(k)
	}
	g.emit("ZREMRANGEBYSCORE", k, min, max)
}

// genZRemRangeByLex removes a narrow lex range mostly.
func (g *gen) genZRemRangeByLex(k string) {
	var min, max string
	if strings.HasPrefix(k, "bzl:") && g.chance(0.8) {
		m := "m:" + strconv.Itoa(g.r.Intn(zgenBigNS))
		min, max = "["+m, "["+m+"5"
	} else if g.chance(0.6) {
		m := g.pick(zgenLexMembers)
		min, max = "["+m, g.pick([]string{"[", "("})+m
	} else {
		min, max = g.zlexRange(k)
	}
	g.emit("ZREMRANGEBYLEX", k, min, max)
}
