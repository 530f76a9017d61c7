package integration

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// TestUpstreamRelayReplica: a real redis-server replica of upstream-mode
// Spillway, whose small budget keeps most keys cold, holds the whole
// dataset Spillway serves, hot and cold, while clients write every type
// (TTLs, a script, MULTI), delete and expire cold keys, reload them, and
// keys are demoted meanwhile; after its link is cut it resynchronizes
// partially (+CONTINUE); a second replica's full resynchronization while
// all this runs gives it the same dataset; a cold key's expiry reaches the
// replicas; unrelated clients see no error throughout; the upstream's
// replication state is its own (Spillway's relay is one replica of it).
func TestUpstreamRelayReplica(t *testing.T) {
	t.Setenv("SPILLWAY_TEST_HOOKS", "1") // DEBUG DEMOTE
	up := harness.StartRedis(t)
	sp := utStartSpillway(t, up, "", 6*utMB)
	c := utDial(t, sp.Addr(), 20*time.Second)
	// No replica yet: WAIT counts none, as Redis's.
	if r := c.Do("WAIT", "0", "0"); r.Type != ':' || r.Int != 0 {
		t.Fatalf("WAIT 0 0 = %s", r.String())
	}
	if r := c.Do("WAIT", "1", "50"); r.Type != ':' || r.Int != 0 {
		t.Fatalf("WAIT 1 50 = %s", r.String())
	}
	big := strings.Repeat("v", 2000)
	must := func(args ...string) harness.Reply {
		t.Helper()
		r := c.Do(args...)
		if r.IsError() || r.Err != nil {
			t.Fatalf("%v: %s %v", args[:min(len(args), 3)], r.String(), r.Err)
		}
		return r
	}
	for i := range 1500 {
		must("SET", fmt.Sprintf("s:%d", i), big)
	}
	for i := range 20 {
		k := strconv.Itoa(i)
		must("HSET", "h:"+k, "a", k, "b", big[:100])
		must("RPUSH", "l:"+k, "x", "y", k)
		must("SADD", "set:"+k, "1", "2", k)
		must("ZADD", "z:"+k, "1", "a", "2.5", k)
		must("SET", "ttl:"+k, k, "PX", "3600000")
		must("XADD", "x:"+k, "1-1", "f", k)
		must("XADD", "x:"+k, "2-1", "g", k)
	}
	must("XGROUP", "CREATE", "x:0", "grp", "0")
	must("XREADGROUP", "GROUP", "grp", "alice", "COUNT", "1", "STREAMS", "x:0", ">")
	must("DEBUG", "DEMOTE-ALL")
	must("SELECT", "2")
	must("SET", "db2:key", "in db 2")
	must("DEBUG", "DEMOTE-ALL")
	must("SELECT", "0")

	// Unrelated clients work while replicas attach and sync.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var failMu sync.Mutex
	var failures []string
	// pause holds the unrelated client between commands while replicas
	// are compared with Spillway (a key it writes meanwhile would differ
	// by when each side was read); resume lets it go on. The client checks
	// paused under busy, so once pause has taken busy, it writes no more;
	// a failing test's stop still ends it.
	var busy sync.Mutex
	var paused atomic.Bool
	pause := func() { paused.Store(true); busy.Lock(); busy.Unlock() }
	resume := func() { paused.Store(false) }
	wg.Add(1)
	go func() {
		defer wg.Done()
		gr := utGoRedis(t, sp.Addr(), 10*time.Second)
		ctx := context.Background()
		for i := 0; i < 20000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			key := "unrelated:" + strconv.Itoa(i%50)
			busy.Lock()
			if paused.Load() {
				busy.Unlock()
				time.Sleep(5 * time.Millisecond)
				continue
			}
			err := gr.Set(ctx, key, strconv.Itoa(i), 0).Err()
			if v, gerr := gr.Get(ctx, key).Result(); err == nil && (gerr != nil || v != strconv.Itoa(i)) {
				err = fmt.Errorf("GET %s = %q, %v", key, v, gerr)
			}
			busy.Unlock()
			if err != nil {
				failMu.Lock()
				failures = append(failures, err.Error())
				failMu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
		if len(failures) > 0 {
			t.Errorf("%d of the unrelated client's commands failed, first: %s", len(failures), failures[0])
		}
	}()

	r1 := harness.StartRedis(t, "--replicaof", "127.0.0.1", strconv.Itoa(sp.Port()))
	rc1 := utDial(t, r1.Addr(), 20*time.Second)
	relayWaitLink(t, rc1)

	var r2 *harness.Server
	for i := range 400 {
		k := strconv.Itoa(i)
		must("SET", "new:"+k, big)                    // demotions follow
		must("HSET", "h:"+strconv.Itoa(i%20), "n", k) // a reload
		switch i % 8 {
		case 0:
			must("DEL", "s:"+k, "unrelated:x") // a cold key and a hot one
		case 1:
			must("EXPIRE", "s:"+k, "7200") // a cold key's TTL
		case 2:
			must("GET", "s:"+k)
		case 3:
			must("EVAL", "redis.call('set', KEYS[1], ARGV[1]) return redis.call('incr', KEYS[2])", "2", "script:"+k, k, "counter")
		case 4:
			must("MULTI")
			must("SET", "tx:"+k, k)
			must("LPUSH", "l:"+strconv.Itoa(i%20), k)
			if r := must("EXEC"); len(r.Elems) != 2 {
				t.Fatalf("EXEC = %s", r.String())
			}
		case 5:
			must("UNLINK", "s:"+strconv.Itoa(i+1))
		case 6:
			must("DEBUG", "DEMOTE", "new:"+k, "tx:"+strconv.Itoa(i-2))
		case 7:
			must("PERSIST", "ttl:"+strconv.Itoa(i%20))
		}
		switch i {
		case 100:
			// Cut the first replica's link: it continues partially.
			rc1.Do("CLIENT", "KILL", "TYPE", "master")
		case 200:
			r2 = harness.StartRedis(t, "--replicaof", "127.0.0.1", strconv.Itoa(sp.Port()))
		}
	}
	rc2 := utDial(t, r2.Addr(), 20*time.Second)
	relayWaitLink(t, rc2)
	pause()
	relayCatchUp(t, c, rc1, rc2)
	relayCompare(t, "replica 1", c, rc1)
	relayCompare(t, "replica 2", c, rc2)
	resume()
	if log, err := os.ReadFile(r1.LogPath()); err != nil || !strings.Contains(string(log), "Master accepted a Partial Resynchronization") {
		t.Errorf("the first replica did not resynchronize partially after its link was cut (%v):\n%s", err, harness.Trunc(string(log), 4000))
	}

	// A cold key's expiry: the replicas drop it too (DBSIZE counts keys
	// whether or not expired, as replicas keep them until told).
	must("SET", "soon", "v", "PX", "1500")
	if r := must("DEBUG", "DEMOTE", "soon"); r.Int != 1 {
		t.Fatalf("DEBUG DEMOTE soon = %s", r.String())
	}
	pause()
	relayCatchUp(t, c, rc1, rc2)
	n1 := utDBSize(t, rc1)
	if rc1.Do("PTTL", "soon").Int <= 0 {
		t.Fatalf("the replica has no TTL on the demoted key: %s", rc1.Do("PTTL", "soon").String())
	}
	deadline := time.Now().Add(20 * time.Second)
	for utDBSize(t, rc1) != n1-1 || utDBSize(t, rc2) != n1-1 {
		if time.Now().After(deadline) {
			t.Fatalf("the cold key's expiry never reached the replicas (DBSIZE %d and %d, was %d)", utDBSize(t, rc1), utDBSize(t, rc2), n1)
		}
		time.Sleep(100 * time.Millisecond)
	}
	relayCompare(t, "replica 1", c, rc1)
	resume()

	// WAIT counts Spillway's replicas that have the client's last write.
	must("SET", "waited", "v")
	if r := must("WAIT", "2", "10000"); r.Int != 2 {
		t.Errorf("WAIT 2 10000 = %s; want 2", r.String())
	}
	if rc2.Do("GET", "waited").Str != "v" {
		t.Errorf("WAIT returned before the replica had the write")
	}

	// Spillway's replicas are its own: ROLE and INFO replication list them.
	if r := must("ROLE"); len(r.Elems) != 3 || r.Elems[0].Str != "master" || len(r.Elems[2].Elems) != 2 {
		t.Errorf("ROLE = %s; want master with 2 replicas", r.String())
	}
	if info := must("INFO", "replication").Str; !strings.Contains(info, "connected_slaves:2") {
		t.Errorf("INFO replication:\n%s", info)
	}
	uc := utDial(t, up.Addr(), 5*time.Second)
	if info := uc.Do("INFO", "replication").Str; !strings.Contains(info, "role:master") || !strings.Contains(info, "connected_slaves:1") {
		t.Errorf("the upstream's replication state (want Spillway's relay as its one replica):\n%s", info)
	}

	// The relay's link to the upstream is lost: Spillway's replicas are
	// disconnected, and resynchronize (fully, with a new relay) with the
	// dataset as it is then.
	oldID := relayInfo(t, c, "master_replid")
	if r := uc.Do("CLIENT", "KILL", "TYPE", "replica"); r.Int != 1 {
		t.Fatalf("CLIENT KILL TYPE replica on the upstream = %s", r.String())
	}
	for i := range 50 {
		must("SET", "after:"+strconv.Itoa(i), big)
		must("DEL", "s:"+strconv.Itoa(1000+i))
	}
	deadline = time.Now().Add(30 * time.Second)
	for relayInfo(t, c, "master_replid") == oldID || !strings.Contains(rc1.Do("INFO", "replication").Str, "master_link_status:up") {
		if time.Now().After(deadline) {
			t.Fatalf("the replica never resynchronized after the relay's link was lost:\n%s", rc1.Do("INFO", "replication").Str)
		}
		time.Sleep(50 * time.Millisecond)
	}
	relayWaitLink(t, rc2)
	pause()
	defer resume()
	relayCatchUp(t, c, rc1, rc2)
	relayCompare(t, "replica 1 after the relay's link was lost", c, rc1)
	relayCompare(t, "replica 2 after the relay's link was lost", c, rc2)
}

// relayInfo returns a field of Spillway's INFO replication.
func relayInfo(t *testing.T, c *harness.Conn, field string) string {
	t.Helper()
	m, err := harness.Info(c, "replication")
	if err != nil {
		t.Fatal(err)
	}
	return m[field]
}

// relayWaitLink waits until replica rc's link to its master is up.
func relayWaitLink(t *testing.T, rc *harness.Conn) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(rc.Do("INFO", "replication").Str, "master_link_status:up") {
		if time.Now().After(deadline) {
			t.Fatalf("the replica never synchronized:\n%s", rc.Do("INFO", "replication").Str)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// relayCatchUp writes a fresh value through Spillway and waits until the
// replicas have it: they have applied everything written before.
func relayCatchUp(t *testing.T, c *harness.Conn, replicas ...*harness.Conn) {
	t.Helper()
	v := strconv.FormatInt(time.Now().UnixNano(), 10)
	if r := c.Do("SET", "relay:sync", v); r.Str != "OK" {
		t.Fatalf("SET relay:sync: %s", r.String())
	}
	for _, rc := range replicas {
		deadline := time.Now().Add(30 * time.Second)
		for rc.Do("GET", "relay:sync").Str != v {
			if time.Now().After(deadline) {
				t.Fatalf("a replica never caught up:\n%s", rc.Do("INFO", "replication").Str)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// relayCompare checks that replica rc holds, in every database with keys,
// exactly the keys Spillway (c) serves, each with the same type, value and
// expiry time.
func relayCompare(t *testing.T, name string, c, rc *harness.Conn) {
	t.Helper()
	for _, db := range []string{"0", "2"} {
		c.Do("SELECT", db)
		rc.Do("SELECT", db)
		want, got := relayKeys(t, c), relayKeys(t, rc)
		if !slices.Equal(want, got) {
			t.Fatalf("%s, db %s: the replica has %d keys, Spillway %d; only on the replica %v, only on Spillway %v",
				name, db, len(got), len(want), relayMinus(got, want), relayMinus(want, got))
		}
		for _, k := range want {
			typ := c.Do("TYPE", k).Str
			reads := [][]string{{"TYPE", k}, {"PEXPIRETIME", k}}
			switch typ {
			case "string":
				reads = append(reads, []string{"GET", k})
			case "hash":
				reads = append(reads, []string{"HGETALL", k})
			case "list":
				reads = append(reads, []string{"LRANGE", k, "0", "-1"})
			case "set":
				reads = append(reads, []string{"SMEMBERS", k})
			case "zset":
				reads = append(reads, []string{"ZRANGE", k, "0", "-1", "WITHSCORES"})
			case "stream":
				reads = append(reads, []string{"XRANGE", k, "-", "+"}, []string{"XINFO", "GROUPS", k})
			}
			for _, args := range reads {
				w, g := harness.Canonical(c.Do(args...)), harness.Canonical(rc.Do(args...))
				if args[0] == "HGETALL" {
					w, g = harness.CanonicalPairs(c.Do(args...)), harness.CanonicalPairs(rc.Do(args...))
				}
				if w.Err != nil || g.Err != nil || w.String() != g.String() {
					t.Fatalf("%s, db %s %v: replica %s, Spillway %s", name, db, args, g.String(), w.String())
				}
			}
		}
	}
	c.Do("SELECT", "0")
	rc.Do("SELECT", "0")
}

// relayKeys lists the keys of c's database, sorted.
func relayKeys(t *testing.T, c *harness.Conn) []string {
	t.Helper()
	seen := map[string]bool{}
	cursor := "0"
	for i := 0; i < 100000; i++ {
		r := c.Do("SCAN", cursor, "COUNT", "1000")
		if r.IsError() || len(r.Elems) != 2 {
			t.Fatalf("SCAN: %s", r.String())
		}
		for _, k := range r.Elems[1].Elems {
			seen[k.Str] = true
		}
		if cursor = r.Elems[0].Str; cursor == "0" {
			break
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func relayMinus(a, b []string) []string {
	var out []string
	for _, k := range a {
		if _, ok := slices.BinarySearch(b, k); !ok {
			out = append(out, k)
		}
	}
	return out[:min(len(out), 20)]
}
