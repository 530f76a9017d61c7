// Package harness starts real redis-server and spillway processes for
// end-to-end tests and talks to them over raw RESP.
//
// Every server runs on a free loopback port, logs to a file in its test's
// temporary directory, is killed when the test ends, and has its log dumped
// with t.Log when the test failed.
package harness

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RedisMissing is the failure message when redis-server is not installed.
const RedisMissing = "redis-server not found on PATH: run `make test`, which installs it, or apt-get install redis-server"

// StartTimeout bounds how long a server may take to answer PING.
var StartTimeout = 30 * time.Second

// TermTimeout bounds how long Term waits for a graceful exit.
var TermTimeout = 30 * time.Second

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("harness: find free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Server is one server process under test.
type Server struct {
	t    testing.TB
	name string // "redis" or "spillway", for messages
	bin  string
	// args without the port, which is added on each start.
	args    []string
	port    int
	dir     string
	logPath string
	// Password is the --requirepass value, if one was given.
	Password string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// StartRedis starts a real redis-server (7.0) on a free loopback port with
// persistence off, in t.TempDir(), and waits until it answers PING. It is
// killed when the test ends. A missing redis-server fails the test.
func StartRedis(t testing.TB, extraArgs ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(RedisMissing)
	}
	dir := t.TempDir()
	args := []string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--logfile", ""}
	args = append(args, extraArgs...)
	return start(t, "redis", bin, dir, args)
}

// StartSpillway builds (once) and starts the spillway binary on a free
// loopback port with data under dir (t.TempDir() when dir is ""), and waits
// until it answers PING. extraArgs are appended to
// "--port N --bind 127.0.0.1 --dir DIR". It is killed when the test ends.
func StartSpillway(t testing.TB, dir string, extraArgs ...string) *Server {
	t.Helper()
	bin := BuildSpillway(t)
	if dir == "" {
		dir = t.TempDir()
	}
	args := append([]string{"--bind", "127.0.0.1", "--dir", dir}, extraArgs...)
	return start(t, "spillway", bin, dir, args)
}

func start(t testing.TB, name, bin, dir string, args []string) *Server {
	t.Helper()
	s := &Server{t: t, name: name, bin: bin, args: args, dir: dir,
		logPath: filepath.Join(t.TempDir(), name+".log")}
	for i, a := range args {
		if a == "--requirepass" && i+1 < len(args) {
			s.Password = args[i+1]
		}
	}
	t.Cleanup(s.cleanup)
	// A port found free can be taken by another process before the server
	// binds it; retry a few times with a fresh port.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		s.port = FreePort(t)
		if err = s.launch(); err == nil {
			return s
		}
		if !s.hasExited() {
			break
		}
	}
	t.Fatalf("harness: start %s: %v\n%s", name, err, s.logTail())
	return nil
}

// launch starts the process and waits until it answers PING.
func (s *Server) launch() error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	defer logf.Close()
	args := append([]string{"--port", strconv.Itoa(s.port)}, s.args...)
	fmt.Fprintf(logf, "=== harness: starting %s %s\n", s.bin, strings.Join(quoteArgs(args), " "))
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("exec %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.exited, s.waitErr = cmd, exited, nil
	s.mu.Unlock()
	go func() {
		err := cmd.Wait()
		s.mu.Lock()
		s.waitErr = err
		s.mu.Unlock()
		close(exited)
	}()
	return s.waitReady(exited)
}

// waitReady polls PING until the server answers (PONG, or NOAUTH when a
// password is set) or exits.
func (s *Server) waitReady(exited chan struct{}) error {
	deadline := time.Now().Add(StartTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("%s exited before answering PING: %v", s.name, s.waitErr)
		default:
		}
		c, err := Dial(s.Addr())
		if err == nil {
			c.Timeout = 2 * time.Second
			r := c.Do("PING")
			c.Close()
			if r.Err == nil && (r.Str == "PONG" || strings.HasPrefix(r.Str, "NOAUTH")) {
				return nil
			}
			last = fmt.Errorf("PING answered %s", r.String())
		} else {
			last = err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer PING within %v: %v", s.name, StartTimeout, last)
}

// Addr returns "127.0.0.1:PORT".
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Port returns the server's port.
func (s *Server) Port() int { return s.port }

// Dir returns the server's data directory.
func (s *Server) Dir() string { return s.dir }

// LogPath returns the file holding the server's stdout and stderr.
func (s *Server) LogPath() string { return s.logPath }

// Pid returns the current process id (0 when never started).
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Conn dials the server with MustDial (closed at test end), authenticating
// first when the server has a password.
func (s *Server) Conn(t testing.TB) *Conn {
	t.Helper()
	c := MustDial(t, s.Addr())
	if s.Password != "" {
		if r := c.Do("AUTH", s.Password); r.Str != "OK" {
			t.Fatalf("harness: AUTH on %s: %s", s.name, r.String())
		}
	}
	return c
}

func (s *Server) hasExited() bool {
	s.mu.Lock()
	ch := s.exited
	s.mu.Unlock()
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Running reports whether the process is alive.
func (s *Server) Running() bool { return !s.hasExited() }

// Kill9 sends SIGKILL and waits for the process to exit.
func (s *Server) Kill9() {
	s.t.Helper()
	s.signalAndWait(syscall.SIGKILL, 10*time.Second)
}

// Term sends SIGTERM and waits up to TermTimeout for the process to exit;
// if it does not, the test fails and the process is killed.
func (s *Server) Term() {
	s.t.Helper()
	if !s.signalAndWait(syscall.SIGTERM, TermTimeout) {
		s.t.Errorf("harness: %s did not exit within %v of SIGTERM; killing it", s.name, TermTimeout)
		s.signalAndWait(syscall.SIGKILL, 10*time.Second)
	}
}

// ExitError returns the error from the last exit (nil for exit status 0 or
// when still running).
func (s *Server) ExitError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waitErr
}

// signalAndWait reports whether the process exited within timeout.
func (s *Server) signalAndWait(sig syscall.Signal, timeout time.Duration) bool {
	s.mu.Lock()
	cmd, ch := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil || ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-ch:
		return true
	case <-time.After(timeout):
		return false
	}
}

// Restart stops the server with SIGTERM if it is still running, then starts
// it again with the same arguments, port and directory, and waits for PING.
func (s *Server) Restart() {
	s.t.Helper()
	if !s.hasExited() {
		s.Term()
	}
	if err := s.launch(); err != nil {
		s.t.Fatalf("harness: restart %s: %v\n%s", s.name, err, s.logTail())
	}
}

// RSS returns the process's resident set size in bytes (VmRSS from
// /proc/PID/status), failing the test if it cannot be read.
func (s *Server) RSS() int64 {
	s.t.Helper()
	n, err := ProcRSS(s.Pid())
	if err != nil {
		s.t.Fatalf("harness: %v", err)
	}
	return n
}

// ProcRSS returns VmRSS of process pid in bytes.
func ProcRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read rss: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "VmRSS:") {
			continue
		}
		fields := strings.Fields(line[len("VmRSS:"):])
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("read rss: odd line %q", line)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read rss: %w", err)
		}
		return kb * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read rss: %w", err)
	}
	return 0, errors.New("read rss: no VmRSS line (process gone?)")
}

// cleanup kills the process and, when the test failed, dumps its log.
func (s *Server) cleanup() {
	s.signalAndWait(syscall.SIGKILL, 10*time.Second)
	if s.t.Failed() {
		s.t.Logf("harness: %s log (%s):\n%s", s.name, s.logPath, s.logTail())
	}
}

// logTail returns the last 64 KB of the server log.
func (s *Server) logTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	const max = 64 << 10
	if len(b) > max {
		b = append([]byte("...\n"), b[len(b)-max:]...)
	}
	return string(b)
}

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"") {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return out
}
