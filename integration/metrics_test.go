package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// The Prometheus endpoint (metrics-port) of the spillway binary, scraped
// after commands whose effect on the metrics is known: the redis_ metrics
// are compared with a real redis-server's INFO after the same commands,
// the spillway_ ones with what the commands did to the tiers.

// scrape fetches http://addr/metrics and returns each sample by its
// series as printed ("name" or `name{label="value"}`).
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", addr, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape %s: bad sample %q", addr, line)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scrape %s: %v", addr, err)
	}
	return out
}

// dashboardMetrics returns the metric names deploy/grafana/spillway.json
// queries (a histogram's by its series: _bucket, _sum, _count), checking
// that it is valid JSON.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "deploy", "grafana", "spillway.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("the dashboard is not valid JSON: %v", err)
	}
	seen := map[string]bool{}
	var out []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range metricNameRe.FindAllString(tg.Expr, -1) {
				if !seen[name] {
					seen[name] = true
					out = append(out, name)
				}
			}
		}
	}
	if len(out) < 20 {
		t.Fatalf("the dashboard queries only %d metrics: %v", len(out), out)
	}
	return out
}

var metricNameRe = regexp.MustCompile(`\b(redis|spillway)_[a-z0-9_]+`)

// checkDashboard fails for each metric of the dashboard missing from the
// scrape m, except those of skip.
func checkDashboard(t *testing.T, m map[string]float64, skip func(string) bool) {
	t.Helper()
	names := map[string]bool{}
	for series := range m {
		name, _, _ := strings.Cut(series, "{")
		names[name] = true
	}
	for _, name := range dashboardMetrics(t) {
		if !names[name] && !skip(name) {
			t.Errorf("the dashboard queries %s, which the endpoint does not export", name)
		}
	}
}

// metric returns a sample that must be there.
func metric(t *testing.T, m map[string]float64, series string) float64 {
	t.Helper()
	v, ok := m[series]
	if !ok {
		t.Fatalf("metric %s missing", series)
	}
	return v
}

// infoSub reads "a=1,b=2" field sub of an INFO value as a number.
func infoSub(t *testing.T, info map[string]string, field, sub string) float64 {
	t.Helper()
	for _, kv := range strings.Split(info[field], ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == sub {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("INFO %s %s=%q", field, sub, v)
			}
			return f
		}
	}
	t.Fatalf("INFO has no %s with %s (%q)", field, sub, info[field])
	return 0
}

// metricsScript sends n SETs of 2 KB values (pipelined), GETs of the
// first 100 keys and of 10 missing keys, a GETRANGE with bad offsets (an
// ERR reply, no key looked up) and a GET without its key (an arity error,
// a rejected call).
func metricsScript(t *testing.T, c *harness.Conn, n int) {
	t.Helper()
	val := strings.Repeat("v", 2048)
	for i := 0; i < n; i++ {
		if err := c.Send("SET", fmt.Sprintf("key:%d", i), val); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		if r := c.Read(); r.Str != "OK" {
			t.Fatalf("SET %d: %s", i, r.String())
		}
	}
	for i := 0; i < 100; i++ {
		if r := c.Do("GET", fmt.Sprintf("key:%d", i)); r.Str != val {
			t.Fatalf("GET key:%d: %s", i, harness.Trunc(r.String(), 80))
		}
	}
	for i := 0; i < 10; i++ {
		if r := c.Do("GET", fmt.Sprintf("missing:%d", i)); !r.Null {
			t.Fatalf("GET missing:%d: %s", i, r.String())
		}
	}
	if r := c.Do("GETRANGE", "key:0", "a", "b"); !r.IsError() {
		t.Fatalf("GETRANGE with bad offsets: %s", r.String())
	}
	if r := c.Do("GET"); !r.IsError() {
		t.Fatalf("GET without a key: %s", r.String())
	}
}

// compareRedisMetrics checks the redis_ metrics that metricsScript moves
// against redis-server's INFO after the same script.
func compareRedisMetrics(t *testing.T, m map[string]float64, info map[string]string, n int) {
	t.Helper()
	for _, cmd := range []string{"set", "get", "getrange"} {
		for _, f := range [][2]string{{"calls", "redis_commands_total"}, {"rejected_calls", "redis_commands_rejected_calls_total"},
			{"failed_calls", "redis_commands_failed_calls_total"}} {
			want := infoSub(t, info, "cmdstat_"+cmd, f[0])
			if got := metric(t, m, f[1]+`{cmd="`+cmd+`"}`); got != want {
				t.Errorf("%s{cmd=%q} = %v; redis-server's INFO says %v", f[1], cmd, got, want)
			}
		}
	}
	if got := metric(t, m, `redis_commands_total{cmd="set"}`); got != float64(n) {
		t.Errorf(`redis_commands_total{cmd="set"} = %v; %d SETs were sent`, got, n)
	}
	for field, name := range map[string]string{"keyspace_hits": "redis_keyspace_hits_total",
		"keyspace_misses": "redis_keyspace_misses_total"} {
		want, _ := strconv.ParseFloat(info[field], 64)
		if got := metric(t, m, name); got != want {
			t.Errorf("%s = %v; redis-server's INFO %s is %v", name, got, field, want)
		}
	}
	if got, want := metric(t, m, `redis_errors_total{err="ERR"}`), infoSub(t, info, "errorstat_ERR", "count"); got != want {
		t.Errorf(`redis_errors_total{err="ERR"} = %v; redis-server's errorstat_ERR count is %v`, got, want)
	}
	if got := metric(t, m, `redis_db_keys{db="db0"}`); got != float64(n) {
		t.Errorf(`redis_db_keys{db="db0"} = %v; want %d`, got, n)
	}
	if metric(t, m, "redis_up") != 1 || metric(t, m, "redis_connected_clients") < 1 ||
		metric(t, m, "redis_uptime_in_seconds") < 0 || metric(t, m, "redis_memory_used_bytes") <= 0 {
		t.Errorf("redis_up, connected_clients, uptime or memory_used wrong: %v %v %v %v", m["redis_up"],
			m["redis_connected_clients"], m["redis_uptime_in_seconds"], m["redis_memory_used_bytes"])
	}
}

func TestMetricsEmbedded(t *testing.T) {
	const n = 3000 // 6 MB of values against a 3 MB hot tier
	mport := harness.FreePort(t)
	sp := harness.StartSpillway(t, "", "--metrics-port", strconv.Itoa(mport), "--maxmemory", "4mb",
		"--promote-min-hits", "1000")
	maddr := "127.0.0.1:" + strconv.Itoa(mport)
	before := scrape(t, maddr)
	if metric(t, before, "spillway_cold_keys") != 0 || metric(t, before, "redis_up") != 1 {
		t.Fatalf("fresh server: cold_keys %v, up %v", before["spillway_cold_keys"], before["redis_up"])
	}
	rd := harness.StartRedis(t)
	metricsScript(t, rd.Conn(t), n)
	info, err := harness.Info(rd.Conn(t), "everything")
	if err != nil {
		t.Fatal(err)
	}
	metricsScript(t, sp.Conn(t), n)
	m := scrape(t, maddr)
	compareRedisMetrics(t, m, info, n)

	hot, cold := metric(t, m, "spillway_hot_keys"), metric(t, m, "spillway_cold_keys")
	if cold <= 0 || hot+cold != n {
		t.Errorf("hot %v + cold %v keys; want some cold and %d in all", hot, cold, n)
	}
	if metric(t, m, "spillway_demotions_total") < cold {
		t.Errorf("demotions %v < cold keys %v", m["spillway_demotions_total"], cold)
	}
	if hb, budget := metric(t, m, "spillway_hot_bytes"), metric(t, m, "spillway_hot_budget_bytes"); hb <= 0 || hb > budget {
		t.Errorf("hot bytes %v, budget %v", hb, budget)
	}
	if metric(t, m, "spillway_budget_bytes") != 4<<20 || metric(t, m, "redis_memory_max_bytes") != 4<<20 {
		t.Errorf("budget %v, memory_max %v; want 4mb", m["spillway_budget_bytes"], m["redis_memory_max_bytes"])
	}
	// The first keys written were demoted: their GETs read the store
	// (promote-min-hits 1000 keeps them there).
	if metric(t, m, "spillway_cold_reads_total") <= 0 || metric(t, m, "spillway_cold_store_disk_bytes") <= 0 {
		t.Errorf("cold reads %v, disk bytes %v", m["spillway_cold_reads_total"], m["spillway_cold_store_disk_bytes"])
	}
	count := metric(t, m, "spillway_cold_read_duration_seconds_count")
	if count <= metric(t, before, "spillway_cold_read_duration_seconds_count") ||
		metric(t, m, `spillway_cold_read_duration_seconds_bucket{le="+Inf"}`) != count {
		t.Errorf("cold read histogram: count %v (before %v), +Inf bucket %v", count,
			before["spillway_cold_read_duration_seconds_count"], m[`spillway_cold_read_duration_seconds_bucket{le="+Inf"}`])
	}
	for _, name := range []string{"spillway_pebble_compactions_total", "spillway_pebble_read_amplification",
		"spillway_pebble_block_cache_hits_total", "spillway_pebble_block_cache_misses_total", `spillway_mode_info{mode="embedded"}`} {
		metric(t, m, name)
	}
	checkDashboard(t, m, func(name string) bool { return strings.HasPrefix(name, "spillway_upstream_") })
}

// TestMetricsConfigSet: CONFIG SET metrics-port moves the endpoint (the
// new port is bound before the old one closes), refuses a port in use
// keeping the old one, and 0 stops it.
func TestMetricsConfigSet(t *testing.T) {
	mport := harness.FreePort(t)
	sp := harness.StartSpillway(t, "", "--metrics-port", strconv.Itoa(mport))
	c := sp.Conn(t)
	up := func(port int) bool {
		client := &http.Client{Timeout: 5 * time.Second}
		resp, err := client.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/metrics")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	if !up(mport) {
		t.Fatal("endpoint not serving at start")
	}
	moved := harness.FreePort(t)
	if r := c.Do("CONFIG", "SET", "metrics-port", strconv.Itoa(moved)); r.Str != "OK" {
		t.Fatalf("CONFIG SET metrics-port: %s", r.String())
	}
	if !up(moved) || up(mport) {
		t.Fatalf("after the move: new port serving %v, old port serving %v", up(moved), up(mport))
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	want := "ERR CONFIG SET failed (possibly related to argument 'metrics-port') - Unable to listen on this port. Check server logs."
	if r := c.Do("CONFIG", "SET", "metrics-port", busyPort); r.Str != want {
		t.Fatalf("CONFIG SET metrics-port to a busy port: %s", r.String())
	}
	if r := c.Do("CONFIG", "GET", "metrics-port"); len(r.Elems) != 2 || r.Elems[1].Str != strconv.Itoa(moved) || !up(moved) {
		t.Fatalf("after a refused move: %s, serving %v", r.String(), up(moved))
	}
	if r := c.Do("CONFIG", "SET", "metrics-port", "0"); r.Str != "OK" || up(moved) {
		t.Fatalf("CONFIG SET metrics-port 0: %s, still serving %v", r.String(), up(moved))
	}
}

func TestMetricsUpstream(t *testing.T) {
	const n = 200
	t.Setenv("SPILLWAY_TEST_HOOKS", "1") // DEBUG DEMOTE-ALL
	up := harness.StartRedis(t)
	mport := harness.FreePort(t)
	sp := harness.StartSpillway(t, "", "--upstream", "redis://"+up.Addr(), "--metrics-port", strconv.Itoa(mport))
	maddr := "127.0.0.1:" + strconv.Itoa(mport)
	c := sp.Conn(t)
	val := strings.Repeat("u", 100)
	for i := 0; i < n; i++ {
		if r := c.Do("SET", fmt.Sprintf("k:%d", i), val); r.Str != "OK" {
			t.Fatalf("SET: %s", r.String())
		}
	}
	if r := c.Do("GETRANGE", "k:0", "a", "b"); !r.IsError() {
		t.Fatalf("GETRANGE with bad offsets: %s", r.String())
	}
	m := scrape(t, maddr)
	if got := metric(t, m, `redis_commands_total{cmd="set"}`); got != n {
		t.Errorf(`redis_commands_total{cmd="set"} = %v; want %d`, got, n)
	}
	if got := metric(t, m, `redis_errors_total{err="ERR"}`); got != 1 {
		t.Errorf(`redis_errors_total{err="ERR"} = %v; want 1`, got)
	}
	if metric(t, m, "spillway_upstream_up") != 1 || metric(t, m, "spillway_cold_keys") != 0 ||
		metric(t, m, "spillway_upstream_pipeline_depth") != 0 ||
		metric(t, m, `spillway_mode_info{mode="upstream"}`) != 1 {
		t.Fatalf("upstream_up %v, cold_keys %v", m["spillway_upstream_up"], m["spillway_cold_keys"])
	}
	if r := c.Do("DEBUG", "DEMOTE-ALL"); r.Int != n {
		t.Fatalf("DEBUG DEMOTE-ALL: %s", r.String())
	}
	for i := 0; i < 10; i++ {
		if r := c.Do("GET", fmt.Sprintf("k:%d", i)); r.Str != val {
			t.Fatalf("GET: %s", r.String())
		}
	}
	m = scrape(t, maddr)
	if got := metric(t, m, "spillway_demotions_total"); got != n {
		t.Errorf("spillway_demotions_total = %v; want %d", got, n)
	}
	// The first read of a cold key is served from the store (promote-min-hits 2).
	if got := metric(t, m, "spillway_cold_keys"); got != n {
		t.Errorf("spillway_cold_keys = %v; want %d", got, n)
	}
	if metric(t, m, "spillway_cold_reads_total") != 10 {
		t.Errorf("spillway_cold_reads_total = %v; want 10", m["spillway_cold_reads_total"])
	}
	if got := metric(t, m, `redis_db_keys{db="db0"}`); got != n {
		t.Errorf(`redis_db_keys{db="db0"} = %v; want %d (both tiers)`, got, n)
	}
	if metric(t, m, "redis_connected_clients") != 1 {
		t.Errorf("redis_connected_clients = %v; want 1 (Spillway's clients, not the upstream's)", m["redis_connected_clients"])
	}
	// The hot tier's figures are embedded mode's: the upstream is the hot tier.
	checkDashboard(t, m, func(name string) bool {
		return name == "spillway_hot_keys" || name == "spillway_hot_bytes" || name == "spillway_hot_budget_bytes"
	})

	// The upstream goes away: the link is reported down.
	up.Kill9()
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		c.Do("GET", "k:0")
		if scrape(t, maddr)["spillway_upstream_up"] == 0 {
			break
		}
		if i >= 200 || time.Now().After(deadline) {
			t.Fatalf("spillway_upstream_up still 1 after the upstream was killed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
