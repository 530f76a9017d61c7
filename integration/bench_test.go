package integration

// The benchmark run of `make bench`: redis-benchmark and redis-cli --pipe
// against a reference redis-server and Spillway started side by side, and
// the helpers every bench_*_test.go file shares (the hot-path and proxy
// sections are in bench_hot_test.go). It measures and prints tables; it
// never asserts on time. It fails only when a tool or server does not work
// (an error reply, a wrong key count).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/benchreport"
	"github.com/spillway/spillway/integration/harness"
)

const (
	benchKeys     = 200_000 // dataset size and redis-benchmark -r keyspace
	benchValueMin = 100     // dataset value sizes are uniform in [min, max]
	benchValueMax = 1000    //
	benchDataSize = 512     // redis-benchmark -d (about the dataset's mean)
	benchClients  = 50      // redis-benchmark -c
	benchReps     = 3       // measurements per cell; the median is reported
	loadKeys      = 100_000 // redis-cli --pipe load: keys of loadValue bytes
	loadValue     = 1024
	// benchCollFields is the field count of myhash and the member count of
	// myset, the keys redis-benchmark's HSET and SADD tests write, and their
	// -r: the hash (about 30 MB) fits in an eighth of Spillway's budget, so
	// it stays in the hot tier. (myzset has zsetBenchMembers.)
	benchCollFields = 50_000
	benchCollBatch  = 1000 // fields per HSET / members per SADD or ZADD in load files
)

// benchRunTime is how long each measured redis-benchmark run is sized to
// take; SPILLWAY_BENCH_RUNTIME (a Go duration) overrides it for a smoke run.
var benchRunTime = 1500 * time.Millisecond

const benchSkip = "benchmark, not a test: run `make bench` " +
	"(or SPILLWAY_BENCH=1 go test -count=1 -run TestBench -v -timeout 15m ./integration/)"

// benchCmd is one redis-benchmark run: a -t test or a custom command.
type benchCmd struct {
	label    string
	args     []string
	keyspace int      // redis-benchmark -r
	skip     []string // names of the targets it is not run against
}

var benchPipelines = []int{1, 16}

// benchTarget is one server column of the throughput table.
type benchTarget struct {
	name string // column header
	addr string
	desc string // how it was started, for the legend
}

// runs reports whether command c is measured against the target.
func (tg benchTarget) runs(c benchCmd) bool { return !slices.Contains(c.skip, tg.name) }

// benchSample is one redis-benchmark result line.
type benchSample struct{ rps, p50, p99 float64 }

type cellKey struct {
	target, cmd string
	pipeline    int
}

// targetLegend is the Markdown list of a section's targets and how each
// was started.
func targetLegend(targets []benchTarget) string {
	var b strings.Builder
	b.WriteString("Targets, each started by the benchmark on loopback:\n\n")
	for _, tg := range targets {
		fmt.Fprintf(&b, "- `%s`: %s\n", tg.name, tg.desc)
	}
	return b.String()
}

// needBench skips t unless SPILLWAY_BENCH=1 and checks the tools exist.
func needBench(t *testing.T) {
	t.Helper()
	if os.Getenv("SPILLWAY_BENCH") != "1" {
		t.Skip(benchSkip)
	}
	if v := os.Getenv("SPILLWAY_BENCH_RUNTIME"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("SPILLWAY_BENCH_RUNTIME=%q: want a positive duration such as 500ms", v)
		}
		benchRunTime = d
	}
	for _, tool := range []string{"redis-server", "redis-cli", "redis-benchmark"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found on PATH: run `make deps` (apt-get install redis-server redis-tools)", tool)
		}
	}
}

// TestBenchColdCollections measures HGET and SISMEMBER on a hash and a set
// of a million fields each, cold in a Spillway with a small budget and in
// memory in redis-server (see bench_coll_test.go).
func TestBenchColdCollections(t *testing.T) {
	needBench(t)
	benchColdCollections(t)
}

// TestBenchLoad times `redis-cli --pipe` loading loadKeys keys of loadValue
// bytes into a fresh server of each kind, and reports its peak RSS.
func TestBenchLoad(t *testing.T) {
	needBench(t)
	began := time.Now()
	file := filepath.Join(t.TempDir(), "load.resp")
	if err := writeLoadFile(file); err != nil {
		t.Fatal(err)
	}
	type config struct {
		name  string
		cmd   string // how it is started, for the legend
		start func(t *testing.T) (addr string, pid func() int)
	}
	// The harness starts redis-server with --save '' --appendonly no
	// before args, spillway with no option of these.
	redisCfg := func(name string, args ...string) config {
		cmd := "redis-server --save ''"
		if !slices.Contains(args, "--appendonly") {
			cmd += " --appendonly no"
		}
		return config{name, strings.Join(append([]string{cmd}, args...), " "), func(t *testing.T) (string, func() int) {
			s := harness.StartRedis(t, args...)
			return s.Addr(), s.Pid
		}}
	}
	spwCfg := func(name string, args ...string) config {
		return config{name, strings.Join(append([]string{"spillway"}, args...), " "), func(t *testing.T) (string, func() int) {
			s := harness.StartSpillway(t, "", args...)
			return s.Addr(), s.Pid
		}}
	}
	configs := []config{
		redisCfg("redis (no persistence)"),
		redisCfg("redis AOF everysec", "--appendonly", "yes", "--appendfsync", "everysec"),
		redisCfg("redis AOF always", "--appendonly", "yes", "--appendfsync", "always"),
		spwCfg("spillway everysec 512mb", "--maxmemory", "512mb", "--appendfsync", "everysec"),
		spwCfg("spillway always 512mb", "--maxmemory", "512mb", "--appendfsync", "always"),
		spwCfg("spillway everysec 32mb", "--maxmemory", "32mb", "--appendfsync", "everysec"),
	}
	type result struct{ secs, rssMB []float64 }
	results := make([]result, len(configs))
	for rep := 0; rep < benchReps; rep++ {
		for i, cfg := range configs {
			// A subtest per load, so the server and its files are gone
			// before the next one starts.
			t.Run(fmt.Sprintf("rep%d/%s", rep+1, strings.ReplaceAll(cfg.name, " ", "_")), func(t *testing.T) {
				addr, pid := cfg.start(t)
				d, err := pipeLoad(addr, file, loadKeys)
				if err != nil {
					t.Fatalf("load: %v", err)
				}
				peak, err := harness.ProcPeakRSS(pid())
				if err != nil {
					t.Fatal(err)
				}
				c := harness.MustDial(t, addr)
				if r := c.Do("DBSIZE"); r.Int != loadKeys {
					t.Fatalf("DBSIZE after load = %s, want %d", r.String(), loadKeys)
				}
				results[i].secs = append(results[i].secs, d.Seconds())
				results[i].rssMB = append(results[i].rssMB, float64(peak)/(1<<20))
			})
		}
	}
	if t.Failed() {
		return
	}
	title := fmt.Sprintf("Bulk load: redis-cli --pipe, %d SETs of %d-byte values (%.0f MB of data), fresh server each run, median of %d",
		loadKeys, loadValue, float64(loadKeys*loadValue)/(1<<20), benchReps)
	var md strings.Builder
	md.WriteString("Servers, each started by the benchmark on loopback, a fresh one (empty, in a new directory) for every run:\n\n")
	for _, cfg := range configs {
		fmt.Fprintf(&md, "- `%s`: `%s`\n", cfg.name, cfg.cmd)
	}
	fmt.Fprintf(&md, "\nEach run: `redis-cli --pipe` sends the %s SETs (keys `load:N`, random letters) and waits for every reply; "+
		"the %d runs alternate between the servers. load s: its wall time; keys/s: the keys over that time; time vs redis: "+
		"the load time divided by `%s`'s; peak RSS: the server's VmHWM after the load.\n\n",
		thousands(loadKeys), benchReps, configs[0].name)
	md.WriteString(strings.TrimSpace(machineNotes()) + "\n\n")
	base := median(results[0].secs)
	var rows [][]string
	var figs []benchreport.Figure
	const workload = "redis-cli --pipe SET"
	for i, cfg := range configs {
		s, rss := median(results[i].secs), median(results[i].rssMB)
		rows = append(rows, []string{cfg.name, fmt.Sprintf("%.2f", s), thousands(float64(loadKeys) / s),
			benchreport.Ratio(s, base), fmt.Sprintf("%.0f", rss)})
		ref := configs[0].name
		if i == 0 {
			ref = ""
		}
		for _, f := range []struct {
			metric string
			v      float64
		}{{benchreport.Seconds, s}, {benchreport.OpsPerSec, float64(loadKeys) / s}, {benchreport.RSSMB, rss}} {
			figs = append(figs, benchreport.Figure{Section: title, Workload: workload, Target: cfg.name, Metric: f.metric,
				Value: f.v, Reference: ref})
		}
	}
	md.WriteString(benchreport.Table([]string{"server", "load s", "keys/s", "time vs redis", "peak RSS MB"}, rows))
	fmt.Fprintf(&md, "\n(Section took %v.)\n", time.Since(began).Round(time.Second))
	benchreport.Default.Add(figs...)
	benchreport.Default.AddSection(title, md.String())
}

// startTwemproxy starts nutcracker in front of backend when it is
// installed; otherwise it says so and returns nil.
func startTwemproxy(t *testing.T, backend string) *harness.Proc {
	bin, err := exec.LookPath("nutcracker")
	if err != nil {
		fmt.Println("twemproxy: skipped, nutcracker not on PATH (install it: apt-get install nutcracker)")
		return nil
	}
	addr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	conf := filepath.Join(t.TempDir(), "nutcracker.yml")
	yml := fmt.Sprintf("bench:\n  listen: %s\n  hash: fnv1a_64\n  distribution: ketama\n"+
		"  redis: true\n  server_connections: 1\n  servers:\n   - %s:1\n", addr, backend)
	if err := os.WriteFile(conf, []byte(yml), 0o644); err != nil {
		t.Fatalf("write nutcracker config: %v", err)
	}
	stats := strconv.Itoa(harness.FreePort(t))
	return harness.StartProc(t, "nutcracker", addr, bin, "-c", conf, "-s", stats, "-a", "127.0.0.1")
}

// calibrate returns the request count (-n) that makes one run of the
// command take about benchRunTime, from runs of growing size until one takes
// an eighth of it and sends at least 10 requests per client (a smaller run
// mostly measures the clients connecting).
func calibrate(addr string, c benchCmd, pipeline int) (int, error) {
	goal := benchRunTime.Seconds()
	for n := 100 * pipeline; ; n *= 4 {
		s, err := runRedisBenchmark(addr, c, pipeline, n)
		if err != nil {
			return 0, err
		}
		if (float64(n)/s.rps >= goal/8 && n >= 10*benchClients*pipeline) || n >= 1_000_000 {
			return min(max(int(s.rps*goal)/100*100, 2*benchClients*pipeline), 20_000_000), nil
		}
	}
}

// runRedisBenchmark runs redis-benchmark once (c.args: "-t NAME" or a
// custom command) and parses its --csv line.
func runRedisBenchmark(addr string, c benchCmd, pipeline, n int) (benchSample, error) {
	host, port, _ := strings.Cut(addr, ":")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	test := c.args
	args := []string{"-h", host, "-p", port, "-c", strconv.Itoa(benchClients), "-n", strconv.Itoa(n),
		"-r", strconv.Itoa(c.keyspace), "-d", strconv.Itoa(benchDataSize), "-P", strconv.Itoa(pipeline), "--csv"}
	cmd := exec.CommandContext(ctx, "redis-benchmark", append(args, test...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return benchSample{}, fmt.Errorf("redis-benchmark %q: %w: %s%s", test, err, out, stderr.Bytes())
	}
	rows, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		return benchSample{}, fmt.Errorf("redis-benchmark %q: parse csv: %w: %s", test, err, out)
	}
	var data [][]string
	for _, r := range rows {
		if len(r) > 0 && r[0] != "test" {
			data = append(data, r)
		}
	}
	if len(data) != 1 || len(data[0]) != 8 {
		return benchSample{}, fmt.Errorf("redis-benchmark %q: want one 8-field csv row, got %q (stderr %q)", test, out, stderr.Bytes())
	}
	var f [3]float64
	for i, col := range []int{1, 4, 6} { // rps, p50, p99
		if f[i], err = strconv.ParseFloat(data[0][col], 64); err != nil {
			return benchSample{}, fmt.Errorf("redis-benchmark %q: field %d: %w", test, col, err)
		}
	}
	return benchSample{rps: f[0], p50: f[1], p99: f[2]}, nil
}

// pipeLoad feeds file to `redis-cli --pipe` and returns the wall time, or an
// error unless every one of want replies came back without error.
func pipeLoad(addr, file string, want int) (time.Duration, error) {
	host, port, _ := strings.Cut(addr, ":")
	f, err := os.Open(file)
	if err != nil {
		return 0, fmt.Errorf("pipe load: %w", err)
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "redis-cli", "-h", host, "-p", port, "--pipe")
	cmd.Stdin = f
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("redis-cli --pipe to %s: %w: %s", addr, err, out)
	}
	if wantLine := fmt.Sprintf("errors: 0, replies: %d", want); !bytes.Contains(out, []byte(wantLine)) {
		return 0, fmt.Errorf("redis-cli --pipe to %s: want %q in output: %s", addr, wantLine, out)
	}
	return d, nil
}

// datasetCommands is the number of commands writeDataset writes, and
// datasetKeys the number of keys they create.
const (
	datasetCommands = 2*benchKeys + 2*benchCollFields/benchCollBatch + (zsetBenchMembers+benchCollBatch-1)/benchCollBatch
	datasetKeys     = 2*benchKeys + 3 // and myhash, myset, myzset
)

// writeDataset writes, with a fixed seed, redis-benchmark's key names for
// the whole -r keyspace: SETs of key:%012d to values of
// benchValueMin..benchValueMax random letters, then counter:%012d = 0 (so
// that INCR measures increments, not key creation), then HSETs filling
// myhash with element:%012d fields of benchDataSize-byte values (the size
// redis-benchmark's HSET writes, so the hash does not grow) and SADDs
// filling myset with element:%012d, benchCollBatch at a time, then ZADDs
// filling myzset with zsetBenchMembers members element:%012d scored i (a
// sorted set Spillway holds in memory; see bench_zset_test.go).
func writeDataset(path string) error {
	r := rand.New(rand.NewPCG(1, 2))
	pool := randomLetters(r, 1<<20)
	zero := []byte("0")
	return writeRESP(path, func(w *respWriter) {
		for i := 0; i < benchKeys; i++ {
			n := benchValueMin + r.IntN(benchValueMax-benchValueMin+1)
			off := r.IntN(len(pool) - n)
			w.command([]byte("SET"), fmt.Appendf(nil, "key:%012d", i), pool[off:off+n])
		}
		for i := 0; i < benchKeys; i++ {
			w.command([]byte("SET"), fmt.Appendf(nil, "counter:%012d", i), zero)
		}
		writeCollBatches(w, "myhash", "myset", "element:%012d", "element:%012d", benchCollFields,
			func(int) []byte {
				off := r.IntN(len(pool) - benchDataSize)
				return pool[off : off+benchDataSize]
			})
		args := make([][]byte, 0, 2+2*benchCollBatch)
		for lo := 0; lo < zsetBenchMembers; lo += benchCollBatch {
			args = append(args[:0], []byte("ZADD"), []byte("myzset"))
			for i := lo; i < min(lo+benchCollBatch, zsetBenchMembers); i++ {
				args = append(args, strconv.AppendInt(nil, int64(i), 10), fmt.Appendf(nil, "element:%012d", i))
			}
			w.command(args...)
		}
	})
}

// writeCollBatches writes HSETs filling hash with fields fieldFmt % i (i
// below n) set to value(i), then SADDs filling set with members memberFmt %
// i, benchCollBatch fields or members a command.
func writeCollBatches(w *respWriter, hash, set, fieldFmt, memberFmt string, n int, value func(i int) []byte) {
	args := make([][]byte, 0, 2+2*benchCollBatch)
	for lo := 0; lo < n; lo += benchCollBatch {
		args = append(args[:0], []byte("HSET"), []byte(hash))
		for i := lo; i < min(lo+benchCollBatch, n); i++ {
			args = append(args, fmt.Appendf(nil, fieldFmt, i), value(i))
		}
		w.command(args...)
	}
	for lo := 0; lo < n; lo += benchCollBatch {
		args = append(args[:0], []byte("SADD"), []byte(set))
		for i := lo; i < min(lo+benchCollBatch, n); i++ {
			args = append(args, fmt.Appendf(nil, memberFmt, i))
		}
		w.command(args...)
	}
}

// writeLoadFile writes loadKeys SETs of loadValue-byte values.
func writeLoadFile(path string) error {
	r := rand.New(rand.NewPCG(3, 4))
	pool := randomLetters(r, 1<<20)
	return writeRESP(path, func(w *respWriter) {
		for i := 0; i < loadKeys; i++ {
			off := r.IntN(len(pool) - loadValue)
			w.command([]byte("SET"), fmt.Appendf(nil, "load:%08d", i), pool[off:off+loadValue])
		}
	})
}

func randomLetters(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(r.IntN(26))
	}
	return b
}

// respWriter buffers RESP-encoded commands on their way to a file.
type respWriter struct {
	w   *bufio.Writer
	num []byte
}

// command writes args as one RESP array of bulk strings.
func (w *respWriter) command(args ...[]byte) {
	w.header('*', len(args))
	for _, a := range args {
		w.header('$', len(a))
		w.w.Write(a)
		w.w.WriteString("\r\n")
	}
}

func (w *respWriter) header(kind byte, n int) {
	w.num = strconv.AppendInt(append(w.num[:0], kind), int64(n), 10)
	w.w.Write(append(w.num, '\r', '\n'))
}

// writeRESP creates path and writes the commands emit produces to it.
func writeRESP(path string, emit func(w *respWriter)) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	w := &respWriter{w: bufio.NewWriterSize(f, 1<<20)}
	emit(w)
	err = w.w.Flush() // a bufio.Writer keeps its first error
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// spreadNote summarises run-to-run noise: (max-min)/median of ops/s per cell.
func spreadNote(samples map[cellKey][]benchSample) string {
	var spreads []float64
	worst, worstKey := 0.0, cellKey{}
	for k, ss := range samples {
		v := make([]float64, len(ss))
		for i, s := range ss {
			v[i] = s.rps
		}
		m := median(v)
		if m == 0 {
			continue
		}
		sp := (slices.Max(v) - slices.Min(v)) / m
		spreads = append(spreads, sp)
		if sp > worst {
			worst, worstKey = sp, k
		}
	}
	return fmt.Sprintf("(max-min)/median of ops/s over the %d runs: median cell %.0f%%, worst %.0f%% (%s %s -P %d)",
		benchReps, 100*median(spreads), 100*worst, worstKey.target, worstKey.cmd, worstKey.pipeline)
}

// tieringInfo returns the fields of a Spillway server's INFO tiering.
func tieringInfo(t *testing.T, s *harness.Server) map[string]string {
	info := s.Conn(t).Do("INFO", "tiering").Str
	m := map[string]string{}
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}

// machineNotes describes where the numbers come from.
func machineNotes() string {
	ver, _ := exec.Command("redis-server", "--version").Output()
	load, _ := os.ReadFile("/proc/loadavg")
	return fmt.Sprintf("machine: %d CPUs (shared; redis-benchmark/redis-cli run on the same cores), %s/%s, %s; %s; loadavg %s\n",
		runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), bytes.TrimSpace(ver),
		strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " "))
}

func medianOf(ss []benchSample, f func(benchSample) float64) float64 {
	v := make([]float64, len(ss))
	for i, s := range ss {
		v[i] = f(s)
	}
	return median(v)
}

// median returns the middle value (mean of the two middle ones for an even
// count), 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// thousands formats v rounded to an integer with thousands separators.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
