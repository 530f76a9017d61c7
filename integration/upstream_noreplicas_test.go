package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// min-replicas-to-write in upstream mode counts Spillway's own replicas
// (its relay's), as a redis-server counts its own: with no replica every
// write is refused with NOREPLICAS, whether Spillway refuses it (plain
// commands, a cold key's DEL, a script's declared flags) or the upstream
// does (a script's first write, MULTI's queued writes, functions), and a
// replica attached to Spillway lets them run; once it is gone they are
// refused again although Spillway's relay link to the upstream stays (the
// upstream counts that link as its replica). Each phase is compared byte
// for byte with a redis-server alone under the same setting.

const noReplLib = "#!lua name=noreplib\n" +
	"redis.register_function('fset', function(keys, args) return redis.call('set', keys[1], args[1]) end)\n" +
	"redis.register_function{function_name='fget', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes'}}"

// noReplObserve runs the commands whose answers min-replicas-to-write
// decides and returns their replies' bytes.
func noReplObserve(c *harness.Conn) []string {
	var obs []string
	do := func(args ...string) {
		r := c.Do(args...)
		obs = append(obs, fmt.Sprintf("%s: %q", harness.Trunc(strings.Join(args, " "), 60), r.Raw))
	}
	do("SET", "x", "some value")
	do("INCR", "n")
	do("GET", "x")
	// unit/scripting's "not enough good replicas".
	do("EVAL", "#!lua flags=no-writes\nreturn redis.call('get','x')", "1", "x")
	do("EVAL", "return redis.call('get','x')", "1", "x")
	do("EVAL", "#!lua\nreturn redis.call('get','x')", "1", "x")
	do("EVAL", "return redis.call('set','x', 1)", "1", "x")
	do("FCALL", "fset", "1", "x", "f")
	do("FCALL", "fget", "1", "x")
	do("FCALL_RO", "fget", "1", "x")
	do("MULTI")
	do("SET", "x", "in multi")
	do("GET", "x")
	do("EXEC")
	do("MULTI")
	do("GET", "x")
	do("EVAL", "return redis.call('set','x', 2)", "1", "x")
	do("EXEC")
	do("MULTI")
	do("GET", "cold:s")
	do("EXEC")
	// Keys Spillway keeps cold (demoted) and answers itself.
	do("GET", "cold:s")
	do("HGET", "cold:h", "f")
	do("TTL", "cold:s")
	do("EXPIRE", "cold:s", "1000")
	do("HSET", "cold:h", "g", "2")
	do("DEL", "cold:s")
	do("GET", "x")
	return obs
}

// noReplScenario sets up the keys and the library, runs the three phases
// on srv (none, one replica, its replica gone) and returns what each
// observed. demote makes the cold: keys cold (nothing on redis-server);
// replicaOf starts a real replica of srv.
func noReplScenario(t *testing.T, srv *harness.Server, demote func(*harness.Conn)) [3][]string {
	t.Helper()
	c := utDial(t, srv.Addr(), 20*time.Second)
	for _, args := range [][]string{
		{"SET", "x", "init"}, {"SET", "cold:s", "cold value"}, {"HSET", "cold:h", "f", "1"},
		{"FUNCTION", "LOAD", noReplLib},
	} {
		if r := c.Do(args...); r.IsError() {
			t.Fatalf("%v: %q", args, r.Raw)
		}
	}
	demote(c)
	if r := c.Do("CONFIG", "SET", "min-replicas-to-write", "1"); r.Str != "OK" {
		t.Fatalf("CONFIG SET min-replicas-to-write 1: %q", r.Raw)
	}
	var out [3][]string
	out[0] = noReplObserve(c)

	replica := harness.StartRedis(t, "--replicaof", "127.0.0.1", strconv.Itoa(srv.Port()))
	rc := utDial(t, replica.Addr(), 20*time.Second)
	relayWaitLink(t, rc)
	// Good replicas are counted on the master's once-a-second tick.
	noReplAwait(t, c, "OK")
	for _, args := range [][]string{{"SET", "cold:s", "cold value"}, {"HSET", "cold:h", "f", "1"}} {
		c.Do(args...)
	}
	demote(c)
	out[1] = noReplObserve(c)

	replica.Kill9()
	replica.WaitExit(10 * time.Second)
	noReplAwait(t, c, "NOREPLICAS Not enough good replicas to write.")
	for _, args := range [][]string{{"CONFIG", "SET", "min-replicas-to-write", "0"},
		{"SET", "cold:s", "cold value"}, {"HSET", "cold:h", "f", "1"}} {
		c.Do(args...)
	}
	demote(c) // while writes are allowed
	c.Do("CONFIG", "SET", "min-replicas-to-write", "1")
	out[2] = noReplObserve(c)
	return out
}

// noReplAwait waits (bounded) until SET answers want.
func noReplAwait(t *testing.T, c *harness.Conn, want string) {
	t.Helper()
	for i := 0; ; i++ {
		r := c.Do("SET", "probe", "1")
		if r.Str == want {
			return
		}
		if i == 300 {
			t.Fatalf("SET kept answering %q; want %q", r.Raw, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestUpstreamMinReplicasToWrite(t *testing.T) {
	ref := harness.StartRedis(t)
	want := noReplScenario(t, ref, func(*harness.Conn) {})

	t.Setenv("SPILLWAY_TEST_HOOKS", "1") // DEBUG DEMOTE
	up := harness.StartRedis(t)
	dir := t.TempDir()
	sp := utStartSpillway(t, up, dir, 64*utMB)
	uc := utDial(t, up.Addr(), 20*time.Second)
	got := noReplScenario(t, sp, func(c *harness.Conn) {
		if r := c.Do("DEBUG", "DEMOTE", "cold:s", "cold:h"); r.IsError() {
			t.Fatalf("DEBUG DEMOTE: %q", r.Raw)
		}
	})
	for phase := range want {
		if len(got[phase]) != len(want[phase]) {
			t.Fatalf("phase %d: %d observations, redis-server had %d", phase, len(got[phase]), len(want[phase]))
		}
		for i := range want[phase] {
			if got[phase][i] != want[phase][i] {
				t.Errorf("phase %d, observation %d:\n spillway: %s\n    redis: %s", phase, i, got[phase][i], want[phase][i])
			}
		}
	}

	// The upstream refuses while Spillway does (its own value kept in
	// dir), and gets its own values back when the setting is 0.
	upGet := func(name string) string { return uc.Do("CONFIG", "GET", name).Elems[1].Str }
	if v := upGet("min-replicas-to-write"); v != "2147483647" {
		t.Fatalf("upstream min-replicas-to-write = %s while Spillway refuses writes", v)
	}
	if _, err := os.Stat(filepath.Join(dir, "upstream-min-replicas-to-write.override")); err != nil {
		t.Fatalf("override file: %v", err)
	}
	c := utDial(t, sp.Addr(), 20*time.Second)
	if r := c.Do("CONFIG", "GET", "min-replicas-to-write"); len(r.Elems) != 2 || r.Elems[1].Str != "1" {
		t.Fatalf("CONFIG GET min-replicas-to-write through Spillway: %q", r.Raw)
	}
	if r := c.Do("CONFIG", "SET", "min-replicas-to-write", "0"); r.Str != "OK" {
		t.Fatalf("CONFIG SET min-replicas-to-write 0: %q", r.Raw)
	}
	if a, b := upGet("min-replicas-to-write"), upGet("min-replicas-max-lag"); a != "0" || b != "10" {
		t.Fatalf("upstream's min-replicas settings after the override: %s %s; want its own 0 10", a, b)
	}
	if r := c.Do("SET", "x", "free"); r.Str != "OK" {
		t.Fatalf("SET with min-replicas-to-write 0: %q", r.Raw)
	}
	log := utLogSinceStart(t, sp)
	if n := strings.Count(log, "level=ERROR"); n > 0 {
		t.Errorf("%d errors in Spillway's log:\n%s", n, harness.Trunc(log, 4000))
	}

	// An override left by a Spillway killed meanwhile is undone at its
	// next start (its setting is not in its configuration).
	if r := c.Do("CONFIG", "SET", "min-replicas-to-write", "1"); r.Str != "OK" {
		t.Fatalf("CONFIG SET min-replicas-to-write 1: %q", r.Raw)
	}
	if v := upGet("min-replicas-to-write"); v != "2147483647" {
		t.Fatalf("upstream min-replicas-to-write = %s while Spillway refuses writes", v)
	}
	sp.Kill9()
	sp.WaitExit(10 * time.Second)
	sp2 := utStartSpillway(t, up, dir, 64*utMB)
	harness.MustDial(t, sp2.Addr()).Do("PING")
	if a, b := upGet("min-replicas-to-write"), upGet("min-replicas-max-lag"); a != "0" || b != "10" {
		t.Fatalf("upstream's min-replicas settings after a restart: %s %s; want its own 0 10", a, b)
	}
}
