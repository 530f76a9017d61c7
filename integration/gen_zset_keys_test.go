package integration

import (
	"strconv"
	"strings"
	"time"
)

// Sorted-set generator (see gen_zset_test.go): the big, mid-sized and many
// small zsets that move between tiers, keyspace commands on zsets (RENAME,
// COPY, short expiries), commands across types, and wrong arities.

// genBigZSet grows, shrinks, reads or combines a big zset.
func (g *gen) genBigZSet() {
	k := "bz:" + strconv.Itoa(g.bigIndex())
	other := "bz:" + strconv.Itoa(g.bigIndex())
	switch g.r.Intn(14) {
	case 0, 1, 2, 3, 4:
		// A burst of 1-3 ZADDs of 100 pairs each.
		for b := 1 + g.r.Intn(3); b > 0; b-- {
			args := []string{"ZADD", k}
			if g.chance(0.2) {
				args = append(args, g.pick([]string{"NX", "XX", "GT", "LT", "CH", "XX CH", "GT CH"}))
				args = append(args[:len(args)-1], strings.Fields(args[len(args)-1])...)
			}
			long := g.chance(0.15)
			for j := 0; j < 100; j++ {
				m := g.zmember(k)
				if long && g.chance(0.3) {
					m = g.window(20 + g.r.Intn(100))
				}
				args = append(args, g.zvalidScore(k), m)
			}
			g.emit(args...)
		}
	case 5:
		if g.chance(0.5) {
			g.genZRange(false)
			return
		}
		start, stop := g.zrankRange(k)
		args := []string{g.pick([]string{"ZRANGE", "ZREVRANGE"}), k, start, stop}
		if g.chance(0.5) {
			args = append(args, "WITHSCORES")
		}
		g.emit(args...)
	case 6:
		if g.chance(0.7) {
			g.genZRangeByScore(k)
		} else {
			min, max := g.zscoreRange(k)
			g.emit("ZCOUNT", k, min, max)
		}
	case 7:
		switch g.r.Intn(4) {
		case 0:
			g.emit(append([]string{"ZMSCORE", k}, g.zmembers(k, 10, 30)...)...)
		case 1:
			g.emit("ZSCORE", k, g.zmember(k))
		default:
			g.emit(g.pick([]string{"ZRANK", "ZREVRANK"}), k, g.zmember(k))
		}
	case 8:
		switch g.r.Intn(3) {
		case 0:
			g.emit(append([]string{"ZREM", k}, g.zmembers(k, 20, 60)...)...)
		case 1:
			g.genZRemRangeByRank(k)
		default:
			g.genZRemRangeByScore(k)
		}
	case 9:
		switch g.r.Intn(3) {
		case 0:
			g.emit("ZINCRBY", k, g.pick([]string{"1", "-1", "0.5", "100", "-100"}), g.zmember(k))
		case 1:
			g.emit(g.pick([]string{"ZPOPMIN", "ZPOPMAX"}), k, strconv.Itoa(1+g.r.Intn(50)))
		default:
			g.emit("ZMPOP", "2", k, other, g.pick(zgenMinMax[:2]), "COUNT", strconv.Itoa(1+g.r.Intn(30)))
		}
	case 10:
		switch g.r.Intn(6) {
		case 0, 1:
			args := []string{g.pick([]string{"ZUNIONSTORE", "ZINTERSTORE"}), "zs:store", "2", k, other}
			if g.chance(0.4) {
				args = append(args, "WEIGHTS", g.pick(zgenWeights[:8]), g.pick(zgenWeights[:8]))
			}
			if g.chance(0.4) {
				args = append(args, "AGGREGATE", g.pick([]string{"SUM", "MIN", "MAX"}))
			}
			g.emit(args...)
			g.zreadBack("zs:store")
		case 2:
			g.emit("ZDIFFSTORE", "zs:store", "2", k, other)
			g.zreadBack("zs:store")
		case 3:
			g.emit("ZINTERCARD", "2", k, other, "LIMIT", g.pick([]string{"0", "10", "1000"}))
		case 4:
			g.emit(g.pick([]string{"ZUNION", "ZINTER", "ZDIFF"}), "2", k, other, "WITHSCORES")
		default:
			start, stop := g.zrankRange(k)
			g.emit("ZRANGESTORE", "zs:store", k, start, stop)
			g.zreadBack("zs:store")
		}
	case 11:
		switch g.r.Intn(4) {
		case 0:
			g.emit("SISMEMBER", k, "x") // WRONGTYPE on a big zset
		case 1:
			g.emit("TYPE", k)
		case 2:
			g.emit("OBJECT", "ENCODING", k)
		default:
			g.emit("ZCARD", k)
		}
	case 12:
		g.emitKind(opZRandom, "ZRANDMEMBER", k, g.pick([]string{"5", "-5", "50", "5000"}), "WITHSCORES")
	default:
		g.emitKind(opZScan, append([]string{"ZSCAN", k, "0"}, g.zscanOpts(false)...)...)
	}
}

// genBigLexZSet grows, reads or shrinks a big same-score zset by lex
// range.
func (g *gen) genBigLexZSet() {
	k := "bzl:" + strconv.Itoa(g.r.Intn(zgenBigLex))
	switch g.r.Intn(10) {
	case 0, 1, 2:
		args := []string{"ZADD", k}
		if g.chance(0.2) {
			args = append(args, g.pick([]string{"NX", "XX", "CH", "GT"}))
		}
		for j := 0; j < 100; j++ {
			args = append(args, "0", "m:"+strconv.Itoa(g.r.Intn(zgenBigNS)))
		}
		g.emit(args...)
	case 3, 4:
		g.genZRangeByLex(k)
	case 5:
		min, max := g.zlexRange(k)
		g.emit("ZLEXCOUNT", k, min, max)
	case 6:
		g.genZRemRangeByLex(k)
	case 7:
		min, max := g.zlexRange(k)
		args := []string{"ZRANGE", k, min, max, "BYLEX"}
		if g.chance(0.5) {
			args = []string{"ZRANGE", k, max, min, "BYLEX", "REV"}
		}
		g.emit(append(args, "LIMIT", strconv.Itoa(g.r.Intn(100)), strconv.Itoa(1+g.r.Intn(50)))...)
	case 8:
		min, max := g.zlexRange(k)
		dst := g.pick(zgenLexKeys)
		g.emit("ZRANGESTORE", dst, k, min, max, "BYLEX", "LIMIT", "0", strconv.Itoa(1+g.r.Intn(30)))
		g.zreadBack(dst)
	default:
		switch g.r.Intn(4) {
		case 0:
			g.emit("ZCARD", k)
		case 1:
			g.emit("OBJECT", "ENCODING", k)
		case 2:
			g.emit("ZRANK", k, g.zmember(k))
		default:
			g.emitKind(opZScan, append([]string{"ZSCAN", k, "0"}, g.zscanOpts(false)...)...)
		}
	}
}

// genMidZSet grows a zmid zset across Redis's 128-entry listpack limit,
// shrinks it and reads its encoding; now and then deletes it so it starts
// over as a listpack.
func (g *gen) genMidZSet() {
	k := g.pick(zgenMidKeys)
	switch g.r.Intn(10) {
	case 0, 1, 2, 3:
		args := []string{"ZADD", k}
		for j, n := 0, 15+g.r.Intn(25); j < n; j++ {
			args = append(args, strconv.Itoa(g.r.Intn(100)), "n:"+strconv.Itoa(g.r.Intn(zgenMidNS)))
		}
		g.emit(args...)
	case 4:
		g.emit("ZREMRANGEBYRANK", k, "0", strconv.Itoa(g.r.Intn(30)))
	case 5, 6:
		g.emit("OBJECT", "ENCODING", k)
	case 7:
		g.emit("ZCARD", k)
	case 8:
		g.emit("ZRANGE", k, "0", "-1", "WITHSCORES")
	default:
		if g.chance(0.2) {
			g.emit("DEL", k)
		} else {
			g.emit("ZRANGEBYSCORE", k, strconv.Itoa(g.r.Intn(100)), "+inf", "LIMIT", "0", "10")
		}
	}
}

// genManyZSets writes or reads one of many small zsets, which together
// exceed the hot tier.
func (g *gen) genManyZSets() {
	k := "zm:" + strconv.Itoa(g.r.Intn(zgenManyZSets))
	switch g.r.Intn(8) {
	case 0, 1, 2:
		args := []string{"ZADD", k}
		for j, n := 0, 1+g.r.Intn(8); j < n; j++ {
			m := g.zmember(k)
			if g.chance(0.08) {
				m = g.window(65 + g.r.Intn(536))
			}
			args = append(args, g.zvalidScore(k), m)
		}
		g.emit(args...)
	case 3:
		g.emit("ZRANGE", k, "0", "-1", "WITHSCORES")
	case 4:
		g.emit("ZCARD", k)
	case 5:
		g.emit(g.pick([]string{"ZPOPMIN", "ZPOPMAX"}), k)
	case 6:
		g.emit("ZSCORE", k, g.zmember(k))
	default:
		g.emit("ZRANGEBYSCORE", k, "-inf", "+inf", "WITHSCORES")
	}
}

// zrenameDst is a destination for RENAME or COPY from src: a lex key only
// when src is one; mostly not a big zset.
func (g *gen) zrenameDst(src string) string {
	switch {
	case zgenIsLex(src) && g.chance(0.5):
		return g.zlexPool()
	case g.chance(0.1):
		return src
	case g.chance(0.2):
		return g.zkey()
	}
	return g.zsmallKey()
}

// genZRename renames within and across the pools.
func (g *gen) genZRename() {
	src := g.zreadKey()
	g.emit(g.pick([]string{"RENAME", "RENAMENX"}), src, g.zrenameDst(src))
}

// genZCopy is genCopyOf with zrenameDst's destinations.
func (g *gen) genZCopy() {
	src := g.zreadKey()
	dst := g.zrenameDst(src)
	args := []string{"COPY", src, dst}
	if g.chance(0.4) {
		args = append(args, "DB", g.pick([]string{"0", "1", "2", "2", "16", "-1", "x"}))
	}
	if g.chance(0.4) {
		args = append(args, "REPLACE")
	}
	if g.chance(0.03) {
		args = append(args, "FOO")
	}
	g.emit(args...)
}

// genZShortExpiry gives a zset a 1-50 ms expiry and sleeps past it, then
// reads the key back.
func (g *gen) genZShortExpiry() {
	k := g.pick(zgenSmallKeys)
	if g.chance(0.2) {
		k = g.pick(zgenLexKeys)
	}
	ms := 1 + g.r.Intn(50)
	g.emit("ZADD", k, g.zvalidScore(k), g.zmember(k))
	g.emit("PEXPIRE", k, strconv.Itoa(ms))
	g.queue = append(g.queue, op{Sleep: time.Duration(ms+30) * time.Millisecond})
	if g.chance(0.2) {
		g.emit("ZRANGE", k, "0", "-1", "WITHSCORES")
	} else {
		g.emit(g.pick([]string{"EXISTS", "TYPE", "ZCARD", "TTL"}), k)
	}
}

// genZCrossType uses string, hash, set and list commands on zset keys and
// creates strings, a hash, sets and a list where zset commands will find
// them.
func (g *gen) genZCrossType() {
	switch g.r.Intn(14) {
	case 0, 1:
		g.emit("SET", g.pick(append([]string{zgenLexStr}, zgenStrKeys...)), g.value())
	case 2:
		g.emit("HSET", zgenHashKey, g.pick([]string{"f1", "f2", "a"}), g.value())
	case 3, 4:
		g.emit("SADD", g.pick(zgenSetKeys), g.pick(zgenMembers), g.pick(zgenMembers), g.pick(zgenMembers))
	case 5:
		if g.cfg.Lists {
			g.emit("RPUSH", zgenListKey, g.pick(zgenMembers))
		} else {
			g.emit("TYPE", zgenListKey)
		}
	case 6:
		if g.chance(0.25) {
			g.emit("GETRANGE", g.zreadKey(), "0", "-1")
		} else {
			g.emit(g.pick([]string{"GET", "STRLEN", "GETDEL"}), g.zreadKey())
		}
	case 7:
		if g.chance(0.5) {
			g.emit(g.pick([]string{"INCR", "DECR"}), g.zreadKey())
		} else {
			g.emit(g.pick([]string{"APPEND", "SETNX", "GETSET"}), g.zreadKey(), "1")
		}
	case 8:
		if g.chance(0.5) {
			g.emit("HGET", g.zreadKey(), "f1")
		} else {
			g.emit("HSET", g.zsmallKey(), "f1", "v")
		}
	case 9:
		g.emit(g.pick([]string{"HLEN", "HGETALL", "SCARD", "SMEMBERS"}), g.zreadKey())
	case 10:
		if g.chance(0.5) {
			g.emit("SADD", g.zsmallKey(), g.pick(zgenMembers))
		} else {
			g.emit("SISMEMBER", g.zreadKey(), g.pick(zgenMembers))
		}
	case 11:
		if g.cfg.Lists {
			switch k := g.zreadKey(); g.r.Intn(3) {
			case 0:
				g.emit("LPUSH", g.zsmallKey(), "e")
			case 1:
				g.emit("LLEN", k)
			default:
				g.emit("LRANGE", k, "0", "-1")
			}
		} else {
			g.emit("MGET", g.zreadKey(), g.pick(zgenStrKeys))
		}
	case 12:
		g.emit("MGET", g.zreadKey(), g.pick(zgenStrKeys), g.zreadKey())
	default:
		// Overwrite a zset with a string, now and then.
		if g.chance(0.3) {
			g.emit("SET", g.pick(append(append([]string{}, zgenSmallKeys...), zgenLexKeys...)), g.value())
		} else {
			g.emit("TYPE", g.pick([]string{zgenHashKey, zgenSetKeys[0], "str1", zgenLexStr}))
		}
	}
}

// genZWrongArity calls a zset command with an argument count its arity
// rejects (Redis checks arity before anything else, so no blocking command
// waits).
func (g *gen) genZWrongArity() {
	name := g.pick(zgenArityNames)
	a := zgenArity[name]
	var n int // total words including the name
	if a > 0 {
		for n = g.r.Intn(a + 3); n == a || n == 0; n = g.r.Intn(a + 3) {
		}
	} else {
		n = 1 + g.r.Intn(-a-1)
	}
	args := []string{strings.ToUpper(name)}
	if g.chance(0.3) {
		args[0] = name
	}
	for len(args) < n {
		if len(args) == 1 {
			args = append(args, g.zreadKey())
		} else {
			args = append(args, g.pick(zgenMembers))
		}
	}
	g.emit(args...)
}
