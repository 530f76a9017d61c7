package integration

import (
	"strconv"
	"testing"
	"time"
)

// Blocking sorted-set pops (BZPOPMIN, BZPOPMAX, BZMPOP), run by TestBlocking
// against redis-server and Spillway like the list scenarios.

// blkDouble encodes a score reply: a bulk string in RESP2, a double in RESP3.
func blkDouble(proto int, s string) string {
	if proto == 3 {
		return "," + s + "\r\n"
	}
	return blkBulk(s)
}

// blkZPop is BZPOPMIN/BZPOPMAX's reply: key, member, score.
func blkZPop(proto int, k, m, s string) string {
	return blkArr(blkBulk(k), blkBulk(m), blkDouble(proto, s))
}

// blkZSets: waiters of BZPOPMIN, BZPOPMAX and BZMPOP on one key are served
// first come first served, each from its own end, in both protocols;
// timeouts answer nil; a disconnected waiter takes nothing; a sorted set
// created too big for Spillway's memory (served from its store) wakes
// waiters too.
func blkZSets(t *testing.T, e *blkEnv) {
	for _, proto := range []int{2, 3} {
		t.Run("fifo/resp"+strconv.Itoa(proto), func(t *testing.T) {
			adm := e.conn(t, 2)
			k := blkKey(t, "z")
			a := e.blockProto(t, adm, proto, "BZPOPMIN", k, "0")
			b := e.blockProto(t, adm, proto, "BZPOPMAX", k, "0")
			c := e.blockProto(t, adm, proto, "BZMPOP", "0", "1", k, "MIN", "COUNT", "2")
			blkExpect(t, adm, blkInt(5), "ZADD", k, "1", "a", "2", "b", "3", "c", "4", "d", "5.5", "e")
			a.expect(t, blkZPop(proto, k, "a", "1"))
			b.expect(t, blkZPop(proto, k, "e", "5.5"))
			c.expect(t, blkArr(blkBulk(k), blkArr(
				blkArr(blkBulk("b"), blkDouble(proto, "2")),
				blkArr(blkBulk("c"), blkDouble(proto, "3")))))
			blkExpect(t, adm, blkBulks("d"), "ZRANGE", k, "0", "-1")
		})
	}
	t.Run("timeout", func(t *testing.T) {
		for _, proto := range []int{2, 3} {
			c := e.conn(t, proto)
			start := time.Now()
			for _, args := range [][]string{
				{"BZPOPMIN", blkKey(t, "none"), "0.05"},
				{"BZMPOP", "0.05", "1", blkKey(t, "none"), "MAX"},
			} {
				blkExpect(t, c, blkNil(proto), args...)
			}
			if d := time.Since(start); d < 100*time.Millisecond {
				t.Fatalf("two 50 ms timeouts answered in %v", d)
			}
		}
	})
	t.Run("disconnect", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "z")
		w := e.block(t, adm, "BZPOPMIN", k, "0")
		w.c.Close()
		e.waitGone(t, adm, w.id)
		blkExpect(t, adm, blkInt(1), "ZADD", k, "1", "m")
		blkExpect(t, adm, blkInt(1), "ZCARD", k)
	})
	t.Run("wrongtype", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "s")
		blkExpect(t, adm, blkInt(1), "RPUSH", k, "x")
		blkExpect(t, adm, "-"+"WRONGTYPE Operation against a key holding the wrong kind of value\r\n", "BZPOPMIN", k, "0")
	})
	t.Run("created_big", func(t *testing.T) {
		// 5,000 members: more than Spillway holds in memory, so the set
		// is written straight to its store.
		adm := e.conn(t, 2)
		k := blkKey(t, "big")
		w := e.block(t, adm, "BZPOPMAX", k, "0")
		args := []string{"ZADD", k}
		for i := range 5000 {
			args = append(args, strconv.Itoa(i), "m"+strconv.Itoa(i))
		}
		blkExpect(t, adm, blkInt(5000), args...)
		w.expect(t, blkZPop(2, k, "m4999", "4999"))
		blkExpect(t, adm, blkInt(4999), "ZCARD", k)
		if e.spillway() {
			if r := adm.Do("OBJECT", "ENCODING", k); r.Str != "skiplist" {
				t.Fatalf("OBJECT ENCODING = %s", r.String())
			}
		}
	})
}
