package integration

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// End-to-end tests of the tiering: memory stays under the budget whatever
// the dataset size, promotion follows promote-min-hits, metadata commands
// never promote, and SCAN keeps Redis's guarantee while keys move between
// tiers. Shared helpers for these tests and durability_test.go are at the
// end of this file.

// manyKeysRSSBound is the RSS TestManyKeysSmallBudget allows with
// --maxmemory 16mb. Measured peak: 77-78 MB. Keeping the 100 MB of values
// in memory would need well over 150 MB, so the bound still catches a
// budget that is not enforced.
const manyKeysRSSBound = 120 << 20

// TestManyKeysSmallBudget loads 100 MB of 1 KB values into a server with a
// 16 MB budget: RSS stays bounded during the load, every value reads back,
// and the tiering counters are consistent.
func TestManyKeysSmallBudget(t *testing.T) {
	const n, size = 100_000, 1024
	s := harness.StartSpillway(t, "", "--maxmemory", "16mb", "--appendfsync", "no", "--loglevel", "warning")
	c := s.Conn(t)
	c.Timeout = 60 * time.Second

	rss := harness.SampleRSS(s.Pid(), 100*time.Millisecond)
	start := time.Now()
	loadValues(t, c, "big:", n, size, 1000)
	loadTime := time.Since(start)
	start = time.Now()
	checkValues(t, c, "big:", n, size, 1000)
	readTime := time.Since(start)
	peak, samples, err := rss.Stop()
	if err != nil {
		t.Fatalf("RSS sampling: %v", err)
	}
	t.Logf("loaded %d keys of %d bytes in %v, read back in %v; peak RSS %.1f MB over %d samples",
		n, size, loadTime.Round(time.Millisecond), readTime.Round(time.Millisecond), float64(peak)/(1<<20), samples)
	if samples < 3 {
		t.Errorf("only %d RSS samples: the load was too quick to measure", samples)
	}
	if peak > manyKeysRSSBound {
		t.Errorf("peak RSS %.1f MB > bound %.1f MB with --maxmemory 16mb", float64(peak)/(1<<20), float64(manyKeysRSSBound)/(1<<20))
	}

	ti := tierInfo(t, c)
	if got := ti.get(t, "demotions"); got <= 0 {
		t.Errorf("demotions = %d after loading 100 MB into a 16 MB budget", got)
	}
	if hb, budget := ti.get(t, "hot_bytes"), ti.get(t, "hot_budget"); hb > budget || budget <= 0 {
		t.Errorf("hot_bytes %d, hot_budget %d", hb, budget)
	}
	if got := ti.get(t, "maxmemory"); got != 16<<20 {
		t.Errorf("maxmemory = %d, want %d", got, 16<<20)
	}
	hot, cold, dbs := ti.get(t, "hot_keys"), ti.get(t, "cold_keys"), dbsize(t, c)
	if dbs != n || hot+cold != dbs {
		t.Errorf("DBSIZE %d (want %d), hot_keys %d + cold_keys %d = %d", dbs, n, hot, cold, hot+cold)
	}
	if hot <= 0 || cold <= 0 || cold < int64(n)/2 {
		t.Errorf("hot_keys %d, cold_keys %d: expected most of %d keys cold and some hot", hot, cold, n)
	}
}

// TestPromoteMinHits reads a cold key repeatedly and checks, through the
// INFO tiering counters, on which read it is promoted (or that it never is,
// when larger than cold-read-max-bytes), and that it is hot afterwards.
func TestPromoteMinHits(t *testing.T) {
	cases := []struct {
		name      string
		args      []string
		size      int
		promoteAt int // read that promotes; 0: never
		reads     int
	}{
		{"hits1", []string{"--promote-min-hits", "1"}, 1024, 1, 3},
		{"hits2", []string{"--promote-min-hits", "2"}, 1024, 2, 4},
		{"hits3", []string{"--promote-min-hits", "3"}, 1024, 3, 5},
		{"over-cold-read-max", []string{"--promote-min-hits", "1", "--cold-read-max-bytes", "512"}, 1024, 0, 4},
		// 4mb gives a 3 MB hot tier: 500 KB is over an eighth of it.
		{"over-eighth-of-budget", []string{"--promote-min-hits", "1"}, 500 << 10, 0, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--maxmemory", "4mb", "--loglevel", "warning"}, tc.args...)
			s := harness.StartSpillway(t, "", args...)
			c := s.Conn(t)
			// The first keys written are the least recently used, hence
			// demoted by the filler.
			size := tc.size
			loadValues(t, c, "p:", 2, size, 2)
			fillPastBudget(t, c, "pfill:")
			for _, i := range []int{0, 1} {
				key := "p:" + strconv.Itoa(i)
				before := tierInfo(t, c)
				for read := 1; read <= tc.reads; read++ {
					if r := c.Do("GET", key); r.Str != tierValue("p:", i, size) {
						t.Fatalf("GET %s (read %d) = %s", key, read, r.String())
					}
					after := tierInfo(t, c)
					dCold := after.get(t, "cold_reads") - before.get(t, "cold_reads")
					dProm := after.get(t, "promotions") - before.get(t, "promotions")
					wantCold, wantProm := int64(1), int64(0)
					switch {
					case tc.promoteAt == 0:
					case read == tc.promoteAt:
						wantCold, wantProm = 0, 1
					case read > tc.promoteAt:
						wantCold = 0 // hot: neither a cold read nor a promotion
					}
					if dCold != wantCold || dProm != wantProm {
						t.Errorf("%s read %d: cold_reads +%d promotions +%d, want +%d +%d",
							key, read, dCold, dProm, wantCold, wantProm)
					}
					before = after
				}
			}
			ti := tierInfo(t, c)
			if hb, b := ti.get(t, "hot_bytes"), ti.get(t, "hot_budget"); hb > b {
				t.Errorf("hot_bytes %d > hot_budget %d", hb, b)
			}
		})
	}
}

// TestMetadataCommandsDoNotPromote runs the metadata-only commands on cold
// keys of a server that promotes on the first read: their answers must be
// right and promotions must not move. A GET of each key afterwards must
// promote it, which proves the keys were cold.
func TestMetadataCommandsDoNotPromote(t *testing.T) {
	s := harness.StartSpillway(t, "", "--maxmemory", "4mb", "--promote-min-hits", "1", "--loglevel", "warning")
	c := s.Conn(t)
	raw := tierValue("m:", 0, 1024)
	targets := map[string]string{
		"m:raw": raw, "m:emb": "hello", "m:int": "12345", "m:ttl": raw,
		"m:exp": raw, "m:persist": raw, "m:del": raw, "m:unlink": raw, "m:touch": raw,
	}
	for k, v := range targets {
		if r := c.Do("SET", k, v); r.Str != "OK" {
			t.Fatalf("SET %s: %s", k, r.String())
		}
	}
	for _, k := range []string{"m:ttl", "m:persist"} {
		if r := c.Do("EXPIRE", k, "5000"); r.Int != 1 {
			t.Fatalf("EXPIRE %s: %s", k, r.String())
		}
	}
	setAt := time.Now().Unix()
	fillPastBudget(t, c, "mfill:")
	dbs := dbsize(t, c)

	intIn := func(lo, hi int64) func(harness.Reply) bool {
		return func(r harness.Reply) bool { return r.Type == ':' && r.Int >= lo && r.Int <= hi }
	}
	is := func(typ byte, s string) func(harness.Reply) bool {
		return func(r harness.Reply) bool { return r.Type == typ && r.Str == s }
	}
	exp := setAt + 5000
	steps := []struct {
		args []string
		ok   func(harness.Reply) bool
	}{
		{[]string{"EXISTS", "m:raw"}, intIn(1, 1)},
		{[]string{"EXISTS", "m:raw", "m:emb", "m:nokey", "m:int"}, intIn(3, 3)},
		{[]string{"TYPE", "m:raw"}, is('+', "string")},
		{[]string{"TYPE", "m:int"}, is('+', "string")},
		{[]string{"TTL", "m:raw"}, intIn(-1, -1)},
		{[]string{"PTTL", "m:emb"}, intIn(-1, -1)},
		{[]string{"TTL", "m:ttl"}, intIn(4990, 5000)},
		{[]string{"PTTL", "m:ttl"}, intIn(4_990_000, 5_000_000)},
		{[]string{"EXPIRETIME", "m:ttl"}, intIn(exp-2, exp+2)},
		{[]string{"PEXPIRETIME", "m:ttl"}, intIn((exp-2)*1000, (exp+2)*1000)},
		{[]string{"EXPIRE", "m:exp", "1000"}, intIn(1, 1)},
		{[]string{"EXPIRE", "m:exp", "500", "GT"}, intIn(0, 0)},
		{[]string{"TTL", "m:exp"}, intIn(995, 1000)},
		{[]string{"PEXPIRE", "m:exp", "2000000"}, intIn(1, 1)},
		{[]string{"TTL", "m:exp"}, intIn(1995, 2000)},
		{[]string{"PERSIST", "m:persist"}, intIn(1, 1)},
		{[]string{"PERSIST", "m:persist"}, intIn(0, 0)},
		{[]string{"TTL", "m:persist"}, intIn(-1, -1)},
		{[]string{"OBJECT", "ENCODING", "m:raw"}, is('$', "raw")},
		{[]string{"OBJECT", "ENCODING", "m:emb"}, is('$', "embstr")},
		{[]string{"OBJECT", "ENCODING", "m:int"}, is('$', "int")},
		{[]string{"TOUCH", "m:touch", "m:nokey"}, intIn(1, 1)},
		{[]string{"DEL", "m:del"}, intIn(1, 1)},
		{[]string{"EXISTS", "m:del"}, intIn(0, 0)},
		{[]string{"DEL", "m:del"}, intIn(0, 0)},
		{[]string{"UNLINK", "m:unlink", "m:nokey"}, intIn(1, 1)},
		{[]string{"TYPE", "m:unlink"}, is('+', "none")},
	}
	for _, st := range steps {
		before := tierInfo(t, c).get(t, "promotions")
		r := c.Do(st.args...)
		if !st.ok(r) {
			t.Errorf("%s = %s", strings.Join(st.args, " "), r.String())
		}
		if d := tierInfo(t, c).get(t, "promotions") - before; d != 0 {
			t.Errorf("%s promoted %d keys", strings.Join(st.args, " "), d)
		}
	}
	if got := dbsize(t, c); got != dbs-2 {
		t.Errorf("DBSIZE = %d after DEL and UNLINK, want %d", got, dbs-2)
	}
	// Positive control: each surviving target is still cold, so a GET
	// promotes it (promote-min-hits 1) and answers its value.
	for _, k := range []string{"m:raw", "m:emb", "m:int", "m:ttl", "m:exp", "m:persist", "m:touch"} {
		before := tierInfo(t, c).get(t, "promotions")
		if r := c.Do("GET", k); r.Str != targets[k] {
			t.Errorf("GET %s = %s", k, r.String())
		}
		if d := tierInfo(t, c).get(t, "promotions") - before; d != 1 {
			t.Errorf("GET %s after the metadata commands: promotions +%d, want +1 (key was not cold?)", k, d)
		}
	}
	for k, want := range map[string][2]int64{"m:ttl": {4990, 5000}, "m:exp": {1990, 2000}, "m:persist": {-1, -1}, "m:raw": {-1, -1}} {
		if r := c.Do("TTL", k); !intIn(want[0], want[1])(r) {
			t.Errorf("TTL %s after promotion = %s, want %d..%d", k, r.String(), want[0], want[1])
		}
	}
}

// TestScanGuaranteeUnderTiering iterates SCAN over 20,000 keys of a server
// with a tiny budget while another client promotes keys by reading them and
// demotes others by writing; every key present for the whole iteration
// must be returned. A second iteration restarts the server half-way and
// continues with the same cursor.
func TestScanGuaranteeUnderTiering(t *testing.T) {
	const n = 20_000
	s := harness.StartSpillway(t, "", "--maxmemory", "2mb", "--promote-min-hits", "1", "--loglevel", "warning")
	c := s.Conn(t)
	loadValues(t, c, "scan:stable:", n, 200, 1000)
	before := tierInfo(t, c)

	var stop atomic.Bool
	var churnOps atomic.Int64
	var wg sync.WaitGroup
	churnErr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		churnErr <- churn(s.Addr(), n, &stop, &churnOps)
	}()
	stopChurn := func() {
		stop.Store(true)
		wg.Wait()
		if err := <-churnErr; err != nil {
			t.Errorf("churn client: %v", err)
		}
	}

	seen := make(map[string]bool, n)
	cursor, calls := scanAll(t, c, "0", seen, 5000)
	stopChurn()
	if cursor != "0" {
		t.Fatalf("SCAN did not finish within %d calls (cursor %s)", calls, cursor)
	}
	after := tierInfo(t, c)
	t.Logf("SCAN: %d calls, %d distinct keys; churn: %d commands, promotions +%d, demotions +%d",
		calls, len(seen), churnOps.Load(), after.get(t, "promotions")-before.get(t, "promotions"),
		after.get(t, "demotions")-before.get(t, "demotions"))
	if churnOps.Load() == 0 || after.get(t, "promotions") == before.get(t, "promotions") ||
		after.get(t, "demotions") == before.get(t, "demotions") {
		t.Errorf("no promotions or demotions happened during the SCAN: the test proves nothing")
	}
	checkScanned(t, seen, n)

	// The cursor is a position in hash order: it survives a restart.
	seen = make(map[string]bool, n)
	cursor, calls = scanAll(t, c, "0", seen, 100)
	if cursor == "0" {
		t.Fatalf("SCAN finished in %d calls; expected more", calls)
	}
	s.Restart()
	c = s.Conn(t)
	cursor, _ = scanAll(t, c, cursor, seen, 5000)
	if cursor != "0" {
		t.Fatalf("SCAN after restart did not finish (cursor %s)", cursor)
	}
	checkScanned(t, seen, n)
}

// churn reads random stable keys (promoting them) and writes and deletes
// keys of its own (demoting others) until stop, or an error.
func churn(addr string, n int, stop *atomic.Bool, ops *atomic.Int64) error {
	c, err := harness.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	big := strings.Repeat("c", 1024)
	for iter := 0; iter < 20_000 && !stop.Load(); iter++ {
		var want []string
		for j := 0; j < 20; j++ {
			switch i := rng.IntN(n); j % 3 {
			case 0:
				c.Send("GET", "scan:stable:"+strconv.Itoa(i))
				want = append(want, tierValue("scan:stable:", i, 200))
			case 1:
				c.Send("SET", "scan:churn:"+strconv.Itoa(i%3000), big)
				want = append(want, "OK")
			default:
				c.Send("DEL", "scan:churn:"+strconv.Itoa(rng.IntN(3000)))
				want = append(want, "")
			}
		}
		for _, w := range want {
			r := c.Read()
			if r.Err != nil {
				return r.Err
			}
			if r.IsError() || (w != "" && r.Str != w) {
				return fmt.Errorf("reply %s, want %q", r.String(), harness.Trunc(w, 40))
			}
			ops.Add(1)
		}
	}
	return nil
}

// scanAll calls SCAN cursor COUNT 50 until the cursor is 0 or maxCalls
// calls were made, adding returned keys to seen; it returns the last cursor
// and the number of calls. Keys outside the scan: namespace fail t.
func scanAll(t *testing.T, c *harness.Conn, cursor string, seen map[string]bool, maxCalls int) (string, int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	calls := 0
	for calls < maxCalls && time.Now().Before(deadline) {
		r := c.Do("SCAN", cursor, "COUNT", "50")
		calls++
		if len(r.Elems) != 2 || r.Elems[0].Type != '$' || r.Elems[1].Type != '*' {
			t.Fatalf("SCAN %s = %s", cursor, r.String())
		}
		for _, k := range r.Elems[1].Elems {
			if !strings.HasPrefix(k.Str, "scan:stable:") && !strings.HasPrefix(k.Str, "scan:churn:") {
				t.Fatalf("SCAN returned unknown key %q", k.Str)
			}
			seen[k.Str] = true
		}
		cursor = r.Elems[0].Str
		if cursor == "0" {
			break
		}
	}
	return cursor, calls
}

// checkScanned reports stable keys missing from seen.
func checkScanned(t *testing.T, seen map[string]bool, n int) {
	t.Helper()
	var missing []string
	for i := 0; i < n; i++ {
		if k := "scan:stable:" + strconv.Itoa(i); !seen[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Errorf("SCAN missed %d of %d keys present for the whole iteration, e.g. %v",
			len(missing), n, missing[:min(len(missing), 10)])
	}
}

// --- helpers shared with durability_test.go ---

// tierValue returns the value of key prefix+i in a load: size bytes that
// start with the key's name, then pseudo-random letters derived from i, so
// a value served for the wrong key is detected.
func tierValue(prefix string, i, size int) string {
	b := make([]byte, size)
	n := copy(b, prefix+strconv.Itoa(i)+"|")
	x := uint64(i)*0x9E3779B97F4A7C15 + uint64(len(prefix)) + 1
	for j := n; j < size; j++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[j] = 'a' + byte(x%26)
	}
	return string(b)
}

// pipe sends n commands made by gen in pipelines of batch and passes each
// reply to check; a transport error fails t at once, check errors are
// reported (the first ten) when all replies were read.
func pipe(t testing.TB, c *harness.Conn, n, batch int, gen func(i int) []string, check func(i int, r harness.Reply) error) {
	t.Helper()
	var errs []string
	bad := 0
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		for i := lo; i < hi; i++ {
			if err := c.Send(gen(i)...); err != nil {
				t.Fatalf("pipeline: %v", err)
			}
		}
		for i := lo; i < hi; i++ {
			r := c.Read()
			if r.Err != nil {
				t.Fatalf("pipeline reply %d of %d: %v", i, n, r.Err)
			}
			if err := check(i, r); err != nil {
				bad++
				if len(errs) < 10 {
					errs = append(errs, err.Error())
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d replies wrong, first ones:\n%s", bad, n, strings.Join(errs, "\n"))
	}
}

// loadValues SETs prefix+i to tierValue(prefix, i, size) for i < n.
func loadValues(t testing.TB, c *harness.Conn, prefix string, n, size, batch int) {
	t.Helper()
	pipe(t, c, n, batch, func(i int) []string {
		return []string{"SET", prefix + strconv.Itoa(i), tierValue(prefix, i, size)}
	}, func(i int, r harness.Reply) error {
		if r.Str != "OK" || r.Type != '+' {
			return fmt.Errorf("SET %s%d: %s", prefix, i, r.String())
		}
		return nil
	})
}

// checkValues GETs prefix+i for i < n and compares with loadValues's value.
func checkValues(t testing.TB, c *harness.Conn, prefix string, n, size, batch int) {
	t.Helper()
	pipe(t, c, n, batch, func(i int) []string {
		return []string{"GET", prefix + strconv.Itoa(i)}
	}, func(i int, r harness.Reply) error {
		if r.Type != '$' || r.Null || r.Str != tierValue(prefix, i, size) {
			return fmt.Errorf("GET %s%d = %s", prefix, i, r.String())
		}
		return nil
	})
}

// fillPastBudget writes 1 KB values prefix+i until they total twice the hot
// budget plus 1 MB, so that every key written before them (and not read
// since) is demoted, and returns how many it wrote.
func fillPastBudget(t testing.TB, c *harness.Conn, prefix string) int {
	t.Helper()
	n := int((2*tierInfo(t, c).get(t, "hot_budget") + 1<<20) / 1024)
	loadValues(t, c, prefix, n, 1024, 500)
	return n
}

// tierFields holds the integer fields of INFO tiering.
type tierFields map[string]int64

// get returns field name, failing t if INFO tiering lacks it.
func (f tierFields) get(t testing.TB, name string) int64 {
	t.Helper()
	v, ok := f[name]
	if !ok {
		t.Fatalf("INFO tiering has no integer field %q", name)
	}
	return v
}

// tierInfo reads INFO tiering.
func tierInfo(t testing.TB, c *harness.Conn) tierFields {
	t.Helper()
	m, err := harness.Info(c, "tiering")
	if err != nil {
		t.Fatalf("%v", err)
	}
	f := make(tierFields, len(m))
	for k, v := range m {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			f[k] = n
		}
	}
	return f
}

// dbsize returns DBSIZE.
func dbsize(t testing.TB, c *harness.Conn) int64 {
	t.Helper()
	r := c.Do("DBSIZE")
	if r.Type != ':' {
		t.Fatalf("DBSIZE = %s", r.String())
	}
	return r.Int
}
