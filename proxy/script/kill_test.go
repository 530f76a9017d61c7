package script

import (
	"bytes"
	"regexp"
	"testing"
	"time"

	"github.com/spillway/spillway/proxy/resp"
)

// busyScenario is a long-running command and what other clients send while
// it runs; each reply is compared with redis-server's (busy-reply-threshold
// 100 ms), with durations masked.
type busyScenario struct {
	name   string
	proto  int    // protocol of the other clients (0: 2)
	setup  []step // run before, on both sides
	run    step   // the long-running EVAL or FCALL
	during []step // SCRIPT KILL, FUNCTION KILL, FUNCTION STATS, ...
}

var durationRe = regexp.MustCompile(`duration_ms\r\n:\d+\r\n`)

func maskDuration(b []byte) []byte {
	return durationRe.ReplaceAll(b, []byte("duration_ms\r\n:N\r\n"))
}

const loopScript = "local i = 0 while true do i = i + 1 end"

// timedScript writes, then spins for about two seconds (so that the real
// server, which nothing can interrupt, finishes on its own).
const timedScript = "redis.call('set','x','1') local s = tonumber(redis.call('time')[1]) while tonumber(redis.call('time')[1]) < s + 2 do end return 'done'"

func TestKillAndBusy(t *testing.T) {
	srv := startRedis(t)
	admin := srv.dial(t, 2)
	admin.do("CONFIG", "SET", "busy-reply-threshold", "100")
	loopLib := "#!lua name=kl\nredis.register_function('loop', function(k, a)\n  local i = 0\n  while true do i = i + 1 end\nend)\nredis.register_function('short', function() return 1 end)\nredis.register_function{function_name='roloop', callback=function() while true do end end, flags={'no-writes'}}"
	scenarios := []busyScenario{
		{name: "eval killed", run: ev(loopScript), during: []step{
			{"FUNCTION", "KILL"}, {"FUNCTION", "STATS"}, {"SCRIPT", "KILL"},
		}},
		{name: "eval pcall cannot swallow kill", run: ev("while true do pcall(function() while true do end end) end"), during: []step{
			{"SCRIPT", "KILL"},
		}},
		{name: "eval pcall sees kill", run: ev("local ok, e = pcall(function() while true do end end)\nreturn e"), during: []step{
			{"SCRIPT", "KILL"},
		}},
		{name: "eval dirty", run: ev(timedScript), during: []step{
			{"SCRIPT", "KILL"}, {"FUNCTION", "KILL"},
		}},
		{name: "function killed", setup: []step{{"FUNCTION", "LOAD", loopLib}}, run: step{"fcall", "loop", "1", "kk", "a1"}, during: []step{
			{"SCRIPT", "KILL"}, {"FUNCTION", "STATS"}, {"FUNCTION", "KILL"},
		}},
		{name: "function stats resp3", proto: 3, setup: []step{{"FUNCTION", "LOAD", loopLib}}, run: step{"FCALL_RO", "roloop", "0"}, during: []step{
			{"FUNCTION", "STATS"}, {"FUNCTION", "KILL"},
		}},
		{name: "eval stats resp3", proto: 3, run: ev(loopScript), during: []step{
			{"FUNCTION", "STATS"}, {"SCRIPT", "KILL"},
		}},
		// Runs share a cancellation context until one is killed or
		// creates a coroutine (the setup leaves one suspended): the
		// kill still reaches a loop inside a coroutine.
		{name: "eval in coroutine killed", setup: []step{
			ev("local co = coroutine.create(function() coroutine.yield(1) end) coroutine.resume(co) return 1"),
			ev("return 2"),
		}, run: ev("local f = coroutine.wrap(function() while true do end end) f()"), during: []step{
			{"SCRIPT", "KILL"},
		}},
	}
	for _, sc := range scenarios {
		if sc.proto == 0 {
			sc.proto = 2
		}
		t.Run(sc.name, func(t *testing.T) {
			// Redis.
			admin.do("FLUSHALL")
			admin.do("FUNCTION", "FLUSH")
			for _, s := range sc.setup {
				admin.doBytes(toArgs(s))
			}
			runner := srv.dial(t, 2)
			done := make(chan []byte, 1)
			go func() { done <- runner.doBytes(toArgs(sc.run)) }()
			time.Sleep(300 * time.Millisecond)
			other := srv.dial(t, sc.proto)
			var want [][]byte
			for _, s := range sc.during {
				want = append(want, maskDuration(other.doBytes(toArgs(s))))
			}
			wantRun := <-done

			// Engine.
			admin.do("FLUSHALL")
			e := New(Options{})
			host := newRedisHost(t, srv)
			for _, s := range sc.setup {
				engineDo(e, host, 2, toArgs(s))
			}
			gotDone := make(chan []byte, 1)
			go func() { gotDone <- engineDo(e, host, 2, toArgs(sc.run)) }()
			waitRunning(t, e)
			for i, s := range sc.during {
				var got []byte
				switch {
				case s[0] == "SCRIPT" && s[1] == "KILL":
					w := &resp.Writer{Proto: sc.proto}
					e.Kill(w, false)
					got = w.Buf
				case s[0] == "FUNCTION" && s[1] == "KILL":
					w := &resp.Writer{Proto: sc.proto}
					e.Kill(w, true)
					got = w.Buf
				default:
					// FUNCTION STATS must answer while the script runs.
					got = maskDuration(engineDo(e, host, sc.proto, toArgs(s)))
				}
				if !bytes.Equal(got, want[i]) {
					t.Errorf("%q while running:\n redis: %q\n   ours: %q", s, want[i], got)
				}
			}
			var gotRun []byte
			select {
			case gotRun = <-gotDone:
			case <-time.After(10 * time.Second):
				t.Fatalf("script still running 10s after SCRIPT KILL")
			}
			if !bytes.Equal(gotRun, wantRun) {
				t.Errorf("reply of the killed command:\n redis: %q\n   ours: %q", wantRun, gotRun)
			}
			if _, ok := e.Running(); ok {
				t.Errorf("Running() reports a script after it ended")
			}
			if !e.WaitIdle(time.Now()) {
				t.Errorf("WaitIdle reports a running script after it ended")
			}
			// The next run gets a live cancellation context.
			if got := string(engineDo(e, host, 2, toArgs(ev("return 1")))); got != ":1\r\n" {
				t.Errorf("script after the kill = %q", got)
			}
		})
	}
}

// waitRunning waits (bounded) until e runs a script.
func waitRunning(t *testing.T, e *Engine) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := e.Running(); ok {
			time.Sleep(20 * time.Millisecond)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("script did not start within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestKillIdle(t *testing.T) {
	e := New(Options{})
	for _, fn := range []bool{false, true} {
		w := &resp.Writer{Proto: 2}
		e.Kill(w, fn)
		if got := string(w.Buf); got != "-NOTBUSY No scripts in execution right now.\r\n" {
			t.Errorf("Kill(functions=%v) while idle = %q", fn, got)
		}
	}
	if _, ok := e.Running(); ok {
		t.Errorf("Running() while idle")
	}
	if !e.WaitIdle(time.Now()) {
		t.Errorf("WaitIdle while idle = false")
	}
}

// TestWaitIdleAndConcurrentCommands checks that WaitIdle, FUNCTION STATS,
// FUNCTION DUMP and Running answer while a script runs, that SCRIPT LOAD
// waits for it, and that a killed VM keeps working.
func TestWaitIdleAndConcurrentCommands(t *testing.T) {
	srv := startRedis(t)
	host := newRedisHost(t, srv)
	e := New(Options{})
	engineDo(e, host, 2, toArgs(step{"FUNCTION", "LOAD", "#!lua name=l\nredis.register_function('f', function() return 1 end)"}))
	done := make(chan []byte, 1)
	go func() { done <- engineDo(e, host, 2, toArgs(ev(loopScript))) }()
	waitRunning(t, e)
	since, ok := e.Running()
	if !ok || time.Since(since) < 0 || time.Since(since) > 5*time.Second {
		t.Fatalf("Running() = %v, %v", since, ok)
	}
	if e.WaitIdle(time.Now().Add(50 * time.Millisecond)) {
		t.Fatalf("WaitIdle reported idle while a script runs")
	}
	if got := engineDo(e, host, 2, toArgs(step{"FUNCTION", "DUMP"})); !bytes.HasPrefix(got, []byte("$")) {
		t.Errorf("FUNCTION DUMP while running = %q", got)
	}
	loaded := make(chan []byte, 1)
	go func() { loaded <- engineDo(e, host, 2, toArgs(step{"SCRIPT", "LOAD", "return 2"})) }()
	select {
	case got := <-loaded:
		t.Fatalf("SCRIPT LOAD did not wait for the running script: %q", got)
	case <-time.After(100 * time.Millisecond):
	}
	w := &resp.Writer{Proto: 2}
	e.Kill(w, false)
	if string(w.Buf) != "+OK\r\n" {
		t.Fatalf("SCRIPT KILL = %q", w.Buf)
	}
	if !e.WaitIdle(time.Now().Add(5 * time.Second)) {
		t.Fatalf("WaitIdle: script still running after kill")
	}
	<-done
	select {
	case got := <-loaded:
		if want := "$40\r\n" + sha1hex([]byte("return 2")) + "\r\n"; string(got) != want {
			t.Errorf("SCRIPT LOAD after the kill = %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("SCRIPT LOAD still blocked after the script ended")
	}
	if got := string(engineDo(e, host, 2, toArgs(ev("return 'alive'")))); got != "$5\r\nalive\r\n" {
		t.Errorf("EVAL after a kill = %q", got)
	}
	if got := string(engineDo(e, host, 2, toArgs(step{"FCALL", "f", "0"}))); got != ":1\r\n" {
		t.Errorf("FCALL after a kill = %q", got)
	}
}
