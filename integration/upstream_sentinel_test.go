package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// Upstream mode with the upstream given through Redis Sentinel: one
// master, one replica, three real redis-sentinel processes, Spillway in
// front with a small budget so that keys are demoted, a writer under
// load, and the master killed -9. Helpers are prefixed st.

const stMaster = "spillmaster"

// stSetup is a monitored master with its replica and sentinels.
type stSetup struct {
	master, replica *harness.Server
	sentinels       []string // host:port
}

// stStart starts the master, its replica and three sentinels (quorum 2,
// down-after-milliseconds 1000), and waits until every sentinel knows the
// replica and the other two sentinels, so that a failover can be
// authorized.
func stStart(t *testing.T) *stSetup {
	t.Helper()
	bin, err := exec.LookPath("redis-sentinel")
	if err != nil {
		t.Fatal("redis-sentinel not found on PATH: run scripts/ensure-redis.sh (apt-get install redis-sentinel)")
	}
	s := &stSetup{master: harness.StartRedis(t)}
	s.replica = harness.StartRedis(t, "--replicaof", "127.0.0.1", strconv.Itoa(s.master.Port()))
	rc := utDial(t, s.replica.Addr(), 5*time.Second)
	stWait(t, 30*time.Second, "the replica's link to the master", func() bool {
		m, err := harness.Info(rc, "replication")
		return err == nil && m["master_link_status"] == "up"
	})
	for i := 0; i < 3; i++ {
		port := harness.FreePort(t)
		addr := "127.0.0.1:" + strconv.Itoa(port)
		conf := filepath.Join(t.TempDir(), "sentinel.conf")
		body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndaemonize no\nlogfile \"\"\n"+
			"sentinel monitor %s 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds %[2]s 1000\n"+
			"sentinel failover-timeout %[2]s 10000\n", port, stMaster, s.master.Port())
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		harness.StartProc(t, "sentinel"+strconv.Itoa(i), addr, bin, conf)
		s.sentinels = append(s.sentinels, addr)
	}
	for _, addr := range s.sentinels {
		c := utDial(t, addr, 5*time.Second)
		stWait(t, 60*time.Second, "sentinel "+addr+" to know the replica and the other sentinels", func() bool {
			r := c.Do("SENTINEL", "MASTER", stMaster)
			if r.Type != '*' {
				return false
			}
			f := map[string]string{}
			for i := 0; i+1 < len(r.Elems); i += 2 {
				f[r.Elems[i].Str] = r.Elems[i+1].Str
			}
			return f["num-slaves"] == "1" && f["num-other-sentinels"] == "2"
		})
	}
	return s
}

// url is the sentinel:// upstream URL of the setup.
func (s *stSetup) url() string {
	return "sentinel://" + strings.Join(s.sentinels, ",") + "/" + stMaster
}

// stWait polls cond every 50 ms until it holds, failing the test after
// timeout.
func stWait(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stWriter writes st:i = utValue(i) through Spillway, one SET at a time,
// and records which were acknowledged. Errors are kept (they must be
// Spillway's clear upstream errors); a transport error (a hang past the
// timeout) fails the test.
type stWriter struct {
	addr  string
	acked []atomic.Bool
	next  atomic.Int64 // writes attempted
	okN   atomic.Int64 // writes acknowledged
	// firstOKAfter is the index of the first write acknowledged after
	// markFrom was set (-1: none yet).
	markFrom, firstOKAfter atomic.Int64
	errMu                  sync.Mutex
	errs                   map[string]int
	transport              error
	stop, done             chan struct{}
}

const stValueSize = 512

func stKey(i int) string { return "st:" + strconv.Itoa(i) }

func stStartWriter(t *testing.T, addr string, max int) *stWriter {
	w := &stWriter{addr: addr, acked: make([]atomic.Bool, max), errs: map[string]int{},
		stop: make(chan struct{}), done: make(chan struct{})}
	w.markFrom.Store(-1)
	w.firstOKAfter.Store(-1)
	c := utDial(t, addr, 5*time.Second)
	go func() {
		defer close(w.done)
		for i := 0; i < max; i++ {
			select {
			case <-w.stop:
				return
			default:
			}
			w.next.Store(int64(i + 1))
			r := c.Do("SET", stKey(i), utValue(i, stValueSize))
			if r.Err != nil {
				w.errMu.Lock()
				w.transport = fmt.Errorf("SET %s: %w", stKey(i), r.Err)
				w.errMu.Unlock()
				return
			}
			if r.Type == '+' && r.Str == "OK" {
				w.acked[i].Store(true)
				w.okN.Add(1)
				if m := w.markFrom.Load(); m >= 0 && int64(i) >= m {
					w.firstOKAfter.CompareAndSwap(-1, int64(i))
				}
				continue
			}
			w.errMu.Lock()
			w.errs[r.String()]++
			w.errMu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return w
}

// halt stops the writer and returns how many writes it attempted.
func (w *stWriter) halt(t *testing.T) int {
	close(w.stop)
	select {
	case <-w.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the writer did not stop")
	}
	return int(w.next.Load())
}

// TestUpstreamSentinelFailover fails the master over under a writer, by
// killing it -9 or with SENTINEL FAILOVER (the old master then lives on as
// a replica, answering -READONLY): Spillway follows the sentinels to the
// promoted replica by itself, writes succeed again, clients meanwhile get
// clear upstream errors (never a hang), every write the replica had
// acknowledged (WAIT's measure, taken from the replication offsets) reads
// back, and so does every key demoted before the failover.
func TestUpstreamSentinelFailover(t *testing.T) {
	t.Run("Kill9", func(t *testing.T) { testSentinelFailover(t, true) })
	t.Run("SentinelFailover", func(t *testing.T) { testSentinelFailover(t, false) })
}

func testSentinelFailover(t *testing.T, kill bool) {
	s := stStart(t)
	mc := utDial(t, s.master.Addr(), 5*time.Second)
	rc := utDial(t, s.replica.Addr(), 5*time.Second)
	base, err := utInfoInt(mc, "memory", "used_memory")
	if err != nil {
		t.Fatal(err)
	}
	// Room for about 1,000 of the writer's keys: the rest are demoted.
	budget := base + 1*utMB
	sp := harness.StartSpillway(t, "", "--upstream", s.url(), "--maxmemory", strconv.FormatInt(budget, 10))
	c := utDial(t, sp.Addr(), 5*time.Second)
	info := func() map[string]string {
		m, err := harness.Info(c, "tiering")
		if err != nil {
			t.Fatalf("INFO tiering: %v", err)
		}
		return m
	}
	if m := info(); m["upstream"] != s.master.Addr() || m["upstream_sentinel_master"] != stMaster ||
		m["upstream_status"] != "up" || m["upstream_failovers"] != "0" {
		t.Fatalf("INFO tiering before the failover: %v", m)
	}

	// A client pinned to a connection of its own (blocked) when the
	// master goes: it gets an error or its connection closed, never a hang.
	bl := utDial(t, sp.Addr(), 60*time.Second)
	if err := bl.Send("BLPOP", "st:queue", "0"); err != nil {
		t.Fatal(err)
	}
	if err := bl.Flush(); err != nil {
		t.Fatal(err)
	}

	const max = 100_000
	w := stStartWriter(t, sp.Addr(), max)
	defer func() {
		select {
		case <-w.stop:
		default:
			close(w.stop)
		}
		<-w.done
	}()
	// Load until keys are cold, measuring what the replica holds: the
	// writes acknowledged before the master's offset was read are on the
	// replica once its offset reaches it (what WAIT 1 counts).
	safe := 0
	probe := func() {
		n := int(w.okN.Load())
		off, err := utInfoInt(mc, "replication", "master_repl_offset")
		if err != nil {
			t.Fatal(err)
		}
		stWait(t, 10*time.Second, "the replica to reach the master's offset", func() bool {
			r, err := utInfoInt(rc, "replication", "master_repl_offset")
			return err == nil && r >= off
		})
		safe = n
	}
	stWait(t, 120*time.Second, "keys to be demoted under the writer's load", func() bool {
		if w.next.Load() >= max {
			t.Fatalf("the writer wrote %d keys and none was demoted", max)
		}
		m := info()
		cold, _ := strconv.Atoi(m["cold_keys"])
		return cold >= 200 && w.okN.Load() >= 2000
	})
	probe()
	// Which keys are cold: acknowledged, yet not on the master.
	n := int(w.okN.Load())
	var demoted []int
	for i := 0; i < n; i++ {
		if err := mc.Send("EXISTS", stKey(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := mc.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if r := mc.Read(); r.Type == ':' && r.Int == 0 && w.acked[i].Load() {
			demoted = append(demoted, i)
		}
	}
	if len(demoted) == 0 {
		t.Fatal("no acknowledged key was found demoted before the failover")
	}
	// Some keys demoted just before the failover whose UNLINK the replica
	// did not get: it still holds an older value. Simulated by writing one
	// on the replica itself (replication removed them already).
	stale := demoted[:min(20, len(demoted))]
	if r := rc.Do("CONFIG", "SET", "replica-read-only", "no"); r.Str != "OK" {
		t.Fatalf("CONFIG SET replica-read-only no on the replica: %s", r.String())
	}
	for _, i := range stale {
		if r := rc.Do("SET", stKey(i), "stale"); r.Str != "OK" {
			t.Fatalf("SET on the replica: %s", r.String())
		}
	}
	probe()
	killedAt := w.next.Load()
	w.markFrom.Store(killedAt)
	if kill {
		s.master.Kill9()
	} else if r := utDial(t, s.sentinels[0], 5*time.Second).Do("SENTINEL", "FAILOVER", stMaster); r.Str != "OK" {
		t.Fatalf("SENTINEL FAILOVER: %s", r.String())
	}
	// Writes acknowledged by the old master after the promotion are lost,
	// as they are for Redis's own clients; from movedAt on, every write
	// went to the new master.
	movedAt := int64(-1)

	// The blocked client: an error reply or a closed connection.
	if r := bl.Read(); r.Err == nil && !r.IsError() {
		t.Errorf("BLPOP blocked across the failover answered %s, want an error or a closed connection", r.String())
	}
	stWait(t, 90*time.Second, "a write acknowledged after the failover", func() bool {
		w.errMu.Lock()
		terr := w.transport
		w.errMu.Unlock()
		if terr != nil {
			t.Fatalf("writer: %v (a reply took over 5 s: a hang)", terr)
		}
		if movedAt < 0 && info()["upstream"] == s.replica.Addr() {
			movedAt = w.next.Load() + 1
		}
		return w.firstOKAfter.Load() >= 0 && movedAt >= 0
	})
	after := w.okN.Load()
	stWait(t, 30*time.Second, "200 more writes after the failover", func() bool { return w.okN.Load() >= after+200 })
	total := w.halt(t)
	if w.transport != nil {
		t.Fatalf("writer: %v", w.transport)
	}
	for msg, k := range w.errs {
		if !strings.Contains(msg, "upstream") {
			t.Errorf("%d writes got %s, want Spillway's upstream error", k, msg)
		}
	}
	t.Logf("writes: %d attempted, %d acknowledged, %d replicated before the kill (at write %d), %d demoted; errors during the switch: %v",
		total, w.okN.Load(), safe, killedAt, len(demoted), w.errs)

	m := info()
	if m["upstream"] != s.replica.Addr() || m["upstream_status"] != "up" || m["upstream_failovers"] != "1" {
		t.Errorf("INFO tiering after the failover: upstream=%s (replica %s) status=%s failovers=%s",
			m["upstream"], s.replica.Addr(), m["upstream_status"], m["upstream_failovers"])
	}
	r := utDial(t, sp.Addr(), 10*time.Second)
	appended := map[int]bool{}
	check := func(i int) (ok, missing bool, got string) {
		g := r.Do("GET", stKey(i))
		want := utValue(i, stValueSize)
		if appended[i] {
			want += "+"
		}
		if g.Type == '$' && g.Str == want {
			return true, false, ""
		}
		return false, g.Type == '_' || (g.Type == '$' && g.Null), g.String()
	}
	for _, i := range demoted {
		if ok, _, got := check(i); !ok {
			t.Fatalf("demoted key %s after the failover: %s", stKey(i), harness.Trunc(got, 80))
		}
	}
	// A write reloads the cold copy: the new master's older copy of a key
	// demoted just before the failover must not win.
	for _, i := range stale {
		if a := r.Do("APPEND", stKey(i), "+"); a.Type != ':' || a.Int != stValueSize+1 {
			t.Fatalf("APPEND to %s, demoted before the failover and held stale by the replica: %s", stKey(i), a.String())
		}
		appended[i] = true
	}
	lost := 0
	for i := 0; i < total; i++ {
		if !w.acked[i].Load() {
			continue
		}
		ok, missing, got := check(i)
		switch {
		case ok:
		case missing && i >= safe && (int64(i) < killedAt || !kill && int64(i) < movedAt):
			lost++ // acknowledged by the old master, never replicated
		default:
			t.Fatalf("acknowledged write %s (replicated: %v, after the failover: %v) reads %s",
				stKey(i), i < safe, int64(i) >= killedAt, harness.Trunc(got, 80))
		}
	}
	t.Logf("acknowledged writes lost (not replicated before the kill, or accepted by the old master after the promotion): %d", lost)
}
