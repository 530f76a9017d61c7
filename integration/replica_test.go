package integration

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// Spillway as a REPLICA of a real redis-server, in a chain: redis-server
// master → Spillway (a small maxmemory: most of the data is cold) →
// redis-server replica of Spillway. The master holds data of every type and
// takes writes while Spillway syncs; once they stop, the last replica's
// DEBUG DIGEST is the master's and every key reads the same through
// Spillway. A kill -9 of Spillway resumes with a partial resync; Spillway
// refuses clients' writes (READONLY) and REPLICAOF NO ONE promotes it.

// replicaMasterLoad fills the master: a function library, the workload of
// every type, a few thousand keys larger together than Spillway's
// maxmemory, big collections, and keys in several databases.
func replicaMasterLoad(t *testing.T, c, blocker *harness.Conn) {
	t.Helper()
	if r := c.Do("FUNCTION", "LOAD", "#!lua name=repllib\nredis.register_function('replset', "+
		"function(keys, args) return redis.call('set', keys[1], args[1]) end)"); r.IsError() {
		t.Fatal(r.String())
	}
	replWorkload(t, c, blocker, "before")
	if r := c.Do("DEBUG", "POPULATE", "20000", "bulk", "200"); r.IsError() {
		t.Fatal(r.String())
	}
	big := []string{"RPUSH", "biglist"}
	hash := []string{"HSET", "bighash"}
	zset := []string{"ZADD", "bigzset"}
	set := []string{"SADD", "bigset"}
	for i := range 3000 {
		n := strconv.Itoa(i)
		big = append(big, "element-"+n)
		hash = append(hash, "field-"+n, strings.Repeat("v", i%50))
		zset = append(zset, strconv.Itoa(i*7%1000), "member-"+n)
		set = append(set, "m"+n)
	}
	for _, cmd := range [][]string{big, hash, zset, set} {
		if r := c.Do(cmd...); r.IsError() {
			t.Fatal(r.String())
		}
	}
	c.Do("SELECT", "7")
	c.Do("SET", "db7", "x", "EX", "100000")
	c.Do("SELECT", "0")
}

// masterWrites writes n commands of every type to addr (its own
// connection), across databases.
func masterWrites(t *testing.T, addr string, tag string, n int) {
	c, err := harness.Dial(addr)
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	for i := range n {
		k := tag + ":" + strconv.Itoa(i%97)
		s := strconv.Itoa(i)
		var cmd []string
		switch i % 9 {
		case 0:
			cmd = []string{"SET", k, s}
		case 1:
			cmd = []string{"INCR", k + ":n"}
		case 2:
			cmd = []string{"HSET", k + ":h", "f" + strconv.Itoa(i%13), s}
		case 3:
			cmd = []string{"RPUSH", k + ":l", s}
		case 4:
			cmd = []string{"ZADD", k + ":z", s, "m" + strconv.Itoa(i%31)}
		case 5:
			cmd = []string{"SADD", k + ":s", s}
		case 6:
			cmd = []string{"SELECT", strconv.Itoa(i % 4)}
		case 7:
			cmd = []string{"LPOP", k + ":l"}
		case 8:
			cmd = []string{"SET", "bulk:" + strconv.Itoa(i%20000), s, "EX", "100000"}
		}
		if r := c.Do(cmd...); r.IsError() && !strings.HasPrefix(r.Str, "WRONGTYPE") {
			t.Errorf("%v: %s", cmd, r.String())
			return
		}
	}
}

// waitOffsets waits (at most 30 s) until every replica's link is up and its
// master_repl_offset is the master's.
func waitOffsets(t *testing.T, master *harness.Conn, replicas ...*harness.Conn) {
	t.Helper()
	var m map[string]string
	var last []map[string]string
	for range 600 {
		m = infoOf(t, master, "replication")
		ok := true
		last = last[:0]
		for _, r := range replicas {
			ri := infoOf(t, r, "replication")
			last = append(last, ri)
			ok = ok && ri["master_link_status"] == "up" && ri["master_repl_offset"] == m["master_repl_offset"] &&
				ri["slave_repl_offset"] == m["master_repl_offset"]
		}
		if ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("replicas never caught up: master offset %s, replicas %v", m["master_repl_offset"], last)
}

// sameDigest compares two redis-servers' DEBUG DIGEST (OBJECT ENCODING,
// which sameDataset's digest mode compares too, differs between a master
// and any replica that loaded an RDB: an appended string is raw on the
// one, embstr on the other).
//
// The master's active expiry may remove a key (and send its DEL) between
// the check of the offsets and the digests: both are read again, at most
// 50 times, until they are taken at the same offset.
func sameDigest(t *testing.T, want, got *harness.Conn) {
	t.Helper()
	var wd, gd harness.Reply
	for range 50 {
		off := infoOf(t, want, "replication")["master_repl_offset"]
		wd, gd = want.Do("DEBUG", "DIGEST"), got.Do("DEBUG", "DIGEST")
		if infoOf(t, want, "replication")["master_repl_offset"] == off &&
			infoOf(t, got, "replication")["master_repl_offset"] == off {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if wd.IsError() || gd.IsError() || wd.Str != gd.Str || strings.Trim(wd.Str, "0") == "" {
		t.Errorf("DEBUG DIGEST: got %s, want %s\nkeyspace got %s\nwant %s", gd.String(), wd.String(),
			got.Do("INFO", "keyspace").Str, want.Do("INFO", "keyspace").Str)
	}
}

func TestReplicaChain(t *testing.T) {
	for _, diskless := range []string{"yes", "no"} {
		t.Run("diskless-"+diskless, func(t *testing.T) { replicaChain(t, diskless) })
	}
}

func replicaChain(t *testing.T, diskless string) {
	master := harness.StartRedis(t, "--enable-debug-command", "yes", "--repl-diskless-sync", diskless,
		"--repl-diskless-sync-delay", "0")
	mc := master.Conn(t)
	replicaMasterLoad(t, mc, master.Conn(t))

	// Writes go on while Spillway connects, loads and catches up.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		masterWrites(t, master.Addr(), "during", 3000)
	}()
	sp := harness.StartSpillway(t, "", "--maxmemory", "1mb",
		"--replicaof", "127.0.0.1", strconv.Itoa(master.Port()))
	sub := harness.StartRedis(t, "--enable-debug-command", "yes",
		"--replicaof", "127.0.0.1", strconv.Itoa(sp.Port()))
	wg.Wait()
	replWorkload(t, mc, master.Conn(t), "after")
	spc, subc := sp.Conn(t), sub.Conn(t)
	waitDBSize(t, mc, spc)
	waitOffsets(t, mc, spc, subc)

	info := infoOf(t, spc, "replication")
	for k, v := range map[string]string{"role": "slave", "master_host": "127.0.0.1",
		"master_port": strconv.Itoa(master.Port()), "master_link_status": "up", "master_sync_in_progress": "0",
		"slave_priority": "100", "slave_read_only": "1", "replica_announced": "1", "connected_slaves": "1",
		"master_replid": infoOf(t, mc, "replication")["master_replid"]} {
		if info[k] != v {
			t.Errorf("Spillway INFO replication %s: got %q, want %q (%v)", k, info[k], v, info)
		}
	}
	if role := spc.Do("ROLE"); len(role.Elems) != 5 || role.Elems[0].Str != "slave" ||
		role.Elems[2].Int != int64(master.Port()) || role.Elems[3].Str != "connected" ||
		strconv.FormatInt(role.Elems[4].Int, 10) != info["slave_repl_offset"] {
		t.Errorf("Spillway ROLE: %s", role.String())
	}
	if st := infoOf(t, spc, "stats"); st["evicted_keys"] != "0" && st["evicted_keys"] != "" {
		t.Logf("Spillway evicted_keys %s", st["evicted_keys"])
	}
	sameDigest(t, mc, subc)
	sameDataset(t, mc, subc, false)
	sameDataset(t, mc, spc, false)

	// Clients' writes are refused; reads are served.
	if r := spc.Do("SET", "x", "1"); r.Str != "READONLY You can't write against a read only replica." {
		t.Errorf("SET on the replica: %s", r.String())
	}
	if r := spc.Do("GET", "after:s"); r.IsError() || r.Str != mc.Do("GET", "after:s").Str {
		t.Errorf("GET on the replica: %s", r.String())
	}

	// kill -9 of Spillway, writes meanwhile, restart: a partial resync.
	before := infoOf(t, mc, "stats")
	sp.Kill9()
	masterWrites(t, master.Addr(), "down", 500)
	sp.Restart()
	spc = sp.Conn(t)
	masterWrites(t, master.Addr(), "back", 500)
	waitOffsets(t, mc, spc, subc)
	after := infoOf(t, mc, "stats")
	if after["sync_full"] != before["sync_full"] || atoi(after["sync_partial_ok"]) != atoi(before["sync_partial_ok"])+1 {
		t.Errorf("after kill -9 and restart: master sync_full %s→%s, sync_partial_ok %s→%s; want a partial resync",
			before["sync_full"], after["sync_full"], before["sync_partial_ok"], after["sync_partial_ok"])
	}
	sameDigest(t, mc, subc)
	sameDataset(t, mc, subc, false)
	sameDataset(t, mc, spc, false)

	// REPLICAOF NO ONE: Spillway keeps its data, takes a new replication
	// ID (the master's kept as replid2) and writes, which its replica gets.
	oldID := infoOf(t, spc, "replication")["master_replid"]
	partial := atoi(infoOf(t, spc, "stats")["sync_partial_ok"])
	if r := spc.Do("REPLICAOF", "NO", "ONE"); r.Str != "OK" {
		t.Fatalf("REPLICAOF NO ONE: %s", r.String())
	}
	pi := infoOf(t, spc, "replication")
	if pi["role"] != "master" || pi["master_replid2"] != oldID || pi["master_replid"] == oldID {
		t.Errorf("after REPLICAOF NO ONE: %v", pi)
	}
	if r := spc.Do("SET", "promoted", "yes"); r.Str != "OK" {
		t.Fatalf("SET after promotion: %s", r.String())
	}
	for i := range 200 {
		if subc.Do("GET", "promoted").Str == "yes" {
			break
		}
		if i == 199 {
			t.Error("the replica of the promoted Spillway never got its write")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st := infoOf(t, spc, "stats"); atoi(st["sync_partial_ok"]) != partial+1 {
		t.Errorf("the replica of the promoted Spillway: sync_partial_ok %s, want %d (PSYNC with replid2)",
			st["sync_partial_ok"], partial+1)
	}
	if r := mc.Do("DBSIZE"); r.Int+1 != spc.Do("DBSIZE").Int {
		t.Errorf("promoted Spillway DBSIZE %d, master %d + 1", spc.Do("DBSIZE").Int, r.Int)
	}
}

// TestReplicaKilledDuringFullSync: a kill -9 of Spillway while it loads the
// master's RDB leaves no replication state claiming that data: the restart
// does a full resync (not a partial one from the half-loaded store), and
// ends with the master's dataset.
func TestReplicaKilledDuringFullSync(t *testing.T) {
	// The master waits a second before the transfer: Spillway answers
	// PING (the harness's readiness check) before its load begins.
	master := harness.StartRedis(t, "--enable-debug-command", "yes", "--repl-diskless-sync-delay", "1")
	mc := master.Conn(t)
	if r := mc.Do("DEBUG", "POPULATE", "200000", "big", "300"); r.IsError() {
		t.Fatal(r.String())
	}
	mc.Do("SET", "marker", "1")
	sp := harness.StartSpillway(t, "", "--maxmemory", "8mb", "--replicaof", "127.0.0.1", strconv.Itoa(master.Port()))
	spc := sp.Conn(t)
	killed := false
	for range 1000 {
		// Well into the load: part of the keys are in the store.
		if ri := infoOf(t, spc, "replication"); ri["master_sync_in_progress"] == "1" &&
			atoi(ri["master_sync_read_bytes"]) > 1<<20 {
			sp.Kill9()
			killed = true
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !killed {
		t.Fatal("never saw the full sync in progress")
	}
	full := atoi(infoOf(t, mc, "stats")["sync_full"])
	sp.Restart()
	spc = sp.Conn(t)
	mc.Do("SET", "after", "1")
	waitOffsets(t, mc, spc)
	st := infoOf(t, mc, "stats")
	if atoi(st["sync_full"]) != full+1 || st["sync_partial_ok"] != "0" {
		t.Errorf("after a kill -9 during the load: sync_full %s (was %d), sync_partial_ok %s; want a full resync",
			st["sync_full"], full, st["sync_partial_ok"])
	}
	if w, g := mc.Do("DBSIZE"), spc.Do("DBSIZE"); w.Int != g.Int {
		t.Errorf("DBSIZE: got %d, want %d", g.Int, w.Int)
	}
	if r := spc.Do("MGET", "marker", "after", "big:199999"); len(r.Elems) != 3 || r.Elems[0].Str != "1" ||
		r.Elems[1].Str != "1" || r.Elems[2].Str != mc.Do("GET", "big:199999").Str {
		t.Errorf("MGET: %s", r.String())
	}
}
