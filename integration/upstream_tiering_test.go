package integration

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway/spillway/integration/harness"
)

// End-to-end tests of upstream mode: Spillway in front of a real
// redis-server keeps the upstream's used_memory under --maxmemory by
// demoting cold keys into its store, and loses or doubles no key under a
// bulk load, writers racing demotions, an upstream crash, or its own
// kill -9. Helpers are prefixed ut.

const utMB = 1 << 20

// utStartSpillway starts Spillway in upstream mode in front of up, with
// its data in dir ("" for a fresh one) and the given budget in bytes.
func utStartSpillway(t *testing.T, up *harness.Server, dir string, budget int64, extra ...string) *harness.Server {
	t.Helper()
	args := append([]string{"--upstream", "redis://" + up.Addr(),
		"--maxmemory", strconv.FormatInt(budget, 10)}, extra...)
	return harness.StartSpillway(t, dir, args...)
}

// utDial dials addr with a transport timeout; unlike MustDial, Do never
// fails the test, so it may be used from any goroutine.
func utDial(t *testing.T, addr string, timeout time.Duration) *harness.Conn {
	t.Helper()
	c, err := harness.Dial(addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	c.Timeout = timeout
	t.Cleanup(func() { c.Close() })
	return c
}

// utGoRedis returns a go-redis client for addr that never retries (a
// retried INCR could apply twice) and gives up on a reply after timeout.
func utGoRedis(t *testing.T, addr string, timeout time.Duration) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true,
		ReadTimeout: timeout, WriteTimeout: timeout, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// utInfoInt returns an integer field of INFO section on c.
func utInfoInt(c *harness.Conn, section, field string) (int64, error) {
	m, err := harness.Info(c, section)
	if err != nil {
		return 0, err
	}
	v, ok := m[field]
	if !ok {
		return 0, fmt.Errorf("INFO %s has no field %s", section, field)
	}
	return strconv.ParseInt(v, 10, 64)
}

// utSettle waits (up to timeout) until the demoter is idle: the upstream
// at or under its budget as the demoter last saw it, no throttling, and the
// demotions counter unchanged over half a second. DBSIZE counts a key
// twice while its demotion is under way, so exact counts wait for this.
func utSettle(t *testing.T, c *harness.Conn, timeout time.Duration) {
	t.Helper()
	last, stable := int64(-1), 0
	var m map[string]string
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		m = utTiering(t, c)
		d := utInt(t, m, "demotions")
		if d == last && m["throttling"] == "0" && utInt(t, m, "upstream_used_memory") <= utInt(t, m, "maxmemory") {
			if stable++; stable >= 5 {
				return
			}
		} else {
			stable = 0
		}
		last = d
	}
	t.Fatalf("demoter still busy %v later: demotions=%s upstream_used_memory=%s maxmemory=%s throttling=%s",
		timeout, m["demotions"], m["upstream_used_memory"], m["maxmemory"], m["throttling"])
}

// utTiering returns INFO tiering through Spillway, failing the test on error.
func utTiering(t *testing.T, c *harness.Conn) map[string]string {
	t.Helper()
	m, err := harness.Info(c, "tiering")
	if err != nil {
		t.Fatalf("INFO tiering: %v", err)
	}
	return m
}

func utInt(t *testing.T, m map[string]string, field string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(m[field], 10, 64)
	if err != nil {
		t.Fatalf("INFO field %s = %q: %v", field, m[field], err)
	}
	return n
}

// utDBSize returns DBSIZE on c.
func utDBSize(t *testing.T, c *harness.Conn) int64 {
	t.Helper()
	r := c.Do("DBSIZE")
	if r.Type != ':' {
		t.Fatalf("DBSIZE: %s", r.String())
	}
	return r.Int
}

func utMiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/utMB) }

// utValue is the value of key number i: size bytes, distinct per key.
func utValue(i, size int) string {
	unit := "v" + strconv.Itoa(i) + ":" + strconv.Itoa(i*7919%100003) + "|"
	return strings.Repeat(unit, size/len(unit)+1)[:size]
}

// utMemSampler samples the upstream's used_memory (INFO memory, read from
// the redis-server directly) at a fixed interval until stop.
type utMemSampler struct {
	stop, done chan struct{}

	mu      sync.Mutex
	samples []utMemSample
	err     error
}

type utMemSample struct {
	at   time.Time
	used int64
}

func utSampleMemory(t *testing.T, up *harness.Server, every time.Duration) *utMemSampler {
	c := utDial(t, up.Addr(), 10*time.Second)
	s := &utMemSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tk := time.NewTicker(every)
		defer tk.Stop()
		for {
			used, err := utInfoInt(c, "memory", "used_memory")
			s.mu.Lock()
			if err != nil && s.err == nil {
				s.err = err
			}
			if err == nil {
				s.samples = append(s.samples, utMemSample{time.Now(), used})
			}
			s.mu.Unlock()
			if err != nil {
				return
			}
			select {
			case <-s.stop:
				return
			case <-tk.C:
			}
		}
	}()
	t.Cleanup(s.Stop)
	return s
}

// Stop ends sampling.
func (s *utMemSampler) Stop() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

// peak returns the highest sample, the number of samples and the first
// sampling error.
func (s *utMemSampler) peak() (peak int64, n int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.samples {
		peak = max(peak, x.used)
	}
	return peak, len(s.samples), s.err
}

// maxRise returns the largest increase between consecutive samples and
// when it ended.
func (s *utMemSampler) maxRise() (rise int64, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 1; i < len(s.samples); i++ {
		if d := s.samples[i].used - s.samples[i-1].used; d > rise {
			rise, at = d, s.samples[i].at
		}
	}
	return rise, at
}

// firstAtMost returns the first sample taken after from whose value is at
// most limit.
func (s *utMemSampler) firstAtMost(from time.Time, limit int64) (utMemSample, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.samples {
		if x.at.After(from) && x.used <= limit {
			return x, true
		}
	}
	return utMemSample{}, false
}

// utLoad SETs keys lo..hi-1 (name(i) = utValue(i, size)) through addr on
// conns parallel connections, in pipelines of batch, and returns the first
// error: a transport error or any reply other than +OK.
func utLoad(t *testing.T, addr string, name func(int) string, lo, hi, size, batch, conns int) error {
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for w := 0; w < conns; w++ {
		c := utDial(t, addr, 60*time.Second)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var idx []int
			for i := lo + w; i < hi; i += conns {
				idx = append(idx, i)
			}
			for len(idx) > 0 {
				n := min(batch, len(idx))
				for _, i := range idx[:n] {
					if err := c.Send("SET", name(i), utValue(i, size)); err != nil {
						errs <- err
						return
					}
				}
				for _, i := range idx[:n] {
					r := c.Read()
					if r.Err != nil {
						errs <- fmt.Errorf("SET %s: %w", name(i), r.Err)
						return
					}
					if r.Str != "OK" || r.Type != '+' {
						errs <- fmt.Errorf("SET %s: %s", name(i), r.String())
						return
					}
				}
				idx = idx[n:]
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// utCheck GETs keys lo..hi-1 through addr and returns how many did not
// read back as utValue(i, size), with a description of the first few.
func utCheck(t *testing.T, addr string, name func(int) string, lo, hi, size, batch, conns int) (bad int, first []string) {
	idx := make([]int, 0, hi-lo)
	for i := lo; i < hi; i++ {
		idx = append(idx, i)
	}
	return utCheckKeys(t, addr, name, idx, size, batch, conns)
}

// utCheckKeys GETs the keys numbered idx through addr on conns parallel
// connections, in pipelines of batch, and returns how many did not read
// back as utValue(i, size), with a description of the first few.
func utCheckKeys(t *testing.T, addr string, name func(int) string, idx []int, size, batch, conns int) (bad int, first []string) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	note := func(n int, s string) {
		mu.Lock()
		bad += n
		if len(first) < 5 {
			first = append(first, s)
		}
		mu.Unlock()
	}
	for w := 0; w < conns; w++ {
		c := utDial(t, addr, 60*time.Second)
		var mine []int
		for j := w; j < len(idx); j += conns {
			mine = append(mine, idx[j])
		}
		wg.Add(1)
		go func(mine []int) {
			defer wg.Done()
			for len(mine) > 0 {
				n := min(batch, len(mine))
				for _, i := range mine[:n] {
					_ = c.Send("GET", name(i))
				}
				for j, i := range mine[:n] {
					r := c.Read()
					if r.Err != nil {
						note(len(mine)-j, fmt.Sprintf("GET %s: %v (%d more not checked)", name(i), r.Err, len(mine)-j-1))
						return
					}
					if r.Type != '$' || r.Str != utValue(i, size) {
						note(1, fmt.Sprintf("GET %s: %s", name(i), r.String()))
					}
				}
				mine = mine[n:]
			}
		}(mine)
	}
	wg.Wait()
	return bad, first
}

// TestUpstreamBulkLoad is the acceptance test of upstream mode: 400,000
// values of 1 KB (about 400 MB) loaded through Spillway into a redis-server
// with a 64 MB budget. The upstream's used_memory stays under twice the
// budget during the load and is back under the budget within 30 s after
// it; every key reads back, before and after a graceful restart.
func TestUpstreamBulkLoad(t *testing.T) {
	const (
		n      = 400_000
		size   = 1024
		budget = 64 * utMB
		settle = 30 * time.Second
	)
	name := func(i int) string { return "bulk:" + strconv.Itoa(i) }
	up := harness.StartRedis(t)
	dir := t.TempDir()
	sp := utStartSpillway(t, up, dir, budget)
	upc := up.Conn(t)

	mem := utSampleMemory(t, up, 50*time.Millisecond)
	start := time.Now()
	if err := utLoad(t, sp.Addr(), name, 0, n, size, 1000, 4); err != nil {
		t.Fatalf("load: %v", err)
	}
	loadEnd := time.Now()
	loadTime := loadEnd.Sub(start)

	// Wait (bounded) for a sample at or under the budget.
	var under utMemSample
	var ok bool
	for deadline := loadEnd.Add(settle); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if under, ok = mem.firstAtMost(loadEnd, budget); ok {
			break
		}
	}
	if !ok {
		under, ok = mem.firstAtMost(loadEnd, budget)
	}
	mem.Stop()
	peak, samples, err := mem.peak()
	if err != nil {
		t.Fatalf("sampling used_memory: %v", err)
	}
	// The upstream's own high-water mark also sees what sampling missed.
	truePeak, err := utInfoInt(upc, "memory", "used_memory_peak")
	if err != nil {
		t.Fatal(err)
	}
	spc := utDial(t, sp.Addr(), 60*time.Second)
	ti := utTiering(t, spc)
	t.Logf("loaded %d keys of %d B in %v (%.0f keys/s)", n, size, loadTime.Round(time.Millisecond), float64(n)/loadTime.Seconds())
	t.Logf("upstream used_memory: sampled peak %s over %d samples, used_memory_peak %s, budget %s",
		utMiB(peak), samples, utMiB(truePeak), utMiB(budget))
	rise, riseAt := mem.maxRise()
	t.Logf("largest rise between two samples: %s, %v into the load", utMiB(rise), riseAt.Sub(start).Round(time.Millisecond))
	if ok {
		t.Logf("used_memory %s <= budget %v after the load ended", utMiB(under.used), under.at.Sub(loadEnd).Round(time.Millisecond))
	}
	t.Logf("INFO tiering: demotions=%s demotion_aborts=%s throttled_writes=%s cold_keys=%s upstream_used_memory_peak=%s",
		ti["demotions"], ti["demotion_aborts"], ti["throttled_writes"], ti["cold_keys"], ti["upstream_used_memory_peak"])

	if samples < 10 {
		t.Errorf("only %d used_memory samples", samples)
	}
	if peak >= 2*budget {
		t.Errorf("sampled upstream used_memory peak %s >= 2 x budget (%s)", utMiB(peak), utMiB(2*budget))
	}
	if truePeak >= 2*budget {
		t.Errorf("upstream used_memory_peak %s >= 2 x budget (%s)", utMiB(truePeak), utMiB(2*budget))
	}
	if !ok {
		t.Errorf("upstream used_memory never <= budget %s within %v after the load", utMiB(budget), settle)
	}
	if d := utInt(t, ti, "demotions"); d <= 0 {
		t.Errorf("demotions = %d after loading %d keys", d, n)
	}

	utSettle(t, spc, 30*time.Second)
	if got := utDBSize(t, spc); got != n {
		t.Errorf("DBSIZE through Spillway = %d, want %d", got, n)
	}
	start = time.Now()
	bad, first := utCheck(t, sp.Addr(), name, 0, n, size, 1000, 4)
	t.Logf("read back %d keys in %v", n, time.Since(start).Round(time.Millisecond))
	if bad > 0 {
		t.Errorf("%d of %d keys did not read back; first: %s", bad, n, strings.Join(first, "; "))
	}

	sp.Term()
	if err := sp.ExitError(); err != nil {
		t.Errorf("Spillway exit after SIGTERM: %v", err)
	}
	start = time.Now()
	sp.Restart()
	t.Logf("restarted in %v", time.Since(start).Round(time.Millisecond))
	if log := utLogSinceStart(t, sp); strings.Contains(log, "unclean shutdown") {
		t.Errorf("the restart after SIGTERM was taken for an unclean shutdown:\n%s", log)
	}
	spc = utDial(t, sp.Addr(), 60*time.Second)
	utSettle(t, spc, 30*time.Second)
	if got := utDBSize(t, spc); got != n {
		t.Errorf("DBSIZE after restart = %d, want %d", got, n)
	}
	start = time.Now()
	bad, first = utCheck(t, sp.Addr(), name, 0, n, size, 1000, 4)
	t.Logf("read back %d keys after the restart in %v", n, time.Since(start).Round(time.Millisecond))
	if bad > 0 {
		t.Errorf("after restart, %d of %d keys did not read back; first: %s", bad, n, strings.Join(first, "; "))
	}
	utSettle(t, spc, 30*time.Second)
	if got := utDBSize(t, spc); got != n {
		t.Errorf("DBSIZE after reading everything back = %d, want %d", got, n)
	}
}
