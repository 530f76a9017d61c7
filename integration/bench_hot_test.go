package integration

// The hot-path and proxy sections of `make bench`: redis-benchmark's
// standard operations against redis-server and embedded Spillway (its
// dataset in the hot tier), and against redis-server directly, through
// twemproxy and through Spillway in upstream mode in front of it. Like the
// rest of the benchmark they measure and report; they fail only when a tool
// or server does not work (an error reply, a wrong key or element count).

import (
	"errors"
	"fmt"
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
	hotSection    = "Hot path, embedded"
	proxySection  = "Proxy overhead, upstream mode"
	alwaysSection = "Hot path, appendfsync always"
	// hotList is the list redis-benchmark's LPUSH, RPOP and LRANGE_100 use.
	hotList = "mylist"
)

// hotCommands are redis-benchmark's standard operations in its own order
// (-t set,get,incr,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,zpopmin,
// lrange_100,lrange_300,mset) plus GET(miss), a GET of keys that do not
// exist. LPUSH and RPUSH push listBenchDataSize-byte elements, like the
// list section, so a -P 16 run does not grow mylist by hundreds of
// megabytes. LRANGE_100 and LRANGE_300 are given as the commands -t
// lrange_100 and -t lrange_300 measure (LRANGE mylist 0 99, 0 299): those
// first run an LPUSH of -n elements of their own and report two lines.
// LPOP pops as many as RPUSH pushed, RPOP as many as LPUSH pushed, so
// neither finds mylist empty; SPOP and ZPOPMIN pop structures of their own
// filled before each run (bench_pop_test.go).
// The dataset holds every key, field and member they touch (the hash and
// set with benchCollFields entries, the sorted set with zsetBenchMembers,
// their -r), so SET, MSET, HSET, SADD and ZADD update and GET and INCR hit.
var hotCommands = []benchCmd{
	{"SET", []string{"-t", "set"}, benchKeys, nil},
	{"GET", []string{"-t", "get"}, benchKeys, nil},
	{"GET(miss)", []string{"GET", "miss:__rand_int__"}, benchKeys, nil},
	{"INCR", []string{"-t", "incr"}, benchKeys, nil},
	{"LPUSH", []string{"-d", strconv.Itoa(listBenchDataSize), "-t", "lpush"}, 1, stringsOnly},
	{"RPUSH", []string{"-d", strconv.Itoa(listBenchDataSize), "-t", "rpush"}, 1, stringsOnly},
	{"LPOP", []string{"-t", "lpop"}, 1, stringsOnly},
	{"RPOP", []string{"-t", "rpop"}, 1, stringsOnly},
	{"SADD", []string{"-t", "sadd"}, benchCollFields, stringsOnly},
	{"HSET", []string{"-t", "hset"}, benchCollFields, stringsOnly},
	{"SPOP", popCells["SPOP"].args, 1, stringsOnly},
	{"ZADD", []string{"-t", "zadd"}, zsetBenchMembers, stringsOnly},
	{"ZPOPMIN", popCells["ZPOPMIN"].args, 1, stringsOnly},
	{"LRANGE_100", []string{"LRANGE", hotList, "0", "99"}, 1, stringsOnly},
	{"LRANGE_300", []string{"LRANGE", hotList, "0", "299"}, 1, stringsOnly},
	{"MSET", []string{"-t", "mset"}, benchKeys, nil},
}

// hotFullCommands are the rows SPILLWAY_BENCH_FULL=1 adds to the hot-path
// section: reads of the preloaded hash and set (not against redis+aof: AOF
// only logs writes).
var hotFullCommands = []benchCmd{
	{"HGET", []string{"HGET", "myhash", "element:__rand_int__"}, benchCollFields, []string{"spw-cold", "redis+aof"}},
	{"SISMEMBER", []string{"SISMEMBER", "myset", "element:__rand_int__"}, benchCollFields, []string{"spw-cold", "redis+aof"}},
}

// stringsOnly skips spw-cold (full mode): its rows are the string
// commands; cold hashes, sets, lists and sorted sets have their own
// sections.
var stringsOnly = []string{"spw-cold"}

// hotScriptCommands are rows of the hot-path section for scripting and
// pub/sub: an EVAL that increments one of the INCR counters (one group
// transaction holding a Lua call), and a PUBLISH to a channel nobody
// subscribes to.
var hotScriptCommands = []benchCmd{
	{"EVAL(INCR)", []string{"EVAL", "return redis.call('INCR', KEYS[1])", "1", "counter:__rand_int__"}, benchKeys, stringsOnly},
	{"PUBLISH", []string{"PUBLISH", "channel", "message"}, 1, stringsOnly},
}

// hotExtraRows are rows outside redis-benchmark's standard set: reported,
// not counted against a section's target.
var hotExtraRows = []string{"GET(miss)", "HGET", "SISMEMBER", "EVAL(INCR)", "PUBLISH"}

// hotQuickRunTime is how long a run of these two sections lasts in quick
// mode (the default): 3 repetitions of 36 cells on 2 targets and of 32 on
// 3 fit in about 6.5 minutes on 2 cores, loads and calibration included.
// SPILLWAY_BENCH_FULL=1 and SPILLWAY_BENCH_RUNTIME use benchRunTime.
const hotQuickRunTime = 700 * time.Millisecond

// hotBenchFull reports whether SPILLWAY_BENCH_FULL=1 asks for the extra
// targets and rows.
func hotBenchFull() bool { return os.Getenv("SPILLWAY_BENCH_FULL") == "1" }

// hotRunTime is the run length of the hot-path and proxy sections.
func hotRunTime() time.Duration {
	if hotBenchFull() || os.Getenv("SPILLWAY_BENCH_RUNTIME") != "" {
		return benchRunTime
	}
	return min(benchRunTime, hotQuickRunTime)
}

// sectionTarget is one server column of a section.
type sectionTarget struct {
	benchTarget
	ref    string // the target its figures are compared with; "" for a reference
	sizeOf string // the target whose calibrated -n it reuses; "" to calibrate its own
	ctl    string // where mylist is reset and checked: itself, or a proxy's backend
	// counted is where DBSIZE and the collections' sizes are checked after
	// the runs ("" for none: twemproxy has no DBSIZE; its backend is checked
	// as "direct").
	counted string
	spw     *harness.Server // a Spillway whose INFO tiering the section reports
	upMode  bool            // spw runs in upstream mode
}

// sectionGoal is a section's target: the ratio num/den should be at least
// p1 unpipelined and p16 at -P 16 on every standard row.
type sectionGoal struct {
	num, den string
	p1, p16  float64
}

// benchSection is one measured table.
type benchSection struct {
	title   string
	targets []sectionTarget
	cmds    []benchCmd
	ratios  [][2]string // ratio columns: numerator and denominator target names
	goal    sectionGoal
	began   time.Time
}

// TestBenchHotPath measures redis-benchmark's standard operations against
// redis-server with the same durability as Spillway's default (AOF,
// appendfsync everysec), the reference of the goal, and embedded
// Spillway with the dataset in its hot tier; then the write operations
// with appendfsync always on both (group commit). SPILLWAY_BENCH_FULL=1
// adds redis-server without persistence, Spillway with the string keys
// cold, and HGET and SISMEMBER rows.
func TestBenchHotPath(t *testing.T) {
	needBench(t)
	began := time.Now()
	full := hotBenchFull()
	dataset := filepath.Join(t.TempDir(), "dataset.resp")
	if err := writeDataset(dataset); err != nil {
		t.Fatal(err)
	}
	aof := startAOFRedis(t, "everysec")
	spw := harness.StartSpillway(t, "", "--maxmemory", "512mb")
	loads := []*harness.Server{aof, spw}
	var redis, loader *harness.Server
	coldDir := t.TempDir()
	if full {
		redis = harness.StartRedis(t)
		// Loaded with a budget that holds the dataset (loading under a
		// tiny one is much slower), then restarted with the tiny one: after
		// a restart every key is cold.
		loader = harness.StartSpillway(t, coldDir, "--maxmemory", "512mb")
		loads = append(loads, redis, loader)
	}
	if err := preloadDataset(loads, dataset); err != nil {
		t.Fatal(err)
	}

	// -n is calibrated on spillway, the one the target is about, and reused
	// for the references, whose runs are then shorter when they are faster.
	tgs := []sectionTarget{
		selfTarget("redis+aof", aof, "", "spillway", "`redis-server --appendonly yes --appendfsync everysec` (the reference: Spillway's default durability)"),
		selfTarget("spillway", spw, "redis+aof", "", "`spillway --maxmemory 512mb` (default appendfsync everysec): "+
			"the dataset fits its hot tier"),
	}
	tgs[1].spw = spw
	cmds := append(slices.Clone(hotCommands), hotScriptCommands...)
	ratios := [][2]string{{"spillway", "redis+aof"}}
	if full {
		loader.Term()
		cold := harness.StartSpillway(t, coldDir, "--maxmemory", "4mb", "--promote-min-hits", "1000000")
		c := selfTarget("spw-cold", cold, "redis", "", "`spillway --maxmemory 4mb --promote-min-hits 1000000`, "+
			"restarted after the load: strings read from disk (string rows only)")
		c.spw = cold
		tgs = append(tgs, selfTarget("redis", redis, "", "spillway", "`redis-server --save '' --appendonly no`"), c)
		cmds = append(cmds, hotFullCommands...)
		ratios = append(ratios, [2]string{"spillway", "redis"}, [2]string{"spw-cold", "redis"})
	}
	t.Logf("dataset loaded in %v", time.Since(began).Round(time.Millisecond))
	sec := &benchSection{
		title: hotSection, targets: tgs, cmds: cmds, ratios: ratios, began: began,
		goal: sectionGoal{"spillway", "redis+aof", 1.0, 0.8},
	}
	runSection(t, sec)
	benchAlways(t, dataset)
}

// alwaysCommands are the rows of the appendfsync always section: writes,
// each acknowledged only once durable.
var alwaysCommands = hotRows("SET", "INCR", "LPUSH", "HSET")

// hotRows returns hotCommands' rows with the given labels, in that order;
// it panics on a label hotCommands lacks (a programming error).
func hotRows(labels ...string) []benchCmd {
	rows := make([]benchCmd, len(labels))
	for i, l := range labels {
		j := slices.IndexFunc(hotCommands, func(c benchCmd) bool { return c.label == l })
		if j < 0 {
			panic("bench: no hot-path row " + l)
		}
		rows[i] = hotCommands[j]
	}
	return rows
}

// benchAlways measures SET, INCR, LPUSH and HSET with appendfsync always on
// redis-server and on Spillway: both fsync before they reply, so with 50
// clients the rate is how many writes one fsync covers (group commit).
func benchAlways(t *testing.T, dataset string) {
	began := time.Now()
	aof := startAOFRedis(t, "always")
	spw := harness.StartSpillway(t, "", "--maxmemory", "512mb", "--appendfsync", "always")
	if err := preloadDataset([]*harness.Server{aof, spw}, dataset); err != nil {
		t.Fatal(err)
	}
	tgs := []sectionTarget{
		selfTarget("redis+always", aof, "", "spillway", "`redis-server --appendonly yes --appendfsync always`"),
		selfTarget("spillway", spw, "redis+always", "", "`spillway --maxmemory 512mb --appendfsync always`"),
	}
	tgs[1].spw = spw
	runSection(t, &benchSection{
		title: alwaysSection, targets: tgs, cmds: alwaysCommands, began: began,
		ratios: [][2]string{{"spillway", "redis+always"}},
		goal:   sectionGoal{"spillway", "redis+always", 0.5, 0.5},
	})
}

// startAOFRedis starts redis-server with an append-only file and the given
// appendfsync policy, and checks that it took them.
func startAOFRedis(t *testing.T, fsync string) *harness.Server {
	t.Helper()
	s := harness.StartRedis(t, "--appendonly", "yes", "--appendfsync", fsync)
	c := s.Conn(t)
	defer c.Close()
	for param, want := range map[string]string{"appendonly": "yes", "appendfsync": fsync} {
		if r := c.Do("CONFIG", "GET", param); len(r.Elems) != 2 || r.Elems[1].Str != want {
			t.Fatalf("redis %s: CONFIG GET %s = %s", fsync, param, r.String())
		}
	}
	return s
}

// selfTarget is a section target that is its own control and count.
func selfTarget(name string, s *harness.Server, ref, sizeOf, desc string) sectionTarget {
	return sectionTarget{benchTarget: benchTarget{name, s.Addr(), desc}, ref: ref, sizeOf: sizeOf,
		ctl: s.Addr(), counted: s.Addr()}
}

// TestBenchProxy measures the same operations against redis-server
// directly, through twemproxy in front of it (when nutcracker is
// installed), and through Spillway in upstream mode in front of it with no
// budget (every key stays upstream).
func TestBenchProxy(t *testing.T) {
	needBench(t)
	began := time.Now()
	dataset := filepath.Join(t.TempDir(), "dataset.resp")
	if err := writeDataset(dataset); err != nil {
		t.Fatal(err)
	}
	redis := harness.StartRedis(t)
	if err := preloadDataset([]*harness.Server{redis}, dataset); err != nil {
		t.Fatal(err)
	}
	t.Logf("dataset loaded in %v", time.Since(began).Round(time.Millisecond))
	up := harness.StartSpillway(t, "", "--upstream", "redis://"+redis.Addr(), "--maxmemory", "0")

	tgs := []sectionTarget{{benchTarget: benchTarget{"direct", redis.Addr(),
		"`redis-server --save '' --appendonly no`, the backend of both proxies"},
		ctl: redis.Addr(), counted: redis.Addr()}}
	// -n is calibrated on spw-upstream and reused for the others.
	ref := "direct"
	ratios := [][2]string{}
	if tw := startTwemproxy(t, redis.Addr()); tw != nil {
		ref = "twemproxy"
		tgs = append(tgs, sectionTarget{benchTarget: benchTarget{"twemproxy", tw.Addr(),
			"nutcracker 0.5 in front of `direct` (one server connection)"}, ref: "direct", ctl: redis.Addr()})
		ratios = append(ratios, [2]string{"spw-upstream", "twemproxy"}, [2]string{"twemproxy", "direct"})
	}
	tgs = append(tgs, sectionTarget{benchTarget: benchTarget{"spw-upstream", up.Addr(),
		"`spillway --upstream redis://<direct> --maxmemory 0`: no budget, every key stays upstream"},
		ref: ref, ctl: redis.Addr(), counted: up.Addr(), spw: up, upMode: true})
	ratios = append(ratios, [2]string{"spw-upstream", "direct"})
	for i := range tgs {
		if tgs[i].name != "spw-upstream" {
			tgs[i].sizeOf = "spw-upstream"
		}
	}
	sec := &benchSection{
		title: proxySection, targets: tgs, cmds: hotCommands, ratios: ratios, began: began,
		// Issue 18's goal: at least 1.2x twemproxy's throughput in the
		// same run, unpipelined and at -P 16.
		goal: sectionGoal{"spw-upstream", "twemproxy", 1.2, 1.2},
	}
	runSection(t, sec)
}

// calibrationNote says which targets -n was calibrated on and which
// reused it.
func calibrationNote(tgs []sectionTarget) string {
	var b strings.Builder
	b.WriteString("-n is calibrated per op and pipeline (short runs of growing size, also a warm-up)")
	for _, tg := range tgs {
		if tg.sizeOf != "" {
			continue
		}
		var users []string
		for _, u := range tgs {
			if u.sizeOf == tg.name {
				users = append(users, "`"+u.name+"`")
			}
		}
		fmt.Fprintf(&b, "; on `%s`", tg.name)
		if len(users) > 0 {
			fmt.Fprintf(&b, ", and reused for %s (whose runs are shorter where they are faster)", strings.Join(users, ", "))
		}
	}
	return b.String() + "."
}

// preloadDataset loads the dataset file into every server at once.
func preloadDataset(servers []*harness.Server, dataset string) error {
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() { _, errs[i] = pipeLoad(s.Addr(), dataset, datasetCommands) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("preload: %w", err)
	}
	return nil
}

// isListCmd reports whether c reads or writes mylist, whose length is
// checked around each of its runs.
func isListCmd(c benchCmd) bool {
	switch c.label {
	case "LPUSH", "RPUSH", "LPOP", "RPOP", "LRANGE_100", "LRANGE_300":
		return true
	}
	return false
}

// runsList reports whether any of cmds that tg runs uses mylist.
func runsList(tg sectionTarget, cmds []benchCmd) bool {
	return slices.ContainsFunc(cmds, func(c benchCmd) bool { return isListCmd(c) && tg.runs(c) })
}

// runSection calibrates, measures (benchReps repetitions interleaved across
// the targets), checks the servers' contents and reports the section. Its
// runs last hotRunTime: benchRunTime, which calibrate reads, is set to it
// for the section's duration (the benchmarks do not run in parallel).
func runSection(t *testing.T, sec *benchSection) {
	defer func(d time.Duration) { benchRunTime = d }(benchRunTime)
	benchRunTime = hotRunTime()
	conns := map[string]*harness.Conn{}
	for _, tg := range sec.targets {
		c := harness.MustDial(t, tg.ctl)
		c.Timeout = time.Minute
		conns[tg.name] = c
	}
	resetList := func(tg sectionTarget) {
		if !runsList(tg, sec.cmds) {
			return
		}
		if err := listSetLen(conns[tg.name], hotList, listBenchBase); err != nil {
			t.Fatalf("%s: %v", tg.name, err)
		}
	}

	// Calibrate: short runs of growing size (also a warm-up) set -n so that
	// a run takes about benchRunTime; a popping row reuses the -n of the
	// row whose pushes or adds it pops (sizeSource).
	sizes := map[cellKey]int{}
	calib := func(tg sectionTarget, c benchCmd, p int) {
		k := cellKey{tg.name, c.label, p}
		if src := sizeSource(c.label); src != "" {
			sizes[k] = sizes[cellKey{tg.name, src, p}]
			return
		}
		n, err := calibrate(tg.addr, c, p)
		if err != nil {
			t.Fatalf("calibrate %s %s -P %d: %v", tg.name, c.label, p, err)
		}
		if isListCmd(c) {
			n = min(n, listBenchMaxN)
		}
		sizes[k] = n
	}
	for _, tg := range sec.targets {
		for _, p := range benchPipelines {
			if tg.sizeOf != "" {
				continue
			}
			resetList(tg)
			for _, c := range sec.cmds {
				if tg.runs(c) {
					calib(tg, c, p)
				}
			}
		}
	}
	for _, tg := range sec.targets {
		if tg.sizeOf == "" {
			continue
		}
		for _, p := range benchPipelines {
			resetList(tg)
			for _, c := range sec.cmds {
				if !tg.runs(c) {
					continue
				}
				if n := sizes[cellKey{tg.sizeOf, c.label, p}]; n > 0 {
					sizes[cellKey{tg.name, c.label, p}] = n
				} else {
					calib(tg, c, p)
				}
			}
		}
	}
	t.Logf("%s: calibrated at %v", sec.title, time.Since(sec.began).Round(time.Millisecond))

	samples := map[cellKey][]benchSample{}
	var raw strings.Builder
	for rep := 1; rep <= benchReps; rep++ {
		for _, tg := range sec.targets {
			for _, p := range benchPipelines {
				resetList(tg)
				for _, c := range sec.cmds {
					if !tg.runs(c) {
						continue
					}
					k := cellKey{tg.name, c.label, p}
					var before harness.Reply
					if isListCmd(c) {
						before = conns[tg.name].Do("LLEN", hotList)
					}
					cell, pops := popCells[c.label]
					if pops {
						if err := fillPop(conns[tg.name], cell, sizes[k], p); err != nil {
							t.Fatalf("%s: %v", tg.name, err)
						}
					}
					s, err := runRedisBenchmark(tg.addr, c, p, sizes[k])
					if err != nil {
						if tg.spw != nil { // what it was doing, for the report
							if dc, derr := harness.Dial(tg.spw.Addr()); derr == nil {
								dc.Timeout = 5 * time.Second
								t.Logf("%s INFO after the failed run:\n%s", tg.name, harness.Trunc(dc.Do("INFO", "everything").String(), 8<<10))
								dc.Close()
							}
						}
						t.Fatalf("%s %s -P %d: %v", tg.name, c.label, p, err)
					}
					if isListCmd(c) {
						after := conns[tg.name].Do("LLEN", hotList)
						if err := checkListRun(c.label, sizes[k], p, before, after); err != nil {
							t.Fatalf("%s: %v", tg.name, err)
						}
					}
					if pops {
						if err := checkPop(conns[tg.name], cell, sizes[k], p); err != nil {
							t.Fatalf("%s: %v", tg.name, err)
						}
					}
					samples[k] = append(samples[k], s)
					fmt.Fprintf(&raw, "%s\t%d\t%s\t%s\t%d\t%d\t%.0f\t%.3f\t%.3f\n",
						sec.title, rep, tg.name, c.label, p, sizes[k], s.rps, s.p50, s.p99)
				}
			}
		}
		t.Logf("%s: repetition %d/%d done at %v", sec.title, rep, benchReps, time.Since(sec.began).Round(time.Second))
	}

	var notes []string
	for _, tg := range sec.targets {
		if tg.counted != "" {
			c := harness.MustDial(t, tg.counted)
			c.Timeout = time.Minute
			if err := checkContents(c, runsList(tg, sec.cmds)); err != nil {
				t.Fatalf("%s after the runs: %v", tg.name, err)
			}
		}
		if tg.spw != nil {
			notes = append(notes, fmt.Sprintf("`%s` INFO tiering after the runs: %s", tg.name, hotTieringFields(t, tg)))
		}
	}
	if path := os.Getenv("SPILLWAY_BENCH_RAW"); path != "" {
		if err := appendRaw(path, raw.String()); err != nil {
			t.Errorf("SPILLWAY_BENCH_RAW: %v", err)
		}
		notes = append(notes, "Every run's numbers: "+path+".")
	}
	reportSection(sec, samples, notes)
}

// checkContents checks that the server holds the dataset's keys and no
// other (plus mylist when withList), and that myhash, myset and myzset
// still have as many entries as loaded: the runs only update them.
func checkContents(c *harness.Conn, withList bool) error {
	want := int64(datasetKeys)
	if withList {
		want++
	}
	if r := c.Do("DBSIZE"); r.Type != ':' || r.Int != want {
		return fmt.Errorf("DBSIZE = %s, want %d", r.String(), want)
	}
	for _, q := range []struct {
		cmd, key string
		want     int64
	}{{"HLEN", "myhash", benchCollFields}, {"SCARD", "myset", benchCollFields}, {"ZCARD", "myzset", zsetBenchMembers}} {
		if r := c.Do(q.cmd, q.key); r.Type != ':' || r.Int != q.want {
			return fmt.Errorf("%s %s = %s, want %d", q.cmd, q.key, r.String(), q.want)
		}
	}
	return nil
}

// hotTieringFields renders the INFO tiering fields that show where a
// Spillway target's keys are.
func hotTieringFields(t *testing.T, tg sectionTarget) string {
	info := tieringInfo(t, tg.spw)
	keys := []string{"hot_keys", "cold_keys", "hot_bytes", "hot_budget", "promotions", "demotions", "cold_reads"}
	if tg.upMode {
		keys = []string{"upstream_status", "upstream_used_memory", "cold_keys", "promotions", "demotions",
			"cold_reads", "throttled_writes"}
	}
	var fields []string
	for _, k := range keys {
		fields = append(fields, k+"="+info[k])
	}
	return strings.Join(fields, " ")
}

var (
	rawMu      sync.Mutex
	rawStarted bool
)

// appendRaw writes rows to the SPILLWAY_BENCH_RAW file: the first call of
// the process truncates it and writes the header, later ones append.
func appendRaw(path, rows string) error {
	rawMu.Lock()
	defer rawMu.Unlock()
	flag := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if !rawStarted {
		flag |= os.O_TRUNC
		rows = "section\trep\ttarget\tcommand\tP\tn\tops/s\tp50ms\tp99ms\n" + rows
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	_, err = f.WriteString(rows)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	rawStarted = true
	return nil
}

// benchWorkload names a row in the report's figures: "SET -P 1".
func benchWorkload(cmd string, p int) string { return fmt.Sprintf("%s -P %d", cmd, p) }

// reportSection records every median as a figure and adds the section's
// Markdown (legend, table, target line, spread and notes) to the report.
func reportSection(sec *benchSection, samples map[cellKey][]benchSample, notes []string) {
	med := func(k cellKey) (rps, p50, p99 float64, ok bool) {
		ss := samples[k]
		if len(ss) == 0 {
			return 0, 0, 0, false
		}
		return medianOf(ss, func(s benchSample) float64 { return s.rps }),
			medianOf(ss, func(s benchSample) float64 { return s.p50 }),
			medianOf(ss, func(s benchSample) float64 { return s.p99 }), true
	}

	header := []string{"op", "P"}
	for _, tg := range sec.targets {
		header = append(header, tg.name+" ops/s")
	}
	for _, r := range sec.ratios {
		header = append(header, r[0]+"/"+r[1])
	}
	for _, tg := range sec.targets {
		header = append(header, tg.name+" p50/p99 ms")
	}
	var rows [][]string
	var figs []benchreport.Figure
	met, counted := 0, 0
	var below []string
	for _, p := range benchPipelines {
		for _, c := range sec.cmds {
			row := []string{c.label, strconv.Itoa(p)}
			rps := map[string]float64{}
			var lat []string
			for _, tg := range sec.targets {
				r, p50, p99, ok := med(cellKey{tg.name, c.label, p})
				if !ok {
					row = append(row, "-")
					lat = append(lat, "-")
					continue
				}
				rps[tg.name] = r
				row = append(row, thousands(r))
				lat = append(lat, fmt.Sprintf("%.3f/%.3f", p50, p99))
				wl := benchWorkload(c.label, p)
				figs = append(figs,
					benchreport.Figure{Section: sec.title, Workload: wl, Target: tg.name, Metric: benchreport.OpsPerSec, Value: r, Reference: tg.ref},
					benchreport.Figure{Section: sec.title, Workload: wl, Target: tg.name, Metric: benchreport.P50ms, Value: p50, Reference: tg.ref},
					benchreport.Figure{Section: sec.title, Workload: wl, Target: tg.name, Metric: benchreport.P99ms, Value: p99, Reference: tg.ref})
			}
			for _, r := range sec.ratios {
				row = append(row, benchreport.Ratio(rps[r[0]], rps[r[1]]))
			}
			rows = append(rows, append(row, lat...))

			g := sec.goal
			num, den := rps[g.num], rps[g.den]
			if slices.Contains(hotExtraRows, c.label) || num == 0 || den == 0 {
				continue
			}
			counted++
			want := g.p1
			if p > 1 {
				want = g.p16
			}
			if num/den >= want {
				met++
			} else {
				below = append(below, fmt.Sprintf("%s -P %d %.3fx", c.label, p, num/den))
			}
		}
	}
	benchreport.Default.Add(figs...)

	var md strings.Builder
	md.WriteString("Targets, each started by the benchmark on loopback:\n\n")
	for _, tg := range sec.targets {
		fmt.Fprintf(&md, "- `%s`: %s\n", tg.name, tg.desc)
	}
	fmt.Fprintf(&md, "\nLoad: `redis-benchmark -c %d -r %d -d %d --csv` with `-P 1` and `-P 16`, `-t` %s; "+
		"SADD and HSET with `-r %d`, ZADD with `-r %d`; LPUSH and RPUSH with `-d %d`; LRANGE_100 and LRANGE_300 are "+
		"`LRANGE mylist 0 99` and `0 299`, what `-t lrange_100` and `-t lrange_300` measure, without their own LPUSH fill; "+
		"LPOP pops as many as RPUSH pushed and RPOP as many as LPUSH pushed, "+
		"and mylist is reset to %s elements before each target's LPUSH, so neither finds it empty; "+
		"SPOP and ZPOPMIN pop `"+popSetKey+"` and `"+popZSetKey+"`, filled before each run with as many members as it pops "+
		"(plus a pipeline per client) and deleted after it (`-t spop` and `-t zpopmin` pop the structures SADD and ZADD filled). "+
		"The dataset is preloaded: %s strings of %d-%d bytes, %s counters, myhash and myset with %s entries, myzset with %s, "+
		"so GET and INCR hit and the writes update; GET(miss) reads keys that do not exist. "+
		"MSET sets 10 keys a request.\n\n",
		benchClients, benchKeys, benchDataSize, strings.Join(sectionTests(sec.cmds), ","), benchCollFields,
		zsetBenchMembers, listBenchDataSize, thousands(listBenchBase), thousands(benchKeys), benchValueMin, benchValueMax,
		thousands(benchKeys), thousands(benchCollFields), thousands(zsetBenchMembers))
	fmt.Fprintf(&md, "Each cell: median of %d runs of about %v, the repetitions measured alternately across the targets in one run. ",
		benchReps, benchRunTime)
	md.WriteString(calibrationNote(sec.targets))
	md.WriteString("\n\n" + strings.TrimSpace(machineNotes()) + "\n\n")
	md.WriteString(benchreport.Table(header, rows))
	g := sec.goal
	fmt.Fprintf(&md, "\nTarget: %s/%s >= %.1fx unpipelined and >= %.1fx at -P 16 on every standard op",
		g.num, g.den, g.p1, g.p16)
	if counted == 0 {
		md.WriteString(" (not measured: a target is missing).\n")
	} else {
		var extra []string
		for _, c := range sec.cmds {
			if slices.Contains(hotExtraRows, c.label) {
				extra = append(extra, c.label)
			}
		}
		if len(extra) > 0 {
			fmt.Fprintf(&md, " (%s not counted)", strings.Join(extra, ", "))
		}
		fmt.Fprintf(&md, ": met in %d of %d cells", met, counted)
		if len(below) > 0 {
			fmt.Fprintf(&md, "; below: %s", strings.Join(below, ", "))
		}
		md.WriteString(".\n")
	}
	fmt.Fprintf(&md, "\nSpread: %s.\n", spreadNote(samples))
	for _, n := range notes {
		md.WriteString("\n" + n + "\n")
	}
	fmt.Fprintf(&md, "\n(Section took %v, loads and calibration included.)\n", time.Since(sec.began).Round(time.Second))
	benchreport.Default.AddSection(sec.title, md.String())
}

// sectionTests lists the redis-benchmark -t names among cmds.
func sectionTests(cmds []benchCmd) []string {
	var names []string
	for _, c := range cmds {
		switch c.label {
		case "LRANGE_100", "LRANGE_300", "SPOP", "ZPOPMIN":
			names = append(names, strings.ToLower(c.label))
		}
		if i := slices.Index(c.args, "-t"); i >= 0 && i+1 < len(c.args) {
			names = append(names, c.args[i+1])
		}
	}
	return names
}
