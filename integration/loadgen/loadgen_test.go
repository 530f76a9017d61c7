package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

const (
	testKeys   = 500
	testHashes = 50
	testFields = 10
)

// startLoaded starts a redis-server holding str:0..testKeys-1 and hashes
// hash:0..testHashes-1 of fields f:0..testFields-1.
func startLoaded(t *testing.T) *harness.Server {
	t.Helper()
	s := harness.StartRedis(t)
	rc := s.Client(t)
	ctx := context.Background()
	p := rc.Pipeline()
	for i := range testKeys {
		p.Set(ctx, Format("str:%d")(i), strings.Repeat("v", 100), 0)
	}
	for i := range testHashes {
		args := make([]any, 0, 2*testFields)
		for j := range testFields {
			args = append(args, Format("f:%d")(j), "value")
		}
		p.HSet(ctx, Format("hash:%d")(i), args...)
	}
	if _, err := p.Exec(ctx); err != nil {
		t.Fatalf("load: %v", err)
	}
	return s
}

func checkResult(t *testing.T, r Result) {
	t.Helper()
	t.Log(r)
	if r.Errors != 0 || r.FirstError != "" {
		t.Errorf("errors = %d (%q), want none", r.Errors, r.FirstError)
	}
	if r.Ops <= 0 || r.Hist.TotalCount() != r.Ops {
		t.Errorf("ops = %d, histogram count %d", r.Ops, r.Hist.TotalCount())
	}
	if !(r.P50 <= r.P99 && r.P99 <= r.P999 && r.P999 <= r.Max) || r.P50 <= 0 {
		t.Errorf("percentiles out of order: p50 %v p99 %v p999 %v max %v", r.P50, r.P99, r.P999, r.Max)
	}
	if got := float64(r.Ops) / r.Elapsed.Seconds(); r.OpsPerSec != got {
		t.Errorf("ops/s = %v, want ops/elapsed = %v", r.OpsPerSec, got)
	}
}

func TestClosedLoop(t *testing.T) {
	s := startLoaded(t)
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"get-uniform", Config{Workload: Get, Keys: testKeys, Key: Format("str:%d"), Dist: DistUniform}},
		{"get-zipf", Config{Workload: Get, Keys: testKeys, Key: Format("str:%d"), Dist: DistZipf}},
		{"hget-zipf", Config{Workload: HGet, Keys: testHashes, Fields: testFields, Key: Format("hash:%d"), Dist: DistZipf}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Addr, cfg.Clients, cfg.Duration = s.Addr(), 4, 300*time.Millisecond
			began := time.Now()
			r, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, r)
			if r.Mode != "closed" || r.Late != 0 {
				t.Errorf("mode %q late %d, want closed and 0", r.Mode, r.Late)
			}
			if r.Elapsed < cfg.Duration || time.Since(began) > cfg.Duration+time.Second {
				t.Errorf("elapsed %v (call took %v) for a %v run", r.Elapsed, time.Since(began), cfg.Duration)
			}
		})
	}
}

func TestOpenLoop(t *testing.T) {
	s := startLoaded(t)
	cfg := Config{Addr: s.Addr(), Workload: HGet, Keys: testHashes, Fields: testFields,
		Key: Format("hash:%d"), Dist: DistUniform, Rate: 2000, Duration: time.Second, Clients: 8}
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r)
	if r.Ops != 2000 || r.Unsent != 0 {
		t.Errorf("ops %d unsent %d, want every one of 2000 requests", r.Ops, r.Unsent)
	}
	// A shared machine stalls the generator now and then (for tens of ms
	// under load); it must not be behind for most requests.
	if r.Late < r.GeneratorLate || r.LagP50 > time.Millisecond {
		t.Errorf("late = %d (generator %d) of %d, generator lag p50 %v", r.Late, r.GeneratorLate, r.Ops, r.LagP50)
	}
	if r.OpsPerSec < 1500 || r.OpsPerSec > 2100 {
		t.Errorf("ops/s = %.0f, want about 2000", r.OpsPerSec)
	}
}

// TestOpenLoopCountsStall pauses the server for 200ms in the middle of an
// open-loop run: every request due during the pause must count it, so the
// 90th percentile and the maximum show it, where a closed loop would only
// see it in a few requests.
func TestOpenLoopCountsStall(t *testing.T) {
	s := startLoaded(t)
	admin := s.Conn(t)
	cfg := Config{Addr: s.Addr(), Workload: Get, Keys: testKeys, Key: Format("str:%d"),
		Rate: 1000, Duration: time.Second, Clients: 16}
	go func() {
		time.Sleep(300 * time.Millisecond)
		admin.Do("CLIENT", "PAUSE", "200", "ALL")
	}()
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r)
	if r.Max < 150*time.Millisecond || r.Hist.ValueAtQuantile(90) < 20_000 {
		t.Errorf("max %v, p90 %dµs: a 200ms pause must show in 20%% of the requests", r.Max, r.Hist.ValueAtQuantile(90))
	}
	if r.Late < 100 {
		t.Errorf("late = %d: 16 workers cannot keep 1000 requests/s going through a 200ms pause", r.Late)
	}
}

func TestMissingKeys(t *testing.T) {
	s := startLoaded(t)
	for _, allow := range []bool{false, true} {
		cfg := Config{Addr: s.Addr(), Workload: Get, Keys: 10, Key: Format("nosuchkey:%d"),
			Clients: 2, Duration: 100 * time.Millisecond, AllowMissing: allow}
		r, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if allow && (r.Errors != 0 || r.Ops == 0) {
			t.Errorf("allowed: ops %d errors %d (%s), want only successes", r.Ops, r.Errors, r.FirstError)
		}
		if !allow && (r.Ops != 0 || r.Errors == 0 || !strings.Contains(r.FirstError, "nil reply")) {
			t.Errorf("not allowed: ops %d errors %d (%q), want only nil-reply errors", r.Ops, r.Errors, r.FirstError)
		}
	}
	// A wrong type is an error reply.
	cfg := Config{Addr: s.Addr(), Workload: HGet, Keys: 10, Fields: 1, Key: Format("str:%d"),
		Clients: 1, Duration: 50 * time.Millisecond}
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops != 0 || !strings.Contains(r.FirstError, "WRONGTYPE") {
		t.Errorf("HGET of a string: ops %d first error %q, want WRONGTYPE", r.Ops, r.FirstError)
	}
}

func TestContextCancel(t *testing.T) {
	s := startLoaded(t)
	for _, rate := range []float64{0, 1000} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		began := time.Now()
		r, err := Run(ctx, Config{Addr: s.Addr(), Workload: Get, Keys: testKeys, Key: Format("str:%d"),
			Rate: rate, Clients: 4, Duration: time.Minute})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(began); d > 1500*time.Millisecond {
			t.Errorf("rate %v: Run returned %v after a 200ms context", rate, d)
		}
		if r.Ops == 0 || r.Errors != 0 {
			t.Errorf("rate %v: ops %d errors %d (%s): want successes and no failures", rate, r.Ops, r.Errors, r.FirstError)
		}
		if rate > 0 && r.Unsent == 0 {
			t.Errorf("rate %v: unsent = 0 after a cancel", rate)
		}
	}
}

// TestServerGoneMidRun kills the server during a closed-loop run: Run
// returns on time with the failures counted.
func TestServerGoneMidRun(t *testing.T) {
	s := startLoaded(t)
	go func() {
		time.Sleep(100 * time.Millisecond)
		s.Kill9()
	}()
	began := time.Now()
	r, err := Run(context.Background(), Config{Addr: s.Addr(), Workload: Get, Keys: testKeys,
		Key: Format("str:%d"), Clients: 2, Duration: 400 * time.Millisecond, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops == 0 || r.Errors == 0 || r.FirstError == "" {
		t.Errorf("ops %d errors %d (%q): want successes, then failures", r.Ops, r.Errors, r.FirstError)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("Run took %v", d)
	}
}

func TestConfigErrors(t *testing.T) {
	ok := Config{Addr: "127.0.0.1:1", Workload: Get, Keys: 10, Duration: time.Second}
	for _, tc := range []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"no addr", func(c *Config) { c.Addr = "" }, "no address"},
		{"no keys", func(c *Config) { c.Keys = 0 }, "keys = 0"},
		{"hget without fields", func(c *Config) { c.Workload = HGet }, "fields = 0"},
		{"bad workload", func(c *Config) { c.Workload = 7 }, "unknown"},
		{"bad dist", func(c *Config) { c.Dist = 9 }, "unknown"},
		{"no duration", func(c *Config) { c.Duration = 0 }, "duration"},
		{"negative rate", func(c *Config) { c.Rate = -1 }, "rate"},
		{"rate too low for the duration", func(c *Config) { c.Rate = 0.5 }, "want 1 to 1e9"},
		{"negative clients", func(c *Config) { c.Clients = -1 }, "clients"},
		{"theta 1", func(c *Config) { c.Dist, c.Theta = DistZipf, 1 }, "theta"},
		{"nothing listening", func(c *Config) {}, "connect to 127.0.0.1:1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.edit(&cfg)
			_, err := Run(context.Background(), cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestReadReply(t *testing.T) {
	for _, tc := range []struct {
		in      string
		kind    byte
		msg     string
		wantErr bool
	}{
		{"+OK\r\n", '+', "OK", false},
		{"-ERR x\r\n", '-', "ERR x", false},
		{":12\r\n", ':', "", false},
		{"$3\r\nabc\r\n", '$', "", false},
		{"$0\r\n\r\n", '$', "", false},
		{"$-1\r\n", 'n', "", false},
		{"*-1\r\n", 'n', "", false},
		{"_\r\n", 'n', "", false},
		{"*2\r\n$1\r\na\r\n:1\r\n", '*', "", false},
		{"%1\r\n+a\r\n+b\r\n", '*', "", false},
		{"$3\r\nabcd\r\n", 0, "", true},
		{"$3\r\nab", 0, "", true},
		{"$x\r\n", 0, "", true},
		{"$-2\r\n", 0, "", true},
		{"?\r\n", 0, "", true},
		{"+OK\n", 0, "", true},
		{strings.Repeat("*1\r\n", 20) + ":1\r\n", 0, "", true},
	} {
		kind, msg, err := readReply(bufio.NewReader(strings.NewReader(tc.in)), 0)
		if (err != nil) != tc.wantErr || kind != tc.kind || msg != tc.msg {
			t.Errorf("readReply(%q) = %q, %q, %v; want %q, %q, error %v", tc.in, kind, msg, err, tc.kind, tc.msg, tc.wantErr)
		}
	}
}

func TestParse(t *testing.T) {
	for _, s := range []string{"get", "hget"} {
		if w, err := ParseWorkload(s); err != nil || w.String() != s {
			t.Errorf("ParseWorkload(%q) = %v, %v", s, w, err)
		}
	}
	for _, s := range []string{"uniform", "zipf"} {
		if d, err := ParseDist(s); err != nil || d.String() != s {
			t.Errorf("ParseDist(%q) = %v, %v", s, d, err)
		}
	}
	if _, err := ParseWorkload("set"); err == nil {
		t.Error("ParseWorkload(set) did not fail")
	}
	if _, err := ParseDist("normal"); err == nil {
		t.Error("ParseDist(normal) did not fail")
	}
}

// TestChildrenOutliveOpenLoops checks that open-loop runs leave the
// threads they lock alive: a child started with Pdeathsig (as the harness
// starts servers) is killed when the thread that forked it ends.
func TestChildrenOutliveOpenLoops(t *testing.T) {
	s := startLoaded(t)
	var children []*exec.Cmd
	t.Cleanup(func() {
		for _, c := range children {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	for i := range 20 {
		c := exec.Command("sleep", "60")
		c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		children = append(children, c)
		r, err := Run(context.Background(), Config{Addr: s.Addr(), Workload: Get, Keys: testKeys,
			Key: Format("str:%d"), Rate: 1000, Duration: 10 * time.Millisecond, Clients: 2})
		if err != nil || r.Errors > 0 {
			t.Fatalf("run %d: %v %s", i, err, r.FirstError)
		}
	}
	time.Sleep(50 * time.Millisecond)
	for i, c := range children {
		// A killed child stays a zombie until reaped: look at its state.
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.Process.Pid))
		if err != nil || strings.Contains(string(b), ") Z ") {
			t.Errorf("child %d (pid %d) died during the open-loop runs", i, c.Process.Pid)
		}
	}
	if !s.Running() {
		t.Error("the server died during the open-loop runs")
	}
}
