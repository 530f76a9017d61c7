package integration

import (
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// TestStructuresSurviveRestart: lists and sorted sets, held whole, by their
// ends and cold, read back identically after a SIGTERM restart and after a
// kill -9 (appendfsync always), byte for byte against redis-server holding
// the same data: elements in order, scores (-0 included, where Redis keeps
// it), encodings, TTLs.
func TestStructuresSurviveRestart(t *testing.T) {
	s := harness.StartSpillway(t, "", "--maxmemory", "4mb", "--appendfsync", "always", "--loglevel", "warning")
	ref := harness.StartRedis(t)
	c, rc := s.Conn(t), harness.MustDial(t, ref.Addr())
	both := func(args ...string) {
		t.Helper()
		a, b := rc.Do(args...), c.Do(args...)
		if string(a.Raw) != string(b.Raw) {
			t.Fatalf("%s: redis %q, spillway %q", strings.Join(args, " "), a.Raw, b.Raw)
		}
	}
	big := []string{"RPUSH", "biglist"}
	for i := range 20000 {
		big = append(big, "e"+strconv.Itoa(i))
	}
	skip := []string{"ZADD", "bigz"}
	for i := range 5000 {
		skip = append(skip, strconv.Itoa(i%100), "m"+strconv.Itoa(i))
	}
	setup := [][]string{
		{"RPUSH", "small", "a", "b", "c"}, {"LPUSH", "small", "z"},
		big, {"LPOP", "biglist", "3"}, {"RPUSH", "biglist", "tail"},
		{"ZADD", "lp", "-0", "zero", "1.5", "x", "123456789012345678", "huge"},
		skip, {"ZADD", "bigz", "-0", "negzero"},
		{"ZADD", "wide", "1", strings.Repeat("w", 65), "-0", "nz"}, {"ZREM", "wide", strings.Repeat("w", 65)},
		{"PEXPIRE", "small", "100000000"},
	}
	for _, args := range setup {
		both(args...)
	}
	reads := [][]string{
		{"LRANGE", "small", "0", "-1"}, {"LLEN", "biglist"}, {"LRANGE", "biglist", "0", "4"},
		{"LRANGE", "biglist", "9000", "9010"}, {"LRANGE", "biglist", "-3", "-1"}, {"LINDEX", "biglist", "12345"},
		{"ZRANGE", "lp", "0", "-1", "WITHSCORES"}, {"ZSCAN", "lp", "0"}, {"OBJECT", "ENCODING", "lp"},
		{"ZSCORE", "bigz", "negzero"}, {"ZRANGE", "bigz", "0", "5", "WITHSCORES"}, {"ZCARD", "bigz"},
		{"ZRANGEBYSCORE", "bigz", "(98", "+inf", "LIMIT", "0", "3", "WITHSCORES"}, {"OBJECT", "ENCODING", "bigz"},
		{"ZRANGE", "wide", "0", "-1", "WITHSCORES"}, {"OBJECT", "ENCODING", "wide"},
		{"TYPE", "biglist"}, {"TYPE", "bigz"}, {"DBSIZE"},
	}
	check := func(when string) {
		t.Helper()
		for _, args := range reads {
			both(args...)
		}
		if ttl := c.Do("PTTL", "small"); ttl.Int <= 0 {
			t.Fatalf("%s: PTTL small = %s", when, ttl.String())
		}
	}
	check("before")
	s.Restart()
	c = s.Conn(t)
	check("after SIGTERM")
	s.Kill9()
	s.Restart()
	c = s.Conn(t)
	check("after kill -9")
}
