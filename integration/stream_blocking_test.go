package integration

import (
	"strconv"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// Blocked stream readers (XREAD, XREADGROUP BLOCK), against redis-server
// and Spillway: the same commands must get the same replies, byte for
// byte, in both protocols.

// TestStreamBlocking runs the stream blocking scenarios on both servers.
func TestStreamBlocking(t *testing.T) {
	targets := []struct {
		name  string
		start func(*testing.T) *harness.Server
	}{
		{"redis", func(t *testing.T) *harness.Server { return harness.StartRedis(t) }},
		{"spillway", func(t *testing.T) *harness.Server { return harness.StartSpillway(t, "", blkSpillwayArgs...) }},
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			e := &blkEnv{srv: tg.start(t), name: tg.name}
			e.visible = e.probeVisible(t)
			for _, proto := range []int{2, 3} {
				t.Run("resp"+strconv.Itoa(proto), func(t *testing.T) { streamBlocking(t, e, proto) })
			}
		})
	}
}

// xreadReply is a served XREAD's reply: one stream with one entry.
func xreadReply(proto int, key, id string, fv ...string) string {
	entries := blkArr(blkArr(blkBulk(id), blkBulks(fv...)))
	if proto == 3 {
		return "%1\r\n" + blkBulk(key) + entries
	}
	return blkArr(blkArr(blkBulk(key), entries))
}

func streamBlocking(t *testing.T, e *blkEnv, proto int) {
	t.Run("xadd_wakes_in_id_order", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "s")
		blkExpect(t, adm, blkBulk("1-0"), "XADD", k, "1", "f", "a")
		late := e.blockProto(t, adm, proto, "XREAD", "BLOCK", "0", "STREAMS", k, "5")
		early := e.blockProto(t, adm, proto, "XREAD", "BLOCK", "0", "STREAMS", k, "$")
		blkExpect(t, adm, blkBulk("3-0"), "XADD", k, "3", "f", "b")
		early.expect(t, xreadReply(proto, k, "3-0", "f", "b"))
		blkExpect(t, adm, blkBulk("6-0"), "XADD", k, "6", "f", "c")
		late.expect(t, xreadReply(proto, k, "6-0", "f", "c"))
	})
	t.Run("behind_a_list_waiter", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "s")
		pop := e.blockProto(t, adm, proto, "BLPOP", k, "0")
		r := e.blockProto(t, adm, proto, "XREAD", "BLOCK", "0", "STREAMS", k, "$")
		blkExpect(t, adm, blkBulk("4-0"), "XADD", k, "4", "f", "v")
		r.expect(t, xreadReply(proto, k, "4-0", "f", "v"))
		blkExpect(t, adm, blkInt(1), "CLIENT", "UNBLOCK", strconv.FormatInt(pop.id, 10))
		pop.expect(t, blkNil(proto))
	})
	t.Run("xreadgroup_delivers_and_records", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "s")
		blkExpect(t, adm, "+OK\r\n", "XGROUP", "CREATE", k, "g", "$", "MKSTREAM")
		w := e.blockProto(t, adm, proto, "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", k, ">")
		blkExpect(t, adm, blkBulk("7-1"), "XADD", k, "7-1", "f", "v")
		w.expect(t, xreadReply(proto, k, "7-1", "f", "v"))
		blkExpect(t, adm, blkArr(blkInt(1), blkBulk("7-1"), blkBulk("7-1"), blkArr(blkArr(blkBulk("alice"), blkBulk("1")))),
			"XPENDING", k, "g")
	})
	t.Run("group_destroyed", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "s")
		blkExpect(t, adm, "+OK\r\n", "XGROUP", "CREATE", k, "g", "$", "MKSTREAM")
		w := e.blockProto(t, adm, proto, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", k, ">")
		blkExpect(t, adm, blkInt(1), "XGROUP", "DESTROY", k, "g")
		w.expect(t, "-NOGROUP the consumer group this client was blocked on no longer exists\r\n")
	})
	for _, how := range [][]string{{"DEL"}, {"SET", "x"}} {
		t.Run("key_gone_"+how[0], func(t *testing.T) {
			adm := e.conn(t, 2)
			k := blkKey(t, "s")
			blkExpect(t, adm, "+OK\r\n", "XGROUP", "CREATE", k, "g", "$", "MKSTREAM")
			r := e.blockProto(t, adm, proto, "XREAD", "BLOCK", "0", "STREAMS", k, "$")
			w := e.blockProto(t, adm, proto, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", k, ">")
			adm.Do(append([]string{how[0], k}, how[1:]...)...)
			w.expect(t, "-UNBLOCKED the stream key no longer exists\r\n")
			if how[0] == "DEL" {
				blkExpect(t, adm, blkBulk("1-0"), "XADD", k, "1", "f", "v")
				r.expect(t, xreadReply(proto, k, "1-0", "f", "v"))
			} else {
				blkExpect(t, adm, blkInt(1), "CLIENT", "UNBLOCK", strconv.FormatInt(r.id, 10))
				r.expect(t, blkNil(proto))
			}
		})
	}
	t.Run("timeout_and_unblock", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "s")
		c := e.conn(t, proto)
		blkExpect(t, c, blkNil(proto), "XREAD", "BLOCK", "20", "STREAMS", k, "$")
		w := e.blockProto(t, adm, proto, "XREAD", "BLOCK", "0", "STREAMS", k, "0")
		blkExpect(t, adm, blkInt(1), "CLIENT", "UNBLOCK", strconv.FormatInt(w.id, 10), "ERROR")
		w.expect(t, blkUnblockedErr)
	})
	t.Run("multi_answers_at_once", func(t *testing.T) {
		c := e.conn(t, proto)
		k := blkKey(t, "s")
		blkExpect(t, c, "+OK\r\n", "MULTI")
		blkExpect(t, c, "+QUEUED\r\n", "XREAD", "BLOCK", "0", "STREAMS", k, "$")
		blkExpect(t, c, "*1\r\n"+blkNil(proto), "EXEC")
	})
}
