package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// Redis Sentinel over embedded Spillway: two Spillway nodes (the second a
// replica of the first), three real redis-sentinel processes monitoring
// the first, a writer whose writes are acknowledged by WAIT 1, the master
// killed -9. Helpers are prefixed sf.

const sfMaster = "mymaster"

// sfStartSentinels starts three sentinels (quorum 2) monitoring the master
// at port, with down-after-milliseconds 1000 and failover-timeout 5000.
func sfStartSentinels(t *testing.T, port int) []string {
	t.Helper()
	bin, err := exec.LookPath("redis-sentinel")
	if err != nil {
		t.Fatal("redis-sentinel not found on PATH: run scripts/ensure-redis.sh (apt-get install redis-sentinel)")
	}
	var addrs []string
	for i := 0; i < 3; i++ {
		sp := harness.FreePort(t)
		addr := "127.0.0.1:" + strconv.Itoa(sp)
		conf := filepath.Join(t.TempDir(), "sentinel.conf")
		body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndaemonize no\nlogfile \"\"\n"+
			"sentinel monitor %s 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds %[2]s 1000\n"+
			"sentinel failover-timeout %[2]s 5000\n", sp, sfMaster, port)
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		harness.StartProc(t, "sentinel"+strconv.Itoa(i), addr, bin, conf)
		addrs = append(addrs, addr)
	}
	return addrs
}

// sfMasterFields is SENTINEL MASTER mymaster as a map (nil on an error).
func sfMasterFields(c *harness.Conn) map[string]string {
	r := c.Do("SENTINEL", "MASTER", sfMaster)
	if r.Type != '*' {
		return nil
	}
	f := map[string]string{}
	for i := 0; i+1 < len(r.Elems); i += 2 {
		f[r.Elems[i].Str] = r.Elems[i+1].Str
	}
	return f
}

// sfMasterAddr is SENTINEL GET-MASTER-ADDR-BY-NAME mymaster as host:port.
func sfMasterAddr(c *harness.Conn) string {
	r := c.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", sfMaster)
	if r.Type != '*' || len(r.Elems) != 2 {
		return ""
	}
	return r.Elems[0].Str + ":" + r.Elems[1].Str
}

// sfReplicaFields is "flags master-link-status" of the replica at addr in
// SENTINEL REPLICAS mymaster ("" when it is not listed).
func sfReplicaFields(c *harness.Conn, addr string) string {
	r := c.Do("SENTINEL", "REPLICAS", sfMaster)
	if r.Type != '*' {
		return ""
	}
	for _, e := range r.Elems {
		f := map[string]string{}
		for i := 0; i+1 < len(e.Elems); i += 2 {
			f[e.Elems[i].Str] = e.Elems[i+1].Str
		}
		if f["name"] == addr {
			return f["flags"] + " " + f["master-link-status"]
		}
	}
	return ""
}

// sfRole is the first element of ROLE ("" on an error).
func sfRole(c *harness.Conn) string {
	r := c.Do("ROLE")
	if r.Type != '*' || len(r.Elems) == 0 {
		return ""
	}
	return r.Elems[0].Str
}

// sfKey is the writer's i-th key.
func sfKey(i int) string { return "sf:" + strconv.Itoa(i) }

// TestSentinelFailoverSpillway: the sentinels detect the killed Spillway
// master, promote the Spillway replica (every write WAIT acknowledged reads
// back on it, new writes succeed), and turn the restarted old master into a
// replica of the new one, which converges to the same keys.
func TestSentinelFailoverSpillway(t *testing.T) {
	// A small budget: most of the writer's keys are cold on both nodes.
	const budget = "2000000"
	a := harness.StartSpillway(t, "", "--maxmemory", budget)
	b := harness.StartSpillway(t, "", "--maxmemory", budget,
		"--replicaof", "127.0.0.1", strconv.Itoa(a.Port()))
	ac := utDial(t, a.Addr(), 10*time.Second)
	bc := utDial(t, b.Addr(), 10*time.Second)
	stWait(t, 30*time.Second, "the replica's link to the master", func() bool {
		m, err := harness.Info(bc, "replication")
		return err == nil && m["master_link_status"] == "up"
	})

	sentinels := sfStartSentinels(t, a.Port())
	sc := make([]*harness.Conn, len(sentinels))
	for i, addr := range sentinels {
		sc[i] = utDial(t, addr, 5*time.Second)
		stWait(t, 60*time.Second, "sentinel "+addr+" to know the replica and the other sentinels", func() bool {
			f := sfMasterFields(sc[i])
			return f["num-slaves"] == "1" && f["num-other-sentinels"] == "2" && f["flags"] == "master"
		})
	}

	// Bounded writes, each followed by WAIT 1 1000: acked[i] when the
	// replica acknowledged it.
	const n = 6000
	acked := make([]bool, n)
	nAcked := 0
	for i := 0; i < n; i++ {
		if r := ac.Do("SET", sfKey(i), utValue(i, 512)); r.Type != '+' {
			t.Fatalf("SET %s: %v", sfKey(i), r)
		}
		r := ac.Do("WAIT", "1", "1000")
		if r.Type != ':' {
			t.Fatalf("WAIT: %v", r)
		}
		if r.Int == 1 {
			acked[i] = true
			nAcked++
		}
	}
	if nAcked < n/2 {
		t.Fatalf("only %d of %d writes acknowledged by the replica", nAcked, n)
	}
	if m, err := harness.Info(ac, "tiering"); err != nil || m["cold_keys"] == "" || m["cold_keys"] == "0" {
		t.Fatalf("no cold key on the master: %v %v", m, err)
	} else {
		t.Logf("%d of %d writes acknowledged by the replica; cold keys on the master: %s", nAcked, n, m["cold_keys"])
	}

	a.Kill9()
	for i, c := range sc {
		stWait(t, 60*time.Second, "sentinel "+sentinels[i]+" to name the replica master", func() bool {
			return sfMasterAddr(c) == b.Addr()
		})
	}
	// The promotion ends with CLIENT KILL TYPE normal: clients reconnect.
	bc = utDial(t, b.Addr(), 10*time.Second)
	stWait(t, 30*time.Second, "the promoted replica's ROLE master", func() bool { return sfRole(bc) == "master" })
	for i := 0; i < n; i++ {
		if !acked[i] {
			continue
		}
		if r := bc.Do("GET", sfKey(i)); r.Type != '$' || r.Str != utValue(i, 512) {
			t.Fatalf("acknowledged write %s lost on the promoted replica: %v", sfKey(i), r)
		}
	}
	const more = 500
	for i := n; i < n+more; i++ {
		if r := bc.Do("SET", sfKey(i), utValue(i, 512)); r.Type != '+' {
			t.Fatalf("SET %s on the promoted replica: %v", sfKey(i), r)
		}
	}

	// The old master comes back (without replicaof): the sentinels
	// reconfigure it as a replica of the new master.
	a.Restart()
	stWait(t, 60*time.Second, "the old master to be a replica of the new one with its link up", func() bool {
		// The reconfiguration kills clients: reconnect after a lost one.
		if r := ac.Do("PING"); r.Err != nil {
			ac.Close()
			ac = utDial(t, a.Addr(), 10*time.Second)
		}
		m, err := harness.Info(ac, "replication")
		return err == nil && sfRole(ac) == "slave" && m["master_port"] == strconv.Itoa(b.Port()) &&
			m["master_link_status"] == "up"
	})
	// Every sentinel sees it as a replica with its link up (parsed from
	// its INFO replication).
	for i, c := range sc {
		stWait(t, 60*time.Second, "sentinel "+sentinels[i]+" to list the old master as a replica with its link ok", func() bool {
			return sfReplicaFields(c, a.Addr()) == "slave ok"
		})
	}
	stWait(t, 30*time.Second, "the old master to reach the new master's offset", func() bool {
		mo, err1 := utInfoInt(bc, "replication", "master_repl_offset")
		ro, err2 := utInfoInt(ac, "replication", "slave_repl_offset")
		return err1 == nil && err2 == nil && ro >= mo
	})
	for _, c := range []*harness.Conn{ac, bc} {
		if r := c.Do("DBSIZE"); r.Type != ':' || r.Int != int64(n+more) {
			t.Fatalf("DBSIZE: %v, want %d", r, n+more)
		}
	}
	for i := 0; i < n+more; i++ {
		if r := ac.Do("GET", sfKey(i)); r.Type != '$' || r.Str != utValue(i, 512) {
			t.Fatalf("%s on the old master after it converged: %v", sfKey(i), r)
		}
	}
}
