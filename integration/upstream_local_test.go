package integration

// The commands upstream-mode Spillway answers itself (ACL, CLIENT, AUTH...)
// mixed with forwarded ones, against a real redis-server: pipelined (a
// local command's error must not swallow the forwarded replies before it)
// and inside MULTI (queued, run at EXEC, their replies in place). The raw
// reply bytes must be redis-server's.

import (
	"bytes"
	"testing"

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
}

// upstreamLocalReplies runs every script on a connection of its own to
// addr and returns the raw replies.
func upstreamLocalReplies(t *testing.T, addr string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, script := range upstreamLocalScripts {
		c := harness.MustDial(t, addr)
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
	want := upstreamLocalReplies(t, rs.Addr())
	got := upstreamLocalReplies(t, sp.Addr())
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
