package link

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// redisServer is a real redis-server started by a test on a loopback port.
type redisServer struct {
	addr     string
	port     int
	password string // for admin connections (requirepass), if any

	cmd      *exec.Cmd
	out      *lockedBuffer
	exited   chan struct{}
	killOnce sync.Once
}

// lockedBuffer collects a process's output; safe to read while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// freePort returns a loopback port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pick a free port: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// startServer runs redis-server on port (0: a free one, retried if taken)
// with extra arguments; it is killed when the test ends.
func startServer(t *testing.T, port int, extra ...string) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not on PATH (these tests need a real redis-server 7.x): %v", err)
	}
	attempts := 1
	if port == 0 {
		attempts = 3 // the free port may be taken before redis binds it
	}
	password := ""
	for i := 0; i+1 < len(extra); i++ {
		if extra[i] == "--requirepass" {
			password = extra[i+1]
		}
	}
	var lastErr error
	for range attempts {
		p := port
		if p == 0 {
			p = freePort(t)
		}
		s := &redisServer{addr: "127.0.0.1:" + strconv.Itoa(p), port: p, password: password,
			out: &lockedBuffer{}, exited: make(chan struct{})}
		args := append([]string{"--port", strconv.Itoa(p), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no"}, extra...)
		s.cmd = exec.Command(bin, args...)
		s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
		if err := s.cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		go func() { s.cmd.Wait(); close(s.exited) }()
		if lastErr = s.waitReady(); lastErr == nil {
			t.Cleanup(s.kill)
			return s
		}
		s.kill()
		lastErr = fmt.Errorf("%w; redis-server output:\n%s", lastErr, s.out.String())
	}
	t.Fatalf("redis-server on port %d did not come up: %v", port, lastErr)
	return nil
}

// waitReady waits (at most 200 tries) until the server answers a PING,
// with any reply (NOAUTH counts: the server is up).
func (s *redisServer) waitReady() error {
	var err error
	for range 200 {
		select {
		case <-s.exited:
			return errors.New("redis-server exited")
		default:
		}
		var c *Conn
		if c, err = Dial(Target{Addr: s.addr}, 2, 0, time.Second); err == nil {
			c.SetDeadline(time.Now().Add(time.Second))
			_, err = c.Do("PING")
			c.Close()
			if err == nil {
				return nil
			}
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("no reply to PING: %v", err)
}

// kill stops the server and waits for it to exit (idempotent).
func (s *redisServer) kill() {
	s.killOnce.Do(func() {
		s.cmd.Process.Kill()
		<-s.exited
	})
}

// admin returns a new RESP2 connection on db, logged in as default.
func (s *redisServer) admin(t *testing.T, db int) *Conn {
	t.Helper()
	c, err := Dial(Target{Addr: s.addr, Password: s.password}, 2, db, 5*time.Second)
	if err != nil {
		t.Fatalf("admin connection to %s: %v", s.addr, err)
	}
	c.SetDeadline(time.Now().Add(time.Minute))
	t.Cleanup(func() { c.Close() })
	return c
}

// mustDo runs one command on c and returns a copy of its reply; an error
// reply fails the test.
func mustDo(t *testing.T, c *Conn, args ...string) []byte {
	t.Helper()
	r, err := c.Do(args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if IsError(r) {
		t.Fatalf("%v: %s", args, ReplyText(r))
	}
	return append([]byte(nil), r...)
}

// TestDialHandshake logs in with requirepass, an ACL user and wrong
// credentials, in both protocols, with and without SELECT.
func TestDialHandshake(t *testing.T) {
	s := startServer(t, 0, "--requirepass", "s3cret")
	a := s.admin(t, 0)
	mustDo(t, a, "ACL", "SETUSER", "alice", "on", ">alicepw", "~*", "&*", "+@all")
	// A key per database, so that a connection can tell where it is.
	for db := range 6 {
		mustDo(t, a, "SELECT", strconv.Itoa(db))
		mustDo(t, a, "SET", "whichdb", strconv.Itoa(db))
	}

	tests := []struct {
		name        string
		user, pass  string
		proto, db   int
		wantUser    string // ACL WHOAMI after login; "" when the dial must fail
		wantRefusal string // substring of the dial error
	}{
		{name: "password resp2", pass: "s3cret", proto: 2, wantUser: "default"},
		{name: "password resp3", pass: "s3cret", proto: 3, wantUser: "default"},
		{name: "password resp2 db2", pass: "s3cret", proto: 2, db: 2, wantUser: "default"},
		{name: "password resp3 db5", pass: "s3cret", proto: 3, db: 5, wantUser: "default"},
		{name: "acl user resp2", user: "alice", pass: "alicepw", proto: 2, wantUser: "alice"},
		{name: "acl user resp3 db1", user: "alice", pass: "alicepw", proto: 3, db: 1, wantUser: "alice"},
		{name: "wrong password resp2", pass: "nope", proto: 2, wantRefusal: "WRONGPASS"},
		{name: "wrong password resp3", pass: "nope", proto: 3, wantRefusal: "WRONGPASS"},
		{name: "acl user wrong password", user: "alice", pass: "s3cret", proto: 2, wantRefusal: "WRONGPASS"},
		{name: "unknown user resp3", user: "bob", pass: "x", proto: 3, wantRefusal: "WRONGPASS"},
		{name: "no password resp3", proto: 3, wantRefusal: "NOAUTH"},
		{name: "no password select", proto: 2, db: 1, wantRefusal: "NOAUTH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Dial(Target{Addr: s.addr, Username: tt.user, Password: tt.pass}, tt.proto, tt.db, 5*time.Second)
			if tt.wantRefusal != "" {
				if err == nil {
					c.Close()
					t.Fatalf("Dial succeeded; want a refusal mentioning %q", tt.wantRefusal)
				}
				if !strings.Contains(err.Error(), "refused the handshake") || !strings.Contains(err.Error(), tt.wantRefusal) {
					t.Fatalf("Dial error %q; want it to say the handshake was refused with %q", err, tt.wantRefusal)
				}
				if errors.Is(err, ErrUnavailable) {
					t.Fatalf("Dial error %q wraps ErrUnavailable; a refusal is not an outage", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			if c.Proto != tt.proto || c.DB != tt.db {
				t.Fatalf("Conn has Proto %d DB %d; want %d %d", c.Proto, c.DB, tt.proto, tt.db)
			}
			// The first reply read must be PING's: the handshake's replies
			// (HELLO's map included) were consumed.
			if r := mustDo(t, c, "PING"); string(r) != "+PONG\r\n" {
				t.Fatalf("first reply after Dial = %q; want +PONG", r)
			}
			if got := ReplyText(mustDo(t, c, "ACL", "WHOAMI")); got != tt.wantUser {
				t.Fatalf("ACL WHOAMI = %q; want %q", got, tt.wantUser)
			}
			if got := ReplyText(mustDo(t, c, "GET", "whichdb")); got != strconv.Itoa(tt.db) {
				t.Fatalf("GET whichdb = %q; want %d (the database Dial selected)", got, tt.db)
			}
		})
	}
}

// TestDialNoAuthNeeded dials a server without requirepass: RESP2 on db 0
// sends nothing; HELLO 3 and SELECT work without credentials; a RESP2
// login without a password on a protected server is only refused later.
func TestDialNoAuthNeeded(t *testing.T) {
	open := startServer(t, 0)
	for _, proto := range []int{2, 3} {
		for _, db := range []int{0, 3} {
			t.Run(fmt.Sprintf("resp%d db%d", proto, db), func(t *testing.T) {
				c, err := Dial(Target{Addr: open.addr}, proto, db, 5*time.Second)
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				info := ReplyText(mustDo(t, c, "CLIENT", "INFO"))
				fields := strings.Fields(info)
				if !slices.Contains(fields, fmt.Sprintf("db=%d", db)) || !slices.Contains(fields, fmt.Sprintf("resp=%d", proto)) {
					t.Fatalf("CLIENT INFO = %q; want db=%d resp=%d", info, db, proto)
				}
			})
		}
	}

	locked := startServer(t, 0, "--requirepass", "pw")
	c, err := Dial(Target{Addr: locked.addr}, 2, 0, 5*time.Second)
	if err != nil {
		t.Fatalf("Dial RESP2 db 0 without a password (no handshake) = %v; want success", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r, err := c.Do("PING")
	if err != nil || !IsError(r) || !strings.Contains(ReplyText(r), "NOAUTH") {
		t.Fatalf("PING unauthenticated = %q, %v; want a NOAUTH error reply", r, err)
	}
}

// TestDialUnavailable checks that an unreachable or silent upstream gives
// an error wrapping ErrUnavailable.
func TestDialUnavailable(t *testing.T) {
	t.Run("nothing listening", func(t *testing.T) {
		addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
		c, err := Dial(Target{Addr: addr}, 2, 0, 2*time.Second)
		if err == nil {
			c.Close()
			t.Fatalf("Dial %s succeeded with nothing listening", addr)
		}
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), addr) {
			t.Fatalf("Dial error %q; want it to wrap ErrUnavailable and name %s", err, addr)
		}
	})
	t.Run("silent server", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		accepted := make(chan net.Conn, 1)
		go func() {
			if nc, err := l.Accept(); err == nil {
				accepted <- nc // held open, never answered
			}
		}()
		defer func() {
			select {
			case nc := <-accepted:
				nc.Close()
			default:
			}
		}()
		done := make(chan error, 1)
		go func() {
			c, err := Dial(Target{Addr: l.Addr().String(), Password: "x"}, 3, 0, 300*time.Millisecond)
			if c != nil {
				c.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "handshake") {
				t.Fatalf("Dial to a silent server = %v; want a handshake error wrapping ErrUnavailable", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Dial to a silent server hung past its timeout (hang detector)")
		}
	})
}

// TestConnProtocols checks the frames each protocol gets and pipelining
// with Send, SendArgs and WriteRaw.
func TestConnProtocols(t *testing.T) {
	s := startServer(t, 0)
	a := s.admin(t, 0)
	mustDo(t, a, "HSET", "h", "f", "v")
	tests := []struct {
		proto               int
		hgetall, null, dbl  string
		hgetallPfx, nullPfx byte
	}{
		{proto: 2, hgetall: "*2\r\n$1\r\nf\r\n$1\r\nv\r\n", null: "$-1\r\n", dbl: "$3\r\n1.5\r\n"},
		{proto: 3, hgetall: "%1\r\n$1\r\nf\r\n$1\r\nv\r\n", null: "_\r\n", dbl: ",1.5\r\n"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("resp%d", tt.proto), func(t *testing.T) {
			c, err := Dial(Target{Addr: s.addr}, tt.proto, 0, 5*time.Second)
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			key := fmt.Sprintf("z%d", tt.proto)
			c.Send("HGETALL", "h")
			c.SendArgs([][]byte{[]byte("GET"), []byte("missing")})
			c.WriteRaw(AppendCommandStrings(nil, []string{"ZADD", key, "1.5", "m"}))
			c.Send("ZSCORE", key, "m")
			if err := c.Flush(); err != nil {
				t.Fatalf("Flush: %v", err)
			}
			want := []string{tt.hgetall, tt.null, ":1\r\n", tt.dbl}
			for i, w := range want {
				r, err := c.Read()
				if err != nil {
					t.Fatalf("Read %d: %v", i, err)
				}
				if string(r) != w {
					t.Fatalf("reply %d = %q; want %q", i, r, w)
				}
			}
		})
	}
}

// TestAppendCommand checks the request encoding, and that both encoders
// agree and append to dst.
func TestAppendCommand(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "*0\r\n"},
		{[]string{"PING"}, "*1\r\n$4\r\nPING\r\n"},
		{[]string{"SET", "k", ""}, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n"},
		{[]string{"SET", "a\r\nb", "\x00\xff"}, "*3\r\n$3\r\nSET\r\n$4\r\na\r\nb\r\n$2\r\n\x00\xff\r\n"},
		{[]string{strings.Repeat("x", 12)}, "*1\r\n$12\r\nxxxxxxxxxxxx\r\n"},
	}
	for _, tt := range tests {
		var bs [][]byte
		for _, a := range tt.args {
			bs = append(bs, []byte(a))
		}
		if got := AppendCommandStrings(nil, tt.args); string(got) != tt.want {
			t.Errorf("AppendCommandStrings(%q) = %q; want %q", tt.args, got, tt.want)
		}
		if got := AppendCommand(nil, bs); string(got) != tt.want {
			t.Errorf("AppendCommand(%q) = %q; want %q", tt.args, got, tt.want)
		}
		if got := AppendCommand([]byte("prefix"), bs); string(got) != "prefix"+tt.want {
			t.Errorf("AppendCommand(prefix, %q) = %q; want the prefix kept", tt.args, got)
		}
	}

	// A real server reads binary-safe arguments back unchanged.
	s := startServer(t, 0)
	c := s.admin(t, 0)
	val := "a\r\nb\x00\xff$3\r\n*"
	c.WriteRaw(AppendCommand(nil, [][]byte{[]byte("SET"), []byte("bin\r\n"), []byte(val)}))
	c.WriteRaw(AppendCommandStrings(nil, []string{"GET", "bin\r\n"}))
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"OK", val} {
		r, err := c.Read()
		if err != nil {
			t.Fatal(err)
		}
		if got := ReplyText(r); got != want {
			t.Fatalf("reply %d = %q; want %q", i, got, want)
		}
	}
}

// TestReplyHelpers covers ReplyText, BulkPayload, IntReply and IsError on
// every frame kind.
func TestReplyHelpers(t *testing.T) {
	tests := []struct {
		frame   string
		text    string
		payload string // "<nil>" for nil
		intv    int64
		intOK   bool
		isErr   bool
	}{
		{frame: "+OK\r\n", text: "OK", payload: "<nil>"},
		{frame: "-ERR bad thing\r\n", text: "ERR bad thing", payload: "<nil>", isErr: true},
		{frame: "!9\r\nSYNTAX x\r\r\n", text: "SYNTAX x\r", payload: "SYNTAX x\r", isErr: true},
		{frame: ":42\r\n", text: "42", payload: "<nil>", intv: 42, intOK: true},
		{frame: ":-7\r\n", text: "-7", payload: "<nil>", intv: -7, intOK: true},
		{frame: ":x\r\n", text: "x", payload: "<nil>"},
		{frame: "$5\r\nhe\r\no\r\n", text: "he\r\no", payload: "he\r\no"},
		{frame: "$0\r\n\r\n", text: "", payload: ""},
		{frame: "$-1\r\n", text: "", payload: "<nil>"},
		{frame: "$5\r\nab\r\n", text: "", payload: "<nil>"},  // truncated
		{frame: "$x\r\nab\r\n", text: "", payload: "<nil>"},  // bad length
		{frame: "$-3\r\nab\r\n", text: "", payload: "<nil>"}, // negative length
		{frame: "=8\r\ntxt:abcd\r\n", text: "txt:abcd", payload: "txt:abcd"},
		{frame: ",3.25\r\n", text: "3.25", payload: "<nil>"},
		{frame: "#t\r\n", text: "t", payload: "<nil>"},
		{frame: "(12345678901234567890\r\n", text: "12345678901234567890", payload: "<nil>"},
		{frame: "*1\r\n$1\r\na\r\n", text: "*1\r\n$1\r\na\r\n", payload: "<nil>"},
		{frame: "_\r\n", text: "_\r\n", payload: "<nil>"},
		{frame: "+\r\n", text: "", payload: "<nil>"},
		{frame: "+\r", text: "+\r", payload: "<nil>"}, // too short to strip
		{frame: "", text: "", payload: "<nil>"},
	}
	for _, tt := range tests {
		r := []byte(tt.frame)
		if got := ReplyText(r); got != tt.text {
			t.Errorf("ReplyText(%q) = %q; want %q", tt.frame, got, tt.text)
		}
		p := BulkPayload(r)
		got := string(p)
		if p == nil {
			got = "<nil>"
		}
		if got != tt.payload {
			t.Errorf("BulkPayload(%q) = %q; want %q", tt.frame, got, tt.payload)
		}
		if v, ok := IntReply(r); v != tt.intv || ok != tt.intOK {
			t.Errorf("IntReply(%q) = %d, %v; want %d, %v", tt.frame, v, ok, tt.intv, tt.intOK)
		}
		if got := IsError(r); got != tt.isErr {
			t.Errorf("IsError(%q) = %v; want %v", tt.frame, got, tt.isErr)
		}
	}
}

// TestBulkPayloadHugeLength feeds BulkPayload lengths near the int range,
// which must give nil, not a panic (lengths whose bounds check would
// overflow included).
func TestBulkPayloadHugeLength(t *testing.T) {
	tests := []struct {
		frame string
	}{
		{"$99999999999\r\nab\r\n"},
		{"$99999999999999999999\r\n"},
		{"$9223372036854775807\r\n"},
		{"$9223372036854775806\r\nabc"},
	}
	for _, tt := range tests {
		var p []byte
		panicked := func() (v any) {
			defer func() { v = recover() }()
			p = BulkPayload([]byte(tt.frame))
			return nil
		}()
		switch {
		case panicked != nil:
			t.Errorf("BulkPayload(%q) panicked: %v", tt.frame, panicked)
		case p != nil:
			t.Errorf("BulkPayload(%q) = %q; want nil", tt.frame, p)
		}
	}
}

// TestPoolClusterNode checks that a pool in front of a Redis Cluster node
// fails its start with ErrClusterUpstream, whatever the protocol and
// credentials, and that one in front of a standalone server does not.
func TestPoolClusterNode(t *testing.T) {
	dir := t.TempDir()
	node := startServer(t, 0, "--cluster-enabled", "yes", "--dir", dir, "--requirepass", "pw")
	p := NewPool(Options{Target: Target{Addr: node.addr, Password: "pw"}, Logger: quietLog})
	err := p.StartErr()
	p.Close()
	if !errors.Is(err, ErrClusterUpstream) || !strings.Contains(err.Error(), node.addr) {
		t.Fatalf("pool in front of a cluster node: start error %v; want ErrClusterUpstream naming %s", err, node.addr)
	}
	standalone := startServer(t, 0)
	p = NewPool(Options{Target: Target{Addr: standalone.addr}, Logger: quietLog})
	defer p.Close()
	if err := p.StartErr(); err != nil {
		t.Fatalf("pool in front of a standalone server: start error %v", err)
	}
}
