package integration

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

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

// ---- Hand-written cross-client scenarios ----

// upScenario is a scenario run once against a plain redis-server and once
// against Spillway fronting one; the two transcripts must match.
type upScenario struct {
	name string
	run  func(s *scen)
}

// scen is one run of a scenario on one server.
type scen struct {
	t     *testing.T
	name  string // "redis" or "spillway", for messages
	addr  string
	spill bool // the server is Spillway in upstream mode
	// embedded: the server is Spillway in embedded mode (spill is set too:
	// DEBUG DEMOTE works the same).
	embedded bool
	side     *harness.Conn // uncompared: DEBUG DEMOTE, INFO, waits
	steps    []scenStep
}

// scenStep is one transcript entry: a command and its reply, a frame read
// later on a connection (args nil), or a value the scenario computed
// (note set, compared byte for byte).
type scenStep struct {
	conn  string
	args  []string
	note  string
	reply harness.Reply
}

func (st scenStep) String() string {
	switch {
	case st.note != "":
		return fmt.Sprintf("%s: (%s)", st.conn, st.note)
	case st.args == nil:
		return st.conn + ": (read)"
	}
	return st.conn + ": " + fmtArgs(st.args)
}

// sconn is a scenario's client connection; its traffic is recorded.
type sconn struct {
	s    *scen
	name string
	c    *harness.Conn
}

// scenTimeout bounds every read of a scenario connection: a blocking
// command that is never served fails the comparison instead of hanging.
const scenTimeout = 5 * time.Second

// conn opens a client connection, after HELLO 3 when proto is 3 (the HELLO
// reply names the server, so it is only checked to be a map).
func (s *scen) conn(name string, proto int) *sconn {
	s.t.Helper()
	c, err := harness.Dial(s.addr)
	if err != nil {
		s.t.Fatalf("%s: %v", s.name, err)
	}
	s.t.Cleanup(func() { c.Close() })
	c.Timeout = scenTimeout
	if proto == 3 {
		if r := c.Do("HELLO", "3"); r.Type != '%' {
			s.t.Fatalf("%s: %s: HELLO 3: %s", s.name, name, r.String())
		}
	}
	return &sconn{s: s, name: name, c: c}
}

// do sends a command and records its reply.
func (c *sconn) do(args ...string) harness.Reply {
	r := c.c.Do(args...)
	c.s.steps = append(c.s.steps, scenStep{conn: c.name, args: args, reply: r})
	return r
}

// send sends a command without reading its reply (a blocking command, or a
// subscription whose frames are read with read).
func (c *sconn) send(args ...string) {
	c.s.t.Helper()
	err := c.c.Send(args...)
	if err == nil {
		err = c.c.Flush()
	}
	if err != nil {
		c.s.t.Fatalf("%s: %s: send %s: %v", c.s.name, c.name, fmtArgs(args), err)
	}
	c.s.steps = append(c.s.steps, scenStep{conn: c.name, note: "sent " + fmtArgs(args),
		reply: harness.Reply{Type: '+', Raw: []byte("sent")}})
}

// read reads and records one reply or pushed frame.
func (c *sconn) read() harness.Reply {
	r := c.c.Read()
	c.s.steps = append(c.s.steps, scenStep{conn: c.name, reply: r})
	return r
}

// record adds a value the scenario computed to the transcript.
func (s *scen) record(what, value string) {
	s.steps = append(s.steps, scenStep{conn: "check", note: what,
		reply: harness.Reply{Type: '$', Str: value, Raw: []byte(value)}})
}

// demote moves keys of db to the cold tier on Spillway (DEBUG DEMOTE) and
// fails unless all of them moved; on redis it does nothing.
func (s *scen) demote(db int, keys ...string) {
	s.t.Helper()
	s.demoteExpect(db, len(keys), keys...)
}

// demoteExpect is demote expecting want keys to move.
func (s *scen) demoteExpect(db, want int, keys ...string) {
	s.t.Helper()
	if !s.spill {
		return
	}
	s.sideSelect(db)
	r := s.side.Do(append([]string{"DEBUG", "DEMOTE"}, keys...)...)
	if r.Type != ':' || r.Int != int64(want) {
		s.t.Errorf("spillway: DEBUG DEMOTE %s in db %d: %s, want (integer) %d", fmtArgs(keys), db, r.String(), want)
	}
}

func (s *scen) sideSelect(db int) {
	s.t.Helper()
	if r := s.side.Do("SELECT", strconv.Itoa(db)); r.Str != "OK" {
		s.t.Fatalf("%s: side SELECT %d: %s", s.name, db, r.String())
	}
}

// noReload runs f and, on Spillway, fails if it reloaded a cold key
// (INFO tiering promotions moved).
func (s *scen) noReload(what string, f func()) {
	s.t.Helper()
	if !s.spill {
		f()
		return
	}
	before := s.stats()["promotions"]
	f()
	if after := s.stats()["promotions"]; after != before {
		s.t.Errorf("spillway: %s reloaded %d cold keys (promotions %d -> %d); it should be answered from the cold tier",
			what, after-before, before, after)
	}
}

// coldKeys returns INFO tiering cold_keys on Spillway, -1 on redis.
func (s *scen) coldKeys() int64 {
	s.t.Helper()
	if !s.spill {
		return -1
	}
	return s.stats()["cold_keys"]
}

// stats returns Spillway's INFO tiering counters.
func (s *scen) stats() map[string]int64 {
	s.t.Helper()
	if s.embedded {
		return tieringStats(s.t, s.side, "embedded")
	}
	return upstreamStats(s.t, s.side)
}

// waitBlocked waits until n clients are blocked (INFO clients
// blocked_clients; Spillway forwards INFO clients to its upstream, where
// its connection is the one blocked). Bounded: fails after about 5 s.
func (s *scen) waitBlocked(n int) {
	s.t.Helper()
	var last string
	for i := 0; i < 500; i++ {
		info, err := harness.Info(s.side, "clients")
		if err != nil {
			s.t.Fatalf("%s: %v", s.name, err)
		}
		last = info["blocked_clients"]
		if b, err := strconv.Atoi(last); err == nil && b >= n {
			return
		}
		pause(10 * time.Millisecond)
	}
	s.t.Fatalf("%s: blocked_clients is %s, want %d", s.name, last, n)
}

// scanAll iterates SCAN (with opts) on c until cursor 0 and records the
// sorted, de-duplicated keys it returned.
func (s *scen) scanAll(c *sconn, opts ...string) []string {
	s.t.Helper()
	seen := map[string]bool{}
	cursor := "0"
	calls := 0
	for {
		r := c.c.Do(append([]string{"SCAN", cursor}, opts...)...)
		calls++
		if r.Err != nil || r.Type != '*' || len(r.Elems) != 2 {
			s.record(strings.TrimSpace("SCAN "+fmtArgs(opts))+" page", "bad page: "+r.String())
			return nil
		}
		for _, e := range r.Elems[1].Elems {
			seen[e.Str] = true
		}
		cursor = r.Elems[0].Str
		if cursor == "0" {
			break
		}
		if calls >= 1000 {
			s.record(strings.TrimSpace("SCAN "+fmtArgs(opts))+" page", "cursor still not 0 after 1000 calls")
			return nil
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s.record(strings.TrimSpace("SCAN "+fmtArgs(opts))+" to cursor 0, sorted keys", strings.Join(keys, ","))
	return keys
}

// compareTranscripts fails t at the first step where the subject's run
// differs from the reference run.
func compareTranscripts(t *testing.T, ref, sub *scen) {
	t.Helper()
	n := min(len(ref.steps), len(sub.steps))
	for i := 0; i < n; i++ {
		a, b := ref.steps[i], sub.steps[i]
		if a.String() != b.String() {
			t.Fatalf("step %d: the runs diverged: %s %s -> %s, %s %s -> %s",
				i, ref.name, a, errOr(a.reply), sub.name, b, errOr(b.reply))
		}
		args := a.args
		if args == nil {
			args = []string{"(read)"}
		}
		if ok, why := compareReplies(args, a.reply, b.reply); !ok {
			var ctx strings.Builder
			for j := max(0, i-8); j < i; j++ {
				fmt.Fprintf(&ctx, "  %s -> %s\n", ref.steps[j], fmtRaw(ref.steps[j].reply.Raw))
			}
			t.Fatalf("step %d: %s: %s\n%-9s %s\n%-9s %s\n%s reply:\n%s\n%s reply:\n%s\nsteps before:\n%s",
				i, a, why, ref.name+":", errOr(a.reply), sub.name+":", errOr(b.reply),
				ref.name, a.reply.String(), sub.name, b.reply.String(), ctx.String())
		}
	}
	if len(ref.steps) != len(sub.steps) {
		t.Fatalf("%s ran %d steps, %s %d", ref.name, len(ref.steps), sub.name, len(sub.steps))
	}
}

// TestUpstreamScenarios runs the hand-written cross-client scenarios
// (upstreamScenarios) against a redis-server and against Spillway fronting
// another, comparing the transcripts; on Spillway some steps also check
// that keys were demoted, not reloaded, or kept from demotion.
func TestUpstreamScenarios(t *testing.T) {
	p := startUpstreamPair(t, "1gb")
	runUpstreamScenarios(t, p.spw.Addr(), true)
}

// TestUpstreamScenariosRedisVsRedis runs the scenarios against two
// redis-servers: it proves they are deterministic, so that a mismatch in
// TestUpstreamScenarios is Spillway's.
func TestUpstreamScenariosRedisVsRedis(t *testing.T) {
	runUpstreamScenarios(t, harness.StartRedis(t).Addr(), false)
}

// scenSubject is the server a scenario run compares with redis-server.
type scenSubject int

const (
	subjectRedis    scenSubject = iota // a second redis-server
	subjectUpstream                    // Spillway fronting a redis-server
	subjectEmbedded                    // Spillway in embedded mode
)

// runUpstreamScenarios runs every upstream scenario on a fresh
// redis-server and on the server at subAddr (Spillway when spill), and
// compares them.
func runUpstreamScenarios(t *testing.T, subAddr string, spill bool) {
	subject := subjectRedis
	if spill {
		subject = subjectUpstream
	}
	runScenarios(t, subAddr, subject, upstreamScenarios)
}

// runScenarios runs each scenario on a fresh redis-server and on the
// subject at subAddr, and compares the transcripts.
func runScenarios(t *testing.T, subAddr string, subject scenSubject, scenarios []upScenario) {
	ref := harness.StartRedis(t)
	refSide, subSide := harness.MustDial(t, ref.Addr()), harness.MustDial(t, subAddr)
	subName := "redis-2"
	if subject != subjectRedis {
		subName = "spillway"
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			runs := [2]*scen{
				{t: t, name: "redis", addr: ref.Addr(), side: refSide},
				{t: t, name: subName, addr: subAddr, spill: subject != subjectRedis,
					embedded: subject == subjectEmbedded, side: subSide},
			}
			for _, s := range runs {
				s.sideSelect(0)
				for _, cmd := range [][]string{{"FLUSHALL"}, {"SCRIPT", "FLUSH"}} {
					if r := s.side.Do(cmd...); r.Str != "OK" {
						t.Fatalf("%s: %s: %s", s.name, fmtArgs(cmd), r.String())
					}
				}
				sc.run(s)
				if t.Failed() {
					return
				}
			}
			compareTranscripts(t, runs[0], runs[1])
		})
	}
}

// upstreamScenarios are the scenarios of TestUpstreamScenarios.
var upstreamScenarios = []upScenario{
	{name: "multi-exec-queued-error", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SET", "a", "1")
		s.demote(0, "a")
		c.do("MULTI")
		c.do("SET", "b", "2")
		c.do("INCR") // wrong arity: rejected at queue time
		c.do("GET", "a")
		c.do("EXEC") // EXECABORT
		c.do("GET", "b")
		c.do("GET", "a")
		c.do("MULTI")
		c.do("NOSUCHCOMMAND", "a")
		c.do("EXEC")
		c.do("EXISTS", "b")
	}},
	{name: "multi-exec-runtime-error", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SET", "s", "x")
		c.do("RPUSH", "l", "a", "b")
		c.do("HSET", "h", "f", "1")
		s.demote(0, "s", "l", "h")
		c.do("MULTI")
		c.do("INCR", "s")       // not an integer: fails at EXEC only
		c.do("LPUSH", "s", "1") // WRONGTYPE at EXEC
		c.do("GET", "s")
		c.do("LRANGE", "l", "0", "-1")
		c.do("HINCRBY", "h", "f", "2")
		c.do("SET", "n", "5")
		c.do("INCR", "n")
		c.do("EXEC")
		c.do("HGETALL", "h")
		c.do("GET", "n")
	}},
	{name: "multi-exec-resp3-cold", run: func(s *scen) {
		c := s.conn("c1", 3)
		c.do("ZADD", "z", "1", "a", "2.5", "b")
		c.do("SADD", "st", "m")
		s.demote(0, "z", "st")
		c.do("MULTI")
		c.do("ZRANGE", "z", "0", "-1", "WITHSCORES")
		c.do("SMEMBERS", "st")
		c.do("ZINCRBY", "z", "1", "a")
		c.do("EXEC")
	}},
	{name: "watch-modified-by-other-client", run: func(s *scen) {
		c1, c2 := s.conn("c1", 2), s.conn("c2", 2)
		c1.do("SET", "k", "1")
		c1.do("WATCH", "k")
		c2.do("SET", "k", "2")
		c1.do("MULTI")
		c1.do("GET", "k")
		c1.do("SET", "k", "3")
		c1.do("EXEC") // nil: k changed since WATCH
		c1.do("GET", "k")
		// After UNWATCH another client's write does not matter.
		c1.do("WATCH", "k")
		c1.do("UNWATCH")
		c2.do("SET", "k", "4")
		c1.do("MULTI")
		c1.do("INCR", "k")
		c1.do("EXEC")
	}},
	{name: "watch-demoted-key", run: func(s *scen) {
		c1 := s.conn("c1", 2)
		c1.do("SET", "w", "10")
		s.demote(0, "w")
		c1.do("WATCH", "w")
		c1.do("MULTI")
		c1.do("GET", "w")
		c1.do("INCR", "w")
		c1.do("EXEC") // succeeds, sees 10
		c1.do("GET", "w")
		// A cold key another client then writes still aborts the EXEC.
		c2 := s.conn("c2", 2)
		s.demote(0, "w")
		c1.do("WATCH", "w")
		c2.do("SET", "w", "20")
		c1.do("MULTI")
		c1.do("GET", "w")
		c1.do("EXEC")
	}},
	{name: "watch-prevents-demotion", run: func(s *scen) {
		c1 := s.conn("c1", 2)
		c1.do("SET", "w", "10")
		c1.do("HSET", "wh", "f", "v")
		c1.do("WATCH", "w", "wh")
		// Demoting would UNLINK the keys upstream and abort the EXEC.
		s.demoteExpect(0, 0, "w", "wh")
		c1.do("MULTI")
		c1.do("GET", "w")
		c1.do("HGET", "wh", "f")
		c1.do("EXEC") // must succeed
		// EXEC ends the protection.
		s.demote(0, "w", "wh")
		c1.do("GET", "w")
		// DISCARD and UNWATCH end it too.
		c1.do("WATCH", "w")
		s.demoteExpect(0, 0, "w")
		c1.do("MULTI")
		c1.do("DISCARD")
		s.demote(0, "w")
		c1.do("WATCH", "wh")
		c1.do("UNWATCH")
		s.demote(0, "wh")
		c1.do("HGETALL", "wh")
	}},
	{name: "discard", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SET", "d", "old")
		s.demote(0, "d")
		c.do("MULTI")
		c.do("SET", "d", "new")
		c.do("SET", "e", "1")
		c.do("MULTI") // nested: an error, the transaction stays open
		c.do("DISCARD")
		c.do("GET", "d")
		c.do("GET", "e")
		c.do("DISCARD") // without MULTI
		c.do("EXEC")    // without MULTI
	}},
	{name: "select-db-and-dbsize", run: func(s *scen) {
		c1, c2 := s.conn("c1", 2), s.conn("c2", 2)
		c1.do("SET", "a", "db0")
		c1.do("SELECT", "3")
		c1.do("SET", "a", "db3")
		c1.do("SET", "b", "db3")
		c1.do("RPUSH", "l", "x", "y")
		s.demote(3, "a", "l")
		c1.do("DBSIZE")
		c1.do("GET", "a")
		c1.do("LLEN", "l")
		c1.do("KEYS", "*")
		c2.do("DBSIZE") // c2 is still in db 0
		c2.do("GET", "a")
		c2.do("SELECT", "3")
		c2.do("EXISTS", "a", "b", "l")
		c1.do("SELECT", "0")
		c1.do("DBSIZE")
		c1.do("GET", "a")
		// MOVE onto a key that is cold in the target database.
		c2.do("SET", "m", "in3")
		s.demote(3, "m")
		c1.do("SET", "m", "in0")
		c1.do("MOVE", "m", "3") // 0: m exists in db 3
		c1.do("GET", "m")
		c2.do("GET", "m")
	}},
	{name: "select-inside-multi", run: func(s *scen) {
		c1 := s.conn("c1", 2)
		c1.do("MULTI")
		c1.do("SELECT", "99") // queued; fails inside EXEC
		c1.do("SET", "e", "5")
		c1.do("EXEC")
		c1.do("MULTI")
		c1.do("SELECT", "5")
		c1.do("SET", "in5", "1")
		c1.do("DISCARD") // the SELECT never ran
		c1.do("SET", "k", "v")
		c1.do("DBSIZE")
		c1.do("MULTI")
		c1.do("SELECT", "6")
		c1.do("EXEC") // c1 is now in db 6
		c1.do("SET", "after", "a")
		c1.do("KEYS", "*")
		c1.do("SELECT", "0")
		c1.do("KEYS", "*")
		// Another client's transaction runs in its own database.
		c2 := s.conn("c2", 2)
		c2.do("MULTI")
		c2.do("SET", "fromc2", "x")
		c2.do("EXEC")
		c2.do("GET", "fromc2")
		c2.do("DBSIZE")
	}},
	{name: "copy-db-onto-cold-key", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SELECT", "2")
		c.do("SET", "dst", "old")
		c.do("SET", "dst2", "old")
		s.demote(2, "dst", "dst2")
		c.do("SELECT", "0")
		c.do("SET", "src", "new")
		c.do("COPY", "src", "dst", "DB", "2") // 0: dst exists in db 2
		c.do("COPY", "src", "dst2", "DB", "2", "REPLACE")
		c.do("SELECT", "2")
		c.do("DBSIZE")
		c.do("GET", "dst")
		c.do("GET", "dst2")
		c.do("KEYS", "*")
	}},
	{name: "expired-cold-key-is-gone", run: func(s *scen) {
		c := s.conn("c1", 2)
		keys := []string{"e1", "e2", "e3", "e4", "e5"}
		for _, k := range keys {
			c.do("SET", k, "v", "PX", "30")
		}
		c.do("SET", "stays", "v")
		s.demote(0, append(keys, "stays")...)
		pause(80 * time.Millisecond) // the TTLs run out
		c.do("GET", "e1")
		c.do("EXISTS", "e2")
		c.do("TTL", "e3")
		c.do("TYPE", "e4")
		c.do("STRLEN", "e5")
		// Each was touched, so Redis has deleted it.
		c.do("DBSIZE")
		c.do("KEYS", "*")
		c.do("SCAN", "0", "COUNT", "100")
	}},
	{name: "zset-negative-zero-score", run: func(s *scen) {
		for _, proto := range []int{2, 3} {
			c := s.conn(fmt.Sprintf("resp%d", proto), proto)
			// A long member makes it a skiplist, which keeps the sign.
			c.do("ZADD", "z", "1", strings.Repeat("m", 100), "-0", "a")
			c.do("OBJECT", "ENCODING", "z")
			s.demote(0, "z")
			c.do("ZSCORE", "z", "a")
			c.do("ZRANGE", "z", "0", "-1", "WITHSCORES")
			c.do("ZADD", "z", "2", "b") // reloads
			c.do("ZSCORE", "z", "a")
			c.do("DEL", "z")
		}
	}},
	{name: "pubsub-resp2", run: func(s *scen) { pubsubScenario(s, 2) }},
	{name: "pubsub-resp3", run: func(s *scen) { pubsubScenario(s, 3) }},
	{name: "blpop-served-by-later-push", run: func(s *scen) { blockingScenario(s, 2) }},
	{name: "blpop-served-by-later-push-resp3", run: func(s *scen) { blockingScenario(s, 3) }},
	{name: "blpop-timeout", run: func(s *scen) {
		for _, proto := range []int{2, 3} {
			c := s.conn(fmt.Sprintf("resp%d", proto), proto)
			c.do("BLPOP", "nolist", "0.05")
			c.do("BLMOVE", "nolist", "dst", "LEFT", "RIGHT", "0.05")
			c.do("BZPOPMIN", "nozset", "0.05")
			c.do("EXISTS", "dst")
		}
	}},
	{name: "blmove-served-by-later-push", run: func(s *scen) {
		c1, c2 := s.conn("c1", 2), s.conn("c2", 2)
		c2.do("RPUSH", "dst", "old")
		s.demote(0, "dst")
		c1.send("BLMOVE", "src", "dst", "LEFT", "RIGHT", "0")
		s.waitBlocked(1)
		c2.do("LPUSH", "src", "x", "y")
		c1.read()
		c2.do("LRANGE", "dst", "0", "-1")
		c2.do("LRANGE", "src", "0", "-1")
	}},
	{name: "blocking-pop-of-cold-key", run: func(s *scen) {
		c1, c2 := s.conn("c1", 2), s.conn("c2", 3)
		c1.do("RPUSH", "q", "a", "b")
		c1.do("ZADD", "zq", "1", "m", "2", "n")
		c1.do("RPUSH", "src", "s1")
		s.demote(0, "q", "zq", "src")
		c1.do("BLPOP", "q", "0") // served at once from the reloaded list
		c2.do("BZPOPMAX", "zq", "0")
		c1.do("BRPOPLPUSH", "src", "q", "0")
		c1.do("LRANGE", "q", "0", "-1")
		c2.do("ZRANGE", "zq", "0", "-1", "WITHSCORES")
		c1.do("EXISTS", "src")
	}},
	{name: "eval-on-cold-keys", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SET", "e", "5")
		c.do("HSET", "h", "f", "1")
		c.do("RPUSH", "l", "x")
		s.demote(0, "e", "h", "l")
		c.do("EVAL", "local v = redis.call('GET', KEYS[1]); redis.call('SET', KEYS[1], v * 2); return v", "1", "e")
		c.do("GET", "e")
		c.do("EVAL", "return redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])", "1", "h", "f", "5")
		c.do("EVAL", "return {redis.call('LPUSH', KEYS[1], 'y'), redis.call('LRANGE', KEYS[1], 0, -1), redis.call('TYPE', KEYS[2])}", "2", "l", "h")
		s.demote(0, "e")
		c.do("EVAL_RO", "return redis.call('GET', KEYS[1])", "1", "e")
		c.do("EVAL", "return redis.call('INCR', KEYS[1])", "1", "l") // WRONGTYPE inside the script
		c.do("HGETALL", "h")
	}},
	{name: "script-load-evalsha", run: func(s *scen) {
		c1, c2 := s.conn("c1", 2), s.conn("c2", 3)
		sha := c1.do("SCRIPT", "LOAD", "return redis.call('GET', KEYS[1])").Str
		inc := c1.do("SCRIPT", "LOAD", "return redis.call('INCRBY', KEYS[1], ARGV[1])").Str
		c1.do("SET", "s", "v")
		c1.do("SET", "n", "1")
		s.demote(0, "s", "n")
		c2.do("EVALSHA", sha, "1", "s")
		c2.do("EVALSHA", inc, "1", "n", "41")
		c1.do("SCRIPT", "EXISTS", sha, inc, "0000000000000000000000000000000000000000")
		c1.do("EVALSHA", "0000000000000000000000000000000000000000", "0")
		s.demote(0, "n")
		c1.do("EVALSHA_RO", sha, "1", "n")
	}},
	{name: "scan-over-cold-keys", run: func(s *scen) {
		for _, proto := range []int{2, 3} {
			c := s.conn(fmt.Sprintf("resp%d", proto), proto)
			c.do("FLUSHDB")
			for i := 0; i < 30; i++ {
				c.do("SET", fmt.Sprintf("key:%02d", i), "v")
				c.do("HSET", fmt.Sprintf("hash:%02d", i), "f", "v")
			}
			var cold []string
			for i := 0; i < 30; i += 2 {
				cold = append(cold, fmt.Sprintf("key:%02d", i), fmt.Sprintf("hash:%02d", i+1))
			}
			s.demote(0, cold...)
			s.noReload("SCAN", func() {
				s.scanAll(c)
				s.scanAll(c, "COUNT", "4")
				s.scanAll(c, "MATCH", "key:2*", "COUNT", "3")
				s.scanAll(c, "TYPE", "hash")
			})
			// Everything cold.
			if s.spill {
				s.sideSelect(0)
				s.side.Do("DEBUG", "DEMOTE-ALL")
			}
			s.scanAll(c, "COUNT", "7")
		}
	}},
	{name: "keys-dbsize-randomkey", run: func(s *scen) {
		c := s.conn("c1", 2)
		var cold []string
		for i := 0; i < 30; i++ {
			k := fmt.Sprintf("key:%02d", i)
			switch i % 3 {
			case 0:
				c.do("SET", k, strconv.Itoa(i))
			case 1:
				c.do("HSET", k, "f", strconv.Itoa(i))
			default:
				c.do("SADD", k, strconv.Itoa(i))
			}
			if i%2 == 0 {
				cold = append(cold, k)
			}
		}
		c.do("SET", "other", "x")
		s.demote(0, cold...)
		s.noReload("KEYS, DBSIZE, RANDOMKEY", func() {
			c.do("DBSIZE")
			c.do("KEYS", "*")
			c.do("KEYS", "key:1*")
			all := map[string]bool{"other": true}
			for i := 0; i < 30; i++ {
				all[fmt.Sprintf("key:%02d", i)] = true
			}
			for i := 0; i < 20; i++ {
				r := c.c.Do("RANDOMKEY")
				if r.Type != '$' || !all[r.Str] {
					s.record("RANDOMKEY", "not one of the keys: "+r.String())
					return
				}
			}
			s.record("20 RANDOMKEYs", "each one of the keys")
		})
		c.do("SELECT", "1")
		c.do("RANDOMKEY") // empty database: nil
		c.do("DBSIZE")
	}},
	{name: "metadata-of-cold-keys", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SET", "m1", "v", "EX", "1000")
		c.do("SET", "m2", "v")
		c.do("HSET", "mh", "f", "v")
		c.do("RPUSH", "ml", "a")
		c.do("ZADD", "mz", "1", "a")
		c.do("SET", "m3", "v")
		s.demote(0, "m1", "m2", "mh", "ml", "mz", "m3")
		s.noReload("EXISTS, TYPE, TTL, EXPIRE, PERSIST, DEL, UNLINK, TOUCH", func() {
			c.do("EXISTS", "m1", "m2", "mh", "ml", "mz", "nokey", "m1")
			for _, k := range []string{"m1", "m2", "mh", "ml", "mz", "nokey"} {
				c.do("TYPE", k)
			}
			c.do("TTL", "m1")
			c.do("PTTL", "m2")
			c.do("EXPIRETIME", "mh")
			c.do("EXPIRE", "m2", "500")
			c.do("TTL", "m2")
			c.do("PEXPIRE", "mz", "700000", "NX")
			c.do("PEXPIRE", "mz", "800000", "NX")
			c.do("PTTL", "mz")
			c.do("PERSIST", "m1")
			c.do("TTL", "m1")
			c.do("PERSIST", "m1")
			c.do("EXPIRE", "mh", "100", "XX")
			c.do("TOUCH", "m1", "mh", "nokey")
			c.do("DEL", "m1", "nokey")
			c.do("UNLINK", "mh", "ml")
			c.do("EXISTS", "m1", "mh", "ml")
			c.do("TYPE", "ml")
			c.do("EXPIRE", "m3", "0") // deletes the key
			c.do("EXISTS", "m3")
			c.do("DBSIZE")
		})
		c.do("GET", "m2")
		c.do("TTL", "m2")
		c.do("ZSCORE", "mz", "a")
		c.do("PTTL", "mz")
		c.do("DBSIZE")
	}},
	{name: "flushdb-removes-cold-keys", run: func(s *scen) {
		c := s.conn("c1", 2)
		c.do("SET", "a", "1")
		c.do("HSET", "b", "f", "v")
		c.do("SET", "hot", "1")
		c.do("SELECT", "1")
		c.do("SET", "c", "3")
		s.demote(0, "a", "b")
		s.demote(1, "c")
		c.do("SELECT", "0")
		c.do("FLUSHDB")
		c.do("DBSIZE")
		c.do("KEYS", "*")
		c.do("GET", "a")
		c.do("EXISTS", "a", "b", "hot")
		c.do("TYPE", "b")
		c.do("SELECT", "1")
		c.do("DBSIZE")
		c.do("GET", "c")
		c.do("SET", "d", "4")
		s.demote(1, "d")
		c.do("FLUSHALL")
		c.do("DBSIZE")
		c.do("GET", "c")
		if n := s.coldKeys(); s.spill && n != 0 {
			s.t.Errorf("spillway: cold_keys %d after FLUSHALL", n)
		}
	}},
	{name: "swapdb-with-cold-keys", run: func(s *scen) {
		c0, c1 := s.conn("c0", 2), s.conn("c1", 2)
		c1.do("SELECT", "1")
		c0.do("SET", "x", "0")
		c0.do("HSET", "h0", "f", "0")
		c0.do("SET", "hot0", "0")
		c1.do("SET", "x", "1")
		c1.do("SET", "y", "1")
		s.demote(0, "x", "h0")
		s.demote(1, "x", "y")
		c0.do("SWAPDB", "0", "1")
		c0.do("GET", "x")
		c0.do("GET", "y")
		c0.do("EXISTS", "h0", "hot0")
		c0.do("DBSIZE")
		c1.do("GET", "x")
		c1.do("HGET", "h0", "f")
		c1.do("DBSIZE")
		c1.do("KEYS", "*")
		// Keys demoted after the swap, and a swap back.
		s.demote(1, "x", "hot0")
		c0.do("SWAPDB", "1", "0")
		c0.do("MGET", "x", "y", "hot0")
		c1.do("MGET", "x", "y", "hot0")
	}},
}

// pubsubScenario subscribes one client to channels and a pattern, publishes
// from another, and reads the frames (RESP3: push frames).
func pubsubScenario(s *scen, proto int) {
	sub, pub := s.conn("sub", proto), s.conn("pub", 2)
	pub.do("SET", "news.cold", "x")
	s.demote(0, "news.cold")
	sub.do("SUBSCRIBE", "ch1", "ch2") // the first confirmation
	sub.read()                        // the second
	sub.do("PSUBSCRIBE", "news.*")
	pub.do("PUBLISH", "ch1", "hello")
	sub.read()
	pub.do("PUBLISH", "news.cold", "hi")
	sub.read()
	pub.do("PUBLISH", "ch2", "bye")
	sub.read()
	pub.do("PUBLISH", "nobody", "x")
	pub.do("PUBSUB", "NUMSUB", "ch1", "ch2", "nobody")
	pub.do("PUBSUB", "NUMPAT")
	sub.do("PING")
	sub.do("UNSUBSCRIBE", "ch1")
	sub.do("UNSUBSCRIBE") // the rest: ch2
	sub.do("PUNSUBSCRIBE")
	pub.do("PUBLISH", "ch2", "unheard")
	if proto == 3 {
		sub.do("GET", "news.cold")
	}
	sub.do("PING")
}

// blockingScenario blocks a BLPOP with timeout 0 and serves it from another
// client.
func blockingScenario(s *scen, proto int) {
	c1, c2 := s.conn("c1", proto), s.conn("c2", 2)
	c2.do("SET", "unrelated", "x")
	s.demote(0, "unrelated")
	c1.send("BLPOP", "q1", "q2", "0")
	s.waitBlocked(1)
	c2.do("RPUSH", "q2", "a", "b")
	c1.read()
	c2.do("LRANGE", "q2", "0", "-1")
	c1.send("BRPOP", "q3", "0")
	s.waitBlocked(1)
	c2.do("LPUSH", "q3", "z")
	c1.read()
	c1.do("EXISTS", "q3", "unrelated")
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
