package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startRedis starts a redis-server on a free loopback port with extra
// arguments and returns its address. It fails (never skips) without one.
func startRedis(t *testing.T, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found in PATH (%v): the differential test needs Redis 7.0 installed (apt-get install redis-server)", err)
	}
	if out, err := exec.Command(bin, "--version").Output(); err != nil || !bytes.Contains(out, []byte("v=7.0.")) {
		t.Fatalf("need redis-server 7.0.x to compare with, got %q (%v)", out, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--daemonize", "no", "--dir", t.TempDir()}, extra...)
	cmd := exec.Command(bin, args...)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server did not start on %s: %v\n%s", addr, err, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// modelReplies is what Redis answers to what the Reader parsed, for the
// commands the differential cases use (ECHO and PING), followed by the
// protocol error if any. closes reports whether Redis then closes.
func modelReplies(p parsed) (reply []byte, closes bool) {
	var w Writer
	for _, c := range p.cmds {
		switch name := strings.ToLower(c[0]); {
		case name == "echo" && len(c) == 2:
			w.BulkString(c[1])
		case name == "ping" && len(c) == 1:
			w.Simple("PONG")
		case name == "ping" && len(c) == 2:
			w.BulkString(c[1])
		case name == "echo" || name == "ping":
			w.Error("ERR wrong number of arguments for '" + name + "' command")
		default:
			w.Raw(fmt.Appendf(nil, "<no model for %q>", c))
		}
	}
	if p.end != "EOF" {
		w.Error(p.end)
		return w.Buf, true
	}
	return w.Buf, false
}

// askRedis sends in on a new connection and checks Redis answers want and
// then closes (or stays silent and open).
func askRedis(t *testing.T, addr string, in, want []byte, closes bool) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer func() { _ = c.Close() }()
	if _, err := c.Write(in); err != nil {
		t.Fatalf("write: %v", err)
	}
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len(want))
	n, err := io.ReadFull(br, got)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("redis answered %.300q (%v), parser predicts %.300q", got[:n], err, want)
	}
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	extra, err := io.ReadAll(br)
	var ne net.Error
	timeout := errors.As(err, &ne) && ne.Timeout()
	switch {
	case len(extra) > 0:
		t.Fatalf("redis answered %.300q more than the parser predicts (%.300q)", extra, want)
	case closes && err != nil:
		t.Fatalf("redis did not close after the protocol error: %v", err)
	case !closes && !timeout:
		t.Fatalf("redis closed the connection (%v); the parser predicts it waits", err)
	}
}

type redisCase struct {
	name string
	in   string
}

var redisCases = []redisCase{
	// Positive cases: inline.
	{"inline", "PING\r\nECHO hello\r\n"},
	{"inline lf", "ECHO a\nPING\n"},
	{"inline lowercase spaces", "  echo \t hello   \r\n"},
	{"empty lines", "\r\n\n \t \r\nPING\r\n"},
	{"vt ff", "\vECHO a\vb\f\r\n"},
	{"cr in line", "ECHO a\rb\r\n"},
	{"cr cr lf", "ECHO a\r\r\n"},
	{"double quotes", `ECHO "a b"` + "\r\n" + `ECHO ""` + "\r\n"},
	{"escapes", `ECHO "\x41\x4a\x4\n\r\t\b\a\\\"\q\xfF\xZZ"` + "\r\n"},
	{"single quotes", `ECHO 'it\'s \n "x"'` + "\r\n"},
	{"quote mid token", `ECHO a"b c"` + "\r\n" + `ECHO d'e f'` + "\n"},
	{"quote then vt", "ECHO \"a\"\v\r\nECHO 'b'\f\n"},
	{"too many args", "ECHO a b\r\nPING a b\r\n"},
	{"high bytes", "ECHO \xff\xfe\x80\r\n"},
	// Positive cases: multibulk.
	{"multibulk", "*2\r\n$4\r\nECHO\r\n$3\r\nfoo\r\n*1\r\n$4\r\nPING\r\n"},
	{"binary bulk", "*2\r\n$4\r\nECHO\r\n$6\r\na\x00\r\nb\xff\r\n"},
	{"empty bulk", "*2\r\n$4\r\necho\r\n$0\r\n\r\n"},
	{"skipped arrays", "*0\r\n*-1\r\n*-100\r\nPING\r\n"},
	{"crlf after bulk unchecked", "*1\r\n$4\r\nPINGxy*2\r\n$4\r\nECHO\r\n$1\r\nazz"},
	{"lf after cr unchecked", "*1\rx$4\rxPING\r\n"},
	{"mixed pipeline", strings.Repeat("PING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nECHO 'x y'\n\r\n*0\r\n", 50)},
	{"big bulk", "*2\r\n$4\r\nECHO\r\n$100000\r\n" + strings.Repeat("b", 100000) + "\r\nPING\r\n"},
	{"bulk at limit", "*2\r\n$4\r\nECHO\r\n$1048576\r\n" + strings.Repeat("m", 1048576) + "\r\n"},
	{"long inline", "ECHO " + strings.Repeat("i", 60000) + "\r\n"},
	// Over 64 KB but ending within the 16 KB read that crosses 64 KB.
	{"long inline read chunk", "ECHO " + strings.Repeat("j", 79000) + "\r\n"},
	// Waiting: Redis stays silent and the parser reaches EOF.
	{"partial inline", "PING"},
	{"partial multibulk", "PING\r\n*2\r\n$4\r\nECHO\r\n$3\r\nfo"},
	{"header without lf", "*2\r"},
	{"nul hides inline end", "PING\x00\r\nPING\r\n"},
	{"nul hides header end", "*1\x00\r\n$4\r\nPING\r\n"},
	{"count int max", "*2147483647\r\n"},
	// Protocol errors.
	{"count too big", "*2147483648\r\n"},
	{"count minus zero", "*-0\r\n"},
	{"count plus", "*+1\r\n"},
	{"count leading zero", "*01\r\n"},
	{"count empty", "*\r\n"},
	{"count junk", "*1 \r\n"},
	{"count 21 chars", "*-12345678901234567890\r\n"},
	{"count overflow", "*99999999999999999999\r\n"},
	{"expected dollar", "PING\r\n*1\r\n:1\r\n"},
	{"expected dollar cr", "*1\r\n\r\n"},
	{"expected dollar lf", "*1\r\n\n\r\n"},
	{"expected dollar high", "*1\r\n\xff4\r\n"},
	{"bulk negative", "*1\r\n$-1\r\n"},
	{"bulk empty", "*1\r\n$\r\n"},
	{"bulk leading zero", "*1\r\n$01\r\n"},
	{"bulk over limit", "*1\r\n$1048577\r\n"},
	{"unbalanced", `ECHO "abc` + "\r\n"},
	{"unbalanced escaped", `ECHO "abc\"` + "\r\n"},
	{"unbalanced single", `ECHO 'abc\'` + "\r\n"},
	{"closing quote then text", `ECHO "a"b` + "\r\n"},
	{"closing single quote then text", `ECHO 'a'b` + "\n"},
	{"too big inline", strings.Repeat("a", 70000)},
	{"too big inline nul", "PING\x00" + strings.Repeat("\r\n", 35000)},
	{"too big mbulk count", "*" + strings.Repeat("1", 70000)},
	{"too big bulk count", "*1\r\n$" + strings.Repeat("1", 70000)},
}

var redisUnauthCases = []redisCase{
	{"unauth count", "*11\r\n"},
	{"unauth count ok", "*10\r\n"},
	{"unauth invalid count first", "*2147483648\r\n"},
	{"unauth bulk", "*1\r\n$16385\r\n"},
	{"unauth bulk ok", "*1\r\n$16384\r\n"},
	{"unauth invalid bulk first", "*1\r\n$1048577\r\n"},
	{"unauth negative count", "*-20\r\n"},
}

// TestAgainstRedis sends each input to a real redis-server and to the
// parser, and checks Redis's answer is what the parsed commands (ECHO and
// PING) or the parser's protocol error make it.
func TestAgainstRedis(t *testing.T) {
	run := func(t *testing.T, addr string, lim Limits, cases []redisCase) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				p := readAll(t, strings.NewReader(tc.in), 0, lim)
				want, closes := modelReplies(p)
				askRedis(t, addr, []byte(tc.in), want, closes)
			})
		}
	}
	t.Run("default", func(t *testing.T) {
		addr := startRedis(t, "--proto-max-bulk-len", "1048576")
		run(t, addr, Limits{MaxBulkLen: 1 << 20}, redisCases)
	})
	t.Run("requirepass", func(t *testing.T) {
		addr := startRedis(t, "--proto-max-bulk-len", "1048576", "--requirepass", "secret")
		run(t, addr, Limits{MaxBulkLen: 1 << 20, Unauthenticated: true}, redisUnauthCases)
	})
}
