package integration

import (
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// Embedded-mode transactions: the cross-client scenarios (the upstream
// ones and the ones below) against Spillway in embedded mode and against
// redis-server, transcripts compared step by step. DEBUG DEMOTE (a test
// hook) moves keys to the cold tier between steps, so every WATCH and
// EXEC below also runs over cold keys.

// embeddedExcluded are upstream scenarios whose subject is upstream mode's
// own behaviour.
var embeddedExcluded = map[string]string{
	"watch-prevents-demotion": "upstream mode keeps WATCHed keys from demotion; embedded demotion never modifies a key",
}

// startEmbeddedHooks starts Spillway in embedded mode with the test hooks.
func startEmbeddedHooks(t *testing.T, extra ...string) *harness.Server {
	t.Helper()
	t.Setenv("SPILLWAY_TEST_HOOKS", "1")
	// Promotion on first read, as upstream mode does: the scenarios expect
	// a key read since its demotion to be hot again.
	return harness.StartSpillway(t, "", append([]string{"--appendfsync", "no", "--loglevel", "warning",
		"--promote-min-hits", "1"}, extra...)...)
}

// TestEmbeddedScenarios runs the cross-client scenarios against embedded
// Spillway.
func TestEmbeddedScenarios(t *testing.T) {
	spw := startEmbeddedHooks(t)
	var list []upScenario
	for _, sc := range upstreamScenarios {
		if _, skip := embeddedExcluded[sc.name]; !skip {
			list = append(list, sc)
		}
	}
	list = append(list, multiScenarios...)
	runScenarios(t, spw.Addr(), subjectEmbedded, list)
}

// TestMultiScenariosRedisVsRedis proves the transaction scenarios are
// deterministic on Redis itself.
func TestMultiScenariosRedisVsRedis(t *testing.T) {
	runScenarios(t, harness.StartRedis(t).Addr(), subjectRedis, multiScenarios)
}

// sleep pauses a scenario (both runs pause alike).
func (s *scen) sleep(d time.Duration) { pause(d) }

// demoteAny demotes keys of db on Spillway, whether or not they are hot
// (or exist); on redis it does nothing.
func (s *scen) demoteAny(db int, keys ...string) {
	s.t.Helper()
	if !s.spill {
		return
	}
	s.sideSelect(db)
	if r := s.side.Do(append([]string{"DEBUG", "DEMOTE"}, keys...)...); r.Type != ':' {
		s.t.Errorf("spillway: DEBUG DEMOTE %s: %s", fmtArgs(keys), r.String())
	}
}

var multiScenarios = []upScenario{
	{name: "watch-key-expires-before-exec", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SET", "k", "v", "PX", "80")
		c.do("WATCH", "k") // live when watched
		s.sleep(150 * time.Millisecond)
		c.do("MULTI")
		c.do("SET", "other", "1")
		c.do("EXEC") // nil: k expired since WATCH
		c.do("EXISTS", "other")
	}},
	{name: "watch-expired-deleted-or-rewritten", run: func(s *scen) {
		c1, c2 := s.conn("c1", 2), s.conn("c2", 2)
		c1.do("SET", "k", "v", "PX", "30")
		s.sleep(100 * time.Millisecond)
		// k had expired when watched: its lazy deletion by another
		// client's read is no change.
		c1.do("WATCH", "k")
		c2.do("GET", "k")
		c1.do("MULTI")
		c1.do("SET", "r1", "x")
		c1.do("EXEC")
		// Watched while expired, then written: a change.
		c1.do("SET", "j", "v", "PX", "30")
		s.sleep(100 * time.Millisecond)
		c1.do("WATCH", "j")
		c2.do("SET", "j", "new")
		c1.do("MULTI")
		c1.do("SET", "r2", "x")
		c1.do("EXEC")
		c1.do("MGET", "r1", "r2", "j")
	}},
	{name: "watch-noop-writes-and-other-db", run: func(s *scen) {
		c1, c2 := s.conn("c1", 2), s.conn("c2", 2)
		c1.do("SADD", "st", "a")
		c1.do("HSET", "h", "f", "1")
		c1.do("ZADD", "z", "1", "m")
		s.demote(0, "st", "h", "z")
		c1.do("WATCH", "st", "h", "z", "missing")
		c2.do("SADD", "st", "a")          // already a member
		c2.do("SREM", "st", "nope")       // not a member
		c2.do("HDEL", "h", "nope")        // no such field
		c2.do("ZADD", "z", "1", "m")      // same score
		c2.do("DEL", "missing")           // nothing to delete
		c2.do("PERSIST", "st")            // no TTL
		c2.do("EXPIRE", "missing", "100") // no key
		c2.do("SELECT", "1")
		c2.do("SET", "st", "other db")
		c1.do("MULTI")
		c1.do("SMEMBERS", "st")
		c1.do("EXEC") // succeeds: nothing watched changed
		c2.do("SELECT", "0")
		// SMOVE onto a set that already holds the member changes nothing
		// there: Redis 7.0.15 does not count it as a modification.
		c1.do("SADD", "src", "a")
		c1.do("WATCH", "st")
		c2.do("SMOVE", "src", "st", "a")
		c1.do("MULTI")
		c1.do("SCARD", "st")
		c1.do("EXEC") // succeeds
		c1.do("WATCH", "h")
		c2.do("HSET", "h", "f", "1") // same value: still a write
		c1.do("MULTI")
		c1.do("HGET", "h", "f")
		c1.do("EXEC") // nil
	}},
	{name: "watch-flushdb-flushall-swapdb", run: func(s *scen) {
		c1, c2 := s.conn("c1", 2), s.conn("c2", 2)
		c1.do("SET", "a", "1")
		s.demote(0, "a")
		c1.do("WATCH", "a", "nokey")
		c2.do("FLUSHDB")
		c1.do("MULTI")
		c1.do("PING")
		c1.do("EXEC") // nil: a existed and was flushed
		c1.do("WATCH", "nokey")
		c2.do("FLUSHDB")
		c1.do("MULTI")
		c1.do("PING")
		c1.do("EXEC") // a missing key is not touched by FLUSHDB
		c1.do("WATCH", "nokey")
		c2.do("FLUSHALL")
		c1.do("MULTI")
		c1.do("PING")
		c1.do("EXEC")
		// SWAPDB: a watched key missing here but present in the other
		// database is replaced.
		c2.do("SELECT", "1")
		c2.do("SET", "s", "in db1")
		c1.do("WATCH", "s")
		c2.do("SWAPDB", "0", "1")
		c1.do("MULTI")
		c1.do("GET", "s")
		c1.do("EXEC") // nil
		c1.do("WATCH", "neither")
		c2.do("SWAPDB", "0", "1")
		c1.do("MULTI")
		c1.do("GET", "s")
		c1.do("EXEC")
	}},
	{name: "watch-dirty-then-unwatch", run: func(s *scen) {
		c1, c2 := s.conn("c1", 3), s.conn("c2", 2)
		c1.do("WATCH", "k")
		c2.do("SET", "k", "1")
		c1.do("WATCH", "k2") // already dirty: accepted, no effect
		c1.do("MULTI")
		c1.do("GET", "k")
		c1.do("EXEC") // RESP3 null
		c1.do("WATCH", "k")
		c2.do("SET", "k", "2")
		c1.do("UNWATCH") // clears the dirty flag
		c1.do("MULTI")
		c1.do("GET", "k")
		c1.do("EXEC")
		c1.do("WATCH", "k")
		c2.do("SET", "k", "3")
		c1.do("MULTI")
		c1.do("DISCARD") // clears it too
		c1.do("MULTI")
		c1.do("INCR", "k")
		c1.do("EXEC")
	}},
	{name: "exec-queue-time-rejections", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("MULTI")
		c.do("WATCH", "x") // an error, the transaction stays good
		c.do("SET", "x", "1")
		c.do("EXEC")
		c.do("MULTI")
		c.do("SUBSCRIBE", "ch") // allowed in MULTI? Redis decides
		c.do("DISCARD")
		c.do("MULTI")
		c.do("CLIENT", "NOSUCH")
		c.do("EXEC")
		c.do("MULTI")
		c.do("GET")
		c.do("GET", "x")
		c.do("EXEC")
		c.do("EXEC")
		c.do("DISCARD")
	}},
	{name: "exec-blocking-commands-do-not-block", run: func(s *scen) {
		for _, proto := range []int{2, 3} {
			c := s.conn("c"+strconv.Itoa(proto), proto)
			c.do("MULTI")
			c.do("BLPOP", "nol", "0")
			c.do("BRPOP", "nol", "nol2", "1")
			c.do("BLMOVE", "nol", "dst", "LEFT", "RIGHT", "0")
			c.do("BRPOPLPUSH", "nol", "dst", "0")
			c.do("BLMPOP", "0", "1", "nol", "LEFT")
			c.do("BZPOPMIN", "noz", "0")
			c.do("BZMPOP", "0", "1", "noz", "MIN")
			c.do("RPUSH", "l", "a")
			c.do("BLPOP", "l", "0")
			c.do("EXEC")
		}
	}},
	{name: "exec-select-and-cold-keys", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SET", "a", "db0")
		c.do("SELECT", "2")
		c.do("SET", "a", "db2")
		c.do("RPUSH", "l", "1", "2", "3")
		s.demote(2, "a", "l")
		c.do("SELECT", "0")
		s.demote(0, "a")
		c.do("MULTI")
		c.do("GET", "a")
		c.do("SELECT", "2")
		c.do("GET", "a")
		c.do("LPOP", "l")
		c.do("RENAME", "a", "b")
		c.do("MOVE", "b", "0")
		c.do("EXEC")
		c.do("GET", "b") // the EXEC's SELECT stays
		c.do("SELECT", "0")
		c.do("MGET", "a", "b")
	}},
	{name: "blocked-pop-served-by-exec", run: func(s *scen) {
		c1, c2, c3 := s.conn("c1", 2), s.conn("c2", 3), s.conn("c3", 2)
		c1.send("BLPOP", "q", "0")
		s.waitBlocked(1)
		c2.send("BLMOVE", "q2", "q", "LEFT", "RIGHT", "0")
		s.waitBlocked(2)
		// The EXEC pushes, pops and pushes again: the waiters are served
		// after it, in the order they blocked, from what it left.
		c3.do("MULTI")
		c3.do("RPUSH", "q", "a", "b")
		c3.do("LPOP", "q")
		c3.do("RPUSH", "q2", "x")
		c3.do("EXEC")
		c1.read()
		c2.read()
		c3.do("LRANGE", "q", "0", "-1")
		c3.do("EXISTS", "q2")
	}},
	{name: "watch-interleaved-random", run: func(s *scen) { watchRandomScenario(s, 7, 400) }},
	{name: "watch-interleaved-random-2", run: func(s *scen) { watchRandomScenario(s, 11, 400) }},
}

// watchRandomScenario interleaves three clients doing WATCH, MULTI,
// queued commands, EXEC, DISCARD, UNWATCH and plain writes over a few keys
// of several types, with demotions on Spillway. The choices depend only on
// the seed, so both servers see the same sequence.
func watchRandomScenario(s *scen, seed int64, steps int) {
	rng := rand.New(rand.NewSource(seed))
	conns := []*sconn{s.conn("c1", 2), s.conn("c2", 3), s.conn("c3", 2)}
	inMulti := make([]bool, len(conns))
	keys := []string{"s1", "s2", "n1", "l1", "h1", "z1", "st1"}
	write := func(k string) []string {
		switch k {
		case "s1", "s2":
			return []string{"APPEND", k, "x"}
		case "n1":
			return []string{"INCR", k}
		case "l1":
			return []string{"RPUSH", k, strconv.Itoa(rng.Intn(5))}
		case "h1":
			return []string{"HSET", k, "f" + strconv.Itoa(rng.Intn(3)), strconv.Itoa(rng.Intn(3))}
		case "z1":
			return []string{"ZADD", k, strconv.Itoa(rng.Intn(3)), "m" + strconv.Itoa(rng.Intn(3))}
		default:
			return []string{"SADD", k, "m" + strconv.Itoa(rng.Intn(3))}
		}
	}
	read := func(k string) []string {
		switch k {
		case "l1":
			return []string{"LRANGE", k, "0", "-1"}
		case "h1":
			return []string{"HGET", k, "f1"}
		case "z1":
			return []string{"ZSCORE", k, "m1"}
		case "st1":
			return []string{"SCARD", k}
		}
		return []string{"GET", k}
	}
	for i := 0; i < steps; i++ {
		ci := rng.Intn(len(conns))
		c := conns[ci]
		k := keys[rng.Intn(len(keys))]
		switch r := rng.Intn(20); {
		case r < 3:
			c.do("WATCH", k, keys[rng.Intn(len(keys))])
		case r < 5:
			if !inMulti[ci] {
				c.do("MULTI")
				inMulti[ci] = true
			}
		case r < 7:
			if inMulti[ci] {
				c.do("EXEC")
				inMulti[ci] = false
			}
		case r == 7:
			if inMulti[ci] && rng.Intn(3) == 0 {
				c.do("DISCARD")
				inMulti[ci] = false
			} else {
				c.do("UNWATCH")
			}
		case r < 14:
			c.do(write(k)...)
		case r < 17:
			c.do(read(k)...)
		case r == 17:
			c.do("DEL", k)
		case r == 18:
			c.do("EXPIRE", k, strconv.Itoa(100+rng.Intn(3)))
		default:
			s.demoteAny(0, k)
		}
	}
	for ci, c := range conns {
		if inMulti[ci] {
			c.do("EXEC")
		}
	}
	for _, k := range keys {
		conns[0].do("TYPE", k)
		conns[0].do(read(k)...)
	}
}

// TestClientListInMulti: CLIENT LIST shows a client inside MULTI as Redis
// does (flag x, multi= the number of queued commands; -1 outside).
func TestClientListInMulti(t *testing.T) {
	spw := startEmbeddedHooks(t)
	c, other := harness.MustDial(t, spw.Addr()), harness.MustDial(t, spw.Addr())
	c.Do("CLIENT", "SETNAME", "inmulti")
	fields := func() string {
		r := other.Do("CLIENT", "LIST")
		for _, line := range strings.Split(r.Str, "\n") {
			if strings.Contains(line, "name=inmulti ") {
				var out []string
				for _, f := range strings.Fields(line) {
					if strings.HasPrefix(f, "flags=") || strings.HasPrefix(f, "multi=") {
						out = append(out, f)
					}
				}
				return strings.Join(out, " ")
			}
		}
		return "not listed: " + r.String()
	}
	steps := []struct {
		cmd  []string
		want string
	}{
		{nil, "flags=N multi=-1"},
		{[]string{"MULTI"}, "flags=x multi=0"},
		{[]string{"SET", "a", "1"}, "flags=x multi=1"},
		{[]string{"GET", "a"}, "flags=x multi=2"},
		{[]string{"EXEC"}, "flags=N multi=-1"},
		{[]string{"MULTI"}, "flags=x multi=0"},
		{[]string{"DISCARD"}, "flags=N multi=-1"},
	}
	for _, st := range steps {
		if st.cmd != nil {
			c.Do(st.cmd...)
		}
		if got := fields(); got != st.want {
			t.Fatalf("after %v: CLIENT LIST %q, want %q", st.cmd, got, st.want)
		}
	}
}

// TestConfigSetInsideMulti: CONFIG SET of the settings the engine applies
// itself (maxmemory demotes down to the new budget, the promotion policy)
// inside MULTI/EXEC. EXEC holds the engine's lock; the settings' callbacks
// take it, so they run once EXEC's group ends (Ctx.AfterUnlock). Before,
// EXEC never replied and every later command on any key waited for ever.
func TestConfigSetInsideMulti(t *testing.T) {
	sp := harness.StartSpillway(t, "", "--appendfsync", "no", "--maxmemory", "64mb")
	c := sp.Conn(t)
	c.Timeout = 5 * time.Second
	value := strings.Repeat("v", 1000)
	var load [][]string
	for i := range 4000 {
		load = append(load, []string{"SET", "cfgmulti:" + strconv.Itoa(i), value})
	}
	for _, r := range c.DoAll(load) {
		if r.IsError() {
			t.Fatal(r.String())
		}
	}
	before := tieringInfo(t, sp)["demotions"]
	c.Do("MULTI")
	for _, args := range [][]string{
		{"CONFIG", "SET", "maxmemory", "1mb"},
		{"CONFIG", "SET", "promote-min-hits", "3", "cold-read-max-bytes", "64kb"},
		{"SET", "cfgmulti:x", "1"},
	} {
		if r := c.Do(args...); r.Str != "QUEUED" {
			t.Fatalf("%v: %s", args, r.String())
		}
	}
	r := c.Do("EXEC")
	if r.IsError() || len(r.Elems) != 3 || r.Elems[0].Str != "OK" || r.Elems[1].Str != "OK" || r.Elems[2].Str != "OK" {
		t.Fatalf("EXEC: %s", r.String())
	}
	other := sp.Conn(t)
	other.Timeout = 5 * time.Second
	if got := other.Do("GET", "cfgmulti:x"); got.Str != "1" {
		t.Fatalf("GET from another client after EXEC: %s", got.String())
	}
	for _, kv := range [][2]string{{"maxmemory", "1048576"}, {"promote-min-hits", "3"}, {"cold-read-max-bytes", "65536"}} {
		if got := other.Do("CONFIG", "GET", kv[0]); len(got.Elems) != 2 || got.Elems[1].Str != kv[1] {
			t.Fatalf("CONFIG GET %s: %s", kv[0], got.String())
		}
	}
	after := tieringInfo(t, sp)
	if after["demotions"] == before {
		t.Fatalf("the budget of 1mb demoted nothing: demotions %s before, %s after", before, after["demotions"])
	}
	used, _ := strconv.Atoi(after["hot_bytes"])
	if budget, _ := strconv.Atoi(after["hot_budget"]); budget == 0 || budget >= 1<<20 || used > budget {
		t.Fatalf("after EXEC set maxmemory 1mb: hot_bytes %d, hot_budget %d", used, budget)
	}
}
