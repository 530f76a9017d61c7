package integration

import (
	"strconv"
	"strings"
)

// Sorted-set traffic for the differential runs (genConfig.ZSetCommands).
//
// Keys come from pools that overlap by type, so WRONGTYPE paths are common:
//
//   - a few small zsets that most commands hit (z1, z2, z3, z:{1}, z\0bin);
//   - many small ones (zm:N), together bigger than Spillway's 4 KB hot tier,
//     so small zsets move between tiers;
//   - two that grow across Redis's 128-entry listpack limit and shrink
//     again (zmid:N), for OBJECT ENCODING;
//   - big ones (bz:N) built 100 members per ZADD up to a few thousand,
//     which Spillway serves from disk;
//   - same-score pools for the lex commands (zl1, zl2, zl:{1}, and the big
//     bzl:N), see below;
//   - strings, a hash, sets (also inputs of ZUNION and friends, where Redis
//     reads them as zsets of score 1) and a list, used as zsets and the
//     reverse.
//
// Lex commands (ZRANGEBYLEX, ZREVRANGEBYLEX, ZLEXCOUNT, ZREMRANGEBYLEX,
// ZRANGE/ZRANGESTORE BYLEX) read only the lex pools, whose members all have
// score 0: on a zset whose scores differ, Redis's answer depends on the
// random levels of its skiplist. The lex pools are written only with score
// 0 (ZADD), from other lex keys (stores whose sources are all lex keys,
// RENAME and COPY from lex keys) or by commands that remove members; the
// other lex-command keys are lexnone (never written) and lexstr (only ever
// a string). TestZSetGenLexPools checks the pools stay same-score.
//
// Random replies (ZRANDMEMBER) are emitted as opZRandom and full ZSCAN
// iterations as opZScan; see diff_zset_test.go for how the runner compares
// them. Blocking commands never wait long, as in the list generator: with a
// timeout of 0 or above zgenMaxWait they come right after a ZADD to their
// first key, which then holds members (or is of another type); otherwise
// they read only the never-written zgenNoneKeys with a 10 ms timeout.

// zgenArity is Redis 7.0's COMMAND arity for the sorted-set commands.
var zgenArity = map[string]int{
	"zadd": -4, "zincrby": 4, "zrem": -3, "zremrangebyscore": 4, "zremrangebyrank": 4,
	"zremrangebylex": 4, "zunionstore": -4, "zinterstore": -4, "zdiffstore": -4, "zunion": -3,
	"zinter": -3, "zintercard": -3, "zdiff": -3, "zrange": -4, "zrangestore": -5,
	"zrangebyscore": -4, "zrevrangebyscore": -4, "zrangebylex": -4, "zrevrangebylex": -4,
	"zcount": 4, "zlexcount": 4, "zrevrange": -4, "zcard": 2, "zscore": 3, "zmscore": -3,
	"zrank": 3, "zrevrank": 3, "zscan": -3, "zpopmin": -2, "zpopmax": -2, "zmpop": -4,
	"bzpopmin": -3, "bzpopmax": -3, "bzmpop": -5, "zrandmember": -2,
}

var zgenArityNames = func() []string {
	names := make([]string, 0, len(zgenArity))
	for n := range zgenArity {
		names = append(names, n)
	}
	sortStrings(names)
	return names
}()

// zgenMaxWait is the longest timeout, in seconds, of a blocking command on
// keys that may be empty; longer ones (and 0, forever) are used only on a
// key just added to.
const zgenMaxWait = 0.01

const (
	zgenManyZSets = 40   // zm:0..39
	zgenBigNS     = 3000 // big zsets draw members from m:0..2999
	zgenMidNS     = 200  // zmid:N draw members from n:0..199
	zgenBigLex    = 2    // bzl:0..1
)

var (
	zgenSmallKeys = []string{"z1", "z2", "z3", "z:{1}", "z\x00bin"}
	zgenMidKeys   = []string{"zmid:0", "zmid:1"}
	zgenLexKeys   = []string{"zl1", "zl2", "zl:{1}"}
	zgenStrKeys   = []string{"str1", "str2"}
	zgenHashKey   = "h1"
	zgenSetKeys   = []string{"s1", "s2"}
	zgenListKey   = "l1"
	zgenMissing   = []string{"x", "y"}
	// zgenLexStr is only ever a string and zgenLexNone never written: the
	// lex commands' WRONGTYPE and missing keys.
	zgenLexStr  = "lexstr"
	zgenLexNone = "lexnone"
	// zgenNoneKeys are never written, so blocking reads of them time out.
	zgenNoneKeys = []string{"znone:1", "znone:2"}

	zgenMembers = []string{"a", "b", "c", "d", "e", "f", "g", "a", "b", "c", "m1", "m2", "m3", "",
		"a b", "\x00\xff", "1", "2", "10", "-3", "A", "aa", "ab", "b\x00", "007"}
	zgenLexMembers = []string{"a", "aa", "ab", "abc", "b", "ba", "bb", "c", "d", "e", "", "A", "Z",
		"\x00", "\xff", "a\x00", "m", "mm", "z", "1", "10", "2"}
	// zgenScores print exactly or with %.17g artefacts (0.1, 1.1), or are
	// extremes and infinities.
	zgenScores = []string{"0", "1", "2", "3", "5", "10", "-1", "-2", "1", "2", "0.1", "1.1", "2.5",
		"-0.5", "0.3", "1e300", "-1e-300", "inf", "-inf", "+inf", "-0", "100", "1.5e3", "3.0",
		"123456789", "0.30000000000000004", "7", "4", "-10", "0.2"}
	// zgenScoresOdd are valid for Redis (strtod) but unusual.
	zgenScoresOdd = []string{"0x10", "+5", ".5", "5.", "1E2", "Infinity", "-INF", "4.9e-324",
		"1.7976931348623157e308", "9007199254740993", "1e-310", "-1.7976931348623157e308",
		"0X1p-2", "1e+2", "00012"}
	// zgenScoresBad are rejected: not a float, NaN, or out of range.
	zgenScoresBad = []string{"nan", "NaN", "abc", "", " 1", "1 ", "1e400", "-1e400", "1e-400",
		"1e", "1.2.3", "--1", "0x", "inf1", "1,5"}
	zgenIncrs = []string{"1", "-1", "2", "0.1", "0.2", "-0.5", "10", "1e300", "-1e300", "inf",
		"-inf", "0", "-0", "2.5", "100"}
	zgenScoreBounds = []string{"-inf", "+inf", "inf", "0", "1", "2", "3", "5", "10", "-1", "(1",
		"(0", "(2", "(5", "(-1", "1.1", "(1.1", "0.1", "(0.1", "2.5", "(2.5", "(-inf", "(+inf",
		"(inf", "1e300", "(1e300", "-0", "(-0", "-inf", "+inf", "(3", "4", "7", "(10", "100"}
	// zgenScoreBoundsOdd are valid for Redis (strtod without range or
	// blank checks): "" and "(" are 0 and (0.
	zgenScoreBoundsOdd = []string{" 1", "", "(", "0x10", "(0x2", "1e400", "(1e400", "-1e400",
		"Infinity", "(-INF", "1e-400", "+3"}
	zgenScoreBoundsBad = []string{"abc", "(abc", "[1", "((1", "nan", "(nan", "1 ", "1e", "+-1",
		"[", "(1 ", "x1"}
	zgenLexBounds = []string{"-", "+", "[a", "(a", "[b", "(b", "[c", "(c", "[ab", "(aa", "[",
		"(", "[m", "(m", "[z", "(\xff", "[\xff", "[A", "(1", "[10", "-", "+"}
	zgenLexBoundsBad = []string{"a", "", "{a", "-a", "+a", "*", "]a", "1"}
	zgenWeights      = []string{"1", "2", "0", "-1", "0.5", "1.5", "3", "10", "inf", "-inf",
		"1e300", "-0", "1", "2"}
	zgenWeightsBad = []string{"abc", "nan", "", "1e400", " 1", "1x"}
	zgenPopCounts  = []string{"0", "1", "1", "1", "2", "2", "3", "5", "10", "1", "2", "100"}
	// Not huge negative counts in range: Redis would build a reply that big.
	zgenPopCountsBad = []string{"-1", "abc", "", "1.5", "-9223372036854775808",
		"9223372036854775808", " 1", "-0x1"}
	zgenMinMax       = []string{"MIN", "MAX", "MIN", "MAX", "min", "max", "Max"}
	zgenMinMaxBad    = []string{"LEFT", "", "MINN", "0", "MID"}
	zgenLimitOffsets = []string{"0", "0", "1", "2", "3", "5", "-1", "100"}
	zgenLimitCounts  = []string{"-1", "1", "2", "3", "10", "0", "-5", "1", "2"}
	zgenLimitBad     = []string{"abc", "1.5", "", "9223372036854775808", " 1"}
	zgenPatterns     = []string{"*", "a*", "m*", "m:1*", "m:2?", "?", "[a-c]", "*b*", "\\*", "n:1*",
		"x", "z*", "zm:*", "bz:*", "zl?", "*:{1}", "[^b]*", "str*", "s?", "*bin"}
)

// produceZSet appends the next sorted-set, keyspace or cross-type command
// to the queue.
func (g *gen) produceZSet() {
	n := g.r.Intn(1000)
	switch {
	case n < 110:
		g.genZAdd(g.zkey())
	case n < 120:
		g.genZAdd(g.zlexPool())
	case n < 139:
		g.genZRefill()
	case n < 162:
		g.genZIncrBy()
	case n < 180:
		k := g.zreadKey()
		g.emit(append([]string{"ZREM", k}, g.zmembers(k, 1, 3)...)...)
	case n < 195:
		g.emit("ZCARD", g.zreadKey())
	case n < 220:
		k := g.zreadKey()
		g.emit("ZSCORE", k, g.zmember(k))
	case n < 235:
		k := g.zreadKey()
		g.emit(append([]string{"ZMSCORE", k}, g.zmembers(k, 1, 5)...)...)
	case n < 260:
		k := g.zreadKey()
		g.emit(g.pick([]string{"ZRANK", "ZREVRANK"}), k, g.zmember(k))
	case n < 280:
		k := g.zreadKey()
		lo, hi := g.zscoreRange(k)
		g.emit("ZCOUNT", k, lo, hi)
	case n < 295:
		k := g.zlexKey()
		lo, hi := g.zlexRange(k)
		g.emit("ZLEXCOUNT", k, lo, hi)
	case n < 340:
		g.genZRange(false)
	case n < 355:
		g.genZRange(true)
	case n < 370:
		g.genZRevRange(g.zreadKey())
	case n < 400:
		g.genZRangeByScore(g.zreadKey())
	case n < 425:
		g.genZRangeByLex(g.zlexKey())
	case n < 435:
		g.genZRemRangeByRank(g.zreadKey())
	case n < 445:
		g.genZRemRangeByScore(g.zreadKey())
	case n < 455:
		g.genZRemRangeByLex(g.zlexKey())
	case n < 480:
		g.genZPop(g.zreadKey())
	case n < 495:
		g.genZMPop()
	case n < 525:
		g.genZBlocking()
	case n < 550:
		g.genZRandMember(g.zreadKey())
	case n < 605:
		g.genZSetOp()
	case n < 617:
		g.genZInterCard()
	case n < 629:
		k := g.zreadKey()
		g.emitKind(opZScan, append([]string{"ZSCAN", k, "0"}, g.zscanOpts(!zgenIsBig(k))...)...)
	case n < 634:
		g.genBadScan("ZSCAN", g.zreadKey())

	// Big zsets, big lex zsets, the two that cross the listpack limit,
	// and many small ones.
	case n < 734:
		g.genBigZSet()
	case n < 764:
		g.genBigLexZSet()
	case n < 779:
		g.genMidZSet()
	case n < 814:
		g.genManyZSets()

	// Keyspace commands on zsets.
	case n < 824:
		g.emit("TYPE", g.zreadKey())
	case n < 830:
		g.emit(g.pick([]string{"DEL", "UNLINK"}), g.zreadKey())
	case n < 839:
		g.emit("EXISTS", g.zreadKey(), g.zreadKey(), g.zreadKey())
	case n < 851:
		g.genZRename()
	case n < 861:
		g.genZCopy()
	case n < 866:
		g.emit("MOVE", g.zreadKey(), g.pick([]string{"0", "1", "2", "2", "16", "-1", "x"}))
	case n < 878:
		g.genExpireOn(g.zreadKey())
	case n < 886:
		g.emit(g.pick([]string{"TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"}), g.zreadKey())
	case n < 889:
		g.emit("PERSIST", g.zreadKey())
	case n < 899:
		g.emit("OBJECT", g.pick([]string{"ENCODING", "ENCODING", "encoding"}), g.zobjKey())
	case n < 909:
		g.genZKeyScan()
	case n < 911:
		g.emit("DBSIZE")
	case n < 917:
		g.genZSelect()
	case n < 921:
		g.emit("KEYS", g.pick(zgenPatterns))
	case n < 923:
		g.genFlushDB()
	case n < 928:
		g.genZShortExpiry()

	// Strings, hashes, sets and lists against zsets, and zsets against
	// them.
	case n < 958:
		g.genZCrossType()
	case n < 980:
		g.genZWrongArity()

	// The most common traffic once more, to keep the zsets populated.
	default:
		switch g.r.Intn(4) {
		case 0, 1:
			g.genZAdd(g.zkey())
		case 2:
			g.genZRange(false)
		default:
			k := g.zreadKey()
			g.emit("ZSCORE", k, g.zmember(k))
		}
	}
}

// zkey is mostly a zset key of the score pools, sometimes a string, hash,
// set, list or missing key; never a lex key, so it may be written with any
// score.
func (g *gen) zkey() string {
	switch n := g.r.Intn(100); {
	case n < 58:
		return g.pick(zgenSmallKeys)
	case n < 66:
		return "zm:" + strconv.Itoa(g.r.Intn(zgenManyZSets))
	case n < 78:
		return "bz:" + strconv.Itoa(g.bigIndex())
	case n < 82:
		return g.pick(zgenMidKeys)
	case n < 87:
		return g.pick(zgenStrKeys)
	case n < 89:
		return zgenHashKey
	case n < 92:
		return g.pick(zgenSetKeys)
	case n < 94 && g.cfg.Lists:
		return zgenListKey
	default:
		return g.pick(zgenMissing)
	}
}

// zlexPool is a key of the lex pools: a zset whose members all have score
// 0 (or a missing key), the only keys lex-safe writes go to.
func (g *gen) zlexPool() string {
	if g.chance(0.8) {
		return g.pick(zgenLexKeys)
	}
	return "bzl:" + strconv.Itoa(g.r.Intn(zgenBigLex))
}

// zlexKey is a key for the lex commands: a lex-pool key mostly, sometimes
// the string or the missing key kept for them.
func (g *gen) zlexKey() string {
	switch n := g.r.Intn(100); {
	case n < 92:
		return g.zlexPool()
	case n < 96:
		return zgenLexStr
	default:
		return zgenLexNone
	}
}

// zreadKey is a key for commands that read or only remove: any score-pool
// key, sometimes a lex key.
func (g *gen) zreadKey() string {
	if g.chance(0.15) {
		return g.zlexKey()
	}
	return g.zkey()
}

// zsmallKey is a key for other types' writes: a small zset, a string,
// hash, set, list or missing key; never a big or zmid zset (which would
// stop being one) nor a lex key (a set there would give a store into a lex
// key members of score 1).
func (g *gen) zsmallKey() string {
	k := g.zkey()
	if zgenIsBig(k) || strings.HasPrefix(k, "zmid:") {
		return g.pick(zgenSmallKeys)
	}
	return k
}

// zobjKey is a zset-pool key (or missing), never a string, hash, set or
// list, whose OBJECT ENCODING would depend on their history.
func (g *gen) zobjKey() string {
	switch n := g.r.Intn(100); {
	case n < 40:
		return g.pick(zgenSmallKeys)
	case n < 55:
		return "zm:" + strconv.Itoa(g.r.Intn(zgenManyZSets))
	case n < 70:
		return "bz:" + strconv.Itoa(g.bigIndex())
	case n < 82:
		return g.pick(zgenMidKeys)
	case n < 95:
		return g.zlexPool()
	default:
		return g.pick(zgenMissing)
	}
}

func zgenIsBig(k string) bool {
	return strings.HasPrefix(k, "bz:") || strings.HasPrefix(k, "bzl:")
}

// zgenIsLex says whether k is a lex-pool key (or one kept for the lex
// commands), whose members all have score 0.
func zgenIsLex(k string) bool {
	if k == zgenLexStr || k == zgenLexNone || strings.HasPrefix(k, "bzl:") {
		return true
	}
	for _, l := range zgenLexKeys {
		if k == l {
			return true
		}
	}
	return false
}

// zmember is a member for zset k: for big zsets mostly from the m:N
// namespace, for zmid:N from n:N, for lex keys from zgenLexMembers; now and
// then a long one (over Redis's 64-byte listpack limit).
func (g *gen) zmember(k string) string {
	switch n := g.r.Intn(100); {
	case zgenIsBig(k) && n < 92:
		return "m:" + strconv.Itoa(g.r.Intn(zgenBigNS))
	case strings.HasPrefix(k, "zmid:") && n < 95:
		return "n:" + strconv.Itoa(g.r.Intn(zgenMidNS))
	case n < 2:
		return g.window(65 + g.r.Intn(536))
	case zgenIsLex(k) && n < 50:
		return g.pick([]string{"a", "b", "c", "aa", "ab"})
	case zgenIsLex(k):
		return g.pick(zgenLexMembers)
	case n < 50:
		return g.pick([]string{"a", "b", "c", "d", "e"})
	case n < 90:
		return g.pick(zgenMembers)
	default:
		return g.value()
	}
}

func (g *gen) zmembers(k string, min, max int) []string {
	out := make([]string, min+g.r.Intn(max-min+1))
	for i := range out {
		out[i] = g.zmember(k)
	}
	return out
}

// zvalidScore is a score Redis accepts, for zset k (0 for lex keys).
func (g *gen) zvalidScore(k string) string {
	switch n := g.r.Intn(100); {
	case zgenIsLex(k):
		if n < 3 {
			return "-0"
		}
		return "0"
	case zgenIsBig(k) && n < 80:
		return strconv.Itoa(g.r.Intn(10000))
	case zgenIsBig(k):
		return strconv.Itoa(g.r.Intn(10000)) + "." + strconv.Itoa(g.r.Intn(100))
	case n < 75:
		return g.pick(zgenScores)
	case n < 95:
		return strconv.Itoa(g.r.Intn(41) - 20)
	default:
		return g.pick(zgenScoresOdd)
	}
}

// genZAdd emits ZADD on k with 1-4 pairs and any combination of NX, XX,
// GT, LT, CH and INCR (the incompatible ones now and then); on a lex key
// every score is 0, which none of the options can change.
func (g *gen) genZAdd(k string) {
	var opts [][]string
	if g.chance(0.3) {
		switch g.r.Intn(10) {
		case 0, 1:
			opts = append(opts, []string{"NX"})
		case 2, 3:
			opts = append(opts, []string{"XX"})
		case 4:
			opts = append(opts, []string{"GT"})
		case 5:
			opts = append(opts, []string{"LT"})
		case 6:
			opts = append(opts, []string{"XX"}, []string{"GT"})
		case 7:
			opts = append(opts, []string{"XX"}, []string{"LT"})
		case 8:
			opts = append(opts, strings.Fields(g.pick([]string{"XX NX", "GT LT", "NX GT", "NX LT", "nx xx", "GT LT NX", "lt nx"})))
		default:
			opts = append(opts, []string{g.pick([]string{"nx", "xx", "gt", "lt", "Nx"})})
		}
	}
	if g.chance(0.2) {
		opts = append(opts, []string{g.pick([]string{"CH", "ch"})})
	}
	incr := g.chance(0.12)
	if incr {
		opts = append(opts, []string{g.pick([]string{"INCR", "INCR", "incr"})})
	}
	if g.chance(0.05) {
		opts = append(opts, []string{g.pick([]string{"CH", "NX", "INCR", "XX"})}) // a repeat: allowed
	}
	g.r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	args := []string{"ZADD", k}
	for _, o := range opts {
		args = append(args, o...)
	}
	pairs := 1 + g.r.Intn(6)
	if incr && g.chance(0.9) {
		pairs = 1
	}
	bad := -1
	if g.chance(0.05) {
		bad = g.r.Intn(pairs) // a score Redis rejects: nothing is added
	}
	for i := 0; i < pairs; i++ {
		s := g.zvalidScore(k)
		if i == bad {
			s = g.pick(zgenScoresBad)
		}
		args = append(args, s, g.zmember(k))
	}
	if g.chance(0.03) {
		args = append(args, g.zvalidScore(k)) // a score without a member: syntax error
	}
	g.emit(args...)
	if g.chance(0.04) {
		// A long member, so small zsets outgrow the hot tier and Redis's
		// listpack limit.
		g.emit("ZADD", k, g.zvalidScore(k), g.window(65+g.r.Intn(300)))
	}
}

// genZRefill adds 5-12 members to a small zset (or a small lex zset), so
// the small ones, which many commands empty or replace, stay populated.
func (g *gen) genZRefill() {
	k := g.pick(zgenSmallKeys)
	if g.chance(0.25) {
		k = g.pick(zgenLexKeys)
	}
	args := []string{"ZADD", k}
	for i, n := 0, 5+g.r.Intn(8); i < n; i++ {
		args = append(args, g.zvalidScore(k), g.zmember(k))
	}
	g.emit(args...)
}

// genZIncrBy increments a member, now and then after parking it at an
// infinity or an extreme, so the result may overflow to infinity or be
// NaN (an error).
func (g *gen) genZIncrBy() {
	k := g.zkey()
	m := g.zmember(k)
	if g.chance(0.15) {
		g.emit("ZADD", k, g.pick([]string{"inf", "-inf", "1.7976931348623157e308",
			"-1.7976931348623157e308", "0.1", "1e300", "-0"}), m)
	}
	incr := g.pick(zgenIncrs)
	switch n := g.r.Intn(100); {
	case n < 30:
		incr = strconv.Itoa(g.r.Intn(21) - 10)
	case n < 35:
		incr = g.pick(zgenScoresOdd)
	case n < 40:
		incr = g.pick(zgenScoresBad)
	}
	g.emit("ZINCRBY", k, incr, m)
}
