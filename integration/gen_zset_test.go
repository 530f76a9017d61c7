package integration

import (
	"strconv"
	"strings"
	"time"
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
