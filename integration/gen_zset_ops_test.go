package integration

import (
	"strconv"
	"strings"
)

// Sorted-set generator (see gen_zset_test.go): pops and blocking pops,
// ZRANDMEMBER, the set operations (ZUNION, ZINTER, ZDIFF and their STORE
// forms, ZINTERCARD), ZSCAN's options, SCAN over the keyspace, and SELECT.

// zpopCount is a count for ZPOPMIN/ZPOPMAX/ZMPOP: mostly valid,
// sometimes an error.
func (g *gen) zpopCount() string {
	if g.chance(0.08) {
		return g.pick(zgenPopCountsBad)
	}
	return g.pick(zgenPopCounts)
}

func (g *gen) genZPop(k string) {
	args := []string{g.pick([]string{"ZPOPMIN", "ZPOPMAX", "ZPOPMIN", "ZPOPMAX", "zpopmin"}), k}
	if g.chance(0.45) {
		args = append(args, g.zpopCount())
	}
	if g.chance(0.01) {
		args = append(args, "1") // too many arguments
	}
	g.emit(args...)
}

// zminMax is MIN or MAX in some spelling, or rarely a bad one.
func (g *gen) zminMax() string {
	if g.chance(0.03) {
		return g.pick(zgenMinMaxBad)
	}
	return g.pick(zgenMinMax)
}

// zmpopTail is the numkeys, keys, MIN|MAX and COUNT part of ZMPOP and
// BZMPOP; sometimes with a wrong numkeys, direction or count.
func (g *gen) zmpopTail(keys []string) []string {
	numkeys := strconv.Itoa(len(keys))
	if g.chance(0.06) {
		numkeys = g.pick([]string{"0", "-1", "abc", "5", "1.5", ""})
	}
	args := append([]string{numkeys}, keys...)
	args = append(args, g.zminMax())
	switch g.r.Intn(10) {
	case 0, 1, 2, 3:
		args = append(args, g.pick([]string{"COUNT", "count"}), g.zpopCount())
	case 4:
		if g.chance(0.3) {
			args = append(args, strings.Fields(g.pick([]string{"COUNT", "COUNT 1 COUNT 2", "FOO", "COUNT 1 FOO"}))...)
		}
	}
	return args
}

func (g *gen) genZMPop() {
	keys := make([]string, 1+g.r.Intn(3))
	for i := range keys {
		keys[i] = g.zreadKey()
	}
	g.emit(append([]string{"ZMPOP"}, g.zmpopTail(keys)...)...)
}

// genZBlocking emits a blocking pop that returns at once (after a ZADD to
// its first key), one that times out after zgenMaxWait on keys that are
// never written, or one Redis rejects for its arguments.
func (g *gen) genZBlocking() {
	cmd := g.pick([]string{"BZPOPMIN", "BZPOPMAX", "BZMPOP"})
	var keys []string
	var timeout string
	switch n := g.r.Intn(20); {
	case n < 14:
		k := g.zkey()
		if g.chance(0.2) {
			k = g.zlexPool()
		}
		g.emit("ZADD", k, g.zvalidScore(k), g.zmember(k))
		keys = []string{k}
		timeout = g.pick(lgenWaits)
	case n < 16:
		keys = []string{g.pick(zgenNoneKeys)}
		timeout = "0.01"
	default:
		keys = []string{g.zreadKey()}
		timeout = g.pick(lgenWaitsBad)
	}
	none := strings.HasPrefix(keys[0], "znone:")
	for i, extra := 0, g.r.Intn(3); i < extra; i++ {
		if none {
			keys = append(keys, g.pick(zgenNoneKeys))
		} else {
			keys = append(keys, g.zreadKey())
		}
	}
	if cmd == "BZMPOP" {
		g.emit(append([]string{cmd, timeout}, g.zmpopTail(keys)...)...)
		return
	}
	g.emit(append(append([]string{cmd}, keys...), timeout)...)
}

// genZRandMember emits ZRANDMEMBER with no count, a count, or a count and
// WITHSCORES; mostly valid, sometimes a bad count or option.
func (g *gen) genZRandMember(k string) {
	args := []string{"ZRANDMEMBER", k}
	if g.chance(0.75) {
		args = append(args, g.randCount())
		if g.chance(0.5) {
			args = append(args, g.pick([]string{"WITHSCORES", "WITHSCORES", "WITHSCORES", "withscores", "WITHSCORES", "WITHSCORES", "WITHSCORES", "WITHVALUES"}))
		}
	}
	if g.chance(0.02) {
		args = append(args, "x") // too many arguments or a bad option
	}
	g.emitKind(opZRandom, args...)
}

// zsrcKey is a source for ZUNION and friends: a zset of any pool, a set or
// another type.
func (g *gen) zsrcKey() string {
	switch n := g.r.Intn(100); {
	case n < 15:
		return g.pick(zgenSetKeys)
	case n < 27:
		return g.zlexKey()
	default:
		return g.zkey()
	}
}

// genZSetOp emits ZUNION, ZINTER, ZDIFF or their STORE forms over 1-3
// sources, with WEIGHTS, AGGREGATE and WITHSCORES in any order, and now and
// then a bad numkeys, weight or option. A store into a lex key reads only
// lex keys.
func (g *gen) genZSetOp() {
	cmd := g.pick([]string{"ZUNION", "ZINTER", "ZDIFF", "ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE",
		"ZUNION", "ZUNIONSTORE", "ZINTER"})
	store := strings.HasSuffix(cmd, "STORE")
	lexDst := store && g.chance(0.15)
	srcs := make([]string, 1+g.r.Intn(3))
	for i := range srcs {
		if lexDst {
			srcs[i] = g.pick(append([]string{zgenLexNone}, zgenLexKeys...))
		} else {
			srcs[i] = g.zsrcKey()
		}
	}
	numkeys := strconv.Itoa(len(srcs))
	if g.chance(0.05) {
		numkeys = g.pick([]string{"0", "-1", "abc", "9", "1.5", ""})
	}
	args := []string{cmd}
	if store {
		args = append(args, g.zstoreDst(lexDst, srcs))
	}
	args = append(args, numkeys)
	args = append(args, srcs...)
	diff := strings.HasPrefix(cmd, "ZDIFF")
	var opts [][]string
	if (!diff && g.chance(0.35)) || g.chance(0.02) {
		w := []string{g.pick([]string{"WEIGHTS", "WEIGHTS", "weights"})}
		n := len(srcs)
		if g.chance(0.04) {
			n += g.pick2(-1, 1)
		}
		for i := 0; i < n; i++ {
			if g.chance(0.03) {
				w = append(w, g.pick(zgenWeightsBad))
			} else {
				w = append(w, g.pick(zgenWeights))
			}
		}
		opts = append(opts, w)
	}
	if (!diff && g.chance(0.35)) || g.chance(0.02) {
		a := g.pick([]string{"SUM", "MIN", "MAX", "sum", "min", "max"})
		if g.chance(0.04) {
			a = g.pick([]string{"AVG", "", "SUMM"})
		}
		opts = append(opts, []string{g.pick([]string{"AGGREGATE", "aggregate"}), a})
	}
	if (!store && g.chance(0.5)) || g.chance(0.02) {
		opts = append(opts, []string{g.pick([]string{"WITHSCORES", "withscores"})})
	}
	if g.chance(0.02) {
		opts = append(opts, strings.Fields(g.pick([]string{"WEIGHTS", "AGGREGATE", "FOO", "LIMIT 1"})))
	}
	g.r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	for _, o := range opts {
		args = append(args, o...)
	}
	g.emit(args...)
	if store {
		g.zreadBack(args[1])
	}
}

// zreadBack now and then reads what a store command left in dst: its
// members and scores (the first 100), or its encoding.
func (g *gen) zreadBack(dst string) {
	switch n := g.r.Intn(10); {
	case n < 4:
		g.emit("ZRANGE", dst, "0", "99", "WITHSCORES")
	case n < 5:
		g.emit("OBJECT", "ENCODING", dst)
	}
}

// pick2 returns a or b.
func (g *gen) pick2(a, b int) int {
	if g.chance(0.5) {
		return a
	}
	return b
}

func (g *gen) genZInterCard() {
	keys := make([]string, 1+g.r.Intn(3))
	for i := range keys {
		keys[i] = g.zsrcKey()
	}
	numkeys := strconv.Itoa(len(keys))
	if g.chance(0.08) {
		numkeys = g.pick([]string{"0", "-1", "abc", "4", "9", "1.5", ""})
	}
	args := append([]string{"ZINTERCARD", numkeys}, keys...)
	switch g.r.Intn(8) {
	case 0, 1, 2:
		args = append(args, "LIMIT", g.pick([]string{"0", "1", "2", "5", "100"}))
	case 3:
		args = append(args, g.pick([]string{"LIMIT", "limit"}), g.pick([]string{"-1", "abc", "1.5", "9223372036854775807"}))
	case 4:
		args = append(args, strings.Fields(g.pick([]string{"LIMIT", "FOO", "LIMIT 1 LIMIT 2", "LIMIT 1 FOO", "WITHSCORES"}))...)
	}
	g.emit(args...)
}

// zscanOpts are MATCH and COUNT options for ZSCAN; COUNT 1 and 2 only on
// small zsets, so an iteration takes a bounded number of calls.
func (g *gen) zscanOpts(small bool) []string {
	var opts [][]string
	if g.chance(0.4) {
		opts = append(opts, []string{g.pick([]string{"MATCH", "match"}), g.pick(zgenPatterns)})
	}
	if g.chance(0.5) {
		counts := []string{"5", "10", "50", "500"}
		if small {
			counts = append(counts, "1", "2")
		}
		opts = append(opts, []string{g.pick([]string{"COUNT", "count"}), g.pick(counts)})
	}
	g.r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	var out []string
	for _, o := range opts {
		out = append(out, o...)
	}
	return out
}

// genZKeyScan iterates SCAN over the current database, mostly filtered by
// TYPE zset.
func (g *gen) genZKeyScan() {
	args := []string{"SCAN", "0"}
	if g.chance(0.4) {
		args = append(args, g.pick([]string{"MATCH", "match"}), g.pick(zgenPatterns))
	}
	if g.chance(0.4) {
		args = append(args, "COUNT", g.pick([]string{"1", "5", "10", "100"}))
	}
	if g.chance(0.8) {
		args = append(args, g.pick([]string{"TYPE", "type"}),
			g.pick([]string{"zset", "zset", "zset", "ZSET", "string", "hash", "set", "list"}))
	}
	g.emitKind(opScan, args...)
}

// genZSelect switches databases, mostly back to db 0 where most zsets
// live.
func (g *gen) genZSelect() {
	if g.chance(0.1) {
		g.emit("SELECT", g.pick([]string{"16", "-1", "abc", "1.0", ""}))
		return
	}
	g.db = 0
	if g.chance(0.25) {
		g.db = 1 + g.r.Intn(2)
	}
	g.emit("SELECT", strconv.Itoa(g.db))
}
