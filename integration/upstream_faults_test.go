package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// TestUpstreamFaults (helpers in upstream_tiering_test.go): the upstream
// killed under connected clients, and Spillway killed -9 during demotions.

// TestUpstreamFaults covers the failures of either process.
func TestUpstreamFaults(t *testing.T) {
	t.Run("UpstreamKilled", testUpstreamKilled)
	t.Run("SpillwayKill9", testSpillwayKill9DuringDemotion)
	t.Run("UnreachableAtStart", testUpstreamUnreachableAtStart)
	t.Run("Slow", testUpstreamSlow)
}

// testUpstreamKilled kills -9 the redis-server (AOF, fsync always) under
// connected clients: commands fail promptly with an "upstream" error,
// INFO tiering says upstream_status:down, and once the upstream is back on
// the same port commands work again and hot and cold keys read back.
func testUpstreamKilled(t *testing.T) {
	const n, demoted = 200, 100
	// liveness bounds a reply's wait: a hang fails, a slow answer does not.
	const liveness = 5 * time.Second
	t.Setenv("SPILLWAY_TEST_HOOKS", "1")
	up := harness.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	sp := utStartSpillway(t, up, "", 64*utMB)
	name := func(i int) string { return "fault:" + strconv.Itoa(i) }
	if err := utLoad(t, sp.Addr(), name, 0, n, 100, 100, 1); err != nil {
		t.Fatal(err)
	}
	c := utDial(t, sp.Addr(), liveness)
	args := []string{"DEBUG", "DEMOTE"}
	for i := 0; i < demoted; i++ {
		args = append(args, name(i))
	}
	if r := c.Do(args...); r.Type != ':' || r.Int != demoted {
		t.Fatalf("DEBUG DEMOTE of %d keys: %s", demoted, r.String())
	}
	gr := utGoRedis(t, sp.Addr(), liveness)
	ctx := context.Background()
	if err := gr.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// A client blocked upstream when it dies.
	bl := utDial(t, sp.Addr(), liveness)
	if err := bl.Send("BLPOP", "fault:queue", "0"); err != nil {
		t.Fatal(err)
	}
	if err := bl.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)

	up.Kill9()
	hotKey := name(n - 1)
	for _, tc := range []struct {
		name string
		do   func() (string, error)
	}{
		{"GET raw", func() (string, error) { return utReplyErr(c.Do("GET", hotKey)) }},
		{"SET raw", func() (string, error) { return utReplyErr(c.Do("SET", "fault:new", "x")) }},
		{"GET go-redis", func() (string, error) {
			err := gr.Get(ctx, hotKey).Err()
			if err == nil {
				return "", errors.New("no error")
			}
			return err.Error(), nil
		}},
		{"blocked BLPOP", func() (string, error) { return utReplyErr(bl.Read()) }},
	} {
		start := time.Now()
		msg, err := tc.do()
		t.Logf("%s with the upstream down: %q after %v", tc.name, msg, time.Since(start).Round(time.Millisecond))
		if err != nil {
			t.Errorf("%s with the upstream down: %v", tc.name, err)
		} else if !strings.Contains(msg, "upstream") {
			t.Errorf("%s with the upstream down: error %q does not mention the upstream", tc.name, msg)
		}
	}
	// A cold key is answered from the store or refused, never lost.
	for i := 0; i < 2; i++ {
		r := c.Do("GET", name(0))
		t.Logf("GET of cold key %s with the upstream down: %s", name(0), harness.Trunc(r.String(), 60))
		if r.Err != nil || !(r.Type == '$' && r.Str == utValue(0, 100) || r.IsError() && strings.Contains(r.Str, "upstream")) {
			t.Errorf("GET of cold key %s with the upstream down: %s", name(0), r.String())
		}
	}
	var status string
	for i := 0; i < 100; i++ {
		m, err := harness.Info(c, "tiering")
		if err != nil {
			status = err.Error()
		} else if status = m["upstream_status"]; status == "down" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if status != "down" {
		t.Errorf("INFO tiering with the upstream killed: upstream_status %q, want down", status)
	}
	if m, err := harness.Info(c, "tiering"); err != nil || m["upstream_last_error"] == "" ||
		m["upstream"] != up.Addr() || utInt(t, m, "upstream_down_seconds") < 0 {
		t.Errorf("INFO tiering with the upstream down: %v %v", m, err)
	}

	up.Restart()
	restarted := time.Now()
	var last harness.Reply
	back := false
	for i := 0; i < 300 && !back; i++ {
		last = c.Do("GET", hotKey)
		back = last.Err == nil && last.Type == '$' && last.Str == utValue(n-1, 100)
		if !back {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !back {
		t.Fatalf("GET %s 30 s after the upstream restarted: %s", hotKey, last.String())
	}
	t.Logf("commands work again %v after the upstream restarted", time.Since(restarted).Round(time.Millisecond))
	if err := gr.Set(ctx, "fault:after", "y", 0).Err(); err != nil {
		t.Errorf("go-redis SET after the upstream came back: %v", err)
	}
	if m, err := harness.Info(c, "tiering"); err != nil || m["upstream_status"] != "up" ||
		utInt(t, m, "upstream_reconnects") < 1 || utInt(t, m, "upstream_down_seconds") != 0 ||
		utInt(t, m, "upstream_downtime_total_ms") <= 0 {
		t.Errorf("INFO tiering after the upstream came back: %v %v", m, err)
	}
	if bad, first := utCheck(t, sp.Addr(), name, 0, n, 100, 100, 1); bad > 0 {
		t.Errorf("%d of %d keys (0..%d cold) did not read back: %s", bad, n, demoted-1, strings.Join(first, "; "))
	}
	if got := utDBSize(t, c); got != n+1 {
		t.Errorf("DBSIZE = %d, want %d", got, n+1)
	}
}

// utLogSinceStart returns s's log since its last (re)start.
func utLogSinceStart(t *testing.T, s *harness.Server) string {
	t.Helper()
	b, err := os.ReadFile(s.LogPath())
	if err != nil {
		t.Fatalf("read log: %v", err)
	}
	log := string(b)
	if i := strings.LastIndex(log, "=== harness: starting"); i >= 0 {
		log = log[i:]
	}
	return log
}

// utLogField returns "field=value" from the last line of log that contains
// msg, or "" when there is none.
func utLogField(log, msg, field string) string {
	lines := strings.Split(log, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if !strings.Contains(lines[i], msg) {
			continue
		}
		for _, f := range strings.Fields(lines[i]) {
			if strings.HasPrefix(f, field+"=") {
				return f
			}
		}
	}
	return ""
}

// utReplyErr returns the message of an error reply, or an error when the
// reply is not one.
func utReplyErr(r harness.Reply) (string, error) {
	if r.Err != nil {
		return "", fmt.Errorf("no reply: %w", r.Err)
	}
	if !r.IsError() {
		return "", fmt.Errorf("not an error: %s", r.String())
	}
	return r.Str, nil
}

// testSpillwayKill9DuringDemotion loads keys through Spillway with a small
// budget and kills -9 Spillway while demotions are under way, three times
// at different points; after each restart on the same directory every
// acknowledged key reads back, and DBSIZE counts each key once (keys caught
// between the two tiers are reconciled).
func testSpillwayKill9DuringDemotion(t *testing.T) {
	const (
		size    = 512
		batch   = 200
		perKill = 100_000 // at most this many keys per round
		budget  = 4 * utMB
	)
	// The demotions counter value at which each round kills Spillway.
	killAt := []int64{1, 2_000, 10_000}
	name := func(i int) string { return "crash:" + strconv.Itoa(i) }
	up := harness.StartRedis(t)
	dir := t.TempDir()
	sp := utStartSpillway(t, up, dir, budget)

	acked := map[int]bool{} // keys known to exist
	next := 0               // the next key number to write
	for round, at := range killAt {
		lo := next
		var mu sync.Mutex
		var pending []int // sent in the batch in flight, not acknowledged
		var written []int
		stop := make(chan struct{})
		loaded := make(chan error, 1)
		lc := utDial(t, sp.Addr(), 30*time.Second)
		go func() {
			for i := lo; i < lo+perKill; i += batch {
				select {
				case <-stop:
					loaded <- nil
					return
				default:
				}
				mu.Lock()
				pending = pending[:0]
				for j := i; j < i+batch; j++ {
					_ = lc.Send("SET", name(j), utValue(j, size))
					pending = append(pending, j)
				}
				mu.Unlock()
				for j := i; j < i+batch; j++ {
					r := lc.Read()
					if r.Err != nil {
						loaded <- r.Err
						return
					}
					if r.Type != '+' || r.Str != "OK" {
						loaded <- fmt.Errorf("SET %s: %s", name(j), r.String())
						return
					}
					mu.Lock()
					written = append(written, j)
					pending = pending[1:]
					mu.Unlock()
				}
			}
			loaded <- errors.New("every key written before the kill point")
		}()

		// Poll the demotions counter; kill when it reaches at.
		mc := utDial(t, sp.Addr(), 30*time.Second)
		var demotions int64
		var lerr error
		done := false
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
			d, err := utInfoInt(mc, "tiering", "demotions")
			if err != nil {
				t.Fatalf("round %d: INFO tiering: %v", round, err)
			}
			demotions = d
			if d >= at {
				break
			}
			select {
			case lerr = <-loaded:
				done = true
			case <-time.After(5 * time.Millisecond):
			}
			if done {
				break
			}
		}
		if done || demotions < at {
			close(stop)
			t.Fatalf("round %d: loader ended (%v) or time ran out with demotions at %d, before %d", round, lerr, demotions, at)
		}
		sp.Kill9()
		close(stop)
		select {
		case lerr = <-loaded:
		case <-time.After(60 * time.Second):
			t.Fatalf("round %d: loader still running a minute after the kill", round)
		}
		mu.Lock()
		inFlight := append([]int(nil), pending...)
		for _, j := range written {
			acked[j] = true
		}
		nWritten := len(written)
		mu.Unlock()
		next = lo + perKill // keys are never reused

		start := time.Now()
		sp.Restart()
		restart := time.Since(start)
		reconciled := utLogField(utLogSinceStart(t, sp), "tiers reconciled after an unclean shutdown", "cold_copies_dropped")
		c := utDial(t, sp.Addr(), 60*time.Second)
		ti := utTiering(t, c)
		t.Logf("round %d: killed at demotions=%d with %d keys acknowledged this round (%d in flight, loader: %v); restart took %v, reconciliation: %s; cold_keys=%s upstream DBSIZE=%d",
			round, demotions, nWritten, len(inFlight), lerr, restart.Round(time.Millisecond), reconciled,
			ti["cold_keys"], utDBSize(t, up.Conn(t)))
		if reconciled == "" {
			t.Errorf("round %d: no reconciliation logged at the restart after kill -9", round)
		}

		// Keys of the batch in flight may or may not exist; those that do
		// count, once.
		for _, j := range inFlight {
			r := c.Do("GET", name(j))
			switch {
			case r.Null:
			case r.Type == '$' && r.Str == utValue(j, size):
				acked[j] = true
			default:
				t.Errorf("round %d: GET %s (in flight at the kill): %s", round, name(j), r.String())
			}
		}
		want := int64(len(acked))
		// The demoter is busy again at once (the upstream is over budget):
		// DBSIZE must be exact meanwhile too.
		wrong, samples := 0, 50
		var wrongs []string
		for i := 0; i < samples; i++ {
			if got := utDBSize(t, c); got != want {
				if wrong++; len(wrongs) < 5 {
					wrongs = append(wrongs, fmt.Sprintf("sample %d: %+d", i, got-want))
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
		if wrong > 0 {
			t.Errorf("round %d: DBSIZE while the demoter runs after the restart was not %d in %d of %d samples (%s)",
				round, want, wrong, samples, strings.Join(wrongs, ", "))
		}
		utSettle(t, c, 30*time.Second)
		if got := utDBSize(t, c); got != want {
			t.Errorf("round %d: DBSIZE after the restart, demoter idle = %d, want %d (keys in both tiers count twice)", round, got, want)
		}
		keys := make([]int, 0, len(acked))
		for j := range acked {
			keys = append(keys, j)
		}
		if bad, first := utCheckKeys(t, sp.Addr(), name, keys, size, 1000, 2); bad > 0 {
			t.Errorf("round %d: %d of %d acknowledged keys did not read back: %s", round, bad, len(acked), strings.Join(first, "; "))
		}
		utSettle(t, c, 30*time.Second)
		if got := utDBSize(t, c); got != want {
			t.Errorf("round %d: DBSIZE after reading every key = %d, want %d", round, got, want)
		}
	}
}

// testUpstreamUnreachableAtStart starts Spillway in front of a port nothing
// listens on: it starts anyway (an operator's Spillway comes up before or
// without its Redis), answers commands at once with a clear upstream
// error, INFO says the link is down and why, and once a redis-server
// appears on that port the same client connection is served normally.
func testUpstreamUnreachableAtStart(t *testing.T) {
	port := harness.FreePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	// A password, so that the harness's readiness PING is answered
	// (NOAUTH) by Spillway itself: PING is the upstream's to answer.
	sp := harness.StartSpillway(t, "", "--upstream", "redis://"+addr, "--requirepass", "pw")
	c := utDial(t, sp.Addr(), 5*time.Second)
	if r := c.Do("AUTH", "pw"); r.Str != "OK" {
		t.Fatalf("AUTH: %s", r.String())
	}
	for _, args := range [][]string{{"GET", "k"}, {"SET", "k", "v"}, {"BLPOP", "q", "0"}, {"PING"}} {
		r := c.Do(args...)
		if r.Err != nil || !r.IsError() || !strings.Contains(r.Str, "upstream unavailable") {
			t.Errorf("%v with no upstream: %s %v, want an upstream error at once", args, r.String(), r.Err)
		}
	}
	m, err := harness.Info(c, "tiering")
	if err != nil || m["upstream_status"] != "down" || m["upstream"] != addr ||
		!strings.Contains(m["upstream_last_error"], "refused") || utInt(t, m, "upstream_reconnects") != 0 {
		t.Errorf("INFO tiering with no upstream: %v %v", m, err)
	}
	if ds, tot := utInt(t, m, "upstream_down_seconds"), utInt(t, m, "upstream_downtime_total_ms"); tot < ds*1000 {
		t.Errorf("INFO tiering: upstream_downtime_total_ms %d < upstream_down_seconds %d", tot, ds)
	}

	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(harness.RedisMissing)
	}
	harness.StartProc(t, "redis", addr, bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	var last harness.Reply
	ok := false
	for i := 0; i < 300 && !ok; i++ { // the reconnect loop backs off up to 5 s
		last = c.Do("SET", "k", "v")
		if ok = last.Err == nil && last.Str == "OK"; !ok {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if !ok {
		t.Fatalf("SET 30 s after the upstream appeared: %s", last.String())
	}
	if r := c.Do("GET", "k"); r.Str != "v" {
		t.Errorf("GET k = %s", r.String())
	}
	if r := c.Do("RPUSH", "q", "a"); r.Int != 1 {
		t.Errorf("RPUSH = %s", r.String())
	}
	if r := c.Do("BLPOP", "q", "1"); len(r.Elems) != 2 || r.Elems[1].Str != "a" {
		t.Errorf("BLPOP (a dedicated connection) = %s", r.String())
	}
	m, err = harness.Info(c, "tiering")
	if err != nil || m["upstream_status"] != "up" || utInt(t, m, "upstream_reconnects") != 1 ||
		utInt(t, m, "upstream_down_seconds") != 0 || utInt(t, m, "upstream_downtime_total_ms") <= 0 {
		t.Errorf("INFO tiering once the upstream is up: %v %v", m, err)
	}
}

// testUpstreamSlow puts the upstream to sleep (DEBUG SLEEP 2, sent
// through Spillway): clients' commands wait, as they would on Redis, and
// queue behind it, while Spillway keeps accepting connections and answers
// what it answers itself; once the upstream wakes every command is
// answered and nothing is lost.
func testUpstreamSlow(t *testing.T) {
	up := harness.StartRedis(t, "--enable-debug-command", "yes")
	sp := utStartSpillway(t, up, "", 64*utMB)
	var seq atomic.Int64
	type result struct {
		at    int64 // the order in which the reply arrived
		reply harness.Reply
	}
	sleeper := utDial(t, sp.Addr(), 30*time.Second)
	if r := sleeper.Do("PING"); r.Str != "PONG" {
		t.Fatalf("PING: %s", r.String())
	}
	slept := make(chan result, 1)
	if err := sleeper.Send("DEBUG", "SLEEP", "2"); err != nil {
		t.Fatal(err)
	}
	if err := sleeper.Flush(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r := sleeper.Read()
		slept <- result{seq.Add(1), r}
	}()
	// Wait until the upstream is asleep: a PING of its own is then
	// unanswered.
	probe := utDial(t, up.Addr(), 30*time.Second)
	asleep := false
	for i := 0; i < 100 && !asleep; i++ {
		probe.Timeout = 200 * time.Millisecond
		if r := probe.Do("PING"); r.Err != nil {
			asleep = true
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !asleep {
		t.Fatal("the upstream never seemed asleep")
	}
	const n = 100
	writer := utDial(t, sp.Addr(), 30*time.Second)
	for i := 0; i < n; i++ {
		if err := writer.Send("SET", "slow:"+strconv.Itoa(i), strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := writer.Flush(); err != nil {
		t.Fatal(err)
	}
	written := make(chan result, 1)
	go func() {
		var first harness.Reply
		at := int64(0)
		for i := 0; i < n; i++ {
			r := writer.Read()
			if i == 0 {
				first, at = r, seq.Add(1)
			}
			if r.Err != nil || r.Str != "OK" {
				written <- result{at, r}
				return
			}
		}
		written <- result{at, first}
	}()
	// A new client is accepted and answered by Spillway meanwhile.
	fresh := utDial(t, sp.Addr(), 30*time.Second)
	if r := fresh.Do("CLIENT", "ID"); r.Type != ':' {
		t.Fatalf("CLIENT ID during the upstream's sleep: %s", r.String())
	}
	answeredAt := seq.Add(1)
	s := <-slept
	w := <-written
	if s.reply.Str != "OK" || w.reply.Str != "OK" {
		t.Fatalf("after the sleep: DEBUG SLEEP %s, SETs %s", s.reply.String(), w.reply.String())
	}
	// (The two upstream replies are read by two goroutines woken at the
	// same moment: their order here says nothing.)
	if answeredAt > s.at || answeredAt > w.at {
		t.Errorf("reply order: CLIENT ID %d, DEBUG SLEEP %d, first SET %d; want Spillway's own answer before the sleeping upstream's",
			answeredAt, s.at, w.at)
	}
	for i := 0; i < n; i++ {
		if r := fresh.Do("GET", "slow:"+strconv.Itoa(i)); r.Str != strconv.Itoa(i) {
			t.Fatalf("GET slow:%d = %s", i, r.String())
		}
	}
}
