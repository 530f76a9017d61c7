package aclmirror

import (
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/proxy/acl"
	"github.com/spillway/spillway/proxy/upstream/link"
)

// startRedis runs a real redis-server on a free loopback port until the
// test ends and returns its address.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not on PATH (these tests need a real redis-server 7.x): %v", err)
	}
	for attempt := 0; attempt < 3; attempt++ { // the free port may be taken before redis binds it
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("pick a free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		addr := "127.0.0.1:" + strconv.Itoa(port)
		for i := 0; i < 100; i++ { // up to 5s
			if c, err := link.Dial(link.Target{Addr: addr}, 2, 0, time.Second); err == nil {
				c.Close()
				t.Cleanup(func() { cmd.Process.Kill(); <-exited })
				return addr
			}
			select {
			case <-exited:
				i = 100
			case <-time.After(50 * time.Millisecond):
			}
		}
		cmd.Process.Kill()
		<-exited
	}
	t.Fatal("redis-server did not start")
	return ""
}

func do(t *testing.T, c *link.Conn, args ...string) string {
	t.Helper()
	r, err := c.Do(args...)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return string(r)
}

// TestMirrorLifecycle: a mirror is created with the user's permissions,
// set again after a change of the rules, recreated when the upstream
// lost it, and deleted by Sweep once the user is gone.
func TestMirrorLifecycle(t *testing.T) {
	addr := startRedis(t)
	pool := link.NewPool(link.Options{Target: link.Target{Addr: addr}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer pool.Close()
	admin, err := link.Dial(link.Target{Addr: addr}, 2, 0, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	reg := acl.NewRegistry()
	u, _, err := reg.SetUser("bob", []string{"on", ">pw", "~x*", "+get", "+acl|whoami"})
	if err != nil {
		t.Fatal(err)
	}
	if Needed(reg.Default()) || !Needed(u) {
		t.Fatalf("Needed: default %v, bob %v", Needed(reg.Default()), Needed(u))
	}
	m := New(pool, time.Second)
	defer m.Close()

	get := func() *link.Conn {
		t.Helper()
		c, err := m.Get(u, 2, 0)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		return c
	}
	c := get()
	if r := do(t, c, "ACL", "WHOAMI"); r != "$12\r\nspillway:bob\r\n" {
		t.Fatalf("WHOAMI on the mirror's connection: %q", r)
	}
	if r := do(t, c, "GET", "y"); !strings.HasPrefix(r, "-NOPERM") {
		t.Fatalf("GET y as the mirror: %q", r)
	}
	m.Put(u, c)

	// A change of the rules applies at the next Get; the idle connection
	// is reused.
	reg.SetUser("bob", []string{"~y"})
	c2 := get()
	if c2 != c {
		t.Fatalf("the idle connection was not reused")
	}
	if r := do(t, c2, "GET", "y"); r != "$-1\r\n" {
		t.Fatalf("GET y after ~y: %q", r)
	}
	c2.Close()

	// The upstream lost the mirror: the next Get sets it again.
	do(t, admin, "ACL", "DELUSER", "spillway:bob")
	c3 := get()
	if r := do(t, c3, "GET", "y"); r != "$-1\r\n" {
		t.Fatalf("GET y after the mirror was recreated: %q", r)
	}
	m.Put(u, c3)

	// Sweep deletes the mirrors of the users gone, only those.
	if err := m.Sweep(reg); err != nil {
		t.Fatal(err)
	}
	if r := do(t, admin, "ACL", "USERS"); !strings.Contains(r, "spillway:bob") {
		t.Fatalf("Sweep removed a live user's mirror: %q", r)
	}
	reg.Delete([]string{"bob"})
	if err := m.Sweep(reg); err != nil {
		t.Fatal(err)
	}
	if r := do(t, admin, "ACL", "USERS"); strings.Contains(r, "spillway:") {
		t.Fatalf("ACL USERS after Sweep: %q", r)
	}
}
