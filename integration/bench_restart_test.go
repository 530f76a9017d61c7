package integration

// The restart section of `make bench`: how long Spillway takes from exec
// until it serves its first command over millions of cold keys, beside
// redis-server loading the same data from its RDB.

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/benchreport"
	"github.com/spillway/spillway/integration/harness"
)

const (
	rstQuickKeys = 2_000_000  // keys loaded in quick mode
	rstFullKeys  = 10_000_000 // SPILLWAY_BENCH_FULL=1: the target's 10 million
	rstValueMin  = 16         // values are rstValueMin..rstValueMax random letters
	rstValueMax  = 32         //
	rstReps      = 3          // clean restarts measured; the median is reported
	rstOverwrite = 100_000    // keys rewritten before each measured stop: the WAL tail replayed
	rstMaxMemory = "64mb"     // Spillway's budget in every timed start
	// rstLoadMemory is the loader's budget: loading millions of keys under
	// a small one is several times slower (small memtables, many flushes).
	rstLoadMemory  = "512mb"
	rstTargetSecs  = 2.0 // target: served within this many seconds of exec (10M keys)
	rstServeBudget = 2 * time.Minute
	// rstChunk is the most keys one load file holds: the dataset is loaded
	// a file at a time, each well within pipeLoad's five minutes.
	rstChunk = 2_000_000
)

// rstKey is the name of key i of the restart dataset: "rst:" and ten digits.
func rstKey(dst []byte, i int) []byte {
	dst = append(dst, "rst:"...)
	var d [10]byte
	for j := len(d) - 1; j >= 0; j-- {
		d[j] = '0' + byte(i%10)
		i /= 10
	}
	return append(dst, d[:]...)
}

// rstValue returns the value of key i: a deterministic slice of pool, so a
// probe can be checked without keeping the dataset in memory. gen marks a
// rewritten value (0 for the loaded one).
func rstValue(pool []byte, i, gen int) []byte {
	h := uint64(i)*0x9E3779B97F4A7C15 + uint64(gen)*0xBF58476D1CE4E5B9
	h ^= h >> 31
	n := rstValueMin + int(h%uint64(rstValueMax-rstValueMin+1))
	off := int((h >> 8) % uint64(len(pool)-rstValueMax))
	return pool[off : off+n]
}

func rstPool() []byte { return randomLetters(rand.New(rand.NewPCG(11, 12)), 1<<16) }

// writeRestartFile writes SETs of keys lo..hi-1 of the restart dataset
// (values of generation gen).
func writeRestartFile(path string, pool []byte, lo, hi, gen int) error {
	set := []byte("SET")
	return writeRESP(path, func(w *respWriter) {
		var key []byte
		for i := lo; i < hi; i++ {
			key = rstKey(key[:0], i)
			w.command(set, key, rstValue(pool, i, gen))
		}
	})
}

// rstServed is one timed start: seconds from exec to the first PONG and to
// the first GET of a cold key answered with its value, and (Spillway) what
// its log says: the seconds from opening the store until ready (Pebble's
// open and WAL replay, the key count, listening; -1 when not logged), and
// how the keys were counted.
type rstServed struct {
	pong, get float64
	ready     float64
	scan      string  // as rstLogTimes returns it
	scanSecs  float64 // the key count's seconds before ready (0: none, or in the background)
}

// String renders the times for logs and notes.
func (s rstServed) String() string {
	str := fmt.Sprintf("PONG %.2f s, GET %.2f s", s.pong, s.get)
	if s.ready >= 0 {
		str += fmt.Sprintf(" (log: store open to ready %.2f s: %s, Pebble's open with its WAL replay and the rest "+
			"%.2f s; exec to store open %.2f s)", s.ready, s.scan, s.ready-s.scanSecs, s.pong-s.ready)
	}
	return str
}

// TestBenchRestart loads rstQuickKeys (SPILLWAY_BENCH_FULL=1: 10,000,000;
// SPILLWAY_BENCH_RESTART_KEYS overrides both) small string keys into
// Spillway and redis-server, and times restarts: Spillway after SIGTERM
// (rstReps times) and after kill -9 (once), each after rewriting
// rstOverwrite keys, and redis-server loading its RDB after SAVE.
func TestBenchRestart(t *testing.T) {
	needBench(t)
	began := time.Now()
	n := rstQuickKeys
	if os.Getenv("SPILLWAY_BENCH_FULL") == "1" {
		n = rstFullKeys
	}
	if v := os.Getenv("SPILLWAY_BENCH_RESTART_KEYS"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < rstOverwrite*2 {
			t.Fatalf("SPILLWAY_BENCH_RESTART_KEYS=%q: want an integer of at least %d", v, rstOverwrite*2)
		}
		n = k
	}
	pool := rstPool()
	tmp := t.TempDir()
	file := filepath.Join(tmp, "restart.resp")

	// Load both servers at once, a file of at most rstChunk keys at a time
	// (load time is not what is measured).
	spwDir := t.TempDir()
	loader := harness.StartSpillway(t, spwDir, "--maxmemory", rstLoadMemory)
	redis := harness.StartRedis(t)
	var spwLoad, redisLoad time.Duration
	for lo := 0; lo < n; lo += rstChunk {
		hi := min(lo+rstChunk, n)
		if err := writeRestartFile(file, pool, lo, hi, 0); err != nil {
			t.Fatal(err)
		}
		var spwErr, redisErr error
		var sd, rd time.Duration
		done := make(chan struct{})
		go func() {
			defer close(done)
			sd, spwErr = pipeLoad(loader.Addr(), file, hi-lo)
		}()
		rd, redisErr = pipeLoad(redis.Addr(), file, hi-lo)
		<-done
		if err := errors.Join(spwErr, redisErr); err != nil {
			t.Fatalf("load keys %d..%d: %v", lo, hi-1, err)
		}
		spwLoad, redisLoad = spwLoad+sd, redisLoad+rd
	}
	os.Remove(file)
	t.Logf("loaded %s keys (concurrently) in: spillway %v, redis %v; at %v", thousands(float64(n)),
		spwLoad.Round(time.Millisecond), redisLoad.Round(time.Millisecond), time.Since(began).Round(time.Second))
	for _, s := range []*harness.Server{loader, redis} {
		if r := s.Conn(t).Do("DBSIZE"); r.Int != int64(n) {
			t.Fatalf("DBSIZE after load = %s, want %d", r.String(), n)
		}
	}
	saveStart := time.Now()
	rc := redis.Conn(t)
	rc.Timeout = rstServeBudget
	if r := rc.Do("SAVE"); r.Str != "OK" {
		t.Fatalf("redis SAVE: %s", r.String())
	}
	t.Logf("redis SAVE took %v", time.Since(saveStart).Round(time.Millisecond))
	termStart := time.Now()
	loader.Term()
	termTook := time.Since(termStart)
	redis.Term()
	disk, err := memDirUsage(spwDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("spillway SIGTERM after the load took %v; its dir: %.0f MB, of which WAL %.0f MB",
		termTook.Round(time.Millisecond), memMB(disk.total), memMB(disk.wal))

	bin := harness.BuildSpillway(t)
	spwArgs := func(port int) []string {
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", spwDir,
			"--maxmemory", rstMaxMemory}
	}
	probe := rand.New(rand.NewPCG(13, 14))
	// gen is the generation of keys 0..rstOverwrite-1 on disk; probeKey
	// picks a random key and the value it must have.
	gen := 0
	probeKey := func() ([]byte, []byte) {
		i := probe.IntN(n)
		g := 0
		if i < rstOverwrite {
			g = gen
		}
		return rstKey(nil, i), rstValue(pool, i, g)
	}
	// rewrite sets keys 0..rstOverwrite-1 to their next generation through
	// p: the WAL tail that the next start replays.
	over := filepath.Join(tmp, "overwrite.resp")
	rewrite := func(p *rstProc) {
		t.Helper()
		if err := writeRestartFile(over, pool, 0, rstOverwrite, gen+1); err != nil {
			t.Fatal(err)
		}
		if _, err := pipeLoad(p.addr, over, rstOverwrite); err != nil {
			t.Fatalf("rewrite %d keys: %v", rstOverwrite, err)
		}
		gen++
	}

	// The first start replays the loader's unflushed memtables (written
	// under its larger budget): reported, but not one of the repetitions.
	k, v := probeKey()
	first, p := rstTimeStart(t, "spillway", bin, spwArgs, n, k, v)
	if t.Failed() {
		return
	}
	t.Logf("spillway first start after the load: %v", first)
	// Each repetition: rewrite rstOverwrite keys, stop (SIGTERM, or kill -9
	// after the WAL's everysec fsync for the last one), time the next start.
	var clean []rstServed
	var unclean rstServed
	for rep := 1; rep <= rstReps+1; rep++ {
		rewrite(p)
		kill := rep > rstReps
		if kill {
			time.Sleep(1500 * time.Millisecond) // appendfsync everysec: let the WAL reach disk
			p.stop(t, syscall.SIGKILL)
		} else {
			p.stop(t, syscall.SIGTERM)
		}
		k, v := probeKey()
		var s rstServed
		s, p = rstTimeStart(t, "spillway", bin, spwArgs, n, k, v)
		if t.Failed() {
			return
		}
		if kill {
			unclean = s
			t.Logf("spillway restart after kill -9: %v", s)
		} else {
			clean = append(clean, s)
			t.Logf("spillway clean restart %d: %v", rep, s)
		}
	}
	p.stop(t, syscall.SIGTERM)

	redisBin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(harness.RedisMissing)
	}
	redisArgs := func(port int) []string {
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", redis.Dir(),
			"--dbfilename", "dump.rdb", "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", ""}
	}
	var redisRuns []rstServed
	for rep := 1; rep <= rstReps; rep++ {
		i := probe.IntN(n)
		s, p := rstTimeStart(t, "redis", redisBin, redisArgs, n, rstKey(nil, i), rstValue(pool, i, 0))
		if t.Failed() {
			return
		}
		p.stop(t, syscall.SIGKILL) // nothing to save: --save ""
		redisRuns = append(redisRuns, s)
		t.Logf("redis RDB restart %d: PONG %.3fs, GET %.3fs", rep, s.pong, s.get)
	}

	pongs := func(ss []rstServed) []float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = s.pong
		}
		return v
	}
	gets := func(ss []rstServed) []float64 {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = s.get
		}
		return v
	}
	cleanPong, cleanGet := median(pongs(clean)), median(gets(clean))
	redisPong, redisGet := median(pongs(redisRuns)), median(gets(redisRuns))
	met := "no"
	if cleanGet < rstTargetSecs {
		met = "yes"
	}
	if n != rstFullKeys {
		met += fmt.Sprintf(" (at %s keys; the target is for 10,000,000)", thousands(float64(n)))
	}
	keys := thousands(float64(n))
	rows := [][]string{{keys, fmt.Sprintf("%.2f", cleanPong), fmt.Sprintf("%.2f", cleanGet),
		fmt.Sprintf("%.2f", unclean.pong), fmt.Sprintf("%.2f", unclean.get),
		fmt.Sprintf("%.2f", redisPong), fmt.Sprintf("%.2f", redisGet),
		benchreport.Ratio(cleanGet, redisGet), met}}
	var md strings.Builder
	fmt.Fprintf(&md, "Time from exec until the first command is served, %s string keys (\"rst:\" + 10 digits, "+
		"%d-%d random letters each), every key cold (a restarted Spillway has an empty hot tier). "+
		"Spillway --maxmemory %s, appendfsync everysec; redis-server 7.0 loading its RDB (written by SAVE). "+
		"Each start polls a fresh connection with PING every few ms until PONG (redis answers -LOADING until "+
		"its RDB is loaded), then GETs a random key and checks its value. Before each stop Spillway rewrites %s keys, a WAL tail that the start replays. "+
		"Clean: after SIGTERM, median of %d. kill -9: once (after the WAL's everysec fsync). Redis: median of %d. "+
		"The OS page cache is warm (caches are not dropped). Target: under %.0f s for 10,000,000 keys.\n\n",
		keys, rstValueMin, rstValueMax, rstMaxMemory, thousands(rstOverwrite), rstReps, rstReps, rstTargetSecs)
	md.WriteString(benchreport.Table([]string{"keys", "spillway clean: PONG s", "clean: cold GET s",
		"after kill -9: PONG s", "kill -9: cold GET s", "redis (RDB load): PONG s", "redis: GET s",
		"ratio (clean GET / redis GET)", "target < 2 s met?"}, rows))
	fmt.Fprintf(&md, "\nSpillway clean restarts: %s. After kill -9: %v. Not in the table: the first start after "+
		"the load, %v; it replayed the unflushed memtables of the loader (--maxmemory %s, so larger ones than a "+
		"%s server keeps; Pebble does not flush on close), whose directory held %.0f MB of WAL files (current and "+
		"kept for reuse). Redis: %s.\n", rstJoinNotes(clean), unclean, first, rstLoadMemory, rstMaxMemory,
		memMB(disk.wal), rstJoinNotes(redisRuns))
	fmt.Fprintf(&md, "\n%s(load: spillway %.1f s, redis %.1f s, concurrently; restart section took %v)\n",
		machineNotes(), spwLoad.Seconds(), redisLoad.Seconds(), time.Since(began).Round(time.Second))
	benchreport.Default.AddSection("Restart", md.String())

	const section = "Restart"
	wl := keys + " keys"
	benchreport.Default.Add(
		benchreport.Figure{Section: section, Workload: wl + ", first PONG", Target: "spillway", Metric: benchreport.Seconds, Value: cleanPong, Reference: "redis"},
		benchreport.Figure{Section: section, Workload: wl + ", first cold GET", Target: "spillway", Metric: benchreport.Seconds, Value: cleanGet, Reference: "redis"},
		benchreport.Figure{Section: section, Workload: wl + ", first PONG after kill -9", Target: "spillway", Metric: benchreport.Seconds, Value: unclean.pong, Reference: "redis"},
		benchreport.Figure{Section: section, Workload: wl + ", first cold GET after kill -9", Target: "spillway", Metric: benchreport.Seconds, Value: unclean.get, Reference: "redis"},
		benchreport.Figure{Section: section, Workload: wl + ", first PONG", Target: "redis", Metric: benchreport.Seconds, Value: redisPong},
		benchreport.Figure{Section: section, Workload: wl + ", first cold GET", Target: "redis", Metric: benchreport.Seconds, Value: redisGet},
	)
}

func rstJoinNotes(ss []rstServed) string {
	notes := make([]string, len(ss))
	for i, s := range ss {
		notes[i] = fmt.Sprintf("run %d: %v", i+1, s)
	}
	return strings.Join(notes, "; ")
}

// rstProc is a server process started by rstTimeStart.
type rstProc struct {
	name    string
	addr    string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

// stop sends sig and waits (bounded) for the process to exit.
func (p *rstProc) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
	case <-time.After(harness.TermTimeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		t.Errorf("%s did not exit within %v of %v", p.name, harness.TermTimeout, sig)
	}
}

// rstTimeStart execs bin with args(port) on a free port and times it: the
// seconds until a PING gets PONG and then until GET key returns want (no
// GET when key is nil). It checks DBSIZE is n. The process is killed when
// the test ends; on failure the test fails and the log is shown.
func rstTimeStart(t *testing.T, name, bin string, args func(port int) []string, n int, key, want []byte) (rstServed, *rstProc) {
	t.Helper()
	port := harness.FreePort(t)
	p := &rstProc{name: name, addr: "127.0.0.1:" + strconv.Itoa(port),
		logPath: filepath.Join(t.TempDir(), name+".log"), exited: make(chan struct{})}
	logf, err := os.Create(p.logPath)
	if err != nil {
		t.Fatalf("%s: create log: %v", name, err)
	}
	defer logf.Close()
	p.cmd = exec.Command(bin, args(port)...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	t0 := time.Now()
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: exec %s: %v", name, bin, err)
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
			t.Logf("%s log (%s):\n%s", name, p.logPath, harness.Trunc(string(b), 16<<10))
		}
	})
	s, err := rstWaitServed(p, t0, key, want, n)
	if err != nil {
		t.Errorf("%s start: %v", name, err)
		return s, p
	}
	s.ready = -1
	if name == "spillway" {
		s.scan, s.scanSecs, s.ready = rstLogTimes(p.logPath)
	}
	return s, p
}

// rstWaitServed polls p until PING answers PONG and GET key returns want,
// within rstServeBudget, and then checks DBSIZE. Times are from t0.
func rstWaitServed(p *rstProc, t0 time.Time, key, want []byte, n int) (rstServed, error) {
	var s rstServed
	deadline := t0.Add(rstServeBudget)
	var c *harness.Conn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	var last string
	for {
		select {
		case <-p.exited:
			return s, fmt.Errorf("exited before serving (%v); last: %s", p.cmd.ProcessState, last)
		default:
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("no PONG within %v; last: %s", rstServeBudget, last)
		}
		if c == nil {
			nc, err := net.DialTimeout("tcp", p.addr, 100*time.Millisecond)
			if err != nil {
				last = err.Error()
				time.Sleep(2 * time.Millisecond)
				continue
			}
			c = harness.NewConn(nc)
			c.Timeout = rstServeBudget
		}
		r := c.Do("PING")
		if r.Err != nil {
			last = r.Err.Error()
			c.Close()
			c = nil
			continue
		}
		if r.Str == "PONG" && !r.IsError() {
			s.pong = time.Since(t0).Seconds()
			break
		}
		last = r.String() // -LOADING while redis loads its RDB
		time.Sleep(2 * time.Millisecond)
	}
	s.get = s.pong
	if key != nil {
		r := c.DoBytes([]byte("GET"), key)
		s.get = time.Since(t0).Seconds()
		if r.Err != nil || r.Str != string(want) {
			return s, fmt.Errorf("GET %s = %s, want %q", key, r.String(), want)
		}
	}
	if r := c.Do("DBSIZE"); r.Int != int64(n) {
		return s, fmt.Errorf("DBSIZE = %s, want %d", r.String(), n)
	}
	return s, nil
}

// rstLogRE picks the start-up lines out of Spillway's log: the startup
// scan's and the whole start's durations, and the line saying that the key
// counts saved by a graceful shutdown made the scan unnecessary.
var rstLogRE = regexp.MustCompile(`msg="(key count done|spillway ready|key counts restored[^"]*)"(?:.*?(?:elapsed|startup)=(\S+))?`)

// rstLogTimes returns how Spillway's log at path says the keys were
// counted ("key count N s, in the background" when it ended after ready,
// "no key count (key counts restored)", or "count not logged"), the
// count's seconds before ready (0 for none), and the seconds from opening
// the store until ready (-1 when not logged).
func rstLogTimes(path string) (scan string, scanSecs, ready float64) {
	scan, ready = "count not logged", -1
	f, err := os.Open(path)
	if err != nil {
		return scan, 0, ready
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := rstLogRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if strings.HasPrefix(m[1], "key counts restored") {
			scan = "no key count (key counts restored)"
			continue
		}
		d, err := time.ParseDuration(m[2])
		if err != nil {
			continue
		}
		switch {
		case m[1] == "spillway ready":
			ready = d.Seconds()
		case ready >= 0: // logged after ready: it ran while the server served
			scan = fmt.Sprintf("key count %.2f s, in the background", d.Seconds())
		default: // a store small enough to count before serving
			scan, scanSecs = fmt.Sprintf("key count %.2f s", d.Seconds()), d.Seconds()
		}
	}
	return scan, scanSecs, ready
}
