package integration

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway/spillway/integration/harness"
)

// Scripting and functions in embedded mode, end to end: scenarios against
// redis-server (scripts over cold keys, SELECT inside scripts, scripts in
// MULTI, read-only scripts, functions), atomicity under demotion, busy
// scripts and kills, and libraries surviving a restart.

// TestScriptScenarios runs the scripting scenarios against embedded
// Spillway and redis-server.
func TestScriptScenarios(t *testing.T) {
	runScenarios(t, startEmbeddedHooks(t).Addr(), subjectEmbedded, scriptScenarios)
}

// TestScriptScenariosRedisVsRedis proves them deterministic on Redis.
func TestScriptScenariosRedisVsRedis(t *testing.T) {
	runScenarios(t, harness.StartRedis(t).Addr(), subjectRedis, scriptScenarios)
}

const scriptTransfer = `
local a = tonumber(redis.call('GET', KEYS[1]) or '0')
local b = tonumber(redis.call('HGET', KEYS[2], 'bal') or '0')
redis.call('SET', KEYS[1], a - ARGV[1])
redis.call('HSET', KEYS[2], 'bal', b + ARGV[1])
redis.call('RPUSH', KEYS[3], ARGV[1])
return {a, b, redis.call('LLEN', KEYS[3])}`

var scriptScenarios = []upScenario{
	{name: "scripts-over-cold-keys", run: func(s *scen) {
		for _, proto := range []int{2, 3} {
			c := s.conn("c"+strconv.Itoa(proto), proto)
			c.do("FLUSHDB")
			c.do("SET", "acct", "100")
			c.do("HSET", "wallet", "bal", "7", "other", "x")
			c.do("RPUSH", "log", "start")
			c.do("ZADD", "z", "1", "a", "2", "b")
			c.do("SADD", "st", "m1", "m2")
			s.demote(0, "acct", "wallet", "log", "z", "st")
			c.do("EVAL", scriptTransfer, "3", "acct", "wallet", "log", "5")
			s.demote(0, "acct", "wallet", "log")
			c.do("EVAL", scriptTransfer, "3", "acct", "wallet", "log", "10")
			c.do("MGET", "acct")
			c.do("HGETALL", "wallet")
			c.do("LRANGE", "log", "0", "-1")
			c.do("EVAL", "return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')", "1", "z")
			c.do("EVAL", "redis.setresp(3); return redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')", "1", "z")
			c.do("EVAL", "redis.setresp(3); return redis.call('HGETALL', KEYS[1])", "1", "wallet")
			c.do("EVAL", "return redis.call('SISMEMBER', KEYS[1], 'm1')", "1", "st")
			c.do("EVAL", "return redis.pcall('INCR', KEYS[1])", "1", "wallet")
			c.do("EVAL", "return redis.call('INCR', KEYS[1])", "1", "wallet")
			c.do("EVAL", "return redis.call('DEL', KEYS[1], KEYS[2])", "2", "acct", "missing")
			c.do("EXISTS", "acct")
		}
	}},
	{name: "script-select-and-multi", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SET", "k", "db0")
		c.do("SELECT", "3")
		c.do("SET", "k", "db3")
		s.demote(3, "k")
		c.do("SELECT", "0")
		s.demote(0, "k")
		// SELECT inside a script does not change the caller's database.
		c.do("EVAL", "redis.call('SELECT', 3); local v = redis.call('GET', KEYS[1]); redis.call('SET', 'from-script', v); return v", "1", "k")
		c.do("GET", "k")
		c.do("GET", "from-script")
		c.do("SELECT", "3")
		c.do("GET", "from-script")
		c.do("SELECT", "0")
		// A script inside MULTI joins the transaction.
		c.do("MULTI")
		c.do("INCR", "n")
		c.do("EVAL", "return redis.call('INCRBY', KEYS[1], 10)", "1", "n")
		c.do("EVAL", "return redis.call('BLPOP', 'nolist', 0)", "0")
		c.do("GET", "n")
		c.do("EXEC")
	}},
	{name: "script-read-only-and-errors", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SET", "k", "v")
		s.demote(0, "k")
		c.do("EVAL_RO", "return redis.call('GET', KEYS[1])", "1", "k")
		c.do("EVAL_RO", "return redis.call('SET', KEYS[1], 'x')", "1", "k")
		c.do("EVAL", "#!lua flags=no-writes\nreturn redis.call('SET', KEYS[1], 'x')", "1", "k")
		c.do("EVAL", "return redis.call('SUBSCRIBE', 'ch')", "0")
		c.do("EVAL", "return redis.call('NOSUCH')", "0")
		c.do("EVAL", "return redis.call('GET')", "0")
		c.do("EVAL", "return undefinedvar", "0")
		c.do("EVAL", "newglobal = 1", "0")
		c.do("EVAL", "error('boom')", "0")
		c.do("EVAL", "return redis.error_reply('MY custom')", "0")
		c.do("EVAL", "return redis.status_reply('FINE')", "0")
		c.do("EVAL", "return {1, 2.9, 'x', false, true, {err='nested'}}", "0")
		c.do("EVAL", "return redis.sha1hex('abc')", "0")
		c.do("EVAL", "return cjson.encode({a=1})", "0")
		c.do("EVAL", "return", "-1")
		c.do("EVAL", "return", "5", "a")
		c.do("GET", "k")
	}},
	{name: "functions", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("FUNCTION", "FLUSH")
		lib := "#!lua name=bank\n" +
			"redis.register_function('move', function(keys, args)\n" +
			"  local v = tonumber(redis.call('GET', keys[1]) or '0')\n" +
			"  redis.call('SET', keys[1], v - args[1])\n" +
			"  return redis.call('INCRBY', keys[2], args[1])\n" +
			"end)\n" +
			"redis.register_function{function_name='peek', callback=function(keys) return redis.call('GET', keys[1]) end, flags={'no-writes'}}\n"
		c.do("FUNCTION", "LOAD", lib)
		c.do("FUNCTION", "LOAD", lib)
		c.do("SET", "a", "50")
		s.demote(0, "a")
		c.do("FCALL", "move", "2", "a", "b", "20")
		s.demote(0, "a", "b")
		c.do("FCALL_RO", "peek", "1", "a")
		c.do("FCALL_RO", "move", "2", "a", "b", "1")
		c.do("FCALL", "nosuch", "0")
		// The order of a library's functions is Redis's hash order, which
		// differs between two redis-servers: list a one-function library.
		c.do("FUNCTION", "LOAD", "#!lua name=one\nredis.register_function{function_name='only', callback=function() return 1 end, description='just one'}")
		c.do("FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "on*")
		c.do("FUNCTION", "LIST", "LIBRARYNAME", "nomatch*")
		c.do("FUNCTION", "DELETE", "one")
		dump := c.do("FUNCTION", "DUMP")
		c.do("FUNCTION", "DELETE", "bank")
		c.do("FUNCTION", "DELETE", "bank")
		c.do("FUNCTION", "RESTORE", dump.Str)
		c.do("FUNCTION", "RESTORE", dump.Str)
		c.do("FUNCTION", "RESTORE", dump.Str, "REPLACE")
		c.do("FCALL", "move", "2", "a", "b", "5")
		c.do("MGET", "a", "b")
		c.do("FUNCTION", "STATS")
	}},
}

// TestScriptAtomicUnderDemotion: scripts that move amounts between cold
// strings and hash fields while a demoter sends them to disk every 2 ms
// and a 1 MB tier churns; an auditing script must always see the same
// total.
func TestScriptAtomicUnderDemotion(t *testing.T) {
	spw := startEmbeddedHooks(t, "--maxmemory", "1mb")
	ctx := context.Background()
	admin := harness.GoRedis(t, spw.Addr(), 2)
	const accounts, initial = 16, 500
	keys := make([]string, 0, accounts+1)
	for i := 0; i < accounts; i++ {
		k := "acct:" + strconv.Itoa(i)
		keys = append(keys, k)
		if err := admin.Set(ctx, k, initial, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := admin.HSet(ctx, "ledger", k, initial).Err(); err != nil {
			t.Fatal(err)
		}
	}
	move := redis.NewScript(`
local amt = tonumber(ARGV[1])
redis.call('DECRBY', KEYS[1], amt)
redis.call('INCRBY', KEYS[2], amt)
redis.call('HINCRBY', KEYS[3], KEYS[2], -amt)
redis.call('HINCRBY', KEYS[3], KEYS[1], amt)
return 1`)
	audit := redis.NewScript(`
local sum = 0
for i = 1, #KEYS - 1 do sum = sum + tonumber(redis.call('GET', KEYS[i])) end
for _, v in ipairs(redis.call('HVALS', KEYS[#KEYS])) do sum = sum + tonumber(v) end
return sum`)
	deadline := time.Now().Add(20 * time.Second)
	var wg sync.WaitGroup
	var failures atomic.Int64
	fail := func(format string, args ...any) {
		if failures.Add(1) <= 5 {
			t.Errorf(format, args...)
		}
	}
	churn := startTierChurn(t, spw.Addr(), append([]string{"ledger"}, keys...), deadline, fail)
	var moves, audits atomic.Int64
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := harness.GoRedis(t, spw.Addr(), 2)
			for i := 0; i < 1000 && time.Now().Before(deadline); i++ {
				a, b := keys[(i*7+w)%accounts], keys[(i*3+w+1)%accounts]
				if err := move.Run(ctx, c, []string{a, b, "ledger"}, 1+i%9).Err(); err != nil {
					fail("move: %v", err)
					return
				}
				moves.Add(1)
			}
		}(w)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := harness.GoRedis(t, spw.Addr(), 3)
		auditKeys := append(append([]string(nil), keys...), "ledger")
		for i := 0; i < 2000 && time.Now().Before(deadline); i++ {
			sum, err := audit.Run(ctx, c, auditKeys).Int64()
			if err != nil {
				fail("audit: %v", err)
				return
			}
			if sum != 2*accounts*initial {
				fail("audit %d: total %d, want %d (a script was seen half done)", i, sum, 2*accounts*initial)
				return
			}
			audits.Add(1)
		}
	}()
	wg.Wait()
	churn.Stop()
	info, err := harness.Info(harness.MustDial(t, spw.Addr()), "tiering")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("moves %d, audits %d, demotions %s, promotions %s", moves.Load(), audits.Load(), info["demotions"], info["promotions"])
	if moves.Load() == 0 || audits.Load() == 0 || info["promotions"] == "0" {
		t.Errorf("moves %d, audits %d, promotions %s: nothing was exercised", moves.Load(), audits.Load(), info["promotions"])
	}
}

// TestBusyScriptAndKill: while a script loops, other clients wait, then
// get BUSY once busy-reply-threshold has passed; SCRIPT KILL ends a
// read-only script, and a script that wrote cannot be killed (UNKILLABLE)
// — Redis's replies, checked against redis-server.
func TestBusyScriptAndKill(t *testing.T) {
	type server struct {
		name string
		addr string
	}
	spw := startEmbeddedHooks(t)
	servers := []server{{"redis", harness.StartRedis(t).Addr()}, {"spillway", spw.Addr()}}
	results := map[string][]string{}
	for _, sv := range servers {
		ctx := context.Background()
		admin := harness.GoRedis(t, sv.addr, 2)
		if err := admin.ConfigSet(ctx, "busy-reply-threshold", "100").Err(); err != nil {
			t.Fatalf("%s: %v", sv.name, err)
		}
		var out []string
		record := func(what string, err error) { out = append(out, what+": "+errText(err)) }
		for _, tc := range []struct{ name, body string }{
			{"read-only loop", "local i = 0 while true do i = i + 1 end"},
			{"loop after a write", "redis.call('SET', 'w', '1') local i = 0 while true do i = i + 1 end"},
		} {
			runner := harness.GoRedis(t, sv.addr, 2)
			done := make(chan error, 1)
			go func() { done <- runner.Eval(ctx, tc.body, nil).Err() }()
			other := harness.GoRedis(t, sv.addr, 2)
			// Wait until the script runs: PING is answered BUSY then.
			var err error
			for i := 0; i < 200; i++ {
				if err = other.Ping(ctx).Err(); err != nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			record(tc.name+": PING during the script", err)
			record(tc.name+": GET during the script", other.Get(ctx, "w").Err())
			record(tc.name+": FUNCTION KILL", other.FunctionKill(ctx).Err())
			record(tc.name+": SCRIPT KILL", other.ScriptKill(ctx).Err())
			if strings.Contains(tc.name, "write") {
				// Unkillable: SHUTDOWN NOSAVE is the way out, as in Redis.
				record(tc.name+": SHUTDOWN NOSAVE", other.ShutdownNoSave(ctx).Err())
				select {
				case err := <-done:
					record(tc.name+": the script's own reply", err)
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: the script did not end with the server", sv.name)
				}
				break
			}
			select {
			case err := <-done:
				record(tc.name+": the script's own reply", err)
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: the killed script did not end", sv.name)
			}
			record(tc.name+": PING after", other.Ping(ctx).Err())
			record(tc.name+": SCRIPT KILL with nothing running", other.ScriptKill(ctx).Err())
		}
		results[sv.name] = out
	}
	// The script that never finished wrote w: Spillway ran it in one
	// transaction, which SHUTDOWN NOSAVE aborted.
	spw.Restart()
	if n, err := harness.GoRedis(t, spw.Addr(), 2).Exists(context.Background(), "w").Result(); err != nil || n != 0 {
		t.Errorf("after SHUTDOWN NOSAVE ended a script mid-way and a restart: EXISTS w = %d %v, want 0", n, err)
	}
	a, b := results["redis"], results["spillway"]
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			t.Errorf("step %d:\n  redis:    %s\n  spillway: %s", i, x, y)
		}
	}
}

// errText renders an error for comparison ("ok" for nil).
func errText(err error) string {
	if err == nil {
		return "ok"
	}
	var re redis.Error
	if errors.As(err, &re) {
		return re.Error()
	}
	return "transport error" // the text names a port
}

// TestFunctionsSurviveRestart: FUNCTION LOAD is stored with the command;
// after a graceful restart and after kill -9 the library is there and
// FCALL works; FUNCTION FLUSH is stored too.
func TestFunctionsSurviveRestart(t *testing.T) {
	spw := harness.StartSpillway(t, "", "--appendfsync", "always", "--loglevel", "warning")
	ctx := context.Background()
	c := harness.GoRedis(t, spw.Addr(), 2)
	lib := "#!lua name=persist\nredis.register_function('hello', function(keys, args) return 'hello ' .. args[1] end)"
	if got, err := c.FunctionLoad(ctx, lib).Result(); err != nil || got != "persist" {
		t.Fatalf("FUNCTION LOAD: %q %v", got, err)
	}
	check := func(stage string) {
		t.Helper()
		c := harness.GoRedis(t, spw.Addr(), 2)
		got, err := c.FCall(ctx, "hello", nil, "world").Text()
		if err != nil || got != "hello world" {
			t.Fatalf("%s: FCALL hello: %q %v", stage, got, err)
		}
	}
	check("before restart")
	spw.Restart()
	check("after a graceful restart")
	spw.Kill9()
	spw.Restart()
	check("after kill -9")
	c = harness.GoRedis(t, spw.Addr(), 2)
	if err := c.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	spw.Restart()
	c = harness.GoRedis(t, spw.Addr(), 2)
	if err := c.FCall(ctx, "hello", nil, "x").Err(); err == nil || !strings.Contains(err.Error(), "Function not found") {
		t.Fatalf("after FUNCTION FLUSH and a restart: FCALL hello: %v, want Function not found", err)
	}
}
