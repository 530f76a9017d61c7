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

// Differential tests of upstream mode: Spillway fronting a real
// redis-server (with SPILLWAY_TEST_HOOKS=1, so that DEBUG DEMOTE moves keys
// to its cold tier on demand), compared with a plain redis-server.
//
//   - TestUpstreamDifferential: the random generators of the embedded
//     differential tests, with keys demoted every few dozen ops.
//   - TestUpstreamScenarios: hand-written cross-client scenarios
//     (transactions, WATCH, SELECT, pub/sub, blocking commands, scripts,
//     keyspace commands on cold keys, FLUSHDB, SWAPDB);
//     TestUpstreamScenariosRedisVsRedis proves them deterministic.
//   - TestUpstreamKeyCountDuringTierMoves: key counts while keys move.

// Default size of an upstream differential run, smaller than the embedded
// runs' (every op crosses two servers, and keys are demoted every few dozen
// ops): under a minute in all on two cores. SPILLWAY_UPSTREAM_DIFF_SEEDS
// and SPILLWAY_UPSTREAM_DIFF_OPS (else SPILLWAY_DIFF_SEEDS and
// SPILLWAY_DIFF_OPS) change it; SPILLWAY_DIFF_SEED runs one seed, as the
// reproduce line of a failure says.
const (
	upstreamDefaultSeeds = 2
	upstreamDefaultOps   = 2000
)

// upstreamBudget is the upstream budget (maxmemory) of a differential run
// with generator config name. "3mb" is above an idle redis-server's
// used_memory (about 1 MB) and below what the runs make it use, so
// Spillway's demoter moves keys on its own too, concurrently with the
// commands. The sorted-set runs get "1gb", more than a run uses, so that
// keys move only when the run says: their OBJECT ENCODING commands would
// see what the demoter's RESTOREs did to encodings (see keepHot).
func upstreamBudget(name string) string {
	if name == "zsets" {
		return "1gb"
	}
	return "3mb"
}

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
	return tieringStats(t, c, "upstream")
}

// tieringStats returns the numeric fields of INFO tiering, failing the
// test unless Spillway runs in mode and has the counters tests rely on.
func tieringStats(t *testing.T, c *harness.Conn, mode string) map[string]int64 {
	t.Helper()
	info, err := harness.Info(c, "tiering")
	if err != nil {
		t.Fatalf("INFO tiering: %v", err)
	}
	if info["mode"] != mode {
		t.Fatalf("INFO tiering: mode %q, want %s", info["mode"], mode)
	}
	stats := map[string]int64{}
	for k, v := range info {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			stats[k] = n
		}
	}
	want := []string{"demotions", "promotions", "cold_reads", "cold_keys"}
	if mode == "embedded" {
		want = want[:3]
	}
	for _, k := range want {
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
// Keys move between the tiers while it runs: every 20-50 ops a separate
// connection demotes every key of one of the generator's databases (0, 1,
// 2, 9 in turn), which later commands reload or read from the cold tier,
// and, but for the sorted-set runs, Spillway's demoter works to a small
// budget at the same time (upstreamBudget). Each seed's run must have
// demoted keys and read demoted ones back.
//
// One thing cannot match and is kept out (see keepHot): a zset, hash or
// set that Redis holds in its big encoding although it is small again
// comes back from the cold tier compact (Redis re-derives the encoding
// when it RESTOREs it, as on any RDB load), so OBJECT ENCODING would
// differ; such keys are not demoted.
func TestUpstreamDifferential(t *testing.T) {
	for _, tc := range upstreamDiffConfigs {
		for _, proto := range []int{2, 3} {
			name := fmt.Sprintf("%s/resp%d", tc.name, proto)
			t.Run(name, func(t *testing.T) {
				ref, scratch := harness.StartRedis(t), harness.StartRedis(t)
				budget := upstreamBudget(tc.name)
				p := startUpstreamPair(t, budget)
				ctl := harness.MustDial(t, p.spw.Addr())
				ops := envIntFirst(t, upstreamDefaultOps, "SPILLWAY_UPSTREAM_DIFF_OPS", "SPILLWAY_DIFF_OPS")
				for _, seed := range upstreamSeeds(t) {
					t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
						before := upstreamStats(t, ctl)
						dem := newUpstreamDemoter(t, p.spw.Addr(), ref.Addr(), scratch.Addr(), seed, tc.cfg)
						runDiff(t, diffRun{
							refAddr: ref.Addr(), subAddr: p.spw.Addr(), subName: "spillway-upstream",
							proto: proto, seed: seed, ops: ops, cfg: tc.cfg,
							testName: "TestUpstreamDifferential/" + name, afterOp: dem.afterOp,
						})
						after := upstreamStats(t, ctl)
						dm := after["demotions"] - before["demotions"]
						pr := after["promotions"] - before["promotions"]
						cr := after["cold_reads"] - before["cold_reads"]
						t.Logf("tiering: demotions +%d (forced: %d in %d calls), promotions +%d, cold_reads +%d; "+
							"kept hot for their encoding: %d",
							dm, dem.moved, dem.calls, pr, cr, dem.keptEnc)
						if dem.calls > 0 && dem.ints == 0 {
							t.Errorf("DEBUG DEMOTE never answered an integer; last reply: %s", dem.last)
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
// connection to Spillway. It follows the run with a shadow generator of the
// same seed and configuration (the op sequence does not depend on the
// epoch), so it knows which op comes next.
type upstreamDemoter struct {
	t       *testing.T
	c       *harness.Conn // to Spillway
	ref     *harness.Conn // to the reference redis-server, in RESP3
	scratch *harness.Conn // to a third redis-server: what RESTORE makes
	r       *rand.Rand
	shadow  *gen
	ops     []op  // the shadow's ops so far
	dbs     []int // the database each of ops is sent in
	next    int   // op index of the next demotion
	turn    int
	calls   int
	ints    int   // DEBUG DEMOTE calls answered with an integer
	moved   int64 // keys they moved
	keptEnc int   // keys not demoted: RESTORE would change their encoding
	last    string
	lastOp  int // the last op compared, -1 before the first
}

// upstreamDemoteDBs are the databases the generators use.
var upstreamDemoteDBs = []int{0, 1, 2, 9}

func newUpstreamDemoter(t *testing.T, addr, refAddr, scratchAddr string, seed int64, cfg genConfig) *upstreamDemoter {
	d := &upstreamDemoter{t: t, c: harness.MustDial(t, addr), ref: harness.MustDial(t, refAddr),
		scratch: harness.MustDial(t, scratchAddr), r: rand.New(rand.NewSource(seed)),
		shadow: newGen(seed, 1e9, cfg), lastOp: -1}
	if r := d.ref.Do("HELLO", "3"); r.Type != '%' {
		t.Fatalf("demoter: HELLO 3: %s", r.String())
	}
	d.next = d.gap()
	// A transport error inside runDiff (a malformed reply, say) ends the
	// run without naming the op: name it from the shadow generator.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		j := d.lastOp + 1
		o, db := d.op(j)
		for o.Sleep > 0 && j < d.lastOp+10 {
			j++
			o, db = d.op(j)
		}
		t.Logf("the run stopped after op #%d; the op after it was #%d in db %d: %s", d.lastOp, j, db, fmtArgs(o.Args))
	})
	return d
}

func (d *upstreamDemoter) gap() int {
	lo, hi := upstreamDemoteEvery[0], upstreamDemoteEvery[1]
	return lo + d.r.Intn(hi-lo+1)
}

// op returns the run's op i and the database the generator is in when it
// sends it.
func (d *upstreamDemoter) op(i int) (op, int) {
	for len(d.ops) <= i {
		d.ops = append(d.ops, d.shadow.next())
		d.dbs = append(d.dbs, d.shadow.db)
	}
	return d.ops[i], d.dbs[i]
}

// afterOp is the diffRun hook: at the scheduled ops it demotes the keys of
// the next database in turn. Its replies are not compared.
func (d *upstreamDemoter) afterOp(i int) {
	d.lastOp = i
	if i < d.next {
		return
	}
	d.next = i + d.gap()
	db := upstreamDemoteDBs[d.turn%len(upstreamDemoteDBs)]
	d.turn++
	d.demoteKeys(db)
}

// selectDB selects db on the Spillway and reference connections.
func (d *upstreamDemoter) selectDB(db int) {
	d.t.Helper()
	for _, c := range []*harness.Conn{d.c, d.ref} {
		if r := c.Do("SELECT", strconv.Itoa(db)); r.Str != "OK" {
			d.t.Fatalf("demoter: SELECT %d: %s", db, r.String())
		}
	}
}

// demoteKeys demotes the keys of db: DEBUG DEMOTE-ALL, or DEBUG DEMOTE of
// all but the keys that must stay hot (keepHot).
func (d *upstreamDemoter) demoteKeys(db int) {
	d.selectDB(db)
	var keys []string
	for _, e := range d.ref.Do("KEYS", "*").Elems {
		keys = append(keys, e.Str)
	}
	keep := d.keepHot(keys)
	var r harness.Reply
	switch {
	case len(keep) == 0:
		r = d.c.Do("DEBUG", "DEMOTE-ALL")
	case len(keep) == len(keys):
		return
	default:
		args := []string{"DEBUG", "DEMOTE"}
		for _, k := range keys {
			if !keep[k] {
				args = append(args, k)
			}
		}
		r = d.c.Do(args...)
	}
	d.calls++
	d.last = r.String()
	if r.Type == ':' {
		d.ints++
		d.moved += r.Int
	} else {
		d.t.Logf("demoter: DEBUG DEMOTE in db %d: %s", db, r.String())
	}
}

// keepHot returns the keys that must not be demoted, asking the reference
// server (whose keys are the same): zsets, hashes and sets in a big
// encoding that a DUMP and RESTORE would make compact (tried on the
// scratch server). Requests are pipelined.
func (d *upstreamDemoter) keepHot(keys []string) map[string]bool {
	keep := map[string]bool{}
	for _, k := range keys {
		d.ref.Send("OBJECT", "ENCODING", k)
	}
	var big []string
	for _, k := range keys {
		if e := d.ref.Read(); e.Str == "skiplist" || e.Str == "hashtable" {
			big = append(big, k)
		}
	}
	for _, k := range big {
		d.ref.Send("DUMP", k)
	}
	dumps := make([]harness.Reply, len(big))
	for i := range big {
		dumps[i] = d.ref.Read()
	}
	for i, k := range big {
		if dumps[i].Type != '$' || dumps[i].Null {
			continue // gone meanwhile (expired)
		}
		if r := d.scratch.Do("RESTORE", "scratch", "0", dumps[i].Str, "REPLACE"); r.Str != "OK" {
			d.t.Fatalf("demoter: RESTORE of %q's DUMP on the scratch server: %s", k, r.String())
		}
		if e := d.scratch.Do("OBJECT", "ENCODING", "scratch"); e.Str != "skiplist" && e.Str != "hashtable" {
			keep[k] = true
			d.keptEnc++
		}
	}
	return keep
}

// TestUpstreamKeyCountDuringTierMoves checks DBSIZE, KEYS, EXISTS and GET
// on one connection while another moves every key to the cold tier (DEBUG
// DEMOTE-ALL) and back (RENAME k k, a write, reloads k) over and over: the
// key count never changes, so every answer must be the same. Redis answers
// each command atomically; Spillway must not count a moving key twice or
// miss it.
func TestUpstreamKeyCountDuringTierMoves(t *testing.T) {
	const nKeys, rounds, maxChecks = 40, 40, 200000
	p := startUpstreamPair(t, "1gb")
	mover := harness.MustDial(t, p.spw.Addr())
	keys := make([]string, nKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("key:%02d", i)
		if r := mover.Do("SET", keys[i], strings.Repeat("v", 100)); r.Str != "OK" {
			t.Fatalf("SET: %s", r.String())
		}
	}
	checker, err := harness.Dial(p.spw.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer checker.Close()
	stop := make(chan struct{})
	type result struct {
		checks int
		bad    []string
		total  int
	}
	done := make(chan result, 1)
	go func() {
		var res result
		bad := func(format string, a ...any) {
			res.total++
			if len(res.bad) < 10 {
				res.bad = append(res.bad, fmt.Sprintf(format, a...))
			}
		}
		want := []byte(fmt.Sprintf(":%d\r\n", nKeys))
		for res.checks < maxChecks {
			select {
			case <-stop:
				done <- res
				return
			default:
			}
			res.checks++
			if r := checker.Do("DBSIZE"); string(r.Raw) != string(want) {
				bad("DBSIZE -> %s", errOr(r))
			}
			if r := checker.Do("KEYS", "*"); r.Err != nil || len(r.Elems) != nKeys {
				bad("KEYS * -> %d keys (%v)", len(r.Elems), r.Err)
			}
			if r := checker.Do(append([]string{"EXISTS"}, keys...)...); string(r.Raw) != string(want) {
				bad("EXISTS (all) -> %s", errOr(r))
			}
			if r := checker.Do("GET", keys[res.checks%nKeys]); r.Str != strings.Repeat("v", 100) {
				bad("GET %s -> %s", keys[res.checks%nKeys], errOr(r))
			}
		}
		done <- res
	}()
	var demoted int64
	for round := 0; round < rounds; round++ {
		r := mover.Do("DEBUG", "DEMOTE-ALL")
		if r.Type != ':' {
			close(stop)
			<-done
			t.Fatalf("DEBUG DEMOTE-ALL: %s", r.String())
		}
		demoted += r.Int
		for _, k := range keys {
			mover.Do("RENAME", k, k)
		}
	}
	close(stop)
	res := <-done
	t.Logf("%d rounds moved %d keys; %d checks ran meanwhile", rounds, demoted, res.checks)
	if demoted == 0 {
		t.Errorf("no key was demoted")
	}
	if res.total > 0 {
		t.Errorf("%d of %d checks were wrong while keys moved between tiers (the count is always %d); first ones:\n  %s",
			res.total, res.checks, nKeys, strings.Join(res.bad, "\n  "))
	}
}
