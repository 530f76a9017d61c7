package commands_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/proxy/server"
)

// Spillway's own figures, which a recorded redis-server reply cannot
// check (testdata/memory.txt and info.txt hold the reply shapes): MEMORY
// USAGE from the hot tier's accounting or the cold records, INFO's
// statistics and memory figures.

// do runs a command given as words and returns its raw reply.
func do(l *server.Local, words ...string) string { return string(l.DoString(words...)) }

// intReply parses an integer reply (":N\r\n").
func intReply(t *testing.T, raw string) int64 {
	t.Helper()
	if !strings.HasPrefix(raw, ":") {
		t.Fatalf("not an integer reply: %q", raw)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(raw[1:]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// info returns the text of INFO args (a bulk string in RESP2).
func info(t *testing.T, l *server.Local, args ...string) string {
	t.Helper()
	raw := do(l, append([]string{"INFO"}, args...)...)
	i := strings.Index(raw, "\r\n")
	if !strings.HasPrefix(raw, "$") || i < 0 {
		t.Fatalf("INFO %v: %q", args, raw)
	}
	return raw[i+2:]
}

// infoField returns one field of INFO's text, "" if absent.
func infoField(text, name string) string {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `:(.*)\r$`).FindStringSubmatch(text)
	if m == nil {
		return ""
	}
	return m[1]
}

func infoInt(t *testing.T, l *server.Local, section, name string) int64 {
	t.Helper()
	v := infoField(info(t, l, section), name)
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("INFO %s %s: %q", section, name, v)
	}
	return n
}

func TestMemoryUsage(t *testing.T) {
	s, e := openLocal(t, modes[0])
	l := s.NewLocal()
	defer l.Close()
	do(l, "SET", "k", strings.Repeat("a", 10))
	small := intReply(t, do(l, "MEMORY", "USAGE", "k"))
	do(l, "SET", "k", strings.Repeat("a", 1010))
	big := intReply(t, do(l, "MEMORY", "USAGE", "k", "SAMPLES", "0"))
	// The hot tier costs a value at the allocator's size class (a 10-byte
	// value takes 16 bytes, a 1,010-byte one 1,024), as Redis's MEMORY
	// USAGE counts jemalloc's.
	if d := big - small; d < 1000 || d > 1000+64 {
		t.Errorf("hot string: usage %d then %d after growing by 1000 bytes", small, big)
	}
	if small <= 10 {
		t.Errorf("hot string of 10 bytes: usage %d", small)
	}
	do(l, "HSET", "h", "f1", strings.Repeat("v", 100))
	h1 := intReply(t, do(l, "MEMORY", "USAGE", "h"))
	do(l, "HSET", "h", "f2", strings.Repeat("v", 100))
	if h2 := intReply(t, do(l, "MEMORY", "USAGE", "h")); h2 < h1+102 {
		t.Errorf("hash: usage %d then %d after a field of 102 bytes", h1, h2)
	}

	// Demoted, a key reports the bytes of its records on disk: the value
	// and a few bytes of key and meta, without the hot entry's overhead;
	// asking does not load it again.
	e.SetHotBudget(0)
	e.SetHotBudget(64 << 20)
	cold := intReply(t, do(l, "MEMORY", "USAGE", "k"))
	if cold < 1010 || cold > 1010+64 {
		t.Errorf("cold string of 1010 bytes: usage %d", cold)
	}
	if cold >= big {
		t.Errorf("cold usage %d not below the hot figure %d", cold, big)
	}
	if hc := intReply(t, do(l, "MEMORY", "USAGE", "h")); hc < 2*(2+100) {
		t.Errorf("cold hash of 204 bytes of fields and values: usage %d", hc)
	}
	if n := infoInt(t, l, "tiering", "hot_keys"); n != 0 {
		t.Errorf("MEMORY USAGE promoted: %d hot keys", n)
	}
	if got := do(l, "MEMORY", "USAGE", "nokey"); got != "$-1\r\n" {
		t.Errorf("missing key: %q", got)
	}
}

func TestMemoryStatsAndDoctor(t *testing.T) {
	s, _ := openLocal(t, modes[0])
	l := s.NewLocal()
	defer l.Close()
	do(l, "SET", "a", "1")
	do(l, "SELECT", "3")
	do(l, "SET", "b", "2")
	raw := do(l, "MEMORY", "STATS")
	if !strings.HasPrefix(raw, "*58\r\n") { // 27 pairs and db.0, db.3 (RESP2: a flat array)
		t.Fatalf("MEMORY STATS: %q", raw[:min(len(raw), 40)])
	}
	for _, f := range []string{"peak.allocated", "total.allocated", "startup.allocated", "db.0", "db.3",
		"overhead.hashtable.main", "keys.count", "keys.bytes-per-key", "dataset.bytes", "fragmentation.bytes"} {
		if !strings.Contains(raw, "\r\n"+f+"\r\n") {
			t.Errorf("MEMORY STATS lacks %s", f)
		}
	}
	if !strings.Contains(raw, "keys.count\r\n:2\r\n") {
		t.Errorf("keys.count is not 2: %q", raw)
	}
	if got := do(l, "MEMORY", "DOCTOR"); !strings.Contains(got, "this instance is empty") {
		t.Errorf("MEMORY DOCTOR on an almost empty instance: %q", got)
	}
	if got := do(l, "MEMORY", "MALLOC-STATS"); !strings.Contains(got, "HeapAlloc: ") {
		t.Errorf("MEMORY MALLOC-STATS: %q", got)
	}
}

// sections returns the section names of an INFO text, in order.
func sections(text string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`(?m)^# (\w+)\r$`).FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestInfoSections(t *testing.T) {
	s, _ := openLocal(t, modes[0])
	l := s.NewLocal()
	defer l.Close()
	def := "Server Clients Memory Persistence Stats Replication CPU Modules Errorstats Cluster Keyspace"
	all := "Server Clients Memory Persistence Stats Replication CPU Modules Commandstats Errorstats Latencystats Cluster Keyspace"
	for _, c := range []struct{ args, want string }{
		{"", def},
		{"default", def},
		{"all", all},
		{"everything", all + " Tiering"},
		{"cpu all", all},
		{"cpu default", def},
		{"keyspace cpu server", "Server CPU Keyspace"},
		{"commandSTATS", "Commandstats"},
		{"modules", "Modules Tiering"},
		{"tiering", "Tiering"},
		{"sentinel", ""},
	} {
		got := strings.Join(sections(info(t, l, strings.Fields(c.args)...)), " ")
		if got != c.want {
			t.Errorf("INFO %s: sections %q, want %q", c.args, got, c.want)
		}
	}
	text := info(t, l, "everything")
	for _, f := range []string{"redis_version", "run_id", "used_memory_peak", "lazyfree_pending_objects",
		"lazyfreed_objects", "rdb_changes_since_last_save", "total_error_replies", "master_repl_offset",
		"used_cpu_user_children", "cluster_enabled", "mem_allocator"} {
		if infoField(text, f) == "" {
			t.Errorf("INFO everything lacks %s", f)
		}
	}
}

// cmdstat returns a command's INFO commandstats line's value, "" if absent.
func cmdstat(t *testing.T, l *server.Local, name string) string {
	return infoField(info(t, l, "commandstats"), "cmdstat_"+name)
}

func TestCommandStats(t *testing.T) {
	s, _ := openLocal(t, modes[0])
	l := s.NewLocal()
	defer l.Close()
	do(l, "CONFIG", "RESETSTAT")
	do(l, "SET", "k", "v")
	do(l, "SET", "k")        // rejected: arity
	do(l, "INCR", "k")       // failed: not an integer
	do(l, "LPUSH", "k", "x") // failed: WRONGTYPE
	do(l, "CONFIG", "GET", "maxmemory")
	do(l, "BRPOP", "nolist", "0") // replies at once in process: still one call
	for _, c := range []struct{ name, want string }{
		{"set", `calls=1,usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=1,failed_calls=0`},
		{"incr", `calls=1,.*,rejected_calls=0,failed_calls=1`},
		{"lpush", `calls=1,.*,rejected_calls=0,failed_calls=1`},
		{"config|get", `calls=1,.*,failed_calls=0`},
		{"config|resetstat", `calls=1,`},
		{"brpop", `calls=1,`},
	} {
		if got := cmdstat(t, l, c.name); !regexp.MustCompile("^" + c.want).MatchString(got) {
			t.Errorf("cmdstat_%s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := cmdstat(t, l, "get"); got != "" {
		t.Errorf("cmdstat_get for a command never called: %q", got)
	}
	es := info(t, l, "errorstats")
	if infoField(es, "errorstat_ERR") != "count=2" || infoField(es, "errorstat_WRONGTYPE") != "count=1" {
		t.Errorf("errorstats: %q", es)
	}
	if n := infoInt(t, l, "stats", "total_error_replies"); n != 3 {
		t.Errorf("total_error_replies %d, want 3", n)
	}

	// MULTI/EXEC: the queued commands count when EXEC runs them; an error
	// inside fails that command, not EXEC. Scripts' commands count too.
	do(l, "CONFIG", "RESETSTAT")
	do(l, "MULTI")
	do(l, "SET", "k", "1")
	do(l, "INCR", "k")
	do(l, "HSET", "k", "f", "v")
	do(l, "EXEC")
	do(l, "EVAL", "redis.call('set', KEYS[1], 0) redis.call('expire', KEYS[1], 100)", "1", "k")
	for _, c := range []struct{ name, want string }{
		{"multi", "calls=1,"},
		{"exec", "calls=1,.*failed_calls=0"},
		{"set", "calls=2,"},
		{"incr", "calls=1,.*failed_calls=0"},
		{"hset", "calls=1,.*failed_calls=1"},
		{"eval", "calls=1,.*failed_calls=0"},
		{"expire", "calls=1,"},
	} {
		if got := cmdstat(t, l, c.name); !regexp.MustCompile("^" + c.want).MatchString(got) {
			t.Errorf("after MULTI and EVAL: cmdstat_%s: %q, want %q", c.name, got, c.want)
		}
	}
	// multi, set, incr, hset, exec, eval, set, expire; and the INFO calls.
	if n := infoInt(t, l, "stats", "total_commands_processed"); n < 8 {
		t.Errorf("total_commands_processed %d, want at least 8", n)
	}
	// A script's own error fails EVAL and counts once.
	do(l, "HSET", "hh", "f", "v")
	do(l, "CONFIG", "RESETSTAT")
	do(l, "EVAL", "return redis.call('incr', KEYS[1])", "1", "hh")
	do(l, "EVAL", "error('boom')", "0")
	if got := cmdstat(t, l, "eval"); !strings.HasPrefix(got, "calls=2,") || !strings.HasSuffix(got, "failed_calls=2") {
		t.Errorf("cmdstat_eval after two failing scripts: %q", got)
	}
	if n := infoInt(t, l, "stats", "total_error_replies"); n != 2 {
		t.Errorf("total_error_replies %d after two failing scripts, want 2", n)
	}
}

func TestDirtyCounter(t *testing.T) {
	s, _ := openLocal(t, modes[0])
	l := s.NewLocal()
	defer l.Close()
	dirty := func() int64 { return infoInt(t, l, "persistence", "rdb_changes_since_last_save") }
	// unit/bitops "SETBIT/BITFIELD only increase dirty when the value changed".
	d := dirty()
	steps := []struct {
		cmds  [][]string
		delta int64
	}{
		{[][]string{{"SETBIT", "foo", "0", "0"}, {"BITFIELD", "foo2", "SET", "i5", "0", "0"}}, 2},
		{[][]string{{"SETBIT", "foo", "0", "0"}, {"BITFIELD", "foo2", "SET", "i5", "0", "0"}}, 0},
		{[][]string{{"SETBIT", "foo", "0", "1"}, {"SETBIT", "foo", "0", "1"}, {"SETBIT", "foo", "0", "0"},
			{"SETBIT", "foo", "0", "0"}, {"BITFIELD", "foo2", "SET", "i5", "0", "1"},
			{"BITFIELD", "foo2", "SET", "i5", "0", "1"}, {"BITFIELD", "foo2", "SET", "i5", "0", "0"},
			{"BITFIELD", "foo2", "SET", "i5", "0", "0"}}, 4},
		{[][]string{{"BITFIELD", "foo3", "INCRBY", "i5", "0", "1"}, {"BITFIELD", "foo3", "INCRBY", "i5", "0", "1"}}, 2},
		{[][]string{{"SETBIT", "foo", "90", "0"}, {"BITFIELD", "foo2", "SET", "i5", "90", "0"}}, 2},
		{[][]string{{"GET", "foo"}, {"EXISTS", "foo"}, {"GET", "nokey"}}, 0},
		{[][]string{{"DEL", "foo", "foo2", "nokey"}}, 2},
		// A pop that empties a list is one change (its "del" event is not
		// another), as is MOVE; a missing key's PERSIST none.
		{[][]string{{"RPUSH", "l", "x"}, {"LPOP", "l"}, {"SET", "m", "1"}, {"MOVE", "m", "1"}, {"PERSIST", "l"}}, 4},
	}
	for i, st := range steps {
		for _, c := range st.cmds {
			do(l, c...)
		}
		if now := dirty(); now != d+st.delta {
			t.Errorf("step %d: dirty %d, want %d + %d", i, now, d, st.delta)
		}
		d = dirty()
	}
	do(l, "MSET", "a", "1", "b", "2", "c", "3")
	do(l, "FLUSHDB")
	if now := dirty(); now != d+3+4 { // MSET's three keys; FLUSHDB removed a, b, c and foo3
		t.Errorf("after MSET and FLUSHDB: dirty %d, want %d", now, d+7)
	}
	do(l, "SAVE")
	if now := dirty(); now != 0 {
		t.Errorf("after SAVE: dirty %d", now)
	}
}

func TestUsedMemoryFollowsDataset(t *testing.T) {
	s, _ := openLocal(t, modes[0])
	l := s.NewLocal()
	defer l.Close()
	used := func() int64 { return infoInt(t, l, "memory", "used_memory") }
	orig := used()
	args := []string{"SADD", "myset"}
	for i := range 100000 {
		args = append(args, strconv.Itoa(i))
	}
	do(l, args...)
	peak := used()
	if peak < orig+1000000 {
		t.Fatalf("used_memory %d after 100000 members, was %d", peak, orig)
	}
	if got := intReply(t, do(l, "UNLINK", "myset")); got != 1 {
		t.Fatalf("UNLINK: %d", got)
	}
	if now := used(); now >= peak || now >= orig*2 {
		t.Errorf("used_memory %d after UNLINK (peak %d, before %d)", now, peak, orig)
	}
	if p := infoInt(t, l, "memory", "used_memory_peak"); p < peak {
		t.Errorf("used_memory_peak %d below the peak seen, %d", p, peak)
	}
	do(l, "CONFIG", "RESETSTAT")
	for i := range 5 {
		do(l, "SET", fmt.Sprint("k", i), "v")
	}
	do(l, "FLUSHDB", "ASYNC")
	if n := infoInt(t, l, "memory", "lazyfreed_objects"); n != 5 {
		t.Errorf("lazyfreed_objects %d after FLUSHDB ASYNC of 5 keys", n)
	}
	// UNLINK counts what Redis frees in the background: a value whose free
	// effort is over 64 (a hashtable-encoded set of 100 members), not a
	// small or compact one (an intset of 100 integers, a string).
	do(l, "CONFIG", "RESETSTAT")
	big, ints := []string{"SADD", "big"}, []string{"SADD", "ints"}
	for i := range 100 {
		big, ints = append(big, fmt.Sprint("m", i)), append(ints, fmt.Sprint(i))
	}
	do(l, big...)
	do(l, ints...)
	do(l, "SET", "str", "v")
	if got := intReply(t, do(l, "UNLINK", "big", "ints", "str", "nokey")); got != 3 {
		t.Fatalf("UNLINK: %d", got)
	}
	if n := infoInt(t, l, "memory", "lazyfreed_objects"); n != 1 {
		t.Errorf("lazyfreed_objects %d after UNLINK of one big set", n)
	}
	if n := infoInt(t, l, "memory", "lazyfree_pending_objects"); n != 0 {
		t.Errorf("lazyfree_pending_objects %d", n)
	}
}

func TestLatencyStats(t *testing.T) {
	s, _ := openLocal(t, modes[0])
	l := s.NewLocal()
	defer l.Close()
	lat := func(name string) string {
		return infoField(info(t, l, "latencystats"), "latency_percentiles_usec_"+name)
	}
	do(l, "CONFIG", "RESETSTAT")
	do(l, "SET", "a", "b")
	do(l, "CLIENT", "ID")
	want := regexp.MustCompile(`^p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}$`)
	for _, name := range []string{"set", "client|id", "config|resetstat"} {
		if got := lat(name); !want.MatchString(got) {
			t.Errorf("latency_percentiles_usec_%s: %q", name, got)
		}
	}
	if got := lat("get"); got != "" {
		t.Errorf("latency of a command never called: %q", got)
	}
	do(l, "CONFIG", "RESETSTAT")
	if got := lat("set"); got != "" {
		t.Errorf("after CONFIG RESETSTAT: %q", got)
	}
	do(l, "CONFIG", "SET", "latency-tracking", "no")
	do(l, "SET", "a", "b")
	if got := lat("set"); got != "" {
		t.Errorf("with latency-tracking no: %q", got)
	}
	do(l, "CONFIG", "SET", "latency-tracking", "yes")
	do(l, "SET", "a", "b")
	if got := lat("set"); !want.MatchString(got) {
		t.Errorf("with latency-tracking yes again: %q", got)
	}
}
