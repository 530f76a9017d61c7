package integration

// INFO stats' keyspace_hits and keyspace_misses against a real
// redis-server. Redis counts a lookup only when a command reads a key
// (lookupKeyRead*): a write command's lookups (SET, INCR, HSET, LPOP...)
// count nothing, except where a write command reads a key as a source
// (GETDEL, GETEX, SET GET, SORT, the *STORE commands' sources, COPY,
// BITOP, PFMERGE). The same commands run on redis-server, on embedded
// Spillway and on upstream-mode Spillway in front of another redis-server,
// and the two counters must agree after each command.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// keyspaceStatsScript is the command sequence: reads that hit and miss,
// writes on present and absent keys, and the write commands that read.
var keyspaceStatsScript = [][]string{
	{"SET", "s", "v"}, {"GET", "s"}, {"GET", "nokey"}, {"SET", "s", "w"},
	{"SET", "s", "x", "NX"}, {"SET", "s2", "x", "XX"}, {"SET", "s", "y", "GET"},
	{"SET", "nokey2", "y", "GET"}, {"DEL", "nokey2"},
	{"INCR", "n"}, {"INCR", "n"}, {"INCRBY", "n", "5"}, {"DECR", "n"}, {"INCRBYFLOAT", "f", "1.5"},
	{"APPEND", "s", "z"}, {"SETRANGE", "s", "1", "q"}, {"STRLEN", "s"}, {"GETRANGE", "s", "0", "1"},
	{"MSET", "a", "1", "b", "2"}, {"MSETNX", "a", "1", "c", "3"}, {"MGET", "a", "b", "nokey", "c"},
	{"SETNX", "a", "2"}, {"GETSET", "a", "3"}, {"GETDEL", "a"}, {"GETDEL", "a"},
	{"GETEX", "b", "EX", "100"}, {"GETEX", "nokey"},
	{"EXISTS", "b", "nokey", "c"}, {"TYPE", "b"}, {"TYPE", "nokey"}, {"TTL", "b"}, {"PTTL", "nokey"},
	{"EXPIRE", "b", "200"}, {"EXPIRE", "nokey", "10"}, {"PERSIST", "b"}, {"TOUCH", "b", "nokey"},
	{"OBJECT", "ENCODING", "b"}, {"DUMP", "b"}, {"DUMP", "nokey"},
	{"HSET", "h", "f", "v", "g", "w"}, {"HSET", "h", "f", "v2"}, {"HGET", "h", "f"}, {"HGET", "h", "nof"},
	{"HGET", "nokey", "f"}, {"HINCRBY", "h", "n", "1"}, {"HDEL", "h", "g"}, {"HDEL", "nokey", "g"},
	{"HGETALL", "h"}, {"HLEN", "h"}, {"HEXISTS", "h", "f"}, {"HMGET", "h", "f", "x"}, {"HSETNX", "h", "f", "v"},
	{"RPUSH", "l", "a", "b", "c", "d"}, {"LPUSH", "l", "z"}, {"LPUSHX", "nokey", "z"}, {"LPOP", "l"},
	{"RPOP", "l"}, {"LPOP", "nokey"}, {"LRANGE", "l", "0", "-1"}, {"LLEN", "l"}, {"LINDEX", "l", "0"},
	{"LSET", "l", "0", "y"}, {"LREM", "l", "0", "b"}, {"LTRIM", "l", "0", "5"}, {"LMOVE", "l", "l2", "LEFT", "RIGHT"},
	{"RPOPLPUSH", "nokey", "l2"}, {"LPOS", "l", "c"},
	{"SADD", "st", "a", "b", "c"}, {"SADD", "st2", "b", "c", "d"}, {"SISMEMBER", "st", "a"}, {"SCARD", "st"},
	{"SMEMBERS", "st"}, {"SREM", "st", "a"}, {"SMOVE", "st", "st2", "b"}, {"SINTER", "st", "st2", "nokey"},
	{"SINTERSTORE", "st3", "st", "st2"}, {"SUNIONSTORE", "st3", "st", "st2", "nokey"}, {"SDIFFSTORE", "st3", "st2", "st"},
	{"SINTERCARD", "2", "st", "st2"}, {"SPOP", "st3"},
	{"ZADD", "z", "1", "a", "2", "b"}, {"ZADD", "z2", "3", "c"}, {"ZSCORE", "z", "a"}, {"ZINCRBY", "z", "1", "a"},
	{"ZRANGE", "z", "0", "-1"}, {"ZREM", "z", "b"}, {"ZUNIONSTORE", "z3", "2", "z", "z2"},
	{"ZINTERSTORE", "z3", "2", "z", "nokey"}, {"ZRANGESTORE", "z4", "z2", "0", "-1"}, {"ZPOPMIN", "z4"},
	{"ZCARD", "z"}, {"ZRANK", "z", "a"},
	{"SORT", "l"}, {"SORT", "l", "ALPHA", "STORE", "sorted"}, {"SORT", "nokey"},
	{"COPY", "s", "s3"}, {"COPY", "nokey", "s4"}, {"RENAME", "s3", "s5"}, {"RENAMENX", "s5", "s"},
	{"BITOP", "OR", "bo", "s", "nokey"}, {"SETBIT", "bits", "3", "1"}, {"GETBIT", "bits", "3"}, {"BITCOUNT", "bits"},
	{"BITFIELD", "bits", "GET", "u4", "0"}, {"BITFIELD", "bits2", "SET", "u4", "0", "1"},
	{"PFADD", "hll", "a", "b"}, {"PFADD", "hll2", "c"}, {"PFCOUNT", "hll"}, {"PFCOUNT", "hll", "hll2"},
	{"PFMERGE", "hll3", "hll", "hll2", "nokey"},
	{"GEOADD", "geo", "13.361389", "38.115556", "Palermo"}, {"GEOPOS", "geo", "Palermo"},
	{"GEOSEARCHSTORE", "geo2", "geo", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"},
	{"XADD", "x", "1-1", "f", "v"}, {"XLEN", "x"}, {"XRANGE", "x", "-", "+"}, {"XGROUP", "CREATE", "x", "g", "0"},
	{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">"}, {"XACK", "x", "g", "1-1"}, {"XDEL", "x", "1-1"},
	{"XTRIM", "x", "MAXLEN", "0"},
	{"DEL", "s", "nokey"}, {"UNLINK", "b"}, {"MOVE", "c", "1"}, {"EXISTS", "c"},
	{"SCAN", "0"}, {"KEYS", "*"}, {"RANDOMKEY"}, {"DBSIZE"}, {"MEMORY", "USAGE", "h"}, {"MEMORY", "USAGE", "nokey"},
	{"WATCH", "h", "nokey"}, {"MULTI"}, {"GET", "h2"}, {"INCR", "n"}, {"HGET", "h", "f"}, {"EXEC"},
	{"EVAL", "redis.call('get', KEYS[1]); redis.call('set', KEYS[1], 'x'); return redis.call('incr', KEYS[2])", "2", "s", "n"},
	{"EVAL_RO", "return redis.call('exists', KEYS[1])", "1", "nokey"},
	{"XREAD", "STREAMS", "x", "nokey", "0", "0"}, {"XADD", "x", "2-1", "f", "v"},
	{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "x", ">"}, {"XPENDING", "x", "g"},
	{"XCLAIM", "x", "g", "c2", "0", "2-1"}, {"XAUTOCLAIM", "x", "g", "c3", "0", "0"},
	{"RPUSH", "ml", "a", "b"}, {"LMPOP", "2", "nokey", "ml", "LEFT"}, {"BLPOP", "ml", "1"},
	{"ZADD", "mz", "1", "a"}, {"ZMPOP", "1", "mz", "MIN"}, {"HRANDFIELD", "h"}, {"LCS", "s", "n"},
	{"SMOVE", "nokey", "st", "a"}, {"GEORADIUS", "geo", "15", "37", "200", "km", "STORE", "geo3"},
	{"SCAN", "0", "TYPE", "string", "COUNT", "1000"}, {"SCAN", "0", "MATCH", "h*"}, {"OBJECT", "FREQ", "h"}, {"OBJECT", "IDLETIME", "nokey"},
	{"SET", "e1", "v", "PX", "1"}, {"SET", "e2", "v", "PX", "1"}, {"SET", "e3", "v", "PX", "1"}, {"#SLEEP"},
	{"GET", "e1"}, {"INCR", "e2"}, {"EXISTS", "e3"},
	{"FLUSHDB"}, {"GET", "h"},
	// Cold keys: Spillway's DEBUG DEMOTE moves them to disk (nothing on
	// redis-server); reads of them count as Redis counts them.
	{"SET", "cs", "v"}, {"HSET", "ch", "f", "v", "g", "w"}, {"RPUSH", "cl", "a", "b", "c"},
	{"SADD", "cset", "a", "b"}, {"ZADD", "cz", "1", "a"}, {"SET", "cn", "5"}, {"SET", "cx", "v", "EX", "1000"},
	{"#DEMOTE", "cs", "ch", "cl", "cset", "cz", "cn", "cx"},
	{"GET", "cs"}, {"GET", "cs"}, {"HGET", "ch", "f"}, {"HSET", "ch", "g", "w2"}, {"LRANGE", "cl", "0", "-1"},
	{"LPOP", "cl"}, {"SISMEMBER", "cset", "a"}, {"ZSCORE", "cz", "a"}, {"INCR", "cn"}, {"EXISTS", "cx", "nokey"},
	{"TYPE", "cz"}, {"TTL", "cx"}, {"MGET", "cs", "cn", "nokey"},
	{"#DEMOTE", "cs", "ch", "cl", "cset", "cz", "cn", "cx"},
	{"GETDEL", "cs"}, {"DEL", "ch"}, {"SORT", "cl", "ALPHA"}, {"SUNIONSTORE", "cset2", "cset", "nokey"},
	{"HGETALL", "ch"}, {"STRLEN", "cx"}, {"SET", "cn", "1"}, {"EXPIRE", "cz", "100"}, {"DUMP", "cset"},
	{"EVAL", "return redis.call('get', KEYS[1])", "1", "cx"},
}

// keyspaceStats runs the script on addr and returns one line per command:
// the command and the two counters after it.
func keyspaceStats(t *testing.T, addr string, spillway bool) []string {
	t.Helper()
	c := harness.MustDial(t, addr)
	defer c.Close()
	if r := c.Do("FLUSHALL"); r.Err != nil {
		t.Fatalf("FLUSHALL: %v", r.Err)
	}
	if r := c.Do("CONFIG", "RESETSTAT"); r.Err != nil {
		t.Fatalf("CONFIG RESETSTAT: %v", r.Err)
	}
	var out []string
	inMulti := false
	for _, cmd := range keyspaceStatsScript {
		switch cmd[0] {
		case "#SLEEP": // the keys set with PX 1 expire
			time.Sleep(20 * time.Millisecond)
			continue
		case "#DEMOTE":
			if spillway {
				if r := c.Do(append([]string{"DEBUG", "DEMOTE"}, cmd[1:]...)...); r.Err != nil || r.IsError() {
					t.Fatalf("DEBUG DEMOTE: %v %s", r.Err, r.String())
				}
			}
			continue
		}
		if r := c.Do(cmd...); r.Err != nil {
			t.Fatalf("%v: %v", cmd, r.Err)
		}
		switch strings.ToUpper(cmd[0]) {
		case "MULTI":
			inMulti = true
		case "EXEC":
			inMulti = false
		}
		if inMulti {
			continue // INFO would be queued
		}
		m, err := harness.Info(c, "stats")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%-60s hits=%s misses=%s", strings.Join(cmd, " "),
			m["keyspace_hits"], m["keyspace_misses"]))
	}
	return out
}

func compareKeyspaceStats(t *testing.T, got, want []string) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("after command %d:\n  spillway:     %s\n  redis-server: %s\n  before it:    %s", i, got[i], want[i], want[max(i-1, 0)])
			return // the counters are cumulative: the first difference says it
		}
	}
}

// checkKeyspaceMetrics checks that the Prometheus endpoint at maddr
// reports the last counts of want (redis_exporter's names).
func checkKeyspaceMetrics(t *testing.T, maddr string, want []string) {
	t.Helper()
	var hits, misses float64
	if _, err := fmt.Sscanf(want[len(want)-1][61:], "hits=%g misses=%g", &hits, &misses); err != nil {
		t.Fatalf("parse %q: %v", want[len(want)-1], err)
	}
	m := scrape(t, maddr)
	if got := metric(t, m, "redis_keyspace_hits_total"); got != hits {
		t.Errorf("redis_keyspace_hits_total %v, redis-server's keyspace_hits %v", got, hits)
	}
	if got := metric(t, m, "redis_keyspace_misses_total"); got != misses {
		t.Errorf("redis_keyspace_misses_total %v, redis-server's keyspace_misses %v", got, misses)
	}
}

func TestKeyspaceStatsAgainstRedis(t *testing.T) {
	t.Setenv("SPILLWAY_TEST_HOOKS", "1") // DEBUG DEMOTE
	rs := harness.StartRedis(t)
	mport := harness.FreePort(t)
	sp := harness.StartSpillway(t, "", "--appendfsync", "no", "--loglevel", "warning",
		"--metrics-port", strconv.Itoa(mport))
	want := keyspaceStats(t, rs.Addr(), false)
	compareKeyspaceStats(t, keyspaceStats(t, sp.Addr(), true), want)
	checkKeyspaceMetrics(t, "127.0.0.1:"+strconv.Itoa(mport), want)
}

// In upstream mode the upstream counts the forwarded commands, the engine
// the reads answered from cold copies, and the demoter's own reads of the
// upstream are taken out (proxy/upstream/localstats.go).
func TestKeyspaceStatsUpstreamAgainstRedis(t *testing.T) {
	t.Setenv("SPILLWAY_TEST_HOOKS", "1") // DEBUG DEMOTE
	for _, tc := range []struct{ name, minHits string }{
		{"reloads", "1"},       // a cold key read is reloaded, then forwarded
		{"cold-reads", "1000"}, // a cold key read is answered from the store
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := harness.StartRedis(t)
			up := harness.StartRedis(t)
			mport := harness.FreePort(t)
			sp := harness.StartSpillway(t, "", "--upstream", "redis://"+up.Addr(), "--maxmemory", "0",
				"--appendfsync", "no", "--loglevel", "warning", "--metrics-port", strconv.Itoa(mport),
				"--promote-min-hits", tc.minHits)
			want := keyspaceStats(t, rs.Addr(), false)
			compareKeyspaceStats(t, keyspaceStats(t, sp.Addr(), true), want)
			checkKeyspaceMetrics(t, "127.0.0.1:"+strconv.Itoa(mport), want)
			info, err := harness.Info(sp.Conn(t), "tiering")
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("cold_reads %s, promotions %s", info["cold_reads"], info["promotions"])
			if tc.minHits == "1000" && info["cold_reads"] == "0" {
				t.Error("no read was answered from the store")
			}
		})
	}
}
