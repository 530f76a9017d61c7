package integration

import (
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// elemOf is element i of the big test lists.
func elemOf(i int) string { return "elem-" + strconv.Itoa(i) + "-abcdefghijklmnopqrstuvwx" }

// loadList appends elements [0, n) to key with pipelined RPUSHes of 1,000
// elements each, failing on any reply but the running length.
func loadList(t *testing.T, c *harness.Conn, key string, n int) {
	t.Helper()
	const per, window = 1000, 16
	sent, read := 0, 0
	for read*per < n {
		for sent*per < n && sent-read < window {
			args := []string{"RPUSH", key}
			for i := sent * per; i < min((sent+1)*per, n); i++ {
				args = append(args, elemOf(i))
			}
			if err := c.Send(args...); err != nil {
				t.Fatal(err)
			}
			sent++
		}
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		if r := c.Read(); r.Err != nil || r.Int != int64(min((read+1)*per, n)) {
			t.Fatalf("RPUSH batch %d: %s", read, r.String())
		}
		read++
	}
}

// storeReads returns the cold store's lookups and iterator steps so far.
func storeReads(t *testing.T, c *harness.Conn) (gets, steps int64) {
	return infoInt(t, c, "cold_store_gets"), infoInt(t, c, "cold_store_iter_steps")
}

// TestColdListMillionElements: a list of 1,000,000 elements is served
// without being loaded: LLEN from the meta record, LINDEX as one lookup,
// LRANGE as a seek plus the range, pushes and pops at the ends one record
// each; only its ends are in memory, and DEL is O(1).
func TestColdListMillionElements(t *testing.T) {
	const n = 1_000_000
	s := harness.StartSpillway(t, "", "--maxmemory", "64mb", "--appendfsync", "no", "--loglevel", "warning")
	c := s.Conn(t)
	start := time.Now()
	loadList(t, c, "big", n)
	t.Logf("loaded %d elements in %v", n, time.Since(start).Round(time.Millisecond))
	if hot := infoInt(t, c, "hot_bytes"); hot > 1<<20 {
		t.Fatalf("hot tier holds %d bytes after loading a %d MB list: more than its ends", hot, n*len(elemOf(n))>>20)
	}

	r := rand.New(rand.NewSource(1))
	gets, steps := storeReads(t, c)
	const reads = 200
	for range reads {
		i := r.Intn(n)
		idx := strconv.Itoa(i)
		if r.Intn(2) == 0 {
			idx = strconv.Itoa(i - n) // negative form
		}
		if got := c.Do("LINDEX", "big", idx); got.Str != elemOf(i) {
			t.Fatalf("LINDEX %s = %s, want %s", idx, got.String(), elemOf(i))
		}
	}
	dGets, dSteps := storeReads(t, c)
	dGets, dSteps = dGets-gets, dSteps-steps
	t.Logf("%d LINDEX: %d store lookups, %d iterator steps", reads, dGets, dSteps)
	if dGets > 2*reads || dSteps > 10 {
		t.Fatalf("%d LINDEX did %d lookups and %d iterator steps, want <= %d and <= 10", reads, dGets, dSteps, 2*reads)
	}

	gets, steps = storeReads(t, c)
	const pages = 50
	for range pages {
		from := r.Intn(n - 100)
		got := c.Do("LRANGE", "big", strconv.Itoa(from), strconv.Itoa(from+99))
		if len(got.Elems) != 100 || got.Elems[0].Str != elemOf(from) || got.Elems[99].Str != elemOf(from+99) {
			t.Fatalf("LRANGE %d %d = %d elements", from, from+99, len(got.Elems))
		}
	}
	dGets, dSteps = storeReads(t, c)
	dGets, dSteps = dGets-gets, dSteps-steps
	t.Logf("%d LRANGE pages of 100: %d store lookups, %d iterator steps", pages, dGets, dSteps)
	if dGets > 2*pages || dSteps > pages*102+10 {
		t.Fatalf("%d LRANGE pages did %d lookups and %d steps, want <= %d and <= %d", pages, dGets, dSteps, 2*pages, pages*102+10)
	}

	// Queue use at both ends: each push or pop touches one record (pops
	// refill a window with a bounded read now and then).
	gets, steps = storeReads(t, c)
	const ops = 500
	for i := range ops {
		if got := c.Do("LPOP", "big"); got.Str != elemOf(i) {
			t.Fatalf("LPOP = %s, want %s", got.String(), elemOf(i))
		}
		if got := c.Do("RPUSH", "big", "new-"+strconv.Itoa(i)); got.Int != n {
			t.Fatalf("RPUSH = %s", got.String())
		}
	}
	dGets, dSteps = storeReads(t, c)
	dGets, dSteps = dGets-gets, dSteps-steps
	t.Logf("%d LPOP+RPUSH pairs: %d store lookups, %d iterator steps", ops, dGets, dSteps)
	if dGets > 2*ops || dSteps > 4*ops {
		t.Fatalf("%d LPOP+RPUSH pairs did %d lookups and %d steps: not O(elements touched)", ops, dGets, dSteps)
	}
	if got := c.Do("LLEN", "big"); got.Int != n {
		t.Fatalf("LLEN = %s", got.String())
	}
	if got := c.Do("LINDEX", "big", "-1"); got.Str != "new-"+strconv.Itoa(ops-1) {
		t.Fatalf("LINDEX -1 = %s", got.String())
	}
	if got := c.Do("OBJECT", "ENCODING", "big"); got.Str != "quicklist" {
		t.Fatalf("OBJECT ENCODING = %s", got.String())
	}

	reclaimed := infoInt(t, c, "reclaimed_versions")
	gets, steps = storeReads(t, c)
	if got := c.Do("DEL", "big"); got.Int != 1 {
		t.Fatalf("DEL = %s", got.String())
	}
	dGets, dSteps = storeReads(t, c)
	if dGets-gets > 3 || dSteps-steps > 10 {
		t.Fatalf("DEL of a million-element list did %d lookups and %d steps: not O(1)", dGets-gets, dSteps-steps)
	}
	deadline := time.Now().Add(20 * time.Second)
	for infoInt(t, c, "reclaimed_versions") == reclaimed {
		if time.Now().After(deadline) {
			t.Fatal("the deleted list's records were not reclaimed within 20 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := c.Do("LLEN", "big"); got.Int != 0 {
		t.Fatalf("LLEN after DEL = %s", got.String())
	}
}

// TestColdListMiddleEdits: LSET, LINSERT, LREM and LTRIM on a list held
// by its ends give the right content (they rewrite the shorter side).
func TestColdListMiddleEdits(t *testing.T) {
	const n = 20_000
	s := harness.StartSpillway(t, "", "--maxmemory", "8mb", "--appendfsync", "no", "--loglevel", "warning")
	ref := harness.StartRedis(t)
	c, rc := s.Conn(t), harness.MustDial(t, ref.Addr())
	loadList(t, c, "l", n)
	loadList(t, rc, "l", n)
	cmds := [][]string{
		{"LSET", "l", "10000", "changed"},
		{"LINSERT", "l", "BEFORE", elemOf(12000), "inserted"},
		{"LINSERT", "l", "AFTER", elemOf(300), "inserted"},
		{"LREM", "l", "0", "inserted"},
		{"LINSERT", "l", "AFTER", elemOf(19000), "x"},
		{"LREM", "l", "-1", elemOf(5)},
		{"LTRIM", "l", "100", "-100"},
		{"LRANGE", "l", "9890", "9910"},
		{"LRANGE", "l", "0", "5"},
		{"LRANGE", "l", "-5", "-1"},
		{"LPOS", "l", "x"},
		{"LPOS", "l", elemOf(15000), "RANK", "-1"},
		{"LLEN", "l"},
		{"LTRIM", "l", "5000", "5010"},
		{"LRANGE", "l", "0", "-1"},
	}
	for _, cmd := range cmds {
		want, got := rc.Do(cmd...), c.Do(cmd...)
		if string(want.Raw) != string(got.Raw) {
			t.Fatalf("%v: redis %s, spillway %s", cmd, want.String(), got.String())
		}
	}
}
