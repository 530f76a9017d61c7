package integration

import (
	"fmt"
	"slices"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// TestWriteBackDirtyKeys: hot strings overwritten with their expiry kept,
// and pushes and pops of hot lists, are written to the log only (dirty,
// tiering/writeback.go). Everything
// that reads the dataset as a whole or outlives the process must still
// see their latest values: a redis-server replica's full sync (the RDB is
// written from a snapshot), SAVE's RDB loaded by redis-server, a kill -9
// and restart (the log's replay), and demotion by a smaller budget (the
// records written as the keys leave memory).
func TestWriteBackDirtyKeys(t *testing.T) {
	const n = 2000
	sp := harness.StartSpillway(t, "", "--appendfsync", "always", "--maxmemory", "64mb")
	c := sp.Conn(t)
	// Lists: each round pushes two elements at the tail and pops one at
	// the head (pushes and pops of a hot list are log-only too).
	const lists = 50
	model := make([][]string, lists)
	write := func(round int) {
		var cmds [][]string
		for j := range lists {
			key := fmt.Sprint("wb:l:", j)
			a, b := fmt.Sprintf("r%d-%d-a", round, j), fmt.Sprintf("r%d-%d-b", round, j)
			cmds = append(cmds, []string{"RPUSH", key, a, b}, []string{"LPOP", key})
			model[j] = append(model[j], a, b)[1:]
		}
		for _, r := range c.DoAll(cmds) {
			if r.IsError() {
				t.Fatalf("round %d: %s", round, r.String())
			}
		}
		for chunk := 0; chunk < n; chunk += 100 {
			var cmds [][]string
			for i := chunk; i < chunk+100; i++ {
				cmds = append(cmds,
					[]string{"SET", fmt.Sprint("wb:s:", i), fmt.Sprintf("v%d-%d", round, i)},
					[]string{"INCR", fmt.Sprint("wb:n:", i)},
					[]string{"APPEND", fmt.Sprint("wb:a:", i), fmt.Sprint(round)},
					[]string{"SET", fmt.Sprint("wb:t:", i), fmt.Sprintf("t%d", round), "KEEPTTL"})
			}
			for _, r := range c.DoAll(cmds) {
				if r.IsError() {
					t.Fatalf("round %d: %s", round, r.String())
				}
			}
		}
	}
	for i := range n {
		c.Do("SET", fmt.Sprint("wb:t:", i), "t", "EX", "3600")
	}
	for j := range lists {
		c.Do("RPUSH", fmt.Sprint("wb:l:", j), "x", "y", "z")
		model[j] = []string{"x", "y", "z"}
	}
	for round := range 3 {
		write(round)
	}
	count, appended := "3", "012" // INCR's and APPEND's values after rounds 0-2
	check := func(when string, cc *harness.Conn) {
		t.Helper()
		for i := 0; i < n; i += 7 {
			for key, want := range map[string]string{
				fmt.Sprint("wb:s:", i): fmt.Sprintf("v2-%d", i),
				fmt.Sprint("wb:n:", i): count,
				fmt.Sprint("wb:a:", i): appended,
				fmt.Sprint("wb:t:", i): "t2",
			} {
				if got := cc.Do("GET", key); got.Str != want {
					t.Fatalf("%s: GET %s = %s, want %q", when, key, got.String(), want)
				}
			}
			if ttl := cc.Do("TTL", fmt.Sprint("wb:t:", i)).Int; ttl <= 0 {
				t.Fatalf("%s: wb:t:%d lost its expiry (TTL %d)", when, i, ttl)
			}
		}
		for j := range lists {
			got := cc.Do("LRANGE", fmt.Sprint("wb:l:", j), "0", "-1")
			var elems []string
			for _, e := range got.Elems {
				elems = append(elems, e.Str)
			}
			if !slices.Equal(elems, model[j]) {
				t.Fatalf("%s: LRANGE wb:l:%d = %q, want %q", when, j, elems, model[j])
			}
		}
	}
	ti := tierInfo(t, c)
	if ti.get(t, "write_back_dirty_keys") < 3*n || ti.get(t, "write_back_log_only_writes") < 6*n {
		t.Fatalf("after the overwrites: %d dirty keys, %d log-only writes; want at least %d and %d",
			ti["write_back_dirty_keys"], ti["write_back_log_only_writes"], 3*n, 6*n)
	}
	check("hot", c)

	// A replica's full sync.
	rs := startReplica(t, sp)
	rc := rs.Conn(t)
	waitCaughtUp(t, c, rc)
	check("on the replica", rc)
	sameDataset(t, c, rc, false)

	// kill -9 (appendfsync always: every acknowledged write is in the log).
	sp.Kill9()
	sp.Restart()
	c = sp.Conn(t)
	check("after kill -9", c)
	if d := tierInfo(t, c)["write_back_dirty_keys"]; d != 0 {
		t.Fatalf("%d dirty keys right after the restart", d)
	}

	// Demotion: dirty again, then a budget too small for them.
	write(3)
	write(2)
	count, appended = "5", "01232"
	if d := tierInfo(t, c)["write_back_dirty_keys"]; d < 3*n {
		t.Fatalf("%d dirty keys after rewriting", d)
	}
	c.Do("CONFIG", "SET", "maxmemory", "1mb")
	if d := tierInfo(t, c)["write_back_dirty_keys"]; d >= n {
		t.Fatalf("%d keys still dirty with a budget of 1 MB", d)
	}
	check("demoted", c)
	sp.Kill9()
	sp.Restart()
	check("demoted, after kill -9", sp.Conn(t))
}
