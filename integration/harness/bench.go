package harness

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Proc is a helper process that is neither redis-server nor spillway (for
// example a proxy in front of one), started by StartProc. It is killed when
// the test ends, and its log is dumped with t.Log when the test failed.
type Proc struct {
	name    string
	addr    string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// StartProc starts bin with args (its working directory a fresh
// t.TempDir()), its output in a log file, and waits until addr answers PING
// (or the process exits, or StartTimeout passes, which fails the test). The
// caller chooses addr and passes it to the process in args; no port is
// added.
func StartProc(t testing.TB, name, addr, bin string, args ...string) *Proc {
	t.Helper()
	p := &Proc{name: name, addr: addr, logPath: filepath.Join(t.TempDir(), name+".log"),
		exited: make(chan struct{})}
	logf, err := os.Create(p.logPath)
	if err != nil {
		t.Fatalf("harness: %s: create log: %v", name, err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== harness: starting %s %s\n", bin, strings.Join(quoteArgs(args), " "))
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = t.TempDir()
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("harness: start %s: %v", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			b, _ := os.ReadFile(p.logPath)
			t.Logf("harness: %s log (%s):\n%s", name, p.logPath, Trunc(string(b), 64<<10))
		}
	})
	if err := p.waitPing(); err != nil {
		b, _ := os.ReadFile(p.logPath)
		t.Fatalf("harness: start %s: %v\n%s", name, err, Trunc(string(b), 64<<10))
	}
	return p
}

func (p *Proc) waitPing() error {
	deadline := time.Now().Add(StartTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before answering PING: %v", p.name, p.cmd.ProcessState)
		default:
		}
		c, err := Dial(p.addr)
		if err == nil {
			c.Timeout = 2 * time.Second
			r := c.Do("PING")
			c.Close()
			if r.Err == nil && r.Str == "PONG" {
				return nil
			}
			last = fmt.Errorf("PING answered %s", r.String())
		} else {
			last = err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer PING within %v: %v", p.name, StartTimeout, last)
}

// Addr returns the address the process was started to serve.
func (p *Proc) Addr() string { return p.addr }

// Pid returns the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// ProcPeakRSS returns VmHWM of process pid in bytes: the largest resident
// set size it has had since it started.
func ProcPeakRSS(pid int) (int64, error) {
	return procStatusKB(pid, "VmHWM:")
}

// procStatusKB reads one "Name:   N kB" field of /proc/PID/status.
func procStatusKB(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", field, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), field)
		if !ok {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("read %s: odd line %q", field, sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", field, err)
		}
		return kb * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("read %s: %w", field, err)
	}
	return 0, fmt.Errorf("read %s: %w", field, errors.New("no such line (process gone?)"))
}
