package integration

// The commands upstream-mode Spillway answers itself (ACL, CLIENT, AUTH...)
// mixed with forwarded ones, against a real redis-server: pipelined (a
// local command's error must not swallow the forwarded replies before it)
// and inside MULTI (queued, run at EXEC, their replies in place). The raw
// reply bytes must be redis-server's.

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// upstreamLocalScripts are pipelines sent whole; each reply is read in turn.
var upstreamLocalScripts = [][][]string{
	{{"SET", "a", "1"}, {"ACL", "SETUSER", "bad user"}, {"GET", "a"}, {"CLIENT", "SETNAME", "bad name"}, {"PING"}},
	{{"MULTI"}, {"SET", "k", "v"}, {"CLIENT", "SETNAME", "n1"}, {"ACL", "SETUSER", "x y"}, {"GET", "k"},
		{"CLIENT", "GETNAME"}, {"EXEC"}, {"CLIENT", "GETNAME"}},
	{{"MULTI"}, {"CLIENT", "SETNAME", "n2"}, {"DISCARD"}, {"CLIENT", "GETNAME"}},
	{{"SET", "w", "1"}, {"WATCH", "w"}, {"SET", "w", "2"}, {"MULTI"}, {"CLIENT", "SETNAME", "n3"}, {"EXEC"},
		{"CLIENT", "GETNAME"}},
	{{"MULTI"}, {"SET", "k2", "v"}, {"CLIENT", "PAUSE", "10", "WRITE"}, {"INCR", "k2"}, {"EXEC"}, {"GET", "k2"}},
	// CONFIG in MULTI is queued; a failing SET is an error in EXEC's reply
	// and the client leaves the transaction.
	{{"MULTI"}, {"SET", "k3", "v"}, {"CONFIG", "SET", "maxmemory", "bla"}, {"CONFIG", "GET", "maxmemory-policy"},
		{"EXEC"}, {"MULTI"}, {"DISCARD"}},
}

// scriptReplies runs every script (a pipeline sent whole) on a connection
// of its own to addr and returns the raw replies, read in turn; a HELLO's
// reply, which holds the client id, as "(hello)".
func scriptReplies(t *testing.T, addr string, scripts [][][]string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, script := range scripts {
		c := harness.MustDial(t, addr)
		c.Timeout = 10 * time.Second
		for _, cmd := range script {
			if err := c.Send(cmd...); err != nil {
				t.Fatal(err)
			}
		}
		for _, cmd := range script {
			raw, err := c.ReadRaw()
			if err != nil {
				t.Fatalf("%v: %v", cmd, err)
			}
			if cmd[0] == "HELLO" {
				raw = []byte("(hello)")
			}
			out = append(out, raw)
		}
		c.Close()
	}
	return out
}

func TestUpstreamLocalCommandsMatchRedis(t *testing.T) {
	rs := harness.StartRedis(t)
	up := harness.StartRedis(t)
	sp := harness.StartSpillway(t, "", "--upstream", "redis://"+up.Addr(), "--maxmemory", "0",
		"--appendfsync", "no", "--loglevel", "warning")
	want := scriptReplies(t, rs.Addr(), upstreamLocalScripts)
	got := scriptReplies(t, sp.Addr(), upstreamLocalScripts)
	var cmds [][]string
	for _, s := range upstreamLocalScripts {
		cmds = append(cmds, s...)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("%v:\n  spillway:     %q\n  redis-server: %q", cmds[i], got[i], want[i])
		}
	}
}

// CLIENT PAUSE in upstream mode pauses the upstream too: a key whose TTL
// passes during the pause reads as missing but is not expired (INFO
// expired_keys) until the pause ends, as on redis-server; a cold key is
// still read during a WRITE pause (from the store: a reload would wait for
// the upstream's pause).
func TestUpstreamPauseStopsExpiry(t *testing.T) {
	t.Setenv("SPILLWAY_TEST_HOOKS", "1") // DEBUG DEMOTE
	rs := harness.StartRedis(t)
	up := harness.StartRedis(t)
	sp := harness.StartSpillway(t, "", "--upstream", "redis://"+up.Addr(), "--maxmemory", "0",
		"--appendfsync", "no", "--loglevel", "warning")
	run := func(addr string, spillway bool) []string {
		c := harness.MustDial(t, addr)
		defer c.Close()
		c.Timeout = 5 * time.Second
		expired := func() string {
			m, err := harness.Info(c, "stats")
			if err != nil {
				t.Fatal(err)
			}
			return m["expired_keys"]
		}
		var out []string
		do := func(args ...string) {
			r := c.Do(args...)
			if r.Err != nil {
				t.Fatalf("%v: %v", args, r.Err)
			}
			out = append(out, r.String())
		}
		do("SET", "cold", "value")
		if spillway {
			if r := c.Do("DEBUG", "DEMOTE", "cold"); r.Err != nil || r.IsError() {
				t.Fatalf("DEBUG DEMOTE: %s %v", r.String(), r.Err)
			}
		}
		before := expired()
		do("SET", "k", "v", "PX", "20")
		do("CLIENT", "PAUSE", "20000", "WRITE")
		time.Sleep(100 * time.Millisecond) // k's TTL passes, paused
		do("GET", "k")
		do("GET", "cold")
		out = append(out, "expired during the pause: "+before+" -> "+expired())
		do("CLIENT", "UNPAUSE")
		do("GET", "k")
		out = append(out, "expired after: "+before+" -> "+expired())
		return out
	}
	want := run(rs.Addr(), false)
	got := run(sp.Addr(), true)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("spillway:\n%s\nredis-server:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// errFailoverText is upstream mode's refusal of FAILOVER (it would make
// the upstream a replica), which Spillway answers where a lone
// redis-server answers one of FAILOVER's own errors.
const errFailoverText = "ERR FAILOVER is not served in upstream mode: " +
	"it would make the upstream Redis, which holds Spillway's hot keys, a replica of another server"

// replicaOfMultiScripts are REPLICAOF, SLAVEOF and FAILOVER inside MULTI,
// as the default user and as a restricted user without the scripting
// commands, in RESP2 and RESP3 (a HELLO's reply, which holds the client
// id, is not compared). Port 1 has no server: a REPLICAOF there only
// starts connection attempts; every script ends a master again.
var replicaOfMultiScripts = [][][]string{
	{{"MULTI"}, {"SET", "a", "1"}, {"REPLICAOF", "NO", "ONE"}, {"REPLICAOF", "127.0.0.1", "abc"},
		{"SLAVEOF", "127.0.0.1", "70000"}, {"FAILOVER"}, {"GET", "a"}, {"EXEC"}},
	{{"MULTI"}, {"REPLICAOF", "127.0.0.1", "1"}, {"SET", "c", "1"}, {"REPLICAOF", "127.0.0.1", "1"},
		{"FAILOVER"}, {"SLAVEOF", "NO", "ONE"}, {"EXEC"}, {"SET", "d", "1"}},
	{{"MULTI"}, {"SET", "e", "1"}, {"REPLICAOF", "127.0.0.1", "1"}, {"GET", "e"}, {"EXEC"},
		{"SET", "f", "1"}, {"REPLICAOF", "NO", "ONE"}, {"SET", "f", "1"}},
	{{"MULTI"}, {"SET", "g", "1"}, {"FAILOVER"}, {"DISCARD"}, {"GET", "g"}},
	{{"ACL", "SETUSER", "rep", "on", ">pw", "~*", "&*", "+@all", "-@scripting"}, {"AUTH", "rep", "pw"},
		{"MULTI"}, {"SET", "a", "2"}, {"REPLICAOF", "NO", "ONE"}, {"REPLICAOF", "127.0.0.1", "1"}, {"GET", "a"},
		{"FAILOVER"}, {"REPLICAOF", "NO", "ONE"}, {"EXEC"},
		{"MULTI"}, {"EVAL", "return 1", "0"}, {"EXEC"}, {"GET", "a"}},
	{{"HELLO", "3", "AUTH", "rep", "pw"}, {"MULTI"}, {"REPLICAOF", "NO", "ONE"}, {"FAILOVER"},
		{"SLAVEOF", "127.0.0.1", "1"}, {"SLAVEOF", "127.0.0.1", "1"}, {"HGETALL", "h"}, {"EXEC"},
		{"REPLICAOF", "NO", "ONE"}},
	{{"HELLO", "3"}, {"MULTI"}, {"FAILOVER"}, {"REPLICAOF", "NO", "ONE"}, {"EXEC"}},
}

// failoverErr is any of FAILOVER's error replies.
var failoverErr = regexp.MustCompile(`-ERR FAILOVER [^\r]*\r\n`)

// TestUpstreamReplicaOfInMultiMatchesRedis: REPLICAOF, SLAVEOF and
// FAILOVER inside MULTI are queued and answer in their slots of EXEC's
// reply, in order, byte for byte as on a lone redis-server (FAILOVER's
// slot holding Spillway's refusal), also for a restricted user who may
// not run scripts (no placeholder script is queued upstream for them).
func TestUpstreamReplicaOfInMultiMatchesRedis(t *testing.T) {
	rs := harness.StartRedis(t)
	up := harness.StartRedis(t)
	sp := harness.StartSpillway(t, "", "--upstream", "redis://"+up.Addr(), "--maxmemory", "0",
		"--appendfsync", "no", "--loglevel", "warning")
	want := scriptReplies(t, rs.Addr(), replicaOfMultiScripts)
	got := scriptReplies(t, sp.Addr(), replicaOfMultiScripts)
	var cmds [][]string
	for _, s := range replicaOfMultiScripts {
		cmds = append(cmds, s...)
	}
	for i := range want {
		w := failoverErr.ReplaceAll(want[i], []byte("-"+errFailoverText+"\r\n"))
		if !bytes.Equal(got[i], w) {
			t.Errorf("%v:\n  spillway:     %q\n  redis-server: %q", cmds[i], got[i], w)
		}
	}
	for _, addr := range []string{rs.Addr(), sp.Addr()} {
		c := harness.MustDial(t, addr)
		if r := c.Do("INFO", "replication"); !strings.Contains(r.Str, "role:master") {
			t.Errorf("%s is not a master after the scripts:\n%s", addr, r.Str)
		}
		c.Close()
	}
	uc := harness.MustDial(t, up.Addr())
	defer uc.Close()
	if r := uc.Do("INFO", "replication"); !strings.Contains(r.Str, "role:master") {
		t.Fatalf("the upstream's replication role changed:\n%s", r.Str)
	}
}
