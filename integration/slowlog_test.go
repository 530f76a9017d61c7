package integration

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// SLOWLOG and LATENCY against a real redis-server 7.0 and the spillway
// binary. Timing is never asserted: the slow log runs with a threshold of
// 0 (every command) or -1 (none), and the latency monitor is checked for
// the events a busy script must leave, not for their values.

// slowlogScript is what a client named "sl" runs with every command logged:
// trimming of long argument lists and long arguments, MULTI/EXEC (EXEC is
// not logged, its commands are), a script's calls (the Lua client's
// address and no name), redacted passwords, errors (logged), unknown
// commands and arity errors (never run: not logged).
var slowlogScript = [][]string{
	{"SET", "k", "v"},
	append([]string{"SADD", "set"}, numbers(3, 33)...),
	append([]string{"SADD", "set"}, numbers(3, 32)...),
	{"SADD", "set", "foo", strings.Repeat("A", 129)},
	{"SADD", "set", strings.Repeat("B", 128)},
	{"MULTI"}, {"SET", "m", "1"}, {"INCR", "m"}, {"EXEC"},
	{"EVAL", "redis.call('set', KEYS[1], 'x'); return 1", "1", "ek"},
	{"AUTH", "not-real"},
	{"AUTH", "user", "not-a-password"},
	{"AUTH", "a", "b", "c"},
	{"HELLO", "2", "AUTH", "user", "pass"},
	{"CONFIG", "SET", "masterauth", "secret"},
	{"CONFIG", "SET", "masterauth", "", "requirepass", ""},
	{"MIGRATE", "127.0.0.1", "1", "nokey", "9", "5000", "AUTH2", "user", "password"},
	{"MIGRATE", "127.0.0.1", "1", "nokey", "9", "5000", "AUTH", "password"},
	{"NOSUCHCOMMAND", "x"},
	{"GET"},
	{"GETSET", "k", "5"},
}

func numbers(from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, strconv.Itoa(i))
	}
	return out
}

// slowlogEntries runs slowlogScript on srv, then a BLPOP another client
// ("waiter") blocks in until a LPUSH inside MULTI serves it, and returns
// SLOWLOG GET -1's entries rendered without their time and duration, the
// client address replaced by who it is ("client", "waiter", or Redis's
// "?:0" for a script's calls). Ids must count down by one.
func slowlogEntries(t *testing.T, srv *harness.Server) []string {
	t.Helper()
	c := srv.Conn(t)
	waiter := srv.Conn(t)
	addrOf := func(conn *harness.Conn) string { return conn.NetConn().LocalAddr().String() }
	c.Do("CONFIG", "SET", "slowlog-max-len", "128")
	c.Do("CONFIG", "SET", "slowlog-log-slower-than", "0")
	c.Do("CLIENT", "SETNAME", "sl")
	c.Do("SLOWLOG", "RESET")
	for _, cmd := range slowlogScript {
		c.Do(cmd...)
	}
	if err := waiter.Send("BLPOP", "l", "0"); err != nil {
		t.Fatal(err)
	}
	waiter.Flush()
	poll := srv.Conn(t) // its INFO calls, as many as it takes, are left out
	waitFor(t, "the BLPOP to block", func() bool {
		info, err := harness.Info(poll, "clients")
		return err == nil && info["blocked_clients"] == "1"
	})
	c.Do("MULTI")
	c.Do("LPUSH", "l", "foo")
	c.Do("EXEC")
	if r := waiter.Read(); r.IsError() {
		t.Fatalf("BLPOP: %s", r.String())
	}
	c.Do("CONFIG", "SET", "slowlog-log-slower-than", "-1")
	r := c.Do("SLOWLOG", "GET", "-1")
	if r.Type != '*' {
		t.Fatalf("SLOWLOG GET -1 = %s", r.String())
	}
	var out []string
	var prevID int64 = -1
	for i, e := range r.Elems {
		if len(e.Elems) != 6 {
			t.Fatalf("entry %d has %d fields: %s", i, len(e.Elems), e.String())
		}
		id, dur := e.Elems[0].Int, e.Elems[2].Int
		if i > 0 && id != prevID-1 {
			t.Errorf("entry %d: id %d after %d", i, id, prevID)
		}
		prevID = id
		if e.Elems[1].Type != ':' || dur < 0 {
			t.Errorf("entry %d: time %s, duration %d", i, e.Elems[1].String(), dur)
		}
		var args []string
		for _, a := range e.Elems[3].Elems {
			args = append(args, strconv.Quote(a.Str))
		}
		who := e.Elems[4].Str
		if who == addrOf(poll) {
			continue
		}
		switch who {
		case addrOf(c):
			who = "client"
		case addrOf(waiter):
			who = "waiter"
		}
		out = append(out, fmt.Sprintf("%s [%s] name=%q", strings.Join(args, " "), who, e.Elems[5].Str))
	}
	return out
}

// TestSlowlogMatchesRedis: the entries logged, their arguments trimmed and
// redacted, client addresses and names, as redis-server logs them.
func TestSlowlogMatchesRedis(t *testing.T) {
	var want []string
	for _, tg := range clientTargets(t) {
		got := slowlogEntries(t, tg.srv)
		if want == nil {
			want = got
			if len(want) < len(slowlogScript) {
				t.Fatalf("redis-server logged only %d entries:\n%s", len(want), strings.Join(want, "\n"))
			}
			continue
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s slow log:\n%s\nredis-server's:\n%s", tg.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestSlowlogLengthMatchesRedis: slowlog-max-len applied as Redis does,
// on CONFIG SET and while the log is disabled (Redis keeps the entries
// until it logs again), and SLOWLOG GET's count.
func TestSlowlogLengthMatchesRedis(t *testing.T) {
	steps := [][]string{
		{"CONFIG", "SET", "slowlog-log-slower-than", "0"},
		{"CONFIG", "SET", "slowlog-max-len", "10"},
		{"SLOWLOG", "RESET"},
	}
	for i := 0; i < 20; i++ {
		steps = append(steps, []string{"PING"})
	}
	steps = append(steps,
		[]string{"SLOWLOG", "LEN"},
		[]string{"SLOWLOG", "GET", "0"}, []string{"SLOWLOG", "GET", "3"}, []string{"SLOWLOG", "GET"},
		[]string{"CONFIG", "SET", "slowlog-max-len", "3"},
		[]string{"SLOWLOG", "LEN"},
		[]string{"CONFIG", "SET", "slowlog-log-slower-than", "-1"},
		[]string{"CONFIG", "SET", "slowlog-max-len", "1"},
		[]string{"SLOWLOG", "LEN"},
		[]string{"PING"},
		[]string{"SLOWLOG", "LEN"},
		[]string{"CONFIG", "SET", "slowlog-log-slower-than", "0"},
		[]string{"SLOWLOG", "LEN"},
		[]string{"CONFIG", "SET", "slowlog-max-len", "0"},
		[]string{"SLOWLOG", "LEN"},
		[]string{"CONFIG", "SET", "slowlog-log-slower-than", "-1"},
		[]string{"CONFIG", "SET", "slowlog-max-len", "128"},
	)
	run := func(srv *harness.Server) []string {
		c := srv.Conn(t)
		var out []string
		for _, s := range steps {
			r := c.Do(s...)
			line := strings.Join(s, " ") + " -> "
			if r.Type == '*' {
				line += "array of " + strconv.Itoa(len(r.Elems))
			} else {
				line += r.String()
			}
			out = append(out, line)
		}
		return out
	}
	var want []string
	for _, tg := range clientTargets(t) {
		got := run(tg.srv)
		if want == nil {
			want = got
			continue
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s:\n%s\nredis-server:\n%s", tg.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// busyScript keeps the server busy well over a millisecond on any machine.
const busyScript = "local i = 0 while i < 3000000 do i = i + 1 end return i"

// TestLatencyMonitorEvents: a command slower than latency-monitor-threshold
// is a "command" sample in LATEST, HISTORY, GRAPH and DOCTOR, and RESET
// drops it, as in redis-server; LATENCY HISTOGRAM counts every call.
func TestLatencyMonitorEvents(t *testing.T) {
	for _, tg := range clientTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			c := tg.srv.Conn(t)
			c.Do("CONFIG", "SET", "latency-monitor-threshold", "1")
			c.Do("LATENCY", "RESET")
			c.Do("CONFIG", "RESETSTAT")
			if r := c.Do("EVAL", busyScript, "0"); r.Int != 3000000 {
				t.Fatalf("EVAL = %s", r.String())
			}
			// Other events (an expiry cycle the machine slowed) may be
			// there too: only "command" is certain.
			latest := c.Do("LATENCY", "LATEST")
			var ev []harness.Reply
			for _, e := range latest.Elems {
				if len(e.Elems) == 4 && e.Elems[0].Str == "command" {
					ev = e.Elems
				}
			}
			if ev == nil {
				t.Fatalf("LATENCY LATEST = %s, want a command event", latest.String())
			}
			if ev[2].Int < 1 || ev[3].Int < ev[2].Int {
				t.Errorf("LATENCY LATEST = %s: latency under the threshold or above the maximum", latest.String())
			}
			hist := c.Do("LATENCY", "HISTORY", "command")
			if len(hist.Elems) != 1 || hist.Elems[0].Elems[0].Int != ev[1].Int || hist.Elems[0].Elems[1].Int != ev[2].Int {
				t.Errorf("LATENCY HISTORY command = %s, want LATEST's sample", hist.String())
			}
			if r := c.Do("LATENCY", "HISTORY", "COMMAND"); len(r.Elems) != 0 {
				t.Errorf("LATENCY HISTORY COMMAND = %s: event names are case-sensitive", r.String())
			}
			graph := c.Do("LATENCY", "GRAPH", "command")
			lines := strings.Split(graph.Str, "\n")
			// One sample: the lowest step ('_') on the fourth row, a blank
			// row, then its label ("0s", "1s"...) written downwards.
			if len(lines) != 10 || !strings.HasPrefix(lines[0], "command - high ") || lines[1] != strings.Repeat("-", 80) ||
				lines[2] != " " || lines[5] != "_" || lines[6] != " " || lines[8] != "s" || lines[9] != "" {
				t.Errorf("LATENCY GRAPH command =\n%s", graph.Str)
			}
			doctor := c.Do("LATENCY", "DOCTOR").Str
			for _, want := range []string{
				"Dave, I have observed latency spikes in this Redis instance.",
				"\n1. command: 1 latency spikes (average ",
				"- Check your Slow Log to understand what are the commands you are running which are too slow to execute.",
			} {
				if !strings.Contains(doctor, want) {
					t.Errorf("LATENCY DOCTOR lacks %q:\n%s", want, doctor)
				}
			}
			h := c.Do("LATENCY", "HISTOGRAM", "eval", "nosuch", "config")
			// CONFIG RESETSTAT dropped the histograms, then counted itself.
			if len(h.Elems) != 4 || h.Elems[0].Str != "eval" || h.Elems[2].Str != "config|resetstat" {
				t.Fatalf("LATENCY HISTOGRAM eval nosuch config = %s, want eval and config|resetstat", h.String())
			}
			for i := 1; i < 4; i += 2 {
				m := h.Elems[i].Elems
				if len(m) != 4 || m[0].Str != "calls" || m[1].Int != 1 || m[2].Str != "histogram_usec" {
					t.Fatalf("histogram %s", h.Elems[i].String())
				}
				b := m[3].Elems
				if len(b) == 0 || b[len(b)-1].Int != 1 {
					t.Errorf("histogram_usec %s: the last bucket must count the one call", m[3].String())
				}
			}
			if r := c.Do("LATENCY", "RESET", "COMMAND", "nosuch"); r.Int != 1 {
				t.Errorf("LATENCY RESET COMMAND nosuch = %s, want 1 (names match in any case)", r.String())
			}
			if r := c.Do("LATENCY", "HISTORY", "command"); len(r.Elems) != 0 {
				t.Errorf("LATENCY HISTORY command after RESET = %s", r.String())
			}
			if r := c.Do("LATENCY", "GRAPH", "command"); r.Str != "ERR No samples available for event 'command'" {
				t.Errorf("LATENCY GRAPH command after RESET = %s", r.String())
			}
			c.Do("CONFIG", "SET", "latency-monitor-threshold", "0")
		})
	}
}
