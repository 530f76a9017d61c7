package integration

// The list part of `make bench`: redis-benchmark's LPUSH, RPOP and
// LRANGE_100 on a hot list, LRANGE of 100 elements at random offsets of a
// cold 1,000,000-element list, and the queue workload of queue_test.go,
// each against redis-server holding the same list in memory. Like the rest
// of the benchmark it reports Markdown tables (benchreport) and asserts
// nothing about time; it fails only when a tool or server does not work (an
// error reply, a wrong length, a wrong element).

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
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
	// listBenchDataSize is the element size of the hot list runs
	// (redis-benchmark -d): a queue entry, not a document.
	listBenchDataSize = 64
	// listBenchBase is the length of mylist before each LPUSH run: an RPOP
	// run may pop up to benchClients*16 more than the LPUSH run before it
	// pushed, and the hot-path section's LPOP as many more than its RPUSH,
	// which leaves at least 400 for LRANGE_100 and LRANGE_300 to read.
	listBenchBase = 2000
	// listBenchMaxN caps -n of a hot list run, bounding mylist's length
	// (each LPUSH run is followed by an RPOP run of as many requests).
	listBenchMaxN = 2_000_000

	coldListKey   = "coldlist"
	coldListElems = 1_000_000 // elements of coldlist, queueElem(0..n-1)
	coldListBatch = 1000      // elements per RPUSH of the load file
	coldListRange = 100       // elements per LRANGE
	coldListSeq   = 2000      // requests of the sequential latency loop
	// Like the cold hash and set, coldlist is loaded into a Spillway with a
	// budget that holds it, which is then restarted with a small one: after
	// a restart every key is cold.
	coldListMaxMemory  = "16mb"
	coldListLoadMemory = "2gb"

	// queueBenchElems is the size of TestBenchQueue's queue;
	// SPILLWAY_BENCH_FULL=1 makes it queueFullElems, TestQueueFiveMillion's.
	queueBenchElems = 1_000_000
	queueFullElems  = 5_000_000
	queueBenchMem   = "32mb"
)

// listBenchValue is what listSetLen pushes onto mylist; redis-benchmark -d
// listBenchDataSize pushes random bytes of the same length.
var listBenchValue = strings.Repeat("x", listBenchDataSize)

// listCommands are the hot list runs: redis-benchmark -t lpush, -t rpop and
// the LRANGE of -t lrange_100, given as a custom command because -t
// lrange_100 first runs an LPUSH of its own and reports two lines.
var listCommands = []benchCmd{
	{"LPUSH", []string{"-d", strconv.Itoa(listBenchDataSize), "-t", "lpush"}, 1, nil},
	{"RPOP", []string{"-t", "rpop"}, 1, nil},
	{"LRANGE_100", []string{"LRANGE", "mylist", "0", "99"}, 1, nil},
}

// TestBenchLists measures LPUSH, RPOP and LRANGE_100 on a hot list with
// redis-benchmark against redis-server and Spillway, then LRANGE of 100
// elements at random offsets of a 1,000,000-element list that is cold in
// Spillway and in memory in redis-server.
func TestBenchLists(t *testing.T) {
	needBench(t)
	benchHotLists(t)
	benchColdList(t)
}

// benchHotLists is the hot half of TestBenchLists. mylist is kept at
// listBenchBase elements between runs: each LPUSH run of n requests is
// followed by an RPOP run of n, and LLEN is checked after every run.
func benchHotLists(t *testing.T) {
	began := time.Now()
	redis := harness.StartRedis(t)
	spw := harness.StartSpillway(t, "", "--maxmemory", "512mb")
	defer redis.Term()
	defer spw.Term()
	targets := []benchTarget{
		{"redis", redis.Addr(), "`redis-server --save '' --appendonly no`"},
		{"spw-hot", spw.Addr(), "`spillway --maxmemory 512mb` (default appendfsync everysec): mylist is hot, " +
			"whole while small, by a window at each end while an LPUSH run makes it big"},
	}
	conns := map[string]*harness.Conn{}
	for _, tg := range targets {
		conns[tg.name] = harness.MustDial(t, tg.addr)
		conns[tg.name].Timeout = time.Minute
		if err := listSetLen(conns[tg.name], "mylist", listBenchBase); err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
	}

	sizes := map[cellKey]int{}
	for _, tg := range targets {
		for _, p := range benchPipelines {
			for _, c := range listCommands {
				k := cellKey{tg.name, c.label, p}
				if c.label == "RPOP" { // as many as the LPUSH before it
					sizes[k] = sizes[cellKey{tg.name, "LPUSH", p}]
					continue
				}
				n, err := calibrate(tg.addr, c, p)
				if err != nil {
					t.Fatalf("%s %s -P %d: %v", tg.name, c.label, p, err)
				}
				sizes[k] = min(n, listBenchMaxN)
			}
		}
	}
	t.Logf("hot lists calibrated in %v", time.Since(began).Round(time.Millisecond))

	samples := map[cellKey][]benchSample{}
	for rep := 1; rep <= benchReps; rep++ {
		for _, tg := range targets {
			c := conns[tg.name]
			for _, p := range benchPipelines {
				if err := listSetLen(c, "mylist", listBenchBase); err != nil {
					t.Fatalf("%s: %v", tg.name, err)
				}
				for _, cmd := range listCommands {
					k := cellKey{tg.name, cmd.label, p}
					before := c.Do("LLEN", "mylist")
					s, err := runRedisBenchmark(tg.addr, cmd, p, sizes[k])
					if err != nil {
						t.Fatalf("%s %s -P %d: %v", tg.name, cmd.label, p, err)
					}
					samples[k] = append(samples[k], s)
					after := c.Do("LLEN", "mylist")
					if err := checkListRun(cmd.label, sizes[k], p, before, after); err != nil {
						t.Fatalf("%s: %v", tg.name, err)
					}
					if cmd.label == "LRANGE_100" { // what the run read
						r := c.Do("LRANGE", "mylist", "0", "99")
						if len(r.Elems) != 100 || len(r.Elems[0].Str) != listBenchDataSize || len(r.Elems[99].Str) != listBenchDataSize {
							t.Fatalf("%s: LRANGE mylist 0 99 = %s", tg.name, harness.Trunc(r.String(), 300))
						}
					}
				}
			}
		}
		t.Logf("hot lists: repetition %d/%d done at %v", rep, benchReps, time.Since(began).Round(time.Second))
	}

	info := tieringInfo(t, spw)
	title := fmt.Sprintf("Lists: redis-benchmark -c %d, -t lpush (-d %d), -t rpop, LRANGE mylist 0 99 (-t lrange_100's), "+
		"median of %d runs of ~%v each", benchClients, listBenchDataSize, benchReps, benchRunTime)
	var md strings.Builder
	md.WriteString(targetLegend(targets))
	fmt.Fprintf(&md, "\nLoad: `redis-benchmark -c %d` with `-P 1` and `-P 16`: `-t lpush -d %d`, `-t rpop`, and `LRANGE mylist 0 99` "+
		"(what `-t lrange_100` measures, without its own LPUSH fill). Each LPUSH run is followed by an RPOP run of as many "+
		"requests, so mylist holds about %s elements between runs and RPOP never finds it empty; LRANGE_100 returns the first 100. "+
		"Each cell: median of %d runs of about %v, the repetitions measured alternately across the targets; -n calibrated "+
		"on each target (short runs of growing size, also a warm-up), at most %s for LPUSH; RPOP reuses LPUSH's. %s\n\n",
		benchClients, listBenchDataSize, thousands(listBenchBase), benchReps, benchRunTime, thousands(listBenchMaxN),
		benchLatencyNote)
	md.WriteString(strings.TrimSpace(machineNotes()) + "\n\n")
	table, figs := benchCmdTable(title, targets, listCommands, samples)
	md.WriteString(table)
	fmt.Fprintf(&md, "\nSpread: %s.\n\n", spreadNote(samples))
	fmt.Fprintf(&md, "`spw-hot` INFO tiering after the runs: %s\n", tieringFields(info))
	fmt.Fprintf(&md, "\n(Section took %v, calibration included.)\n", time.Since(began).Round(time.Second))
	benchreport.Default.Add(figs...)
	benchreport.Default.AddSection(title, md.String())
}

// checkListRun checks that a run of n requests of command label with
// pipeline p changed the length of mylist as it should. With -P,
// redis-benchmark may send up to a batch per client more than -n.
func checkListRun(label string, n, p int, before, after harness.Reply) error {
	if before.Type != ':' || after.Type != ':' {
		return fmt.Errorf("LLEN mylist around %s -P %d: %s, then %s", label, p, before.String(), after.String())
	}
	lo, hi := int64(0), int64(0)
	switch label {
	case "LPUSH", "RPUSH":
		lo, hi = int64(n), int64(n+popSlack(p))
	case "LPOP", "RPOP":
		lo, hi = -int64(n+popSlack(p)), -int64(n)
	}
	if d := after.Int - before.Int; d < lo || d > hi {
		return fmt.Errorf("%s -P %d -n %d changed LLEN mylist from %d to %d, want a change in [%d, %d]",
			label, p, n, before.Int, after.Int, lo, hi)
	}
	return nil
}

// listSetLen pushes elements onto key (RPUSH, 500 at a time) or pops them
// (RPOP with a count) until it holds n, checking every reply.
func listSetLen(c *harness.Conn, key string, n int64) error {
	r := c.Do("LLEN", key)
	if r.Err != nil || r.Type != ':' {
		return fmt.Errorf("LLEN %s: %s", key, r.String())
	}
	value := listBenchValue
	for l := r.Int; l != n; {
		k := min(500, abs64(n-l))
		if l < n {
			args := []string{"RPUSH", key}
			for range k {
				args = append(args, value)
			}
			if r := c.Do(args...); r.Type != ':' || r.Int != l+k {
				return fmt.Errorf("RPUSH %s (%d elements) onto %d = %s", key, k, l, r.String())
			}
			l += k
		} else {
			if r := c.Do("RPOP", key, strconv.FormatInt(k, 10)); r.Type != '*' || int64(len(r.Elems)) != k {
				return fmt.Errorf("RPOP %s %d from %d: %s", key, k, l, harness.Trunc(r.String(), 200))
			}
			l -= k
		}
	}
	return nil
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// benchColdList is the cold half of TestBenchLists: LRANGE coldlist S S+99
// at random S on a 1,000,000-element list, one request at a time and from
// benchClients connections at once.
func benchColdList(t *testing.T) {
	began := time.Now()
	file := filepath.Join(t.TempDir(), "coldlist.resp")
	err := writeRESP(file, func(w *respWriter) {
		args := make([][]byte, 0, 2+coldListBatch)
		for lo := 0; lo < coldListElems; lo += coldListBatch {
			args = append(args[:0], []byte("RPUSH"), []byte(coldListKey))
			for i := lo; i < min(lo+coldListBatch, coldListElems); i++ {
				args = append(args, queueElem(nil, i))
			}
			w.command(args...)
		}
	})
	if err != nil {
		t.Fatal(err)
	}

	redis := harness.StartRedis(t)
	dir := t.TempDir()
	loader := harness.StartSpillway(t, dir, "--maxmemory", coldListLoadMemory)
	commands := (coldListElems + coldListBatch - 1) / coldListBatch
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
	spw := harness.StartSpillway(t, dir, "--maxmemory", coldListMaxMemory)
	for name, s := range map[string]*harness.Server{"redis": redis, "spillway": spw} {
		if r := s.Conn(t).Do("LLEN", coldListKey); r.Type != ':' || r.Int != coldListElems {
			t.Fatalf("%s: LLEN %s = %s, want %d", name, coldListKey, r.String(), coldListElems)
		}
	}
	before := tieringInfo(t, spw)
	t.Logf("cold list loaded (redis %v, spillway %v) and restarted at %v", loadTime[0].Round(time.Millisecond),
		loadTime[1].Round(time.Millisecond), time.Since(began).Round(time.Millisecond))

	targets := []benchTarget{
		{"redis", redis.Addr(), "`redis-server --save '' --appendonly no`: the list in memory"},
		{"spw-cold", spw.Addr(), "`spillway --maxmemory " + coldListMaxMemory + "`, loaded with `--maxmemory " +
			coldListLoadMemory + "` and restarted: the list cold, read from disk"},
	}
	// The sequential loop runs first, on a freshly restarted server.
	seq := map[string][]time.Duration{}
	for _, tg := range targets {
		d, err := coldListLoad(tg.addr, 1, coldListSeq, time.Minute, 1)
		if err != nil {
			t.Fatalf("%s: sequential LRANGE: %v", tg.name, err)
		}
		seq[tg.name] = d
	}
	// Concurrent runs, interleaved across servers like the other sections.
	type conc struct {
		rps []float64
		lat []time.Duration
	}
	par := map[string]*conc{}
	for rep := 1; rep <= benchReps; rep++ {
		for _, tg := range targets {
			start := time.Now()
			d, err := coldListLoad(tg.addr, benchClients, 0, benchRunTime, uint64(rep+1))
			if err != nil {
				t.Fatalf("%s: %d clients LRANGE: %v", tg.name, benchClients, err)
			}
			if par[tg.name] == nil {
				par[tg.name] = &conc{}
			}
			par[tg.name].rps = append(par[tg.name].rps, float64(len(d))/time.Since(start).Seconds())
			par[tg.name].lat = append(par[tg.name].lat, d...)
		}
	}
	after := tieringInfo(t, spw)

	title := fmt.Sprintf("Cold list: LRANGE %s S S+%d at random S of a %s-element list (%d-%d byte elements)",
		coldListKey, coldListRange-1, thousands(coldListElems), queueElemMin, queueElemMax)
	var md strings.Builder
	md.WriteString(targetLegend(targets))
	fmt.Fprintf(&md, "\nLoad: `redis-cli --pipe`, %d RPUSH of %d elements each, into both servers at once: "+
		"redis %.1f s, spillway %.1f s (at --maxmemory %s).\n\n",
		commands, coldListBatch, loadTime[0].Seconds(), loadTime[1].Seconds(), coldListLoadMemory)
	md.WriteString(strings.TrimSpace(machineNotes()) + " (the Go test client runs in the test process, on the same cores)\n\n")
	fmt.Fprintf(&md, "Requests of the Go test client, every reply checked (%d elements, each the one at its index). "+
		"1 client: %d requests one after the other on a freshly restarted server; %d clients: one request in flight each, "+
		"%d runs of about %v interleaved across the targets, median ops/s, latencies of all runs pooled. Round trips in ms:\n\n",
		coldListRange, coldListSeq, benchClients, benchReps, benchRunTime)
	seqRPS := func(n string) float64 {
		var sum time.Duration
		for _, d := range seq[n] {
			sum += d
		}
		return float64(len(seq[n])) / sum.Seconds()
	}
	var rows []clientRow
	for _, clients := range []int{1, benchClients} {
		row := clientRow{lead: []string{strconv.Itoa(clients)}, workload: clientsWorkload("LRANGE_100", clients),
			cells: map[string]clientCell{}}
		for _, tg := range targets {
			if clients == 1 {
				row.cells[tg.name] = clientCell{rps: seqRPS(tg.name), lat: seq[tg.name]}
			} else {
				row.cells[tg.name] = clientCell{rps: median(par[tg.name].rps), lat: par[tg.name].lat}
			}
		}
		rows = append(rows, row)
	}
	table, figs := clientTable(title, []string{"clients"}, targets, rows)
	md.WriteString(table)
	md.WriteString("\n" + tieringList("spw-cold", "after the restart", tieringFields(before), "after the run", tieringFields(after)))
	// Promoting a big list loads its ends only, so LRANGE in its middle
	// stays a cold read; cold_reads says whether every request was one.
	reqs := int64(len(seq["spw-cold"]) + len(par["spw-cold"].lat))
	d := infoDelta(before, after, "cold_reads")
	if d >= reqs {
		fmt.Fprintf(&md, "\nEvery LRANGE was a cold read: cold_reads grew by %d over %d requests, %d store iterator steps a request.\n",
			d, reqs, infoDelta(before, after, "cold_store_iter_steps")/max(reqs, 1))
	} else {
		fmt.Fprintf(&md, "\n**Note**: only %d of %d LRANGE requests were cold reads: some figures above are not reads from disk.\n", d, reqs)
	}
	fmt.Fprintf(&md, "\n(Section took %v, loads included.)\n", time.Since(began).Round(time.Second))
	figs = append(figs, loadFigures(title, "load (redis-cli --pipe)", loadTime)...)
	benchreport.Default.Add(figs...)
	benchreport.Default.AddSection(title, md.String())
}

// clientsWorkload names a row of a clientTable in the figures:
// "LRANGE_100 1 client", "LRANGE_100 50 clients".
func clientsWorkload(cmd string, clients int) string {
	if clients == 1 {
		return cmd + " 1 client"
	}
	return fmt.Sprintf("%s %d clients", cmd, clients)
}

// infoDelta returns after[field]-before[field] of two INFO snapshots (0
// when a field is missing or not a number).
func infoDelta(before, after map[string]string, field string) int64 {
	a, err1 := strconv.ParseInt(after[field], 10, 64)
	b, err2 := strconv.ParseInt(before[field], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return a - b
}

// coldListLoad sends LRANGE coldlist S S+99 at random S from clients
// connections, each with one request in flight, until each has sent
// requests (when requests > 0) or for d, and returns every request's round
// trip. Every reply must hold the 100 elements at those indexes. Replies are
// checked in place by lrangeClient, so that the client, which shares the
// machine's cores with the server, costs little.
func coldListLoad(addr string, clients, requests int, d time.Duration, seed uint64) ([]time.Duration, error) {
	deadline := time.Now().Add(d)
	lat := make([][]time.Duration, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for g := range clients {
		wg.Go(func() {
			c, err := dialLrange(addr)
			if err != nil {
				errs[g] = err
				return
			}
			defer c.nc.Close()
			r := rand.New(rand.NewPCG(seed, uint64(g)))
			for i := 0; i < 10_000_000; i++ {
				if requests > 0 && i == requests || requests == 0 && time.Now().After(deadline) {
					return
				}
				if requests > 0 && time.Now().After(deadline) {
					errs[g] = fmt.Errorf("only %d of %d requests within %v", i, requests, d)
					return
				}
				s := r.IntN(coldListElems - coldListRange + 1)
				start := time.Now()
				err := c.lrange(s)
				lat[g] = append(lat[g], time.Since(start))
				if err != nil {
					errs[g] = fmt.Errorf("LRANGE %s %d %d: %w", coldListKey, s, s+coldListRange-1, err)
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

// lrangeClient sends LRANGE coldlist S S+99 and checks the reply against
// queueElem without allocating.
type lrangeClient struct {
	nc   net.Conn
	br   *bufio.Reader
	req  []byte
	elem []byte
}

func dialLrange(addr string) (*lrangeClient, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &lrangeClient{nc: nc, br: bufio.NewReaderSize(nc, 64<<10)}, nil
}

// lrange sends one request and checks its reply: an array of the 100
// elements from index s.
func (c *lrangeClient) lrange(s int) error {
	c.req = append(c.req[:0], "*4\r\n$6\r\nLRANGE\r\n"...)
	c.req = appendBulk(c.req, []byte(coldListKey))
	c.req = appendBulk(c.req, strconv.AppendInt(nil, int64(s), 10))
	c.req = appendBulk(c.req, strconv.AppendInt(nil, int64(s+coldListRange-1), 10))
	if err := c.nc.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		return err
	}
	if _, err := c.nc.Write(c.req); err != nil {
		return err
	}
	n, err := c.header('*')
	if err != nil {
		return err
	}
	if n != coldListRange {
		return fmt.Errorf("%d elements, want %d", n, coldListRange)
	}
	for j := range n {
		c.elem = queueElem(c.elem[:0], s+j)
		l, err := c.header('$')
		if err != nil {
			return fmt.Errorf("element %d: %w", j, err)
		}
		b, err := c.br.Peek(l + 2)
		if err != nil {
			return fmt.Errorf("element %d: %w", j, err)
		}
		if !bytes.Equal(b[:l], c.elem) || b[l] != '\r' || b[l+1] != '\n' {
			return fmt.Errorf("element %d is %q, want %q", j, harness.Trunc(string(b[:l]), 80), c.elem)
		}
		if _, err := c.br.Discard(l + 2); err != nil {
			return err
		}
	}
	return nil
}

// header reads a line "<kind><n>\r\n" and returns n; any other line (an
// error reply, say) is an error.
func (c *lrangeClient) header(kind byte) (int, error) {
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 4 || line[0] != kind || line[len(line)-2] != '\r' {
		return 0, fmt.Errorf("reply %q, want %q and a length", harness.Trunc(string(line), 200), kind)
	}
	n, err := strconv.Atoi(string(line[1 : len(line)-2]))
	if err != nil || n < 0 || n > 1<<20 {
		return 0, fmt.Errorf("reply %q: bad length", line)
	}
	return n, nil
}

// TestBenchQueue runs the workload of TestQueueFiveMillion, with
// queueBenchElems elements (SPILLWAY_BENCH_FULL=1: 5,000,000), benchReps
// times against redis-server and against Spillway with --maxmemory 32mb,
// and reports median push and pop rates and peak RSS side by side.
func TestBenchQueue(t *testing.T) {
	needBench(t)
	began := time.Now()
	n := queueBenchElems
	if os.Getenv("SPILLWAY_BENCH_FULL") == "1" {
		n = queueFullElems
	}
	type target struct {
		name, desc string
		s          *harness.Server
		res        []queueResult
	}
	targets := []*target{
		{name: "redis", desc: "`redis-server --save '' --appendonly no`: the queue in memory", s: harness.StartRedis(t)},
		{name: "spw-" + queueBenchMem, desc: "`spillway --maxmemory " + queueBenchMem + "` (default appendfsync everysec)",
			s: harness.StartSpillway(t, "", "--maxmemory", queueBenchMem)},
	}
	// Repetitions are interleaved; each drains the queue it pushed, so the
	// next starts from an empty key on the same server.
	for rep := 1; rep <= benchReps; rep++ {
		for _, tg := range targets {
			tg.res = append(tg.res, runQueue(t, tg.s, "queue", n, uint64(rep), 10*time.Minute, nil))
		}
	}

	type figures struct{ push, pop, rpush, lpop, peakMB float64 }
	fig := func(tg *target) figures {
		var f figures
		var push, pop, rpush, lpop []float64
		for _, r := range tg.res {
			push = append(push, float64(r.n)/r.pushTime.Seconds())
			pop = append(pop, float64(r.n)/r.popTime.Seconds())
			rpush = append(rpush, float64(r.pushCmds)/r.pushTime.Seconds())
			lpop = append(lpop, float64(r.popCmds)/r.popTime.Seconds())
			f.peakMB = max(f.peakMB, float64(r.peak())/(1<<20))
		}
		f.push, f.pop, f.rpush, f.lpop = median(push), median(pop), median(rpush), median(lpop)
		return f
	}
	title := fmt.Sprintf("Queue: %s elements of %d-%d bytes pushed by RPUSH (mostly 100-500 a command), "+
		"then drained by LPOP (mostly with a count of 100-500); one connection, %d commands in flight; median of %d runs",
		thousands(float64(n)), queueElemMin, queueElemMax, queueWindow, benchReps)
	var md strings.Builder
	md.WriteString("Targets, each started by the benchmark on loopback:\n\n")
	for _, tg := range targets {
		fmt.Fprintf(&md, "- `%s`: %s\n", tg.name, tg.desc)
	}
	fmt.Fprintf(&md, "\nEach run pushes every element, then drains the queue, so the next starts from an empty key; "+
		"the %d runs alternate between the targets. pushes/s and pops/s count elements, RPUSH/s and LPOP/s commands; "+
		"every element is checked. Peak RSS is the largest of VmRSS sampled every 50 ms and VmHWM over all runs.\n\n", benchReps)
	md.WriteString(strings.TrimSpace(machineNotes()) + "\n\n")
	ref, spw := targets[0], targets[1]
	fr, fs := fig(ref), fig(spw)
	metrics := []struct {
		label, workload, metric string
		ref, spw                float64
	}{
		{"pushes/s", "push (elements)", benchreport.OpsPerSec, fr.push, fs.push},
		{"RPUSH/s", "RPUSH (commands)", benchreport.OpsPerSec, fr.rpush, fs.rpush},
		{"pops/s", "pop (elements)", benchreport.OpsPerSec, fr.pop, fs.pop},
		{"LPOP/s", "LPOP (commands)", benchreport.OpsPerSec, fr.lpop, fs.lpop},
		{"peak RSS MB", "queue", benchreport.RSSMB, fr.peakMB, fs.peakMB},
	}
	var rows [][]string
	var figs []benchreport.Figure
	for _, m := range metrics {
		format := thousands
		if m.metric == benchreport.RSSMB {
			format = func(v float64) string { return fmt.Sprintf("%.0f", v) }
		}
		rows = append(rows, []string{m.label, format(m.ref), format(m.spw), benchreport.Ratio(m.spw, m.ref)})
		figs = append(figs,
			benchreport.Figure{Section: title, Workload: m.workload, Target: ref.name, Metric: m.metric, Value: m.ref},
			benchreport.Figure{Section: title, Workload: m.workload, Target: spw.name, Metric: m.metric, Value: m.spw,
				Reference: ref.name})
	}
	md.WriteString(benchreport.Table([]string{"figure", ref.name, spw.name, spw.name + "/" + ref.name}, rows))
	fmt.Fprintf(&md, "\n(Section took %v.)\n", time.Since(began).Round(time.Second))
	benchreport.Default.Add(figs...)
	benchreport.Default.AddSection(title, md.String())
}
