package strops

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The differential tests run against a real redis-server 7.0 started once
// for the test binary on a free loopback port.

var (
	redisOnce sync.Once
	redisCmd  *exec.Cmd
	redisAddr string
	redisErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if redisCmd != nil && redisCmd.Process != nil {
		_ = redisCmd.Process.Kill()
		_ = redisCmd.Wait()
	}
	os.Exit(code)
}

// redisConn is a minimal RESP client returning raw reply bytes.
type redisConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

// dialRedis starts the shared redis-server if needed and connects to it,
// speaking protocol proto (2 or 3). It fails the test if redis-server is
// not installed.
func dialRedis(t *testing.T, proto int) *redisConn {
	t.Helper()
	redisOnce.Do(startRedis)
	if redisErr != nil {
		t.Fatalf("differential test needs a real redis-server 7.0 on PATH: %v", redisErr)
	}
	c, err := net.Dial("tcp", redisAddr)
	if err != nil {
		t.Fatalf("dial redis: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &redisConn{t: t, c: c, r: bufio.NewReader(c)}
	if proto == 3 {
		rc.do("HELLO", "3")
	}
	return rc
}

func startRedis() {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		redisErr = fmt.Errorf("redis-server not found: %w", err)
		return
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		redisErr = fmt.Errorf("pick a port: %w", err)
		return
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	redisAddr = fmt.Sprintf("127.0.0.1:%d", port)
	redisCmd = exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no")
	if err := redisCmd.Start(); err != nil {
		redisErr = fmt.Errorf("start redis-server: %w", err)
		return
	}
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", redisAddr); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	redisErr = fmt.Errorf("redis-server did not listen on %s", redisAddr)
}

// do sends a command and returns its raw reply.
func (rc *redisConn) do(args ...string) []byte {
	rc.t.Helper()
	bs := make([][]byte, len(args))
	for i, a := range args {
		bs[i] = []byte(a)
	}
	return rc.doB(bs...)
}

func (rc *redisConn) doB(args ...[]byte) []byte {
	rc.t.Helper()
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&buf, "$%d\r\n", len(a))
		buf.Write(a)
		buf.WriteString("\r\n")
	}
	if _, err := rc.c.Write(buf.Bytes()); err != nil {
		rc.t.Fatalf("write to redis: %v", err)
	}
	var out []byte
	if err := readReply(rc.r, &out); err != nil {
		rc.t.Fatalf("read from redis: %v", err)
	}
	return out
}

// readReply appends one raw RESP2/RESP3 reply to out.
func readReply(r *bufio.Reader, out *[]byte) error {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return err
	}
	*out = append(*out, line...)
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '=', '!':
		n, _ := strconv.Atoi(string(body))
		if n < 0 {
			return nil
		}
		b := make([]byte, n+2)
		if _, err := ioReadFull(r, b); err != nil {
			return err
		}
		*out = append(*out, b...)
		return nil
	case '*', '~', '>', '%', '|':
		n, _ := strconv.Atoi(string(body))
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			if err := readReply(r, out); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown reply type %q", line)
}

func ioReadFull(r *bufio.Reader, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := r.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// errReply formats an error text as the raw reply Redis sends.
func errReply(e string) []byte { return []byte("-" + e + "\r\n") }

func intReply(n int64) []byte { return []byte(":" + strconv.FormatInt(n, 10) + "\r\n") }

func bulkReply(b []byte) []byte {
	return append(append([]byte("$"+strconv.Itoa(len(b))+"\r\n"), b...), "\r\n"...)
}
