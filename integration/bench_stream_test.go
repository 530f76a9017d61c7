package integration

// The stream part of `make bench-full`: redis-benchmark's XADD (trimmed
// with MAXLEN ~) and a page of XRANGE on a stream Spillway holds in
// memory, then a consumer group drained with XREADGROUP COUNT 10 and XACK
// (one client, request after request), then a stream far bigger than
// Spillway's budget: XADD throughput at its start and its end, and XRANGE
// pages from random points. Like the rest of the benchmark it reports
// Markdown tables and asserts nothing about time; it fails only when a
// tool or server does not work.

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
	coldStreamEntries  = 300_000 // entries of the cold stream
	coldStreamMaxMem   = "16mb"
	coldStreamPages    = 2000 // XRANGE pages from random points
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
	md.WriteString(benchColdStream(t))
	fmt.Fprintf(&md, "\n(Section took %v.)\n", time.Since(began).Round(time.Second))
	benchreport.Default.Add(figs...)
	benchreport.Default.AddSection(title, md.String())
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

// benchColdStream loads a stream many times Spillway's hot budget and
// reports XADD throughput at its start and end and XRANGE page latency.
func benchColdStream(t *testing.T) string {
	spw := harness.StartSpillway(t, "", "--maxmemory", coldStreamMaxMem, "--appendfsync", "no")
	defer spw.Term()
	c := harness.MustDial(t, spw.Addr())
	c.Timeout = time.Minute
	add := benchCmd{"XADD", []string{"XADD", "cold", "*", "field", "__rand_int__", "pad", strings.Repeat("p", 100)}, 1000, nil}
	first, err := runRedisBenchmark(spw.Addr(), add, 16, 50_000)
	if err != nil {
		t.Fatal(err)
	}
	for c.Do("XLEN", "cold").Int < coldStreamEntries-50_000 {
		if _, err := runRedisBenchmark(spw.Addr(), add, 16, 50_000); err != nil {
			t.Fatal(err)
		}
	}
	last, err := runRedisBenchmark(spw.Addr(), add, 16, 50_000)
	if err != nil {
		t.Fatal(err)
	}
	n := c.Do("XLEN", "cold").Int
	lo := c.Do("XRANGE", "cold", "-", "+", "COUNT", "1").Elems[0].Elems[0].Str
	hi := c.Do("XREVRANGE", "cold", "+", "-", "COUNT", "1").Elems[0].Elems[0].Str
	loMs, _ := strconv.ParseInt(strings.Split(lo, "-")[0], 10, 64)
	hiMs, _ := strconv.ParseInt(strings.Split(hi, "-")[0], 10, 64)
	lat := make([]time.Duration, 0, coldStreamPages)
	for range coldStreamPages {
		from := strconv.FormatInt(loMs+rand.Int64N(hiMs-loMs+1), 10)
		s := time.Now()
		r := c.Do("XRANGE", "cold", from, "+", "COUNT", "10")
		lat = append(lat, time.Since(s))
		if r.Type != '*' {
			t.Fatalf("XRANGE: %s", r.String())
		}
	}
	slices.Sort(lat)
	info := tieringInfo(t, spw)
	return fmt.Sprintf("\nCold stream: `spillway --maxmemory %s --appendfsync no`, %s entries of about 120 bytes "+
		"(XADD * field __rand_int__ pad <100 bytes>, redis-benchmark -c %d -P 16 -n 50000 runs): XADD %s ops/s over the "+
		"first 50,000 entries, %s ops/s over the last 50,000; %d XRANGE pages of 10 from random points, one client: "+
		"p50 %.3f ms, p99 %.3f ms. INFO tiering after: %s\n",
		coldStreamMaxMem, thousands(float64(n)), benchClients, thousands(first.rps), thousands(last.rps), coldStreamPages,
		lat[len(lat)/2].Seconds()*1000, lat[len(lat)*99/100].Seconds()*1000, tieringFields(info))
}
