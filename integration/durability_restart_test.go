package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// Durability across restarts (see durability_test.go for kill -9 and
// graceful stops under load): expiry times stay absolute, appendfsync
// everysec loses at most about a second, and the 300k-key headline run.

// roundKeys is how many keys a writeRound leaves: 2000 values of 700 bytes
// (every tenth with a TTL), a counter, and one of 1000 keys not deleted.
const roundKeys = 2000 + 1 + 1

// writeRound writes round r's keys: SETs (every tenth with EX), a counter
// INCRed 500 times, and keys created then deleted but one.
func writeRound(t *testing.T, c *harness.Conn, r int) {
	t.Helper()
	p := fmt.Sprintf("r%d:", r)
	loadValues(t, c, p+"v:", 2000, 700, 250)
	pipe(t, c, 200, 100, func(i int) []string {
		return []string{"EXPIRE", p + "v:" + strconv.Itoa(i*10), "3600"}
	}, wantInt(1))
	pipe(t, c, 500, 100, func(int) []string { return []string{"INCR", p + "ctr"} },
		func(i int, r harness.Reply) error { return wantInt(int64(i+1))(0, r) })
	loadValues(t, c, p+"d:", 1000, 100, 250)
	pipe(t, c, 999, 250, func(i int) []string { return []string{"DEL", p + "d:" + strconv.Itoa(i)} }, wantInt(1))
}

// checkRound checks the keys writeRound(r) left.
func checkRound(t *testing.T, c *harness.Conn, r int) {
	t.Helper()
	p := fmt.Sprintf("r%d:", r)
	checkValues(t, c, p+"v:", 2000, 700, 500)
	pipe(t, c, 2000, 500, func(i int) []string { return []string{"PTTL", p + "v:" + strconv.Itoa(i)} },
		func(i int, r harness.Reply) error {
			if ok := r.Type == ':' && (i%10 == 0 && r.Int > 0 && r.Int <= 3600_000 || i%10 != 0 && r.Int == -1); !ok {
				return fmt.Errorf("PTTL %sv:%d = %s", p, i, r.String())
			}
			return nil
		})
	if got := c.Do("GET", p+"ctr"); got.Str != "500" {
		t.Errorf("GET %sctr = %s, want 500", p, got.String())
	}
	pipe(t, c, 1000, 500, func(i int) []string { return []string{"EXISTS", p + "d:" + strconv.Itoa(i)} },
		func(i int, r harness.Reply) error {
			want := int64(0)
			if i == 999 {
				want = 1 // the one key not deleted
			}
			return wantInt(want)(i, r)
		})
}

// wantInt returns a pipe check expecting integer reply n.
func wantInt(n int64) func(int, harness.Reply) error {
	return func(i int, r harness.Reply) error {
		if r.Type != ':' || r.Int != n {
			return fmt.Errorf("reply %d = %s, want %d", i, r.String(), n)
		}
		return nil
	}
}

// TestTTLSurvivesRestart sets expiry times every way Redis allows, on keys
// then made cold, and checks that a restart keeps the absolute expiry time
// to the millisecond, that keys whose time passes while the server is down
// are gone (removed by the sweeper, so DBSIZE agrees), and that expired
// cold keys disappear without being read.
func TestTTLSurvivesRestart(t *testing.T) {
	s := harness.StartSpillway(t, "", "--maxmemory", "4mb", "--loglevel", "warning")
	c := s.Conn(t)
	now := time.Now()
	sec, ms := now.Unix(), now.UnixMilli()
	v := tierValue("ttl:", 0, 300)
	setups := [][]string{
		{"SET", "ttl:ex", v, "EX", "1000"},
		{"SET", "ttl:px", v, "PX", "1000000"},
		{"SET", "ttl:exat", v, "EXAT", strconv.FormatInt(sec+2000, 10)},
		{"SET", "ttl:pxat", v, "PXAT", strconv.FormatInt(ms+3_000_123, 10)},
		{"SET", "ttl:pexpire", v}, {"PEXPIRE", "ttl:pexpire", "500000"},
		{"SET", "ttl:pexpireat", v}, {"PEXPIREAT", "ttl:pexpireat", strconv.FormatInt(ms+4_000_321, 10)},
		{"SETEX", "ttl:setex", "700", v},
		{"PSETEX", "ttl:psetex", "800000", v},
		{"SET", "ttl:getex", v}, {"GETEX", "ttl:getex", "PX", "900000"},
		{"SET", "ttl:none", v},
	}
	for _, a := range setups {
		if r := c.Do(a...); r.IsError() || r.Null {
			t.Fatalf("%v: %s", a[:2], r.String())
		}
	}
	// Keys expiring soon, after the server is stopped: most made cold by
	// the filler below, some hot.
	const shortCold, shortHot = 200, 50
	shortSet := time.Now() // every short key expires by shortSet + 4 s
	pipe(t, c, shortCold, 100, func(i int) []string { return []string{"SET", "short:cold:" + strconv.Itoa(i), v, "PX", "4000"} }, wantOK)
	nfill := fillPastBudget(t, c, "ttlfill:")
	pipe(t, c, shortHot, 50, func(i int) []string { return []string{"SET", "short:hot:" + strconv.Itoa(i), "x", "EX", "1"} }, wantOK)
	longKeys := []string{"ttl:ex", "ttl:px", "ttl:exat", "ttl:pxat", "ttl:pexpire", "ttl:pexpireat", "ttl:setex", "ttl:psetex", "ttl:getex"}
	exact := map[string]int64{"ttl:exat": (sec + 2000) * 1000, "ttl:pxat": ms + 3_000_123, "ttl:pexpireat": ms + 4_000_321}
	before := make(map[string][2]int64)
	for _, k := range longKeys {
		at, ttl := c.Do("PEXPIRETIME", k), c.Do("PTTL", k)
		if at.Type != ':' || at.Int <= ms || ttl.Type != ':' || ttl.Int <= 0 {
			t.Fatalf("%s: PEXPIRETIME %s, PTTL %s", k, at.String(), ttl.String())
		}
		if want, ok := exact[k]; ok && at.Int != want {
			t.Errorf("PEXPIRETIME %s = %d, want %d", k, at.Int, want)
		}
		before[k] = [2]int64{at.Int, ttl.Int}
	}
	wantKeys := int64(len(longKeys) + 1 + nfill) // long TTLs, ttl:none, filler

	if got := dbsize(t, c); got != wantKeys+shortCold+shortHot {
		t.Fatalf("DBSIZE = %d before the stop, want %d: short keys expired too early (slow machine?)", got, wantKeys+shortCold+shortHot)
	}
	s.Term()
	time.Sleep(time.Until(shortSet.Add(4200 * time.Millisecond)))
	s.Restart()
	c = s.Conn(t)
	// The sweeper must remove the expired keys without anyone reading them.
	deadline := time.Now().Add(5 * time.Second)
	n := dbsize(t, c)
	for n != wantKeys && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		n = dbsize(t, c)
	}
	if n != wantKeys {
		t.Errorf("DBSIZE = %d 5 s after restart, want %d (expired keys not swept)", n, wantKeys)
	}
	if got := tierInfo(t, c).get(t, "expired_cold_keys"); got < shortCold+shortHot {
		t.Errorf("expired_cold_keys = %d after restart, want >= %d (every key is cold after a restart)", got, shortCold+shortHot)
	}
	ks, err := harness.Info(c, "keyspace")
	if err != nil {
		t.Fatal(err)
	}
	if db0 := ks["db0"]; !strings.HasPrefix(db0, fmt.Sprintf("keys=%d,expires=%d,", wantKeys, len(longKeys))) {
		t.Errorf("INFO keyspace db0:%s, want keys=%d,expires=%d", db0, wantKeys, len(longKeys))
	}
	for _, k := range []string{"short:cold:0", "short:cold:199", "short:hot:0", "short:hot:49"} {
		if r := c.Do("GET", k); !r.Null {
			t.Errorf("GET %s after its expiry = %s", k, r.String())
		}
	}
	for _, k := range longKeys {
		at, ttl := c.Do("PEXPIRETIME", k), c.Do("PTTL", k)
		if at.Int != before[k][0] {
			t.Errorf("PEXPIRETIME %s = %s after restart, was %d", k, at.String(), before[k][0])
		}
		if ttl.Type != ':' || ttl.Int <= 0 || ttl.Int >= before[k][1] || ttl.Int < before[k][1]-60_000 {
			t.Errorf("PTTL %s = %s after restart, was %d before it", k, ttl.String(), before[k][1])
		}
		if r := c.Do("GET", k); r.Str != v {
			t.Errorf("GET %s = %s", k, r.String())
		}
	}
	if r := c.Do("PTTL", "ttl:none"); r.Int != -1 {
		t.Errorf("PTTL ttl:none = %s", r.String())
	}

	// Keys expiring while cold and unread are swept: expired_cold_keys
	// grows by their number and DBSIZE drops. Keys whose expiry was
	// removed or moved later (stale entries in the expiry index) stay.
	const sweep, moved = 500, 100
	base := tierInfo(t, c).get(t, "expired_cold_keys")
	pipe(t, c, sweep, 250, func(i int) []string { return []string{"SET", "sweep:" + strconv.Itoa(i), v, "PX", "4000"} }, wantOK)
	pipe(t, c, 2*moved, 100, func(i int) []string { return []string{"SET", "moved:" + strconv.Itoa(i), v, "PX", "3000"} }, wantOK)
	pipe(t, c, 2*moved, 100, func(i int) []string {
		if i < moved {
			return []string{"SET", "moved:" + strconv.Itoa(i), v} // drops the TTL
		}
		return []string{"PEXPIRE", "moved:" + strconv.Itoa(i), "1000000"}
	}, func(i int, r harness.Reply) error {
		if (i < moved && r.Str != "OK") || (i >= moved && r.Int != 1) {
			return fmt.Errorf("moved:%d: %s", i, r.String())
		}
		return nil
	})
	wantKeys += 2 * moved
	nfill2 := int64(fillPastBudget(t, c, "ttlfill2:")) // pushes the sweep: keys out of the hot tier
	if got := dbsize(t, c); got != wantKeys+sweep+nfill2 {
		t.Fatalf("DBSIZE = %d, want %d", got, wantKeys+sweep+nfill2)
	}
	deadline = time.Now().Add(9 * time.Second)
	for dbsize(t, c) != wantKeys+nfill2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := dbsize(t, c); got != wantKeys+nfill2 {
		t.Errorf("DBSIZE = %d after the sweep: keys were set to expire, want %d", got, wantKeys+nfill2)
	}
	if d := tierInfo(t, c).get(t, "expired_cold_keys") - base; d != sweep {
		t.Errorf("expired_cold_keys grew by %d, want %d", d, sweep)
	}
	pipe(t, c, 2*moved, 100, func(i int) []string { return []string{"PTTL", "moved:" + strconv.Itoa(i)} },
		func(i int, r harness.Reply) error {
			if (i < moved && r.Int != -1) || (i >= moved && (r.Int <= 0 || r.Int > 1000000)) {
				return fmt.Errorf("PTTL moved:%d = %s after its first expiry time passed", i, r.String())
			}
			return nil
		})
}

// wantOK is a pipe check expecting +OK.
func wantOK(i int, r harness.Reply) error {
	if r.Type != '+' || r.Str != "OK" {
		return fmt.Errorf("reply %d = %s, want OK", i, r.String())
	}
	return nil
}

// TestEverysecLosesAtMostAboutOneSecond writes on one connection under
// appendfsync everysec and kills the server: what survives must be a prefix
// of the writes (the log is ordered) that holds every write acknowledged
// more than 2 s before the kill. The margin over Redis's one second keeps
// the test reliable on a loaded machine.
func TestEverysecLosesAtMostAboutOneSecond(t *testing.T) {
	s := harness.StartSpillway(t, "", "--appendfsync", "everysec", "--maxmemory", "8mb", "--loglevel", "warning")
	c, err := harness.Dial(s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var ackAt []time.Time
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 200_000; i++ {
			r := c.Do("SET", "es:"+strconv.Itoa(i), tierValue("es:", i, 200))
			if r.Err != nil || r.Str != "OK" {
				return
			}
			mu.Lock()
			ackAt = append(ackAt, time.Now())
			mu.Unlock()
		}
	}()
	time.Sleep(3 * time.Second)
	killed := time.Now()
	s.Kill9()
	<-done
	mu.Lock()
	acked := len(ackAt)
	mu.Unlock()
	s.Restart()
	c2 := s.Conn(t)
	c2.Timeout = 30 * time.Second
	present := make([]bool, acked+1)
	pipe(t, c2, acked+1, 1000, func(i int) []string { return []string{"EXISTS", "es:" + strconv.Itoa(i)} },
		func(i int, r harness.Reply) error { present[i] = r.Int == 1; return nil })
	kept := 0
	for kept < len(present) && present[kept] {
		kept++
	}
	for i := kept; i < len(present); i++ {
		if present[i] {
			t.Errorf("es:%d survived but es:%d did not: not a prefix", i, kept)
			break
		}
	}
	if kept < acked {
		lostSince := killed.Sub(ackAt[kept])
		t.Logf("acknowledged %d, kept %d; first lost write acknowledged %v before the kill", acked, kept, lostSince)
		if lostSince > 2*time.Second {
			t.Errorf("lost writes acknowledged up to %v before the kill (everysec allows about 1 s)", lostSince)
		}
	} else {
		t.Logf("acknowledged %d, kept all", acked)
	}
}

// TestLongHeadline300kKeys is the headline check, run only with
// SPILLWAY_LONG=1: 300,000 keys of 1 KB loaded with redis-cli --pipe into a
// 32 MB budget under appendfsync always keep RSS under 200 MB, all read
// back, survive SIGTERM, and 1,000 more survive kill -9.
func TestLongHeadline300kKeys(t *testing.T) {
	if os.Getenv("SPILLWAY_LONG") != "1" {
		t.Skip("set SPILLWAY_LONG=1 to run")
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not found on PATH")
	}
	const n, size, rssBound = 300_000, 1024, 200 << 20
	file := filepath.Join(t.TempDir(), "load.resp")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	for i := 0; i < n; i++ {
		buf = append(buf, harness.EncodeCommand([]byte("SET"), []byte("hl:"+strconv.Itoa(i)), []byte(tierValue("hl:", i, size)))...)
		if len(buf) > 1<<20 || i == n-1 {
			if _, err := f.Write(buf); err != nil {
				t.Fatal(err)
			}
			buf = buf[:0]
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	s := harness.StartSpillway(t, "", "--maxmemory", "32mb", "--appendfsync", "always", "--loglevel", "warning")
	rss := harness.SampleRSS(s.Pid(), 200*time.Millisecond)
	start := time.Now()
	in, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cli, "-h", "127.0.0.1", "-p", strconv.Itoa(s.Port()), "--pipe")
	cmd.Stdin = in
	out, err := cmd.CombinedOutput()
	in.Close()
	loadTime := time.Since(start)
	loadPeak, _ := rss.Peak()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("errors: 0, replies: %d", n)) {
		t.Fatalf("redis-cli --pipe: %v\n%s", err, out)
	}
	c := s.Conn(t)
	c.Timeout = 60 * time.Second
	checkValues(t, c, "hl:", n, size, 1000)
	peak, samples, err := rss.Stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("redis-cli --pipe loaded %d keys of %d bytes in %v (%.0f keys/s); peak RSS %.1f MB during the load, %.1f MB including the read-back (%d samples)",
		n, size, loadTime.Round(time.Millisecond), float64(n)/loadTime.Seconds(), float64(loadPeak)/(1<<20), float64(peak)/(1<<20), samples)
	if peak > rssBound {
		t.Errorf("peak RSS %.1f MB > %d MB", float64(peak)/(1<<20), rssBound>>20)
	}
	ti := tierInfo(t, c)
	t.Logf("INFO tiering: hot_keys %d cold_keys %d hot_bytes %d hot_budget %d demotions %d cold_bytes_on_disk %d",
		ti.get(t, "hot_keys"), ti.get(t, "cold_keys"), ti.get(t, "hot_bytes"), ti.get(t, "hot_budget"),
		ti.get(t, "demotions"), ti.get(t, "cold_bytes_on_disk"))

	start = time.Now()
	s.Restart() // SIGTERM
	t.Logf("SIGTERM restart took %v", time.Since(start).Round(time.Millisecond))
	c = s.Conn(t)
	c.Timeout = 60 * time.Second
	if got := dbsize(t, c); got != n {
		t.Errorf("DBSIZE after SIGTERM restart = %d, want %d", got, n)
	}
	checkValues(t, c, "hl:", n, size, 1000)

	loadValues(t, c, "hl2:", 1000, size, 100)
	s.Kill9()
	start = time.Now()
	s.Restart()
	t.Logf("restart after kill -9 took %v", time.Since(start).Round(time.Millisecond))
	c = s.Conn(t)
	c.Timeout = 60 * time.Second
	if got := dbsize(t, c); got != n+1000 {
		t.Errorf("DBSIZE after kill -9 restart = %d, want %d", got, n+1000)
	}
	checkValues(t, c, "hl:", n, size, 1000)
	checkValues(t, c, "hl2:", 1000, size, 1000)
}

// TestKill9KeyCountInTheBackground: after kill -9, a store of more keys
// than the start counts before serving (65,536) is counted in the
// background; commands are served meanwhile, the writes made while it
// runs are counted on top of it, and DBSIZE and INFO keyspace are exact.
func TestKill9KeyCountInTheBackground(t *testing.T) {
	const n, expiring = 100_000, 1000
	s := harness.StartSpillway(t, "", "--maxmemory", "16mb")
	c := s.Conn(t)
	c.Timeout = time.Minute
	loadValues(t, c, "kc:", n, 8, 10_000)
	pipe(t, c, expiring, 500, func(i int) []string { return []string{"EXPIRE", "kc:" + strconv.Itoa(i), "3600"} },
		func(i int, r harness.Reply) error {
			if r.Type != ':' || r.Int != 1 {
				return fmt.Errorf("EXPIRE kc:%d = %s", i, r.String())
			}
			return nil
		})
	time.Sleep(100 * time.Millisecond) // the log writer's last gathering is written (a kill -9 of the process loses only that)
	s.Kill9()
	s.Restart()
	c = s.Conn(t)
	c.Timeout = time.Minute
	// At once: reads, 10 new keys, 5 deletions (of keys with an expiry).
	checkValues(t, c, "kc:", 100, 8, 100)
	for i := range 10 {
		if r := c.Do("SET", "kc:new:"+strconv.Itoa(i), "v"); r.Str != "OK" {
			t.Fatalf("SET after the restart = %s", r.String())
		}
	}
	if r := c.Do("DEL", "kc:0", "kc:1", "kc:2", "kc:3", "kc:4"); r.Int != 5 {
		t.Fatalf("DEL after the restart = %s", r.String())
	}
	if got, want := dbsize(t, c), int64(n+10-5); got != want {
		t.Errorf("DBSIZE after kill -9 and writes = %d, want %d", got, want)
	}
	info := c.Do("INFO", "keyspace").Str
	if want := fmt.Sprintf("db0:keys=%d,expires=%d,", n+10-5, expiring-5); !strings.Contains(info, want) {
		t.Errorf("INFO keyspace = %q, want %q", info, want)
	}
	log, err := os.ReadFile(s.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	last := string(log[strings.LastIndex(string(log), "=== harness: starting"):])
	if !strings.Contains(last, "counting the keys on disk in the background") {
		t.Errorf("the restart did not count in the background; its log:\n%s", harness.Trunc(last, 4<<10))
	}
}
