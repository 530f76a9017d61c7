package integration

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// Default size of a differential run; SPILLWAY_DIFF_SEEDS and
// SPILLWAY_DIFF_OPS make it bigger, SPILLWAY_DIFF_SEED runs one seed.
const (
	defaultSeeds = 5
	defaultOps   = 3000
	// reEpochEvery bounds how long absolute-expiry grids stay in use (see
	// gen.relSeconds): every so many ops both servers are flushed and the
	// grid moves to the current time.
	reEpochEvery = 5000
)

// spillwayDiffArgs starts Spillway small enough that the generator's big
// values force demotion and promotion.
var spillwayDiffArgs = []string{"--maxmemory", "768kb", "--appendfsync", "no", "--loglevel", "warning"}

// subject starts the server under test: Spillway, or the server at
// $SPILLWAY_ADDR when set (for debugging against a running instance).
func subject(t *testing.T) (addr, name string) {
	t.Helper()
	if a := os.Getenv("SPILLWAY_ADDR"); a != "" {
		return a, "spillway@" + a
	}
	return harness.StartSpillway(t, "", spillwayDiffArgs...).Addr(), "spillway"
}

// seeds returns the seeds of a differential run.
func seeds(t *testing.T) []int64 {
	if s := os.Getenv("SPILLWAY_DIFF_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("SPILLWAY_DIFF_SEED=%q: %v", s, err)
		}
		return []int64{n}
	}
	n := envInt(t, "SPILLWAY_DIFF_SEEDS", defaultSeeds)
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

// TestDifferentialRedisVsRedis runs the generator against two redis-servers.
// It proves the generator and the comparison are deterministic and fair: any
// mismatch here is a harness bug, not a server bug. Each run has a pair of
// servers of its own and runs in parallel with the others: the runs are
// mostly waits (the generator sleeps past short expiries).
func TestDifferentialRedisVsRedis(t *testing.T) {
	for _, gen := range []struct {
		prefix string
		cfg    genConfig
	}{
		{"", genConfig{Lists: true}},
		{"hashes-sets/", genConfig{Lists: true, Collections: true}}, // the hash and set generator
		{"lists/", genConfig{Lists: true, ListCommands: true}},      // the list generator
		{"zsets/", genConfig{Lists: true, ZSetCommands: true}},      // the sorted-set generator
	} {
		for _, proto := range []int{2, 3} {
			for _, seed := range seeds(t) {
				t.Run(fmt.Sprintf("%sresp%d/seed=%d", gen.prefix, proto, seed), func(t *testing.T) {
					t.Parallel()
					a, b := harness.StartRedis(t), harness.StartRedis(t)
					runDiff(t, diffRun{
						refAddr: a.Addr(), subAddr: b.Addr(), subName: "redis-2",
						proto: proto, seed: seed, ops: envInt(t, "SPILLWAY_DIFF_OPS", defaultOps),
						cfg: gen.cfg, testName: "TestDifferentialRedisVsRedis",
					})
				})
			}
		}
	}
}

// TestDifferentialStrings compares Spillway with Redis 7.0 on random string
// and keyspace traffic over RESP2, with a 768 KB maxmemory (the smallest Spillway meets: a 4 KB hot tier).
func TestDifferentialStrings(t *testing.T) {
	testDifferentialSpillway(t, 2, "TestDifferentialStrings", genConfig{})
}

// TestDifferentialStringsRESP3 is TestDifferentialStrings after HELLO 3.
func TestDifferentialStringsRESP3(t *testing.T) {
	testDifferentialSpillway(t, 3, "TestDifferentialStringsRESP3", genConfig{})
}

// testDifferentialSpillway runs the generator configured by cfg (lists as
// listsForSpillway says) against Redis and Spillway, then checks that the
// runs exercised tiering.
func testDifferentialSpillway(t *testing.T, proto int, name string, cfg genConfig) {
	if os.Getenv("SPILLWAY_ADDR") == "" {
		// Servers of its own: it runs beside the other differential tests
		// (mostly the generator's sleeps past short expiries).
		t.Parallel()
	}
	cfg.Lists = listsForSpillway(t)
	ref := harness.StartRedis(t)
	subAddr, subName := subject(t)
	for _, seed := range seeds(t) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			runDiff(t, diffRun{
				refAddr: ref.Addr(), subAddr: subAddr, subName: subName,
				proto: proto, seed: seed, ops: envInt(t, "SPILLWAY_DIFF_OPS", defaultOps),
				cfg: cfg, testName: name,
			})
		})
	}
	checkTiering(t, subAddr)
}

// checkTiering asserts, from Spillway's INFO, that the runs made it demote
// keys and read demoted ones back, so the comparison covered cold keys too.
// Counters missing from INFO are reported, not failed on.
func checkTiering(t *testing.T, addr string) {
	r := harness.MustDial(t, addr).Do("INFO")
	stats := map[string]int64{}
	for _, line := range strings.Split(r.Str, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if n, err := strconv.ParseInt(v, 10, 64); ok && err == nil {
			stats[k] = n
		}
	}
	dem, hasDem := stats["demotions"]
	pro, hasPro := stats["promotions"]
	cold, hasCold := stats["cold_reads"]
	if !hasDem || !(hasPro || hasCold) {
		t.Logf("INFO has no demotions/promotions/cold_reads counters; tiering coverage unchecked")
		return
	}
	t.Logf("tiering: demotions=%d promotions=%d cold_reads=%d", dem, pro, cold)
	if dem == 0 {
		t.Errorf("no key was demoted during the runs: the big values no longer exceed maxmemory")
	}
	if pro+cold == 0 {
		t.Errorf("no demoted key was read back (promotions and cold_reads are 0)")
	}
}

type diffRun struct {
	refAddr, subAddr string
	subName          string
	proto            int
	seed             int64
	ops              int
	cfg              genConfig
	testName         string
	// afterOp, when set, is called after each compared op with its index.
	afterOp func(i int)
}

// runDiff sends one generated sequence to both servers and fails at the
// first pair of replies that differ.
func runDiff(t *testing.T, d diffRun) {
	ref := harness.MustDial(t, d.refAddr)
	sub := harness.MustDial(t, d.subAddr)
	setupPair(t, ref, sub, d.proto)
	g := newGen(d.seed, time.Now().Unix(), d.cfg)
	hist := &history{max: 20}
	counts := map[string]int{}
	var errs, total int
	for i := 0; i < d.ops; i++ {
		if i > 0 && i%reEpochEvery == 0 {
			setupPair(t, ref, sub, 0)
			g.epoch = time.Now().Unix()
			hist.add("#%d (both flushed; expiry grid moved)", i)
		}
		o := g.next()
		if o.Sleep > 0 {
			pause(o.Sleep)
			hist.add("#%d (sleep %v)", i, o.Sleep)
			continue
		}
		var a, b harness.Reply
		var ok bool
		var why, note string
		switch o.Kind {
		case opScan, opZScan:
			scan := scanUnion
			if o.Kind == opZScan {
				scan = zscanUnion
			}
			var ia, ib scanIter
			ia, ib, ok, why = scan(ref, sub, o.Args, d.subName)
			a, b = ia.first, ib.first
			note = fmt.Sprintf(" (iterated to cursor 0: redis %d calls, %d items; %s %d calls, %d items)",
				ia.calls, len(ia.items), d.subName, ib.calls, len(ib.items))
		case opRandom, opZRandom:
			a, b = exchange(ref, sub, o.Args)
			hist.add("#%d %s -> %s (random reply)", i, fmtArgs(o.Args), fmtRaw(a.Raw))
			rc := randomCheck{ref: ref, sub: sub, subName: d.subName, hist: hist}
			if o.Kind == opZRandom {
				ok, why = rc.checkZRandMember(o.Args, a, b)
			} else {
				ok, why = rc.check(o.Args, a, b)
			}
		default:
			a, b = exchange(ref, sub, o.Args)
			ok, why = compareReplies(o.Args, a, b)
		}
		if !ok {
			t.Fatalf("differential mismatch (%s): seed=%d resp%d op #%d db=%d\n"+
				"command:  %s%s\nredis:    %s\n%-9s %s\nredis reply:\n%s\n%s reply:\n%s\n"+
				"last commands:\n%s"+
				"reproduce: SPILLWAY_DIFF_SEED=%d SPILLWAY_DIFF_OPS=%d go test ./integration -run '^%s$'",
				why, d.seed, d.proto, i, g.db, fmtArgs(o.Args), note, errOr(a), d.subName+":", errOr(b),
				a.String(), d.subName, b.String(), hist, d.seed, i+1, d.testName)
		}
		total++
		counts[strings.ToUpper(o.Args[0])]++
		if a.IsError() {
			errs++
		}
		if o.Kind != opRandom && o.Kind != opZRandom {
			hist.add("#%d %s -> %s%s", i, fmtArgs(o.Args), fmtRaw(a.Raw), note)
		}
		if d.afterOp != nil {
			d.afterOp(i)
		}
	}
	// The generator must mostly produce commands that succeed, or the run
	// compares little more than error texts.
	if total > 200 && errs*2 > total {
		t.Errorf("%d of %d commands were errors; the generator is off balance", errs, total)
	}
	if total > 1000 && len(counts) < 40 {
		t.Errorf("only %d distinct commands in %d ops: %v", len(counts), total, counts)
	}
	t.Logf("seed %d: %d commands (%d errors), %d distinct", d.seed, total, errs, len(counts))
}

func errOr(r harness.Reply) string {
	if r.Err != nil {
		return "transport error: " + r.Err.Error()
	}
	return fmtRaw(r.Raw)
}
