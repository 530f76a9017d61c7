package link

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// pollUntil polls cond every 10 ms until it holds or the hang limit passes.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached (hang detector)", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sharedPing runs PING through the pool's shared connection for proto.
func sharedPing(p *Pool, proto int, id int64) error {
	m, err := p.Shared(proto, id)
	if err != nil {
		return err
	}
	c := NewCall()
	if err := m.Do(c, encode("PING"), 1); err != nil {
		return err
	}
	if string(c.Replies) != "+PONG\r\n" {
		return errors.New("PING replied " + strconv.Quote(string(c.Replies)))
	}
	return nil
}

// TestPoolOutage starts a pool with no upstream, brings the upstream up,
// kills it and brings it back: Up, Shared and Reconnects follow.
func TestPoolOutage(t *testing.T) {
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p := NewPool(Options{Target: Target{Addr: addr}, Shared: 2, DialTimeout: 2 * time.Second, Logger: quietLog})
	defer p.Close()

	assertDown := func(stage string) {
		t.Helper()
		if p.Up() {
			t.Fatalf("%s: Up() = true", stage)
		}
		for _, proto := range []int{2, 3} {
			for id := range int64(4) {
				res := make(chan error, 1)
				go func() {
					m, err := p.Shared(proto, id)
					if err == nil && m.Broken() {
						err = errors.New("Shared returned a broken Mux")
					}
					if err == nil {
						err = sharedPing(p, proto, id)
					}
					res <- err
				}()
				select {
				case err := <-res:
					// A Mux handed out just before the kill was seen fails
					// its call with ErrUnavailable too.
					if !errors.Is(err, ErrUnavailable) {
						t.Fatalf("%s: Shared(%d, %d) = %v; want an error wrapping ErrUnavailable", stage, proto, id, err)
					}
					if !strings.Contains(err.Error(), "upstream unavailable") {
						t.Fatalf("%s: error %q does not say the upstream is unavailable", stage, err)
					}
				case <-time.After(hangLimit):
					t.Fatalf("%s: Shared blocked while the upstream is down (hang detector)", stage)
				}
			}
		}
	}
	assertUp := func(stage string) {
		t.Helper()
		pollUntil(t, stage+": Up()", p.Up)
		for _, proto := range []int{2, 3} {
			for id := range int64(4) {
				if err := sharedPing(p, proto, id); err != nil {
					t.Fatalf("%s: PING through Shared(%d, %d): %v", stage, proto, id, err)
				}
			}
		}
	}

	assertDown("never started")
	if n := p.Reconnects.Load(); n != 0 {
		t.Fatalf("Reconnects = %d before the upstream ever came up", n)
	}
	if _, err := p.Get(2, 0); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Get while down = %v; want ErrUnavailable", err)
	}

	s := startServer(t, port)
	assertUp("started")
	// A pool that starts down counts its first connection as a reconnect.
	if n := p.Reconnects.Load(); n != 1 {
		t.Fatalf("Reconnects = %d after the first connection; want 1", n)
	}

	s.kill()
	pollUntil(t, "killed: Up() false", func() bool { return !p.Up() })
	assertDown("killed")

	startServer(t, port)
	assertUp("restarted")
	if n := p.Reconnects.Load(); n != 2 {
		t.Fatalf("Reconnects = %d after the restart; want 2", n)
	}
	if !strings.HasPrefix(ErrorReply(p.unavailable()), "ERR upstream unavailable: ") {
		t.Fatalf("ErrorReply(unavailable) = %q", ErrorReply(p.unavailable()))
	}
}

// TestPoolStartsUp checks a pool whose upstream is there from the start:
// Up at once, no reconnect counted, and credentials and database of the
// target used by the shared connections.
func TestPoolStartsUp(t *testing.T) {
	s := startServer(t, 0, "--requirepass", "pw")
	mustDo(t, s.admin(t, 4), "SET", "where", "db4")
	target := Target{Addr: s.addr, Password: "pw", DB: 4}
	p := NewPool(Options{Target: target, Logger: quietLog})
	defer p.Close()
	if got := p.Target(); got.Addr != target.Addr || got.Password != target.Password || got.DB != target.DB {
		t.Fatalf("Target() = %+v; want %+v", p.Target(), target)
	}
	if !p.Up() {
		t.Fatal("Up() = false right after NewPool with a live upstream")
	}
	if p.Reconnects.Load() != 0 {
		t.Fatalf("Reconnects = %d; want 0", p.Reconnects.Load())
	}
	for _, proto := range []int{2, 3} {
		m, err := p.Shared(proto, 7)
		if err != nil {
			t.Fatal(err)
		}
		c := NewCall()
		if err := m.Do(c, encode("GET where"), 1); err != nil || string(c.Replies) != "$3\r\ndb4\r\n" {
			t.Fatalf("GET through Shared(%d) = %q, %v; want db4", proto, c.Replies, err)
		}
	}
	bad := NewPool(Options{Target: Target{Addr: s.addr, Password: "wrong"}, Logger: quietLog})
	defer bad.Close()
	if bad.Up() {
		t.Fatal("a pool with a wrong password is Up")
	}
	if _, err := bad.Shared(2, 0); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("Shared on a pool refused by the upstream = %v; want the refusal", err)
	}
}

// TestPoolGetPut checks that Put connections are reused for the same
// protocol and database only, and dropped while the upstream is down.
func TestPoolGetPut(t *testing.T) {
	s := startServer(t, 0)
	p := NewPool(Options{Target: Target{Addr: s.addr}, Logger: quietLog})
	defer p.Close()

	get := func(proto, db int) *Conn {
		t.Helper()
		c, err := p.Get(proto, db)
		if err != nil {
			t.Fatalf("Get(%d, %d): %v", proto, db, err)
		}
		if c.Proto != proto || c.DB != db {
			t.Fatalf("Get(%d, %d) returned a Conn with Proto %d DB %d", proto, db, c.Proto, c.DB)
		}
		c.SetDeadline(time.Now().Add(time.Minute))
		return c
	}
	c20 := get(2, 0)
	c21 := get(2, 1)
	c30 := get(3, 0) // three dials; each Get also has spares dialed
	mustDo(t, c21, "SET", "k", "in1")
	p.Put(c20)
	p.Put(c21)
	p.Put(c30)

	// Every (protocol, database) above was dialed by Get once; from now
	// on each has its spares or the connection put back: Get never dials.
	for _, pd := range [][2]int{{2, 0}, {2, 1}, {3, 0}} {
		pollUntil(t, fmt.Sprintf("%d idle connections for RESP%d db %d", minSpare, pd[0], pd[1]), func() bool {
			return p.idleCount(pd[0], pd[1]) >= minSpare
		})
	}
	cold := p.ColdGets.Load()
	for _, tt := range []struct{ proto, db int }{{2, 1}, {2, 0}, {3, 0}, {2, 0}, {2, 1}} {
		c := get(tt.proto, tt.db)
		// The connection really is on its database.
		want := map[int]string{2: "$-1\r\n", 3: "_\r\n"}[tt.proto]
		if tt.db == 1 {
			want = "$3\r\nin1\r\n"
		}
		if r := mustDo(t, c, "GET", "k"); string(r) != want {
			t.Errorf("GET k on Get(%d, %d) = %q; want %q", tt.proto, tt.db, r, want)
		}
		c.Close()
	}
	if n := p.ColdGets.Load() - cold; n != 0 {
		t.Errorf("%d Get calls dialed while idle connections of their protocol and database were there", n)
	}
	// A (protocol, database) never used is dialed, then gets its spares.
	for _, tt := range []struct{ proto, db int }{{3, 1}, {2, 2}} {
		cold := p.ColdGets.Load()
		get(tt.proto, tt.db).Close()
		if p.ColdGets.Load() != cold+1 {
			t.Errorf("Get(%d, %d), never used before, did not dial", tt.proto, tt.db)
		}
		pollUntil(t, "spares dialed", func() bool { return p.idleCount(tt.proto, tt.db) >= minSpare })
	}

	// Put while the upstream is down closes the connection instead.
	c := get(2, 0)
	s.kill()
	pollUntil(t, "Up() false after the kill", func() bool { return !p.Up() })
	p.Put(c)
	if _, err := c.Do("PING"); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("PING on a Conn Put while down = %v; want use of a closed connection", err)
	}
}

// TestPoolCloseNoLeak runs a pool through traffic, an outage and Close:
// its goroutines (readers, the reconnect loop) must all end.
func TestPoolCloseNoLeak(t *testing.T) {
	s := startServer(t, 0)
	base := runtime.NumGoroutine()
	for round := range 3 {
		p := NewPool(Options{Target: Target{Addr: s.addr}, Shared: 3, Logger: quietLog})
		for id := range int64(6) {
			if err := sharedPing(p, 2+int(id%2), id); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		c, err := p.Get(2, 0)
		if err != nil {
			t.Fatal(err)
		}
		p.Put(c)
		p.Close()
		p.Close() // idempotent
		if _, err := p.Shared(2, 0); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Shared after Close = %v; want ErrUnavailable", err)
		}
		if _, err := c.Do("PING"); err == nil {
			t.Fatal("an idle connection survived Close")
		}
	}
	// Also a pool that never connected (its reconnect loop in backoff).
	dead := NewPool(Options{Target: Target{Addr: "127.0.0.1:" + strconv.Itoa(freePort(t))}, Logger: quietLog})
	dead.Close()

	var n int
	for range 500 {
		if n = runtime.NumGoroutine(); n <= base {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	t.Fatalf("%d goroutines after Close, %d before the pools:\n%s", n, base, buf)
}

// TestErrorReply checks the error line clients get.
func TestErrorReply(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmtErr("%w: 127.0.0.1:1: dial tcp: connection refused", ErrUnavailable), "ERR upstream unavailable: 127.0.0.1:1: dial tcp: connection refused"},
		{fmtErr("%w: read: EOF\r\nmore", ErrUnavailable), "ERR upstream unavailable: read: EOF"},
		{errors.New("upstream 1.2.3.4 refused the handshake: WRONGPASS x\nsecond line"), "ERR upstream: upstream 1.2.3.4 refused the handshake: WRONGPASS x"},
		{errors.New("plain"), "ERR upstream: plain"},
	}
	for _, tt := range tests {
		if got := ErrorReply(tt.err); got != tt.want {
			t.Errorf("ErrorReply(%q) = %q; want %q", tt.err, got, tt.want)
		}
	}
}

func fmtErr(format string, args ...any) error { return fmt.Errorf(format, args...) }

// TestPoolGetWaitsForAccept: a connection Get dials is one the upstream
// has accepted, so a blocking command sent on it is read before one sent
// after it on an older connection. The upstream sleeps (DEBUG SLEEP)
// while Get dials: a connection it has not accepted yet would have its
// BLPOP read after the older connection's, sent later, and the second
// client blocked would be served first.
func TestPoolGetWaitsForAccept(t *testing.T) {
	s := startServer(t, 0, "--enable-debug-command", "yes")
	p := NewPool(Options{Target: Target{Addr: s.addr}, Logger: quietLog})
	defer p.Close()
	admin := s.admin(t, 0)
	older := s.admin(t, 0) // accepted: it has had its reply
	mustDo(t, older, "PING")

	admin.Send("DEBUG", "SLEEP", "1")
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // let the sleep begin
	first, err := p.Get(2, 0)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	defer first.Close()
	first.SetDeadline(time.Now().Add(time.Minute))
	for _, c := range []*Conn{first, older} {
		c.Send("BLPOP", "q", "0")
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := admin.Read(); err != nil || string(r) != "+OK\r\n" {
		t.Fatalf("DEBUG SLEEP = %q, %v", r, err)
	}
	pollUntil(t, "both BLPOPs blocked", func() bool {
		return strings.Contains(string(mustDo(t, admin, "INFO", "clients")), "blocked_clients:2\r\n")
	})
	mustDo(t, admin, "RPUSH", "q", "a", "b")
	for _, tt := range []struct {
		c    *Conn
		want string
	}{{first, "a"}, {older, "b"}} {
		r, err := tt.c.Read()
		if err != nil {
			t.Fatal(err)
		}
		if want := "*2\r\n$1\r\nq\r\n$1\r\n" + tt.want + "\r\n"; string(r) != want {
			t.Fatalf("BLPOP sent first on the connection Get dialed = %q; want %q (blocked first, served first)", r, want)
		}
	}
}
