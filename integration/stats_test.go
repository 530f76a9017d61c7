package integration

// INFO's statistics against a real redis-server: one scenario (blocking
// commands served and unblocked with an error, a failed transaction,
// errors inside scripts, rejections, writes that change nothing) runs on
// both, and the counters must agree: INFO commandstats (times left out),
// errorstats, total_error_replies and the dirty counter's growth.

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

func TestStatsAgainstRedis(t *testing.T) {
	rs := harness.StartRedis(t)
	sp := harness.StartSpillway(t, "", "--appendfsync", "no", "--loglevel", "warning")
	want := statsScenario(t, rs.Addr())
	got := statsScenario(t, sp.Addr())
	t.Logf("redis-server's statistics:\n%s", want)
	if got != want {
		t.Errorf("statistics differ\nspillway:\n%s\nredis-server:\n%s", got, want)
	}
	// The bytes read from clients: CONFIG RESETSTAT, SET and INFO stats.
	netIn := func(addr string) string {
		c := harness.MustDial(t, addr)
		defer c.Close()
		c.Do("CONFIG", "RESETSTAT")
		c.Do("SET", "stats:net", "some value")
		m, err := harness.Info(c, "stats")
		if err != nil {
			t.Fatal(err)
		}
		return m["total_net_input_bytes"]
	}
	if got, want := netIn(sp.Addr()), netIn(rs.Addr()); got != want {
		t.Errorf("total_net_input_bytes %s, redis-server's %s", got, want)
	}
}

// usecFields are the timings of a commandstats line, which differ.
var usecFields = regexp.MustCompile(`usec=\d+,usec_per_call=[\d.]+,`)

// statsScenario runs the scenario on the server at addr and returns its
// statistics, normalised.
func statsScenario(t *testing.T, addr string) string {
	t.Helper()
	a := harness.MustDial(t, addr)
	defer a.Close()
	b := harness.MustDial(t, addr)
	defer b.Close()
	do := func(c *harness.Conn, args ...string) harness.Reply {
		t.Helper()
		r := c.Do(args...)
		if r.Err != nil {
			t.Fatalf("%v: %v", args, r.Err)
		}
		return r
	}
	info := func(section string) map[string]string {
		t.Helper()
		m, err := harness.Info(a, section)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	waitBlocked := func() {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); info("clients")["blocked_clients"] != "1"; {
			if time.Now().After(deadline) {
				t.Fatal("the client never blocked")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	dirty := func() int64 {
		n, _ := strconv.ParseInt(info("persistence")["rdb_changes_since_last_save"], 10, 64)
		return n
	}

	do(a, "CONFIG", "RESETSTAT")
	d0 := dirty()
	bID := strconv.FormatInt(do(b, "CLIENT", "ID").Int, 10)
	// A blocking pop served by a push, then one unblocked with an error.
	if err := b.WriteRaw(harness.EncodeCommand([]byte("BLPOP"), []byte("stats:list"), []byte("0"))); err != nil {
		t.Fatal(err)
	}
	waitBlocked()
	do(a, "LPUSH", "stats:list", "x")
	if r := b.Read(); r.Err != nil || r.IsError() {
		t.Fatalf("BLPOP served: %v", r)
	}
	if err := b.WriteRaw(harness.EncodeCommand([]byte("BLPOP"), []byte("stats:list"), []byte("0"))); err != nil {
		t.Fatal(err)
	}
	waitBlocked()
	do(a, "CLIENT", "UNBLOCK", bID, "ERROR")
	if r := b.Read(); !r.IsError() {
		t.Fatalf("BLPOP unblocked: %v", r)
	}
	// A transaction with a rejected command, then one with a failing one.
	do(a, "MULTI")
	do(a, "SET", "stats:k")
	do(a, "EXEC")
	do(a, "MULTI")
	do(a, "SET", "stats:k", "v")
	do(a, "INCR", "stats:k")
	do(a, "EXEC")
	// Scripts: a called command's error, caught and uncaught; the
	// script's own error.
	do(a, "HSET", "stats:h", "f", "v")
	do(a, "EVAL", "return redis.pcall('incr', KEYS[1]) and 1", "1", "stats:h")
	do(a, "EVAL", "return redis.call('incr', KEYS[1])", "1", "stats:h")
	do(a, "EVAL", "error('boom')", "0")
	do(a, "EVAL", "redis.call('set', KEYS[1], 1) redis.call('expire', KEYS[1], 100)", "1", "stats:s")
	// Rejections and errors outside any command.
	do(a, "GET")
	do(a, "NOSUCHCOMMAND")
	do(a, "CONFIG", "NOSUCH")
	do(a, "AUTH", "nopass")
	// Writes that change something, or nothing.
	do(a, "SETBIT", "stats:bits", "7", "1")
	do(a, "SETBIT", "stats:bits", "7", "1")
	do(a, "BITFIELD", "stats:bf", "SET", "u8", "0", "0")
	do(a, "BITFIELD", "stats:bf", "SET", "u8", "0", "0")
	do(a, "PERSIST", "stats:bits")
	do(a, "DEL", "stats:bits", "stats:bf", "stats:nokey")
	do(a, "RPUSH", "stats:l2", "y")
	do(a, "RPOP", "stats:l2")
	d1 := dirty()

	var lines []string
	for k, v := range info("commandstats") {
		switch k {
		case "cmdstat_info", "cmdstat_client|list":
			continue // polling, as often as each server needs
		}
		lines = append(lines, k+":"+usecFields.ReplaceAllString(v, ""))
	}
	for k, v := range info("errorstats") {
		lines = append(lines, k+":"+v)
	}
	sort.Strings(lines)
	lines = append(lines, "total_error_replies:"+info("stats")["total_error_replies"],
		"dirty_delta:"+strconv.FormatInt(d1-d0, 10))
	return strings.Join(lines, "\n")
}
