package integration

import (
	"strconv"
	"strings"
	"time"
)

// List traffic for the differential runs (genConfig.ListCommands).
//
// Keys come from pools that overlap by type, so WRONGTYPE paths are common:
//
//   - a few small lists that most commands hit (l1, l2, l3, l:{1}, l\0bin);
//   - many small ones (lm:N), together bigger than Spillway's 4 KB hot
//     tier, so small lists move between tiers;
//   - big ones (bl:N) grown 100 elements per push and trimmed back to at
//     most 1500-4000 elements, some elements a few hundred bytes, which
//     Spillway serves from disk;
//   - strings, a hash and a set, used as lists and the reverse.
//
// Elements come from small pools with many repeats, so LREM, LPOS and
// LINSERT find their element or pivot often.
//
// Blocking commands never wait long: with a timeout of 0 or above
// lgenMaxWait they come right after a push to their first key, which then
// either holds elements (the command returns at once) or is of another type
// (WRONGTYPE at once); otherwise they read only the never-written
// lgenNoneKeys with a 10 ms timeout. TestListGenerator checks this.

// lgenArity is Redis 7.0's COMMAND arity for the list commands.
var lgenArity = map[string]int{
	"lpush": -3, "rpush": -3, "lpushx": -3, "rpushx": -3, "lpop": -2, "rpop": -2, "llen": 2,
	"lindex": 3, "lrange": 4, "lset": 4, "linsert": 5, "lrem": 4, "ltrim": 4, "lpos": -3,
	"lmove": 5, "rpoplpush": 3, "lmpop": -4, "blpop": -3, "brpop": -3, "blmove": 6,
	"brpoplpush": 4, "blmpop": -5,
}

var lgenArityNames = func() []string {
	names := make([]string, 0, len(lgenArity))
	for n := range lgenArity {
		names = append(names, n)
	}
	sortStrings(names)
	return names
}()

// lgenMaxWait is the longest timeout, in seconds, of a blocking command on
// keys that may be empty; longer ones (and 0, forever) are used only on a
// key just pushed to.
const lgenMaxWait = 0.01

const (
	lgenManyLists = 40  // lm:0..39
	lgenBigElems  = 300 // big lists draw most elements from e:0..299
)

var (
	lgenSmallKeys = []string{"l1", "l2", "l3", "l:{1}", "l\x00bin"}
	lgenStrKeys   = []string{"str1", "str2"}
	lgenHashKey   = "h1"
	lgenSetKey    = "s1"
	lgenMissing   = []string{"x", "y"}
	// lgenNoneKeys are never written, so blocking reads of them time out.
	lgenNoneKeys = []string{"lnone:1", "lnone:2"}
	lgenElems    = []string{"a", "b", "c", "a", "b", "a", "", "x y", "\x00\xff", "1", "2", "10",
		"-3", "007", "9223372036854775807", "3.5", "hello", "a\r\nb", "A", " a"}
	lgenIndexBad = []string{"abc", "1.5", "", "9223372036854775808", "-9223372036854775809",
		" 1", "1 ", "0x1", "1e2", "+"}
	lgenIndexFar = []string{"100", "-100", "1000000", "-1000000", "9223372036854775807",
		"-9223372036854775808"}
	lgenPopCounts    = []string{"0", "1", "1", "2", "2", "3", "5", "10", "100"}
	lgenPopCountsBad = []string{"-1", "abc", "", "1.5", "-9223372036854775808",
		"9223372036854775808", " 1"}
	lgenDirs    = []string{"LEFT", "RIGHT", "LEFT", "RIGHT", "left", "right", "Left"}
	lgenDirsBad = []string{"MIDDLE", "", "LEFTT", "UP", "0"}
	// lgenWaits are valid timeouts for a key just pushed to.
	lgenWaits = []string{"0", "0.01", "0.5", "1", "1.5", "5", "100", ".5", "1.", "3e1"}
	// lgenWaitsBad are timeouts Redis rejects, so the command never waits.
	lgenWaitsBad = []string{"abc", "-1", "-0.5", "nan", "", " 1", "1 ", "1,5", "-1e3"}
	lgenPatterns = []string{"*", "l*", "l?", "lm:*", "lm:1*", "lm:?", "bl:*", "bl:[0-2]", "*:{1}",
		"[^b]*", "str*", "h1", "s?", "?", "\\*", "x", "*bin"}
)

// produceList appends the next list, keyspace or cross-type command to the
// queue.
func (g *gen) produceList() {
	n := g.r.Intn(1000)
	switch {
	case n < 140:
		g.genListPush()
	case n < 160:
		k := g.listKey()
		g.emit(append([]string{g.pick([]string{"LPUSHX", "RPUSHX"}), k}, g.listElemsFor(k, 1, 3)...)...)
	case n < 210:
		g.genListPop()
	case n < 235:
		g.emit("LLEN", g.listKey())
	case n < 270:
		k := g.listKey()
		g.emit("LINDEX", k, g.listIndex(k))
	case n < 315:
		g.genLRange("LRANGE", g.listKey())
	case n < 340:
		g.genLSet(g.listKey())
	case n < 370:
		g.genLInsert(g.listKey())
	case n < 400:
		g.genLRem(g.listKey())
	case n < 420:
		g.genLRange("LTRIM", g.listKey())
	case n < 465:
		g.genLPos(g.listKey())
	case n < 495:
		g.genLMove()
	case n < 510:
		g.emit("RPOPLPUSH", g.listKey(), g.listDst())
	case n < 540:
		g.genLMPop()
	case n < 572:
		g.genListBlocking()

	// Big lists, and many small ones.
	case n < 690:
		g.genBigList()
	case n < 730:
		g.genManyLists()

	// Keyspace commands on lists.
	case n < 745:
		g.emit("TYPE", g.listKey())
	case n < 760:
		g.emit(g.pick([]string{"DEL", "UNLINK"}), g.listKey())
	case n < 768:
		g.emit("EXISTS", g.listKey(), g.listKey(), g.listKey())
	case n < 783:
		g.emit(g.pick([]string{"RENAME", "RENAMENX"}), g.listKey(), g.listDst())
	case n < 795:
		g.genCopyOf(g.listKey)
	case n < 803:
		g.emit("MOVE", g.listKey(), g.pick([]string{"0", "1", "2", "2", "16", "-1", "x"}))
	case n < 818:
		g.genExpireOn(g.listKey())
	case n < 828:
		g.emit(g.pick([]string{"TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"}), g.listKey())
	case n < 833:
		g.emit("PERSIST", g.listKey())
	case n < 843:
		g.emit("OBJECT", g.pick([]string{"ENCODING", "ENCODING", "encoding"}), g.listOnlyKey())
	case n < 855:
		g.genListKeyScan()
	case n < 858:
		g.emit("DBSIZE")
	case n < 866:
		g.genListSelect()
	case n < 871:
		g.emit("KEYS", g.pick(lgenPatterns))
	case n < 873:
		g.genFlushDB()
	case n < 879:
		g.genListShortExpiry()

	// Strings, hashes and sets against lists, and lists against them.
	case n < 909:
		g.genListCrossType()
	case n < 934:
		g.genListWrongArity()

	// The most common traffic once more, to keep the lists populated.
	default:
		switch g.r.Intn(4) {
		case 0, 3:
			g.genListPush()
		case 1:
			g.genLRange("LRANGE", g.listKey())
		default:
			k := g.listKey()
			g.emit("LINDEX", k, g.listIndex(k))
		}
	}
}

// listKey is mostly a list key, sometimes a string, hash, set or missing
// key.
func (g *gen) listKey() string {
	switch n := g.r.Intn(100); {
	case n < 55:
		return g.pick(lgenSmallKeys)
	case n < 70:
		return "lm:" + strconv.Itoa(g.r.Intn(lgenManyLists))
	case n < 82:
		return "bl:" + strconv.Itoa(g.bigIndex())
	case n < 88:
		return g.pick(lgenStrKeys)
	case n < 91:
		return lgenHashKey
	case n < 94:
		return lgenSetKey
	default:
		return g.pick(lgenMissing)
	}
}

// listDst is a destination for LMOVE, RPOPLPUSH, RENAME: mostly a small
// list, sometimes any list key or a key of another type.
func (g *gen) listDst() string {
	if g.chance(0.6) {
		return g.pick(lgenSmallKeys)
	}
	return g.listKey()
}

// listOnlyKey is a key of the list pools (or missing), never one of the
// hash or set keys, whose OBJECT ENCODING would depend on their history.
func (g *gen) listOnlyKey() string {
	switch n := g.r.Intn(100); {
	case n < 55:
		return g.pick(lgenSmallKeys)
	case n < 75:
		return "lm:" + strconv.Itoa(g.r.Intn(lgenManyLists))
	case n < 92:
		return "bl:" + strconv.Itoa(g.bigIndex())
	default:
		return g.pick(lgenMissing)
	}
}

func lgenIsBig(k string) bool { return strings.HasPrefix(k, "bl:") }

// listElem is an element for list k: for big lists mostly from the e:N
// namespace, else from lgenElems; now and then a long one, so small lists
// outgrow the hot tier.
func (g *gen) listElem(k string) string {
	switch n := g.r.Intn(100); {
	case lgenIsBig(k) && n < 85:
		return "e:" + strconv.Itoa(g.r.Intn(lgenBigElems))
	case n < 3:
		return g.window(65 + g.r.Intn(536))
	case n < 88:
		return g.pick(lgenElems)
	default:
		return g.value()
	}
}

func (g *gen) listElemsFor(k string, min, max int) []string {
	out := make([]string, min+g.r.Intn(max-min+1))
	for i := range out {
		out[i] = g.listElem(k)
	}
	return out
}

// listIndex is an index into list k: mostly within (or just outside) its
// likely length, sometimes far out of range or not an integer.
func (g *gen) listIndex(k string) string {
	switch n := g.r.Intn(100); {
	case n < 4:
		return g.pick(lgenIndexBad)
	case n < 10:
		return g.pick(lgenIndexFar)
	case lgenIsBig(k) && n < 55:
		return strconv.Itoa(g.r.Intn(4500))
	case lgenIsBig(k) && n < 90:
		return strconv.Itoa(-1 - g.r.Intn(4500))
	}
	return strconv.Itoa(g.r.Intn(11) - 5)
}

// listProbe is an element to look for in list k (LPOS, LREM, LINSERT's
// pivot): often one of the elements small lists repeat most.
func (g *gen) listProbe(k string) string {
	if !lgenIsBig(k) && g.chance(0.4) {
		return g.pick([]string{"a", "a", "b", "c"})
	}
	return g.listElem(k)
}

// genListPush pushes 1-7 elements; now and then it trims the list back so
// the small lists stay small.
func (g *gen) genListPush() {
	k := g.listKey()
	cmd := g.pick([]string{"LPUSH", "RPUSH", "LPUSH", "RPUSH", "lpush", "rpush"})
	g.emit(append([]string{cmd, k}, g.listElemsFor(k, 1, 7)...)...)
	if !lgenIsBig(k) && g.chance(0.06) {
		n := 10 + g.r.Intn(40)
		if g.chance(0.5) {
			g.emit("LTRIM", k, "0", strconv.Itoa(n-1))
		} else {
			g.emit("LTRIM", k, strconv.Itoa(-n), "-1")
		}
	}
}

// listPopCount is a count for LPOP/RPOP/LMPOP: mostly valid, sometimes an
// error.
func (g *gen) listPopCount() string {
	if g.chance(0.08) {
		return g.pick(lgenPopCountsBad)
	}
	return g.pick(lgenPopCounts)
}

func (g *gen) genListPop() {
	args := []string{g.pick([]string{"LPOP", "RPOP", "LPOP", "RPOP", "lpop"}), g.listKey()}
	if g.chance(0.45) {
		args = append(args, g.listPopCount())
	}
	if g.chance(0.01) {
		args = append(args, "1") // too many arguments
	}
	g.emit(args...)
}

// genLRange emits LRANGE or LTRIM (same arguments) with index pairs in
// every form: the common ones, start > stop, out of range, not integers.
func (g *gen) genLRange(cmd, k string) {
	var start, stop string
	switch g.r.Intn(10) {
	case 0:
		start, stop = "0", "-1"
	case 1:
		start, stop = g.pick([]string{"1", "0", "-3", "2"}), g.pick([]string{"-2", "-1", "1", "0"})
	case 2:
		start, stop = g.pick([]string{"5", "-1", "3", "100"}), g.pick([]string{"2", "-2", "0", "-100"})
	default:
		start, stop = g.listIndex(k), g.listIndex(k)
		a, errA := strconv.Atoi(start)
		b, errB := strconv.Atoi(stop)
		if errA == nil && errB == nil && (a < 0) == (b < 0) && a > b && g.chance(0.7) {
			start, stop = stop, start // mostly a non-empty range
		}
		if lgenIsBig(k) && cmd == "LRANGE" && g.chance(0.7) {
			// A window, not most of a big list.
			s := g.r.Intn(4000) - 2000
			start, stop = strconv.Itoa(s), strconv.Itoa(s+g.r.Intn(100))
		}
	}
	if cmd == "LTRIM" && g.chance(0.6) {
		// Mostly cut a little off either end, so lists stay populated.
		cut := 3
		if lgenIsBig(k) {
			cut = 50
		}
		start, stop = strconv.Itoa(g.r.Intn(cut)), strconv.Itoa(-1-g.r.Intn(cut))
	}
	g.emit(cmd, k, start, stop)
}

func (g *gen) genLSet(k string) {
	g.emit("LSET", k, g.listIndex(k), g.listElem(k))
}

func (g *gen) genLInsert(k string) {
	where := g.pick([]string{"BEFORE", "AFTER", "BEFORE", "AFTER", "before", "after"})
	if g.chance(0.04) {
		where = g.pick([]string{"MIDDLE", "", "BEFOREE", "0"})
	}
	g.emit("LINSERT", k, where, g.listProbe(k), g.listElem(k))
}

func (g *gen) genLRem(k string) {
	count := g.pick([]string{"0", "1", "2", "-1", "-2", "5", "-5", "100", "-100"})
	if g.chance(0.05) {
		count = g.pick(lgenIndexBad)
	}
	g.emit("LREM", k, count, g.listProbe(k))
}

// genLPos emits LPOS with RANK, COUNT and MAXLEN in any order and
// combination, sometimes repeated or invalid.
func (g *gen) genLPos(k string) {
	args := []string{"LPOS", k, g.listProbe(k)}
	var opts [][]string
	if g.chance(0.4) {
		r := g.pick([]string{"1", "2", "3", "-1", "-2", "-3", "5", "-5", "100", "-100"})
		if g.chance(0.06) {
			r = g.pick([]string{"0", "abc", "1.5", "", "9223372036854775808"})
		}
		opts = append(opts, []string{g.pick([]string{"RANK", "rank"}), r})
	}
	if g.chance(0.4) {
		c := g.pick([]string{"0", "1", "2", "3", "5", "100"})
		if g.chance(0.06) {
			c = g.pick([]string{"-1", "abc", "1.5", ""})
		}
		opts = append(opts, []string{g.pick([]string{"COUNT", "count"}), c})
	}
	if g.chance(0.3) {
		m := g.pick([]string{"0", "1", "2", "3", "5", "10", "1000"})
		if g.chance(0.06) {
			m = g.pick([]string{"-1", "abc", "1.5"})
		}
		opts = append(opts, []string{g.pick([]string{"MAXLEN", "maxlen"}), m})
	}
	if g.chance(0.04) {
		opts = append(opts, strings.Fields(g.pick([]string{"RANK 2", "COUNT 1", "FOO 1", "RANK", "MAXLEN"})))
	}
	g.r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	for _, o := range opts {
		args = append(args, o...)
	}
	g.emit(args...)
}

// listDir is LEFT or RIGHT in some spelling, or rarely a bad one.
func (g *gen) listDir() string {
	if g.chance(0.03) {
		return g.pick(lgenDirsBad)
	}
	return g.pick(lgenDirs)
}

// genLMove moves between lists, within one list (a rotation), across types
// and from missing keys.
func (g *gen) genLMove() {
	src, dst := g.listKey(), g.listDst()
	if g.chance(0.15) {
		dst = src
	}
	g.emit("LMOVE", src, dst, g.listDir(), g.listDir())
}

// lmpopTail is the numkeys, keys, direction and COUNT part of LMPOP and
// BLMPOP, over keys; sometimes with a wrong numkeys, direction or count.
func (g *gen) lmpopTail(keys []string) []string {
	numkeys := strconv.Itoa(len(keys))
	if g.chance(0.06) {
		numkeys = g.pick([]string{"0", "-1", "abc", "5", "1.5", ""})
	}
	args := append([]string{numkeys}, keys...)
	args = append(args, g.listDir())
	switch g.r.Intn(10) {
	case 0, 1, 2, 3:
		args = append(args, g.pick([]string{"COUNT", "count"}), g.listPopCount())
	case 4:
		if g.chance(0.3) {
			args = append(args, g.pick([]string{"COUNT", "COUNT 1 COUNT 2", "FOO", "COUNT 1 FOO"}))
			args = append(args[:len(args)-1], strings.Fields(args[len(args)-1])...)
		}
	}
	return args
}

func (g *gen) genLMPop() {
	keys := make([]string, 1+g.r.Intn(3))
	for i := range keys {
		keys[i] = g.listKey()
	}
	g.emit(append([]string{"LMPOP"}, g.lmpopTail(keys)...)...)
}

// genListBlocking emits a blocking command that returns at once (after a
// push to its first key), one that times out after lgenMaxWait on keys
// that are never written, or one Redis rejects for its arguments.
func (g *gen) genListBlocking() {
	cmd := g.pick([]string{"BLPOP", "BRPOP", "BLMOVE", "BRPOPLPUSH", "BLMPOP"})
	var keys []string
	var timeout string
	switch n := g.r.Intn(20); {
	case n < 14:
		k := g.listKey()
		g.emit(g.pick([]string{"LPUSH", "RPUSH"}), k, g.listElem(k), g.listElem(k))
		keys = []string{k}
		timeout = g.pick(lgenWaits)
	case n < 16:
		keys = []string{g.pick(lgenNoneKeys)}
		timeout = "0.01"
	default:
		keys = []string{g.listKey()}
		timeout = g.pick(lgenWaitsBad)
	}
	for i, extra := 0, g.r.Intn(3); i < extra && cmd != "BLMOVE" && cmd != "BRPOPLPUSH"; i++ {
		if keys[0] == lgenNoneKeys[0] || keys[0] == lgenNoneKeys[1] {
			keys = append(keys, g.pick(lgenNoneKeys))
		} else {
			keys = append(keys, g.listKey())
		}
	}
	switch cmd {
	case "BLPOP", "BRPOP":
		g.emit(append(append([]string{cmd}, keys...), timeout)...)
	case "BRPOPLPUSH":
		g.emit(cmd, keys[0], g.listDst(), timeout)
	case "BLMOVE":
		dst := g.listDst()
		if g.chance(0.15) && !strings.HasPrefix(keys[0], "lnone:") {
			dst = keys[0]
		}
		from, to := g.listDir(), g.listDir()
		if strings.HasPrefix(keys[0], "lnone:") {
			from, to = "LEFT", "RIGHT" // a bad direction would not wait
		}
		g.emit(cmd, keys[0], dst, from, to, timeout)
	default:
		tail := g.lmpopTail(keys)
		g.emit(append([]string{cmd, timeout}, tail...)...)
	}
}

// genListSelect switches databases, mostly back to db 0 where the big
// lists live, so most traffic finds them.
func (g *gen) genListSelect() {
	if g.chance(0.1) {
		g.emit("SELECT", g.pick([]string{"16", "-1", "abc", "1.0", ""}))
		return
	}
	g.db = 0
	if g.chance(0.4) {
		g.db = 1 + g.r.Intn(2)
	}
	g.emit("SELECT", strconv.Itoa(g.db))
}

// genBigList grows, shrinks, reads or edits a big list. Every push burst
// ends with an LTRIM to 1500-4000 elements, so the lists stay in the
// thousands.
func (g *gen) genBigList() {
	k := "bl:" + strconv.Itoa(g.bigIndex())
	switch g.r.Intn(12) {
	case 0, 1, 2, 3, 4:
		for b := 1 + g.r.Intn(3); b > 0; b-- {
			args := []string{g.pick([]string{"RPUSH", "LPUSH"}), k}
			long := g.chance(0.25)
			for j := 0; j < 100; j++ {
				e := g.listElem(k)
				if long && g.chance(0.2) {
					e = g.window(100 + g.r.Intn(300))
				}
				args = append(args, e)
			}
			g.emit(args...)
		}
		max := 1500 + g.r.Intn(2500)
		if g.chance(0.5) {
			g.emit("LTRIM", k, "0", strconv.Itoa(max-1))
		} else {
			g.emit("LTRIM", k, strconv.Itoa(-max), "-1")
		}
	case 5:
		g.genLRange("LRANGE", k)
	case 6:
		if g.chance(0.5) {
			g.emit("LINDEX", k, g.listIndex(k))
		} else {
			g.genLSet(k)
		}
	case 7:
		g.genLPos(k)
	case 8:
		if g.chance(0.5) {
			g.genLInsert(k)
		} else {
			g.emit("LREM", k, g.pick([]string{"1", "2", "-1", "-3", "0"}), g.listElem(k))
		}
	case 9:
		g.emit(g.pick([]string{"LPOP", "RPOP"}), k, strconv.Itoa(1+g.r.Intn(50)))
	case 10:
		other := "bl:" + strconv.Itoa(g.bigIndex())
		switch g.r.Intn(3) {
		case 0:
			g.emit("LMOVE", k, other, g.pick(lgenDirs[:2]), g.pick(lgenDirs[:2]))
		case 1:
			g.emit("LMPOP", "2", k, other, g.pick(lgenDirs[:2]), "COUNT", strconv.Itoa(1+g.r.Intn(30)))
		default:
			g.emit("RPUSH", k, g.listElem(k))
			g.emit("BLMPOP", "1", "2", k, other, g.pick(lgenDirs[:2]), "COUNT", strconv.Itoa(1+g.r.Intn(30)))
		}
	default:
		switch g.r.Intn(4) {
		case 0, 1:
			g.emit("LLEN", k)
		case 2:
			g.emit("TYPE", k)
		default:
			g.emit("OBJECT", "ENCODING", k)
		}
	}
}

// genManyLists writes or reads one of many small lists, which together
// exceed the hot tier.
func (g *gen) genManyLists() {
	k := "lm:" + strconv.Itoa(g.r.Intn(lgenManyLists))
	switch g.r.Intn(6) {
	case 0, 1:
		args := []string{g.pick([]string{"RPUSH", "LPUSH"}), k}
		for j, n := 0, 1+g.r.Intn(6); j < n; j++ {
			e := g.listElem(k)
			if g.chance(0.08) {
				e = g.window(65 + g.r.Intn(536))
			}
			args = append(args, e)
		}
		g.emit(args...)
	case 2:
		g.emit("LRANGE", k, "0", "-1")
	case 3:
		g.emit("LLEN", k)
	case 4:
		g.emit(g.pick([]string{"LPOP", "RPOP"}), k)
	default:
		g.emit("LINDEX", k, g.listIndex(k))
	}
}

// genListKeyScan iterates SCAN over the current database, mostly filtered
// by TYPE list.
func (g *gen) genListKeyScan() {
	args := []string{"SCAN", "0"}
	if g.chance(0.4) {
		args = append(args, g.pick([]string{"MATCH", "match"}), g.pick(lgenPatterns))
	}
	if g.chance(0.4) {
		args = append(args, "COUNT", g.pick([]string{"1", "5", "10", "100"}))
	}
	if g.chance(0.8) {
		args = append(args, g.pick([]string{"TYPE", "type"}),
			g.pick([]string{"list", "list", "list", "LIST", "string", "hash", "set", "zset"}))
	}
	g.emitKind(opScan, args...)
}

// genListShortExpiry gives a list a 1-50 ms expiry and sleeps past it, then
// reads the key back.
func (g *gen) genListShortExpiry() {
	k := g.pick(lgenSmallKeys)
	ms := 1 + g.r.Intn(50)
	g.emit("RPUSH", k, g.listElem(k))
	g.emit("PEXPIRE", k, strconv.Itoa(ms))
	g.queue = append(g.queue, op{Sleep: time.Duration(ms+30) * time.Millisecond})
	if g.chance(0.2) {
		g.emit("LRANGE", k, "0", "-1")
	} else {
		g.emit(g.pick([]string{"EXISTS", "TYPE", "LLEN", "TTL"}), k)
	}
}

// genListCrossType uses string, hash and set commands on list keys and
// creates strings, a hash and a set where list commands will find them.
func (g *gen) genListCrossType() {
	switch g.r.Intn(12) {
	case 0, 1:
		g.emit("SET", g.pick(lgenStrKeys), g.value())
	case 2:
		g.emit("HSET", lgenHashKey, g.pick([]string{"f1", "f2", "f3"}), g.value())
	case 3:
		g.emit("SADD", lgenSetKey, g.pick(lgenElems), g.pick(lgenElems))
	case 4:
		if g.chance(0.25) {
			g.emit("GETRANGE", g.listKey(), "0", "-1")
		} else {
			g.emit(g.pick([]string{"GET", "STRLEN", "GETDEL"}), g.listKey())
		}
	case 5:
		g.emit(g.pick([]string{"APPEND", "SETNX", "GETSET"}), g.listKey(), g.value())
	case 6:
		g.emit(g.pick([]string{"INCR", "DECR"}), g.listKey())
	case 7:
		if g.chance(0.5) {
			g.emit("HGET", g.listKey(), "f1")
		} else {
			g.emit("HSET", g.listKey(), "f1", "v")
		}
	case 8:
		g.emit(g.pick([]string{"HLEN", "HGETALL", "SCARD", "SMEMBERS"}), g.listKey())
	case 9:
		g.emit(g.pick([]string{"SADD", "SISMEMBER"}), g.listKey(), g.pick(lgenElems))
	case 10:
		g.emit("MGET", g.listKey(), g.pick(lgenStrKeys), g.listKey())
	default:
		// Overwrite a list with a string, now and then.
		if g.chance(0.3) {
			g.emit("SET", g.pick(lgenSmallKeys), g.value())
		} else {
			g.emit("TYPE", g.pick([]string{lgenHashKey, lgenSetKey, "str1"}))
		}
	}
}

// genListWrongArity calls a list command with an argument count its arity
// rejects (Redis checks arity before anything else, so no blocking command
// waits).
func (g *gen) genListWrongArity() {
	name := g.pick(lgenArityNames)
	a := lgenArity[name]
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
			args = append(args, g.listKey())
		} else {
			args = append(args, g.listElem(""))
		}
	}
	g.emit(args...)
}
