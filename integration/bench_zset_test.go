package integration

// The sorted-set part of `make bench`: redis-benchmark's ZADD, ZSCORE and a
// page of ZRANGEBYSCORE on a sorted set Spillway holds in memory, then the
// 1,000,000-member leaderboard of zset_tiering_test.go, cold in Spillway
// (sorted sets over 4,096 members are always served from the store) and in
// memory in redis-server: pages of 10 by score at random scores and ZSCORE
// of random members. Like the rest of the benchmark it reports Markdown
// tables (benchreport) and asserts nothing about time; it fails only when a
// tool or server does not work (an error reply, a wrong count, a wrong
// member or score).

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/benchreport"
	"github.com/spillway/spillway/integration/harness"
)

const (
	// zsetBenchMembers is the size of myzset, the key redis-benchmark's
	// ZADD writes, and the -r of its runs: under the 4,096 members up to
	// which Spillway holds a sorted set in memory, so it stays hot. It is
	// filled first, so ZADD updates scores and never grows it.
	zsetBenchMembers = 4000

	coldZSetKey     = "leaderboard"
	coldZSetMembers = 1_000_000 // leaderMember(0..n-1), scored by leaderScore
	coldZSetBatch   = 1000      // members per ZADD of the load file
	coldZSetPage    = 10        // members per ZRANGEBYSCORE
	coldZSetSeq     = 2000      // requests of each sequential latency loop
	// The Spillway under test runs with coldZSetMaxMemory: the leaderboard
	// is never held in memory whatever the budget, and a small one keeps
	// the block cache small. Like the cold hash, set and list it is loaded
	// with coldZSetLoadMemory, whose bigger memtables make the load several
	// times faster, then restarted.
	coldZSetMaxMemory  = "16mb"
	coldZSetLoadMemory = "2gb"
)

// zsetCommands are the hot sorted-set runs: -t zadd (ZADD myzset
// __rand_int__ element:__rand_int__), and ZSCORE and a page of 10 by score
// as custom commands against myzset.
var zsetCommands = []benchCmd{
	{"ZADD", []string{"-t", "zadd"}, zsetBenchMembers, nil},
	{"ZSCORE", []string{"ZSCORE", "myzset", "element:__rand_int__"}, zsetBenchMembers, nil},
	{"ZRANGEBYSCORE_10", []string{"ZRANGEBYSCORE", "myzset", "__rand_int__", "+inf", "LIMIT", "0", "10"}, zsetBenchMembers, nil},
}

// coldZSetCommands name the requests of the cold section.
var coldZSetCommands = []string{"ZRANGEBYSCORE_10", "ZSCORE"}

// TestBenchZSets measures ZADD, ZSCORE and ZRANGEBYSCORE with
// redis-benchmark on a hot sorted set against redis-server and Spillway,
// then pages by score and ZSCORE on a 1,000,000-member leaderboard that is
// cold in Spillway and in memory in redis-server.
func TestBenchZSets(t *testing.T) {
	needBench(t)
	benchHotZSets(t)
	benchColdLeaderboard(t)
}

// benchHotZSets is the hot half of TestBenchZSets.
func benchHotZSets(t *testing.T) {
	began := time.Now()
	redis := harness.StartRedis(t)
	spw := harness.StartSpillway(t, "", "--maxmemory", "512mb")
	defer redis.Term()
	defer spw.Term()
	targets := []benchTarget{
		{"redis", redis.Addr(), "`redis-server --save '' --appendonly no`"},
		{"spw-hot", spw.Addr(), fmt.Sprintf("`spillway --maxmemory 512mb` (default appendfsync everysec): myzset (%d members) "+
			"held in memory, every write also stored", zsetBenchMembers)},
	}
	conns := map[string]*harness.Conn{}
	for _, tg := range targets {
		c := harness.MustDial(t, tg.addr)
		c.Timeout = time.Minute
		conns[tg.name] = c
		for lo := 0; lo < zsetBenchMembers; lo += 500 {
			args := []string{"ZADD", "myzset"}
			for i := lo; i < min(lo+500, zsetBenchMembers); i++ {
				args = append(args, strconv.Itoa(i), fmt.Sprintf("element:%012d", i))
			}
			if r := c.Do(args...); r.Type != ':' || r.Int != int64(len(args)-2)/2 {
				t.Fatalf("%s: ZADD myzset: %s", tg.name, r.String())
			}
		}
	}

	sizes := map[cellKey]int{}
	for _, tg := range targets {
		for _, p := range benchPipelines {
			for _, c := range zsetCommands {
				n, err := calibrate(tg.addr, c, p)
				if err != nil {
					t.Fatalf("%s %s -P %d: %v", tg.name, c.label, p, err)
				}
				sizes[cellKey{tg.name, c.label, p}] = n
			}
		}
	}
	t.Logf("hot sorted sets calibrated in %v", time.Since(began).Round(time.Millisecond))

	samples := map[cellKey][]benchSample{}
	for rep := 1; rep <= benchReps; rep++ {
		for _, tg := range targets {
			c := conns[tg.name]
			for _, p := range benchPipelines {
				for _, cmd := range zsetCommands {
					k := cellKey{tg.name, cmd.label, p}
					s, err := runRedisBenchmark(tg.addr, cmd, p, sizes[k])
					if err != nil {
						t.Fatalf("%s %s -P %d: %v", tg.name, cmd.label, p, err)
					}
					samples[k] = append(samples[k], s)
					// ZADD only updates; a page from the lowest score is full.
					if r := c.Do("ZCARD", "myzset"); r.Type != ':' || r.Int != zsetBenchMembers {
						t.Fatalf("%s: ZCARD myzset after %s -P %d = %s, want %d", tg.name, cmd.label, p, r.String(), zsetBenchMembers)
					}
					r := c.Do("ZRANGEBYSCORE", "myzset", "-inf", "+inf", "WITHSCORES", "LIMIT", "0", "10")
					if len(r.Elems) != 20 || !strings.HasPrefix(r.Elems[0].Str, "element:") {
						t.Fatalf("%s: ZRANGEBYSCORE myzset -inf +inf WITHSCORES LIMIT 0 10 = %s", tg.name, harness.Trunc(r.String(), 300))
					}
				}
			}
		}
		t.Logf("hot sorted sets: repetition %d/%d done at %v", rep, benchReps, time.Since(began).Round(time.Second))
	}
	info := tieringInfo(t, spw)

	title := fmt.Sprintf("Sorted sets: redis-benchmark -c %d -r %d, -t zadd, ZSCORE myzset element:__rand_int__, "+
		"ZRANGEBYSCORE myzset __rand_int__ +inf LIMIT 0 10, median of %d runs of ~%v each",
		benchClients, zsetBenchMembers, benchReps, benchRunTime)
	var md strings.Builder
	md.WriteString(targetLegend(targets))
	fmt.Fprintf(&md, "\nLoad: `redis-benchmark -c %d -r %d` with `-P 1` and `-P 16`: `-t zadd`, `ZSCORE myzset element:__rand_int__` "+
		"and `ZRANGEBYSCORE myzset __rand_int__ +inf LIMIT 0 10`. myzset holds %s members element:0..%d scored 0..%d; "+
		"ZADD sets random scores of existing members, ZRANGEBYSCORE_10 returns 10 members from a random score. "+
		"Each cell: median of %d runs of about %v, the repetitions measured alternately across the targets; -n calibrated "+
		"on each target (short runs of growing size, also a warm-up). %s\n\n",
		benchClients, zsetBenchMembers, thousands(zsetBenchMembers), zsetBenchMembers-1, zsetBenchMembers-1,
		benchReps, benchRunTime, benchLatencyNote)
	md.WriteString(strings.TrimSpace(machineNotes()) + "\n\n")
	table, figs := benchCmdTable(title, targets, zsetCommands, samples)
	md.WriteString(table)
	fmt.Fprintf(&md, "\nSpread: %s.\n\n", spreadNote(samples))
	fmt.Fprintf(&md, "`spw-hot` INFO tiering after the runs: %s\n", tieringFields(info))
	if info["hot_keys"] == "0" {
		md.WriteString("\n**Note**: myzset was not in the hot tier after the run: the spw-hot figures are not of a hot sorted set.\n")
	}
	fmt.Fprintf(&md, "\n(Section took %v, calibration included.)\n", time.Since(began).Round(time.Second))
	benchreport.Default.Add(figs...)
	benchreport.Default.AddSection(title, md.String())
}

// benchColdLeaderboard is the cold half of TestBenchZSets: the
// 1,000,000-member leaderboard, loaded with redis-cli --pipe into
// redis-server and into Spillway with a small budget.
func benchColdLeaderboard(t *testing.T) {
	began := time.Now()
	lb := newLeaderboard(coldZSetMembers)
	file := filepath.Join(t.TempDir(), "leaderboard.resp")
	err := writeRESP(file, func(w *respWriter) {
		args := make([][]byte, 0, 2+2*coldZSetBatch)
		for lo := 0; lo < coldZSetMembers; lo += coldZSetBatch {
			args = append(args[:0], []byte("ZADD"), []byte(coldZSetKey))
			for i := lo; i < min(lo+coldZSetBatch, coldZSetMembers); i++ {
				args = append(args, []byte(fmtScore(leaderScore(i))), appendLeaderMember(nil, i))
			}
			w.command(args...)
		}
	})
	if err != nil {
		t.Fatal(err)
	}

	redis := harness.StartRedis(t)
	dir := t.TempDir()
	loader := harness.StartSpillway(t, dir, "--maxmemory", coldZSetLoadMemory)
	commands := (coldZSetMembers + coldZSetBatch - 1) / coldZSetBatch
	var loadTime [2]time.Duration
	var errs [2]error
	var wg sync.WaitGroup
	for i, s := range []*harness.Server{redis, loader} {
		wg.Go(func() { loadTime[i], errs[i] = pipeLoad(s.Addr(), file, commands) })
	}
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatalf("load: %v", err)
	}
	loader.Term()
	spw := harness.StartSpillway(t, dir, "--maxmemory", coldZSetMaxMemory)
	for name, s := range map[string]*harness.Server{"redis": redis, "spillway": spw} {
		if r := s.Conn(t).Do("ZCARD", coldZSetKey); r.Type != ':' || r.Int != coldZSetMembers {
			t.Fatalf("%s: ZCARD %s = %s, want %d", name, coldZSetKey, r.String(), coldZSetMembers)
		}
	}
	before := tieringInfo(t, spw)
	t.Logf("leaderboard loaded (redis %v, spillway %v) and restarted at %v", loadTime[0].Round(time.Millisecond),
		loadTime[1].Round(time.Millisecond), time.Since(began).Round(time.Millisecond))

	targets := []benchTarget{
		{"redis", redis.Addr(), "`redis-server --save '' --appendonly no`: the sorted set in memory"},
		{"spw-cold", spw.Addr(), "`spillway --maxmemory " + coldZSetMaxMemory + "`, loaded with `--maxmemory " +
			coldZSetLoadMemory + "` and restarted: the sorted set cold (over 4,096 members), " +
			"read from the store's score index and member records"},
	}
	type cell struct {
		rps []float64
		lat []time.Duration
	}
	// The sequential loops run first, then the concurrent runs,
	// interleaved across servers like the other sections.
	seq, par := map[cellKey]*cell{}, map[cellKey]*cell{}
	for _, cmd := range coldZSetCommands {
		for _, tg := range targets {
			start := time.Now()
			d, err := coldZSetLoad(tg.addr, lb, cmd, 1, coldZSetSeq, time.Minute, 1)
			if err != nil {
				t.Fatalf("%s: sequential %s: %v", tg.name, cmd, err)
			}
			seq[cellKey{tg.name, cmd, 1}] = &cell{[]float64{float64(len(d)) / time.Since(start).Seconds()}, d}
		}
	}
	for rep := 1; rep <= benchReps; rep++ {
		for _, tg := range targets {
			for _, cmd := range coldZSetCommands {
				start := time.Now()
				d, err := coldZSetLoad(tg.addr, lb, cmd, benchClients, 0, benchRunTime, uint64(rep+1))
				if err != nil {
					t.Fatalf("%s: %d clients %s: %v", tg.name, benchClients, cmd, err)
				}
				k := cellKey{tg.name, cmd, benchClients}
				if par[k] == nil {
					par[k] = &cell{}
				}
				par[k].rps = append(par[k].rps, float64(len(d))/time.Since(start).Seconds())
				par[k].lat = append(par[k].lat, d...)
			}
		}
	}
	after := tieringInfo(t, spw)
	var peakMB [2]float64
	for i, s := range []*harness.Server{redis, spw} {
		p, err := harness.ProcPeakRSS(s.Pid())
		if err != nil {
			t.Fatal(err)
		}
		peakMB[i] = float64(p) / (1 << 20)
	}

	title := fmt.Sprintf("Cold leaderboard: a sorted set of %s members (%d-byte names, %s distinct scores, ties of %d), "+
		"ZRANGEBYSCORE %s S +inf LIMIT 0 %d at random S and ZSCORE of random members",
		thousands(coldZSetMembers), len(leaderMember(0)), thousands(leaderScoreSpan), coldZSetMembers/leaderScoreSpan,
		coldZSetKey, coldZSetPage)
	var md strings.Builder
	md.WriteString(targetLegend(targets))
	fmt.Fprintf(&md, "\nLoad: `redis-cli --pipe`, %d ZADD of %d members each, into both servers at once: "+
		"redis %.1f s, spillway %.1f s (at --maxmemory %s). Peak RSS (VmHWM) at the end: redis %.0f MB, spw-cold %.0f MB "+
		"(since its restart).\n\n",
		commands, coldZSetBatch, loadTime[0].Seconds(), loadTime[1].Seconds(), coldZSetLoadMemory, peakMB[0], peakMB[1])
	md.WriteString(strings.TrimSpace(machineNotes()) + " (the Go test client runs in the test process, on the same cores)\n\n")
	fmt.Fprintf(&md, "Requests of the Go test client, every reply checked (the members of the page in order, the exact score). "+
		"1 client: %d requests one after the other; %d clients: one request in flight each, %d runs of about %v "+
		"interleaved across the targets, median ops/s, latencies of all runs pooled. Round trips in ms:\n\n",
		coldZSetSeq, benchClients, benchReps, benchRunTime)
	var rows []clientRow
	for _, cmd := range coldZSetCommands {
		for _, run := range []struct {
			clients int
			cells   map[cellKey]*cell
		}{{1, seq}, {benchClients, par}} {
			row := clientRow{lead: []string{cmd, strconv.Itoa(run.clients)}, workload: clientsWorkload(cmd, run.clients),
				cells: map[string]clientCell{}}
			for _, tg := range targets {
				if c := run.cells[cellKey{tg.name, cmd, run.clients}]; c != nil {
					row.cells[tg.name] = clientCell{rps: median(c.rps), lat: c.lat}
				}
			}
			rows = append(rows, row)
		}
	}
	table, figs := clientTable(title, []string{"op", "clients"}, targets, rows)
	md.WriteString(table)
	md.WriteString("\n" + tieringList("spw-cold", "after the restart", tieringFields(before), "after the run", tieringFields(after)))
	var reqs, pages int64 // sent to spw-cold
	for _, cells := range []map[cellKey]*cell{seq, par} {
		for k, c := range cells {
			if k.target != "spw-cold" {
				continue
			}
			reqs += int64(len(c.lat))
			if k.cmd == "ZRANGEBYSCORE_10" {
				pages += int64(len(c.lat))
			}
		}
	}
	if d := infoDelta(before, after, "cold_reads"); d >= reqs && infoDelta(before, after, "promotions") == 0 {
		fmt.Fprintf(&md, "\nEvery request was a cold read: cold_reads grew by %d over %d requests; no promotion; "+
			"%.1f store iterator steps a page, %.2f store lookups a request.\n", d, reqs,
			float64(infoDelta(before, after, "cold_store_iter_steps"))/float64(max(pages, 1)),
			float64(infoDelta(before, after, "cold_store_gets"))/float64(max(reqs, 1)))
	} else {
		fmt.Fprintf(&md, "\n**Note**: only %d of %d requests were cold reads (%d promotions): some figures above are not reads from disk.\n",
			d, reqs, infoDelta(before, after, "promotions"))
	}
	fmt.Fprintf(&md, "\n(Section took %v, loads included.)\n", time.Since(began).Round(time.Second))
	figs = append(figs, loadFigures(title, "load (redis-cli --pipe)", loadTime)...)
	figs = append(figs,
		benchreport.Figure{Section: title, Workload: "peak at the end", Target: "redis", Metric: benchreport.RSSMB, Value: peakMB[0]},
		benchreport.Figure{Section: title, Workload: "peak at the end", Target: "spw-cold", Metric: benchreport.RSSMB, Value: peakMB[1],
			Reference: "redis"})
	benchreport.Default.Add(figs...)
	benchreport.Default.AddSection(title, md.String())
}

// durMs converts d to milliseconds.
func durMs(d time.Duration) float64 { return float64(d) / 1e6 }

// coldZSetLoad sends requests of cmd (ZRANGEBYSCORE_10: a page by score
// from a random bound; ZSCORE: a random member) to the leaderboard from
// clients connections, each with one request in flight, until each has sent
// requests (when requests > 0) or for d, and returns every request's round
// trip. Every reply is checked against lb in place by zsetClient.
func coldZSetLoad(addr string, lb *leaderboard, cmd string, clients, requests int, d time.Duration, seed uint64) ([]time.Duration, error) {
	deadline := time.Now().Add(d)
	lat := make([][]time.Duration, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for g := range clients {
		wg.Go(func() {
			lc, err := dialLrange(addr)
			if err != nil {
				errs[g] = err
				return
			}
			defer lc.nc.Close()
			c := &zsetClient{lrangeClient: lc, lb: lb}
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			for i := 0; i < 10_000_000; i++ {
				if requests > 0 && i == requests || requests == 0 && time.Now().After(deadline) {
					return
				}
				if requests > 0 && time.Now().After(deadline) {
					errs[g] = fmt.Errorf("only %d of %d requests within %v", i, requests, d)
					return
				}
				var err error
				start := time.Now()
				switch cmd {
				case "ZRANGEBYSCORE_10":
					err = c.page(lb.randomBound(r.IntN))
				case "ZSCORE":
					err = c.zscore(r.IntN(len(lb.order)))
				default:
					err = errors.New("unknown command")
				}
				lat[g] = append(lat[g], time.Since(start))
				if err != nil {
					errs[g] = fmt.Errorf("%s: %w", cmd, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return slices.Concat(lat...), nil
}

// zsetClient sends the cold leaderboard's requests and checks their
// replies against lb without allocating (lrangeClient's connection and
// reply parsing).
type zsetClient struct {
	*lrangeClient
	lb    *leaderboard
	ranks []int
	num   []byte
}

var coldZSetKeyBytes = []byte(coldZSetKey)

// send writes c.req with a deadline.
func (c *zsetClient) send() error {
	if err := c.nc.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		return err
	}
	_, err := c.nc.Write(c.req)
	return err
}

// page sends ZRANGEBYSCORE leaderboard bound +inf LIMIT 0 10 and checks
// the reply: the members from bound in (score, member) order.
func (c *zsetClient) page(bound float64) error {
	c.num = strconv.AppendFloat(c.num[:0], bound, 'f', -1, 64)
	c.req = append(c.req[:0], "*7\r\n$13\r\nZRANGEBYSCORE\r\n"...)
	c.req = appendBulk(c.req, coldZSetKeyBytes)
	c.req = appendBulk(c.req, c.num)
	c.req = append(c.req, "$4\r\n+inf\r\n$5\r\nLIMIT\r\n$1\r\n0\r\n$2\r\n10\r\n"...)
	if err := c.send(); err != nil {
		return err
	}
	c.ranks = c.lb.appendPage(c.ranks[:0], bound, false, false, coldZSetPage)
	n, err := c.header('*')
	if err != nil {
		return err
	}
	if n != len(c.ranks) {
		return fmt.Errorf("from %s: %d members, want %d", c.num, n, len(c.ranks))
	}
	for j, k := range c.ranks {
		c.elem = appendLeaderMember(c.elem[:0], int(c.lb.order[k]))
		if err := c.bulk(c.elem); err != nil {
			return fmt.Errorf("from %s: member %d: %w", c.num, j, err)
		}
	}
	return nil
}

// zscore sends ZSCORE leaderboard leaderMember(i) and checks the score.
func (c *zsetClient) zscore(i int) error {
	c.elem = appendLeaderMember(c.elem[:0], i)
	c.req = append(c.req[:0], "*3\r\n$6\r\nZSCORE\r\n"...)
	c.req = appendBulk(c.req, coldZSetKeyBytes)
	c.req = appendBulk(c.req, c.elem)
	if err := c.send(); err != nil {
		return err
	}
	c.num = strconv.AppendFloat(c.num[:0], c.lb.score[i], 'f', -1, 64)
	if err := c.bulk(c.num); err != nil {
		return fmt.Errorf("%s: %w", c.elem, err)
	}
	return nil
}

// bulk reads a bulk string reply and checks it is want.
func (c *zsetClient) bulk(want []byte) error {
	l, err := c.header('$')
	if err != nil {
		return err
	}
	b, err := c.br.Peek(l + 2)
	if err != nil {
		return err
	}
	if !bytes.Equal(b[:l], want) || b[l] != '\r' || b[l+1] != '\n' {
		return fmt.Errorf("%q, want %q", harness.Trunc(string(b[:l]), 80), want)
	}
	_, err = c.br.Discard(l + 2)
	return err
}
