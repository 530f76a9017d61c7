package integration

import (
	"strconv"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// Cross-client order in upstream mode: a command Spillway receives after
// another client's command must not reach the upstream before it when the
// upstream could tell the difference. Each test runs the same sequence on
// a redis-server alone and on upstream-mode Spillway in front of another
// one, many rounds each, and requires every round to give Redis's answer.

// upstreamOrderRounds is how many rounds each target runs
// (SPILLWAY_ORDER_ROUNDS changes it).
const upstreamOrderRounds = 200

// upstreamOrderBudget bounds each target's rounds in wall-clock time: the
// rounds left when it runs out are reported as not run, never as passed.
const upstreamOrderBudget = 90 * time.Second

// orderTarget is one server a cross-client order test runs on.
type orderTarget struct {
	name string
	srv  *harness.Server
}

// orderTargets starts a redis-server alone, and upstream-mode Spillway in
// front of another redis-server.
func orderTargets(t *testing.T) []orderTarget {
	t.Helper()
	up := harness.StartRedis(t)
	spw := harness.StartSpillway(t, "", "--upstream", "redis://"+up.Addr(), "--appendfsync", "no", "--loglevel", "warning")
	return []orderTarget{{"redis", harness.StartRedis(t)}, {"upstream", spw}}
}

// orderConn opens a connection on srv and selects db, as the suite's
// deferring clients do (its tests run in database 9; in upstream mode a
// client off the default database has a pinned connection of its own).
func orderConn(t *testing.T, srv *harness.Server, db int) *harness.Conn {
	t.Helper()
	c := srv.Conn(t)
	if db != 0 {
		if r := c.Do("SELECT", strconv.Itoa(db)); r.Str != "OK" {
			t.Fatalf("SELECT %d: %s", db, r.String())
		}
	}
	return c
}

// runOrderRounds runs round up to the configured number of times on each
// target and fails the test for every round whose answer was not Redis's.
func runOrderRounds(t *testing.T, db int, round func(t *testing.T, srv *harness.Server, db, i int) string) {
	rounds := envInt(t, "SPILLWAY_ORDER_ROUNDS", upstreamOrderRounds)
	for _, tg := range orderTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			deadline := time.Now().Add(upstreamOrderBudget)
			failed, ran := 0, 0
			var first string
			for i := 0; i < rounds && time.Now().Before(deadline); i++ {
				ran++
				if msg := round(t, tg.srv, db, i); msg != "" {
					if failed++; first == "" {
						first = "round " + strconv.Itoa(i) + ": " + msg
					}
				}
			}
			t.Logf("%s, db %d: %d of %d rounds failed", tg.name, db, failed, ran)
			if failed > 0 {
				t.Errorf("%d of %d rounds failed; first: %s", failed, ran, first)
			}
			if ran < rounds {
				t.Errorf("only %d of %d rounds ran within %v", ran, rounds, upstreamOrderBudget)
			}
		})
	}
}

// TestUpstreamOrderExecBeforeLaterWrite is the suite's "BRPOPLPUSH does not
// affect WATCH while still blocked" (unit/type/list): a client blocked in
// BRPOPLPUSH srclist dstlist; another WATCHes dstlist, queues a GET and
// sends EXEC without reading its reply; the main client then sends LPUSH
// srclist, which serves the blocked client and so touches dstlist. Redis
// runs the EXEC first (its bytes arrived first): the transaction runs.
// Database 9 pins every client in upstream mode (the suite's case); in
// database 0 the LPUSH goes on a shared upstream connection.
func TestUpstreamOrderExecBeforeLaterWrite(t *testing.T) {
	for _, db := range []int{9, 0} {
		t.Run("db"+strconv.Itoa(db), func(t *testing.T) {
			runOrderRounds(t, db, execBeforeWriteRound)
		})
	}
}

// execBeforeWriteRound is one round of TestUpstreamOrderExecBeforeLaterWrite;
// it returns what went wrong, or "".
func execBeforeWriteRound(t *testing.T, srv *harness.Server, db, _ int) string {
	r := orderConn(t, srv, db)
	defer r.Close()
	r.Do("DEL", "srclist{t}", "dstlist{t}", "somekey{t}")
	r.Do("SET", "somekey{t}", "somevalue")
	blocked := orderConn(t, srv, db)
	defer blocked.Close()
	watching := orderConn(t, srv, db)
	defer watching.Close()
	if err := blocked.Send("BRPOPLPUSH", "srclist{t}", "dstlist{t}", "0"); err != nil {
		t.Fatal(err)
	}
	if err := blocked.Flush(); err != nil {
		t.Fatal(err)
	}
	waitBlocked(t, r, 1)
	for _, cmd := range [][]string{{"WATCH", "dstlist{t}"}, {"MULTI"}, {"GET", "somekey{t}"}} {
		if got := watching.Do(cmd...); got.IsError() {
			t.Fatalf("%v: %s", cmd, got.String())
		}
	}
	if err := watching.Send("EXEC"); err != nil {
		t.Fatal(err)
	}
	if err := watching.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := r.Do("LPUSH", "srclist{t}", "element"); got.Int != 1 {
		t.Fatalf("LPUSH: %s", got.String())
	}
	got := watching.Read()
	if got.Type != '*' || len(got.Elems) != 1 || got.Elems[0].Str != "somevalue" {
		return "EXEC: " + got.String()
	}
	return ""
}

// TestUpstreamOrderBlockBeforeLaterPushes: a client of database 0 WATCHes
// a key (in upstream mode it is then pinned) and sends BLPOP list 0;
// without waiting for it to block, the main client (on a shared upstream
// connection) sends LPUSH list a and LPUSH list b in one write. Redis
// blocks the BLPOP first (its bytes arrived first), so the first LPUSH
// serves it "a" and "b" stays.
func TestUpstreamOrderBlockBeforeLaterPushes(t *testing.T) {
	runOrderRounds(t, 0, blockBeforePushesRound)
}

func blockBeforePushesRound(t *testing.T, srv *harness.Server, db, _ int) string {
	r := orderConn(t, srv, db)
	defer r.Close()
	r.Do("DEL", "blist{t}")
	blocked := orderConn(t, srv, db)
	defer blocked.Close()
	if got := blocked.Do("WATCH", "other{t}"); got.Str != "OK" {
		t.Fatalf("WATCH: %s", got.String())
	}
	for _, c := range []struct {
		conn *harness.Conn
		args []string
	}{{blocked, []string{"BLPOP", "blist{t}", "0"}}, {r, []string{"LPUSH", "blist{t}", "a"}}, {r, []string{"LPUSH", "blist{t}", "b"}}} {
		if err := c.conn.Send(c.args...); err != nil {
			t.Fatal(err)
		}
		if c.args[2] != "b" {
			if err := c.conn.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := r.Flush(); err != nil {
		t.Fatal(err)
	}
	r.Read()
	r.Read()
	got := blocked.Read()
	if got.Type != '*' || len(got.Elems) != 2 || got.Elems[1].Str != "a" {
		return "BLPOP: " + got.String()
	}
	if rest := r.Do("LRANGE", "blist{t}", "0", "-1"); len(rest.Elems) != 1 || rest.Elems[0].Str != "b" {
		return "LRANGE after: " + rest.String()
	}
	return ""
}
