package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The targets the suite runs against, in table order.
var allTargets = []string{"redis", "embedded", "upstream"}

// proc is one server process the harness started.
type proc struct {
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{} // closed once the process has exited
}

// instance is a fresh target for one unit: the port the suite talks to and
// the processes behind it.
type instance struct {
	port  int
	procs []*proc
	dir   string
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startProc(dir, name string, argv ...string) (*proc, error) {
	lf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	p := &proc{cmd: cmd, log: lf, exited: make(chan struct{})}
	track(cmd.Process.Pid)
	go func() { cmd.Wait(); untrack(cmd.Process.Pid); close(p.exited) }()
	return p, nil
}

// waitPing waits until the server on port answers PING.
func waitPing(port int, p *proc, limit time.Duration) error {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before answering PING", p.cmd.Path)
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.SetDeadline(time.Now().Add(2 * time.Second))
			fmt.Fprint(c, "PING\r\n")
			line, err := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if err == nil && strings.HasPrefix(line, "+PONG") {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("no PONG from %s within %v", addr, limit)
}

// startTarget starts a fresh target in dir: a redis-server, an embedded
// Spillway, or a Spillway in upstream mode in front of its own
// redis-server.
func startTarget(target, dir string, cfg *config) (*instance, error) {
	inst := &instance{dir: dir}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	inst.port = port
	redisArgs := func(port int, d string) []string {
		return []string{cfg.redisServer, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", d,
			"--daemonize", "no", "--logfile", ""}
	}
	start := func(name string, port int, argv []string) error {
		p, err := startProc(dir, name, argv...)
		if err != nil {
			return err
		}
		inst.procs = append(inst.procs, p)
		return waitPing(port, p, 15*time.Second)
	}
	switch target {
	case "redis":
		err = start("redis-server", port, redisArgs(port, dir))
	case "embedded":
		d := filepath.Join(dir, "data")
		if err = os.MkdirAll(d, 0o755); err == nil {
			err = start("spillway", port, []string{cfg.spillway, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", d})
		}
	case "upstream":
		var up int
		if up, err = freePort(); err != nil {
			break
		}
		ud, d := filepath.Join(dir, "upstream"), filepath.Join(dir, "data")
		for _, x := range []string{ud, d} {
			if err == nil {
				err = os.MkdirAll(x, 0o755)
			}
		}
		if err == nil {
			err = start("redis-server", up, redisArgs(up, ud))
		}
		if err == nil {
			err = start("spillway", port, []string{cfg.spillway, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
				"--dir", d, "--upstream", "redis://127.0.0.1:" + strconv.Itoa(up)})
		}
	default:
		err = fmt.Errorf("unknown target %q (want %s)", target, strings.Join(allTargets, ", "))
	}
	if err != nil {
		inst.stop()
		return nil, err
	}
	return inst, nil
}

// stop ends the instance's processes (Spillway first), SIGTERM then
// SIGKILL after five seconds, and reports whether each was still running,
// that is, whether the unit left the server alive.
func (inst *instance) stop() (alive bool) {
	alive = true
	for i := len(inst.procs) - 1; i >= 0; i-- {
		p := inst.procs[i]
		select {
		case <-p.exited:
			alive = false
			p.log.Close()
			continue
		default:
		}
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
		p.log.Close()
	}
	return alive
}
