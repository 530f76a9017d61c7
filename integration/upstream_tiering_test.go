package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// utRaceWriter is one writer of TestUpstreamDemotionRace and the model of
// the keys it owns, updated only for replies that say the write happened.
type utRaceWriter struct {
	id       int
	counters map[string]int64
	hashes   map[string]map[string]string
	lists    map[string][]string
	sets     map[string]map[string]bool
	zsets    map[string]map[string]float64
	strs     map[string]string
	oks      int
	progress atomic.Int64 // steps done
	errs     []string
	nerrs    int
}

func newUTRaceWriter(id int) *utRaceWriter {
	return &utRaceWriter{id: id, counters: map[string]int64{}, hashes: map[string]map[string]string{},
		lists: map[string][]string{}, sets: map[string]map[string]bool{}, zsets: map[string]map[string]float64{},
		strs: map[string]string{}}
}

// utRaceSlots is the number of keys of each type a race writer owns; its
// first 6*utRaceSlots steps create them all.
const utRaceSlots = 12

// utRacePad makes the elements big enough for the writes to push the
// upstream over its small budget.
var utRacePad = strings.Repeat("p", 96)

// op returns the command of step j and a function that checks its reply
// and updates the model.
func (w *utRaceWriter) op(j int) (redis.Cmder, func(redis.Cmder)) {
	ctx := context.Background()
	slot := strconv.Itoa((j / 6) % utRaceSlots)
	key := func(kind string) string { return "race:w" + strconv.Itoa(w.id) + ":" + kind + ":" + slot }
	js := strconv.Itoa(j)
	fail := func(format string, a ...any) {
		w.nerrs++
		if len(w.errs) < 5 {
			w.errs = append(w.errs, fmt.Sprintf("writer %d step %d: ", w.id, j)+fmt.Sprintf(format, a...))
		}
	}
	switch j % 6 {
	case 0:
		k := key("ctr")
		return redis.NewIntCmd(ctx, "INCR", k), func(c redis.Cmder) {
			n, err := c.(*redis.IntCmd).Result()
			if err != nil {
				fail("INCR %s: %v", k, err)
				return
			}
			w.counters[k]++
			w.oks++
			if n != w.counters[k] {
				fail("INCR %s = %d, want %d", k, n, w.counters[k])
				w.counters[k] = n
			}
		}
	case 1:
		k, f, v := key("hash"), "f"+js, js+utRacePad
		return redis.NewIntCmd(ctx, "HSET", k, f, v), func(c redis.Cmder) {
			n, err := c.(*redis.IntCmd).Result()
			if err != nil {
				fail("HSET %s: %v", k, err)
				return
			}
			if w.hashes[k] == nil {
				w.hashes[k] = map[string]string{}
			}
			w.hashes[k][f] = v
			w.oks++
			if n != 1 {
				fail("HSET %s %s (a new field) = %d", k, f, n)
			}
		}
	case 2:
		k, e := key("list"), js+utRacePad
		return redis.NewIntCmd(ctx, "RPUSH", k, e), func(c redis.Cmder) {
			n, err := c.(*redis.IntCmd).Result()
			if err != nil {
				fail("RPUSH %s: %v", k, err)
				return
			}
			w.lists[k] = append(w.lists[k], e)
			w.oks++
			if n != int64(len(w.lists[k])) {
				fail("RPUSH %s = %d, want %d", k, n, len(w.lists[k]))
			}
		}
	case 3:
		k, m := key("set"), js+utRacePad
		return redis.NewIntCmd(ctx, "SADD", k, m), func(c redis.Cmder) {
			n, err := c.(*redis.IntCmd).Result()
			if err != nil {
				fail("SADD %s: %v", k, err)
				return
			}
			if w.sets[k] == nil {
				w.sets[k] = map[string]bool{}
			}
			w.sets[k][m] = true
			w.oks++
			if n != 1 {
				fail("SADD %s (a new member) = %d", k, n)
			}
		}
	case 4:
		k, m := key("zset"), js+utRacePad
		return redis.NewIntCmd(ctx, "ZADD", k, js, m), func(c redis.Cmder) {
			n, err := c.(*redis.IntCmd).Result()
			if err != nil {
				fail("ZADD %s: %v", k, err)
				return
			}
			if w.zsets[k] == nil {
				w.zsets[k] = map[string]float64{}
			}
			w.zsets[k][m] = float64(j)
			w.oks++
			if n != 1 {
				fail("ZADD %s (a new member) = %d", k, n)
			}
		}
	default:
		k, s := key("str"), js+","
		return redis.NewIntCmd(ctx, "APPEND", k, s), func(c redis.Cmder) {
			n, err := c.(*redis.IntCmd).Result()
			if err != nil {
				fail("APPEND %s: %v", k, err)
				return
			}
			w.strs[k] += s
			w.oks++
			if n != int64(len(w.strs[k])) {
				fail("APPEND %s = %d, want %d", k, n, len(w.strs[k]))
			}
		}
	}
}

// run does up to steps steps, until deadline, one command at a time or in
// pipelines of pipe.
func (w *utRaceWriter) run(rc *redis.Client, steps, pipe int, deadline time.Time) {
	ctx := context.Background()
	for j := 0; j < steps && time.Now().Before(deadline); {
		n := min(pipe, steps-j)
		cmds := make([]redis.Cmder, n)
		checks := make([]func(redis.Cmder), n)
		for i := range cmds {
			cmds[i], checks[i] = w.op(j + i)
		}
		if pipe == 1 {
			_ = rc.Process(ctx, cmds[0])
		} else {
			p := rc.Pipeline()
			for _, c := range cmds {
				_ = p.Process(ctx, c)
			}
			_, _ = p.Exec(ctx)
		}
		for i, c := range cmds {
			checks[i](c)
		}
		j += n
		w.progress.Store(int64(j))
	}
}

// keys returns every key the writer wrote successfully at least once.
func (w *utRaceWriter) keys() []string {
	var ks []string
	for k := range w.counters {
		ks = append(ks, k)
	}
	for k := range w.hashes {
		ks = append(ks, k)
	}
	for k := range w.lists {
		ks = append(ks, k)
	}
	for k := range w.sets {
		ks = append(ks, k)
	}
	for k := range w.zsets {
		ks = append(ks, k)
	}
	for k := range w.strs {
		ks = append(ks, k)
	}
	return ks
}

// verify compares every key of the model with its content read through rc
// and returns the differences.
func (w *utRaceWriter) verify(rc *redis.Client) []string {
	ctx := context.Background()
	var diffs []string
	diff := func(format string, a ...any) { diffs = append(diffs, fmt.Sprintf(format, a...)) }
	for k, want := range w.counters {
		if got, err := rc.Get(ctx, k).Result(); err != nil || got != strconv.FormatInt(want, 10) {
			diff("GET %s = %q, %v; want %d", k, got, err, want)
		}
	}
	for k, want := range w.hashes {
		got, err := rc.HGetAll(ctx, k).Result()
		if err != nil || len(got) != len(want) {
			diff("HGETALL %s: %d fields, %v; want %d", k, len(got), err, len(want))
			continue
		}
		for f, v := range want {
			if got[f] != v {
				diff("HGETALL %s: field %s = %q, want %q", k, f, harness.Trunc(got[f], 20), harness.Trunc(v, 20))
				break
			}
		}
	}
	for k, want := range w.lists {
		got, err := rc.LRange(ctx, k, 0, -1).Result()
		if err != nil || !slices.Equal(got, want) {
			diff("LRANGE %s: %d elements, %v; want %d in order (%s)", k, len(got), err, len(want), utListDiff(got, want))
		}
	}
	for k, want := range w.sets {
		got, err := rc.SMembers(ctx, k).Result()
		missing := 0
		for _, m := range got {
			if !want[m] {
				missing = -1
			}
		}
		if err != nil || len(got) != len(want) || missing != 0 {
			diff("SMEMBERS %s: %d members, %v; want %d", k, len(got), err, len(want))
		}
	}
	for k, want := range w.zsets {
		got, err := rc.ZRangeWithScores(ctx, k, 0, -1).Result()
		good := err == nil && len(got) == len(want)
		for _, z := range got {
			if s, ok := want[z.Member.(string)]; !ok || s != z.Score {
				good = false
			}
		}
		if !good {
			diff("ZRANGE %s WITHSCORES: %d members, %v; want %d", k, len(got), err, len(want))
		}
	}
	for k, want := range w.strs {
		if got, err := rc.Get(ctx, k).Result(); err != nil || got != want {
			diff("GET %s = %q, %v; want %q", k, harness.Trunc(got, 40), err, harness.Trunc(want, 40))
		}
	}
	return diffs
}

// utListDiff describes where got first departs from want.
func utListDiff(got, want []string) string {
	for i := 0; i < min(len(got), len(want)); i++ {
		if got[i] != want[i] {
			return fmt.Sprintf("first difference at %d: %q, want %q", i, harness.Trunc(got[i], 12), harness.Trunc(want[i], 12))
		}
	}
	return "one is a prefix of the other"
}

// TestUpstreamDemotionRace runs writers of every type on disjoint keys
// through Spillway while DEBUG DEMOTE-ALL and the demoter (with a budget
// about 1 MB over the upstream's idle used_memory) keep moving the keys
// to the cold store: no acknowledged write is lost, none is applied twice,
// and no key ends up in both tiers.
func TestUpstreamDemotionRace(t *testing.T) {
	const (
		writers = 4
		steps   = 8000
		runFor  = 20 * time.Second
	)
	t.Setenv("SPILLWAY_TEST_HOOKS", "1")
	up := harness.StartRedis(t)
	upc := up.Conn(t)
	base, err := utInfoInt(upc, "memory", "used_memory")
	if err != nil {
		t.Fatal(err)
	}
	budget := base + utMB
	sp := utStartSpillway(t, up, "", budget, "--loglevel", "warning")
	spc := utDial(t, sp.Addr(), 30*time.Second)
	rc := utGoRedis(t, sp.Addr(), 10*time.Second)
	t.Logf("upstream used_memory at rest %s; budget %s", utMiB(base), utMiB(budget))

	deadline := time.Now().Add(runFor)
	ws := make([]*utRaceWriter, writers)
	var wg sync.WaitGroup
	for i := range ws {
		ws[i] = newUTRaceWriter(i)
		pipe := 1
		if i%2 == 1 {
			pipe = 8 // a pipeline: a batch of forwards racing one demotion
		}
		wg.Add(1)
		go func(w *utRaceWriter, pipe int) {
			defer wg.Done()
			w.run(rc, steps, pipe, deadline)
		}(ws[i], pipe)
	}
	writersDone := make(chan struct{})
	go func() { wg.Wait(); close(writersDone) }()

	// Once every writer has created all its keys, their number is fixed:
	// DBSIZE sampled during the race must always give it.
	sizeC := utDial(t, sp.Addr(), 30*time.Second)
	type sizeProbe struct {
		samples, wrong int
		first          []string
		err            error
	}
	probed := make(chan sizeProbe, 1)
	go func() {
		var p sizeProbe
		defer func() { probed <- p }()
		want := int64(writers * 6 * utRaceSlots)
		for i := 0; i < 100_000; i++ {
			select {
			case <-writersDone:
				return
			case <-time.After(5 * time.Millisecond):
			}
			all := true
			for _, w := range ws {
				all = all && w.progress.Load() >= 6*utRaceSlots
			}
			if !all {
				continue
			}
			r := sizeC.Do("DBSIZE")
			if r.Err != nil {
				p.err = r.Err
				return
			}
			p.samples++
			if r.Type != ':' || r.Int != want {
				if p.wrong++; len(p.first) < 5 {
					p.first = append(p.first, r.String())
				}
			}
		}
	}()

	// DEBUG DEMOTE-ALL in a loop until the writers are done.
	demc := utDial(t, sp.Addr(), 30*time.Second)
	var demoteAlls, demoteMoved int
	var demoteErrs []string
loop:
	for i := 0; i < 100_000; i++ {
		select {
		case <-writersDone:
			break loop
		default:
		}
		r := demc.Do("DEBUG", "DEMOTE-ALL")
		if r.Err != nil {
			t.Fatalf("DEBUG DEMOTE-ALL: %v", r.Err)
		}
		if r.Type != ':' {
			if len(demoteErrs) < 5 {
				demoteErrs = append(demoteErrs, r.String())
			}
			continue
		}
		demoteAlls++
		demoteMoved += int(r.Int)
		time.Sleep(time.Duration(rand.IntN(5)) * time.Millisecond)
	}
	select {
	case <-writersDone:
	case <-time.After(runFor + 30*time.Second):
		t.Fatal("writers still running 30 s after their deadline")
	}

	probe := <-probed
	if probe.err != nil {
		t.Fatalf("DBSIZE during the race: %v", probe.err)
	}
	t.Logf("DBSIZE sampled %d times during the race: %d wrong", probe.samples, probe.wrong)
	if probe.wrong > 0 {
		t.Errorf("DBSIZE during the race was not %d in %d of %d samples (keys moving between the tiers counted twice or not at all): %s",
			writers*6*utRaceSlots, probe.wrong, probe.samples, strings.Join(probe.first, ", "))
	}

	total, oks, nerrs := 0, 0, 0
	for _, w := range ws {
		total += len(w.keys())
		oks += w.oks
		nerrs += w.nerrs
		for _, e := range w.errs {
			t.Errorf("%s", e)
		}
	}
	ti := utTiering(t, spc)
	t.Logf("%d writes acknowledged by %d writers on %d keys; %d DEMOTE-ALL moved %d keys; INFO tiering: demotions=%s demotion_aborts=%s promotions=%s reload_conflicts=%s cold_reads=%s cold_keys=%s",
		oks, writers, total, demoteAlls, demoteMoved, ti["demotions"], ti["demotion_aborts"],
		ti["promotions"], ti["reload_conflicts"], ti["cold_reads"], ti["cold_keys"])
	if nerrs > 0 {
		t.Errorf("%d writes failed or answered wrongly", nerrs)
	}
	if len(demoteErrs) > 0 {
		t.Errorf("DEBUG DEMOTE-ALL failed: %s", strings.Join(demoteErrs, "; "))
	}
	if oks < writers*6 {
		t.Fatalf("only %d writes acknowledged", oks)
	}

	// Before anything is read back (reads reload), a key in both tiers
	// would count twice.
	utSettle(t, spc, 30*time.Second)
	if got := utDBSize(t, spc); got != int64(total) {
		t.Errorf("DBSIZE through Spillway = %d, want %d distinct keys", got, total)
	}
	hot := utDBSize(t, upc)
	cold := utInt(t, utTiering(t, spc), "cold_keys")
	if hot+cold != int64(total) {
		t.Errorf("upstream DBSIZE %d + cold_keys %d = %d, want %d keys", hot, cold, hot+cold, total)
	}
	if d := utInt(t, ti, "demotions"); d <= 0 {
		t.Errorf("demotions = %d", d)
	}
	if p := utInt(t, ti, "promotions"); p <= 0 {
		t.Errorf("promotions = %d", p)
	}

	check := func(when string) {
		t.Helper()
		for _, w := range ws {
			diffs := w.verify(rc)
			for i, d := range diffs {
				if i == 5 {
					t.Errorf("%s: writer %d: %d more differences", when, w.id, len(diffs)-5)
					break
				}
				t.Errorf("%s: writer %d: %s", when, w.id, d)
			}
		}
		utSettle(t, spc, 30*time.Second)
		if got := utDBSize(t, spc); got != int64(total) {
			t.Errorf("%s: DBSIZE through Spillway = %d, want %d", when, got, total)
		}
	}
	check("after the race")
	// Everything cold once more: the same content is read from the store.
	if r := spc.Do("DEBUG", "DEMOTE-ALL"); r.Type != ':' {
		t.Fatalf("DEBUG DEMOTE-ALL: %s", r.String())
	}
	if n := utDBSize(t, upc); n != 0 {
		t.Errorf("upstream DBSIZE after DEMOTE-ALL with no writers = %d, want 0", n)
	}
	check("all cold")
}

// TestUpstreamFaults covers the failures of either process.
func TestUpstreamFaults(t *testing.T) {
	t.Run("UpstreamKilled", testUpstreamKilled)
	t.Run("SpillwayKill9", testSpillwayKill9DuringDemotion)
}

// testUpstreamKilled kills -9 the redis-server (AOF, fsync always) under
// connected clients: commands fail promptly with an "upstream" error,
// INFO tiering says upstream_status:down, and once the upstream is back on
// the same port commands work again and hot and cold keys read back.
func testUpstreamKilled(t *testing.T) {
	const n, demoted = 200, 100
	// liveness bounds a reply's wait: a hang fails, a slow answer does not.
	const liveness = 5 * time.Second
	t.Setenv("SPILLWAY_TEST_HOOKS", "1")
	up := harness.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	sp := utStartSpillway(t, up, "", 64*utMB)
	name := func(i int) string { return "fault:" + strconv.Itoa(i) }
	if err := utLoad(t, sp.Addr(), name, 0, n, 100, 100, 1); err != nil {
		t.Fatal(err)
	}
	c := utDial(t, sp.Addr(), liveness)
	args := []string{"DEBUG", "DEMOTE"}
	for i := 0; i < demoted; i++ {
		args = append(args, name(i))
	}
	if r := c.Do(args...); r.Type != ':' || r.Int != demoted {
		t.Fatalf("DEBUG DEMOTE of %d keys: %s", demoted, r.String())
	}
	gr := utGoRedis(t, sp.Addr(), liveness)
	ctx := context.Background()
	if err := gr.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// A client blocked upstream when it dies.
	bl := utDial(t, sp.Addr(), liveness)
	if err := bl.Send("BLPOP", "fault:queue", "0"); err != nil {
		t.Fatal(err)
	}
	if err := bl.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)

	up.Kill9()
	hotKey := name(n - 1)
	for _, tc := range []struct {
		name string
		do   func() (string, error)
	}{
		{"GET raw", func() (string, error) { return utReplyErr(c.Do("GET", hotKey)) }},
		{"SET raw", func() (string, error) { return utReplyErr(c.Do("SET", "fault:new", "x")) }},
		{"GET go-redis", func() (string, error) {
			err := gr.Get(ctx, hotKey).Err()
			if err == nil {
				return "", errors.New("no error")
			}
			return err.Error(), nil
		}},
		{"blocked BLPOP", func() (string, error) { return utReplyErr(bl.Read()) }},
	} {
		start := time.Now()
		msg, err := tc.do()
		t.Logf("%s with the upstream down: %q after %v", tc.name, msg, time.Since(start).Round(time.Millisecond))
		if err != nil {
			t.Errorf("%s with the upstream down: %v", tc.name, err)
		} else if !strings.Contains(msg, "upstream") {
			t.Errorf("%s with the upstream down: error %q does not mention the upstream", tc.name, msg)
		}
	}
	// A cold key is answered from the store or refused, never lost.
	for i := 0; i < 2; i++ {
		r := c.Do("GET", name(0))
		t.Logf("GET of cold key %s with the upstream down: %s", name(0), harness.Trunc(r.String(), 60))
		if r.Err != nil || !(r.Type == '$' && r.Str == utValue(0, 100) || r.IsError() && strings.Contains(r.Str, "upstream")) {
			t.Errorf("GET of cold key %s with the upstream down: %s", name(0), r.String())
		}
	}
	var status string
	for i := 0; i < 100; i++ {
		m, err := harness.Info(c, "tiering")
		if err != nil {
			status = err.Error()
		} else if status = m["upstream_status"]; status == "down" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if status != "down" {
		t.Errorf("INFO tiering with the upstream killed: upstream_status %q, want down", status)
	}

	up.Restart()
	restarted := time.Now()
	var last harness.Reply
	back := false
	for i := 0; i < 300 && !back; i++ {
		last = c.Do("GET", hotKey)
		back = last.Err == nil && last.Type == '$' && last.Str == utValue(n-1, 100)
		if !back {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !back {
		t.Fatalf("GET %s 30 s after the upstream restarted: %s", hotKey, last.String())
	}
	t.Logf("commands work again %v after the upstream restarted", time.Since(restarted).Round(time.Millisecond))
	if err := gr.Set(ctx, "fault:after", "y", 0).Err(); err != nil {
		t.Errorf("go-redis SET after the upstream came back: %v", err)
	}
	if m, err := harness.Info(c, "tiering"); err != nil || m["upstream_status"] != "up" {
		t.Errorf("INFO tiering after the upstream came back: %v %v", m["upstream_status"], err)
	}
	if bad, first := utCheck(t, sp.Addr(), name, 0, n, 100, 100, 1); bad > 0 {
		t.Errorf("%d of %d keys (0..%d cold) did not read back: %s", bad, n, demoted-1, strings.Join(first, "; "))
	}
	if got := utDBSize(t, c); got != n+1 {
		t.Errorf("DBSIZE = %d, want %d", got, n+1)
	}
}

// utLogSinceStart returns s's log since its last (re)start.
func utLogSinceStart(t *testing.T, s *harness.Server) string {
	t.Helper()
	b, err := os.ReadFile(s.LogPath())
	if err != nil {
		t.Fatalf("read log: %v", err)
	}
	log := string(b)
	if i := strings.LastIndex(log, "=== harness: starting"); i >= 0 {
		log = log[i:]
	}
	return log
}

// utLogField returns "field=value" from the last line of log that contains
// msg, or "" when there is none.
func utLogField(log, msg, field string) string {
	lines := strings.Split(log, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if !strings.Contains(lines[i], msg) {
			continue
		}
		for _, f := range strings.Fields(lines[i]) {
			if strings.HasPrefix(f, field+"=") {
				return f
			}
		}
	}
	return ""
}

// utReplyErr returns the message of an error reply, or an error when the
// reply is not one.
func utReplyErr(r harness.Reply) (string, error) {
	if r.Err != nil {
		return "", fmt.Errorf("no reply: %w", r.Err)
	}
	if !r.IsError() {
		return "", fmt.Errorf("not an error: %s", r.String())
	}
	return r.Str, nil
}

// testSpillwayKill9DuringDemotion loads keys through Spillway with a small
// budget and kills -9 Spillway while demotions are under way, three times
// at different points; after each restart on the same directory every
// acknowledged key reads back, and DBSIZE counts each key once (keys caught
// between the two tiers are reconciled).
func testSpillwayKill9DuringDemotion(t *testing.T) {
	const (
		size    = 512
		batch   = 200
		perKill = 100_000 // at most this many keys per round
		budget  = 4 * utMB
	)
	// The demotions counter value at which each round kills Spillway.
	killAt := []int64{1, 2_000, 10_000}
	name := func(i int) string { return "crash:" + strconv.Itoa(i) }
	up := harness.StartRedis(t)
	dir := t.TempDir()
	sp := utStartSpillway(t, up, dir, budget)

	acked := map[int]bool{} // keys known to exist
	next := 0               // the next key number to write
	for round, at := range killAt {
		lo := next
		var mu sync.Mutex
		var pending []int // sent in the batch in flight, not acknowledged
		var written []int
		stop := make(chan struct{})
		loaded := make(chan error, 1)
		lc := utDial(t, sp.Addr(), 30*time.Second)
		go func() {
			for i := lo; i < lo+perKill; i += batch {
				select {
				case <-stop:
					loaded <- nil
					return
				default:
				}
				mu.Lock()
				pending = pending[:0]
				for j := i; j < i+batch; j++ {
					_ = lc.Send("SET", name(j), utValue(j, size))
					pending = append(pending, j)
				}
				mu.Unlock()
				for j := i; j < i+batch; j++ {
					r := lc.Read()
					if r.Err != nil {
						loaded <- r.Err
						return
					}
					if r.Type != '+' || r.Str != "OK" {
						loaded <- fmt.Errorf("SET %s: %s", name(j), r.String())
						return
					}
					mu.Lock()
					written = append(written, j)
					pending = pending[1:]
					mu.Unlock()
				}
			}
			loaded <- errors.New("every key written before the kill point")
		}()

		// Poll the demotions counter; kill when it reaches at.
		mc := utDial(t, sp.Addr(), 30*time.Second)
		var demotions int64
		var lerr error
		done := false
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
			d, err := utInfoInt(mc, "tiering", "demotions")
			if err != nil {
				t.Fatalf("round %d: INFO tiering: %v", round, err)
			}
			demotions = d
			if d >= at {
				break
			}
			select {
			case lerr = <-loaded:
				done = true
			case <-time.After(5 * time.Millisecond):
			}
			if done {
				break
			}
		}
		if done || demotions < at {
			close(stop)
			t.Fatalf("round %d: loader ended (%v) or time ran out with demotions at %d, before %d", round, lerr, demotions, at)
		}
		sp.Kill9()
		close(stop)
		select {
		case lerr = <-loaded:
		case <-time.After(60 * time.Second):
			t.Fatalf("round %d: loader still running a minute after the kill", round)
		}
		mu.Lock()
		inFlight := append([]int(nil), pending...)
		for _, j := range written {
			acked[j] = true
		}
		nWritten := len(written)
		mu.Unlock()
		next = lo + perKill // keys are never reused

		start := time.Now()
		sp.Restart()
		restart := time.Since(start)
		reconciled := utLogField(utLogSinceStart(t, sp), "tiers reconciled after an unclean shutdown", "cold_copies_dropped")
		c := utDial(t, sp.Addr(), 60*time.Second)
		ti := utTiering(t, c)
		t.Logf("round %d: killed at demotions=%d with %d keys acknowledged this round (%d in flight, loader: %v); restart took %v, reconciliation: %s; cold_keys=%s upstream DBSIZE=%d",
			round, demotions, nWritten, len(inFlight), lerr, restart.Round(time.Millisecond), reconciled,
			ti["cold_keys"], utDBSize(t, up.Conn(t)))
		if reconciled == "" {
			t.Errorf("round %d: no reconciliation logged at the restart after kill -9", round)
		}

		// Keys of the batch in flight may or may not exist; those that do
		// count, once.
		for _, j := range inFlight {
			r := c.Do("GET", name(j))
			switch {
			case r.Null:
			case r.Type == '$' && r.Str == utValue(j, size):
				acked[j] = true
			default:
				t.Errorf("round %d: GET %s (in flight at the kill): %s", round, name(j), r.String())
			}
		}
		want := int64(len(acked))
		// The demoter is busy again at once (the upstream is over budget):
		// DBSIZE must be exact meanwhile too.
		wrong, samples := 0, 50
		var wrongs []string
		for i := 0; i < samples; i++ {
			if got := utDBSize(t, c); got != want {
				if wrong++; len(wrongs) < 5 {
					wrongs = append(wrongs, fmt.Sprintf("sample %d: %+d", i, got-want))
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
		if wrong > 0 {
			t.Errorf("round %d: DBSIZE while the demoter runs after the restart was not %d in %d of %d samples (%s)",
				round, want, wrong, samples, strings.Join(wrongs, ", "))
		}
		utSettle(t, c, 30*time.Second)
		if got := utDBSize(t, c); got != want {
			t.Errorf("round %d: DBSIZE after the restart, demoter idle = %d, want %d (keys in both tiers count twice)", round, got, want)
		}
		keys := make([]int, 0, len(acked))
		for j := range acked {
			keys = append(keys, j)
		}
		if bad, first := utCheckKeys(t, sp.Addr(), name, keys, size, 1000, 2); bad > 0 {
			t.Errorf("round %d: %d of %d acknowledged keys did not read back: %s", round, bad, len(acked), strings.Join(first, "; "))
		}
		utSettle(t, c, 30*time.Second)
		if got := utDBSize(t, c); got != want {
			t.Errorf("round %d: DBSIZE after reading every key = %d, want %d", round, got, want)
		}
	}
}
