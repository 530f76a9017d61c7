package script

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/resp"
)

// This file starts a real redis-server for the differential tests and
// talks to it in raw RESP.

const redisMissing = "redis-server not found on PATH: the differential tests of proxy/script need redis-server 7.0 (apt-get install redis-server, or run `make test`, which installs it)"

// redisServer is a redis-server process bound to 127.0.0.1.
type redisServer struct {
	addr string
	cmd  *exec.Cmd
}

// startRedis starts redis-server on a free loopback port, persistence off,
// and kills it when the test ends. A missing redis-server fails the test.
func startRedis(t testing.TB, extra ...string) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(redisMissing)
	}
	dir := t.TempDir()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port := freePort(t)
		args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no",
			"--logfile", filepath.Join(dir, "redis.log")}, extra...)
		cmd := exec.Command(bin, args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		s := &redisServer{addr: "127.0.0.1:" + strconv.Itoa(port), cmd: cmd}
		if lastErr = s.waitReady(10 * time.Second); lastErr == nil {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_, _ = cmd.Process.Wait()
			})
			return s
		}
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	}
	log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
	t.Fatalf("redis-server did not start: %v\n%s", lastErr, log)
	return nil
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (s *redisServer) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err == nil {
			_, werr := c.Write([]byte("*1\r\n$4\r\nPING\r\n"))
			buf := make([]byte, 7)
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			_, rerr := c.Read(buf)
			c.Close()
			if werr == nil && rerr == nil && string(buf) == "+PONG\r\n" {
				return nil
			}
			err = fmt.Errorf("no PONG (%v %v %q)", werr, rerr, buf)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// rconn is a raw RESP connection.
type rconn struct {
	t  testing.TB
	c  net.Conn
	rd *resp.ReplyReader
	bw *bufio.Writer
}

// dial connects to s and switches to protocol proto (2 or 3).
func (s *redisServer) dial(t testing.TB, proto int) *rconn {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial redis: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &rconn{t: t, c: c, rd: resp.NewReplyReader(c), bw: bufio.NewWriter(c)}
	rc.rd.MaxDepth = 10000
	if proto == 3 {
		rc.do("HELLO", "3")
	}
	return rc
}

func encodeCommand(args [][]byte) []byte {
	var w resp.Writer
	w.Array(len(args))
	for _, a := range args {
		w.Bulk(a)
	}
	return w.Buf
}

// doBytes sends one command and returns its raw reply.
func (c *rconn) doBytes(args [][]byte) []byte {
	c.t.Helper()
	_ = c.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.bw.Write(encodeCommand(args)); err != nil {
		c.t.Fatalf("write to redis: %v", err)
	}
	if err := c.bw.Flush(); err != nil {
		c.t.Fatalf("write to redis: %v", err)
	}
	r, err := c.rd.Read()
	if err != nil {
		c.t.Fatalf("read from redis: %v", err)
	}
	return append([]byte(nil), r...)
}

func (c *rconn) do(args ...string) []byte {
	c.t.Helper()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return c.doBytes(b)
}

// redisHost is a Host that forwards commands to a redis-server, on one
// connection per protocol, as Redis's own script client would run them.
type redisHost struct {
	mu    sync.Mutex
	conns [4]*rconn
	calls []string // commands seen, for assertions
}

func newRedisHost(t testing.TB, s *redisServer) *redisHost {
	return &redisHost{conns: [4]*rconn{2: s.dial(t, 2), 3: s.dial(t, 3)}}
}

// OutOfMemory implements Host: the real server runs the commands, and
// says OOM itself when it is.
func (h *redisHost) OutOfMemory() bool { return false }

func (h *redisHost) WriteRefusal() string { return "" }

func (h *redisHost) Rejected(*cmdtable.Command, string)                {}
func (h *redisHost) ACLCheck(*cmdtable.Command, [][]byte, bool) string { return "" }

func (h *redisHost) Call(cmd *cmdtable.Command, args [][]byte, proto int) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls = append(h.calls, cmd.Name)
	return h.conns[proto].doBytes(args)
}
