package upstream

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// masterRDB fills a real redis-server with keys of every type (two
// databases, expiries, a function library, 4 MB of strings) and returns
// the server's connection and its RDB file.
func masterRDB(t *testing.T) (*harness.Conn, []byte) {
	t.Helper()
	m := harness.StartRedis(t, "--enable-debug-command", "yes")
	mc := m.Conn(t)
	pexp := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	cmds := [][]string{
		{"FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f', function(keys, args) return 1 end)"},
		{"SELECT", "3"}, {"HSET", "h", "a", "1", "b", "2"}, {"RPUSH", "l", "x", "y", "z"},
		{"SADD", "si", "1", "2", "3"}, {"SADD", "ss", "a", "b"}, {"ZADD", "z", "1", "a", "2.5", "b"},
		{"XADD", "x", "1-1", "f", "v"}, {"SET", "ttl", "v", "PXAT", pexp},
		{"SELECT", "0"},
	}
	for _, c := range cmds {
		if r := mc.Do(c...); r.IsError() {
			t.Fatalf("%v: %s", c, r.Str)
		}
	}
	val := strings.Repeat("0123456789abcdef", 256) // 4 KB
	for i := range 1000 {
		if r := mc.Do("SET", "k:"+strconv.Itoa(i), val+strconv.Itoa(i)); r.IsError() {
			t.Fatalf("SET: %s", r.Str)
		}
	}
	if r := mc.Do("SAVE"); r.IsError() {
		t.Fatalf("SAVE: %s", r.Str)
	}
	dir := mc.Do("CONFIG", "GET", "dir").Elems[1].Str
	file, err := os.ReadFile(filepath.Join(dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	return mc, file
}

// doOn returns a restoreRDB sender over c (SELECTing each record's
// database).
func doOn(c *harness.Conn) func(db int, args [][]byte) ([]byte, error) {
	cur := -1
	return func(db int, args [][]byte) ([]byte, error) {
		if db != cur {
			if r := c.Do("SELECT", strconv.Itoa(db)); r.Err != nil || r.IsError() {
				return nil, r.Err
			}
			cur = db
		}
		r := c.DoBytes(args...)
		if r.Err != nil {
			return nil, r.Err
		}
		if r.IsError() {
			return []byte("-" + r.Str + "\r\n"), nil
		}
		return []byte("+OK\r\n"), nil
	}
}

func usedMemory(c *harness.Conn) (int64, error) {
	r := c.Do("INFO", "memory")
	if r.Err != nil {
		return 0, r.Err
	}
	for _, line := range strings.Split(r.Str, "\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			return strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return 0, nil
}

// TestRestoreRDBPaced: a master's RDB bigger than the upstream's budget
// loads into a real redis-server as RESTOREs, the load pausing whenever the
// upstream is over its budget until room is made (here: the test moves
// the loaded strings aside into a map, as the demoter moves keys into the
// store); the upstream's keys and the ones moved aside are then exactly the
// master's (DEBUG DIGEST-VALUE, TTL, functions). A pacer whose load is
// abandoned while waiting stops the load.
func TestRestoreRDBPaced(t *testing.T) {
	mc, file := masterRDB(t)
	up := harness.StartRedis(t, "--enable-debug-command", "yes")
	uc, ctl := up.Conn(t), up.Conn(t)
	base, err := usedMemory(ctl)
	if err != nil {
		t.Fatal(err)
	}
	budget := base + 1<<20 // the master's data is about 4 MB
	moved := map[string]string{}
	relieve := func() {
		ctl.Do("SELECT", "0")
		keys := ctl.Do("SCAN", "0", "MATCH", "k:*", "COUNT", "100").Elems[1].Elems
		for _, k := range keys {
			moved[k.Str] = ctl.Do("DEBUG", "DIGEST-VALUE", k.Str).Elems[0].Str
			ctl.Do("DEL", k.Str)
		}
	}
	p := &loadPacer{budget: func() int64 { return budget }, used: func() (int64, error) { return usedMemory(ctl) },
		relieve: relieve, every: 64 << 10, poll: time.Millisecond, stall: 5 * time.Second,
		stop: make(chan struct{}), log: slog.Default()}
	st, err := restoreRDB(strings.NewReader(string(file)), doOn(uc), p.restored)
	if err != nil {
		t.Fatal(err)
	}
	if st.Keys != 1007 || st.Functions != 1 || p.pauses < 2 || len(moved) == 0 {
		t.Fatalf("loaded %+v with %d pauses, %d keys moved aside; want 1007 keys, 1 library, pauses and keys moved", st, p.pauses, len(moved))
	}
	if used, _ := usedMemory(ctl); used > budget+1<<20 {
		t.Errorf("used_memory %d after the load; budget %d", used, budget)
	}
	for _, db := range []string{"0", "3"} {
		mc.Do("SELECT", db)
		uc.Do("SELECT", db)
		keys := mc.Do("KEYS", "*").Elems
		for _, k := range keys {
			want := mc.Do("DEBUG", "DIGEST-VALUE", k.Str).Elems[0].Str
			got, ok := moved[k.Str]
			if !ok || db != "0" {
				got = uc.Do("DEBUG", "DIGEST-VALUE", k.Str).Elems[0].Str
			}
			if got != want {
				t.Fatalf("db %s key %q: digest %s, master's %s", db, k.Str, got, want)
			}
			if w, g := mc.Do("PEXPIRETIME", k.Str).Int, uc.Do("PEXPIRETIME", k.Str).Int; !ok && w != g {
				t.Fatalf("db %s key %q: PEXPIRETIME %d, master's %d", db, k.Str, g, w)
			}
		}
		if n := int(uc.Do("DBSIZE").Int); db == "0" && n+len(moved) != len(keys) || db == "3" && n != len(keys) {
			t.Fatalf("db %s: %d keys loaded (%d moved aside), the master has %d", db, n, len(moved), len(keys))
		}
	}
	if w, g := mc.Do("FUNCTION", "LIST", "WITHCODE").String(), uc.Do("FUNCTION", "LIST", "WITHCODE").String(); w != g {
		t.Fatalf("functions: %s, master's %s", g, w)
	}

	// Loaded again without room being made, the load is abandoned when
	// the link ends (stop) while it waits.
	uc.Do("FLUSHALL")
	uc.Do("FUNCTION", "FLUSH")
	stop := make(chan struct{})
	p = &loadPacer{budget: func() int64 { return budget }, used: func() (int64, error) { return usedMemory(ctl) },
		relieve: func() { close(stop) }, every: 64 << 10, poll: time.Millisecond, stall: time.Minute,
		stop: stop, log: slog.Default()}
	if _, err := restoreRDB(strings.NewReader(string(file)), doOn(uc), p.restored); err != errLoadStopped {
		t.Fatalf("a load abandoned while over budget returned %v", err)
	}
}
