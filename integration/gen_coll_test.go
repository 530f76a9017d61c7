package integration

import (
	"strconv"
	"strings"
	"time"
)

// Hash and set traffic for the differential runs (genConfig.Collections).
//
// Keys come from pools that overlap by type, so WRONGTYPE paths are common:
//
//   - a few small hashes and sets that most commands hit (h1.., s1..);
//   - many small ones (hm:N, sm:N), together bigger than Spillway's 4 KB
//     hot tier, so small structures move between tiers;
//   - big ones (bh:N, bs:N) built 100 fields or members per command up to
//     a few thousand, which Spillway serves from disk;
//   - string keys, used as hashes and sets and the reverse.
//
// Random replies (HRANDFIELD, SRANDMEMBER, SPOP) are emitted as opRandom and
// full SCAN/HSCAN/SSCAN iterations as opScan; see diff_coll_test.go for how
// the runner compares them.

// collArity is Redis 7.0's COMMAND arity for the hash and set commands.
var collArity = map[string]int{
	"hset": -4, "hsetnx": 4, "hmset": -4, "hget": 3, "hmget": -3, "hgetall": 2, "hdel": -3,
	"hexists": 3, "hincrby": 4, "hincrbyfloat": 4, "hkeys": 2, "hvals": 2, "hlen": 2,
	"hstrlen": 3, "hrandfield": -2, "hscan": -3, "sadd": -3, "srem": -3, "smembers": 2,
	"sismember": 3, "smismember": -3, "scard": 2, "spop": -2, "srandmember": -2, "smove": 4,
	"sinter": -2, "sintercard": -3, "sinterstore": -3, "sunion": -2, "sunionstore": -3,
	"sdiff": -2, "sdiffstore": -3, "sscan": -3, "flushdb": -1,
}

var collArityNames = func() []string {
	names := make([]string, 0, len(collArity))
	for n := range collArity {
		names = append(names, n)
	}
	sortStrings(names)
	return names
}()

const (
	nBigColl   = 6    // bh:0..5 and bs:0..5
	nManyColl  = 40   // hm:0..39 and sm:0..39
	bigFieldNS = 3000 // big structures draw fields/members from 3000 names
)

var (
	collHashKeys = []string{"h1", "h2", "h3", "h:{1}", "h\x00bin"}
	collSetKeys  = []string{"s1", "s2", "s3", "s:{1}", "si1", "si2"} // si*: mostly integers
	collStrKeys  = []string{"str1", "str2", "a"}
	collMissing  = []string{"x", "y"}
	hashFields   = []string{"f1", "f2", "f3", "f4", "f5", "n1", "n2", "fl", "", "a field",
		"\x00\xff", "123", "-5", "F1"}
	setMembers = []string{"m1", "m2", "m3", "m4", "m5", "m6", "", "a b", "1", "2", "10", "-3",
		"007", "+1", " 1", "1.0", "9223372036854775807", "-9223372036854775808",
		"18446744073709551616", "\x00"}
	hincrArgs = []string{"1", "-1", "5", "100", "-1000", "9223372036854775807",
		"-9223372036854775808", "9223372036854775808", "abc", "1.5", "", " 1", "0x1", "+3", "00"}
	hincrFloatArgs = []string{"0.1", "1.5", "-0.25", "1e2", "3", "-2.5", "5.0e3", "0", "1.",
		".5", "1e-5", "123456789.123", "abc", "inf", "-inf", "+inf", "nan", "NaN", "1e400",
		"-1e400", "", " 1", "1 ", "0x10", "1e308", "9223372036854775807"}
	collPatterns = []string{"*", "h*", "s*", "h?", "s[12]", "bh:*", "bs:*", "hm:1*", "sm:?",
		"*:{1}", "[^b]*", "f1", "f*", "f:1*", "f:2?", "m*", "m:1?", "1*", "*0", "?", "\\*", "x"}
	randCounts = []string{"0", "1", "2", "3", "5", "10", "100", "-1", "-2", "-3", "-5", "-10",
		"-100", "5000"}
	// No huge negative count that is in range: Redis would build a reply
	// of that many elements.
	randCountsBad = []string{"abc", "1.5", "", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", " 1"}
)

// produceColl appends the next hash, set or keyspace command to the queue.
func (g *gen) produceColl() {
	n := g.r.Intn(1000)
	switch {
	// Hashes.
	case n < 50:
		g.genHSet("HSET")
	case n < 65:
		g.emit("HSETNX", g.hashKey(), g.field(""), g.hvalue())
	case n < 75:
		g.genHSet("HMSET")
	case n < 110:
		k := g.hashKey()
		g.emit("HGET", k, g.field(k))
	case n < 125:
		k := g.hashKey()
		g.emit(append([]string{"HMGET", k}, g.fields(k, 1, 5)...)...)
	case n < 140:
		g.emit("HGETALL", g.hashKey())
	case n < 160:
		k := g.hashKey()
		g.emit(append([]string{"HDEL", k}, g.fields(k, 1, 4)...)...)
	case n < 172:
		k := g.hashKey()
		g.emit("HEXISTS", k, g.field(k))
	case n < 192:
		g.genHIncrBy()
	case n < 207:
		g.genHIncrByFloat()
	case n < 215:
		g.emit("HKEYS", g.hashKey())
	case n < 223:
		g.emit("HVALS", g.hashKey())
	case n < 235:
		g.emit("HLEN", g.hashKey())
	case n < 247:
		k := g.hashKey()
		g.emit("HSTRLEN", k, g.field(k))
	case n < 272:
		g.genRandField()
	case n < 284:
		g.genScanUnion("HSCAN", g.hashKey())
	case n < 290:
		g.genBadScan("HSCAN", g.hashKey())

	// Sets.
	case n < 345:
		g.genSAdd()
	case n < 365:
		k := g.setKey()
		g.emit(append([]string{"SREM", k}, g.members(k, 1, 4)...)...)
	case n < 380:
		g.emit("SMEMBERS", g.setKey())
	case n < 398:
		k := g.setKey()
		g.emit("SISMEMBER", k, g.member(k))
	case n < 410:
		k := g.setKey()
		g.emit(append([]string{"SMISMEMBER", k}, g.members(k, 1, 5)...)...)
	case n < 422:
		g.emit("SCARD", g.setKey())
	case n < 437:
		g.genSPop()
	case n < 455:
		g.genSRandMember()
	case n < 472:
		g.genSMove()
	case n < 502:
		g.emit(append([]string{g.pick([]string{"SINTER", "SUNION", "SDIFF"})}, g.setKeys(1, 3)...)...)
	case n < 515:
		g.genSInterCard()
	case n < 540:
		g.genSStore()
	case n < 552:
		g.genScanUnion("SSCAN", g.setKey())
	case n < 558:
		g.genBadScan("SSCAN", g.setKey())

	// Big structures, and many small ones.
	case n < 690:
		g.genBigColl()
	case n < 720:
		g.genManySmall()

	// Keyspace commands on hashes and sets.
	case n < 734:
		g.emit("TYPE", g.collKey())
	case n < 748:
		g.emit(append([]string{g.pick([]string{"DEL", "UNLINK"})}, g.collKey())...)
	case n < 757:
		g.emit("EXISTS", g.collKey(), g.collKey(), g.collKey())
	case n < 771:
		g.genCollRename()
	case n < 785:
		g.genCollCopy()
	case n < 792:
		g.emit("MOVE", g.collKey(), g.pick([]string{"0", "1", "2", "2", "16", "-1", "x"}))
	case n < 812:
		g.genExpireOn(g.collKey())
	case n < 826:
		g.emit(g.pick([]string{"TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"}), g.collKey())
	case n < 832:
		g.emit("PERSIST", g.collKey())
	case n < 843:
		g.genKeyScan()
	case n < 848:
		g.emit("DBSIZE")
	case n < 859:
		g.genSelect()
	case n < 864:
		g.emit("KEYS", g.pick(collPatterns))
	case n < 866:
		g.genFlushDB()
	case n < 872:
		g.genCollShortExpiry()

	// Strings and lists against collections, and collections against them.
	case n < 893:
		g.genCrossType()
	case n < 922:
		g.genCollWrongArity()

	// The most common traffic once more, to keep the structures populated.
	default:
		switch g.r.Intn(4) {
		case 0:
			g.genHSet("HSET")
		case 1:
			g.genSAdd()
		case 2:
			k := g.hashKey()
			g.emit("HGET", k, g.field(k))
		default:
			k := g.setKey()
			g.emit("SISMEMBER", k, g.member(k))
		}
	}
}

// bigIndex is skewed towards 0, so bh:0 and bs:0 grow to thousands of
// fields while the others stay at hundreds.
func (g *gen) bigIndex() int {
	i := g.r.Intn(nBigColl)
	for j := 0; j < 2; j++ {
		if k := g.r.Intn(nBigColl); k < i {
			i = k
		}
	}
	return i
}

// hashKey is mostly a hash key, sometimes a set, string or missing key.
func (g *gen) hashKey() string {
	switch n := g.r.Intn(100); {
	case n < 55:
		return g.pick(collHashKeys)
	case n < 70:
		return "hm:" + strconv.Itoa(g.r.Intn(nManyColl))
	case n < 85:
		return "bh:" + strconv.Itoa(g.bigIndex())
	case n < 90:
		return g.pick(collSetKeys)
	case n < 95:
		return g.pick(collStrKeys)
	default:
		return g.pick(collMissing)
	}
}

// setKey is mostly a set key, sometimes a hash, string or missing key.
func (g *gen) setKey() string {
	switch n := g.r.Intn(100); {
	case n < 55:
		return g.pick(collSetKeys)
	case n < 70:
		return "sm:" + strconv.Itoa(g.r.Intn(nManyColl))
	case n < 85:
		return "bs:" + strconv.Itoa(g.bigIndex())
	case n < 90:
		return g.pick(collHashKeys)
	case n < 95:
		return g.pick(collStrKeys)
	default:
		return g.pick(collMissing)
	}
}

func (g *gen) setKeys(min, max int) []string {
	out := make([]string, min+g.r.Intn(max-min+1))
	for i := range out {
		out[i] = g.setKey()
	}
	return out
}

// collKey is any key of the collection pools, for keyspace commands.
func (g *gen) collKey() string {
	if g.chance(0.5) {
		return g.hashKey()
	}
	return g.setKey()
}

func isBigKey(k string) bool { return strings.HasPrefix(k, "bh:") || strings.HasPrefix(k, "bs:") }

// intSetKey says whether k's members are mostly integers (so Redis keeps
// it an intset until it grows past 512 members or gets a non-integer).
func intSetKey(k string) bool {
	return strings.HasPrefix(k, "si") || k == "bs:3" || k == "bs:4" || k == "bs:5"
}

// field picks a field of hash k: from the big namespace for big hashes,
// else from a small pool, so commands hit existing fields often.
func (g *gen) field(k string) string {
	if isBigKey(k) && g.chance(0.95) {
		return "f:" + strconv.Itoa(g.r.Intn(bigFieldNS))
	}
	return g.pick(hashFields)
}

func (g *gen) fields(k string, min, max int) []string {
	out := make([]string, min+g.r.Intn(max-min+1))
	for i := range out {
		out[i] = g.field(k)
	}
	return out
}

// member picks a member of set k, like field.
func (g *gen) member(k string) string {
	switch {
	case isBigKey(k) && g.chance(0.95):
		if intSetKey(k) {
			return strconv.Itoa(g.r.Intn(bigFieldNS) - 100)
		}
		return "m:" + strconv.Itoa(g.r.Intn(bigFieldNS))
	case intSetKey(k) && g.chance(0.85):
		return strconv.Itoa(g.r.Intn(41) - 20)
	}
	return g.pick(setMembers)
}

func (g *gen) members(k string, min, max int) []string {
	out := make([]string, min+g.r.Intn(max-min+1))
	for i := range out {
		out[i] = g.member(k)
	}
	return out
}

// hvalue is a hash value: mostly short (numbers often, for HINCRBY), some
// of 65-600 bytes so small hashes outgrow the hot tier.
func (g *gen) hvalue() string {
	if g.chance(0.08) {
		return g.window(65 + g.r.Intn(536))
	}
	return g.value()
}

// window is n bytes of the generator's random letters.
func (g *gen) window(n int) string {
	off := g.r.Intn(len(g.bigs) - n)
	return string(g.bigs[off : off+n])
}

func (g *gen) genHSet(cmd string) {
	k := g.hashKey()
	args := []string{cmd, k}
	for i, n := 0, 1+g.r.Intn(4); i < n; i++ {
		args = append(args, g.field(k), g.hvalue())
	}
	if g.chance(0.04) {
		args = append(args, g.field(k)) // odd count: arity error
	}
	g.emit(args...)
}

func (g *gen) genHIncrBy() {
	k := g.hashKey()
	f := g.field(k)
	if g.chance(0.15) {
		// Park a value next to the limits, so the increment may overflow.
		g.emit("HSET", k, f, g.pick([]string{"9223372036854775800", "-9223372036854775800",
			"9223372036854775807", "-9223372036854775808", "1", "abc", "1.5", " 2", "-0"}))
	}
	incr := strconv.Itoa(g.r.Intn(41) - 20)
	if g.chance(0.3) {
		incr = g.pick(hincrArgs)
	}
	g.emit("HINCRBY", k, f, incr)
}

func (g *gen) genHIncrByFloat() {
	k := g.hashKey()
	f := g.field(k)
	if g.chance(0.1) {
		g.emit("HSET", k, f, g.pick([]string{"1.5", "1e308", "-1e308", "abc", "inf", "nan",
			"0x10", "1e", "3", "  4", "1.7976931348623157e308", "5.0e-324"}))
	}
	g.emit("HINCRBYFLOAT", k, f, g.pick(hincrFloatArgs))
}

// genRandField emits HRANDFIELD with no count, a count, or a count and
// WITHVALUES; mostly valid, sometimes a bad count or option.
func (g *gen) genRandField() {
	args := []string{"HRANDFIELD", g.hashKey()}
	if g.chance(0.75) {
		args = append(args, g.randCount())
		if g.chance(0.5) {
			args = append(args, g.pick([]string{"WITHVALUES", "WITHVALUES", "withvalues", "WITHSCORES"}))
		}
	}
	g.emitKind(opRandom, args...)
}

func (g *gen) randCount() string {
	if g.chance(0.06) {
		return g.pick(randCountsBad)
	}
	return g.pick(randCounts)
}

func (g *gen) genSRandMember() {
	args := []string{"SRANDMEMBER", g.setKey()}
	if g.chance(0.75) {
		args = append(args, g.randCount())
	}
	if g.chance(0.02) {
		args = append(args, "1", "2") // too many arguments
	}
	g.emitKind(opRandom, args...)
}

// genSPop pops one member or a count of them; the runner puts members back
// when the two servers popped different ones.
func (g *gen) genSPop() {
	args := []string{"SPOP", g.setKey()}
	if g.chance(0.6) {
		args = append(args, g.pick([]string{"0", "1", "2", "3", "10", "200", "5000", "-1", "abc", ""}))
	}
	g.emitKind(opRandom, args...)
}

func (g *gen) genSAdd() {
	k := g.setKey()
	g.emit(append([]string{"SADD", k}, g.members(k, 1, 5)...)...)
	if g.chance(0.05) {
		// A long member, so small sets outgrow the hot tier too.
		g.emit("SADD", k, g.window(65+g.r.Intn(300)))
	}
}

// genSMove moves between sets, within one set, across types and from
// missing keys.
func (g *gen) genSMove() {
	src, dst := g.setKey(), g.setKey()
	if g.chance(0.1) {
		dst = src
	}
	m := g.member(src)
	if g.chance(0.3) {
		m = g.member(dst)
	}
	g.emit("SMOVE", src, dst, m)
}

func (g *gen) genSInterCard() {
	keys := g.setKeys(1, 3)
	numkeys := strconv.Itoa(len(keys))
	if g.chance(0.1) {
		numkeys = g.pick([]string{"0", "-1", "abc", "4", "9", "1.5", ""})
	}
	args := append([]string{"SINTERCARD", numkeys}, keys...)
	switch g.r.Intn(8) {
	case 0, 1, 2:
		args = append(args, "LIMIT", g.pick([]string{"0", "1", "2", "5", "100"}))
	case 3:
		args = append(args, g.pick([]string{"LIMIT", "limit"}), g.pick([]string{"-1", "abc", "1.5", "9223372036854775807"}))
	case 4:
		args = append(args, g.pick([]string{"LIMIT", "FOO", "LIMIT 1 LIMIT 2", "LIMIT 1 FOO"}))
		args = append(args[:len(args)-1], strings.Fields(args[len(args)-1])...)
	}
	g.emit(args...)
}

// genSStore emits SINTERSTORE, SUNIONSTORE or SDIFFSTORE whose destination
// is sometimes one of the sources, a hash or a string.
func (g *gen) genSStore() {
	cmd := g.pick([]string{"SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"})
	srcs := g.setKeys(1, 3)
	var dst string
	switch n := g.r.Intn(10); {
	case n < 5:
		dst = g.pick(collSetKeys)
	case n < 7:
		dst = srcs[g.r.Intn(len(srcs))]
	case n < 8:
		dst = g.pick(collHashKeys)
	case n < 9:
		dst = g.pick(collStrKeys)
	default:
		dst = "sm:" + strconv.Itoa(g.r.Intn(nManyColl))
	}
	g.emit(append([]string{cmd, dst}, srcs...)...)
}

// genScanUnion emits a whole HSCAN/SSCAN iteration of k, with MATCH and
// COUNT variants. COUNT 1 is used on small structures only, so an
// iteration takes a bounded number of calls.
func (g *gen) genScanUnion(cmd, k string) {
	args := []string{cmd, k, "0"}
	args = append(args, g.scanOpts(!isBigKey(k))...)
	g.emitKind(opScan, args...)
}

func (g *gen) scanOpts(small bool) []string {
	var opts [][]string
	if g.chance(0.4) {
		opts = append(opts, []string{g.pick([]string{"MATCH", "match"}), g.pick(collPatterns)})
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

// genBadScan emits one HSCAN/SSCAN call with a bad cursor or option. Redis
// replies the same whatever the server's cursor layout: a bad cursor is
// rejected first, a missing key then gets an empty page, and only then are
// the options parsed.
func (g *gen) genBadScan(cmd, k string) {
	switch g.r.Intn(8) {
	case 0:
		// Not "-1", "+5" or "": Redis parses cursors with strtoul, so they
		// are valid cursors (ULONG_MAX, 5, 0) whose pages depend on the
		// dict layout, which differs between any two servers.
		g.emit(cmd, k, g.pick([]string{"abc", "1.5", "18446744073709551616", " 0", "0x10", "1e3"}))
	case 1:
		g.emit(cmd, k, "0", "COUNT", g.pick([]string{"0", "-1", "abc", "", "1.5"}))
	case 2:
		g.emit(cmd, k, "0", "MATCH")
	case 3:
		g.emit(cmd, k, "0", "COUNT")
	case 4:
		g.emit(cmd, k, "0", g.pick([]string{"FOO", "NOVALUES", "TYPE"}), "x")
	case 5:
		g.emit(cmd, k, "0", "MATCH", "*", "COUNT", "10", "BAR")
	case 6:
		g.emit(cmd, k)
	default:
		g.emit(cmd, k, "abc", "COUNT", "0")
	}
}

// genKeyScan iterates SCAN over the current database, often filtered by
// TYPE.
func (g *gen) genKeyScan() {
	args := []string{"SCAN", "0"}
	opts := g.scanOpts(false)
	if g.chance(0.7) {
		opts = append(opts, g.pick([]string{"TYPE", "type"}),
			g.pick([]string{"hash", "hash", "set", "set", "string", "HASH", "list", "zset", "nosuchtype"}))
	}
	g.emitKind(opScan, append(args, opts...)...)
}

// genBigColl grows, shrinks, reads or combines a big hash or set.
func (g *gen) genBigColl() {
	i := g.bigIndex()
	if g.chance(0.5) {
		k := "bh:" + strconv.Itoa(i)
		switch g.r.Intn(10) {
		case 0, 1, 2, 3, 4:
			// A burst of 1-3 commands of 100 pairs each.
			for b := 1 + g.r.Intn(3); b > 0; b-- {
				args := []string{"HSET", k}
				long := g.chance(0.2)
				for j := 0; j < 100; j++ {
					v := g.value()
					if long {
						v = g.window(20 + g.r.Intn(60))
					}
					args = append(args, g.field(k), v)
				}
				g.emit(args...)
			}
		case 5:
			g.emit(append([]string{"HDEL", k}, g.fields(k, 20, 60)...)...)
		case 6:
			g.emit(append([]string{"HMGET", k}, g.fields(k, 10, 30)...)...)
		case 7:
			g.emit(g.pick([]string{"HGETALL", "HKEYS", "HVALS", "HLEN"}), k)
		case 8:
			if g.chance(0.5) {
				g.emit("HINCRBY", k, g.field(k), strconv.Itoa(g.r.Intn(100)))
			} else {
				g.emit(g.pick([]string{"HGET", "HEXISTS", "HSTRLEN"}), k, g.field(k))
			}
		default:
			g.emitKind(opRandom, "HRANDFIELD", k, g.pick([]string{"5", "-5", "50", "5000"}), "WITHVALUES")
		}
		return
	}
	k := "bs:" + strconv.Itoa(i)
	switch g.r.Intn(10) {
	case 0, 1, 2, 3, 4:
		for b := 1 + g.r.Intn(3); b > 0; b-- {
			g.emit(append([]string{"SADD", k}, g.bigMembers(k, 100)...)...)
		}
	case 5:
		g.emit(append([]string{"SREM", k}, g.bigMembers(k, 20+g.r.Intn(40))...)...)
	case 6:
		if g.chance(0.5) {
			g.emit(append([]string{"SMISMEMBER", k}, g.bigMembers(k, 10+g.r.Intn(20))...)...)
		} else {
			g.emit(g.pick([]string{"SMEMBERS", "SCARD"}), k)
		}
	case 7:
		other := "bs:" + strconv.Itoa(g.bigIndex())
		g.emit(g.pick([]string{"SINTER", "SUNION", "SDIFF"}), k, other)
	case 8:
		other := "bs:" + strconv.Itoa(g.bigIndex())
		switch g.r.Intn(3) {
		case 0:
			g.emit("SINTERCARD", "2", k, other, "LIMIT", g.pick([]string{"0", "10", "1000"}))
		case 1:
			g.emit(g.pick([]string{"SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"}), "s:store", k, other)
		default:
			g.emit("SMOVE", k, other, g.member(k))
		}
	default:
		if g.chance(0.5) {
			g.emitKind(opRandom, "SRANDMEMBER", k, g.pick([]string{"5", "-5", "50", "5000"}))
		} else {
			g.emitKind(opRandom, "SPOP", k, g.pick([]string{"1", "3", "20"}))
		}
	}
}

// bigMembers is n members for big set k; the sets of integers (bs:3..5)
// sometimes get a word, which ends Redis's intset encoding for them.
func (g *gen) bigMembers(k string, n int) []string {
	out := make([]string, n)
	for j := range out {
		out[j] = g.member(k)
	}
	if intSetKey(k) && g.chance(0.03) {
		out[0] = "word"
	}
	return out
}

// genManySmall writes or reads one of many small hashes and sets, which
// together exceed the hot tier.
func (g *gen) genManySmall() {
	i := strconv.Itoa(g.r.Intn(nManyColl))
	hk, sk := "hm:"+i, "sm:"+i
	switch g.r.Intn(6) {
	case 0, 1:
		args := []string{"HSET", hk}
		for j, n := 0, 1+g.r.Intn(6); j < n; j++ {
			args = append(args, g.field(hk), g.hvalue())
		}
		g.emit(args...)
	case 2, 3:
		g.emit(append([]string{"SADD", sk}, g.members(sk, 1, 6)...)...)
	case 4:
		g.emit(g.pick([]string{"HGETALL", "HLEN"}), hk)
	default:
		g.emit(g.pick([]string{"SMEMBERS", "SCARD"}), sk)
	}
}

// genCollRename renames mostly within a type's pool, sometimes across.
func (g *gen) genCollRename() {
	cmd := g.pick([]string{"RENAME", "RENAMENX"})
	if g.chance(0.5) {
		g.emit(cmd, g.hashKey(), g.hashKey())
	} else {
		g.emit(cmd, g.setKey(), g.setKey())
	}
}

func (g *gen) genCollCopy() { g.genCopyOf(g.collKey) }

// genFlushDB empties a database now and then; db 0, where the big
// structures mostly live, only rarely.
func (g *gen) genFlushDB() {
	if g.db == 0 && g.chance(0.7) {
		g.emit("DBSIZE")
		return
	}
	opts := [][]string{nil, nil, {"SYNC"}, {"ASYNC"}, {"FOO"}}
	g.emit(append([]string{"FLUSHDB"}, opts[g.r.Intn(len(opts))]...)...)
}

// genCollShortExpiry gives a hash or set a 1-50 ms expiry and sleeps past
// it, then reads the key back (which deletes it on both servers).
func (g *gen) genCollShortExpiry() {
	ms := strconv.Itoa(1 + g.r.Intn(50))
	var k string
	if g.chance(0.5) {
		k = g.pick(collHashKeys)
		g.emit("HSET", k, g.field(k), g.hvalue())
	} else {
		k = g.pick(collSetKeys)
		g.emit("SADD", k, g.member(k))
	}
	g.emit("PEXPIRE", k, ms)
	d, _ := strconv.Atoi(ms)
	g.queue = append(g.queue, op{Sleep: time.Duration(d+30) * time.Millisecond})
	g.emit(g.pick([]string{"EXISTS", "TYPE", "HLEN", "SCARD", "TTL"}), k)
}

// genCrossType uses string (and list) commands on collection keys and
// creates strings where collection commands will find them.
func (g *gen) genCrossType() {
	switch g.r.Intn(10) {
	case 0, 1, 2:
		g.emit("SET", g.pick(collStrKeys), g.value())
	case 3:
		g.emit(g.pick([]string{"GET", "STRLEN", "GETDEL"}), g.collKey())
	case 4:
		g.emit(g.pick([]string{"APPEND", "SETNX", "GETSET"}), g.collKey(), g.value())
	case 5:
		g.emit(g.pick([]string{"INCR", "DECR"}), g.collKey())
	case 6:
		g.emit("GETRANGE", g.collKey(), "0", "-1")
	case 7:
		g.emit("MGET", g.collKey(), g.pick(collStrKeys))
	case 8:
		if g.cfg.Lists {
			g.emit("RPUSH", g.pick(listKeys), g.value())
			g.emit(g.pick([]string{"HGET", "SISMEMBER", "HSET", "SADD"}), g.pick(listKeys), "f", "v")
		} else {
			g.emit("GET", g.collKey())
		}
	default:
		// Overwrite a collection with a string, now and then.
		if g.chance(0.3) {
			g.emit("SET", g.pick(append(append([]string{}, collHashKeys...), collSetKeys...)), g.value())
		} else {
			g.emit("TYPE", g.pick(collStrKeys))
		}
	}
}

// genCollWrongArity calls a hash or set command with an argument count its
// arity rejects.
func (g *gen) genCollWrongArity() {
	name := g.pick(collArityNames)
	a := collArity[name]
	var n int // total words including the name
	if a > 0 {
		for n = g.r.Intn(a + 3); n == a || n == 0; n = g.r.Intn(a + 3) {
		}
	} else {
		if -a == 1 {
			g.emit("FLUSHDB", "FOO", "BAR") // FLUSHDB: only too many arguments
			return
		}
		n = 1 + g.r.Intn(-a-1)
	}
	args := []string{strings.ToUpper(name)}
	if g.chance(0.3) {
		args[0] = name
	}
	for len(args) < n {
		if len(args) == 1 {
			args = append(args, g.collKey())
		} else {
			args = append(args, g.value())
		}
	}
	g.emit(args...)
}
