package integration

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// RDB files end to end: what Spillway's SAVE, BGSAVE, save points and
// SHUTDOWN write is loaded by a real redis-server, which then holds what a
// redis-server fed the same commands holds.

// rdbDataset returns commands building every type in its small and large
// encodings, in several databases, with expiries (absolute: expireAt and
// after, unix ms), and a function library.
func rdbDataset(expireAt int64) [][]string {
	var cmds [][]string
	add := func(args ...string) { cmds = append(cmds, args) }
	long := func(n int) string { return strings.Repeat("abcdefgh", n/8+1)[:n] }
	at := func(d int64) string { return strconv.FormatInt(expireAt+d, 10) }
	add("FUNCTION", "LOAD", "#!lua name=rdblib\nredis.register_function('rdbf', function(keys, args) return 1 end)")
	for _, db := range []string{"0", "3", "15"} {
		add("SELECT", db)
		add("SET", "s:int", "12345")
		add("SET", "s:neg", "-70000")
		add("SET", "s:short", "hello "+db)
		add("SET", "s:long", long(50000))
		add("SET", "s:empty", "")
		add("SET", "s:exp", "v", "PXAT", at(0))
		add("HSET", "h:small", "a", "1", "b", "two", "c", "-3")
		args := []string{"HSET", "h:big"}
		for i := range 600 {
			args = append(args, "f"+strconv.Itoa(i), strconv.Itoa(i*i))
		}
		add(args...)
		add("HSET", "h:longval", "f", long(65))
		add("PEXPIREAT", "h:longval", at(1))
		add("SADD", "set:ints", "1", "-2", "300", "70000", "5000000000")
		args = []string{"SADD", "set:manyints"}
		for i := range 600 {
			args = append(args, strconv.Itoa(i*3-100))
		}
		add(args...)
		add("SADD", "set:strs", "a", "b", "007")
		add("ZADD", "z:small", "1", "a", "-2.5", "b", "inf", "c", "-inf", "d", "0", "e", "3.14159265358979", "f")
		add("ZADD", "z:longmember", "1", long(100))
		args = []string{"ZADD", "z:big"}
		for i := range 300 {
			args = append(args, strconv.FormatFloat(float64(i)/7, 'g', -1, 64), "m"+strconv.Itoa(i))
		}
		add(args...)
		add("PEXPIREAT", "z:big", at(2))
		add("RPUSH", "l:small", "a", "1", "-100", "x y")
		args = []string{"RPUSH", "l:big"}
		for i := range 3000 {
			args = append(args, "e"+strconv.Itoa(i))
		}
		add(args...)
		add("LPUSH", "l:bigelem", long(10000), "small")
		add("PEXPIREAT", "l:bigelem", at(3))
	}
	add("SELECT", "0")
	return cmds
}

// feed runs cmds on every connection, failing on an error reply.
func feed(t *testing.T, cmds [][]string, conns ...*harness.Conn) {
	t.Helper()
	for _, c := range cmds {
		for _, conn := range conns {
			if r := conn.Do(c...); r.IsError() {
				t.Fatalf("%v: %s", c[:min(len(c), 3)], r.Str)
			}
		}
	}
}

// sameDataset checks that two redis-compatible servers hold the same
// dataset: per database the same keys, and per key the same type, value
// (DUMP is not comparable across encodings: DEBUG DIGEST-VALUE where both
// are redis-servers, else the values read back) and expiry; and the same
// function libraries. digest compares DEBUG DIGEST too (both redis-servers).
func sameDataset(t *testing.T, want, got *harness.Conn, digest bool) {
	t.Helper()
	if digest {
		wd, gd := want.Do("DEBUG", "DIGEST"), got.Do("DEBUG", "DIGEST")
		if wd.IsError() || gd.IsError() || wd.Str != gd.Str || strings.Trim(wd.Str, "0") == "" {
			t.Errorf("DEBUG DIGEST: got %s, want %s", gd.String(), wd.String())
		}
	}
	for db := range 16 {
		d := strconv.Itoa(db)
		want.Do("SELECT", d)
		got.Do("SELECT", d)
		wk, gk := sortedKeys(want), sortedKeys(got)
		if !slices.Equal(wk, gk) {
			t.Errorf("db %d keys: got %v, want %v", db, gk, wk)
			continue
		}
		for len(wk) > 0 {
			keys := wk[:min(len(wk), compareChunk)]
			wk = wk[len(keys):]
			var checks [][]string
			var types []harness.Reply
			if !digest {
				types = want.DoAll(keyCommands(keys, "TYPE"))
			}
			for i, k := range keys {
				checks = append(checks, []string{"TYPE", k}, []string{"PEXPIRETIME", k})
				if digest {
					checks = append(checks, []string{"DEBUG", "DIGEST-VALUE", k}, []string{"OBJECT", "ENCODING", k})
				} else {
					checks = append(checks, valueCommand(types[i].Str, k))
				}
			}
			ws, gs := want.DoAll(checks), got.DoAll(checks)
			for i, c := range checks {
				w, g := ws[i], gs[i]
				if c[0] == "HGETALL" || c[0] == "SMEMBERS" {
					w, g = harness.Canonical(w), harness.Canonical(g)
				}
				if w.IsError() || g.IsError() || w.String() != g.String() {
					t.Errorf("db %d %v: got %s, want %s", db, c, harness.Trunc(g.String(), 200), harness.Trunc(w.String(), 200))
				}
			}
		}
	}
	want.Do("SELECT", "0")
	got.Do("SELECT", "0")
	if w, g := want.Do("FUNCTION", "LIST", "WITHCODE").String(), got.Do("FUNCTION", "LIST", "WITHCODE").String(); w != g {
		t.Errorf("FUNCTION LIST: got %s, want %s", g, w)
	}
}

// compareChunk is how many keys sameDataset checks in one pipeline.
const compareChunk = 100

// keyCommands is cmd of each key.
func keyCommands(keys []string, cmd string) [][]string {
	out := make([][]string, len(keys))
	for i, k := range keys {
		out[i] = []string{cmd, k}
	}
	return out
}

// valueCommand is the command reading the whole value of k, of type typ.
func valueCommand(typ, k string) []string {
	switch typ {
	case "hash":
		return []string{"HGETALL", k}
	case "set":
		return []string{"SMEMBERS", k}
	case "zset":
		return []string{"ZRANGE", k, "0", "-1", "WITHSCORES"}
	case "list":
		return []string{"LRANGE", k, "0", "-1"}
	}
	return []string{"GET", k}
}

func sortedKeys(c *harness.Conn) []string {
	var keys []string
	for _, e := range c.Do("KEYS", "*").Elems {
		keys = append(keys, e.Str)
	}
	slices.Sort(keys)
	return keys
}

// loadInRedis starts a redis-server on a copy of the RDB file at path.
func loadInRedis(t *testing.T, path string) *harness.Conn {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return harness.StartRedis(t, "--enable-debug-command", "yes", "--dir", dir, "--dbfilename", "dump.rdb").Conn(t)
}

// waitInfo polls INFO persistence until cond holds (at most 20 s).
func waitInfo(t *testing.T, c *harness.Conn, what string, cond func(map[string]string) bool) map[string]string {
	t.Helper()
	for range 400 {
		m, err := harness.Info(c, "persistence")
		if err != nil {
			t.Fatal(err)
		}
		if cond(m) {
			return m
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("INFO persistence never showed %s", what)
	return nil
}

func TestRDBSaveAndBgsave(t *testing.T) {
	ref := harness.StartRedis(t, "--enable-debug-command", "yes")
	sp := harness.StartSpillway(t, "", "--maxmemory", "64mb")
	rc, sc := ref.Conn(t), sp.Conn(t)
	feed(t, rdbDataset(time.Now().Add(time.Hour).UnixMilli()), rc, sc)
	path := filepath.Join(sp.Dir(), "dump.rdb")

	before := sc.Do("LASTSAVE").Int
	if m, _ := harness.Info(sc, "persistence"); m["rdb_changes_since_last_save"] == "0" {
		t.Fatalf("no changes counted before SAVE: %v", m)
	}
	if r := sc.Do("SAVE"); r.Str != "OK" {
		t.Fatalf("SAVE: %s", r.String())
	}
	m, _ := harness.Info(sc, "persistence")
	if m["rdb_changes_since_last_save"] != "0" || m["rdb_saves"] != "1" || m["rdb_last_bgsave_status"] != "ok" {
		t.Errorf("after SAVE: %v", m)
	}
	if after := sc.Do("LASTSAVE").Int; after < before {
		t.Errorf("LASTSAVE went back: %d then %d", before, after)
	}
	sameDataset(t, rc, loadInRedis(t, path), true)

	// BGSAVE after more writes: the new file has them.
	feed(t, [][]string{{"SET", "after:save", "1"}, {"DEL", "s:short"}, {"HSET", "h:small", "z", "26"}}, rc, sc)
	if r := sc.Do("BGSAVE"); r.Str != "Background saving started" {
		t.Fatalf("BGSAVE: %s", r.String())
	}
	waitInfo(t, sc, "the BGSAVE done", func(m map[string]string) bool {
		return m["rdb_bgsave_in_progress"] == "0" && m["rdb_saves"] == "2"
	})
	m, _ = harness.Info(sc, "persistence")
	if m["rdb_last_bgsave_status"] != "ok" || m["rdb_changes_since_last_save"] != "0" || m["rdb_last_bgsave_time_sec"] == "-1" {
		t.Errorf("after BGSAVE: %v", m)
	}
	sameDataset(t, rc, loadInRedis(t, path), true)
	if r := sc.Do("BGSAVE", "NOW"); !r.IsError() || r.Str != "ERR syntax error" {
		t.Errorf("BGSAVE NOW: %s", r.String())
	}
	// In MULTI, BGSAVE is scheduled, and runs once EXEC is done.
	sc.Do("MULTI")
	sc.Do("SET", "in:multi", "1")
	sc.Do("BGSAVE")
	if r := sc.Do("EXEC"); len(r.Elems) != 2 || r.Elems[1].Str != "Background saving scheduled" {
		t.Fatalf("EXEC: %s", r.String())
	}
	waitInfo(t, sc, "the scheduled BGSAVE done", func(m map[string]string) bool {
		return m["rdb_bgsave_in_progress"] == "0" && m["rdb_saves"] == "3"
	})
	if r := loadInRedis(t, path).Do("GET", "in:multi"); r.Str != "1" {
		t.Errorf("the BGSAVE scheduled in MULTI missed the transaction's write: %s", r.String())
	}
}

func TestRDBSavePointsAndShutdown(t *testing.T) {
	sp := harness.StartSpillway(t, "", "--save", "1 1")
	c := sp.Conn(t)
	path := filepath.Join(sp.Dir(), "dump.rdb")
	c.Do("SET", "k", "v1")
	// The save point (1 change, more than 1 s) starts a BGSAVE by itself.
	waitInfo(t, c, "a save point's BGSAVE", func(m map[string]string) bool {
		return m["rdb_saves"] == "1" && m["rdb_bgsave_in_progress"] == "0"
	})
	if r := loadInRedis(t, path).Do("GET", "k"); r.Str != "v1" {
		t.Fatalf("after the save point: GET k = %s", r.String())
	}
	// SHUTDOWN with save points configured saves; NOSAVE does not.
	c.Do("CONFIG", "SET", "save", "3600 1")
	c.Do("SET", "k", "v2")
	shutdown(t, sp)
	if r := loadInRedis(t, path).Do("GET", "k"); r.Str != "v2" {
		t.Fatalf("after SHUTDOWN: GET k = %s", r.String())
	}
	saved, _ := os.ReadFile(path)
	sp.Restart()
	c = sp.Conn(t)
	c.Do("SET", "k", "v3")
	shutdown(t, sp, "NOSAVE")
	if now, _ := os.ReadFile(path); !bytes.Equal(now, saved) {
		t.Errorf("SHUTDOWN NOSAVE changed %s", path)
	}
	// SHUTDOWN SAVE saves even without save points; SIGTERM saves when
	// save points are configured.
	sp.Restart()
	c = sp.Conn(t)
	c.Do("CONFIG", "SET", "save", "")
	c.Do("SET", "k", "v4")
	shutdown(t, sp, "SAVE")
	if r := loadInRedis(t, path).Do("GET", "k"); r.Str != "v4" {
		t.Fatalf("after SHUTDOWN SAVE: GET k = %s", r.String())
	}
	sp.Restart()
	c = sp.Conn(t)
	c.Do("SET", "k", "v5")
	sp.Term()
	if r := loadInRedis(t, path).Do("GET", "k"); r.Str != "v5" {
		t.Fatalf("after SIGTERM with save points: GET k = %s", r.String())
	}
	// With save points, FLUSHALL rewrites the file without keys, as Redis.
	sp.Restart()
	c = sp.Conn(t)
	c.Do("FLUSHALL")
	if r := loadInRedis(t, path).Do("DBSIZE"); r.Int != 0 {
		t.Fatalf("after FLUSHALL with save points: the file still holds %d keys", r.Int)
	}
}
