package integration

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// Blocking scenarios (run by TestBlocking, see blocking_test.go) on lists
// too big for Spillway's hot tier, lists whose TTL has passed, and the
// conservation of pushed elements under racing timeouts and CLIENT UNBLOCK.

// blkBig is element i of a large test list (8 KB).
func blkBig(i int) string {
	return fmt.Sprintf("big-%03d-", i) + strings.Repeat("x", 8<<10)
}

// blkPushBig creates key as a list of n big elements in one RPUSH. With
// n = 40 (320 KB) it is too big for Spillway to hold whole in its 256 KB
// hot tier (the limit is an eighth of it): its elements live in the cold
// store, with at most a window of each end in memory.
func blkPushBig(t *testing.T, c *harness.Conn, key string, n int) {
	t.Helper()
	args := []string{"RPUSH", key}
	for i := range n {
		args = append(args, blkBig(i))
	}
	blkExpect(t, c, blkInt(n), args...)
}

// blkFill writes n 1 KB strings with pipelined SETs, enough to push the
// rest of a 256 KB hot tier out.
func blkFill(t *testing.T, c *harness.Conn, prefix string, n int) {
	t.Helper()
	v := strings.Repeat("f", 1<<10)
	for i := range n {
		if err := c.Send("SET", prefix+strconv.Itoa(i), v); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if r := c.Read(); r.Str != "OK" {
			t.Fatalf("filler SET %d: %s", i, r.String())
		}
	}
}

// blkPressure: waiters served from lists created under memory pressure
// and too big to be held whole in Spillway's hot tier (by BLPOP, by a
// BLMOVE from them, by a BLMOVE into one, by a RENAME of one onto the
// waited key). On Spillway the filler must have caused demotions.
func blkPressure(t *testing.T, e *blkEnv) {
	const n = 40 // 40 x 8 KB: 320 KB, above Spillway's whole hot tier
	adm := e.conn(t, 2)
	k, src, dst := blkKey(t, "k"), blkKey(t, "src"), blkKey(t, "dst")
	big, k2, dst2 := blkKey(t, "big"), blkKey(t, "k2"), blkKey(t, "dst2")
	wk := e.block(t, adm, "BLPOP", k, "0")
	wm := e.block(t, adm, "BLMOVE", src, dst, "LEFT", "RIGHT", "0")
	var demotions int64
	if e.spillway() {
		demotions = infoInt(t, adm, "demotions")
	}
	blkFill(t, adm, blkKey(t, "fill:"), 1000)
	if e.spillway() {
		if d := infoInt(t, adm, "demotions") - demotions; d == 0 {
			t.Fatalf("1 MB of filler with --maxmemory 1mb caused no demotions")
		}
	}

	blkPushBig(t, adm, k, n)
	wk.expect(t, blkKV(k, blkBig(0)))
	blkExpect(t, adm, blkInt(n-1), "LLEN", k)
	blkExpect(t, adm, blkBulk(blkBig(1)), "LINDEX", k, "0")
	blkExpect(t, adm, blkBulk(blkBig(n-1)), "LINDEX", k, "-1")

	blkPushBig(t, adm, src, n)
	wm.expect(t, blkBulk(blkBig(0)))
	blkList(t, adm, dst, blkBig(0))
	blkExpect(t, adm, blkInt(n-1), "LLEN", src)
	blkExpect(t, adm, blkBulk(blkBig(1)), "LINDEX", src, "0")

	// BLMOVE into a big (cold) destination.
	blkPushBig(t, adm, dst2, n)
	w2 := e.block(t, adm, "BLMOVE", k2, dst2, "LEFT", "RIGHT", "0")
	blkExpect(t, adm, blkInt(1), "RPUSH", k2, "x")
	w2.expect(t, blkBulk("x"))
	blkExpect(t, adm, blkInt(n+1), "LLEN", dst2)
	blkExpect(t, adm, blkBulk("x"), "LINDEX", dst2, "-1")
	blkExpect(t, adm, blkBulk(blkBig(0)), "LINDEX", dst2, "0")

	// A big (cold) list renamed onto a waiter's key.
	blkPushBig(t, adm, big, n)
	w3 := e.block(t, adm, "BLPOP", k2, "0")
	blkExpect(t, adm, "+OK\r\n", "RENAME", big, k2)
	w3.expect(t, blkKV(k2, blkBig(0)))
	blkExpect(t, adm, blkInt(n-1), "LLEN", k2)

	blkExpect(t, adm, blkBulk(strings.Repeat("f", 1<<10)), "GET", blkKey(t, "fill:")+"0")
	blkExpect(t, adm, blkBulk(strings.Repeat("f", 1<<10)), "GET", blkKey(t, "fill:")+"999")
}

// blkExpired: a list whose TTL has passed (small and hot, or big and cold
// on Spillway) is no list: BLPOP blocks instead of serving its stale
// elements, and the next push creates a fresh list that serves it.
func blkExpired(t *testing.T, e *blkEnv) {
	for _, n := range []int{1, 40} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			adm := e.conn(t, 2)
			k := blkKey(t, "k")
			blkPushBig(t, adm, k, n)
			blkExpect(t, adm, blkInt(1), "PEXPIRE", k, "20")
			// Let the TTL pass without touching the key (a sleep for
			// expiry, not for ordering).
			time.Sleep(100 * time.Millisecond)
			w := e.block(t, adm, "BLPOP", k, "0")
			w.quiet(t, blkQuiet)
			blkExpect(t, adm, blkInt(1), "RPUSH", k, "fresh")
			w.expect(t, blkKV(k, "fresh"))
			blkExpect(t, adm, blkInt(0), "EXISTS", k)
			blkExpect(t, adm, blkInt(-2), "PTTL", k)
		})
	}
}

// blkConservation races waiters whose 10 ms timeouts keep expiring, a
// pusher and a CLIENT UNBLOCK caller: every pushed element must end up
// served exactly once or still in the list, BLMOVE/BRPOPLPUSH
// destinations must hold exactly what their clients were told they moved,
// and a client popping from the left sees elements in push order.
func blkConservation(t *testing.T, e *blkEnv) {
	const pushes = 2000
	adm := e.conn(t, 2)
	k, d1, d2 := blkKey(t, "k"), blkKey(t, "d1"), blkKey(t, "d2")
	specs := []struct {
		cmd  []string
		left bool // pops from the head
	}{
		{[]string{"BLPOP", k, "0.01"}, true},
		{[]string{"BLPOP", k, "0.01"}, true},
		{[]string{"BLMPOP", "0.01", "1", k, "LEFT", "COUNT", "3"}, true},
		{[]string{"BLMOVE", k, d1, "LEFT", "RIGHT", "0.01"}, true},
		{[]string{"BRPOPLPUSH", k, d2, "0.01"}, false},
		{[]string{"BRPOP", k, "0.01"}, false},
	}
	elem := func(i int) string { return fmt.Sprintf("e%05d", i) }

	conns := make([]*harness.Conn, len(specs))
	ids := make([]string, len(specs))
	for i := range specs {
		c := e.conn(t, 2)
		r := c.Do("CLIENT", "ID")
		conns[i], ids[i] = c, r.Str
	}
	var stop atomic.Bool
	var nils atomic.Int64 // timed out or unblocked: the race partners
	var wg sync.WaitGroup
	got := make([][]string, len(specs))
	errs := make([]error, len(specs)+1)
	deadline := time.Now().Add(4 * blkWait)
	for i, sp := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() && time.Now().Before(deadline) {
				if err := conns[i].Send(sp.cmd...); err != nil {
					errs[i] = err
					return
				}
				r := conns[i].Read()
				switch {
				case r.Err != nil || r.IsError():
					errs[i] = fmt.Errorf("%s: %s", sp.cmd[0], r.String())
					return
				case r.Null:
					nils.Add(1)
				case r.Type == '$':
					got[i] = append(got[i], r.Str)
				case sp.cmd[0] == "BLMPOP" && len(r.Elems) == 2:
					for _, el := range r.Elems[1].Elems {
						got[i] = append(got[i], el.Str)
					}
				case len(r.Elems) == 2:
					got[i] = append(got[i], r.Elems[1].Str)
				default:
					errs[i] = fmt.Errorf("%s: odd reply %s", sp.cmd[0], r.String())
					return
				}
			}
		}()
	}
	unblocker := e.conn(t, 2)
	wg.Add(1)
	go func() {
		defer wg.Done()
		rnd := rand.New(rand.NewSource(2))
		for !stop.Load() && time.Now().Before(deadline) {
			if err := unblocker.Send("CLIENT", "UNBLOCK", ids[rnd.Intn(len(ids))]); err != nil {
				errs[len(specs)] = err
				return
			}
			if r := unblocker.Read(); r.Type != ':' {
				errs[len(specs)] = fmt.Errorf("CLIENT UNBLOCK: %s", r.String())
				return
			}
			time.Sleep(time.Duration(rnd.Intn(3)) * time.Millisecond)
		}
	}()

	rnd := rand.New(rand.NewSource(1))
	for i := 0; i < pushes; {
		args := []string{"RPUSH", k}
		for j := 0; j < 1+rnd.Intn(3) && i < pushes; j++ {
			args = append(args, elem(i))
			i++
		}
		if r := adm.Do(args...); r.Type != ':' {
			stop.Store(true)
			t.Fatalf("RPUSH: %s", r.String())
		}
		if rnd.Intn(20) == 0 {
			time.Sleep(time.Duration(rnd.Intn(15)) * time.Millisecond)
		}
	}
	stop.Store(true)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	seen := map[string]string{}
	note := func(v, where string) {
		if prev, ok := seen[v]; ok {
			t.Fatalf("element %s delivered twice: %s and %s", v, prev, where)
		}
		seen[v] = where
	}
	served := 0
	for i, vs := range got {
		served += len(vs)
		for j, v := range vs {
			note(v, fmt.Sprintf("client %d (%s)", i, specs[i].cmd[0]))
			if specs[i].left && j > 0 && vs[j-1] >= v {
				t.Fatalf("client %d (%s) got %s after %s: not in push order", i, specs[i].cmd[0], v, vs[j-1])
			}
		}
	}
	rest := adm.Do("LRANGE", k, "0", "-1")
	for _, el := range rest.Elems {
		note(el.Str, "the list")
	}
	for i := range pushes {
		if _, ok := seen[elem(i)]; !ok {
			t.Fatalf("element %s was pushed but neither served nor left in the list (%d served, %d left)", elem(i), served, len(rest.Elems))
		}
	}
	if len(seen) != pushes {
		t.Fatalf("%d distinct elements seen, %d pushed", len(seen), pushes)
	}
	blkList(t, adm, d1, got[3]...)
	rev := make([]string, len(got[4]))
	for i, v := range got[4] {
		rev[len(rev)-1-i] = v
	}
	blkList(t, adm, d2, rev...)
	t.Logf("%d elements served, %d left in the list, %d nil replies (timeouts and unblocks)", served, len(rest.Elems), nils.Load())
	if served == 0 {
		t.Fatal("no element was served to a blocked client")
	}
}
