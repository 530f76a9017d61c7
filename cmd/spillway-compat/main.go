// Command spillway-compat runs Redis 7.0's own test suite (tests/ of
// Debian's redis source package, see scripts/ensure-compat-suite.sh) in
// external-server mode against redis-server, embedded Spillway and
// upstream-mode Spillway, a fresh server per unit under a wall-clock cap,
// and prints and writes the results (`make compat`).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

type config struct {
	suite       string
	spillway    string
	redisServer string
	targets     []string
	units       []string
	timeout     time.Duration
	tags        string
	jobs        int
	out         string
	logs        string
	check       bool
	from        string
	ranFor      time.Duration
	durable     bool
}

// Run is one unit on one target.
type Run struct {
	Unit       string  `json:"unit"`
	Target     string  `json:"target"`
	Status     Status  `json:"status"`
	Seconds    float64 `json:"seconds"`
	Error      string  `json:"error,omitempty"` // harness error or why the server died
	ServerDied bool    `json:"server_died,omitempty"`
	Result
}

func main() {
	var cfg config
	var targets, units string
	flag.StringVar(&cfg.suite, "suite", "", "extracted redis source tree holding runtest and tests/ (from scripts/ensure-compat-suite.sh)")
	flag.StringVar(&cfg.spillway, "spillway", "bin/spillway", "Spillway binary")
	flag.StringVar(&cfg.redisServer, "redis-server", "redis-server", "redis-server binary")
	flag.StringVar(&targets, "targets", strings.Join(allTargets, ","), "targets, comma or space separated: redis, embedded, upstream")
	flag.StringVar(&units, "units", "", "units to run, space or comma separated (default: the suite's all_tests)")
	flag.DurationVar(&cfg.timeout, "timeout", 5*time.Minute, "wall-clock cap per unit and target")
	flag.StringVar(&cfg.tags, "tags", "-needs:debug", "the suite's --tags: tags an external server cannot run")
	flag.IntVar(&cfg.jobs, "jobs", 1, "units run at once (each on its own fresh servers)")
	flag.StringVar(&cfg.out, "out", "COMPATIBILITY.md", "report to write (\"\" for none)")
	flag.StringVar(&cfg.logs, "logs", "", "directory for the per-unit logs and results.json (default: a new temporary directory)")
	flag.BoolVar(&cfg.check, "check", false, "exit 1 unless the harness itself worked: every server started, every unit of every target parsed, and redis-server passed every unit with tests parsed")
	flag.BoolVar(&cfg.durable, "durable", true, "pass the suite's --durable: an error inside a test fails that test instead of ending the unit")
	flag.StringVar(&cfg.from, "from", "", "run nothing: rewrite the report from the results.json of earlier (possibly interrupted) runs, comma separated; a later file's result of a unit on a target replaces an earlier one")
	flag.DurationVar(&cfg.ranFor, "ran-for", 0, "with -from: how long that run took, for the report")
	flag.Parse()
	cfg.targets = fields(targets)
	cfg.units = fields(units)
	if err := run(&cfg); err != nil {
		fmt.Fprintln(os.Stderr, "compat:", err)
		os.Exit(1)
	}
}

func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
}

func run(cfg *config) error {
	if cfg.suite == "" {
		return errors.New("-suite is required (make compat finds it)")
	}
	for _, t := range cfg.targets {
		if !contains(allTargets, t) {
			return fmt.Errorf("unknown target %q (want %s)", t, strings.Join(allTargets, ", "))
		}
	}
	if len(cfg.targets) == 0 {
		return errors.New("no targets")
	}
	if p, err := filepath.Abs(cfg.spillway); err == nil {
		cfg.spillway = p
	}
	if cfg.logs == "" && cfg.from != "" {
		cfg.logs = filepath.Dir(fields(cfg.from)[0])
	}
	if cfg.logs == "" {
		d, err := os.MkdirTemp("", "spillway-compat-")
		if err != nil {
			return err
		}
		cfg.logs = d
	}
	work := filepath.Join(cfg.logs, "suite")
	if cfg.from != "" {
		work = filepath.Join(os.TempDir(), fmt.Sprintf("spillway-compat-suite-%d", os.Getpid()))
		defer os.RemoveAll(work)
	}
	patches, err := prepareSuite(cfg.suite, work)
	if err != nil {
		return err
	}
	all, err := listUnits(work)
	if err != nil {
		return err
	}
	if len(cfg.units) == 0 {
		cfg.units = all
	} else {
		for _, u := range cfg.units {
			if !contains(all, u) {
				return fmt.Errorf("unit %q is not in the suite's all_tests", u)
			}
		}
	}
	rep := &report{cfg: cfg, patches: patches, started: time.Now(), suiteVersion: suiteVersion(cfg.suite),
		runs: map[string]map[string]*Run{}, units: cfg.units, allUnits: len(all)}
	if cfg.from != "" {
		return fromResults(cfg, rep)
	}
	fmt.Fprintf(os.Stderr, "compat: %d units x %d targets, cap %v per unit, logs in %s\n",
		len(cfg.units), len(cfg.targets), cfg.timeout, cfg.logs)

	var mu sync.Mutex
	// SIGINT or SIGTERM: end every process group this run started, write
	// the partial report and exit.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		killGroups()
		mu.Lock()
		rep.finished = time.Now()
		rep.save()
		fmt.Fprintf(os.Stderr, "compat: %v: stopped; partial report written, logs in %s\n", sig, cfg.logs)
		os.Exit(130)
	}()
	next := 0
	var wg sync.WaitGroup
	for j := 0; j < max(cfg.jobs, 1); j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next >= len(cfg.units) {
					mu.Unlock()
					return
				}
				unit := cfg.units[next]
				next++
				mu.Unlock()
				na := false
				for _, t := range cfg.targets {
					var r *Run
					if na {
						r = &Run{Unit: unit, Target: t, Status: StatusNA}
					} else {
						r = runUnit(cfg, work, unit, t)
						na = r.Status == StatusNA
					}
					mu.Lock()
					rep.add(r)
					if r.Status != StatusNA || t == cfg.targets[0] {
						fmt.Fprintf(os.Stderr, "compat: %-28s %-9s %s (%d passed, %d failed, %d skipped, %.0fs)%s\n",
							unit, t, r.Status, r.Passed, r.Failed, r.Skipped, r.Seconds, errSuffix(r))
					}
					if err := rep.save(); err != nil {
						fmt.Fprintln(os.Stderr, "compat:", err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	rep.finished = time.Now()
	if err := rep.save(); err != nil {
		return err
	}
	fmt.Print(rep.table(false))
	fmt.Print(rep.closing())
	if cfg.out != "" {
		fmt.Fprintf(os.Stderr, "compat: wrote %s (logs in %s)\n", cfg.out, cfg.logs)
	}
	if cfg.check {
		return rep.check()
	}
	return nil
}

// fromResults rewrites the report from a results.json.
func fromResults(cfg *config, rep *report) error {
	files := fields(cfg.from)
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		var runs []*Run
		if err := json.Unmarshal(b, &runs); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		for _, r := range runs {
			if contains(cfg.units, r.Unit) && contains(cfg.targets, r.Target) {
				rep.add(r)
			}
		}
	}
	rep.sources = len(files)
	// The run ended when its first results file was last written.
	if st, err := os.Stat(files[0]); err == nil {
		rep.finished = st.ModTime()
		rep.started = rep.finished.Add(-cfg.ranFor)
	} else {
		rep.finished = rep.started.Add(cfg.ranFor)
	}
	fmt.Print(rep.table(false))
	fmt.Print(rep.closing())
	if cfg.out != "" {
		if err := os.WriteFile(cfg.out, []byte(rep.markdown()), 0o644); err != nil {
			return err
		}
	}
	if cfg.check {
		return rep.check()
	}
	return nil
}

func errSuffix(r *Run) string {
	if r.Error != "" {
		return ": " + r.Error
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// listUnits asks the suite for its unit list (test_helper.tcl's all_tests).
func listUnits(work string) ([]string, error) {
	cmd := exec.Command("./runtest", "--list-tests")
	cmd.Dir = work
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("runtest --list-tests: %w", err)
	}
	units := strings.Fields(string(out))
	if len(units) == 0 {
		return nil, errors.New("runtest --list-tests listed no unit")
	}
	return units, nil
}

// suiteVersion reads the suite's Redis version from src/version.h.
func suiteVersion(suite string) string {
	b, err := os.ReadFile(filepath.Join(suite, "src", "version.h"))
	if err != nil {
		return "unknown"
	}
	s := string(b)
	if i := strings.Index(s, `"`); i >= 0 {
		if j := strings.Index(s[i+1:], `"`); j >= 0 {
			return s[i+1 : i+1+j]
		}
	}
	return "unknown"
}

// runUnit starts a fresh target, runs one unit against it under the cap,
// and stops the target.
func runUnit(cfg *config, work, unit, target string) *Run {
	r := &Run{Unit: unit, Target: target}
	dir := filepath.Join(cfg.logs, target, strings.ReplaceAll(unit, "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.Status, r.Error = StatusError, err.Error()
		return r
	}
	start := time.Now()
	defer func() { r.Seconds = time.Since(start).Seconds() }()
	inst, err := startTarget(target, dir, cfg)
	if err != nil {
		r.Status, r.Error = StatusError, err.Error()
		return r
	}
	logPath := filepath.Join(dir, "runtest.log")
	killed, rerr := runtest(cfg, work, unit, inst.port, logPath)
	for retry := 0; retry < 3 && !killed && rerr != nil && listenerBusy(logPath); retry++ {
		// The suite's own listener lost a race for its port before any
		// test ran: run it again on another port range.
		killed, rerr = runtest(cfg, work, unit, inst.port, logPath)
	}
	alive := inst.stop()
	// The server directories hold data files only; the logs stay.
	os.RemoveAll(filepath.Join(dir, "data"))
	os.RemoveAll(filepath.Join(dir, "upstream"))
	os.Remove(filepath.Join(dir, "dump.rdb"))
	f, err := os.Open(logPath)
	if err != nil {
		r.Status, r.Error = StatusError, err.Error()
		return r
	}
	r.Result = Parse(f)
	f.Close()
	r.Status = Classify(r.Result, killed)
	if !alive {
		r.ServerDied = true
		r.Error = "the server exited during the unit (see its log)"
	} else if rerr != nil && r.Status == StatusAborted && r.Exception == "" {
		r.Error = rerr.Error()
	}
	return r
}

// runtest runs the suite's runtest for one unit, its process group killed
// at the cap. It reports whether the cap killed it.
func runtest(cfg *config, work, unit string, port int, logPath string) (killed bool, err error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return false, err
	}
	defer lf.Close()
	args := []string{"--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--singledb", "--ignore-encoding", "--ignore-digest",
		"--tags", cfg.tags, "--single", unit,
		// The suite's own listener for its test client: a port range of
		// its own, so parallel runs (and other users' suites) do not meet.
		// It also probes port+10000; both stay below the kernel's
		// ephemeral range (32768), where outgoing connections take their
		// local ports.
		"--baseport", strconv.Itoa(10000 + 32*rand.IntN(375)),
		"--timeout", strconv.Itoa(int(cfg.timeout.Seconds()) + 60)}
	if cfg.durable {
		args = append(args, "--durable")
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	cmd := exec.Command("./runtest", args...)
	cmd.Dir = work
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = append(os.Environ(), "TERM=dumb")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return false, err
	}
	track(cmd.Process.Pid)
	defer untrack(cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		killed = true
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		err = <-done
	}
	// The suite's test client is a child in the same group; make sure
	// nothing of this run survives it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	fmt.Fprintf(lf, "\n[spillway-compat] runtest %s; killed at the cap: %v\n", exitText(err), killed)
	return killed, err
}

// groups are the process groups (runtest, servers) running now.
var groups = struct {
	sync.Mutex
	m map[int]bool
}{m: map[int]bool{}}

func track(pgid int)   { groups.Lock(); groups.m[pgid] = true; groups.Unlock() }
func untrack(pgid int) { groups.Lock(); delete(groups.m, pgid); groups.Unlock() }

func killGroups() {
	groups.Lock()
	defer groups.Unlock()
	for pgid := range groups.m {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

// listenerBusy reports whether the suite stopped because its test server
// could not listen, before running anything.
func listenerBusy(logPath string) bool {
	b, err := os.ReadFile(logPath)
	return err == nil && strings.Contains(string(b), "couldn't open socket: address already in use") &&
		!strings.Contains(string(b), "[ready]")
}

func exitText(err error) string {
	if err == nil {
		return "exited 0"
	}
	return err.Error()
}

// save writes results.json and the report after every unit, so an
// interrupted run still leaves what finished.
func (rep *report) save() error {
	var runs []*Run
	for _, u := range rep.units {
		for _, t := range rep.cfg.targets {
			if r := rep.runs[u][t]; r != nil {
				runs = append(runs, r)
			}
		}
	}
	b, err := json.MarshalIndent(runs, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(rep.cfg.logs, "results.json"), b, 0o644); err != nil {
		return err
	}
	if rep.cfg.out == "" {
		return nil
	}
	return os.WriteFile(rep.cfg.out, []byte(rep.markdown()), 0o644)
}
