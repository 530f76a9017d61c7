package integration

import (
	"math/rand"
	"strconv"
	"strings"
	"time"
)

// genConfig selects what the command generator may emit.
type genConfig struct {
	// Lists lets the generator create lists with RPUSH so WRONGTYPE paths
	// are exercised. Off until the subject implements lists.
	Lists bool
	// Collections switches the generator to hash and set traffic
	// (gen_coll_test.go) instead of string traffic.
	Collections bool
	// ListCommands switches the generator to list traffic
	// (gen_list_test.go); it takes precedence over Collections.
	ListCommands bool
	// ZSetCommands switches the generator to sorted-set traffic
	// (gen_zset_test.go); it takes precedence over ListCommands and
	// Collections.
	ZSetCommands bool
}

// op is one generated step: a command, or a pause (Sleep > 0, Args nil)
// that lets short expiries pass. Kind says how the runner compares the
// command's replies.
type op struct {
	Args  []string
	Sleep time.Duration
	Kind  opKind
}

type opKind int

const (
	// opCommand: send once to both servers, compare the replies
	// (compareReplies).
	opCommand opKind = iota
	// opScan: Args is the first call of a SCAN, HSCAN or SSCAN iteration
	// (cursor "0"); the runner iterates each server to cursor 0 on its own
	// and compares the de-duplicated union of what they returned
	// (scanUnion).
	opScan
	// opRandom: HRANDFIELD, SRANDMEMBER or SPOP, whose replies are random;
	// checked by randomCheck.
	opRandom
	// opZScan: Args is the first call of a ZSCAN iteration; compared like
	// opScan, as member/score pairs (zscanUnion).
	opZScan
	// opZRandom: ZRANDMEMBER; checked by randomCheck.checkZRandMember.
	opZRandom
)

// arity is Redis 7.0's COMMAND arity (name included; negative = at least).
var arity = map[string]int{
	"get": 2, "set": -3, "setnx": 3, "setex": 4, "psetex": 4, "getset": 3, "getdel": 2,
	"getex": -2, "mget": -2, "mset": -3, "msetnx": -3, "append": 3, "strlen": 2,
	"incr": 2, "decr": 2, "incrby": 3, "decrby": 3, "incrbyfloat": 3, "getrange": 4,
	"substr": 4, "setrange": 4, "lcs": -3, "setbit": 4, "getbit": 3, "bitcount": -2,
	"bitpos": -3, "bitop": -4, "bitfield": -2, "bitfield_ro": -2, "del": -2, "unlink": -2,
	"exists": -2, "type": 2, "touch": -2, "expire": -3, "pexpire": -3, "expireat": -3,
	"pexpireat": -3, "ttl": 2, "pttl": 2, "expiretime": 2, "pexpiretime": 2, "persist": 2,
	"rename": 3, "renamenx": 3, "copy": -3, "move": 3, "select": 2, "dbsize": 1, "keys": 2,
	"randomkey": 1, "echo": 2, "ping": -1,
}

// arityNames is arity's keys in a fixed order, so generation is seeded only.
var arityNames = func() []string {
	names := make([]string, 0, len(arity))
	for n := range arity {
		names = append(names, n)
	}
	sortStrings(names)
	return names
}()

var (
	smallKeys = []string{"a", "b", "c", "k1", "k2", "k3", "k10", "key:1", "key:2", "user:{1}", "x", "y"}
	listKeys  = []string{"l1", "l2"}
	patterns  = []string{"*", "k*", "key:?", "k[12]*", "*:*", "[a-c]", "big:1*", "\\*", "user:{1}",
		"*x*", "[^k]*", "?", "*1", "l?", "big:*"}
	smallValues = []string{"", "0", "1", "-1", "10", "123", "-5", "3.5", "1e3", "abc", "hello world",
		"9223372036854775807", "-9223372036854775808", "18446744073709551616", " 1", "0x10", "+1",
		"007", "\x00\xff", "foobar", "1.0", "-0", "2.5e-3", "inf", "   "}
	intArgs = []string{"0", "1", "-1", "5", "-7", "100", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "abc", "1.5", "", " 1", "1 ", "0x1", "+3", "-0", "00"}
	floatArgs = []string{"0", "1.5", "-0.25", "1e2", "3", "-2.5", "abc", "inf", "-inf", "nan", "5.0e3",
		"1e400", "0.1", "", "1.", ".5", " 1"}
	bitfieldTypes = []string{"i1", "i5", "i8", "u8", "i16", "u16", "i32", "u32", "i63", "u63", "i64",
		"u64", "i65", "x8", "u0", "i0"}
)

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// gen produces a reproducible command sequence for strings and the generic
// keyspace. Its output depends only on the seed and on epoch (the Unix time
// absolute expiries are computed from), never on replies.
type gen struct {
	r     *rand.Rand
	cfg   genConfig
	db    int
	epoch int64 // Unix seconds; absolute expiries sit on a grid epoch+100*k
	queue []op
	bigs  []byte // random letters that big values are windows of
}

func newGen(seed int64, epoch int64, cfg genConfig) *gen {
	g := &gen{r: rand.New(rand.NewSource(seed)), cfg: cfg, epoch: epoch}
	g.bigs = make([]byte, 64<<10)
	for i := range g.bigs {
		g.bigs[i] = byte('a' + g.r.Intn(26))
	}
	return g
}

// next returns the next step.
func (g *gen) next() op {
	for len(g.queue) == 0 {
		g.produce()
	}
	o := g.queue[0]
	g.queue = g.queue[1:]
	return o
}

func (g *gen) emit(args ...string) { g.queue = append(g.queue, op{Args: args}) }

// emitKind queues a command compared the way kind says.
func (g *gen) emitKind(kind opKind, args ...string) {
	g.queue = append(g.queue, op{Args: args, Kind: kind})
}

func (g *gen) pick(s []string) string { return s[g.r.Intn(len(s))] }

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

// key draws from the small pool mostly (so commands collide), sometimes from
// the pool of big values, and, with lists on, from the list keys.
func (g *gen) key() string {
	switch n := g.r.Intn(100); {
	case n < 84:
		return g.pick(smallKeys)
	case n < 96:
		return "big:" + strconv.Itoa(g.r.Intn(24))
	default:
		if g.cfg.Lists {
			return g.pick(listKeys)
		}
		return g.pick(smallKeys)
	}
}

func (g *gen) keys(min, max int) []string {
	n := min + g.r.Intn(max-min+1)
	out := make([]string, n)
	for i := range out {
		out[i] = g.key()
	}
	return out
}

func (g *gen) value() string {
	switch n := g.r.Intn(10); {
	case n < 5:
		return g.pick(smallValues)
	case n < 8:
		return strconv.Itoa(g.r.Intn(2000) - 1000)
	default:
		b := make([]byte, 1+g.r.Intn(20))
		for i := range b {
			b[i] = byte('a' + g.r.Intn(6))
		}
		return string(b)
	}
}

// bigValue is 16-56 KB of letters.
func (g *gen) bigValue() string {
	n := 16<<10 + g.r.Intn(40<<10)
	off := g.r.Intn(len(g.bigs) - n)
	return string(g.bigs[off : off+n])
}

func (g *gen) intArg() string {
	if g.chance(0.7) {
		return strconv.Itoa(g.r.Intn(41) - 20)
	}
	return g.pick(intArgs)
}

// relSeconds is a long relative TTL off the absolute grid (150, 250, ...
// 1050 s), so GT/LT comparisons against grid expiries are deterministic.
func (g *gen) relSeconds() int64 { return 100*int64(1+g.r.Intn(10)) + 50 }

// absSeconds is on the grid epoch+100*k, or (with past) sometimes in the
// past.
func (g *gen) absSeconds(past bool) int64 {
	if past && g.chance(0.1) {
		return g.epoch - 100
	}
	return g.epoch + 100*int64(1+g.r.Intn(10))
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// expiryOpt returns one SET/GETEX-style expiry option (with its value).
// SET (keepTTL true) gets no past absolute times: Redis keeps such a key,
// already expired, until it is touched or its active expiry cycle finds it,
// so DBSIZE would depend on timing. GETEX deletes it at once.
func (g *gen) expiryOpt(keepTTL bool) []string {
	switch g.r.Intn(12) {
	case 0, 1:
		return []string{"EX", itoa(g.relSeconds())}
	case 2, 3:
		return []string{"PX", itoa(g.relSeconds()*1000 + int64(g.r.Intn(1000)))}
	case 4, 5:
		return []string{"EXAT", itoa(g.absSeconds(!keepTTL))}
	case 6, 7:
		return []string{"PXAT", itoa(g.absSeconds(!keepTTL) * 1000)}
	case 8:
		if keepTTL {
			return []string{"KEEPTTL"}
		}
		return []string{"PERSIST"}
	case 9:
		return []string{g.pick([]string{"EX", "PX", "EXAT", "PXAT"}), g.pick([]string{"0", "-1", "abc", "9223372036854775807", "1.5"})}
	case 10:
		return []string{g.pick([]string{"ex", "px", "Ex"}), itoa(g.relSeconds())}
	default:
		return []string{g.pick([]string{"EX", "PX"})} // missing value: syntax error
	}
}

// produce appends the next command (or group of commands) to the queue.
func (g *gen) produce() {
	if g.cfg.ZSetCommands {
		g.produceZSet()
		return
	}
	if g.cfg.ListCommands {
		g.produceList()
		return
	}
	if g.cfg.Collections {
		g.produceColl()
		return
	}
	n := g.r.Intn(1000)
	switch {
	case n < 70:
		g.emit("GET", g.key())
	case n < 150:
		g.genSet()
	case n < 165:
		g.emit("SETNX", g.key(), g.value())
	case n < 175:
		g.emit("SETEX", g.key(), g.pick([]string{itoa(g.relSeconds()), "0", "-5", "abc"}), g.value())
	case n < 185:
		g.emit("PSETEX", g.key(), g.pick([]string{itoa(g.relSeconds() * 1000), "0", "-5", "x"}), g.value())
	case n < 195:
		g.emit("GETSET", g.key(), g.value())
	case n < 205:
		g.emit("GETDEL", g.key())
	case n < 220:
		args := []string{"GETEX", g.key()}
		if g.chance(0.7) {
			args = append(args, g.expiryOpt(false)...)
		}
		if g.chance(0.05) {
			args = append(args, g.expiryOpt(false)...)
		}
		g.emit(args...)
	case n < 235:
		g.emit(append([]string{"MGET"}, g.keys(1, 5)...)...)
	case n < 250:
		g.genMSet("MSET")
	case n < 258:
		g.genMSet("MSETNX")
	case n < 275:
		g.emit("APPEND", g.key(), g.value())
	case n < 285:
		g.emit("STRLEN", g.key())
	case n < 300:
		g.emit(g.pick([]string{"INCR", "DECR"}), g.key())
	case n < 315:
		g.emit(g.pick([]string{"INCRBY", "DECRBY"}), g.key(), g.intArg())
	case n < 328:
		g.emit("INCRBYFLOAT", g.key(), g.pick(floatArgs))
	case n < 345:
		g.emit(g.pick([]string{"GETRANGE", "SUBSTR"}), g.key(), g.intArg(), g.intArg())
	case n < 358:
		g.genSetRange()
	case n < 365:
		g.genLCS()
	case n < 380:
		g.genSetBit()
	case n < 390:
		g.emit("GETBIT", g.key(), g.pick([]string{"0", "1", "7", "8", "100", "5000", "-1", "abc", "4294967296"}))
	case n < 402:
		g.genBitCount()
	case n < 414:
		g.genBitPos()
	case n < 424:
		g.genBitOp()
	case n < 438:
		g.genBitField()
	case n < 460:
		g.emit(append([]string{g.pick([]string{"DEL", "UNLINK"})}, g.keys(1, 4)...)...)
	case n < 475:
		g.emit(append([]string{"EXISTS"}, g.keys(1, 4)...)...)
	case n < 487:
		g.emit("TYPE", g.key())
	case n < 495:
		g.emit(append([]string{"TOUCH"}, g.keys(1, 3)...)...)
	case n < 540:
		g.genExpire()
	case n < 585:
		g.emit(g.pick([]string{"TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"}), g.key())
	case n < 595:
		g.emit("PERSIST", g.key())
	case n < 612:
		g.emit(g.pick([]string{"RENAME", "RENAMENX"}), g.key(), g.key())
	case n < 627:
		g.genCopy()
	case n < 635:
		g.emit("MOVE", g.key(), g.pick([]string{"0", "1", "2", "2", "16", "-1", "x"}))
	case n < 650:
		g.genSelect()
	case n < 658:
		g.emit("DBSIZE")
	case n < 672:
		g.emit("KEYS", g.pick(patterns))
	case n < 676:
		g.genRandomKey()
	case n < 684:
		g.emit("ECHO", g.value())
	case n < 690:
		if g.chance(0.5) {
			g.emit("PING")
		} else {
			g.emit("PING", g.value())
		}
	case n < 750:
		g.genBig()
	case n < 756:
		g.genShortExpiry()
	case n < 780:
		if g.cfg.Lists {
			g.emit("RPUSH", g.pick(append([]string{g.pick(smallKeys)}, listKeys...)), g.value(), g.value())
		} else {
			g.emit("GET", g.key())
		}
	case n < 825:
		g.genWrongArity()
	case n < 850:
		g.genUnknown()
	default:
		// The most common traffic once more, to keep keys populated.
		if g.chance(0.5) {
			g.emit("SET", g.key(), g.value())
		} else {
			g.emit("GET", g.key())
		}
	}
}

func (g *gen) genSet() {
	args := []string{"SET", g.key(), g.value()}
	opts := [][]string{}
	if g.chance(0.4) {
		opts = append(opts, g.expiryOpt(true))
	}
	if g.chance(0.25) {
		opts = append(opts, []string{g.pick([]string{"NX", "XX", "nx", "xx"})})
	}
	if g.chance(0.2) {
		opts = append(opts, []string{"GET"})
	}
	if g.chance(0.05) {
		opts = append(opts, []string{g.pick([]string{"NX", "XX", "GET", "KEEPTTL", "FOO", "EX"})})
	}
	g.r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
	for _, o := range opts {
		args = append(args, o...)
	}
	g.emit(args...)
}

func (g *gen) genMSet(cmd string) {
	args := []string{cmd}
	for i, n := 0, 1+g.r.Intn(4); i < n; i++ {
		args = append(args, g.key(), g.value())
	}
	if g.chance(0.05) {
		args = append(args, g.key()) // odd count: arity error
	}
	g.emit(args...)
}

func (g *gen) genSetRange() {
	off := g.pick([]string{"0", "1", "3", "10", "64", "100", "4000", "-1", "abc", "536870912", "536870911"})
	val := g.value()
	if off == "536870911" || off == "536870912" {
		// Only the error path: a valid huge offset would allocate 512 MB.
		if off == "536870911" {
			val = "ab"
		} else if val == "" {
			val = "x"
		}
	}
	g.emit("SETRANGE", g.key(), off, val)
}

// genLCS works on dedicated short strings so the O(n*m) table stays small.
func (g *gen) genLCS() {
	short := func() string {
		b := make([]byte, g.r.Intn(25))
		for i := range b {
			b[i] = "abcd "[g.r.Intn(5)]
		}
		return string(b)
	}
	g.emit("SET", "lcs:a", short())
	g.emit("SET", "lcs:b", short())
	b := "lcs:b"
	if g.chance(0.15) {
		b = g.key() // nonexistent, WRONGTYPE, or a string of any size vs a tiny one
	}
	args := []string{"LCS", "lcs:a", b}
	switch g.r.Intn(6) {
	case 1:
		args = append(args, "LEN")
	case 2:
		args = append(args, "IDX")
	case 3:
		args = append(args, "IDX", "MINMATCHLEN", g.pick([]string{"0", "1", "2", "3", "-1", "x"}))
	case 4:
		args = append(args, "IDX", "WITHMATCHLEN")
		if g.chance(0.5) {
			args = append(args, "MINMATCHLEN", "2")
		}
	case 5:
		args = append(args, g.pick([]string{"LEN IDX", "FOO", "MINMATCHLEN"}))
		args = append(args[:len(args)-1], strings.Fields(args[len(args)-1])...)
	}
	g.emit(args...)
}

func (g *gen) genSetBit() {
	off := strconv.Itoa(g.r.Intn(2000))
	if g.chance(0.1) {
		off = g.pick([]string{"-1", "4294967296", "abc", "1.5", "0"})
	}
	val := g.pick([]string{"0", "1", "1"})
	if g.chance(0.05) {
		val = g.pick([]string{"2", "-1", "x", ""})
	}
	g.emit("SETBIT", g.key(), off, val)
}

func (g *gen) genBitCount() {
	args := []string{"BITCOUNT", g.key()}
	if g.chance(0.6) {
		args = append(args, g.intArg(), g.intArg())
		if g.chance(0.4) {
			args = append(args, g.pick([]string{"BYTE", "BIT", "bit", "WORD"}))
		}
	} else if g.chance(0.1) {
		args = append(args, "0") // start without end: syntax error
	}
	g.emit(args...)
}

func (g *gen) genBitPos() {
	args := []string{"BITPOS", g.key(), g.pick([]string{"0", "1", "1", "2", "x"})}
	if g.chance(0.6) {
		args = append(args, g.intArg())
		if g.chance(0.6) {
			args = append(args, g.intArg())
			if g.chance(0.4) {
				args = append(args, g.pick([]string{"BYTE", "BIT", "bit", "WORD"}))
			}
		}
	}
	g.emit(args...)
}

func (g *gen) genBitOp() {
	op := g.pick([]string{"AND", "OR", "XOR", "NOT", "and", "not", "NAND"})
	srcs := g.keys(1, 3)
	if op == "NOT" || op == "not" {
		if g.chance(0.85) {
			srcs = srcs[:1]
		}
	}
	g.emit(append([]string{"BITOP", op, g.key()}, srcs...)...)
}

func (g *gen) genBitField() {
	ro := g.chance(0.2)
	args := []string{"BITFIELD", g.key()}
	if ro {
		args[0] = "BITFIELD_RO"
	}
	for i, n := 0, 1+g.r.Intn(3); i < n; i++ {
		typ := g.pick(bitfieldTypes[:11])
		if g.chance(0.05) {
			typ = g.pick(bitfieldTypes)
		}
		off := strconv.Itoa(g.r.Intn(300))
		if g.chance(0.2) {
			off = "#" + strconv.Itoa(g.r.Intn(10))
		}
		if g.chance(0.03) {
			off = g.pick([]string{"-1", "x", "#-1", "4294967296"})
		}
		sub := g.r.Intn(10)
		if ro {
			sub = 0
			if g.chance(0.05) {
				sub = 5 // SET under BITFIELD_RO: error
			}
		}
		switch {
		case sub < 4:
			args = append(args, "GET", typ, off)
		case sub < 7:
			args = append(args, "SET", typ, off, g.intArg())
		case sub < 9:
			args = append(args, "INCRBY", typ, off, g.intArg())
		default:
			args = append(args, "OVERFLOW", g.pick([]string{"WRAP", "SAT", "FAIL", "fail", "BAD"}))
		}
	}
	if g.chance(0.03) {
		args = append(args, g.pick([]string{"GET", "FOO", "SET"}))
	}
	g.emit(args...)
}

// genExpire emits a relative or absolute expire. GT/LT are used only with
// absolute grid times or non-positive relative ones, whose comparison with
// any TTL the generator can create does not depend on timing.
func (g *gen) genExpire() { g.genExpireOn(g.key()) }

// genExpireOn is genExpire on key k.
func (g *gen) genExpireOn(k string) {
	flag := func(withOrder bool) []string {
		if !g.chance(0.4) {
			return nil
		}
		if withOrder {
			return []string{g.pick([]string{"NX", "XX", "GT", "LT", "nx", "gt"})}
		}
		return []string{g.pick([]string{"NX", "XX", "nx"})}
	}
	var args []string
	switch g.r.Intn(10) {
	case 0, 1:
		args = append([]string{"EXPIRE", k, itoa(g.relSeconds())}, flag(false)...)
	case 2, 3:
		args = append([]string{"PEXPIRE", k, itoa(g.relSeconds() * 1000)}, flag(false)...)
	case 4, 5:
		args = append([]string{"EXPIREAT", k, itoa(g.absSeconds(true))}, flag(true)...)
	case 6, 7:
		args = append([]string{"PEXPIREAT", k, itoa(g.absSeconds(true) * 1000)}, flag(true)...)
	case 8:
		args = append([]string{g.pick([]string{"EXPIRE", "PEXPIRE"}), k, g.pick([]string{"0", "-1", "-100"})}, flag(true)...)
	default:
		args = []string{g.pick([]string{"EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"}), k,
			g.pick([]string{"abc", "1.5", "", "9223372036854775807", "-9223372036854775808", "9223372036854775"})}
		if g.chance(0.5) {
			args[2] = itoa(g.relSeconds())
			args = append(args, g.pick([]string{"NX XX", "GT LT", "NX GT", "FOO", "XX XX"}))
			args = append(args[:len(args)-1], strings.Fields(args[len(args)-1])...)
		}
	}
	g.emit(args...)
}

func (g *gen) genCopy() { g.genCopyOf(g.key) }

// genCopyOf emits a COPY between two keys drawn by key, with or without
// DB, REPLACE and a bad option.
func (g *gen) genCopyOf(key func() string) {
	args := []string{"COPY", key(), key()}
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

func (g *gen) genSelect() {
	if g.chance(0.1) {
		g.emit("SELECT", g.pick([]string{"16", "-1", "abc", "1.0", ""}))
		return
	}
	g.db = g.r.Intn(3)
	g.emit("SELECT", strconv.Itoa(g.db))
}

// genRandomKey runs RANDOMKEY on db 9 holding 0 or 1 keys, where its result
// is not random.
func (g *gen) genRandomKey() {
	g.emit("SELECT", "9")
	g.emit("FLUSHDB")
	if g.chance(0.6) {
		g.emit("SET", g.key(), g.value())
	}
	g.emit("RANDOMKEY")
	g.emit("SELECT", strconv.Itoa(g.db))
}

// genBig writes or reads a value of several KB on the big-key pool, so that a
// small maxmemory forces demotion and promotion.
func (g *gen) genBig() {
	k := "big:" + strconv.Itoa(g.r.Intn(24))
	switch g.r.Intn(8) {
	case 0, 1, 2:
		g.emit("SET", k, g.bigValue())
	case 3:
		g.emit("APPEND", k, g.value())
	case 4:
		g.emit("GETRANGE", k, strconv.Itoa(g.r.Intn(40000)), strconv.Itoa(g.r.Intn(50000)))
	case 5:
		g.emit("STRLEN", k)
	case 6:
		g.emit("SETRANGE", k, strconv.Itoa(g.r.Intn(40000)), g.value())
	default:
		g.emit("GET", k)
	}
}

// genShortExpiry sets a 1-50 ms expiry and sleeps past it, so expiry happens
// while both servers are idle, then reads the key back.
func (g *gen) genShortExpiry() {
	k := g.key()
	ms := 1 + g.r.Intn(50)
	switch g.r.Intn(3) {
	case 0:
		g.emit("SET", k, g.value(), "PX", strconv.Itoa(ms))
	case 1:
		g.emit("PSETEX", k, strconv.Itoa(ms), g.value())
	default:
		g.emit("SET", k, g.value())
		g.emit("PEXPIRE", k, strconv.Itoa(ms))
	}
	g.queue = append(g.queue, op{Sleep: time.Duration(ms+30) * time.Millisecond})
	g.emit(g.pick([]string{"GET", "EXISTS", "TTL", "TYPE"}), k)
}

// genWrongArity calls a command with an argument count its arity rejects.
func (g *gen) genWrongArity() {
	name := g.pick(arityNames)
	a := arity[name]
	var n int // total words including the name
	if a > 0 {
		for n = g.r.Intn(a + 3); n == a || n == 0; n = g.r.Intn(a + 3) {
		}
	} else {
		if -a == 1 {
			g.emit("GET") // every count is valid for PING-like commands
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
			args = append(args, g.key())
		} else {
			args = append(args, g.value())
		}
	}
	g.emit(args...)
}

func (g *gen) genUnknown() {
	switch g.r.Intn(6) {
	case 0:
		g.emit("FOO", g.key(), g.value())
	case 1:
		g.emit("GETT", g.key())
	case 2:
		g.emit("SETT")
	case 3:
		g.emit(g.pick([]string{"OBJECT", "CONFIG", "CLIENT"}), g.pick([]string{"FOO", "bar", "x"}), g.key())
	case 4:
		g.emit("", g.key())
	default:
		long := strings.Repeat("z", 150)
		g.emit("NOSUCHCMD", long, g.value(), g.value(), g.value())
	}
}
