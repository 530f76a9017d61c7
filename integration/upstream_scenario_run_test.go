package integration

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// Hand-written cross-client scenarios of upstream mode (see
// upstream_diff_test.go): how a scenario drives its connections, records a
// transcript and demotes keys, the comparison of transcripts, and
// TestUpstreamScenarios. The scenarios are in upstream_scenarios_test.go.

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
