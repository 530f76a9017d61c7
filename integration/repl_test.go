package integration

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// Spillway as a replication master of real redis-servers: a
// `redis-server --replicaof` pointed at Spillway syncs (the RDB of a
// snapshot, then the command stream) and holds the same data, resumes with
// a partial resync after a restart, counts for WAIT and for
// min-replicas-to-write; redis-cli --replica and --rdb work against it.

// startReplica starts a redis-server replicating from master, saving its
// RDB (with the replication ID and offset) on SHUTDOWN SAVE.
func startReplica(t *testing.T, master *harness.Server) *harness.Server {
	t.Helper()
	return harness.StartRedis(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port()),
		"--enable-debug-command", "yes")
}

// infoOf reads an INFO section.
func infoOf(t *testing.T, c *harness.Conn, section string) map[string]string {
	t.Helper()
	m, err := harness.Info(c, section)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// waitCaughtUp waits (at most 20 s) until the replica's link is up and it
// has processed the master's whole stream.
func waitCaughtUp(t *testing.T, master, replica *harness.Conn) {
	t.Helper()
	var m, r map[string]string
	for range 400 {
		m, r = infoOf(t, master, "replication"), infoOf(t, replica, "replication")
		if r["master_link_status"] == "up" && r["master_sync_in_progress"] == "0" &&
			r["master_repl_offset"] == m["master_repl_offset"] {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("replica never caught up: master offset %s, replica %v", m["master_repl_offset"], r)
}

// replWorkload writes every type through c, with relative and absolute
// expiries, rewrites (INCRBYFLOAT, SPOP, GETEX...), a script, a function,
// MULTI/EXEC across databases and a served blocking pop (from blocker).
func replWorkload(t *testing.T, c, blocker *harness.Conn, tag string) {
	t.Helper()
	k := func(s string) string { return tag + ":" + s }
	cmds := [][]string{
		{"SET", k("s"), "v"}, {"SET", k("ex"), "v", "EX", "1000"}, {"SETEX", k("setex"), "500", "v"},
		{"PSETEX", k("psetex"), "900000", "v"}, {"SET", k("pxat"), "v", "PXAT", "4102444800000"},
		{"INCRBYFLOAT", k("f"), "1.1"}, {"INCRBYFLOAT", k("f"), "3.0e2"}, {"INCR", k("n")},
		{"APPEND", k("s"), "-more"}, {"GETSET", k("gs"), "x"}, {"GETEX", k("s"), "EX", "800"},
		{"SET", k("gd"), "v"}, {"GETDEL", k("gd")}, {"SETRANGE", k("sr"), "3", "abc"},
		{"HSET", k("h"), "a", "1", "b", "2", "c", "3"}, {"HINCRBYFLOAT", k("h"), "a", "0.25"},
		{"HINCRBY", k("h"), "b", "7"}, {"HDEL", k("h"), "c"},
		{"RPUSH", k("l"), "a", "b", "c", "d", "e", "f"}, {"LPOP", k("l")}, {"RPOPLPUSH", k("l"), k("l2")},
		{"LMPOP", "1", k("l"), "LEFT", "COUNT", "2"}, {"LINSERT", k("l"), "BEFORE", "e", "x"},
		{"SADD", k("set"), "a", "b", "c", "d", "e", "f", "g"}, {"SPOP", k("set")}, {"SPOP", k("set"), "2"},
		{"SMOVE", k("set"), k("set2"), "a"}, {"SADD", k("ints"), "1", "2", "3"},
		{"ZADD", k("z"), "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"}, {"ZINCRBY", k("z"), "10", "a"},
		{"ZPOPMIN", k("z")}, {"ZMPOP", "1", k("z"), "MAX", "COUNT", "2"},
		{"SET", k("e1"), "v"}, {"EXPIRE", k("e1"), "700"}, {"PEXPIRE", k("h"), "600000"},
		{"EXPIREAT", k("l"), "4102444800"}, {"SET", k("gone"), "v"}, {"EXPIRE", k("gone"), "-5"},
		{"SET", k("p"), "v", "EX", "100"}, {"PERSIST", k("p")},
		{"EVAL", "redis.call('set', KEYS[1], ARGV[1]) redis.call('incrbyfloat', KEYS[2], '2.5') " +
			"redis.call('expire', KEYS[1], 100) return 1", "2", k("ev1"), k("ev2"), "val"},
		{"FCALL", "replset", "1", k("fc"), "fv"},
		{"MULTI"}, {"SET", k("m1"), "1"}, {"SELECT", "3"}, {"SET", k("m3"), "3"}, {"SADD", k("m3s"), "x"},
		{"SELECT", "0"}, {"INCR", k("m1")}, {"EXEC"},
		{"SELECT", "5"}, {"HSET", k("db5"), "f", "v"}, {"SELECT", "0"},
	}
	for _, cmd := range cmds {
		if r := c.Do(cmd...); r.Type == '-' {
			t.Fatalf("%v: %s", cmd, r.String())
		}
	}
	if err := blocker.Send("BLPOP", k("bl"), "10"); err != nil || blocker.Flush() != nil {
		t.Fatalf("BLPOP: %v", err)
	}
	waitBlocked(t, c, 1)
	c.Do("RPUSH", k("bl"), "x", "y")
	if r := blocker.Read(); len(r.Elems) != 2 || r.Elems[1].Str != "x" {
		t.Fatalf("BLPOP served %s", r.String())
	}
	// Keys with short lives: the sweeper or a read removes them, and the
	// replica must see their DELs (a replica never expires keys itself).
	for i := range 5 {
		c.Do("SET", k("short"+strconv.Itoa(i)), "v", "PX", "30")
	}
	time.Sleep(100 * time.Millisecond)
	c.Do("GET", k("short0"))
}

// TestReplicationRedisReplica: a redis-server replica of Spillway holds
// the same keys, values and expiries after a full sync of existing data
// and after the stream; WAIT counts it; killed and restarted it resumes
// with a partial resync; min-replicas-to-write refuses writes once it is
// gone.
func TestReplicationRedisReplica(t *testing.T) {
	sp := harness.StartSpillway(t, "")
	c := sp.Conn(t)
	blocker := sp.Conn(t)
	c.Do("FUNCTION", "LOAD", "#!lua name=repllib\nredis.register_function('replset', "+
		"function(keys, args) return redis.call('set', keys[1], args[1]) end)")
	replWorkload(t, c, blocker, "before") // the RDB of the full sync carries these

	rs := startReplica(t, sp)
	rc := rs.Conn(t)
	waitCaughtUp(t, c, rc)
	replWorkload(t, c, blocker, "after") // and the stream these
	waitDBSize(t, c, rc)
	waitCaughtUp(t, c, rc)
	sameDataset(t, c, rc, false)

	if r := c.Do("WAIT", "1", "5000"); r.Int != 1 {
		t.Errorf("WAIT 1 5000: got %s, want 1", r.String())
	}
	role := c.Do("ROLE")
	if len(role.Elems) != 3 || role.Elems[0].Str != "master" || len(role.Elems[2].Elems) != 1 ||
		role.Elems[2].Elems[0].Elems[1].Str != strconv.Itoa(rs.Port()) {
		t.Errorf("ROLE: %s", role.String())
	}
	m := infoOf(t, c, "replication")
	if m["role"] != "master" || m["connected_slaves"] != "1" || m["repl_backlog_active"] != "1" ||
		!strings.Contains(m["slave0"], "state=online") || !strings.Contains(m["slave0"], "port="+strconv.Itoa(rs.Port())) {
		t.Errorf("INFO replication: %v", m)
	}
	if list := c.Do("CLIENT", "LIST", "TYPE", "replica").Str; !strings.Contains(list, "flags=S") {
		t.Errorf("CLIENT LIST TYPE replica: %q", list)
	}

	// A restart of the replica: it saves its RDB with the replication ID
	// and offset, and asks for the rest of the stream.
	rc.Send("SHUTDOWN", "SAVE")
	rc.Flush()
	if !rs.WaitExit(10 * time.Second) {
		t.Fatal("replica did not exit after SHUTDOWN SAVE")
	}
	c.Do("SET", "while-down", "1")
	c.Do("HSET", "while-down-h", "f", "v")
	rs.Restart()
	rc = rs.Conn(t)
	waitCaughtUp(t, c, rc)
	sameDataset(t, c, rc, false)
	st := infoOf(t, c, "stats")
	if st["sync_full"] != "1" || st["sync_partial_ok"] != "1" {
		t.Errorf("after the restart: sync_full %s, sync_partial_ok %s; want 1 and 1 (+CONTINUE)",
			st["sync_full"], st["sync_partial_ok"])
	}

	// CLIENT KILL TYPE replica drops it; it reconnects and continues.
	if r := c.Do("CLIENT", "KILL", "TYPE", "replica"); r.Int != 1 {
		t.Errorf("CLIENT KILL TYPE replica: %s", r.String())
	}
	c.Do("SET", "after-kill", "1")
	for range 200 {
		if infoOf(t, c, "stats")["sync_partial_ok"] == "2" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitCaughtUp(t, c, rc)
	if r := rc.Do("GET", "after-kill"); r.Str != "1" {
		t.Errorf("after CLIENT KILL the replica has after-kill = %s", r.String())
	}
	if st := infoOf(t, c, "stats"); st["sync_full"] != "1" || st["sync_partial_ok"] != "2" {
		t.Errorf("after CLIENT KILL: sync_full %s, sync_partial_ok %s; want 1 and 2", st["sync_full"], st["sync_partial_ok"])
	}

	// min-replicas-to-write: accepted with the replica, refused without.
	c.Do("CONFIG", "SET", "min-replicas-to-write", "1")
	if r := c.Do("SET", "guarded", "1"); r.Str != "OK" {
		t.Errorf("SET with a good replica: %s", r.String())
	}
	rs.Kill9()
	refused := false
	for range 100 {
		if r := c.Do("SET", "guarded", "2"); strings.HasPrefix(r.Str, "NOREPLICAS") {
			refused = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !refused {
		t.Error("writes were not refused with NOREPLICAS once the replica was gone")
	}
	if r := c.Do("GET", "guarded"); r.Str != "1" && r.Str != "2" {
		t.Errorf("reads must go on: GET %s", r.String())
	}
	c.Do("CONFIG", "SET", "min-replicas-to-write", "0")
	if r := c.Do("WAIT", "1", "100"); r.Int != 0 {
		t.Errorf("WAIT with the replica gone: %s", r.String())
	}
}

// waitDBSize waits (at most 10 s) until every database of the replica
// holds as many keys as the master's: the DELs of expired keys arrived.
func waitDBSize(t *testing.T, master, replica *harness.Conn) {
	t.Helper()
	var mk, rk map[string]string
	for range 200 {
		mk, rk = infoOf(t, master, "keyspace"), infoOf(t, replica, "keyspace")
		same := len(mk) == len(rk)
		for db, v := range mk {
			keys, _, _ := strings.Cut(v, ",")
			rkeys, _, _ := strings.Cut(rk[db], ",")
			same = same && keys == rkeys
		}
		if same {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("keyspaces differ: master %v, replica %v", mk, rk)
}

// TestReplicationNoReplica: with no replica ever attached, a plain client
// sees what a stand-alone redis-server shows: no backlog, offset 0, ROLE
// without replicas, WAIT answering 0.
func TestReplicationNoReplica(t *testing.T) {
	ref := harness.StartRedis(t).Conn(t)
	sp := harness.StartSpillway(t, "").Conn(t)
	for _, c := range []*harness.Conn{ref, sp} {
		c.Do("SET", "a", "1")
		c.Do("EXPIRE", "a", "100")
	}
	want, got := infoOf(t, ref, "replication"), infoOf(t, sp, "replication")
	for _, f := range []string{"role", "connected_slaves", "master_failover_state", "master_replid2",
		"master_repl_offset", "second_repl_offset", "repl_backlog_active", "repl_backlog_size",
		"repl_backlog_first_byte_offset", "repl_backlog_histlen"} {
		if want[f] != got[f] {
			t.Errorf("INFO replication %s: got %q, want %q", f, got[f], want[f])
		}
	}
	if len(got["master_replid"]) != 40 {
		t.Errorf("master_replid %q", got["master_replid"])
	}
	for _, cmd := range [][]string{{"ROLE"}, {"WAIT", "0", "0"}, {"WAIT", "1", "50"}, {"REPLICAOF", "NO", "ONE"},
		{"REPLCONF", "listening-port", "abc"}, {"REPLCONF", "foo", "bar"}, {"WAIT", "x", "0"}, {"WAIT", "1", "-1"},
		{"REPLCONF", "rdb-only", "2"}, {"REPLCONF", "rdb-filter-only", "functions keys"},
		{"REPLCONF", "capa", "eof", "capa", "psync2"}, {"REPLCONF", "listening-port"}} {
		if w, g := ref.Do(cmd...).String(), sp.Do(cmd...).String(); w != g {
			t.Errorf("%v: got %s, want %s", cmd, g, w)
		}
	}
	// REPLCONF ACK from a client that is not a replica gets no reply.
	for _, c := range []*harness.Conn{ref, sp} {
		c.Send("REPLCONF", "ACK", "10")
		if r := c.Do("PING"); r.Str != "PONG" {
			t.Errorf("REPLCONF ACK then PING: %s", r.String())
		}
	}
	if w, g := infoOf(t, ref, "stats")["sync_full"], infoOf(t, sp, "stats")["sync_full"]; w != g {
		t.Errorf("sync_full: got %s, want %s", g, w)
	}
}

// TestReplicationRedisCli: redis-cli --replica prints the stream Spillway
// sends, and redis-cli --rdb saves an RDB of its dataset that a
// redis-server loads.
func TestReplicationRedisCli(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed")
	}
	sp := harness.StartSpillway(t, "")
	c := sp.Conn(t)
	c.Do("SET", "k", "v")
	c.Do("RPUSH", "l", "a", "b")
	c.Do("FUNCTION", "LOAD", "#!lua name=clilib\nredis.register_function('clif', function(keys, args) return 1 end)")

	path := filepath.Join(t.TempDir(), "cli.rdb")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, "-p", strconv.Itoa(sp.Port()), "--rdb", path).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --rdb: %v\n%s", err, out)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("redis-cli --rdb wrote nothing: %v", err)
	}
	loaded := loadInRedis(t, path)
	sameDataset(t, c, loaded, false)

	// --functions-rdb asks for the functions only (rdb-filter-only).
	fpath := filepath.Join(t.TempDir(), "functions.rdb")
	if out, err := exec.CommandContext(ctx, cli, "-p", strconv.Itoa(sp.Port()), "--functions-rdb", fpath).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --functions-rdb: %v\n%s", err, out)
	}
	fl := loadInRedis(t, fpath)
	if n := fl.Do("DBSIZE").Int; n != 0 {
		t.Errorf("functions-only RDB holds %d keys", n)
	}
	if w, g := c.Do("FUNCTION", "LIST").String(), fl.Do("FUNCTION", "LIST").String(); w != g {
		t.Errorf("functions-only RDB: FUNCTION LIST %s, want %s", g, w)
	}

	cmd := exec.CommandContext(ctx, cli, "-p", strconv.Itoa(sp.Port()), "--replica")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout // its progress lines go to stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); cmd.Wait() }()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	// redis-cli prints "sync with master, discarding N bytes of bulk
	// transfer..." and "...done", then one line per command.
	c.Do("CONFIG", "SET", "repl-ping-replica-period", "3600")
	deadline := time.After(15 * time.Second)
	sent := false
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("redis-cli --replica ended before showing the write")
			}
			if strings.Contains(l, "done") && !sent {
				c.Do("SET", "streamed", "yes")
				sent = true
			}
			if strings.Contains(l, `"streamed"`) && strings.Contains(l, `"yes"`) {
				return
			}
		case <-deadline:
			t.Fatal("redis-cli --replica never showed SET streamed yes")
		}
	}
}

// TestReplicationColdData: a full resync of a dataset mostly on disk (a
// small maxmemory) sends every key, hot and cold, with its expiry; writes
// to cold keys go on being streamed.
func TestReplicationColdData(t *testing.T) {
	sp := harness.StartSpillway(t, "", "--maxmemory", "16mb")
	c := sp.Conn(t)
	val := strings.Repeat("x", 10000)
	for i := range 3000 {
		k := "cold:" + strconv.Itoa(i)
		if err := c.Send("SET", k, val+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			c.Send("PEXPIREAT", k, "4102444800000")
		}
	}
	for i := range 50 {
		args := []string{"HSET", "h:" + strconv.Itoa(i)}
		for f := range 200 {
			args = append(args, "f"+strconv.Itoa(f), val[:100])
		}
		c.Send(args...)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 3000 + 3000/100 + 50 {
		if r := c.Read(); r.Type == '-' {
			t.Fatalf("load: %s", r.String())
		}
	}
	if n, _ := strconv.Atoi(infoOf(t, c, "tiering")["cold_keys"]); n < 1500 {
		t.Fatalf("only %d cold keys: the test needs most of the data on disk", n)
	}
	rs := startReplica(t, sp)
	rc := rs.Conn(t)
	waitCaughtUp(t, c, rc)
	c.Do("APPEND", "cold:1", "-more")
	c.Do("HSET", "h:1", "new", "field")
	c.Do("DEL", "cold:2")
	waitCaughtUp(t, c, rc)
	sameDataset(t, c, rc, false)
}
