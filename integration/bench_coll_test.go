package integration

// The cold-collections part of `make bench`: one hash and one set far
// bigger than the hot tier, read field by field from disk, against
// redis-server holding the same data in memory. Like the rest of the
// benchmark it reports Markdown tables (benchreport) and asserts nothing
// about time; it fails only when a tool or server does not work (an error
// reply, a wrong count, a wrong value).

import (
	"context"
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
	coldCollFields   = 1_000_000 // fields of coldhash, members of coldset
	coldCollValueMin = 16        // coldhash values are coldCollValueMin..Max
	coldCollValueMax = 100       // random letters
	coldCollSeqOps   = 2000      // sequential requests of the latency loop
	// The Spillway under test runs with coldCollMaxMemory. It is loaded
	// with coldCollLoadMemory, a budget that holds both structures (cold
	// per-field writes under the small one take minutes), then restarted:
	// after a restart every key is cold, and these two are never promoted,
	// being far over cold-read-max-bytes (1mb) and an eighth of the budget.
	coldCollMaxMemory  = "16mb"
	coldCollLoadMemory = "2gb"
)

// coldCollCommands are the redis-benchmark runs of the cold section; every
// field and member they name exists.
var coldCollCommands = []benchCmd{
	{"HGET", []string{"HGET", "coldhash", "field:__rand_int__"}, coldCollFields, nil},
	{"SISMEMBER", []string{"SISMEMBER", "coldset", "member:__rand_int__"}, coldCollFields, nil},
}

// coldCollValue is the value of coldhash's field i: a slice of pool of
// coldCollValueMin..Max bytes picked by a generator seeded with i, so the
// latency loop can check any field without keeping the data set.
func coldCollValue(pool []byte, i int) []byte {
	r := rand.New(rand.NewPCG(5, uint64(i)))
	n := coldCollValueMin + r.IntN(coldCollValueMax-coldCollValueMin+1)
	off := r.IntN(len(pool) - n)
	return pool[off : off+n]
}

func coldCollPool() []byte { return randomLetters(rand.New(rand.NewPCG(5, 6)), 1<<16) }

// benchColdCollections is TestBenchColdCollections (declared next to the
// other TestBench functions so that it runs between them).
func benchColdCollections(t *testing.T) {
	began := time.Now()
	pool := coldCollPool()
	file := filepath.Join(t.TempDir(), "coll.resp")
	err := writeRESP(file, func(w *respWriter) {
		writeCollBatches(w, "coldhash", "coldset", "field:%012d", "member:%012d", coldCollFields,
			func(i int) []byte { return coldCollValue(pool, i) })
	})
	if err != nil {
		t.Fatal(err)
	}

	redis := harness.StartRedis(t)
	dir := t.TempDir()
	loader := harness.StartSpillway(t, dir, "--maxmemory", coldCollLoadMemory)
	commands := 2 * ((coldCollFields + benchCollBatch - 1) / benchCollBatch)
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
	spw := harness.StartSpillway(t, dir, "--maxmemory", coldCollMaxMemory)
	for name, s := range map[string]*harness.Server{"redis": redis, "spillway": spw} {
		c := s.Conn(t)
		for _, q := range [][]string{{"HLEN", "coldhash"}, {"SCARD", "coldset"}} {
			if r := c.Do(q[0], q[1]); r.Err != nil || r.Int != coldCollFields {
				t.Fatalf("%s: %s = %s, want %d", name, strings.Join(q, " "), r.String(), coldCollFields)
			}
		}
	}
	before := tieringInfo(t, spw)
	t.Logf("cold collections loaded (redis %v, spillway %v) and restarted at %v",
		loadTime[0].Round(time.Millisecond), loadTime[1].Round(time.Millisecond), time.Since(began).Round(time.Millisecond))

	targets := []benchTarget{
		{"redis", redis.Addr(), "`redis-server --save '' --appendonly no`: both structures in memory"},
		{"spw-cold", spw.Addr(), "`spillway --maxmemory " + coldCollMaxMemory + "`, loaded with `--maxmemory " +
			coldCollLoadMemory + "` and restarted: both structures cold, read per field from disk"},
	}

	// The sequential loop runs first, on a freshly restarted server.
	seq := map[cellKey][]time.Duration{}
	for _, tg := range targets {
		for _, c := range coldCollCommands {
			d, err := coldCollSequential(t, tg.addr, c.label, pool)
			if err != nil {
				t.Fatalf("%s: %v", tg.name, err)
			}
			seq[cellKey{tg.name, c.label, 1}] = d
		}
	}

	sizes := map[cellKey]int{}
	for _, tg := range targets {
		for _, p := range benchPipelines {
			for _, c := range coldCollCommands {
				n, err := calibrate(tg.addr, c, p)
				if err != nil {
					t.Fatalf("%s %s -P %d: %v", tg.name, c.label, p, err)
				}
				sizes[cellKey{tg.name, c.label, p}] = n
			}
		}
	}
	samples := map[cellKey][]benchSample{}
	for rep := 1; rep <= benchReps; rep++ {
		for _, tg := range targets {
			for _, p := range benchPipelines {
				for _, c := range coldCollCommands {
					k := cellKey{tg.name, c.label, p}
					s, err := runRedisBenchmark(tg.addr, c, p, sizes[k])
					if err != nil {
						t.Fatalf("%s %s -P %d: %v", tg.name, c.label, p, err)
					}
					samples[k] = append(samples[k], s)
				}
			}
		}
	}
	after := tieringInfo(t, spw)

	title := fmt.Sprintf("Cold hash and set: HGET/SISMEMBER on a hash of %d fields (%d-%d byte values) and a set of %d members",
		coldCollFields, coldCollValueMin, coldCollValueMax, coldCollFields)
	var md strings.Builder
	md.WriteString(targetLegend(targets))
	fmt.Fprintf(&md, "\nLoad: `redis-cli --pipe`, %d HSET/SADD of %d fields/members each, into both servers at once: "+
		"redis %.1f s, spillway %.1f s (at --maxmemory %s).\n\n",
		commands, benchCollBatch, loadTime[0].Seconds(), loadTime[1].Seconds(), coldCollLoadMemory)
	md.WriteString(strings.TrimSpace(machineNotes()) + "\n\n")
	fmt.Fprintf(&md, "**Throughput**: `redis-benchmark -c %d -r %d` with `-P 1` and `-P 16`, every field and member exists; "+
		"each cell the median of %d runs of about %v, -n calibrated on each target (short runs of growing size, also a warm-up); "+
		"the cold store's files are in the OS page cache, as after the load. %s\n\n",
		benchClients, coldCollFields, benchReps, benchRunTime, benchLatencyNote)
	table, figs := benchCmdTable(title, targets, coldCollCommands, samples)
	md.WriteString(table)
	fmt.Fprintf(&md, "\nSpread: %s.\n\n", spreadNote(samples))

	fmt.Fprintf(&md, "**Sequential latency**: %d requests one at a time (go-redis, one connection, random fields, "+
		"every reply checked), run first on the freshly restarted servers; ms:\n\n", coldCollSeqOps)
	var rows []clientRow
	for _, c := range coldCollCommands {
		row := clientRow{lead: []string{c.label}, workload: clientsWorkload(c.label, 1), cells: map[string]clientCell{}}
		for _, tg := range targets {
			d := seq[cellKey{tg.name, c.label, 1}]
			var sum time.Duration
			for _, x := range d {
				sum += x
			}
			row.cells[tg.name] = clientCell{rps: float64(len(d)) / sum.Seconds(), lat: d}
		}
		rows = append(rows, row)
	}
	table, seqFigs := clientTable(title, []string{"op"}, targets, rows)
	md.WriteString(table)
	md.WriteString("\n" + coldCollTieringNote(before, after))
	fmt.Fprintf(&md, "\n(Section took %v, loads included.)\n", time.Since(began).Round(time.Second))

	figs = append(figs, seqFigs...)
	figs = append(figs, loadFigures(title, "load (redis-cli --pipe)", loadTime)...)
	benchreport.Default.Add(figs...)
	benchreport.Default.AddSection(title, md.String())
}

// benchLatencyNote explains the p50/p99 of a redis-benchmark table.
const benchLatencyNote = "p50/p99: redis-benchmark's latency per request; with -P 16 a request waits for its whole batch."

// loadFigures returns the durations of a load into redis-server
// (loadTime[0]) and Spillway (loadTime[1]) as Seconds figures of workload.
func loadFigures(section, workload string, loadTime [2]time.Duration) []benchreport.Figure {
	return []benchreport.Figure{
		{Section: section, Workload: workload, Target: "redis", Metric: benchreport.Seconds, Value: loadTime[0].Seconds()},
		{Section: section, Workload: workload, Target: "spillway", Metric: benchreport.Seconds, Value: loadTime[1].Seconds(),
			Reference: "redis"},
	}
}

// benchCmdTable renders the redis-benchmark cells of a section as one
// Markdown table, a row per pipeline and command: each target's median
// ops/s, each later target's ratio to the first (the reference), and each
// target's median p50/p99 latency in ms, "-" where a cell was not
// measured. It returns the medians as figures (OpsPerSec, P50ms, P99ms,
// Workload "CMD -P n", the later targets referring to the first).
func benchCmdTable(section string, targets []benchTarget, cmds []benchCmd, samples map[cellKey][]benchSample) (string, []benchreport.Figure) {
	if len(targets) == 0 {
		return "", nil
	}
	ref := targets[0].name
	header := []string{"op", "P"}
	for _, tg := range targets {
		header = append(header, tg.name+" ops/s")
	}
	for _, tg := range targets[1:] {
		header = append(header, tg.name+"/"+ref)
	}
	for _, tg := range targets {
		header = append(header, tg.name+" p50/p99 ms")
	}
	var rows [][]string
	var figs []benchreport.Figure
	for _, p := range benchPipelines {
		for _, c := range cmds {
			row := []string{c.label, strconv.Itoa(p)}
			rps := map[string]float64{}
			var lat []string
			for i, tg := range targets {
				ss := samples[cellKey{tg.name, c.label, p}]
				if len(ss) == 0 {
					row = append(row, "-")
					lat = append(lat, "-")
					continue
				}
				r := medianOf(ss, func(s benchSample) float64 { return s.rps })
				p50 := medianOf(ss, func(s benchSample) float64 { return s.p50 })
				p99 := medianOf(ss, func(s benchSample) float64 { return s.p99 })
				rps[tg.name] = r
				row = append(row, thousands(r))
				lat = append(lat, fmt.Sprintf("%.3f/%.3f", p50, p99))
				tgRef := ref
				if i == 0 {
					tgRef = ""
				}
				wl := benchWorkload(c.label, p)
				figs = append(figs,
					benchreport.Figure{Section: section, Workload: wl, Target: tg.name, Metric: benchreport.OpsPerSec, Value: r, Reference: tgRef},
					benchreport.Figure{Section: section, Workload: wl, Target: tg.name, Metric: benchreport.P50ms, Value: p50, Reference: tgRef},
					benchreport.Figure{Section: section, Workload: wl, Target: tg.name, Metric: benchreport.P99ms, Value: p99, Reference: tgRef})
			}
			for _, tg := range targets[1:] {
				row = append(row, benchreport.Ratio(rps[tg.name], rps[ref]))
			}
			rows = append(rows, append(row, lat...))
		}
	}
	return benchreport.Table(header, rows), figs
}

// clientCell is what the Go test client measured on one target in one
// row of a clientTable: ops/s and every request's round trip.
type clientCell struct {
	rps float64
	lat []time.Duration
}

// clientRow is one row of a clientTable: its leading cells (the command,
// the client count), the Workload of its figures, and a cell per target
// name.
type clientRow struct {
	lead     []string
	workload string
	cells    map[string]clientCell
}

// clientTable renders rows measured by the Go test client as a Markdown
// table: the leading columns, each target's ops/s, each later target's
// ratio to the first (the reference), each target's p50/p90/p99/max round
// trip in ms, and the request counts; "-" where a target has no requests.
// It returns the ops/s, p50 and p99 as figures, the later targets
// referring to the first.
func clientTable(section string, leadHeader []string, targets []benchTarget, rows []clientRow) (string, []benchreport.Figure) {
	if len(targets) == 0 {
		return "", nil
	}
	ref := targets[0].name
	header := slices.Clone(leadHeader)
	for _, tg := range targets {
		header = append(header, tg.name+" ops/s")
	}
	for _, tg := range targets[1:] {
		header = append(header, tg.name+"/"+ref)
	}
	var names []string
	for _, tg := range targets {
		header = append(header, tg.name+" p50/p90/p99/max ms")
		names = append(names, tg.name)
	}
	header = append(header, "requests ("+strings.Join(names, " / ")+")")
	var out [][]string
	var figs []benchreport.Figure
	for _, r := range rows {
		row := slices.Clone(r.lead)
		var lat, reqs []string
		for i, tg := range targets {
			c := r.cells[tg.name]
			reqs = append(reqs, thousands(float64(len(c.lat))))
			if len(c.lat) == 0 {
				row = append(row, "-")
				lat = append(lat, "-")
				continue
			}
			d := slices.Clone(c.lat)
			slices.Sort(d)
			q := func(f float64) float64 { return durMs(d[min(int(f*float64(len(d))), len(d)-1)]) }
			row = append(row, thousands(c.rps))
			lat = append(lat, fmt.Sprintf("%.3f/%.3f/%.3f/%.3f", q(0.5), q(0.9), q(0.99), durMs(d[len(d)-1])))
			tgRef := ref
			if i == 0 {
				tgRef = ""
			}
			figs = append(figs,
				benchreport.Figure{Section: section, Workload: r.workload, Target: tg.name, Metric: benchreport.OpsPerSec, Value: c.rps, Reference: tgRef},
				benchreport.Figure{Section: section, Workload: r.workload, Target: tg.name, Metric: benchreport.P50ms, Value: q(0.5), Reference: tgRef},
				benchreport.Figure{Section: section, Workload: r.workload, Target: tg.name, Metric: benchreport.P99ms, Value: q(0.99), Reference: tgRef})
		}
		for _, tg := range targets[1:] {
			c, base := r.cells[tg.name], r.cells[ref]
			if len(c.lat) == 0 || len(base.lat) == 0 {
				row = append(row, "-")
				continue
			}
			row = append(row, benchreport.Ratio(c.rps, base.rps))
		}
		row = append(append(row, lat...), strings.Join(reqs, " / "))
		out = append(out, row)
	}
	return benchreport.Table(header, out), figs
}

// coldCollSequential sends coldCollSeqOps requests of command label (HGET
// or SISMEMBER) one after the other with go-redis, at fields picked with a
// fixed seed, checks every reply, and returns each request's round trip.
func coldCollSequential(t *testing.T, addr, label string, pool []byte) ([]time.Duration, error) {
	c := harness.GoRedis(t, addr, 2)
	r := rand.New(rand.NewPCG(7, 8))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := make([]time.Duration, 0, coldCollSeqOps)
	for range coldCollSeqOps {
		i := r.IntN(coldCollFields)
		start := time.Now()
		var err error
		switch label {
		case "HGET":
			var v string
			v, err = c.HGet(ctx, "coldhash", fmt.Sprintf("field:%012d", i)).Result()
			if want := coldCollValue(pool, i); err == nil && v != string(want) {
				err = fmt.Errorf("reply %q, want %q", v, want)
			}
		case "SISMEMBER":
			var ok bool
			ok, err = c.SIsMember(ctx, "coldset", fmt.Sprintf("member:%012d", i)).Result()
			if err == nil && !ok {
				err = errors.New("reply 0, want 1")
			}
		default:
			err = errors.New("no sequential loop for this command")
		}
		d = append(d, time.Since(start))
		if err != nil {
			return nil, fmt.Errorf("%s field/member %d: %w", label, i, err)
		}
	}
	return d, nil
}

// coldCollTieringNote shows the two structures stayed cold: INFO tiering
// of the Spillway server after its restart and after the measurements, as
// Markdown.
func coldCollTieringNote(before, after map[string]string) string {
	keys := []string{"hot_keys", "cold_keys", "hot_bytes", "promotions", "promotions_in_steps", "demotions",
		"cold_reads", "cold_store_gets", "cold_store_iter_steps"}
	fields := func(info map[string]string) string {
		var f []string
		for _, k := range keys {
			f = append(f, k+"="+info[k])
		}
		return strings.Join(f, " ")
	}
	b := tieringList("spw-cold", "after the restart", fields(before), "after the run", fields(after))
	if after["promotions"] != before["promotions"] || after["hot_keys"] != "0" {
		b += "\n**Note**: a key was promoted during the run, so some figures above are not cold reads.\n"
	} else {
		b += "\nNo promotion: coldhash and coldset stayed cold throughout.\n"
	}
	return b
}

// tieringList renders INFO tiering snapshots of target as a Markdown list:
// whenAndFields alternates a moment ("after the run") and its fields.
func tieringList(target string, whenAndFields ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "`%s` INFO tiering:\n\n", target)
	for i := 0; i+1 < len(whenAndFields); i += 2 {
		fmt.Fprintf(&b, "- %s: %s\n", whenAndFields[i], whenAndFields[i+1])
	}
	return b.String()
}
