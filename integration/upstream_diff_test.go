package integration

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// Upstream mode: Spillway fronting a real redis-server, compared with a
// plain redis-server.

// Default size of an upstream differential run, smaller than the embedded
// runs' (every op crosses two servers, and keys are demoted every few dozen
// ops). SPILLWAY_UPSTREAM_DIFF_SEEDS and SPILLWAY_UPSTREAM_DIFF_OPS (else
// SPILLWAY_DIFF_SEEDS and SPILLWAY_DIFF_OPS) change it; SPILLWAY_DIFF_SEED
// runs one seed, as the reproduce line of a failure says.
const (
	upstreamDefaultSeeds = 2
	upstreamDefaultOps   = 700
)

// upstreamMaxMemory is the upstream budget of the differential runs: above
// an idle redis-server's used_memory (about 1 MB), below it plus the big
// values, so the demoter also moves keys on its own.
const upstreamMaxMemory = "2mb"

// upstreamDemoteEvery bounds the number of ops between two forced
// demotions (DEBUG DEMOTE-ALL) in a differential run.
var upstreamDemoteEvery = [2]int{20, 50}

// upstreamPair is a Spillway in upstream mode and the redis-server it
// fronts.
type upstreamPair struct {
	up  *harness.Server // the upstream redis-server
	spw *harness.Server // Spillway, with the test hooks on
}

// startUpstreamPair starts a fresh redis-server and a Spillway fronting it
// with maxmemory as the upstream budget and DEBUG DEMOTE enabled.
func startUpstreamPair(t *testing.T, maxmemory string) upstreamPair {
	t.Helper()
	up := harness.StartRedis(t)
	t.Setenv("SPILLWAY_TEST_HOOKS", "1")
	spw := harness.StartSpillway(t, "", "--upstream", "redis://"+up.Addr(), "--maxmemory", maxmemory,
		"--appendfsync", "no", "--loglevel", "warning")
	return upstreamPair{up: up, spw: spw}
}

// upstreamStats returns the numeric fields of Spillway's INFO tiering,
// failing the test if the counters the upstream tests rely on are missing.
func upstreamStats(t *testing.T, c *harness.Conn) map[string]int64 {
	t.Helper()
	info, err := harness.Info(c, "tiering")
	if err != nil {
		t.Fatalf("INFO tiering: %v", err)
	}
	if info["mode"] != "upstream" {
		t.Fatalf("INFO tiering: mode %q, want upstream", info["mode"])
	}
	stats := map[string]int64{}
	for k, v := range info {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			stats[k] = n
		}
	}
	for _, k := range []string{"demotions", "promotions", "cold_reads", "cold_keys"} {
		if _, ok := stats[k]; !ok {
			t.Fatalf("INFO tiering has no %s field", k)
		}
	}
	return stats
}

// envIntFirst is envInt of the first of names that is set, else def.
func envIntFirst(t *testing.T, def int, names ...string) int {
	t.Helper()
	for _, n := range names {
		if os.Getenv(n) != "" {
			return envInt(t, n, def)
		}
	}
	return def
}

// upstreamSeeds returns the seeds of an upstream differential run.
func upstreamSeeds(t *testing.T) []int64 {
	if os.Getenv("SPILLWAY_DIFF_SEED") != "" {
		return seeds(t)
	}
	n := envIntFirst(t, upstreamDefaultSeeds, "SPILLWAY_UPSTREAM_DIFF_SEEDS", "SPILLWAY_DIFF_SEEDS")
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

// upstreamDiffConfigs are the generator configurations of the embedded
// differential tests (lists on, as listsForSpillway has them).
var upstreamDiffConfigs = []struct {
	name string
	cfg  genConfig
}{
	{"strings", genConfig{Lists: true}},
	{"hashes-sets", genConfig{Lists: true, Collections: true}},
	{"lists", genConfig{Lists: true, ListCommands: true}},
	{"zsets", genConfig{Lists: true, ZSetCommands: true}},
}

// TestUpstreamDifferential runs the random generators (strings, hashes and
// sets, lists, sorted sets; RESP2 and RESP3) against a redis-server and
// against Spillway fronting another redis-server, comparing every reply.
// Keys are moved between the tiers while it runs: the demoter works to a
// 2 MB budget, and every 20-50 ops a separate connection sends DEBUG
// DEMOTE-ALL for one of the generator's databases (0, 1, 2, 9 in turn).
// Each seed's run must have demoted keys and read demoted ones back.
func TestUpstreamDifferential(t *testing.T) {
	for _, tc := range upstreamDiffConfigs {
		for _, proto := range []int{2, 3} {
			name := fmt.Sprintf("%s/resp%d", tc.name, proto)
			t.Run(name, func(t *testing.T) {
				ref := harness.StartRedis(t)
				p := startUpstreamPair(t, upstreamMaxMemory)
				ctl := harness.MustDial(t, p.spw.Addr())
				ops := envIntFirst(t, upstreamDefaultOps, "SPILLWAY_UPSTREAM_DIFF_OPS", "SPILLWAY_DIFF_OPS")
				for _, seed := range upstreamSeeds(t) {
					t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
						before := upstreamStats(t, ctl)
						dem := newUpstreamDemoter(t, p.spw.Addr(), seed)
						runDiff(t, diffRun{
							refAddr: ref.Addr(), subAddr: p.spw.Addr(), subName: "spillway-upstream",
							proto: proto, seed: seed, ops: ops, cfg: tc.cfg,
							testName: "TestUpstreamDifferential/" + name, afterOp: dem.afterOp,
						})
						after := upstreamStats(t, ctl)
						dm := after["demotions"] - before["demotions"]
						pr := after["promotions"] - before["promotions"]
						cr := after["cold_reads"] - before["cold_reads"]
						t.Logf("tiering: demotions +%d (forced %d in %d DEMOTE-ALLs), promotions +%d, cold_reads +%d",
							dm, dem.moved, dem.calls, pr, cr)
						if dem.calls > 0 && dem.ints == 0 {
							t.Errorf("DEBUG DEMOTE-ALL never answered an integer; last reply: %s", dem.last)
						}
						if dm == 0 {
							t.Errorf("no key was demoted during the run")
						}
						if pr+cr == 0 {
							t.Errorf("no demoted key was read back (promotions and cold_reads did not move)")
						}
					})
				}
			})
		}
	}
}

// upstreamDemoter forces demotions during a differential run, on its own
// connection to Spillway.
type upstreamDemoter struct {
	t     *testing.T
	c     *harness.Conn
	r     *rand.Rand
	next  int // op index of the next demotion
	turn  int
	calls int
	ints  int   // DEMOTE-ALL calls answered with an integer
	moved int64 // keys they moved
	last  string
}

// upstreamDemoteDBs are the databases the generators use.
var upstreamDemoteDBs = []string{"0", "1", "2", "9"}

func newUpstreamDemoter(t *testing.T, addr string, seed int64) *upstreamDemoter {
	d := &upstreamDemoter{t: t, c: harness.MustDial(t, addr), r: rand.New(rand.NewSource(seed))}
	d.next = d.gap()
	return d
}

func (d *upstreamDemoter) gap() int {
	lo, hi := upstreamDemoteEvery[0], upstreamDemoteEvery[1]
	return lo + d.r.Intn(hi-lo+1)
}

// afterOp is the diffRun hook: at the scheduled ops it demotes every key of
// the next database in turn. Its replies are not compared.
func (d *upstreamDemoter) afterOp(i int) {
	if i < d.next {
		return
	}
	d.next = i + d.gap()
	db := upstreamDemoteDBs[d.turn%len(upstreamDemoteDBs)]
	d.turn++
	if r := d.c.Do("SELECT", db); r.Str != "OK" {
		d.t.Fatalf("demoter: SELECT %s: %s", db, r.String())
	}
	r := d.c.Do("DEBUG", "DEMOTE-ALL")
	d.calls++
	d.last = r.String()
	if r.Type == ':' {
		d.ints++
		d.moved += r.Int
	} else if !strings.HasPrefix(r.Str, "ERR") {
		d.t.Logf("demoter: DEBUG DEMOTE-ALL in db %s: %s", db, r.String())
	}
}
