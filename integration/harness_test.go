package integration

import (
	"context"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// TestHarnessLifecycle exercises the process controls on a redis-server, so
// they are known to work before Spillway's crash tests rely on them.
func TestHarnessLifecycle(t *testing.T) {
	s := harness.StartRedis(t)
	pid := s.Pid()
	if pid <= 0 || !s.Running() {
		t.Fatalf("pid %d, running %v", pid, s.Running())
	}
	if rss := s.RSS(); rss < 1<<20 || rss > 1<<30 {
		t.Errorf("RSS = %d bytes, implausible for an idle redis-server", rss)
	}
	c := s.Conn(t)
	if r := c.Do("SET", "k", "v"); r.Str != "OK" {
		t.Fatalf("SET: %s", r.String())
	}

	s.Kill9()
	if s.Running() {
		t.Fatal("still running after Kill9")
	}
	if r := c.Read(); r.Err == nil {
		t.Fatalf("connection to a killed server still answers: %s", r.String())
	}

	s.Restart()
	if s.Pid() == pid || !s.Running() {
		t.Fatalf("after Restart: pid %d (was %d), running %v", s.Pid(), pid, s.Running())
	}
	gr := s.Client(t)
	if err := gr.Set(context.Background(), "k2", "v2", 0).Err(); err != nil {
		t.Fatalf("go-redis SET after restart: %v", err)
	}
	if v, err := gr.Get(context.Background(), "k2").Result(); err != nil || v != "v2" {
		t.Fatalf("go-redis GET = %q, %v", v, err)
	}
	r3 := harness.GoRedis(t, s.Addr(), 3)
	if v, err := r3.Get(context.Background(), "k2").Result(); err != nil || v != "v2" {
		t.Fatalf("go-redis RESP3 GET = %q, %v", v, err)
	}

	s.Term()
	if s.Running() {
		t.Fatal("still running after Term")
	}
	if err := s.ExitError(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}

// TestHarnessPassword checks that a server with --requirepass is seen as
// ready and that Server.Conn authenticates.
func TestHarnessPassword(t *testing.T) {
	s := harness.StartRedis(t, "--requirepass", "pw")
	if r := harness.MustDial(t, s.Addr()).Do("GET", "k"); r.Str != "NOAUTH Authentication required." {
		t.Errorf("unauthenticated GET: %s", r.String())
	}
	if r := s.Conn(t).Do("PING"); r.Str != "PONG" {
		t.Errorf("authenticated PING: %s", r.String())
	}
}
