package integration

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// TestUpstreamRefusesFailover: in upstream mode Spillway refuses FAILOVER
// (it would make the upstream a replica), never forwarding it; inside
// MULTI it is queued and EXEC answers the refusal in its slot; a SYNC in
// MULTI fails the transaction as Redis fails it. (REPLICAOF makes
// Spillway itself a replica: upstream_replicaof_test.go; replicas of
// Spillway are served: upstream_relay_test.go.)
func TestUpstreamRefusesFailover(t *testing.T) {
	up := harness.StartRedis(t)
	sp := utStartSpillway(t, up, "", 64*utMB)
	c := utDial(t, sp.Addr(), 10*time.Second)

	if r := c.Do("FAILOVER"); !r.IsError() || !strings.HasPrefix(r.Str, "ERR FAILOVER is not served") {
		t.Fatalf("FAILOVER = %s; want the refusal", r.String())
	}
	if r := c.Do("PING"); r.Str != "PONG" {
		t.Fatalf("PING after the refusal = %s", r.String())
	}

	// Inside MULTI: SYNC fails as Redis fails it, and EXEC discards the
	// transaction.
	want := []string{"+OK", "+QUEUED", "-", "-EXECABORT"}
	got := []string{}
	for _, args := range [][]string{{"MULTI"}, {"SET", "tx:key", "v"}, {"SYNC"}, {"EXEC"}} {
		r := c.Do(args...)
		got = append(got, strings.TrimSpace(string(r.Raw)))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Fatalf("MULTI / SET / SYNC / EXEC = %q; want prefixes %q", got, want)
		}
	}
	if r := c.Do("EXISTS", "tx:key"); r.Int != 0 {
		t.Fatalf("the discarded transaction's SET ran (EXISTS = %s)", r.String())
	}
	// FAILOVER is queued, as Redis queues it; EXEC runs the others and
	// answers the refusal in its slot.
	for _, args := range [][]string{{"MULTI"}, {"SET", "tx:key", "v"}, {"FAILOVER"}} {
		if r := c.Do(args...); r.IsError() {
			t.Fatalf("%v = %s", args, r.String())
		}
	}
	r := c.Do("EXEC")
	if len(r.Elems) != 2 || r.Elems[0].Str != "OK" || !strings.HasPrefix(r.Elems[1].Str, "ERR FAILOVER is not served") {
		t.Fatalf("EXEC = %s; want OK and the refusal", r.String())
	}
	if r := c.Do("GET", "tx:key"); r.Str != "v" {
		t.Fatalf("the transaction's SET did not run: GET = %s", r.String())
	}
	uc := utDial(t, up.Addr(), 5*time.Second)
	if info := uc.Do("INFO", "replication").Str; !strings.Contains(info, "role:master") {
		t.Fatalf("the upstream's replication role changed:\n%s", info)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestUpstreamRefusesClusterNode: Spillway will not start in front of a
// Redis Cluster node, whose redirections would hand clients the upstream's
// address; it exits with an error that says so.
func TestUpstreamRefusesClusterNode(t *testing.T) {
	node := harness.StartRedis(t, "--cluster-enabled", "yes")
	bin := harness.BuildSpillway(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--port", strconv.Itoa(harness.FreePort(t)), "--bind", "127.0.0.1",
		"--dir", t.TempDir(), "--upstream", "redis://"+node.Addr())
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("Spillway kept running in front of a cluster node:\n%s", out)
	}
	if err == nil || !strings.Contains(string(out), "cluster mode") || !strings.Contains(string(out), node.Addr()) {
		t.Fatalf("Spillway in front of a cluster node: exit %v, output:\n%s\nwant a failed start naming cluster mode and %s", err, out, node.Addr())
	}
}

// TestUpstreamClientUnblock: CLIENT UNBLOCK names Spillway's client ids;
// a client blocked upstream is unblocked there, with TIMEOUT's nil reply
// or ERROR's error, as on Redis (before, the call answered 0 and the
// client stayed blocked).
func TestUpstreamClientUnblock(t *testing.T) {
	up := harness.StartRedis(t)
	sp := utStartSpillway(t, up, "", 64*utMB)
	ctl := utDial(t, sp.Addr(), 10*time.Second)
	upc := utDial(t, up.Addr(), 10*time.Second)
	blocked := utDial(t, sp.Addr(), 10*time.Second)
	id := blocked.Do("CLIENT", "ID").Int
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "*-1\r\n"},
		{[]string{"TIMEOUT"}, "*-1\r\n"},
		{[]string{"ERROR"}, "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"},
	} {
		if err := blocked.Send("BLPOP", "unblock:list", "0"); err != nil {
			t.Fatal(err)
		}
		if err := blocked.Flush(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			n, err := utInfoInt(upc, "clients", "blocked_clients")
			if err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the BLPOP never blocked upstream")
			}
			time.Sleep(10 * time.Millisecond)
		}
		args := append([]string{"CLIENT", "UNBLOCK", strconv.FormatInt(id, 10)}, tc.args...)
		if r := ctl.Do(args...); r.Type != ':' || r.Int != 1 {
			t.Fatalf("%v = %s; want 1", args, r.String())
		}
		if r := blocked.Read(); string(r.Raw) != tc.want {
			t.Fatalf("after %v the blocked client read %q; want %q", args, r.Raw, tc.want)
		}
	}
	// Not blocked, and malformed calls: the server's replies, as Redis's.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "UNBLOCK", strconv.FormatInt(id, 10)}, ":0\r\n"},
		{[]string{"CLIENT", "UNBLOCK", "999999"}, ":0\r\n"},
		{[]string{"CLIENT", "UNBLOCK", "x"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"CLIENT", "UNBLOCK", strconv.FormatInt(id, 10), "maybe"}, "-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n"},
	} {
		if r := ctl.Do(tc.args...); string(r.Raw) != tc.want {
			t.Fatalf("%v = %q; want %q", tc.args, r.Raw, tc.want)
		}
	}
}
