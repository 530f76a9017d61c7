package integration

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// TestUpstreamReplicaOf: upstream-mode Spillway with a 2 MB budget becomes
// a replica (REPLICAOF) of a real redis-server holding about 8 MB: the
// full resynchronization loads the master's RDB into the upstream while
// the demoter moves keys into the store, and afterwards, and after more
// writes on the master, every key reads back through Spillway as on the
// master, also after the link is lost and resumed. Writes to Spillway
// answer READONLY; with
// replica-serve-stale-data no and the master gone, reads answer
// MASTERDOWN; REPLICAOF NO ONE makes Spillway a writable master again,
// with the data kept.
func TestUpstreamReplicaOf(t *testing.T) {
	master := harness.StartRedis(t)
	mc := utDial(t, master.Addr(), 30*time.Second)
	val := strings.Repeat("replicated value ", 128) // about 2 KB
	for i := range 4000 {
		if r := mc.Do("SET", "k:"+strconv.Itoa(i), val+strconv.Itoa(i)); r.IsError() {
			t.Fatalf("SET: %s", r.Str)
		}
	}
	exp := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	for _, c := range [][]string{
		{"SELECT", "2"}, {"HSET", "h", "a", "1", "b", "2"}, {"RPUSH", "l", "x", "y", "z"},
		{"SADD", "s", "m1", "m2"}, {"ZADD", "z", "1", "a", "2.5", "b"}, {"XADD", "x", "1-1", "f", "v"},
		{"SET", "ttl", "v", "PXAT", exp}, {"SELECT", "0"},
	} {
		if r := mc.Do(c...); r.IsError() {
			t.Fatalf("%v: %s", c, r.Str)
		}
	}

	up := harness.StartRedis(t)
	sp := utStartSpillway(t, up, "", 2*utMB)
	c := utDial(t, sp.Addr(), 30*time.Second)
	if r := c.Do("SET", "before", "gone after the sync"); r.Str != "OK" {
		t.Fatalf("SET: %s", r.String())
	}
	if r := c.Do("REPLICAOF", "127.0.0.1", strconv.Itoa(master.Port())); r.Str != "OK" {
		t.Fatalf("REPLICAOF: %s", r.String())
	}
	relayWaitLink(t, c)
	replicaCatchUp(t, mc, c)
	relayCompare(t, "after the full sync", mc, c)
	if r := c.Do("EXISTS", "before"); r.Int != 0 {
		t.Fatalf("a key Spillway held before the sync survived it")
	}
	uc := utDial(t, up.Addr(), 10*time.Second)
	if n := uc.Do("DBSIZE").Int; n >= 4000 {
		t.Fatalf("the upstream holds %d of the master's 4000+ keys in db 0: nothing was demoted", n)
	}

	// The master's stream: writes to hot and cold keys, deletions, expiries.
	for _, cmd := range [][]string{
		{"SET", "k:1", "changed"}, {"APPEND", "k:2", "+more"}, {"DEL", "k:3"}, {"EXPIRE", "k:4", "1000"},
		{"SET", "new", "v"}, {"SELECT", "2"}, {"HSET", "h", "c", "3"}, {"LPUSH", "l", "w"}, {"SELECT", "0"},
	} {
		if r := mc.Do(cmd...); r.IsError() {
			t.Fatalf("%v: %s", cmd, r.Str)
		}
	}
	replicaCatchUp(t, mc, c)
	relayCompare(t, "after the master's writes", mc, c)

	// The link lost (the master drops its replicas): Spillway reconnects
	// and continues from its offset (a partial resynchronization).
	if r := mc.Do("CLIENT", "KILL", "TYPE", "replica"); r.IsError() || r.Int != 1 {
		t.Fatalf("CLIENT KILL TYPE replica on the master: %s", r.String())
	}
	for _, cmd := range [][]string{{"SET", "k:5", "after the link loss"}, {"SELECT", "2"}, {"RPUSH", "l", "v"}, {"SELECT", "0"}} {
		if r := mc.Do(cmd...); r.IsError() {
			t.Fatalf("%v: %s", cmd, r.Str)
		}
	}
	replicaCatchUp(t, mc, c)
	relayCompare(t, "after the link was lost and resumed", mc, c)
	if m, err := harness.Info(mc, "stats"); err != nil || m["sync_partial_ok"] != "1" || m["sync_full"] != "1" {
		t.Fatalf("the master's sync counters %v (%v); want one full and one partial resynchronization", m, err)
	}

	if r := c.Do("SET", "k:1", "x"); !r.IsError() || !strings.HasPrefix(r.Str, "READONLY") {
		t.Fatalf("SET on the replica = %s; want READONLY", r.String())
	}

	// The link down, with replica-serve-stale-data no: MASTERDOWN.
	if r := c.Do("CONFIG", "SET", "replica-serve-stale-data", "no"); r.Str != "OK" {
		t.Fatalf("CONFIG SET: %s", r.String())
	}
	master.Kill9()
	deadline := time.Now().Add(30 * time.Second)
	for relayInfo(t, c, "master_link_status") != "down" {
		if time.Now().After(deadline) {
			t.Fatal("the link never went down")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := c.Do("GET", "k:1"); !r.IsError() || !strings.HasPrefix(r.Str, "MASTERDOWN") {
		t.Fatalf("GET with the link down = %s; want MASTERDOWN", r.String())
	}
	c.Do("CONFIG", "SET", "replica-serve-stale-data", "yes")
	if r := c.Do("GET", "k:1"); r.Str != "changed" {
		t.Fatalf("GET of stale data = %s", r.String())
	}

	if r := c.Do("REPLICAOF", "NO", "ONE"); r.Str != "OK" {
		t.Fatalf("REPLICAOF NO ONE: %s", r.String())
	}
	if r := c.Do("SET", "k:1", "mine"); r.Str != "OK" {
		t.Fatalf("SET after REPLICAOF NO ONE: %s", r.String())
	}
	if r := c.Do("GET", "k:2"); r.Str != val+"2+more" {
		t.Fatalf("GET k:2 after REPLICAOF NO ONE = %q", r.Str)
	}
	if n := c.Do("DBSIZE").Int; n != 4001 { // 4000, less k:3, plus new and replica:sync
		t.Fatalf("DBSIZE after REPLICAOF NO ONE = %d; want 4001", n)
	}
}

// replicaCatchUp writes a fresh value on the master and waits until the
// replica (c) has it: it applied everything written before.
func replicaCatchUp(t *testing.T, mc, c *harness.Conn) {
	t.Helper()
	v := strconv.FormatInt(time.Now().UnixNano(), 10)
	if r := mc.Do("SET", "replica:sync", v); r.Str != "OK" {
		t.Fatalf("SET replica:sync: %s", r.String())
	}
	deadline := time.Now().Add(60 * time.Second)
	for c.Do("GET", "replica:sync").Str != v {
		if time.Now().After(deadline) {
			t.Fatalf("the replica never caught up:\n%s", c.Do("INFO", "replication").Str)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestUpstreamReplicaOfUnreachable: REPLICAOF of a master that cannot be
// reached, as Redis's suite does it (unit/multi). Inside MULTI it runs at
// EXEC with the commands around it, and nothing of the transaction
// reaches Spillway's own replica, which is disconnected (its new SYNC is
// refused while Spillway is a replica); writes then answer READONLY. With
// replica-serve-stale-data no, an EXEC whose queued commands read or PING
// is aborted with MASTERDOWN once Spillway became a stale replica after
// they were queued; REPLICAOF NO ONE makes it a master again.
func TestUpstreamReplicaOfUnreachable(t *testing.T) {
	up := harness.StartRedis(t)
	sp := utStartSpillway(t, up, "", 64*utMB)
	c := utDial(t, sp.Addr(), 10*time.Second)
	c2 := utDial(t, sp.Addr(), 10*time.Second)
	rep := harness.StartRedis(t, "--replicaof", "127.0.0.1", strconv.Itoa(sp.Port()))
	rc := utDial(t, rep.Addr(), 10*time.Second)
	relayWaitLink(t, rc)

	c.Do("SET", "foo", "bar")
	for _, args := range [][]string{{"MULTI"}, {"SET", "foo2", "bar"}, {"REPLICAOF", "localhost", "9999"}, {"SET", "foo3", "bar"}} {
		if r := c.Do(args...); r.IsError() {
			t.Fatalf("%v = %s", args, r.String())
		}
	}
	if r := c.Do("EXEC"); len(r.Elems) != 3 || r.Elems[0].Str != "OK" || r.Elems[1].Str != "OK" || r.Elems[2].Str != "OK" {
		t.Fatalf("EXEC = %s; want three OKs", r.String())
	}
	if r := c.Do("SET", "foo4", "bar"); !r.IsError() || !strings.HasPrefix(r.Str, "READONLY") {
		t.Fatalf("SET on the replica = %s; want READONLY", r.String())
	}
	// Queued in MULTI, a write is refused and fails the transaction.
	want := []string{"+OK", "-READONLY You can't write against a read only replica.", "+QUEUED",
		"-EXECABORT Transaction discarded because of previous errors."}
	for i, args := range [][]string{{"MULTI"}, {"SET", "foo5", "bar"}, {"GET", "foo"}, {"EXEC"}} {
		if r := c.Do(args...); strings.TrimSpace(string(r.Raw)) != want[i] {
			t.Fatalf("%v in MULTI on a replica = %q; want %q", args, r.Raw, want[i])
		}
	}
	if r := c.Do("GET", "foo3"); r.Str != "bar" {
		t.Fatalf("the transaction's last SET did not run: %s", r.String())
	}
	if r := c.Do("INFO", "replication"); !strings.Contains(r.Str, "role:slave") || !strings.Contains(r.Str, "master_port:9999") {
		t.Fatalf("INFO replication of the new replica:\n%s", r.Str)
	}
	if r := rc.Do("GET", "foo"); r.Str != "bar" {
		t.Fatalf("Spillway's replica lacks the write before the transaction: %s", r.String())
	}
	for _, k := range []string{"foo2", "foo3"} {
		if r := rc.Do("EXISTS", k); r.Int != 0 {
			t.Fatalf("Spillway's replica got %s, written in the transaction that made Spillway a replica", k)
		}
	}
	if r := c2.Do("SYNC"); !r.IsError() || r.Str != errReplicaSyncText {
		t.Fatalf("SYNC to a Spillway that is a replica = %s", r.String())
	}
	if r := c.Do("REPLICAOF", "NO", "ONE"); r.Str != "OK" {
		t.Fatalf("REPLICAOF NO ONE = %s", r.String())
	}

	// A stale replica aborts EXEC of queued reads and PINGs.
	if r := c.Do("CONFIG", "SET", "replica-serve-stale-data", "no"); r.Str != "OK" {
		t.Fatalf("CONFIG SET: %s", r.String())
	}
	c.Do("SET", "xx", "1")
	for _, queued := range []string{"GET", "PING"} {
		c.Do("MULTI")
		if queued == "GET" {
			c.Do("GET", "xx")
		} else {
			c.Do("PING")
		}
		if r := c2.Do("REPLICAOF", "localhsot", "0"); r.Str != "OK" {
			t.Fatalf("REPLICAOF = %s", r.String())
		}
		if r := c.Do("EXEC"); !r.IsError() || !strings.HasPrefix(r.Str, "EXECABORT") || !strings.Contains(r.Str, "MASTERDOWN") {
			t.Fatalf("EXEC of a queued %s on a stale replica = %s; want EXECABORT ... MASTERDOWN", queued, r.String())
		}
		c2.Do("REPLICAOF", "NO", "ONE")
	}
	// Reads queued while the link is down and stale data is refused fail
	// the transaction.
	c2.Do("REPLICAOF", "localhsot", "0")
	masterDown := "-MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
	want = []string{"+OK", masterDown, masterDown, "-EXECABORT Transaction discarded because of previous errors."}
	for i, args := range [][]string{{"MULTI"}, {"GET", "xx"}, {"PING"}, {"EXEC"}} {
		if r := c.Do(args...); strings.TrimSpace(string(r.Raw)) != want[i] {
			t.Fatalf("%v in MULTI on a stale replica = %q; want %q", args, r.Raw, want[i])
		}
	}
	c2.Do("REPLICAOF", "NO", "ONE")

	// A transaction opened while stale runs once the server is a master.
	c2.Do("REPLICAOF", "localhsot", "0")
	c.Do("MULTI")
	c2.Do("REPLICAOF", "NO", "ONE")
	c.Do("GET", "xx")
	if r := c.Do("EXEC"); len(r.Elems) != 1 || r.Elems[0].Str != "1" {
		t.Fatalf("EXEC after REPLICAOF NO ONE = %s; want [1]", r.String())
	}
	if r := c.Do("SET", "after", "v"); r.Str != "OK" {
		t.Fatalf("SET on the master again = %s", r.String())
	}
}

// errReplicaSyncText is Spillway's refusal of SYNC while it is a replica.
const errReplicaSyncText = "ERR Spillway in upstream mode serves no replicas while it is a replica itself (REPLICAOF)"
