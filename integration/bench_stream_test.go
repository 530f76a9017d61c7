package integration

// The stream part of the benchmark. TestBenchStreams (`make bench-full`):
// redis-benchmark's XADD (trimmed with MAXLEN ~) and a page of XRANGE on a
// stream Spillway holds in memory, then a consumer group drained with
// XREADGROUP COUNT 10 and XACK (one client, request after request).
// TestBenchStreamTenMillion (`make bench`): a
// stream of 10,000,000 entries under maxmemory 64mb. Like the rest of the
// benchmark they report Markdown tables and assert nothing about time; they
// fail only when a tool or server does not work, or when a restart loses
// an acknowledged entry or pending entry.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/benchreport"
	"github.com/spillway/spillway/integration/harness"
)

const (
	streamBenchMaxLen  = 100_000 // MAXLEN ~ of the hot XADD runs
	streamConsumeCount = 20_000  // entries drained by the consumer group
)

var streamCommands = []benchCmd{
	{"XADD", []string{"XADD", "mystream", "MAXLEN", "~", strconv.Itoa(streamBenchMaxLen), "*", "field", "__rand_int__"}, streamBenchMaxLen, nil},
	{"XRANGE_10", []string{"XRANGE", "mystream", "-", "+", "COUNT", "10"}, streamBenchMaxLen, nil},
}

// TestBenchStreams measures streams in Spillway against redis-server.
func TestBenchStreams(t *testing.T) {
	needBench(t)
	began := time.Now()
	redis := harness.StartRedis(t)
	spw := harness.StartSpillway(t, "", "--maxmemory", "512mb")
	defer redis.Term()
	defer spw.Term()
	targets := []benchTarget{
		{"redis", redis.Addr(), "`redis-server --save '' --appendonly no`"},
		{"spw-hot", spw.Addr(), "`spillway --maxmemory 512mb` (default appendfsync everysec): mystream held in memory, every entry also stored"},
	}
	samples := map[cellKey][]benchSample{}
	for _, tg := range targets {
		for _, p := range benchPipelines {
			for _, c := range streamCommands {
				n, err := calibrate(tg.addr, c, p)
				if err != nil {
					t.Fatalf("%s %s -P %d: %v", tg.name, c.label, p, err)
				}
				s, err := runRedisBenchmark(tg.addr, c, p, n)
				if err != nil {
					t.Fatalf("%s %s -P %d: %v", tg.name, c.label, p, err)
				}
				samples[cellKey{tg.name, c.label, p}] = append(samples[cellKey{tg.name, c.label, p}], s)
			}
		}
	}
	title := "Streams: redis-benchmark XADD mystream MAXLEN ~ 100000 * and XRANGE mystream - + COUNT 10"
	var md strings.Builder
	md.WriteString(targetLegend(targets))
	md.WriteString("\n" + strings.TrimSpace(machineNotes()) + "\n\n")
	table, figs := benchCmdTable(title, targets, streamCommands, samples)
	md.WriteString(table)

	fmt.Fprintf(&md, "\nConsumer group: %s entries drained by one client with XREADGROUP GROUP g c COUNT 10 STREAMS q > "+
		"then XACK of the 10 IDs, request after request:\n\n| target | entries/s |\n| --- | --- |\n", thousands(streamConsumeCount))
	for _, tg := range targets {
		rate := benchConsume(t, tg.addr)
		fmt.Fprintf(&md, "| %s | %s |\n", tg.name, thousands(rate))
		ref := "redis"
		if tg.name == "redis" {
			ref = ""
		}
		figs = append(figs, benchreport.Figure{Section: title, Workload: "XREADGROUP+XACK", Target: tg.name,
			Metric: benchreport.OpsPerSec, Value: rate, Reference: ref})
	}
	figs = append(figs, benchXAckBacklog(t, &md, title, redis)...)
	fmt.Fprintf(&md, "\n(Section took %v.)\n", time.Since(began).Round(time.Second))
	benchreport.Default.Add(figs...)
	benchreport.Default.AddSection(title, md.String())
}

// The XACK backlog row: a queue whose consumers died leaves every entry
// pending; a new consumer acknowledges them one request at a time.
const (
	xackBacklog    = 20_000           // entries delivered, none acknowledged
	xackBacklogMem = "8mb"            // Spillway's maxmemory: the stream and its PEL are cold
	xackBacklogFor = 10 * time.Second // at most this long acknowledging
)

// benchXAckBacklog measures XACK on a backlog of xackBacklog pending
// entries against redis and a Spillway under maxmemory xackBacklogMem
// (the stream and its group's PEL do not fit its hot tier: cold), writes
// the table to md and returns the figures.
func benchXAckBacklog(t *testing.T, md *strings.Builder, section string, redis *harness.Server) []benchreport.Figure {
	spw := harness.StartSpillway(t, "", "--maxmemory", xackBacklogMem)
	defer spw.Term()
	fmt.Fprintf(md, "\nXACK on a cold backlog: a stream of %s entries all delivered to a group's consumers "+
		"(XREADGROUP COUNT 1000, none acknowledged), then XACK of one ID per request, oldest first, one client, "+
		"for %s entries or %v; Spillway under `--maxmemory %s` (the stream and its pending entries are cold); "+
		"store reads are INFO's cold_store_gets + cold_store_iter_points a command:\n\n"+
		"| target | XACKs/s | vs redis | store reads per XACK |\n| --- | --- | --- | --- |\n",
		thousands(xackBacklog), thousands(xackBacklog), xackBacklogFor, xackBacklogMem)
	var figs []benchreport.Figure
	var redisRate float64
	for _, tg := range []struct {
		name string
		srv  *harness.Server
	}{{"redis", redis}, {"spw-cold", spw}} {
		rate, reads := xackBacklogRate(t, tg.srv, tg.name != "redis")
		ratio, readsCol := "", "-"
		if tg.name == "redis" {
			redisRate = rate
		} else {
			ratio = fmt.Sprintf("%.2fx", rate/redisRate)
			readsCol = fmt.Sprintf("%.1f", reads)
		}
		fmt.Fprintf(md, "| %s | %s | %s | %s |\n", tg.name, thousands(rate), ratio, readsCol)
		ref := "redis"
		if tg.name == "redis" {
			ref = ""
		}
		figs = append(figs, benchreport.Figure{Section: section, Workload: "XACK cold backlog", Target: tg.name,
			Metric: benchreport.OpsPerSec, Value: rate, Reference: ref})
	}
	return figs
}

// xackBacklogRate loads the backlog into srv and acknowledges it; it
// returns XACKs per second and, with store, the store reads per XACK.
func xackBacklogRate(t *testing.T, srv *harness.Server, store bool) (float64, float64) {
	c := harness.MustDial(t, srv.Addr())
	defer c.Close()
	c.Timeout = time.Minute
	c.Do("DEL", "backlog")
	pipe(t, c, xackBacklog, 500, func(i int) []string {
		return []string{"XADD", "backlog", strconv.Itoa(i + 1), "job", "payload " + strconv.Itoa(i)}
	}, func(int, harness.Reply) error { return nil })
	if r := c.Do("XGROUP", "CREATE", "backlog", "g", "0"); r.Str != "OK" {
		t.Fatalf("XGROUP CREATE: %s", r.String())
	}
	for read := 0; read < xackBacklog; read += 1000 {
		consumer := "worker" + strconv.Itoa(read/1000%4)
		r := c.Do("XREADGROUP", "GROUP", "g", consumer, "COUNT", "1000", "STREAMS", "backlog", ">")
		if len(r.Elems) != 1 || len(r.Elems[0].Elems) != 2 || len(r.Elems[0].Elems[1].Elems) != 1000 {
			t.Fatalf("XREADGROUP after %d: %s", read, harness.Trunc(r.String(), 200))
		}
	}
	reads := func() int64 {
		if !store {
			return 0
		}
		m, err := harness.Info(c, "tiering")
		if err != nil {
			t.Fatal(err)
		}
		g, _ := strconv.ParseInt(m["cold_store_gets"], 10, 64)
		p, _ := strconv.ParseInt(m["cold_store_iter_points"], 10, 64)
		return g + p
	}
	before := reads()
	start := time.Now()
	done := 0
	for done < xackBacklog && time.Since(start) < xackBacklogFor {
		if r := c.Do("XACK", "backlog", "g", strconv.Itoa(done+1)); r.Int != 1 {
			t.Fatalf("XACK %d: %s", done+1, r.String())
		}
		done++
	}
	elapsed := time.Since(start)
	return float64(done) / elapsed.Seconds(), float64(reads()-before) / float64(done)
}

// benchConsume fills stream q, then drains it through a consumer group,
// acknowledging every entry; it returns entries per second.
func benchConsume(t *testing.T, addr string) float64 {
	c := harness.MustDial(t, addr)
	defer c.Close()
	c.Timeout = time.Minute
	c.Do("DEL", "q")
	pipe(t, c, streamConsumeCount, 500, func(i int) []string { return []string{"XADD", "q", "*", "f", strconv.Itoa(i)} },
		func(int, harness.Reply) error { return nil })
	if r := c.Do("XGROUP", "CREATE", "q", "g", "0"); r.Str != "OK" {
		t.Fatalf("XGROUP CREATE: %s", r.String())
	}
	start := time.Now()
	done := 0
	for done < streamConsumeCount {
		r := c.Do("XREADGROUP", "GROUP", "g", "c", "COUNT", "10", "STREAMS", "q", ">")
		if len(r.Elems) != 1 || len(r.Elems[0].Elems) != 2 {
			t.Fatalf("XREADGROUP after %d entries: %s", done, harness.Trunc(r.String(), 200))
		}
		ack := []string{"XACK", "q", "g"}
		for _, e := range r.Elems[0].Elems[1].Elems {
			ack = append(ack, e.Elems[0].Str)
		}
		if r := c.Do(ack...); r.Int != int64(len(ack)-3) {
			t.Fatalf("XACK: %s", r.String())
		}
		done += len(ack) - 3
	}
	return float64(done) / time.Since(start).Seconds()
}

// The stream of TestBenchStreamTenMillion: issue 20's figure.
const (
	bigStreamEntries = 10_000_000
	bigStreamMaxMem  = "64mb"
	bigStreamBudget  = 64 << 20
	bigStreamChunk   = bigStreamEntries / 10 // one redis-benchmark run: 10% of the stream
	bigStreamPages   = 2000                  // XRANGE pages from random points
	bigStreamPairs   = 3                     // alternate runs on the big stream and a new Spillway's at the end
	// bigStreamLoadLimit bounds the load: on a machine too slow to add
	// the 10 million entries in it, the figures are those of the entries
	// added, and the report says how many.
	bigStreamLoadLimit = 10 * time.Minute
	// The kill -9 part: a consumer group with pending entries, then about
	// bigStreamKillAfter of pipelined XADDs (batches of bigStreamKillBatch)
	// and XREADGROUP/XACK rounds under appendfsync always, then kill -9.
	bigStreamKillAfter = 2 * time.Second
	bigStreamKillBatch = 100
	bigStreamGroupRead = 1000 // entries the group's consumer c1 reads before the load
	bigStreamGroupAcks = 300  // of which it acknowledges the first ones
)

// TestBenchStreamTenMillion loads a stream of 10,000,000 entries into a
// Spillway whose budget (maxmemory 64mb) is a fraction of it and reports
// XADD throughput over the first and the last 10% of the entries (and, at
// the end, on the big stream and on a new one in a new Spillway
// alternately: the machine's rate then), XRANGE pages from
// random points, RSS against the budget, then kills Spillway with SIGKILL
// under a pipelined XADD and XREADGROUP/XACK load (appendfsync always) and
// checks after the restart that every acknowledged entry is there, and the
// group's pending entries are what the acknowledged replies left.
func TestBenchStreamTenMillion(t *testing.T) {
	needBench(t)
	began := time.Now()
	spw := harness.StartSpillway(t, "", "--maxmemory", bigStreamMaxMem)
	defer spw.Term()
	rss := harness.SampleRSS(spw.Pid(), 100*time.Millisecond)
	c := harness.MustDial(t, spw.Addr())
	c.Timeout = time.Minute
	add := func(key string) benchCmd {
		return benchCmd{"XADD", []string{"XADD", key, "*", "field", "__rand_int__", "pad", strings.Repeat("p", 100)}, 1_000_000, nil}
	}
	var rates []float64
	loadStart := time.Now()
	n := int64(0)
	for n < bigStreamEntries && time.Since(loadStart) < bigStreamLoadLimit {
		s, err := runRedisBenchmark(spw.Addr(), add("big"), 16, bigStreamChunk)
		if err != nil {
			t.Fatal(err)
		}
		rates = append(rates, s.rps)
		if n = c.Do("XLEN", "big").Int; n != int64(len(rates))*bigStreamChunk {
			t.Fatalf("XLEN big after %d runs of %d XADDs: %d", len(rates), bigStreamChunk, n)
		}
	}
	loadTime := time.Since(loadStart)
	loadPeak, _ := rss.Peak()
	// At the end, the big stream against a new stream in a new Spillway
	// (an empty store), alternately: the machine's rate at that moment, for
	// the end-versus-start comparison on a machine shared with other work.
	ref := harness.StartSpillway(t, "", "--maxmemory", bigStreamMaxMem)
	var endBig, endFresh []float64
	for range bigStreamPairs {
		for _, addr := range []string{spw.Addr(), ref.Addr()} {
			s, err := runRedisBenchmark(addr, add("big"), 16, bigStreamChunk/4)
			if err != nil {
				t.Fatal(err)
			}
			if addr == spw.Addr() {
				endBig = append(endBig, s.rps)
			} else {
				endFresh = append(endFresh, s.rps)
			}
		}
	}
	ref.Term()
	slices.Sort(endBig)
	slices.Sort(endFresh)
	bigMed, freshMed := endBig[len(endBig)/2], endFresh[len(endFresh)/2]

	p50, p99 := timeBigStreamPages(t, c)
	rssNow := spw.RSS()
	info := tieringInfo(t, spw)

	peak, _, err := rss.Stop()
	if err != nil {
		t.Fatal(err)
	}
	hwm, err := harness.ProcPeakRSS(spw.Pid())
	if err != nil {
		t.Fatal(err)
	}
	killNote := bigStreamKill(t, spw)
	restartRSS := spw.RSS()

	var md strings.Builder
	fmt.Fprintf(&md, "`spillway --maxmemory %s` (appendfsync everysec while loading), one stream of %s entries of about "+
		"120 bytes (XADD big * field __rand_int__ pad <100 bytes>), added by %d redis-benchmark runs of %s "+
		"(-c %d -P 16) in %v.\n\n", bigStreamMaxMem, thousands(float64(n)), len(rates), thousands(bigStreamChunk),
		benchClients, loadTime.Round(time.Second))
	md.WriteString("| figure | value |\n| --- | --- |\n")
	fmt.Fprintf(&md, "| XADD, first 10%% of the entries | %s ops/s |\n", thousands(rates[0]))
	fmt.Fprintf(&md, "| XADD, last 10%% of the entries | %s ops/s (%.2f of the first) |\n", thousands(rates[len(rates)-1]),
		rates[len(rates)-1]/rates[0])
	fmt.Fprintf(&md, "| XADD, every 10%% in order | %s |\n", joinRates(rates))
	fmt.Fprintf(&md, "| then, alternately, %d runs of %s XADDs to the big stream and to a new stream in a new Spillway (the machine's rate then): medians | big %s ops/s, new %s ops/s (%.2f) |\n",
		bigStreamPairs, thousands(bigStreamChunk/4), thousands(bigMed), thousands(freshMed), bigMed/freshMed)
	fmt.Fprintf(&md, "| XRANGE big <random ms> + COUNT 10, %d pages, one client | p50 %.3f ms, p99 %.3f ms |\n",
		bigStreamPages, p50, p99)
	fmt.Fprintf(&md, "| RSS after loading / peak while loading (budget %s) | %s / %s MiB |\n", bigStreamMaxMem,
		mib(rssNow), mib(loadPeak))
	fmt.Fprintf(&md, "| peak RSS before the kill: sampled every 100 ms / VmHWM | %s / %s MiB |\n", mib(peak), mib(hwm))
	fmt.Fprintf(&md, "| RSS after the restart and its checks | %s MiB |\n", mib(restartRSS))
	fmt.Fprintf(&md, "| kill -9 under load, then restart | %s |\n", killNote)
	fmt.Fprintf(&md, "\nINFO tiering after loading: %s\n\n(Section took %v.)\n", tieringFields(info), time.Since(began).Round(time.Second))
	title := "Streams: 10,000,000 entries under maxmemory 64mb"
	benchreport.Default.Add(
		benchreport.Figure{Section: title, Workload: "XADD first 10%", Target: "spillway", Metric: benchreport.OpsPerSec, Value: rates[0]},
		benchreport.Figure{Section: title, Workload: "XADD last 10%", Target: "spillway", Metric: benchreport.OpsPerSec, Value: rates[len(rates)-1]},
		benchreport.Figure{Section: title, Workload: "XRANGE COUNT 10", Target: "spillway", Metric: benchreport.P99ms, Value: p99},
		benchreport.Figure{Section: title, Workload: "XRANGE COUNT 10", Target: "spillway", Metric: benchreport.P50ms, Value: p50},
	)
	benchreport.Default.AddSection(title, md.String())
}

func mib(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

func joinRates(rates []float64) string {
	parts := make([]string, len(rates))
	for i, r := range rates {
		parts[i] = thousands(r)
	}
	return strings.Join(parts, ", ")
}

// timeBigStreamPages times bigStreamPages XRANGE pages of 10 from random
// milliseconds of the stream big and returns their median and p99 in ms.
func timeBigStreamPages(t *testing.T, c *harness.Conn) (p50, p99 float64) {
	t.Helper()
	msOf := func(r harness.Reply) int64 {
		if len(r.Elems) != 1 || len(r.Elems[0].Elems) != 2 {
			t.Fatalf("XRANGE/XREVRANGE COUNT 1: %s", harness.Trunc(r.String(), 200))
		}
		ms, err := strconv.ParseInt(strings.Split(r.Elems[0].Elems[0].Str, "-")[0], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}
	lo := msOf(c.Do("XRANGE", "big", "-", "+", "COUNT", "1"))
	hi := msOf(c.Do("XREVRANGE", "big", "+", "-", "COUNT", "1"))
	lat := make([]time.Duration, 0, bigStreamPages)
	for range bigStreamPages {
		from := strconv.FormatInt(lo+rand.Int64N(hi-lo+1), 10)
		s := time.Now()
		r := c.Do("XRANGE", "big", from, "+", "COUNT", "10")
		lat = append(lat, time.Since(s))
		if r.Type != '*' || len(r.Elems) == 0 {
			t.Fatalf("XRANGE big %s + COUNT 10: %s", from, harness.Trunc(r.String(), 200))
		}
	}
	slices.Sort(lat)
	return lat[len(lat)/2].Seconds() * 1000, lat[len(lat)*99/100].Seconds() * 1000
}

// bigStreamKill gives the stream big a consumer group with pending entries
// (c1 reads bigStreamGroupRead entries and acknowledges the first
// bigStreamGroupAcks), switches to appendfsync always, runs a pipelined
// XADD writer and an XREADGROUP/XACK consumer (c2, acknowledging half of
// each read) for bigStreamKillAfter, kills Spillway with SIGKILL and
// restarts it. It fails the test unless every XADD whose reply came back is
// in the stream and the group's pending entries are exactly those the
// replies left (an entry whose XACK got no reply may be either; a read cut
// off by the kill may have added up to 10 entries for c2). It returns the
// report's line.
func bigStreamKill(t *testing.T, spw *harness.Server) string {
	t.Helper()
	c := harness.MustDial(t, spw.Addr())
	c.Timeout = time.Minute
	for _, cmd := range [][]string{{"CONFIG", "SET", "appendfsync", "always"}, {"XGROUP", "CREATE", "big", "g", "0"}} {
		if r := c.Do(cmd...); r.Str != "OK" {
			t.Fatalf("%v: %s", cmd, r.String())
		}
	}
	idsOf := func(r harness.Reply) []string {
		if r.Type != '*' || len(r.Elems) != 1 || len(r.Elems[0].Elems) != 2 {
			return nil
		}
		var ids []string
		for _, e := range r.Elems[0].Elems[1].Elems {
			ids = append(ids, e.Elems[0].Str)
		}
		return ids
	}
	first := idsOf(c.Do("XREADGROUP", "GROUP", "g", "c1", "COUNT", strconv.Itoa(bigStreamGroupRead), "STREAMS", "big", ">"))
	if len(first) != bigStreamGroupRead {
		t.Fatalf("XREADGROUP COUNT %d read %d entries", bigStreamGroupRead, len(first))
	}
	pending := map[string]string{} // ID -> consumer, for entries that must be pending
	acked := map[string]bool{}     // entries that must not be pending
	unknown := map[string]bool{}   // XACK sent, no reply
	if r := c.Do(append([]string{"XACK", "big", "g"}, first[:bigStreamGroupAcks]...)...); r.Int != bigStreamGroupAcks {
		t.Fatalf("XACK: %s", r.String())
	}
	for i, id := range first {
		if i < bigStreamGroupAcks {
			acked[id] = true
		} else {
			pending[id] = "c1"
		}
	}
	before := c.Do("XLEN", "big").Int
	c.Close()

	var added []string // IDs of the XADDs whose reply came back
	sent := 0
	var lastDelivered string
	done := make(chan struct{}, 2)
	go func() { // the writer
		defer func() { done <- struct{}{} }()
		w, err := harness.Dial(spw.Addr())
		if err != nil {
			return
		}
		defer w.Close()
		w.Timeout = time.Minute
		for i := 0; i < 10_000_000; i += bigStreamKillBatch {
			for j := range bigStreamKillBatch {
				if w.Send("XADD", "big", "*", "f", strconv.Itoa(i+j)) != nil {
					return
				}
			}
			if w.Flush() != nil {
				return
			}
			sent += bigStreamKillBatch
			for range bigStreamKillBatch {
				r := w.Read()
				if r.Err != nil || r.Type != '$' {
					return
				}
				added = append(added, r.Str)
			}
		}
	}()
	go func() { // the consumer
		defer func() { done <- struct{}{} }()
		k, err := harness.Dial(spw.Addr())
		if err != nil {
			return
		}
		defer k.Close()
		k.Timeout = time.Minute
		for range 1_000_000 {
			r := k.Do("XREADGROUP", "GROUP", "g", "c2", "COUNT", "10", "STREAMS", "big", ">")
			if r.Err != nil {
				return
			}
			ids := idsOf(r)
			if len(ids) == 0 {
				return
			}
			lastDelivered = ids[len(ids)-1]
			half := ids[:len(ids)/2]
			for _, id := range ids[len(ids)/2:] {
				pending[id] = "c2"
			}
			for _, id := range half {
				unknown[id] = true
			}
			a := k.Do(append([]string{"XACK", "big", "g"}, half...)...)
			if a.Err != nil {
				return
			}
			for _, id := range half {
				delete(unknown, id)
				acked[id] = true
			}
		}
	}()
	time.Sleep(bigStreamKillAfter)
	spw.Kill9()
	<-done
	<-done
	began := time.Now()
	spw.Restart()
	restart := time.Since(began)

	c = harness.MustDial(t, spw.Addr())
	c.Timeout = time.Minute
	n := c.Do("XLEN", "big").Int
	if n < before+int64(len(added)) || n > before+int64(sent) {
		t.Errorf("XLEN after the restart %d: want %d to %d (%d before the load, %d XADDs acknowledged of %d sent)",
			n, before+int64(len(added)), before+int64(sent), before, len(added), sent)
	}
	missing := 0
	for lo := 0; lo < len(added); lo += 1000 {
		hi := min(lo+1000, len(added))
		for _, id := range added[lo:hi] {
			if err := c.Send("XRANGE", "big", id, id); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, id := range added[lo:hi] {
			if r := c.Read(); len(r.Elems) != 1 {
				if missing++; missing <= 5 {
					t.Errorf("acknowledged entry %s lost: XRANGE gives %s", id, harness.Trunc(r.String(), 100))
				}
			}
		}
	}
	r := c.Do("XPENDING", "big", "g", "-", "+", strconv.Itoa(len(pending)+len(unknown)+100))
	got := map[string]string{}
	for _, e := range r.Elems {
		if len(e.Elems) != 4 {
			t.Fatalf("XPENDING entry: %s", e.String())
		}
		got[e.Elems[0].Str] = e.Elems[1].Str
	}
	for id, who := range pending {
		if got[id] != who {
			t.Errorf("pending entry %s of %s: XPENDING after the restart gives %q", id, who, got[id])
		}
	}
	extra := 0
	for id, who := range got {
		switch {
		case acked[id]:
			t.Errorf("entry %s acknowledged before the kill is pending again (consumer %s)", id, who)
		case pending[id] != "" || unknown[id]:
		case who == "c2" && idAfter(id, lastDelivered):
			extra++ // the read the kill cut off
		default:
			t.Errorf("unexpected pending entry %s of %s after the restart", id, who)
		}
	}
	if extra > 10 {
		t.Errorf("%d pending entries past the last read c2 saw: one cut-off read adds at most 10", extra)
	}
	return fmt.Sprintf("SIGKILL after %v of load under appendfsync always: %s XADDs acknowledged (%s sent), "+
		"%s entries read by c2 and half of them acknowledged; restart %v; every acknowledged entry found, "+
		"XLEN %s, the group's %s pending entries as the replies left them",
		bigStreamKillAfter, thousands(float64(len(added))), thousands(float64(sent)),
		thousands(float64(len(pending)+len(acked)-bigStreamGroupRead)), restart.Round(time.Millisecond),
		thousands(float64(n)), thousands(float64(len(got))))
}

// idAfter reports whether stream ID a is greater than b ("" is the least).
func idAfter(a, b string) bool {
	if b == "" {
		return true
	}
	parse := func(s string) (uint64, uint64) {
		ms, seq, _ := strings.Cut(s, "-")
		m, _ := strconv.ParseUint(ms, 10, 64)
		q, _ := strconv.ParseUint(seq, 10, 64)
		return m, q
	}
	am, as := parse(a)
	bm, bs := parse(b)
	return am > bm || am == bm && as > bs
}
