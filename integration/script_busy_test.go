package integration

import (
	"strings"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// Busy scripts and transactions, replies compared byte for byte with
// redis-server: EXEC during a busy script is refused with EXECABORT (and
// ends the transaction and its WATCHes, as Redis's rejectCommand does),
// commands queued meanwhile get BUSY and fail the transaction, and once the
// script is killed, or ends after running past busy-reply-threshold, the
// server answers everything again (FLUSHALL included) instead of BUSY.
// DISCARD, UNWATCH and RESET, which Redis serves during a busy script, do
// not wait for it.

// busyVariant is a way to run a never-ending script and to kill it.
type busyVariant struct {
	name  string
	setup [][]string // commands run before the script
	start []string   // the looping script
	kill  []string
}

var busyVariants = []busyVariant{
	{name: "eval", start: []string{"EVAL", "local i = 0 while true do i = i + 1 end", "0"},
		kill: []string{"SCRIPT", "KILL"}},
	{name: "function",
		setup: [][]string{{"FUNCTION", "LOAD", "REPLACE",
			"#!lua name=busylib\nredis.register_function('busy', function() local i = 0 while true do i = i + 1 end end)"}},
		start: []string{"FCALL", "busy", "0"},
		kill:  []string{"FUNCTION", "KILL"}},
}

// waitBusy polls PING on c until the server answers BUSY (the script has
// run past busy-reply-threshold) and returns that reply. Before the
// threshold a command waits for the script, so each PING returns either
// BUSY or, if the script already ended, PONG.
func waitBusy(t *testing.T, c *harness.Conn) string {
	t.Helper()
	for i := 0; i < 1000; i++ {
		r := c.Do("PING")
		if strings.HasPrefix(r.Str, "BUSY") {
			return string(r.Raw)
		}
	}
	t.Fatal("the server never answered BUSY while the script looped")
	return ""
}

// busyTransactions runs the scenario on one server and returns its
// replies, one line per step.
func busyTransactions(t *testing.T, addr string, v busyVariant) []string {
	var out []string
	rec := func(what string, r harness.Reply) { out = append(out, what+": "+string(r.Raw)) }
	dial := func(proto string) *harness.Conn {
		c := harness.MustDial(t, addr)
		if proto == "3" {
			c.Do("HELLO", "3")
		}
		return c
	}
	admin, runner, r2, r3, r4, other := dial("2"), dial("2"), dial("2"), dial("3"), dial("2"), dial("2")
	rec("flushall", admin.Do("FLUSHALL"))
	rec("threshold", admin.Do("CONFIG", "SET", "lua-time-limit", "10"))
	for _, s := range v.setup {
		rec("setup", admin.Do(s...))
	}
	rec("set", admin.Do("SET", "xx", "1"))
	rec("r2 watch", r2.Do("WATCH", "xx"))
	rec("r2 multi", r2.Do("MULTI"))
	rec("r2 incr", r2.Do("INCR", "xx"))
	rec("r3 multi", r3.Do("MULTI"))
	rec("r4 watch", r4.Do("WATCH", "xx"))
	if err := runner.Send(v.start...); err != nil {
		t.Fatal(err)
	}
	if err := runner.Flush(); err != nil {
		t.Fatal(err)
	}
	out = append(out, "busy: "+waitBusy(t, other))
	rec("r2 exec during the script", r2.Do("EXEC"))
	rec("r2 ping", r2.Do("PING"))
	rec("r2 exec without multi", r2.Do("EXEC"))
	rec("r3 incr", r3.Do("INCR", "xx"))
	rec("r3 exec", r3.Do("EXEC"))
	rec("r2 multi", r2.Do("MULTI"))
	rec("r2 discard", r2.Do("DISCARD"))
	rec("r4 reset", r4.Do("RESET"))
	rec("r4 unwatch", r4.Do("UNWATCH"))
	rec("r2 multi again", r2.Do("MULTI"))
	rec("r2 incr queued during the script", r2.Do("INCR", "xx"))
	rec("wrong kill", admin.Do(map[string][]string{"SCRIPT": {"FUNCTION", "KILL"}, "FUNCTION": {"SCRIPT", "KILL"}}[v.kill[0]]...))
	rec("kill", admin.Do(v.kill...))
	rec("the script's reply", runner.Read())
	rec("r2 incr after the kill", r2.Do("INCR", "xx"))
	rec("r2 exec after the kill", r2.Do("EXEC"))
	rec("r2 ping", r2.Do("PING", "asdf"))
	// The WATCH dropped by the refused EXEC no longer applies.
	rec("get", admin.Do("GET", "xx"))
	rec("r2 multi", r2.Do("MULTI"))
	rec("r2 incr", r2.Do("INCR", "xx"))
	rec("admin set", admin.Do("SET", "xx", "5"))
	rec("r2 exec", r2.Do("EXEC"))
	rec("r4 multi", r4.Do("MULTI"))
	rec("r4 get", r4.Do("GET", "xx"))
	rec("r4 exec", r4.Do("EXEC"))
	rec("r3 ping", r3.Do("PING"))
	rec("other flushall", other.Do("FLUSHALL"))
	rec("kill with nothing running", admin.Do(v.kill...))
	return out
}

// TestBusyScriptTransactions compares busyTransactions on redis-server and
// embedded Spillway, for EVAL with SCRIPT KILL and FCALL with FUNCTION
// KILL.
func TestBusyScriptTransactions(t *testing.T) {
	redisAddr := harness.StartRedis(t).Addr()
	spwAddr := startEmbeddedHooks(t).Addr()
	for _, v := range busyVariants {
		t.Run(v.name, func(t *testing.T) {
			compareLines(t, busyTransactions(t, redisAddr, v), busyTransactions(t, spwAddr, v))
		})
	}
}

// TestScriptPastThresholdEnds: a script that runs past
// busy-reply-threshold and then ends by itself leaves the server serving
// everyone (the BUSY state ends with the script).
func TestScriptPastThresholdEnds(t *testing.T) {
	redisAddr := harness.StartRedis(t).Addr()
	spwAddr := startEmbeddedHooks(t).Addr()
	// The script loops until the server's clock has moved 300 ms, far past
	// the 10 ms threshold, without a write (so it stays killable).
	const body = `local t0 = redis.call('TIME')
local function us(t) return tonumber(t[1]) * 1000000 + tonumber(t[2]) end
local start = us(t0)
while us(redis.call('TIME')) - start < 300000 do end
return 'done'`
	run := func(addr string) []string {
		var out []string
		rec := func(what string, r harness.Reply) { out = append(out, what+": "+string(r.Raw)) }
		admin, runner, other := harness.MustDial(t, addr), harness.MustDial(t, addr), harness.MustDial(t, addr)
		rec("threshold", admin.Do("CONFIG", "SET", "busy-reply-threshold", "10"))
		if err := runner.Send("EVAL", body, "0"); err != nil {
			t.Fatal(err)
		}
		if err := runner.Flush(); err != nil {
			t.Fatal(err)
		}
		out = append(out, "busy: "+waitBusy(t, other))
		rec("the script's reply", runner.Read())
		rec("ping", other.Do("PING"))
		rec("set", other.Do("SET", "k", "v"))
		rec("flushall", other.Do("FLUSHALL"))
		rec("function stats", other.Do("FUNCTION", "STATS"))
		rec("script kill", admin.Do("SCRIPT", "KILL"))
		return out
	}
	compareLines(t, run(redisAddr), run(spwAddr))
}

// compareLines reports every line where Spillway's replies differ from
// Redis's.
func compareLines(t *testing.T, want, got []string) {
	t.Helper()
	for i := 0; i < max(len(want), len(got)); i++ {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("step %d:\n  redis:    %q\n  spillway: %q", i, w, g)
		}
	}
}

// TestWatchDuringBusyScript: WATCH is served during a busy script (it used
// to wait for the script's end), and the script's writes after the WATCH
// fail the watcher's EXEC while its earlier ones do not; a FLUSHALL in the
// script fails the watchers of keys it removed. Compared with redis-server.
func TestWatchDuringBusyScript(t *testing.T) {
	redisAddr := harness.StartRedis(t).Addr()
	spwAddr := startEmbeddedHooks(t).Addr()
	// Each script writes (so it cannot be killed), runs past the threshold
	// until the server's clock has moved a second, then writes again.
	const loop = `local function us(t) return tonumber(t[1]) * 1000000 + tonumber(t[2]) end
local start = us(redis.call('TIME'))
while us(redis.call('TIME')) - start < 1000000 do end
`
	run := func(addr string) []string {
		var out []string
		rec := func(what string, r harness.Reply) { out = append(out, what+": "+string(r.Raw)) }
		admin, runner, other := harness.MustDial(t, addr), harness.MustDial(t, addr), harness.MustDial(t, addr)
		var w [6]*harness.Conn
		for i := range w {
			w[i] = harness.MustDial(t, addr)
		}
		rec("flushall", admin.Do("FLUSHALL"))
		rec("threshold", admin.Do("CONFIG", "SET", "busy-reply-threshold", "10"))
		rec("mset", admin.Do("MSET", "a", "1", "b", "1", "c", "1"))
		for i, body := range []string{
			"redis.call('SET', 'w', 'x')\n" + loop + "redis.call('SET', 'b', 'y') return 'done'",
			"redis.call('SET', 'w', 'x')\n" + loop + "redis.call('FLUSHALL') return 'done'",
		} {
			if err := runner.Send("EVAL", body, "0"); err != nil {
				t.Fatal(err)
			}
			if err := runner.Flush(); err != nil {
				t.Fatal(err)
			}
			out = append(out, "busy: "+waitBusy(t, other))
			// Written at the end, untouched, written before the WATCH.
			keys := []string{"b", "a", "w"}
			if i == 1 {
				keys = []string{"c", "nosuch", "w"}
			}
			for j, k := range keys {
				rec("watch "+k, w[3*i+j].Do("WATCH", k))
			}
			rec("the script's reply", runner.Read())
			for j, k := range keys {
				c := w[3*i+j]
				c.Do("MULTI")
				c.Do("PING")
				rec("exec after watching "+k, c.Do("EXEC"))
			}
		}
		return out
	}
	compareLines(t, run(redisAddr), run(spwAddr))
}
