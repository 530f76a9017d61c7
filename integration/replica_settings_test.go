package integration

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// The replica's refusals and reports compared with a redis-server in the
// same state: both replicas of a master that is not there (the link stays
// down), then of a master that needs a password.

// infoFieldNames is an INFO section's field names, in order, without the
// values that depend on the instance (IDs, offsets, times).
func infoFieldNames(t *testing.T, c *harness.Conn, section string) []string {
	t.Helper()
	var names []string
	for _, line := range strings.Split(c.Do("INFO", section).Str, "\r\n") {
		if name, _, ok := strings.Cut(line, ":"); ok {
			names = append(names, name)
		}
	}
	return names
}

func TestReplicaLinkDownLikeRedis(t *testing.T) {
	sp := harness.StartSpillway(t, "")
	rs := harness.StartRedis(t)
	spc, rc := sp.Conn(t), rs.Conn(t)
	dead := strconv.Itoa(harness.FreePort(t)) // nothing listens there
	for _, c := range []*harness.Conn{spc, rc} {
		c.Do("SET", "k", "v")
	}
	cases := [][]string{
		{"REPLICAOF", "127.0.0.1", "70000"},
		{"REPLICAOF", "127.0.0.1", "x"},
		{"REPLICAOF", "127.0.0.1", dead},
		{"REPLICAOF", "127.0.0.1", dead}, // already
		{"SET", "k", "w"},
		{"GET", "k"},
		{"EVAL", "return redis.call('set', KEYS[1], 'x')", "1", "k"},
		{"CONFIG", "SET", "replica-read-only", "no"},
		{"SET", "k2", "v2"},
		{"CONFIG", "SET", "replica-read-only", "yes"},
		{"CONFIG", "SET", "replica-serve-stale-data", "no"},
		{"GET", "k"},
		{"PING"},
		{"INFO", "keyspace"},
		{"MULTI"}, {"GET", "k"}, {"EXEC"},
		{"EVAL", "return redis.call('get', KEYS[1])", "1", "k"},
		{"EVAL", "#!lua flags=no-writes\nreturn 1", "0"},
		{"EVAL", "#!lua flags=allow-stale,no-writes\nreturn redis.call('echo', 'x')", "0"},
		{"CONFIG", "SET", "replica-serve-stale-data", "yes"},
		{"MULTI"}, {"GET", "k"}, {"EXEC"},
		{"PSYNC", "?", "-1"},
		{"WAIT", "1", "10"},
		{"ROLE"},
	}
	for _, cmd := range cases {
		w, g := rc.Do(cmd...), spc.Do(cmd...)
		if w.String() != g.String() {
			t.Errorf("%v: got %s, want %s", cmd, g.String(), w.String())
		}
	}
	wi, gi := infoOf(t, rc, "replication"), infoOf(t, spc, "replication")
	for _, k := range []string{"role", "master_host", "master_port", "master_link_status",
		"master_last_io_seconds_ago", "master_sync_in_progress", "master_link_down_since_seconds",
		"slave_priority", "slave_read_only", "replica_announced", "connected_slaves"} {
		if wi[k] != gi[k] {
			t.Errorf("INFO replication %s: got %q, want %q", k, gi[k], wi[k])
		}
	}
	if w, g := infoFieldNames(t, rc, "replication"), infoFieldNames(t, spc, "replication"); !slices.Equal(w, g) {
		t.Errorf("INFO replication fields:\n got %v\nwant %v", g, w)
	}
	// Promotion: a master again, its data kept, writes accepted.
	for _, cmd := range [][]string{{"REPLICAOF", "NO", "ONE"}, {"REPLICAOF", "NO", "ONE"}, {"SET", "k3", "v"}, {"DBSIZE"}, {"ROLE"}} {
		w, g := rc.Do(cmd...), spc.Do(cmd...)
		if cmd[0] == "ROLE" {
			w, g = w.Elems[0], g.Elems[0]
		}
		if w.String() != g.String() {
			t.Errorf("%v: got %s, want %s", cmd, g.String(), w.String())
		}
	}
	wi, gi = infoOf(t, rc, "replication"), infoOf(t, spc, "replication")
	if gi["master_replid2"] == strings.Repeat("0", 40) || gi["second_repl_offset"] != "1" ||
		gi["second_repl_offset"] != wi["second_repl_offset"] {
		t.Errorf("after REPLICAOF NO ONE: %v (redis-server: %v)", gi, wi)
	}
}

func TestReplicaMasterAuth(t *testing.T) {
	master := harness.StartRedis(t, "--requirepass", "secret", "--repl-diskless-sync-delay", "0")
	mc := master.Conn(t)
	mc.Do("AUTH", "secret")
	mc.Do("ACL", "SETUSER", "repl", "on", ">replpass", "+@all", "~*")
	mc.Do("HSET", "h", "f", "v")
	sp := harness.StartSpillway(t, "")
	spc := sp.Conn(t)
	mport := strconv.Itoa(master.Port())

	// A wrong password: the link never comes up.
	spc.Do("CONFIG", "SET", "masterauth", "wrong")
	spc.Do("REPLICAOF", "127.0.0.1", mport)
	time.Sleep(1500 * time.Millisecond) // a few attempts (one a second)
	if st := infoOf(t, spc, "replication")["master_link_status"]; st != "down" {
		t.Errorf("with a wrong masterauth: master_link_status %s", st)
	}
	// masteruser and masterauth: the link comes up with the data.
	spc.Do("CONFIG", "SET", "masteruser", "repl")
	spc.Do("CONFIG", "SET", "masterauth", "replpass")
	waitOffsets(t, mc, spc)
	if r := spc.Do("HGET", "h", "f"); r.Str != "v" {
		t.Errorf("HGET after the sync: %s", r.String())
	}
	mc.Do("SET", "later", "1")
	waitOffsets(t, mc, spc)
	if r := spc.Do("GET", "later"); r.Str != "1" {
		t.Errorf("GET of a streamed write: %s", r.String())
	}
	// The master lists Spillway with its listening port.
	if s := infoOf(t, mc, "replication")["slave0"]; !strings.Contains(s, "port="+strconv.Itoa(sp.Port())) ||
		!strings.Contains(s, "state=online") {
		t.Errorf("master's slave0: %s", s)
	}
	// The master client is listed (flags=M, type master, the master's
	// address); killing it drops the link, which resumes partially.
	list := spc.Do("CLIENT", "LIST", "TYPE", "master").Str
	if !strings.Contains(list, "addr=127.0.0.1:"+mport+" ") || !strings.Contains(list, " flags=M ") ||
		strings.Count(list, "\n") != 1 {
		t.Errorf("CLIENT LIST TYPE master: %q", list)
	}
	partial := atoi(infoOf(t, mc, "stats")["sync_partial_ok"])
	if r := spc.Do("CLIENT", "KILL", "TYPE", "master"); r.Int != 1 {
		t.Errorf("CLIENT KILL TYPE master: %s", r.String())
	}
	mc.Do("SET", "after-kill", "1")
	for i := 0; i < 200 && atoi(infoOf(t, mc, "stats")["sync_partial_ok"]) == partial; i++ {
		time.Sleep(25 * time.Millisecond)
	}
	waitOffsets(t, mc, spc)
	if got := atoi(infoOf(t, mc, "stats")["sync_partial_ok"]); got != partial+1 {
		t.Errorf("after CLIENT KILL TYPE master: sync_partial_ok %d, want %d", got, partial+1)
	}
	if r := spc.Do("GET", "after-kill"); r.Str != "1" {
		t.Errorf("GET after the link came back: %s", r.String())
	}
	if r := spc.Do("REPLICAOF", "127.0.0.1", mport); r.Str != "OK Already connected to specified master" {
		t.Errorf("REPLICAOF of the same master: %s", r.String())
	}
}

// TestReplicaExpiryFollowsMaster: a replica decides no expiry itself. A key
// whose time passed on a master that has not removed it yet (active
// expiry off, not read) still counts on the replica, where reads find it
// absent; the master's DEL removes it. Spillway and a redis-server replica
// of the same master answer alike at each step.
func TestReplicaExpiryFollowsMaster(t *testing.T) {
	master := harness.StartRedis(t, "--enable-debug-command", "yes", "--repl-diskless-sync-delay", "0")
	mc := master.Conn(t)
	mc.Do("DEBUG", "SET-ACTIVE-EXPIRE", "0")
	mc.Do("SET", "old", "v", "PX", "100") // expires after the full sync's RDB
	port := strconv.Itoa(master.Port())
	sp := harness.StartSpillway(t, "", "--replicaof", "127.0.0.1", port)
	rs := harness.StartRedis(t, "--replicaof", "127.0.0.1", port)
	spc, rc := sp.Conn(t), rs.Conn(t)
	waitOffsets(t, mc, spc, rc)
	mc.Do("SET", "k", "v", "PX", "100")
	mc.Do("HSET", "h", "f", "v")
	mc.Do("PEXPIRE", "h", "100")
	waitOffsets(t, mc, spc, rc)
	time.Sleep(300 * time.Millisecond) // past the expiries; the master removed nothing
	steps := [][]string{{"DBSIZE"}, {"GET", "k"}, {"HGET", "h", "f"}, {"EXISTS", "old"}, {"DBSIZE"}}
	compare := func(when string) {
		t.Helper()
		for _, cmd := range steps {
			if w, g := rc.Do(cmd...), spc.Do(cmd...); w.String() != g.String() {
				t.Errorf("%s %v: got %s, want %s", when, cmd, g.String(), w.String())
			}
		}
	}
	compare("before the master's DELs")
	if n := spc.Do("DBSIZE"); n.Int != 3 {
		t.Errorf("DBSIZE before the master's DELs: %s, want 3 (keys %s)", n.String(), spc.Do("KEYS", "*").String())
	}
	mc.Do("GET", "k") // the master expires k and propagates its DEL
	mc.Do("DEBUG", "SET-ACTIVE-EXPIRE", "1")
	waitOffsets(t, mc, spc, rc)
	for i := 0; i < 100 && mc.Do("DBSIZE").Int != 0; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	waitOffsets(t, mc, spc, rc)
	compare("after the master's DELs")
	if n := spc.Do("DBSIZE"); n.Int != 0 {
		t.Errorf("DBSIZE after the master's DELs: %s, want 0", n.String())
	}
}

// TestReplicaOfRedisReplica: Spillway replicating a redis-server replica
// (itself relaying its master's stream) starts applying that stream in the
// database the RDB's repl-stream-db names: the master selected it before
// Spillway synced and sends no SELECT after.
func TestReplicaOfRedisReplica(t *testing.T) {
	master := harness.StartRedis(t, "--repl-diskless-sync-delay", "0")
	mc := master.Conn(t)
	mc.Do("SELECT", "3")
	mc.Do("SET", "a", "1")
	mid := harness.StartRedis(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port()),
		"--repl-diskless-sync-delay", "0")
	midc := mid.Conn(t)
	waitOffsets(t, mc, midc)
	mc.Do("SET", "b", "2") // the master's stream is in database 3 from now on
	waitOffsets(t, mc, midc)
	sp := harness.StartSpillway(t, "", "--replicaof", "127.0.0.1", strconv.Itoa(mid.Port()))
	spc := sp.Conn(t)
	waitOffsets(t, mc, midc, spc)
	mc.Do("SET", "c", "3") // no SELECT in the stream: database 3
	waitOffsets(t, mc, midc, spc)
	spc.Do("SELECT", "3")
	if r := spc.Do("MGET", "a", "b", "c"); len(r.Elems) != 3 || r.Elems[2].Str != "3" || r.Elems[0].Str != "1" {
		t.Errorf("database 3 on Spillway: %s", r.String())
	}
	spc.Do("SELECT", "0")
	if n := spc.Do("DBSIZE"); n.Int != 0 {
		t.Errorf("database 0 on Spillway holds %d keys", n.Int)
	}
}

// TestReplicaTakesMastersTrimForms: a master propagates an approximate
// stream trim given a LIMIT as its exact form with the LIMIT kept (XADD
// ... MAXLEN = n LIMIT l), which a client may not send but a replica
// applies (Redis's mustObeyClient): Spillway's replica must too, and hold
// the same stream as a redis-server replica.
func TestReplicaTakesMastersTrimForms(t *testing.T) {
	master := harness.StartRedis(t, "--repl-diskless-sync-delay", "0")
	mc := master.Conn(t)
	port := strconv.Itoa(master.Port())
	sp := harness.StartSpillway(t, "", "--replicaof", "127.0.0.1", port)
	rs := harness.StartRedis(t, "--replicaof", "127.0.0.1", port)
	spc, rc := sp.Conn(t), rs.Conn(t)
	waitOffsets(t, mc, spc, rc)
	for i := range 300 {
		mc.Do("XADD", "trim:s", "MAXLEN", "~", "50", "LIMIT", "200", "*", "f", strconv.Itoa(i))
	}
	mc.Do("XTRIM", "trim:s", "MINID", "~", "0-1", "LIMIT", "100")
	waitOffsets(t, mc, spc, rc)
	for _, cmd := range [][]string{{"XLEN", "trim:s"}, {"XRANGE", "trim:s", "-", "+", "COUNT", "3"}, {"XRANGE", "trim:s", "-", "+"}} {
		if w, g := rc.Do(cmd...), spc.Do(cmd...); w.String() != g.String() {
			t.Errorf("%v: spillway replica %s, redis replica %s", cmd, g.String(), w.String())
		}
	}
	if r := spc.Do("INFO", "replication"); !strings.Contains(r.Str, "master_link_status:up") {
		t.Errorf("the link went down (a refused command?): %s", r.Str)
	}
}
