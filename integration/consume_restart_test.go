package integration

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// Cold structures consumed at an end keep in memory how far they are
// consumed (tiering's zsetBounds, collHoles and the sweeper's floor):
// hints the store does not depend on. After a kill -9 and after a clean
// stop, a restarted server sees exactly the members that were left, and
// pops go on where they stopped.

// restartZSetN is over the 4,096 members a sorted set may have in memory,
// restartSetN over what an eighth of the hot tier holds at --maxmemory
// 16mb.
const restartZSetN, restartSetN = 12_000, 30_000

// TestConsumedStructuresSurviveRestart pops cold sorted sets (both ends,
// and the ZRANGEBYSCORE+ZREM pattern) and a cold set, under appendfsync
// always, then checks the members left after a kill -9 and after a clean
// restart.
func TestConsumedStructuresSurviveRestart(t *testing.T) {
	spw := harness.StartSpillway(t, t.TempDir(), "--maxmemory", "16mb", "--appendfsync", "always")
	defer spw.Term()
	c := spw.Conn(t)
	for _, cmd := range []string{"ZADD", "SADD"} {
		key, n := "cz", restartZSetN
		if cmd == "SADD" {
			key, n = "cs", restartSetN
		}
		for lo := 0; lo < n; lo += 1000 {
			args := []string{cmd, key}
			for i := lo; i < lo+1000; i++ {
				if cmd == "ZADD" {
					args = append(args, strconv.Itoa(i))
				}
				args = append(args, member(i))
			}
			if r := c.Do(args...); r.Int != 1000 {
				t.Fatalf("%s %s: %s", cmd, key, r.String())
			}
		}
	}
	info := tieringInfo(t, spw)
	if info["hot_keys"] != "0" || info["cold_keys"] != "2" {
		t.Fatalf("the sorted set and the set are not cold: INFO tiering %s", tieringFields(info))
	}

	lo, hi := 0, restartZSetN-1 // cz holds member(lo..hi)
	popped := map[string]bool{} // members SPOP returned from cs
	pops := func(round int) {
		t.Helper()
		for range 300 {
			if r := c.Do("ZPOPMIN", "cz"); len(r.Elems) != 2 || r.Elems[0].Str != member(lo) {
				t.Fatalf("round %d: ZPOPMIN cz = %s, want %s", round, r.String(), member(lo))
			}
			lo++
			if r := c.Do("ZPOPMAX", "cz"); len(r.Elems) != 2 || r.Elems[0].Str != member(hi) {
				t.Fatalf("round %d: ZPOPMAX cz = %s, want %s", round, r.String(), member(hi))
			}
			hi--
			r := c.Do("ZRANGEBYSCORE", "cz", "-inf", "+inf", "LIMIT", "0", "1")
			if len(r.Elems) != 1 || r.Elems[0].Str != member(lo) {
				t.Fatalf("round %d: ZRANGEBYSCORE cz -inf +inf LIMIT 0 1 = %s, want %s", round, r.String(), member(lo))
			}
			if r := c.Do("ZREM", "cz", member(lo)); r.Int != 1 {
				t.Fatalf("round %d: ZREM cz %s = %s", round, member(lo), r.String())
			}
			lo++
			for range 3 {
				r := c.Do("SPOP", "cs")
				if r.Type != '$' || popped[r.Str] {
					t.Fatalf("round %d: SPOP cs = %s (popped before: %v)", round, r.String(), popped[r.Str])
				}
				popped[r.Str] = true
			}
		}
	}
	check := func(when string) {
		t.Helper()
		c = spw.Conn(t)
		if r := c.Do("ZCARD", "cz"); r.Int != int64(hi-lo+1) {
			t.Fatalf("%s: ZCARD cz = %s, want %d", when, r.String(), hi-lo+1)
		}
		for _, end := range []struct {
			from string
			want int
		}{{"0", lo}, {"-1", hi}} {
			if r := c.Do("ZRANGE", "cz", end.from, end.from); len(r.Elems) != 1 || r.Elems[0].Str != member(end.want) {
				t.Fatalf("%s: ZRANGE cz %s %s = %s, want %s", when, end.from, end.from, r.String(), member(end.want))
			}
		}
		if r := c.Do("SCARD", "cs"); r.Int != int64(restartSetN-len(popped)) {
			t.Fatalf("%s: SCARD cs = %s, want %d", when, r.String(), restartSetN-len(popped))
		}
		args := []string{"SMISMEMBER", "cs"}
		for i := range restartSetN {
			args = append(args, member(i))
		}
		r := c.Do(args...)
		if len(r.Elems) != restartSetN {
			t.Fatalf("%s: SMISMEMBER: %s", when, harness.Trunc(r.String(), 200))
		}
		for i, e := range r.Elems {
			if want := !popped[member(i)]; (e.Int == 1) != want {
				t.Fatalf("%s: SISMEMBER cs %s = %d, want %v", when, member(i), e.Int, want)
			}
		}
	}
	pops(1)
	check("before the restarts")
	spw.Kill9()
	spw.Restart()
	check("after kill -9")
	pops(2)
	spw.Restart() // SIGTERM, then start again
	check("after a clean restart")
	pops(3)
	check(fmt.Sprintf("after %d rounds", 3))
}
