package integration

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The hand-written scenarios of TestUpstreamScenarios (run by
// upstream_scenario_run_test.go): transactions, WATCH, SELECT, pub/sub,
// blocking commands, scripts, keyspace commands on cold keys, FLUSHDB,
// SWAPDB.

// upstreamScenarios are the scenarios of TestUpstreamScenarios.
var upstreamScenarios = []upScenario{
	{name: "multi-exec-queued-error", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SET", "a", "1")
		s.demote(0, "a")
		c.do("MULTI")
		c.do("SET", "b", "2")
		c.do("INCR") // wrong arity: rejected at queue time
		c.do("GET", "a")
		c.do("EXEC") // EXECABORT
		c.do("GET", "b")
		c.do("GET", "a")
		c.do("MULTI")
		c.do("NOSUCHCOMMAND", "a")
		c.do("EXEC")
		c.do("EXISTS", "b")
	}},
	{name: "multi-exec-runtime-error", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SET", "s", "x")
		c.do("RPUSH", "l", "a", "b")
		c.do("HSET", "h", "f", "1")
		s.demote(0, "s", "l", "h")
		c.do("MULTI")
		c.do("INCR", "s")       // not an integer: fails at EXEC only
		c.do("LPUSH", "s", "1") // WRONGTYPE at EXEC
		c.do("GET", "s")
		c.do("LRANGE", "l", "0", "-1")
		c.do("HINCRBY", "h", "f", "2")
		c.do("SET", "n", "5")
		c.do("INCR", "n")
		c.do("EXEC")
		c.do("HGETALL", "h")
		c.do("GET", "n")
	}},
	{name: "multi-exec-resp3-cold", run: func(s *scen) {
		c := s.conn("c1", 3)
		c.do("ZADD", "z", "1", "a", "2.5", "b")
		c.do("SADD", "st", "m")
		s.demote(0, "z", "st")
		c.do("MULTI")
		c.do("ZRANGE", "z", "0", "-1", "WITHSCORES")
		c.do("SMEMBERS", "st")
		c.do("ZINCRBY", "z", "1", "a")
		c.do("EXEC")
	}},
	{name: "watch-modified-by-other-client", run: func(s *scen) {
		c1, c2 := s.conn("c1", 2), s.conn("c2", 2)
		c1.do("SET", "k", "1")
		c1.do("WATCH", "k")
		c2.do("SET", "k", "2")
		c1.do("MULTI")
		c1.do("GET", "k")
		c1.do("SET", "k", "3")
		c1.do("EXEC") // nil: k changed since WATCH
		c1.do("GET", "k")
		// After UNWATCH another client's write does not matter.
		c1.do("WATCH", "k")
		c1.do("UNWATCH")
		c2.do("SET", "k", "4")
		c1.do("MULTI")
		c1.do("INCR", "k")
		c1.do("EXEC")
	}},
	{name: "watch-demoted-key", run: func(s *scen) {
		c1 := s.conn("c1", 2)
		c1.do("SET", "w", "10")
		s.demote(0, "w")
		c1.do("WATCH", "w")
		c1.do("MULTI")
		c1.do("GET", "w")
		c1.do("INCR", "w")
		c1.do("EXEC") // succeeds, sees 10
		c1.do("GET", "w")
		// A cold key another client then writes still aborts the EXEC.
		c2 := s.conn("c2", 2)
		s.demote(0, "w")
		c1.do("WATCH", "w")
		c2.do("SET", "w", "20")
		c1.do("MULTI")
		c1.do("GET", "w")
		c1.do("EXEC")
	}},
	{name: "watch-prevents-demotion", run: func(s *scen) {
		c1 := s.conn("c1", 2)
		c1.do("SET", "w", "10")
		c1.do("HSET", "wh", "f", "v")
		c1.do("WATCH", "w", "wh")
		// Demoting would UNLINK the keys upstream and abort the EXEC.
		s.demoteExpect(0, 0, "w", "wh")
		c1.do("MULTI")
		c1.do("GET", "w")
		c1.do("HGET", "wh", "f")
		c1.do("EXEC") // must succeed
		// EXEC ends the protection.
		s.demote(0, "w", "wh")
		c1.do("GET", "w")
		// DISCARD and UNWATCH end it too.
		c1.do("WATCH", "w")
		s.demoteExpect(0, 0, "w")
		c1.do("MULTI")
		c1.do("DISCARD")
		s.demote(0, "w")
		c1.do("WATCH", "wh")
		c1.do("UNWATCH")
		s.demote(0, "wh")
		c1.do("HGETALL", "wh")
	}},
	{name: "discard", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SET", "d", "old")
		s.demote(0, "d")
		c.do("MULTI")
		c.do("SET", "d", "new")
		c.do("SET", "e", "1")
		c.do("MULTI") // nested: an error, the transaction stays open
		c.do("DISCARD")
		c.do("GET", "d")
		c.do("GET", "e")
		c.do("DISCARD") // without MULTI
		c.do("EXEC")    // without MULTI
	}},
	{name: "select-db-and-dbsize", run: func(s *scen) {
		c1, c2 := s.conn("c1", 2), s.conn("c2", 2)
		c1.do("SET", "a", "db0")
		c1.do("SELECT", "3")
		c1.do("SET", "a", "db3")
		c1.do("SET", "b", "db3")
		c1.do("RPUSH", "l", "x", "y")
		s.demote(3, "a", "l")
		c1.do("DBSIZE")
		c1.do("GET", "a")
		c1.do("LLEN", "l")
		c1.do("KEYS", "*")
		c2.do("DBSIZE") // c2 is still in db 0
		c2.do("GET", "a")
		c2.do("SELECT", "3")
		c2.do("EXISTS", "a", "b", "l")
		c1.do("SELECT", "0")
		c1.do("DBSIZE")
		c1.do("GET", "a")
		// MOVE onto a key that is cold in the target database.
		c2.do("SET", "m", "in3")
		s.demote(3, "m")
		c1.do("SET", "m", "in0")
		c1.do("MOVE", "m", "3") // 0: m exists in db 3
		c1.do("GET", "m")
		c2.do("GET", "m")
	}},
	{name: "select-inside-multi", run: func(s *scen) {
		c1 := s.conn("c1", 2)
		c1.do("MULTI")
		c1.do("SELECT", "99") // queued; fails inside EXEC
		c1.do("SET", "e", "5")
		c1.do("EXEC")
		c1.do("MULTI")
		c1.do("SELECT", "5")
		c1.do("SET", "in5", "1")
		c1.do("DISCARD") // the SELECT never ran
		c1.do("SET", "k", "v")
		c1.do("DBSIZE")
		c1.do("MULTI")
		c1.do("SELECT", "6")
		c1.do("EXEC") // c1 is now in db 6
		c1.do("SET", "after", "a")
		c1.do("KEYS", "*")
		c1.do("SELECT", "0")
		c1.do("KEYS", "*")
		// Another client's transaction runs in its own database.
		c2 := s.conn("c2", 2)
		c2.do("MULTI")
		c2.do("SET", "fromc2", "x")
		c2.do("EXEC")
		c2.do("GET", "fromc2")
		c2.do("DBSIZE")
	}},
	{name: "copy-db-onto-cold-key", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SELECT", "2")
		c.do("SET", "dst", "old")
		c.do("SET", "dst2", "old")
		s.demote(2, "dst", "dst2")
		c.do("SELECT", "0")
		c.do("SET", "src", "new")
		c.do("COPY", "src", "dst", "DB", "2") // 0: dst exists in db 2
		c.do("COPY", "src", "dst2", "DB", "2", "REPLACE")
		c.do("SELECT", "2")
		c.do("DBSIZE")
		c.do("GET", "dst")
		c.do("GET", "dst2")
		c.do("KEYS", "*")
	}},
	{name: "expired-cold-key-is-gone", run: func(s *scen) {
		c := s.conn("c1", 2)
		keys := []string{"e1", "e2", "e3", "e4", "e5"}
		for _, k := range keys {
			c.do("SET", k, "v", "PX", "30")
		}
		c.do("SET", "stays", "v")
		s.demote(0, append(keys, "stays")...)
		pause(80 * time.Millisecond) // the TTLs run out
		c.do("GET", "e1")
		c.do("EXISTS", "e2")
		c.do("TTL", "e3")
		c.do("TYPE", "e4")
		c.do("STRLEN", "e5")
		// Each was touched, so Redis has deleted it.
		c.do("DBSIZE")
		c.do("KEYS", "*")
		c.do("SCAN", "0", "COUNT", "100")
	}},
	{name: "zset-negative-zero-score", run: func(s *scen) {
		for _, proto := range []int{2, 3} {
			c := s.conn(fmt.Sprintf("resp%d", proto), proto)
			// A long member makes it a skiplist, which keeps the sign.
			c.do("ZADD", "z", "1", strings.Repeat("m", 100), "-0", "a")
			c.do("OBJECT", "ENCODING", "z")
			s.demote(0, "z")
			c.do("ZSCORE", "z", "a")
			c.do("ZRANGE", "z", "0", "-1", "WITHSCORES")
			c.do("ZADD", "z", "2", "b") // reloads
			c.do("ZSCORE", "z", "a")
			c.do("DEL", "z")
		}
	}},
	{name: "pubsub-resp2", run: func(s *scen) { pubsubScenario(s, 2) }},
	{name: "pubsub-resp3", run: func(s *scen) { pubsubScenario(s, 3) }},
	{name: "blpop-served-by-later-push", run: func(s *scen) { blockingScenario(s, 2) }},
	{name: "blpop-served-by-later-push-resp3", run: func(s *scen) { blockingScenario(s, 3) }},
	{name: "blpop-timeout", run: func(s *scen) {
		for _, proto := range []int{2, 3} {
			c := s.conn(fmt.Sprintf("resp%d", proto), proto)
			c.do("BLPOP", "nolist", "0.05")
			c.do("BLMOVE", "nolist", "dst", "LEFT", "RIGHT", "0.05")
			c.do("BZPOPMIN", "nozset", "0.05")
			c.do("EXISTS", "dst")
		}
	}},
	{name: "blmove-served-by-later-push", run: func(s *scen) {
		c1, c2 := s.conn("c1", 2), s.conn("c2", 2)
		c2.do("RPUSH", "dst", "old")
		s.demote(0, "dst")
		c1.send("BLMOVE", "src", "dst", "LEFT", "RIGHT", "0")
		s.waitBlocked(1)
		c2.do("LPUSH", "src", "x", "y")
		c1.read()
		c2.do("LRANGE", "dst", "0", "-1")
		c2.do("LRANGE", "src", "0", "-1")
	}},
	{name: "blocking-pop-of-cold-key", run: func(s *scen) {
		c1, c2 := s.conn("c1", 2), s.conn("c2", 3)
		c1.do("RPUSH", "q", "a", "b")
		c1.do("ZADD", "zq", "1", "m", "2", "n")
		c1.do("RPUSH", "src", "s1")
		s.demote(0, "q", "zq", "src")
		c1.do("BLPOP", "q", "0") // served at once from the reloaded list
		c2.do("BZPOPMAX", "zq", "0")
		c1.do("BRPOPLPUSH", "src", "q", "0")
		c1.do("LRANGE", "q", "0", "-1")
		c2.do("ZRANGE", "zq", "0", "-1", "WITHSCORES")
		c1.do("EXISTS", "src")
	}},
	{name: "eval-on-cold-keys", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SET", "e", "5")
		c.do("HSET", "h", "f", "1")
		c.do("RPUSH", "l", "x")
		s.demote(0, "e", "h", "l")
		c.do("EVAL", "local v = redis.call('GET', KEYS[1]); redis.call('SET', KEYS[1], v * 2); return v", "1", "e")
		c.do("GET", "e")
		c.do("EVAL", "return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])", "1", "h", "f", "5")
		c.do("EVAL", "return {redis.call('LPUSH', KEYS[1], 'y'), redis.call('LRANGE', KEYS[1], 0, -1), redis.call('TYPE', KEYS[2])}", "2", "l", "h")
		s.demote(0, "e")
		c.do("EVAL_RO", "return redis.call('GET', KEYS[1])", "1", "e")
		c.do("EVAL", "return redis.call('INCR', KEYS[1])", "1", "l") // WRONGTYPE inside the script
		c.do("HGETALL", "h")
	}},
	{name: "script-load-evalsha", run: func(s *scen) {
		c1, c2 := s.conn("c1", 2), s.conn("c2", 3)
		sha := c1.do("SCRIPT", "LOAD", "return redis.call('GET', KEYS[1])").Str
		inc := c1.do("SCRIPT", "LOAD", "return redis.call('INCRBY', KEYS[1], ARGV[1])").Str
		c1.do("SET", "s", "v")
		c1.do("SET", "n", "1")
		s.demote(0, "s", "n")
		c2.do("EVALSHA", sha, "1", "s")
		c2.do("EVALSHA", inc, "1", "n", "41")
		c1.do("SCRIPT", "EXISTS", sha, inc, "0000000000000000000000000000000000000000")
		c1.do("EVALSHA", "0000000000000000000000000000000000000000", "0")
		s.demote(0, "n")
		c1.do("EVALSHA_RO", sha, "1", "n")
	}},
	{name: "scan-over-cold-keys", run: func(s *scen) {
		for _, proto := range []int{2, 3} {
			c := s.conn(fmt.Sprintf("resp%d", proto), proto)
			c.do("FLUSHDB")
			for i := 0; i < 30; i++ {
				c.do("SET", fmt.Sprintf("key:%02d", i), "v")
				c.do("HSET", fmt.Sprintf("hash:%02d", i), "f", "v")
			}
			var cold []string
			for i := 0; i < 30; i += 2 {
				cold = append(cold, fmt.Sprintf("key:%02d", i), fmt.Sprintf("hash:%02d", i+1))
			}
			s.demote(0, cold...)
			s.noReload("SCAN", func() {
				s.scanAll(c)
				s.scanAll(c, "COUNT", "4")
				s.scanAll(c, "MATCH", "key:2*", "COUNT", "3")
				s.scanAll(c, "TYPE", "hash")
			})
			// Everything cold.
			if s.spill {
				s.sideSelect(0)
				s.side.Do("DEBUG", "DEMOTE-ALL")
			}
			s.scanAll(c, "COUNT", "7")
		}
	}},
	{name: "keys-dbsize-randomkey", run: func(s *scen) {
		c := s.conn("c1", 2)
		var cold []string
		for i := 0; i < 30; i++ {
			k := fmt.Sprintf("key:%02d", i)
			switch i % 3 {
			case 0:
				c.do("SET", k, strconv.Itoa(i))
			case 1:
				c.do("HSET", k, "f", strconv.Itoa(i))
			default:
				c.do("SADD", k, strconv.Itoa(i))
			}
			if i%2 == 0 {
				cold = append(cold, k)
			}
		}
		c.do("SET", "other", "x")
		s.demote(0, cold...)
		s.noReload("KEYS, DBSIZE, RANDOMKEY", func() {
			c.do("DBSIZE")
			c.do("KEYS", "*")
			c.do("KEYS", "key:1*")
			all := map[string]bool{"other": true}
			for i := 0; i < 30; i++ {
				all[fmt.Sprintf("key:%02d", i)] = true
			}
			for i := 0; i < 20; i++ {
				r := c.c.Do("RANDOMKEY")
				if r.Type != '$' || !all[r.Str] {
					s.record("RANDOMKEY", "not one of the keys: "+r.String())
					return
				}
			}
			s.record("20 RANDOMKEYs", "each one of the keys")
		})
		c.do("SELECT", "1")
		c.do("RANDOMKEY") // empty database: nil
		c.do("DBSIZE")
	}},
	{name: "metadata-of-cold-keys", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SET", "m1", "v", "EX", "1000")
		c.do("SET", "m2", "v")
		c.do("HSET", "mh", "f", "v")
		c.do("RPUSH", "ml", "a")
		c.do("ZADD", "mz", "1", "a")
		c.do("SET", "m3", "v")
		s.demote(0, "m1", "m2", "mh", "ml", "mz", "m3")
		s.noReload("EXISTS, TYPE, TTL, EXPIRE, PERSIST, DEL, UNLINK, TOUCH", func() {
			c.do("EXISTS", "m1", "m2", "mh", "ml", "mz", "nokey", "m1")
			for _, k := range []string{"m1", "m2", "mh", "ml", "mz", "nokey"} {
				c.do("TYPE", k)
			}
			c.do("TTL", "m1")
			c.do("PTTL", "m2")
			c.do("EXPIRETIME", "mh")
			c.do("EXPIRE", "m2", "500")
			c.do("TTL", "m2")
			c.do("PEXPIRE", "mz", "700000", "NX")
			c.do("PEXPIRE", "mz", "800000", "NX")
			c.do("PTTL", "mz")
			c.do("PERSIST", "m1")
			c.do("TTL", "m1")
			c.do("PERSIST", "m1")
			c.do("EXPIRE", "mh", "100", "XX")
			c.do("TOUCH", "m1", "mh", "nokey")
			c.do("DEL", "m1", "nokey")
			c.do("UNLINK", "mh", "ml")
			c.do("EXISTS", "m1", "mh", "ml")
			c.do("TYPE", "ml")
			c.do("EXPIRE", "m3", "0") // deletes the key
			c.do("EXISTS", "m3")
			c.do("DBSIZE")
		})
		c.do("GET", "m2")
		c.do("TTL", "m2")
		c.do("ZSCORE", "mz", "a")
		c.do("PTTL", "mz")
		c.do("DBSIZE")
	}},
	{name: "flushdb-removes-cold-keys", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SET", "a", "1")
		c.do("HSET", "b", "f", "v")
		c.do("SET", "hot", "1")
		c.do("SELECT", "1")
		c.do("SET", "c", "3")
		s.demote(0, "a", "b")
		s.demote(1, "c")
		c.do("SELECT", "0")
		c.do("FLUSHDB")
		c.do("DBSIZE")
		c.do("KEYS", "*")
		c.do("GET", "a")
		c.do("EXISTS", "a", "b", "hot")
		c.do("TYPE", "b")
		c.do("SELECT", "1")
		c.do("DBSIZE")
		c.do("GET", "c")
		c.do("SET", "d", "4")
		s.demote(1, "d")
		c.do("FLUSHALL")
		c.do("DBSIZE")
		c.do("GET", "c")
		if n := s.coldKeys(); s.spill && n != 0 {
			s.t.Errorf("spillway: cold_keys %d after FLUSHALL", n)
		}
	}},
	{name: "swapdb-with-cold-keys", run: func(s *scen) {
		c0, c1 := s.conn("c0", 2), s.conn("c1", 2)
		c1.do("SELECT", "1")
		c0.do("SET", "x", "0")
		c0.do("HSET", "h0", "f", "0")
		c0.do("SET", "hot0", "0")
		c1.do("SET", "x", "1")
		c1.do("SET", "y", "1")
		s.demote(0, "x", "h0")
		s.demote(1, "x", "y")
		c0.do("SWAPDB", "0", "1")
		c0.do("GET", "x")
		c0.do("GET", "y")
		c0.do("EXISTS", "h0", "hot0")
		c0.do("DBSIZE")
		c1.do("GET", "x")
		c1.do("HGET", "h0", "f")
		c1.do("DBSIZE")
		c1.do("KEYS", "*")
		// Keys demoted after the swap, and a swap back.
		s.demote(1, "x", "hot0")
		c0.do("SWAPDB", "1", "0")
		c0.do("MGET", "x", "y", "hot0")
		c1.do("MGET", "x", "y", "hot0")
	}},
}

// pubsubScenario subscribes one client to channels and a pattern, publishes
// from another, and reads the frames (RESP3: push frames).
func pubsubScenario(s *scen, proto int) {
	sub, pub := s.conn("sub", proto), s.conn("pub", 2)
	pub.do("SET", "news.cold", "x")
	s.demote(0, "news.cold")
	sub.do("SUBSCRIBE", "ch1", "ch2") // the first confirmation
	sub.read()                        // the second
	sub.do("PSUBSCRIBE", "news.*")
	pub.do("PUBLISH", "ch1", "hello")
	sub.read()
	pub.do("PUBLISH", "news.cold", "hi")
	sub.read()
	pub.do("PUBLISH", "ch2", "bye")
	sub.read()
	pub.do("PUBLISH", "nobody", "x")
	pub.do("PUBSUB", "NUMSUB", "ch1", "ch2", "nobody")
	pub.do("PUBSUB", "NUMPAT")
	sub.do("PING")
	sub.do("UNSUBSCRIBE", "ch1")
	sub.do("UNSUBSCRIBE") // the rest: ch2
	sub.do("PUNSUBSCRIBE")
	pub.do("PUBLISH", "ch2", "unheard")
	if proto == 3 {
		sub.do("GET", "news.cold")
	}
	sub.do("PING")
}

// blockingScenario blocks a BLPOP with timeout 0 and serves it from another
// client.
func blockingScenario(s *scen, proto int) {
	c1, c2 := s.conn("c1", proto), s.conn("c2", 2)
	c2.do("SET", "unrelated", "x")
	s.demote(0, "unrelated")
	c1.send("BLPOP", "q1", "q2", "0")
	s.waitBlocked(1)
	c2.do("RPUSH", "q2", "a", "b")
	c1.read()
	c2.do("LRANGE", "q2", "0", "-1")
	c1.send("BRPOP", "q3", "0")
	s.waitBlocked(1)
	c2.do("LPUSH", "q3", "z")
	c1.read()
	c1.do("EXISTS", "q3", "unrelated")
}
