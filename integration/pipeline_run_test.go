package integration

// Pipelines run under one hold of the engine's lock (proxy/server's
// runs: a client's consecutive ordinary commands, already in its input,
// take the lock once). TestPipelineRunMatchesRedis sends one pipeline
// mixing the commands a run holds with others (reads, MULTI/EXEC, errors,
// a push that serves a blocked client, more commands than one run holds,
// scripts)
// to a real redis-server and to Spillway, each with a keyspace-event
// subscriber and a client blocked in BLPOP, and compares, byte for byte
// and in order: the pipeline's replies, the events the subscriber got,
// the blocked client's reply, the final values and the commands' call
// counts (INFO commandstats).

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// pipelineRunCommands is the pipeline TestPipelineRunMatchesRedis sends.
func pipelineRunCommands() [][]string {
	cmds := [][]string{
		{"SET", "a", "1"}, {"INCR", "a"}, {"INCR", "a"}, {"GET", "a"},
		{"LPUSH", "q", "x"}, // serves the client blocked in BLPOP q
		{"RPUSH", "q", "y", "z"}, {"LPOP", "q"}, {"RPOP", "q"},
		{"HSET", "h", "f", "v", "g", "w"}, {"HINCRBY", "h", "n", "2"}, {"INCR", "h"},
		{"SADD", "s", "a", "b", "c"}, {"SREM", "s", "a"}, {"SADD", "s1", "only"}, {"SPOP", "s1"},
		{"MULTI"}, {"INCR", "a"}, {"LPUSH", "l2", "1"}, {"EXEC"},
		{"ZADD", "z", "1", "m", "2", "n"}, {"ZINCRBY", "z", "5", "m"}, {"ZPOPMIN", "z"},
		{"MSET", "k1", "v1", "k2", "v2"}, {"APPEND", "k1", "xx"}, {"DEL", "k2"},
		{"SETNX", "a", "9"}, {"GETSET", "a", "5"}, {"DECRBY", "a", "2"}, {"INCRBYFLOAT", "a", "0.5"},
		{"HDEL", "h", "f"}, {"HSETNX", "h", "f", "z"}, {"HSETNX", "h", "f", "y"},
		{"LPUSHX", "nolist", "1"}, {"RPUSHX", "q", "t"}, {"ZREM", "z", "n"}, {"ZPOPMAX", "z"},
		{"INCR"}, {"NOSUCHCOMMAND", "x"}, {"SET", "a"},
		// Scripts join runs too: writes, a raised error after a write
		// (which stays), pcall, NOSCRIPT, EVAL_RO, a failing script.
		{"EVAL", "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('INCR', KEYS[1])", "1", "e1", "41"},
		{"EVAL", "redis.call('RPUSH', KEYS[1], 'a', 'b') return redis.call('LRANGE', KEYS[1], 0, -1)", "1", "e2"},
		{"EVAL", "redis.call('SET', KEYS[1], 'x') return redis.call('INCR', KEYS[1])", "1", "e3"},
		{"EVAL", "return redis.pcall('INCR', KEYS[1])", "1", "e3"},
		{"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"},
		{"EVAL_RO", "return {1, 'two', redis.call('GET', KEYS[1])}", "1", "e1"},
		{"EVAL", "return redis.call('SADD', KEYS[1], 'm')", "1", "s"}, {"EVAL", "syntax error", "0"},
	}
	// More commands than one run holds (the server's maxRun).
	for i := range 70 {
		cmds = append(cmds, []string{"INCR", "c"}, []string{"HSET", "hc", fmt.Sprint("f", i%7), fmt.Sprint(i)},
			[]string{"EVAL", "return redis.call('INCR', KEYS[1])", "1", "c"})
	}
	return append(cmds, []string{"GET", "c"}, []string{"HMGET", "hc", "f0", "f3", "f6"}, []string{"LRANGE", "q", "0", "-1"},
		[]string{"SISMEMBER", "s", "b"}, []string{"SCARD", "s"}, []string{"ZRANGE", "z", "0", "-1", "WITHSCORES"},
		[]string{"HMGET", "h", "f", "g", "n"}, []string{"HLEN", "h"})
}

// pipelineRunResult is what one server did with the pipeline.
type pipelineRunResult struct {
	replies []string
	events  []string
	popped  string
	calls   []string
}

func runPipelineOn(t *testing.T, addr string) pipelineRunResult {
	t.Helper()
	c := harness.MustDial(t, addr)
	defer c.Close()
	if r := c.Do("CONFIG", "SET", "notify-keyspace-events", "KEA"); r.IsError() {
		t.Fatalf("%s: CONFIG SET: %s", addr, r)
	}
	c.Do("CONFIG", "RESETSTAT")
	sub := harness.MustDial(t, addr)
	defer sub.Close()
	sub.Do("PSUBSCRIBE", "__key*__:*")
	blocked := harness.MustDial(t, addr)
	defer blocked.Close()
	if err := blocked.Send("BLPOP", "q", "0"); err != nil {
		t.Fatal(err)
	}
	if err := blocked.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		info, err := harness.Info(c, "clients")
		if err != nil {
			t.Fatal(err)
		}
		if info["blocked_clients"] == "1" {
			break
		}
		if i == 500 {
			t.Fatalf("%s: BLPOP did not block", addr)
		}
		time.Sleep(10 * time.Millisecond)
	}

	cmds := pipelineRunCommands()
	for _, cmd := range cmds {
		if err := c.Send(cmd...); err != nil {
			t.Fatal(err)
		}
	}
	var res pipelineRunResult
	for range cmds {
		r := c.Read()
		if r.Err != nil {
			t.Fatalf("%s: %v", addr, r.Err)
		}
		res.replies = append(res.replies, string(r.Raw))
	}
	r := blocked.Read()
	if r.Err != nil {
		t.Fatalf("%s: BLPOP: %v", addr, r.Err)
	}
	res.popped = string(r.Raw)

	c.Do("PUBLISH", "__keyend__:end", "end")
	for i := 0; ; i++ {
		m := sub.Read()
		if m.Err != nil {
			t.Fatalf("%s: subscriber: %v", addr, m.Err)
		}
		if strings.Contains(string(m.Raw), "__keyend__:end") {
			break
		}
		if i == 2000 {
			t.Fatalf("%s: no end marker after %d events", addr, i)
		}
		res.events = append(res.events, string(m.Raw))
	}

	stats, err := harness.Info(c, "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range stats {
		if k == "cmdstat_info" || k == "cmdstat_publish" || k == "cmdstat_config|resetstat" {
			continue
		}
		// usec differs; calls, rejected and failed calls must not.
		var kept []string
		for _, f := range strings.Split(v, ",") {
			if !strings.HasPrefix(f, "usec") {
				kept = append(kept, f)
			}
		}
		res.calls = append(res.calls, k+":"+strings.Join(kept, ","))
	}
	slices.Sort(res.calls)
	return res
}

func TestPipelineRunMatchesRedis(t *testing.T) {
	redis := harness.StartRedis(t)
	spw := harness.StartSpillway(t, "")
	want := runPipelineOn(t, redis.Addr())
	got := runPipelineOn(t, spw.Addr())
	cmds := pipelineRunCommands()
	for i := range want.replies {
		if i >= len(got.replies) || got.replies[i] != want.replies[i] {
			g := "<none>"
			if i < len(got.replies) {
				g = got.replies[i]
			}
			t.Errorf("reply %d (%v): spillway %q, redis %q", i, cmds[i], g, want.replies[i])
		}
	}
	if got.popped != want.popped {
		t.Errorf("BLPOP: spillway %q, redis %q", got.popped, want.popped)
	}
	if !slices.Equal(got.events, want.events) {
		t.Errorf("keyspace events differ:\nspillway %q\nredis    %q", got.events, want.events)
	}
	if !slices.Equal(got.calls, want.calls) {
		t.Errorf("commandstats differ:\nspillway %q\nredis    %q", got.calls, want.calls)
	}
}
