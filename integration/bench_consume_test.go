package integration

// The consumed-structures part of `make bench` (issue 19, "no operation
// slows down with the deletes before it"): a structure on disk popped down
// from one end leaves a tombstone per pop in the store, and a pop that
// walks from that end must not step over them. For each pattern the same
// structure is loaded into redis-server and into a Spillway whose budget
// keeps it cold, and popped down by one client; the rate of the first 10%
// of the pops and of the last 10% are measured, one pop per command (the
// 80% between are popped in bulk: they only have to leave their
// tombstones), and the report gives last/first for both servers against
// the goal (Spillway's last/first at least 0.8). Like the rest of the
// benchmark it asserts nothing about time; it fails only when a server
// replies something wrong (every reply is checked: the member or element
// popped, the counts).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/benchreport"
	"github.com/spillway/spillway/integration/harness"
)

// consumeZSetN is the size of the sorted sets popped (the issue's
// 1,000,000); consumeOtherN that of the lists, sets and streams, and of
// each of the two waves of expiring keys, chosen so the section takes a
// few minutes on 2 cores. SPILLWAY_BENCH_CONSUME_DIV=N divides both (a
// quick look; the report says the sizes), SPILLWAY_BENCH_CONSUME_ONLY=S
// keeps the patterns whose name starts with S (and the expiry waves).
var consumeZSetN, consumeOtherN = 1_000_000, 200_000

const (
	// consumeDepth is how many pops are pipelined per round trip where a
	// pop does not depend on the previous reply (all but the job pattern,
	// whose ZREM names the member its ZRANGEBYSCORE returned).
	consumeDepth = 16
	// consumeBulk is the size of the bulk pops of the middle 80%.
	consumeBulk = 1000
	// consumeMaxMemory keeps every structure cold in Spillway (sorted sets
	// over 4,096 members are always served from the store; the others are
	// far over an eighth of the hot tier).
	consumeMaxMemory = "16mb"
	// consumeGoal is the goal for Spillway's last/first.
	consumeGoal = 0.8
)

// consumePattern is one structure consumed at one end.
type consumePattern struct {
	name string // row label: the command(s) of one pop
	what string // the structure, for the table
	key  string
	n    int
	// load writes the commands that build the structure and returns how
	// many it wrote.
	load func(w *respWriter) int
	// setup runs once the structure is loaded (stream groups), on c.
	setup func(c *harness.Conn) error
	// pop is the command popping element i, and check its reply.
	pop   func(i int) []string
	check func(i int, r harness.Reply) error
	// round, if set, replaces pop/check: a pop that needs round trips of
	// its own (the job pattern).
	round func(c *harness.Conn, i int) error
	// bulk pops elements i..i+m-1 in one command; bulkN is how many
	// elements its reply says it popped.
	bulk  func(i, m int) []string
	bulkN func(r harness.Reply) int
}

func member(i int) string   { return fmt.Sprintf("m:%09d", i) }
func streamID(i int) string { return strconv.Itoa(i+1) + "-1" }

// zsetLoad writes ZADDs of member(i) scored i, i < n.
func zsetLoad(key string, n int) func(w *respWriter) int {
	return func(w *respWriter) int {
		cmds := 0
		args := make([][]byte, 0, 2+2*consumeBulk)
		for lo := 0; lo < n; lo += consumeBulk {
			args = append(args[:0], []byte("ZADD"), []byte(key))
			for i := lo; i < min(lo+consumeBulk, n); i++ {
				args = append(args, []byte(strconv.Itoa(i)), []byte(member(i)))
			}
			w.command(args...)
			cmds++
		}
		return cmds
	}
}

// membersLoad writes cmd key member(i)... in batches (RPUSH, SADD).
func membersLoad(cmd, key string, n int) func(w *respWriter) int {
	return func(w *respWriter) int {
		cmds := 0
		args := make([][]byte, 0, 2+consumeBulk)
		for lo := 0; lo < n; lo += consumeBulk {
			args = append(args[:0], []byte(cmd), []byte(key))
			for i := lo; i < min(lo+consumeBulk, n); i++ {
				args = append(args, []byte(member(i)))
			}
			w.command(args...)
			cmds++
		}
		return cmds
	}
}

// streamLoad writes XADD key streamID(i) f member(i) for i < n.
func streamLoad(key string, n int) func(w *respWriter) int {
	return func(w *respWriter) int {
		for i := range n {
			w.command([]byte("XADD"), []byte(key), []byte(streamID(i)), []byte("f"), []byte(member(i)))
		}
		return n
	}
}

// zpopCheck checks a ZPOPMIN/ZPOPMAX reply [member, score] (or
// BZPOPMIN's [key, member, score]) for member want.
func zpopCheck(key string, want func(i int) int, blocking bool) func(i int, r harness.Reply) error {
	return func(i int, r harness.Reply) error {
		el := r.Elems
		if blocking {
			if len(el) != 3 || el[0].Str != key {
				return fmt.Errorf("reply %s", r.String())
			}
			el = el[1:]
		}
		w := want(i)
		if len(el) != 2 || el[0].Str != member(w) || el[1].Str != strconv.Itoa(w) {
			return fmt.Errorf("reply %s, want %s %d", r.String(), member(w), w)
		}
		return nil
	}
}

func intIs(want int) func(i int, r harness.Reply) error {
	return func(_ int, r harness.Reply) error {
		if r.Type != ':' || r.Int != int64(want) {
			return fmt.Errorf("reply %s, want %d", r.String(), want)
		}
		return nil
	}
}

func bulkIs(want func(i int) string) func(i int, r harness.Reply) error {
	return func(i int, r harness.Reply) error {
		if r.Type != '$' || r.Str != want(i) {
			return fmt.Errorf("reply %s, want %s", r.String(), want(i))
		}
		return nil
	}
}

func arrayLen(div int) func(r harness.Reply) int {
	return func(r harness.Reply) int {
		if r.Type != '*' {
			return -1
		}
		return len(r.Elems) / div
	}
}

func replyInt(r harness.Reply) int {
	if r.Type != ':' {
		return -1
	}
	return int(r.Int)
}

func idList(cmd []string, i, m int) []string {
	for j := i; j < i+m; j++ {
		cmd = append(cmd, streamID(j))
	}
	return cmd
}

// consumePatterns are the patterns measured, in order.
func consumePatterns() []consumePattern {
	zn, on := consumeZSetN, consumeOtherN
	// A cold stream's pending entries are read per record (an XACK is a
	// point read and the deletes), so its stream is the others' size.
	xn := on
	up := func(i int) int { return i }
	down := func(i int) int { return zn - 1 - i }
	zbulk := func(cmd, key string) func(i, m int) []string {
		return func(_, m int) []string { return []string{cmd, key, strconv.Itoa(m)} }
	}
	return []consumePattern{
		{name: "ZPOPMIN", what: "sorted set", key: "cq:zmin", n: zn, load: zsetLoad("cq:zmin", zn),
			pop: func(int) []string { return []string{"ZPOPMIN", "cq:zmin"} }, check: zpopCheck("cq:zmin", up, false),
			bulk: zbulk("ZPOPMIN", "cq:zmin"), bulkN: arrayLen(2)},
		{name: "ZPOPMAX", what: "sorted set", key: "cq:zmax", n: zn, load: zsetLoad("cq:zmax", zn),
			pop: func(int) []string { return []string{"ZPOPMAX", "cq:zmax"} }, check: zpopCheck("cq:zmax", down, false),
			bulk: zbulk("ZPOPMAX", "cq:zmax"), bulkN: arrayLen(2)},
		{name: "BZPOPMIN", what: "sorted set", key: "cq:zbmin", n: zn, load: zsetLoad("cq:zbmin", zn),
			pop: func(int) []string { return []string{"BZPOPMIN", "cq:zbmin", "1"} }, check: zpopCheck("cq:zbmin", up, true),
			bulk: zbulk("ZPOPMIN", "cq:zbmin"), bulkN: arrayLen(2)},
		{name: "ZRANGEBYSCORE -inf +inf LIMIT 0 1 + ZREM", what: "sorted set", key: "cq:jobs", n: zn, load: zsetLoad("cq:jobs", zn),
			round: func(c *harness.Conn, i int) error {
				r := c.Do("ZRANGEBYSCORE", "cq:jobs", "-inf", "+inf", "LIMIT", "0", "1")
				if len(r.Elems) != 1 || r.Elems[0].Str != member(i) {
					return fmt.Errorf("ZRANGEBYSCORE: %s, want %s", r.String(), member(i))
				}
				if r := c.Do("ZREM", "cq:jobs", member(i)); r.Type != ':' || r.Int != 1 {
					return fmt.Errorf("ZREM %s: %s", member(i), r.String())
				}
				return nil
			},
			bulk: zbulk("ZPOPMIN", "cq:jobs"), bulkN: arrayLen(2)},
		{name: "LPOP", what: "list", key: "cq:list", n: on, load: membersLoad("RPUSH", "cq:list", on),
			pop: func(int) []string { return []string{"LPOP", "cq:list"} }, check: bulkIs(member),
			bulk: zbulk("LPOP", "cq:list"), bulkN: arrayLen(1)},
		{name: "RPOP", what: "list", key: "cq:list", n: on, load: membersLoad("RPUSH", "cq:list", on),
			pop: func(int) []string { return []string{"RPOP", "cq:list"} }, check: bulkIs(func(i int) string { return member(on - 1 - i) }),
			bulk: zbulk("RPOP", "cq:list"), bulkN: arrayLen(1)},
		{name: "SPOP", what: "set", key: "cq:set", n: on, load: membersLoad("SADD", "cq:set", on),
			pop: func(int) []string { return []string{"SPOP", "cq:set"} },
			check: func(_ int, r harness.Reply) error {
				if r.Type != '$' || !strings.HasPrefix(r.Str, "m:") {
					return fmt.Errorf("reply %s", r.String())
				}
				return nil
			},
			bulk: zbulk("SPOP", "cq:set"), bulkN: arrayLen(1)},
		{name: "XDEL of the oldest", what: "stream", key: "cq:xdel", n: on, load: streamLoad("cq:xdel", on),
			pop:   func(i int) []string { return []string{"XDEL", "cq:xdel", streamID(i)} },
			check: intIs(1),
			bulk:  func(i, m int) []string { return idList([]string{"XDEL", "cq:xdel"}, i, m) }, bulkN: replyInt},
		{name: "XTRIM MINID (one entry each)", what: "stream", key: "cq:xtrim", n: on, load: streamLoad("cq:xtrim", on),
			pop:   func(i int) []string { return []string{"XTRIM", "cq:xtrim", "MINID", streamID(i + 1)} },
			check: intIs(1),
			bulk:  func(i, m int) []string { return []string{"XTRIM", "cq:xtrim", "MINID", streamID(i + m)} }, bulkN: replyInt},
		{name: "XACK of the oldest pending", what: "stream (group, all pending)", key: "cq:xack", n: xn, load: streamLoad("cq:xack", xn),
			setup: func(c *harness.Conn) error {
				if r := c.Do("XGROUP", "CREATE", "cq:xack", "g", "0"); r.Str != "OK" {
					return fmt.Errorf("XGROUP CREATE: %s", r.String())
				}
				for read := 0; read < xn; read += consumeBulk {
					r := c.Do("XREADGROUP", "GROUP", "g", "c", "COUNT", strconv.Itoa(consumeBulk), "STREAMS", "cq:xack", ">")
					if len(r.Elems) != 1 || len(r.Elems[0].Elems) != 2 || len(r.Elems[0].Elems[1].Elems) != min(consumeBulk, xn-read) {
						return fmt.Errorf("XREADGROUP after %d: %s", read, harness.Trunc(r.String(), 200))
					}
				}
				return nil
			},
			pop:   func(i int) []string { return []string{"XACK", "cq:xack", "g", streamID(i)} },
			check: intIs(1),
			bulk:  func(i, m int) []string { return idList([]string{"XACK", "cq:xack", "g"}, i, m) }, bulkN: replyInt},
	}
}

// consumeResult is one pattern measured on one server.
type consumeResult struct {
	first, last float64 // pops/s
	points      float64 // Spillway: iterator points a pop, first and last tenth
	pointsLast  float64
	// state says where the structure was before the first pop: "cold"
	// (or held by its ends), or what INFO tiering showed otherwise (a
	// small SPILLWAY_BENCH_CONSUME_DIV can leave one hot).
	state string
}

// TestBenchConsume measures, for every structure consumed at one end, the
// rate of the first and the last 10% of the pops from a cold structure in
// Spillway beside the same structure in redis-server.
func TestBenchConsume(t *testing.T) {
	needBench(t)
	if v := os.Getenv("SPILLWAY_BENCH_CONSUME_DIV"); v != "" {
		d, err := strconv.Atoi(v)
		if err != nil || d < 1 || d > 100 {
			t.Fatalf("SPILLWAY_BENCH_CONSUME_DIV=%q: want 1..100", v)
		}
		consumeZSetN, consumeOtherN = consumeZSetN/d, consumeOtherN/d
	}
	began := time.Now()
	redis := harness.StartRedis(t)
	spw := harness.StartSpillway(t, "", "--maxmemory", consumeMaxMemory)
	defer redis.Term()
	defer spw.Term()
	targets := []benchTarget{
		{"redis", redis.Addr(), "`redis-server --save '' --appendonly no`: the structures in memory"},
		{"spw-cold", spw.Addr(), "`spillway --maxmemory " + consumeMaxMemory + "` (default appendfsync everysec): " +
			"each structure on disk before its first pop (the table's last column says what INFO tiering showed: " +
			"cold, the one key and not hot; a list held by its ends and a stream's meta part, under 164 KB in memory)"},
	}
	conns := map[string]*harness.Conn{}
	for _, tg := range targets {
		c := harness.MustDial(t, tg.addr)
		c.Timeout = 5 * time.Minute
		conns[tg.name] = c
	}
	dir := t.TempDir()
	results := map[string]map[string]consumeResult{}
	patterns := consumePatterns()
	if only := os.Getenv("SPILLWAY_BENCH_CONSUME_ONLY"); only != "" {
		patterns = slices.DeleteFunc(patterns, func(p consumePattern) bool { return !strings.HasPrefix(p.name, only) })
	}
	for _, p := range patterns {
		file := filepath.Join(dir, "load.resp")
		var cmds int
		if err := writeRESP(file, func(w *respWriter) { cmds = p.load(w) }); err != nil {
			t.Fatal(err)
		}
		var errs [2]error
		var wg sync.WaitGroup
		for i, tg := range targets {
			wg.Go(func() { _, errs[i] = pipeLoad(tg.addr, file, cmds) })
		}
		wg.Wait()
		if err := errors.Join(errs[:]...); err != nil {
			t.Fatalf("%s: load: %v", p.name, err)
		}
		results[p.name] = map[string]consumeResult{}
		for _, tg := range targets {
			c := conns[tg.name]
			if p.setup != nil {
				if err := p.setup(c); err != nil {
					t.Fatalf("%s on %s: %v", p.name, tg.name, err)
				}
			}
			res, err := consumeOne(t, c, p, tg.name == "spw-cold", spw)
			if err != nil {
				t.Fatalf("%s on %s: %v", p.name, tg.name, err)
			}
			results[p.name][tg.name] = res
			t.Logf("%s on %s (%s): first 10%% %.0f/s, last 10%% %.0f/s (%.2fx), iterator points a pop %.1f then %.1f, at %v",
				p.name, tg.name, res.state, res.first, res.last, res.last/res.first, res.points, res.pointsLast,
				time.Since(began).Round(time.Second))
		}
	}
	exp := benchExpiryWaves(t, conns, spw)
	reportConsume(t, targets, patterns, results, exp, began)
}

// consumeOne pops p's structure down on c: the first tenth one pop at a
// time (pipelined consumeDepth deep unless p.round), the middle in bulk,
// the last tenth one at a time again, and checks the key is gone.
func consumeOne(t *testing.T, c *harness.Conn, p consumePattern, spillway bool, spw *harness.Server) (consumeResult, error) {
	var res consumeResult
	res.state = "in memory"
	if spillway {
		info := tieringInfo(t, spw)
		hotBytes, _ := strconv.Atoi(info["hot_bytes"])
		one := info["hot_keys"] == "1" && info["cold_keys"] == "0"
		switch {
		case info["hot_keys"] == "0" && info["cold_keys"] == "1":
			res.state = "cold"
		case p.setup != nil && one:
			// XACK: the entries and the pending entries on disk, the
			// group and its consumers (with their counts) in memory.
			res.state = fmt.Sprintf("entries cold, %s KB in memory", thousands(float64(hotBytes)/1024))
		case p.what != "sorted set" && p.what != "set" && one && hotBytes <= 164<<10:
			// A big list is held by its ends: two windows of at most
			// 1,024 elements and 32 KB each in memory (counted with 16
			// bytes an element and 16 a slot of a ring of up to 2,048:
			// under 164 KB with the entry), the rest on disk; a cold
			// stream keeps its meta part in memory, its entries on disk.
			res.state = "cold"
		default:
			res.state = "**not cold**: " + tieringFields(info)
		}
	}
	tenth := p.n / 10
	window := func(from int) (float64, float64, error) {
		var before map[string]string
		if spillway {
			before = tieringInfo(t, spw)
		}
		start := time.Now()
		if err := popRange(c, p, from, from+tenth); err != nil {
			return 0, 0, err
		}
		rate := float64(tenth) / time.Since(start).Seconds()
		var points float64
		if spillway {
			points = float64(infoDelta(before, tieringInfo(t, spw), "cold_store_iter_points")) / float64(tenth)
		}
		return rate, points, nil
	}
	var err error
	if res.first, res.points, err = window(0); err != nil {
		return res, fmt.Errorf("first tenth: %w", err)
	}
	for i := tenth; i < p.n-tenth; i += consumeBulk {
		m := min(consumeBulk, p.n-tenth-i)
		if r := c.Do(p.bulk(i, m)...); p.bulkN(r) != m {
			return res, fmt.Errorf("%s: %s, want %d popped", strings.Join(p.bulk(i, m)[:3], " "), harness.Trunc(r.String(), 200), m)
		}
	}
	if res.last, res.pointsLast, err = window(p.n - tenth); err != nil {
		return res, fmt.Errorf("last tenth: %w", err)
	}
	if p.setup != nil || strings.HasPrefix(p.name, "X") { // a stream stays when empty
		if r := c.Do("DEL", p.key); r.Int != 1 {
			return res, fmt.Errorf("DEL %s after the pops: %s", p.key, r.String())
		}
	}
	if r := c.Do("EXISTS", p.key); r.Int != 0 {
		return res, fmt.Errorf("%s still exists after %d pops", p.key, p.n)
	}
	return res, nil
}

// popRange pops elements from..to-1 of p, one pop per command.
func popRange(c *harness.Conn, p consumePattern, from, to int) error {
	if p.round != nil {
		for i := from; i < to; i++ {
			if err := p.round(c, i); err != nil {
				return fmt.Errorf("pop %d: %w", i, err)
			}
		}
		return nil
	}
	for lo := from; lo < to; lo += consumeDepth {
		hi := min(lo+consumeDepth, to)
		for i := lo; i < hi; i++ {
			if err := c.Send(p.pop(i)...); err != nil {
				return err
			}
		}
		if err := c.Flush(); err != nil {
			return err
		}
		for i := lo; i < hi; i++ {
			r := c.Read()
			if r.Err != nil {
				return r.Err
			}
			if err := p.check(i, r); err != nil {
				return fmt.Errorf("pop %d (%s): %w", i, strings.Join(p.pop(i), " "), err)
			}
		}
	}
	return nil
}

// loadExpiryWaves sends SET cx:N v PXAT t for 2n keys, the first n due at
// due1 and the rest at due2, pipelined 1,000 deep.
func loadExpiryWaves(t *testing.T, c *harness.Conn, name string, n int, due1, due2 int64) {
	t.Helper()
	args := make([]string, 0, 5)
	for i := range 2 * n {
		at := due1 // a wave is due at once: the sweeper runs flat out
		if i >= n {
			at = due2
		}
		args = append(args[:0], "SET", "cx:"+member(i), "v", "PXAT", strconv.FormatInt(at, 10))
		if err := c.Send(args...); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 {
			for range 1000 {
				if r := c.Read(); r.Str != "OK" {
					t.Fatalf("%s: SET PXAT: %s", name, r.String())
				}
			}
		}
	}
}

// expiryResult is the expiry sweeper measured on one server: keys deleted
// a second over the first 10% of the expiring keys and over the last 10%.
type expiryResult struct{ first, last float64 }

// benchExpiryWaves measures the expiry sweeper: two waves of
// consumeOtherN keys each (SET k v PXAT t, a wave due at one instant),
// the second due some seconds after the first, so that when it is swept the first wave's index entries
// are all deleted before it. The rate is how fast DBSIZE falls (sampled
// every 2 ms) over the first 10% of the keys (of the first wave) and the
// last 10% (of the second).
func benchExpiryWaves(t *testing.T, conns map[string]*harness.Conn, spw *harness.Server) map[string]expiryResult {
	out := map[string]expiryResult{}
	for _, name := range []string{"redis", "spw-cold"} {
		c := conns[name]
		n := consumeOtherN
		// The waves are due some time after the loading starts; when the
		// loading took longer (a busy machine) and keys expired meanwhile,
		// the keys are flushed and loaded again with three times the time
		// the loading took (at most three attempts).
		var due1, due2 int64
		margin := 20 * time.Second
		for attempt := 1; ; attempt++ {
			start := time.Now()
			due1 = start.Add(margin).UnixMilli()
			due2 = due1 + 8000
			loadExpiryWaves(t, c, name, n, due1, due2)
			took := time.Since(start)
			r := c.Do("DBSIZE")
			if r.Int == int64(2*n) {
				break
			}
			if attempt == 3 {
				t.Fatalf("%s: DBSIZE %s after the SETs, want %d (loading took %v: keys expired)", name, r.String(), 2*n, took)
			}
			t.Logf("%s: loading the expiry waves took %v, keys expired before it ended: loading again", name, took.Round(time.Millisecond))
			if r := c.Do("FLUSHALL"); r.Str != "OK" {
				t.Fatalf("%s: FLUSHALL: %s", name, r.String())
			}
			margin = 3 * took
		}
		if name == "spw-cold" {
			t.Logf("expiry waves loaded in spw-cold: INFO tiering %s", tieringFields(tieringInfo(t, spw)))
		}
		// Wait for DBSIZE to cross the thresholds.
		cross := func(below int64, deadline time.Time) (time.Time, error) {
			for time.Now().Before(deadline) {
				if r := c.Do("DBSIZE"); r.Int <= below {
					return time.Now(), nil
				} else if r.Type != ':' {
					return time.Time{}, fmt.Errorf("DBSIZE: %s", r.String())
				}
				time.Sleep(2 * time.Millisecond)
			}
			return time.Time{}, fmt.Errorf("DBSIZE not at or below %d by %v", below, deadline)
		}
		limit := time.UnixMilli(due2).Add(2 * time.Minute)
		tenth := int64(n / 10)
		t0, err := cross(int64(2*n)-1, limit)
		if err == nil {
			var t1, t2, t3 time.Time
			if t1, err = cross(int64(2*n)-tenth, limit); err == nil {
				if t2, err = cross(tenth, limit); err == nil {
					if t3, err = cross(0, limit); err == nil {
						out[name] = expiryResult{float64(tenth) / t1.Sub(t0).Seconds(), float64(tenth) / t3.Sub(t2).Seconds()}
					}
				}
			}
		}
		if err != nil {
			t.Fatalf("%s: expiry: %v", name, err)
		}
	}
	return out
}

// reportConsume prints the section's table.
func reportConsume(t *testing.T, targets []benchTarget, patterns []consumePattern, results map[string]map[string]consumeResult,
	exp map[string]expiryResult, began time.Time) {
	title := fmt.Sprintf("Consumed structures: the first and the last 10%% of the pops from a cold structure "+
		"(sorted sets of %s members, lists, sets and streams of %s), one pop per command", thousands(float64(consumeZSetN)), thousands(float64(consumeOtherN)))
	var md strings.Builder
	md.WriteString(targetLegend(targets))
	fmt.Fprintf(&md, "\nEach structure is loaded with `redis-cli --pipe` into both servers, then popped down by one Go client: "+
		"the first 10%% of its elements one pop per command, the middle 80%% in bulk (%d a command: ZPOPMIN/ZPOPMAX/LPOP/RPOP/SPOP "+
		"with a count, XDEL/XACK of %d IDs, XTRIM MINID), the last 10%% one pop per command again. One pop per command, "+
		"pipelined %d deep; the job pattern (ZRANGEBYSCORE -inf +inf LIMIT 0 1, then ZREM of the member it returned) one "+
		"request at a time. Every reply is checked (the member or element popped, the counts). The goal (issue 19): "+
		"Spillway's last/first at least %.1f. Points: the cold store's internal iterator points a pop (records and "+
		"tombstones stepped over, INFO tiering cold_store_iter_points).\n\n",
		consumeBulk, consumeBulk, consumeDepth, consumeGoal)
	md.WriteString(strings.TrimSpace(machineNotes()) + " (the Go client runs in the test process, on the same cores)\n\n")
	header := []string{"pops", "structure", "redis first 10%", "redis last 10%", "redis last/first",
		"spw-cold first 10%", "spw-cold last 10%", "spw-cold last/first", "goal", "points a pop (first, last)", "spw-cold before the pops"}
	var rows [][]string
	var figs []benchreport.Figure
	for _, p := range patterns {
		r, s := results[p.name]["redis"], results[p.name]["spw-cold"]
		rows = append(rows, []string{p.name, fmt.Sprintf("%s of %s", p.what, thousands(float64(p.n))),
			thousands(r.first), thousands(r.last), fmt.Sprintf("%.2f", r.last/r.first),
			thousands(s.first), thousands(s.last), fmt.Sprintf("%.2f", s.last/s.first), goalMark(s.last / s.first),
			fmt.Sprintf("%.1f, %.1f", s.points, s.pointsLast), s.state})
		for _, w := range []struct {
			label    string
			ref, spw float64
		}{{"first 10%", r.first, s.first}, {"last 10%", r.last, s.last}} {
			wl := p.name + ", " + w.label
			figs = append(figs,
				benchreport.Figure{Section: title, Workload: wl, Target: "redis", Metric: benchreport.OpsPerSec, Value: w.ref},
				benchreport.Figure{Section: title, Workload: wl, Target: "spw-cold", Metric: benchreport.OpsPerSec, Value: w.spw, Reference: "redis"})
		}
	}
	r, s := exp["redis"], exp["spw-cold"]
	rows = append(rows, []string{"expiry sweeper (keys deleted/s)", fmt.Sprintf("2 waves of %s keys, 8 s apart", thousands(float64(consumeOtherN))),
		thousands(r.first), thousands(r.last), fmt.Sprintf("%.2f", r.last/r.first),
		thousands(s.first), thousands(s.last), fmt.Sprintf("%.2f", s.last/s.first), goalMark(s.last / s.first), "-"})
	md.WriteString(benchreport.Table(header, rows))
	fmt.Fprintf(&md, "\nExpiry: `SET cx:N v PXAT t`, every key of a wave due at the same millisecond (so both servers delete as fast as they can), the second wave 8 s after the first; "+
		"the rates are how fast DBSIZE fell (sampled every 2 ms) over the first 10%% of the keys (first wave) and the last 10%% "+
		"(second wave, swept after the first wave's index entries were all deleted). Both servers expire keys on their own "+
		"schedule (Redis: activeExpireCycle at hz 10; Spillway: the sweeper every 100 ms, 1,000 keys a transaction).\n")
	fmt.Fprintf(&md, "\n(Section took %v, loads included.)\n", time.Since(began).Round(time.Second))
	benchreport.Default.Add(figs...)
	benchreport.Default.AddSection(title, md.String())
	t.Log("\n" + md.String())
}

func goalMark(ratio float64) string {
	if ratio >= consumeGoal {
		return "met"
	}
	return "**missed**"
}
