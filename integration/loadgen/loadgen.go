// Package loadgen is the benchmark's load generator: GET of string keys or
// HGET of hash fields, chosen uniformly or Zipfian, against a RESP server,
// either closed loop (C clients back to back: throughput) or open loop (a
// fixed rate: latency without coordinated omission).
//
// Requests go over plain TCP connections, one per client or worker, with a
// minimal RESP encoder and reader: no retries, no pool, little CPU beside
// the server on a shared machine. Latencies are kept in HDR histograms with
// microsecond resolution.
//
// In the open loop request i is due at t0 + i/Rate, and its latency is
// measured from that intended start, not from when it was sent: a server
// stall delays every request due during it, and all of them count it.
package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/spillway/spillway/proxy/upstream/link"
)

// Workload is the command a run issues.
type Workload int

const (
	// Get is GET Key(i).
	Get Workload = iota
	// HGet is HGET Key(i) Field(j), j uniform in [0, Fields).
	HGet
)

func (w Workload) String() string {
	switch w {
	case Get:
		return "get"
	case HGet:
		return "hget"
	}
	return "workload(" + strconv.Itoa(int(w)) + ")"
}

// ParseWorkload parses "get" or "hget".
func ParseWorkload(s string) (Workload, error) {
	switch s {
	case "get", "GET":
		return Get, nil
	case "hget", "HGET":
		return HGet, nil
	}
	return 0, fmt.Errorf("workload %q: want get or hget", s)
}

// Dist is how keys are chosen.
type Dist int

const (
	// DistUniform chooses every key with the same probability.
	DistUniform Dist = iota
	// DistZipf chooses keys with a scrambled Zipfian of exponent Theta (hot
	// keys spread over the keyspace; see Zipfian).
	DistZipf
)

func (d Dist) String() string {
	switch d {
	case DistUniform:
		return "uniform"
	case DistZipf:
		return "zipf"
	}
	return "dist(" + strconv.Itoa(int(d)) + ")"
}

// ParseDist parses "uniform" or "zipf".
func ParseDist(s string) (Dist, error) {
	switch s {
	case "uniform":
		return DistUniform, nil
	case "zipf", "zipfian":
		return DistZipf, nil
	}
	return 0, fmt.Errorf("distribution %q: want uniform or zipf", s)
}

// DefaultTheta is the Zipfian exponent used when Config.Theta is 0 (YCSB's).
const DefaultTheta = 0.99

// Defaults applied by Run to zero fields of Config.
const (
	DefaultClients       = 50
	DefaultWorkers       = 64
	DefaultTimeout       = 5 * time.Second
	DefaultLateThreshold = time.Millisecond
)

// Format returns a naming function that formats i with format, which must
// hold one integer verb (for example "str:%d" or "f:%04d").
func Format(format string) func(i int) string {
	return func(i int) string { return fmt.Sprintf(format, i) }
}

// Config describes one run. Zero fields take the defaults named beside them.
type Config struct {
	Addr     string // host:port
	Password string // sent with AUTH on each connection when not ""
	Workload Workload
	// Keys is the number of string keys (Get) or hashes (HGet): the
	// distribution ranges over [0, Keys).
	Keys int
	// Fields is the number of fields of every hash (HGet only); the field
	// of a request is uniform in [0, Fields).
	Fields int
	// Key names key or hash i (default Format("key:%d")); Field names field
	// j (default Format("f:%d")). Both must be safe for concurrent use.
	Key   func(i int) string
	Field func(j int) string
	Dist  Dist
	Theta float64 // Zipfian exponent in (0, 1); 0 means DefaultTheta
	// Rate is the open loop's request rate in requests per second; 0 runs
	// the closed loop.
	Rate float64
	// Clients is the closed loop's connection count (default
	// DefaultClients), each issuing requests back to back; in the open loop
	// it is the number of workers, each with its own connection (default
	// DefaultWorkers), so at most that many requests are in flight.
	Clients  int
	Duration time.Duration // how long requests are started for; required
	Seed     uint64        // seeds the key choice: same seed, same keys
	// AllowMissing counts a nil reply (missing key or field) as a success;
	// by default it is an error.
	AllowMissing bool
	// Timeout bounds each request, dial and AUTH (default DefaultTimeout).
	// In the open loop requests still queued Timeout after Duration are not
	// sent (counted in Unsent).
	Timeout time.Duration
	// LateThreshold is how late a request may be sent in the open loop
	// before it counts in Late (default DefaultLateThreshold).
	LateThreshold time.Duration
}

// Result is what one run measured. Latencies are of successful requests;
// in the open loop they are measured from each request's intended start.
type Result struct {
	Mode       string        `json:"mode"` // "closed" or "open"
	Workload   string        `json:"workload"`
	Dist       string        `json:"dist"`
	Rate       float64       `json:"rate,omitempty"` // open loop's target
	Clients    int           `json:"clients"`
	Ops        int64         `json:"ops"`    // successful requests
	Errors     int64         `json:"errors"` // error replies, nil replies (unless allowed), I/O errors
	FirstError string        `json:"first_error,omitempty"`
	Elapsed    time.Duration `json:"elapsed_ns"` // first request's start (intended, open loop) to the last reply
	OpsPerSec  float64       `json:"ops_per_sec"`
	P50        time.Duration `json:"p50_ns"`
	P99        time.Duration `json:"p99_ns"`
	P999       time.Duration `json:"p999_ns"`
	Max        time.Duration `json:"max_ns"`
	// Late counts open-loop requests sent more than LateThreshold after
	// their intended start, whatever the cause: the generator fell behind,
	// or every one of Clients workers was waiting on a reply (a slow or
	// stalled server). The wait is part of their latency.
	Late int64 `json:"late"`
	// GeneratorLate counts those of them the generator itself handed to
	// the workers late (CPU starvation, timer delays: not the server's
	// doing); LagP50 and LagP99 are percentiles of that hand-off delay over
	// all requests.
	GeneratorLate int64         `json:"generator_late"`
	LagP50        time.Duration `json:"lag_p50_ns,omitempty"`
	LagP99        time.Duration `json:"lag_p99_ns,omitempty"`
	// Unsent counts open-loop requests dropped because they were still
	// queued Timeout after Duration (or the context ended).
	Unsent int64 `json:"unsent,omitempty"`
	// Hist holds every recorded latency in microseconds.
	Hist *hdrhistogram.Histogram `json:"-"`
}

// String is a one-line human summary.
func (r Result) String() string {
	s := fmt.Sprintf("%s %s %s: %d ops in %v (%.0f ops/s), p50 %s p99 %s p999 %s max %s, %d errors",
		r.Mode, r.Workload, r.Dist, r.Ops, r.Elapsed.Round(time.Millisecond), r.OpsPerSec,
		ms(r.P50), ms(r.P99), ms(r.P999), ms(r.Max), r.Errors)
	if r.Mode == "open" {
		s += fmt.Sprintf(", %d sent late (%d by the generator; its lag p50 %s p99 %s)",
			r.Late, r.GeneratorLate, ms(r.LagP50), ms(r.LagP99))
		if r.Unsent > 0 {
			s += fmt.Sprintf(", %d unsent", r.Unsent)
		}
	}
	if r.FirstError != "" {
		s += " (first: " + r.FirstError + ")"
	}
	return s
}

func ms(d time.Duration) string { return strconv.FormatFloat(d.Seconds()*1000, 'f', 3, 64) + "ms" }

// histMax is the largest latency recorded exactly (µs); longer ones are
// recorded as histMax.
const histMax = int64(time.Hour / time.Microsecond)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMax, 3) }

// Run performs one run against cfg.Addr and returns what it measured. It
// returns an error for a bad Config or when a connection cannot be set up
// before the run; failures of single requests are counted in the Result.
// It returns within about Duration + 2×Timeout, soon after ctx ends (the
// requests it interrupts are not counted).
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.fill(); err != nil {
		return Result{}, err
	}
	dist, err := cfg.sampler()
	if err != nil {
		return Result{}, err
	}
	conns, err := dialAll(ctx, cfg)
	if err != nil {
		return Result{}, err
	}
	defer func() {
		for _, c := range conns {
			c.close()
		}
	}()
	res := Result{Workload: cfg.Workload.String(), Dist: cfg.Dist.String(), Clients: cfg.Clients}
	ws := make([]*worker, len(conns))
	for i, c := range conns {
		ws[i] = &worker{cfg: &cfg, conn: c, hist: newHist(), parent: ctx}
	}
	var start, end time.Time
	lag := newHist()
	if cfg.Rate == 0 {
		res.Mode = "closed"
		start, end = runClosed(ctx, &cfg, dist, ws)
	} else {
		res.Mode, res.Rate = "open", cfg.Rate
		var d dispatchStats
		start, end, d = runOpen(ctx, &cfg, dist, ws)
		res.Unsent, res.GeneratorLate, lag = d.unsent, d.late, d.lag
	}
	res.Elapsed = end.Sub(start)
	res.Hist = newHist()
	for _, w := range ws {
		res.Hist.Merge(w.hist)
		res.Ops += w.ops
		res.Errors += w.errors
		res.Late += w.late
		if res.FirstError == "" && w.firstErr != nil {
			res.FirstError = w.firstErr.Error()
		}
	}
	if res.Unsent > 0 && res.FirstError == "" {
		res.FirstError = fmt.Sprintf("%d requests not sent by the end of the run", res.Unsent)
	}
	if res.Elapsed > 0 {
		res.OpsPerSec = float64(res.Ops) / res.Elapsed.Seconds()
	}
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	res.P50 = us(res.Hist.ValueAtQuantile(50))
	res.P99 = us(res.Hist.ValueAtQuantile(99))
	res.P999 = us(res.Hist.ValueAtQuantile(99.9))
	res.Max = us(res.Hist.Max())
	if res.Mode == "open" {
		res.LagP50 = us(lag.ValueAtQuantile(50))
		res.LagP99 = us(lag.ValueAtQuantile(99))
	}
	return res, nil
}

// fill checks cfg and applies defaults.
func (cfg *Config) fill() error {
	switch {
	case cfg.Addr == "":
		return errors.New("loadgen: no address")
	case cfg.Workload != Get && cfg.Workload != HGet:
		return fmt.Errorf("loadgen: unknown %v", cfg.Workload)
	case cfg.Keys <= 0:
		return fmt.Errorf("loadgen: keys = %d, want > 0", cfg.Keys)
	case cfg.Workload == HGet && cfg.Fields <= 0:
		return fmt.Errorf("loadgen: hget with fields = %d, want > 0", cfg.Fields)
	case cfg.Duration <= 0:
		return fmt.Errorf("loadgen: duration = %v, want > 0", cfg.Duration)
	case cfg.Rate < 0 || cfg.Rate > 1e8:
		return fmt.Errorf("loadgen: rate = %v, want 0 (closed loop) or up to 1e8 requests/s", cfg.Rate)
	case cfg.Clients < 0:
		return fmt.Errorf("loadgen: clients = %d, want >= 0", cfg.Clients)
	case cfg.Timeout < 0 || cfg.LateThreshold < 0:
		return errors.New("loadgen: negative timeout or late threshold")
	}
	if n := cfg.Rate * cfg.Duration.Seconds(); cfg.Rate > 0 && (n < 1 || n > 1e9) {
		return fmt.Errorf("loadgen: rate %v for %v is %.0f requests, want 1 to 1e9", cfg.Rate, cfg.Duration, n)
	}
	if cfg.Clients == 0 {
		cfg.Clients = DefaultClients
		if cfg.Rate > 0 {
			cfg.Clients = DefaultWorkers
		}
	}
	if cfg.Clients > 100_000 {
		return fmt.Errorf("loadgen: clients = %d, want at most 100000", cfg.Clients)
	}
	if cfg.Key == nil {
		cfg.Key = Format("key:%d")
	}
	if cfg.Field == nil {
		cfg.Field = Format("f:%d")
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.LateThreshold == 0 {
		cfg.LateThreshold = DefaultLateThreshold
	}
	return nil
}

func (cfg *Config) sampler() (Sampler, error) {
	switch cfg.Dist {
	case DistUniform:
		return NewUniform(cfg.Keys)
	case DistZipf:
		theta := cfg.Theta
		if theta == 0 {
			theta = DefaultTheta
		}
		return NewZipfian(cfg.Keys, theta, true)
	}
	return nil, fmt.Errorf("loadgen: unknown %v", cfg.Dist)
}

// request is one command to send: key index, field index (HGet) and, in
// the open loop, when it is due.
type request struct {
	key, field int
	due        time.Time
}

// pick draws the next request's key and field.
func (cfg *Config) pick(dist Sampler, r *rand.Rand) request {
	q := request{key: dist.Sample(r)}
	if cfg.Workload == HGet {
		q.field = r.IntN(cfg.Fields)
	}
	return q
}

// runClosed has every worker issue requests back to back until Duration
// has passed or ctx ends. It returns when the first request was due and
// when the last reply came.
func runClosed(ctx context.Context, cfg *Config, dist Sampler, ws []*worker) (time.Time, time.Time) {
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	var wg sync.WaitGroup
	for i, w := range ws {
		r := rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
		wg.Go(func() {
			stop := w.watch(ctx)
			defer stop()
			for ctx.Err() == nil {
				sent := time.Now()
				if !sent.Before(deadline) {
					return
				}
				w.do(ctx, cfg.pick(dist, r), sent)
			}
		})
	}
	wg.Wait()
	return start, time.Now()
}

// dispatchStats is what the open loop's dispatcher counted.
type dispatchStats struct {
	unsent, late int64
	lag          *hdrhistogram.Histogram // µs from due to queued
}

// runOpen dispatches Rate×Duration requests, request i due at start +
// i/Rate, to the workers through a queue, and returns when the first was
// due, when the last reply came, and the dispatcher's counts.
func runOpen(ctx context.Context, cfg *Config, dist Sampler, ws []*worker) (time.Time, time.Time, dispatchStats) {
	total := int64(cfg.Rate * cfg.Duration.Seconds())
	interval := float64(time.Second) / cfg.Rate
	// Requests not sent by then are dropped: a stalled server cannot keep
	// the run going for long.
	start := time.Now().Add(time.Millisecond)
	cutoff := start.Add(cfg.Duration + cfg.Timeout)
	runCtx, cancel := context.WithDeadline(ctx, cutoff)
	defer cancel()

	queue := make(chan request, min(total, 1<<16))
	var unsent atomic.Int64
	stats := dispatchStats{lag: newHist()}
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			stop := w.watch(runCtx)
			defer stop()
			for q := range queue {
				if runCtx.Err() != nil {
					unsent.Add(1)
					continue
				}
				if time.Since(q.due) > cfg.LateThreshold {
					w.late++
				}
				w.do(runCtx, q, q.due)
			}
		})
	}

	// The dispatcher runs on its own OS thread with a fine timer slack, and
	// sleeps with nanosleep: Go's timers can wake a millisecond late, which
	// would be counted in every latency.
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(queue)
		// The thread is unlocked (not ended) afterwards: a child process
		// it started with Pdeathsig, such as a test's server, would be
		// killed with it.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer setTimerSlack(1000)()
		r := rand.New(rand.NewPCG(cfg.Seed, 0))
		var i int64
		defer func() { unsent.Add(total - i) }()
		for ; i < total; i++ {
			q := cfg.pick(dist, r)
			q.due = start.Add(time.Duration(float64(i) * interval))
			if !sleepUntil(runCtx, q.due) {
				return
			}
			lag := time.Since(q.due)
			if lag > cfg.LateThreshold {
				stats.late++
			}
			_ = stats.lag.RecordValue(min(lag.Microseconds(), histMax))
			select {
			case queue <- q:
			case <-runCtx.Done():
				return
			}
		}
	}()
	<-done
	wg.Wait()
	stats.unsent = unsent.Load()
	return start, time.Now(), stats
}

// sleepUntil sleeps until t with nanosleep, waking at least every 10ms to
// check ctx. It reports false when ctx ended first.
func sleepUntil(ctx context.Context, t time.Time) bool {
	for {
		d := time.Until(t)
		if d <= 0 {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		ts := syscall.NsecToTimespec(int64(min(d, 10*time.Millisecond)))
		_ = syscall.Nanosleep(&ts, nil) // EINTR: the loop sleeps the rest
	}
}

// setTimerSlack asks Linux to wake the calling thread's sleeps within ns of
// their end (the default is 50µs) and returns a func restoring the previous
// slack; the caller must stay locked to its thread in between. Failure
// only costs precision.
func setTimerSlack(ns uintptr) (restore func()) {
	const prSetTimerslack, prGetTimerslack = 29, 30
	old, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerslack, 0, 0)
	if errno != 0 {
		return func() {}
	}
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, ns, 0)
	return func() { _, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, old, 0) }
}

// worker owns one connection and its counters; only its goroutine uses it.
type worker struct {
	cfg      *Config
	parent   context.Context // Run's: once it ends, failures are not counted
	conn     *conn
	hist     *hdrhistogram.Histogram
	ops      int64
	errors   int64
	late     int64 // open loop: requests sent late
	firstErr error
	buf      []byte
}

// watch makes the connection's pending I/O fail at once when ctx ends; call
// the returned func when done.
func (w *worker) watch(ctx context.Context) func() {
	stop := context.AfterFunc(ctx, func() { w.conn.interrupt() })
	return func() { stop() }
}

// do sends q, waits for its reply and records the latency from since.
func (w *worker) do(ctx context.Context, q request, since time.Time) {
	if err := w.send(ctx, q); err != nil {
		if w.parent.Err() == nil { // not interrupted by the caller
			w.fail(err)
		}
		return
	}
	w.ops++
	v := max(time.Since(since).Microseconds(), 0)
	_ = w.hist.RecordValue(min(v, histMax)) // in range by construction
}

func (w *worker) fail(err error) {
	w.errors++
	if w.firstErr == nil {
		w.firstErr = err
	}
}

// send performs one request, reconnecting first when the last one broke
// the connection. Missing keys are errors unless allowed.
func (w *worker) send(ctx context.Context, q request) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if w.conn.broken {
		if err := w.conn.redial(ctx); err != nil {
			// Do not spin on a server that is gone.
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
			return err
		}
	}
	key := w.cfg.Key(q.key)
	var field string
	if w.cfg.Workload == HGet {
		field = w.cfg.Field(q.field)
		w.buf = link.AppendCommandStrings(w.buf[:0], []string{"HGET", key, field})
	} else {
		w.buf = link.AppendCommandStrings(w.buf[:0], []string{"GET", key})
	}
	what := func() string { // the request, for error messages
		if w.cfg.Workload == HGet {
			return "HGET " + key + " " + field
		}
		return "GET " + key
	}
	kind, msg, err := w.conn.roundTrip(w.buf)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", what(), err)
	case kind == '-':
		return fmt.Errorf("%s: error reply: %s", what(), msg)
	case kind == 'n' && !w.cfg.AllowMissing:
		return fmt.Errorf("%s: nil reply (missing key or field)", what())
	}
	return nil
}

// conn is one RESP connection.
type conn struct {
	cfg     *Config
	c       net.Conn
	r       *bufio.Reader
	broken  bool
	mu      sync.Mutex // guards c against interrupt during redial
	stopped bool
}

// dialAll opens cfg.Clients connections, or returns the first failure.
func dialAll(ctx context.Context, cfg Config) ([]*conn, error) {
	conns := make([]*conn, cfg.Clients)
	errs := make([]error, cfg.Clients)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range conns {
		conns[i] = &conn{cfg: &cfg}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = conns[i].redial(ctx)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range conns {
			c.close()
		}
		return nil, fmt.Errorf("loadgen: connect to %s: %w", cfg.Addr, firstErr(errs))
	}
	return conns, nil
}

func firstErr(errs []error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// redial replaces the connection with a new one (authenticated when a
// password is configured).
func (c *conn) redial(ctx context.Context) error {
	c.close()
	d := net.Dialer{Timeout: c.cfg.Timeout}
	nc, err := d.DialContext(ctx, "tcp", c.cfg.Addr)
	if err != nil {
		return fmt.Errorf("dial %s: %w", c.cfg.Addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c.mu.Lock()
	c.c, c.r, c.broken = nc, bufio.NewReaderSize(nc, 64<<10), false
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		c.interrupt()
	}
	if c.cfg.Password != "" {
		kind, msg, err := c.roundTrip(link.AppendCommandStrings(nil, []string{"AUTH", c.cfg.Password}))
		if err == nil && kind != '+' {
			err = fmt.Errorf("AUTH answered %q", msg)
		}
		if err != nil {
			c.close()
			return fmt.Errorf("auth on %s: %w", c.cfg.Addr, err)
		}
	}
	return nil
}

// interrupt makes pending and later I/O fail at once (context ended).
func (c *conn) interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if c.c != nil {
		_ = c.c.SetDeadline(time.Unix(1, 0))
	}
}

func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c != nil {
		_ = c.c.Close()
		c.c, c.r = nil, nil
	}
	c.broken = true
}

// roundTrip writes cmd and reads one reply. kind is the reply's type byte
// ('+', '-', ':', '$', '*', ...) or 'n' for a nil reply; msg is the text of
// simple and error replies. An I/O or protocol error marks the connection
// broken.
func (c *conn) roundTrip(cmd []byte) (kind byte, msg string, err error) {
	if c.c == nil {
		c.broken = true
		return 0, "", errors.New("not connected")
	}
	c.mu.Lock()
	if !c.stopped {
		_ = c.c.SetDeadline(time.Now().Add(c.cfg.Timeout))
	}
	c.mu.Unlock()
	if _, err := c.c.Write(cmd); err != nil {
		c.broken = true
		return 0, "", fmt.Errorf("write: %w", err)
	}
	kind, msg, err = readReply(c.r, 0)
	if err != nil {
		c.broken = true
		return 0, "", fmt.Errorf("read reply: %w", err)
	}
	return kind, msg, nil
}

// maxReplyDepth bounds nesting in aggregate replies.
const maxReplyDepth = 8

// maxBulk bounds a bulk reply's announced length (Redis's proto-max-bulk-len).
const maxBulk = 512 << 20

// readReply reads one RESP2/RESP3 reply, discarding bulk payloads. See
// conn.roundTrip for kind and msg.
func readReply(r *bufio.Reader, depth int) (kind byte, msg string, err error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return 0, "", errors.New("reply line over 64 KB")
		}
		return 0, "", err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return 0, "", fmt.Errorf("malformed reply line %q", line)
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+', '-':
		return kind, string(body), nil
	case ':', ',', '#', '(':
		return kind, "", nil
	case '_':
		return 'n', "", nil
	case '$', '!', '=':
		n, err := strconv.Atoi(string(body))
		if err != nil || n < -1 || n > maxBulk {
			return 0, "", fmt.Errorf("bad bulk length %q", body)
		}
		if n == -1 {
			return 'n', "", nil
		}
		if _, err := r.Discard(n); err != nil {
			return 0, "", fmt.Errorf("bulk payload: %w", noEOF(err))
		}
		crlf, err := r.Peek(2)
		if err != nil {
			return 0, "", fmt.Errorf("bulk payload: %w", noEOF(err))
		}
		if crlf[0] != '\r' || crlf[1] != '\n' {
			return 0, "", errors.New("bulk payload not followed by CRLF")
		}
		_, _ = r.Discard(2)
		if kind == '!' {
			return '-', "(blob error)", nil
		}
		return '$', "", nil
	case '*', '%', '~', '>':
		n, err := strconv.Atoi(string(body))
		if err != nil || n < -1 || n > 1<<24 {
			return 0, "", fmt.Errorf("bad aggregate length %q", body)
		}
		if n == -1 {
			return 'n', "", nil
		}
		if depth >= maxReplyDepth {
			return 0, "", errors.New("reply nested too deep")
		}
		if kind == '%' {
			n *= 2
		}
		for range n {
			if _, _, err := readReply(r, depth+1); err != nil {
				return 0, "", err
			}
		}
		return '*', "", nil
	}
	return 0, "", fmt.Errorf("unknown reply type %q", kind)
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
