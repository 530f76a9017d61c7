package rdbfile_test

import (
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/coldstore"
	"github.com/spillway/spillway/integration/harness"
	"github.com/spillway/spillway/proxy/commands"
	"github.com/spillway/spillway/proxy/config"
	"github.com/spillway/spillway/proxy/rdbfile"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/tiering"
)

// openLocal opens an engine in a temporary directory and a server over it
// with the command library, not listening. budget is the hot tier's.
func openLocal(t *testing.T, budget int64) (*server.Server, *tiering.Engine) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cold, err := coldstore.Open(coldstore.Options{Dir: t.TempDir(), CacheBytes: 1 << 20, MemTableBytes: 1 << 20, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	e, err := tiering.Open(cold, tiering.Options{Databases: cfg.Databases(), HotBudget: budget,
		PromoteMinHits: cfg.PromoteMinHits(), ColdReadMaxBytes: cfg.ColdReadMaxBytes(), Logger: log})
	if err != nil {
		cold.Close()
		t.Fatal(err)
	}
	s := server.NewServer(cfg, e, log, commands.Table())
	t.Cleanup(func() {
		s.Close()
		e.Close()
		cold.Close()
	})
	return s, e
}

// redisRDB returns the RDB file of a real redis-server holding dataset,
// and a connection to that server.
func redisRDB(t *testing.T, args ...string) ([]byte, *harness.Conn) {
	t.Helper()
	ref := harness.StartRedis(t, append([]string{"--enable-debug-command", "yes"}, args...)...)
	rc := ref.Conn(t)
	for _, c := range dataset(time.Now().Add(time.Hour).UnixMilli()) {
		if r := rc.Do(c...); r.IsError() {
			t.Fatalf("redis %v: %s", c[:min(len(c), 3)], r.Str)
		}
	}
	if r := rc.Do("SAVE"); r.IsError() {
		t.Fatalf("SAVE: %s", r.Str)
	}
	file, err := os.ReadFile(filepath.Join(rc.Do("CONFIG", "GET", "dir").Elems[1].Str, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	return file, rc
}

// loadInRedis starts a redis-server on file.
func loadInRedis(t *testing.T, file []byte) *harness.Conn {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), file, 0o644); err != nil {
		t.Fatal(err)
	}
	return harness.StartRedis(t, "--enable-debug-command", "yes", "--dir", dir, "--dbfilename", "dump.rdb").Conn(t)
}

// snapshotOf takes a snapshot of e, closed at the test's end.
func snapshotOf(t *testing.T, e *tiering.Engine) *tiering.Snapshot {
	t.Helper()
	var snap *tiering.Snapshot
	if err := e.View(func(tx *tiering.Tx) (err error) {
		snap, err = tx.Snapshot()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snap.Close() })
	return snap
}

// dataset returns commands building every type in small and large forms
// (streams with consumer groups too), in several databases, with expiries
// (absolute, at expireAt unix ms), and a function library.
func dataset(expireAt int64) [][]string {
	r := rand.New(rand.NewPCG(1, 2))
	var cmds [][]string
	add := func(args ...string) { cmds = append(cmds, args) }
	long := func(n int) string { return strings.Repeat("abcdefgh", n/8+1)[:n] }
	random := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return string(b)
	}
	add("FUNCTION", "LOAD", "#!lua name=rdblib\nredis.register_function('rdbf', function(keys, args) return 1 end)")
	for _, db := range []string{"0", "1", "7"} {
		add("SELECT", db)
		// strings: ints, short, compressible, random, empty
		add("SET", "s:int", "12345")
		add("SET", "s:negint", "-70000")
		add("SET", "s:bigint", "9223372036854775807")
		add("SET", "s:short", "hello "+db)
		add("SET", "s:long", long(100000))
		add("SET", "s:bin", random(3000))
		add("SET", "s:empty", "")
		add("SET", "s:exp", "v")
		add("PEXPIREAT", "s:exp", strconv.FormatInt(expireAt, 10))
		// hashes: listpack, too many fields, a long value
		add("HSET", "h:small", "a", "1", "b", "two", "c", "-3", "d", "3.5")
		args := []string{"HSET", "h:big"}
		for i := range 700 {
			args = append(args, "f"+strconv.Itoa(i), strconv.Itoa(i*i))
		}
		add(args...)
		add("HSET", "h:longval", "f", long(65), "g", "x")
		add("PEXPIREAT", "h:longval", strconv.FormatInt(expireAt+1, 10))
		// sets: intset, intset too big, strings, mixed widths
		add("SADD", "set:ints", "1", "-2", "300", "70000")
		add("SADD", "set:wide", "1", "5000000000", "-5000000000")
		args = []string{"SADD", "set:manyints"}
		for i := range 600 {
			args = append(args, strconv.Itoa(i*3-100))
		}
		add(args...)
		add("SADD", "set:strs", "a", "b", "c", "0x10", "007")
		args = []string{"SADD", "set:bigstrs"}
		for i := range 800 {
			args = append(args, "m"+strconv.Itoa(i))
		}
		add(args...)
		// sorted sets: listpack (odd scores), long member, many members
		add("ZADD", "z:small", "1", "a", "-2.5", "b", "inf", "c", "-inf", "d", "0", "e", "3.14159265358979", "f", "1e300", "g", "4611686018427387904", "h")
		add("ZADD", "z:longmember", "1", long(100), "2", "x")
		args = []string{"ZADD", "z:big"}
		for i := range 300 {
			args = append(args, strconv.FormatFloat(float64(i)/7, 'g', -1, 64), "m"+strconv.Itoa(i))
		}
		add(args...)
		add("PEXPIREAT", "z:big", strconv.FormatInt(expireAt+2, 10))
		// lists: one small node, many elements, a big element
		add("RPUSH", "l:small", "a", "1", "-100", "5000", "x y", long(70))
		// every listpack integer width, and strings that only look like one
		add("RPUSH", "l:ints", "127", "128", "-4096", "4096", "32767", "-32768", "8388607", "-8388608",
			"2147483647", "-2147483648", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
			"007", "-0", "+1", "")
		args = []string{"RPUSH", "l:big"}
		for i := range 5000 {
			args = append(args, "e"+strconv.Itoa(i))
		}
		add(args...)
		add("LPUSH", "l:bigelem", long(10000), "small")
		// streams: several nodes, a group with pending entries and
		// consumers, an empty group
		for i := range 250 {
			add("XADD", "x:s", strconv.Itoa(i+1)+"-1", "f", strconv.Itoa(i), "g", long(i%40))
		}
		add("XDEL", "x:s", "3-1", "120-1")
		add("XGROUP", "CREATE", "x:s", "g1", "0")
		add("XGROUP", "CREATE", "x:s", "g2", "$")
		add("XREADGROUP", "GROUP", "g1", "alice", "COUNT", "5", "STREAMS", "x:s", ">")
		add("XREADGROUP", "GROUP", "g1", "bob", "COUNT", "3", "STREAMS", "x:s", ">")
		add("XACK", "x:s", "g1", "2-1")
		add("PEXPIREAT", "l:bigelem", strconv.FormatInt(expireAt+3, 10))
	}
	return cmds
}

func TestWriteLoadsInRedis(t *testing.T) {
	for _, mode := range []struct {
		name   string
		budget int64
		plain  bool
	}{{"hot", 256 << 20, false}, {"cold", 0, false}, {"uncompressed-nochecksum", 256 << 20, true}} {
		t.Run(mode.name, func(t *testing.T) { testWriteLoads(t, mode.budget, mode.plain) })
	}
}

func testWriteLoads(t *testing.T, budget int64, plain bool) {
	ref := harness.StartRedis(t, "--enable-debug-command", "yes")
	rc := ref.Conn(t)
	s, e := openLocal(t, budget)
	l := s.NewLocal()
	defer l.Close()
	expireAt := time.Now().Add(time.Hour).UnixMilli()
	for _, c := range dataset(expireAt) {
		args := make([][]byte, len(c))
		for i, a := range c {
			args[i] = []byte(a)
		}
		if out := l.Do(args...); len(out) > 0 && out[0] == '-' {
			t.Fatalf("spillway %v: %s", c[:min(len(c), 3)], out)
		}
		if r := rc.Do(c...); r.IsError() {
			t.Fatalf("redis %v: %s", c[:min(len(c), 3)], r.Str)
		}
	}
	if budget == 0 {
		e.SetHotBudget(0) // everything cold: the write streams from the store
	}

	var snap *tiering.Snapshot
	if err := e.View(func(tx *tiering.Tx) (err error) {
		snap, err = tx.Snapshot()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// A write after the snapshot is not in the file.
	l.Do([]byte("SET"), []byte("after"), []byte("snapshot"))
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	opts := rdbfile.DefaultOptions()
	opts.Functions = functionRecords(t, l)
	opts.NoCompression, opts.NoChecksum = plain, plain
	if err := rdbfile.Write(f, snap, opts); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}

	loaded := harness.StartRedis(t, "--enable-debug-command", "yes", "--dir", dir, "--dbfilename", "dump.rdb")
	lc := loaded.Conn(t)
	compareRedis(t, rc, lc)
}

// functionRecords returns the FUNCTION DUMP payload of l without its footer.
func functionRecords(t *testing.T, l *server.Local) []byte {
	t.Helper()
	out := string(l.Do([]byte("FUNCTION"), []byte("DUMP")))
	// $<n>\r\n<payload>\r\n
	i := strings.Index(out, "\r\n")
	n, err := strconv.Atoi(out[1:i])
	if err != nil || out[0] != '$' {
		t.Fatalf("FUNCTION DUMP: %q", out)
	}
	payload := out[i+2 : i+2+n]
	return []byte(payload[:len(payload)-10])
}

// compareRedis checks that two redis-servers hold the same dataset: the
// same DEBUG DIGEST, the same keys in every database, and per key the same
// type, encoding, value digest and expiry; and the same functions.
func compareRedis(t *testing.T, want, got *harness.Conn) {
	t.Helper()
	wd, gd := want.Do("DEBUG", "DIGEST"), got.Do("DEBUG", "DIGEST")
	if wd.IsError() || gd.IsError() || wd.Str != gd.Str || strings.Trim(wd.Str, "0") == "" {
		t.Errorf("DEBUG DIGEST: loaded %s, reference %s", gd.String(), wd.String())
	}
	for db := range 16 {
		d := strconv.Itoa(db)
		want.Do("SELECT", d)
		got.Do("SELECT", d)
		wk, gk := keysOf(want), keysOf(got)
		if !slices.Equal(wk, gk) {
			t.Errorf("db %d keys: loaded %v, reference %v", db, gk, wk)
			continue
		}
		for _, k := range wk {
			checks := [][]string{{"TYPE", k}, {"OBJECT", "ENCODING", k}, {"DEBUG", "DIGEST-VALUE", k}, {"PEXPIRETIME", k}}
			// Where the encoding fixes the order (strings, lists and their
			// quicklist nodes, sorted sets, intsets), the loaded value's
			// DUMP, which is its RDB form, is byte for byte the reference's.
			if typ, enc := want.Do("TYPE", k).Str, want.Do("OBJECT", "ENCODING", k).Str; typ == "string" || typ == "list" || typ == "zset" || enc == "intset" {
				checks = append(checks, []string{"DUMP", k})
			}
			for _, c := range checks {
				w, g := want.Do(c...), got.Do(c...)
				if w.IsError() || g.IsError() || w.String() != g.String() {
					t.Errorf("db %d %v: loaded %s, reference %s", db, c, g.String(), w.String())
				}
			}
		}
	}
	if w, g := want.Do("FUNCTION", "LIST", "WITHCODE").String(), got.Do("FUNCTION", "LIST", "WITHCODE").String(); w != g {
		t.Errorf("FUNCTION LIST: loaded %s, reference %s", g, w)
	}
}

func keysOf(c *harness.Conn) []string {
	r := c.Do("KEYS", "*")
	var keys []string
	for _, e := range r.Elems {
		keys = append(keys, e.Str)
	}
	slices.Sort(keys)
	return keys
}
