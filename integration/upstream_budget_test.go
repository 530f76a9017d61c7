package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// TestUpstreamUnreachableBudget: a maxmemory below what the upstream uses
// empty is applied by the upstream itself while it lasts, so clients get
// Redis's own answers (OOM, eviction with evicted events); raising it puts
// the upstream's maxmemory back, and a Spillway stopped meanwhile puts it
// back at its next start.
func TestUpstreamUnreachableBudget(t *testing.T) {
	up := harness.StartRedis(t)
	dir := t.TempDir()
	sp := utStartSpillway(t, up, dir, 64*utMB)
	c := utDial(t, sp.Addr(), 10*time.Second)
	uc := utDial(t, up.Addr(), 10*time.Second)
	upMax := func() string { return uc.Do("CONFIG", "GET", "maxmemory").Elems[1].Str }
	if r := c.Do("SET", "b:k", "v"); r.Str != "OK" {
		t.Fatalf("SET = %s", r.String())
	}
	c.Do("CONFIG", "SET", "maxmemory", "1")
	if got := upMax(); got != "1" {
		t.Fatalf("upstream maxmemory = %s while Spillway's budget is 1; want 1", got)
	}
	if r := c.Do("SET", "b:k2", "v"); !r.IsError() || !strings.HasPrefix(r.Str, "OOM ") {
		t.Fatalf("SET under an unreachable budget = %s; want OOM", r.String())
	}
	if r := c.Do("EVAL", "return redis.call('get', KEYS[1])", "1", "b:k"); r.Str != "v" {
		t.Fatalf("a read-only script = %s; want v", r.String())
	}
	c.Do("CONFIG", "SET", "maxmemory", "0")
	if got := upMax(); got != "0" {
		t.Fatalf("upstream maxmemory = %s after the budget was lifted; want 0", got)
	}
	if r := c.Do("SET", "b:k2", "v"); r.Str != "OK" {
		t.Fatalf("SET after the budget was lifted = %s", r.String())
	}

	// An override left by a stopped Spillway is undone at the next start.
	c.Do("CONFIG", "SET", "maxmemory", "1")
	if _, err := os.Stat(filepath.Join(dir, "upstream-maxmemory.override")); err != nil {
		t.Fatalf("override file: %v", err)
	}
	sp.Kill9()
	sp.WaitExit(10 * time.Second)
	sp2 := utStartSpillway(t, up, dir, 64*utMB)
	harness.MustDial(t, sp2.Addr()).Do("PING")
	if got := upMax(); got != "0" {
		t.Fatalf("upstream maxmemory = %s after a restart with a reachable budget; want 0 (its own value)", got)
	}
}

// TestUpstreamACLIsSpillways: users are Spillway's in upstream mode (AUTH
// is answered by Spillway), so ACL SETUSER creates them there, not on
// the upstream.
func TestUpstreamACLIsSpillways(t *testing.T) {
	up := harness.StartRedis(t)
	sp := utStartSpillway(t, up, "", 64*utMB)
	c := utDial(t, sp.Addr(), 10*time.Second)
	if r := c.Do("ACL", "SETUSER", "u1", "on", ">secret", "+@all", "~*"); r.Str != "OK" {
		t.Fatalf("ACL SETUSER = %s", r.String())
	}
	if r := c.Do("AUTH", "u1", "secret"); r.Str != "OK" {
		t.Fatalf("AUTH u1 = %s; want OK", r.String())
	}
	if r := c.Do("ACL", "WHOAMI"); r.Str != "u1" {
		t.Fatalf("ACL WHOAMI = %s", r.String())
	}
	if r := c.Do("SET", "acl:k", "v"); r.Str != "OK" {
		t.Fatalf("SET as u1 = %s", r.String())
	}
	if r := c.Do("RESET"); r.Str != "RESET" {
		t.Fatalf("RESET = %s", r.String())
	}
	if r := c.Do("ACL", "WHOAMI"); r.Str != "default" {
		t.Fatalf("ACL WHOAMI after RESET = %s", r.String())
	}
	uc := utDial(t, up.Addr(), 10*time.Second)
	if r := uc.Do("ACL", "GETUSER", "u1"); !r.Null {
		t.Fatalf("the upstream has user u1: %s", r.String())
	}
}
