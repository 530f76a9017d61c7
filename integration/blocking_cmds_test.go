package integration

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// Blocking scenarios (run by TestBlocking, see blocking_test.go) on how
// each command serves its waiters: CLIENT LIST and INFO while blocked,
// first come first served, several keys, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP,
// chained wake-ups, WRONGTYPE and the exact reply bytes.

// blkIntrospection: a blocked client shows as flags=b cmd=blpop in CLIENT
// LIST and in INFO's blocked_clients, and both clear when it is served.
func blkIntrospection(t *testing.T, e *blkEnv) {
	adm := e.conn(t, 2)
	k := blkKey(t, "k")
	b := e.client(t, 2)
	b.send(t, []string{"BLPOP", k, "0"})
	deadline := time.Now().Add(blkWait)
	for {
		flags, _ := blkClientField(t, adm, b.id, "flags")
		n := blkBlockedClients(t, adm)
		if strings.Contains(flags, "b") && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("client blocked in BLPOP: CLIENT LIST flags=%s, INFO blocked_clients=%d; want flags=b and 1", flags, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if cmd, _ := blkClientField(t, adm, b.id, "cmd"); cmd != "blpop" {
		t.Errorf("CLIENT LIST cmd=%s for a client blocked in BLPOP", cmd)
	}
	blkExpect(t, adm, blkInt(1), "RPUSH", k, "a")
	b.expect(t, blkKV(k, "a"))
	e.waitBlockedCount(t, adm, 0)
	if flags, _ := blkClientField(t, adm, b.id, "flags"); flags != "N" {
		t.Fatalf("CLIENT LIST flags=%s after the client was served, want N", flags)
	}
}

// blkFIFO: clients blocked on one key are served first come, first served,
// by one push of several elements or by several pushes.
func blkFIFO(t *testing.T, e *blkEnv) {
	cases := []struct {
		name   string
		pushes func(k string) [][]string
		want   []string // elements served to the waiters, in blocking order
		rest   []string // the list afterwards
	}{
		{"rpush_one", func(k string) [][]string { return [][]string{{"RPUSH", k, "a", "b", "c"}} },
			[]string{"a", "b", "c"}, nil},
		{"rpush_each", func(k string) [][]string {
			return [][]string{{"RPUSH", k, "a"}, {"RPUSH", k, "b"}, {"RPUSH", k, "c"}}
		}, []string{"a", "b", "c"}, nil},
		{"lpush_one", func(k string) [][]string { return [][]string{{"LPUSH", k, "a", "b", "c"}} },
			[]string{"c", "b", "a"}, nil},
		{"more_elements_than_waiters", func(k string) [][]string {
			return [][]string{{"RPUSH", k, "a", "b", "c", "d", "e"}}
		}, []string{"a", "b", "c"}, []string{"d", "e"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			adm := e.conn(t, 2)
			k := blkKey(t, "k")
			var ws []*blkClient
			for range tc.want {
				ws = append(ws, e.block(t, adm, "BLPOP", k, "0"))
			}
			for _, p := range tc.pushes(k) {
				if r := adm.Do(p...); r.Type != ':' {
					t.Fatalf("%v: %s", p, r.String())
				}
			}
			for i, w := range ws {
				w.expect(t, blkKV(k, tc.want[i]))
			}
			blkList(t, adm, k, tc.rest...)
			for _, w := range ws {
				w.ping(t)
			}
		})
	}
	t.Run("fewer_elements_than_waiters", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		a := e.block(t, adm, "BLPOP", k, "0")
		b := e.block(t, adm, "BLPOP", k, "0")
		c := e.block(t, adm, "BLPOP", k, "0")
		blkExpect(t, adm, blkInt(1), "RPUSH", k, "a")
		a.expect(t, blkKV(k, "a"))
		b.quiet(t, blkQuiet)
		c.quiet(t, 0)
		blkExpect(t, adm, blkInt(2), "RPUSH", k, "b", "c")
		b.expect(t, blkKV(k, "b"))
		c.expect(t, blkKV(k, "c"))
		blkList(t, adm, k)
	})
}

// blkFIFOMixed: waiters of different commands on one key are served in
// blocking order, each taking from its own end.
func blkFIFOMixed(t *testing.T, e *blkEnv) {
	adm := e.conn(t, 2)
	k, d := blkKey(t, "k"), blkKey(t, "d")
	a := e.block(t, adm, "BLPOP", k, "0")
	b := e.block(t, adm, "BLMOVE", k, d, "LEFT", "RIGHT", "0")
	c := e.block(t, adm, "BRPOP", k, "0")
	m := e.block(t, adm, "BLMPOP", "0", "1", k, "LEFT", "COUNT", "2")
	blkExpect(t, adm, blkInt(5), "RPUSH", k, "a", "b", "c", "d", "e")
	a.expect(t, blkKV(k, "a"))
	b.expect(t, blkBulk("b"))
	c.expect(t, blkKV(k, "e"))
	m.expect(t, blkMpop(k, "c", "d"))
	blkList(t, adm, k)
	blkList(t, adm, d, "b")
}

// blkMultiKey: a client blocked on several keys is woken by any of them and
// says which; with several non-empty keys the first in argument order wins.
func blkMultiKey(t *testing.T, e *blkEnv) {
	t.Run("woken_by_each_key", func(t *testing.T) {
		adm := e.conn(t, 2)
		keys := []string{blkKey(t, "k1"), blkKey(t, "k2"), blkKey(t, "k3")}
		for i, k := range keys {
			w := e.block(t, adm, "BLPOP", keys[0], keys[1], keys[2], "0")
			if i == 0 {
				blkExpect(t, adm, blkInt(1), "RPUSH", blkKey(t, "other"), "z")
				w.quiet(t, blkQuiet)
			}
			v := "v" + strconv.Itoa(i)
			blkExpect(t, adm, blkInt(1), "RPUSH", k, v)
			w.expect(t, blkKV(k, v))
			blkExpect(t, adm, blkInt(0), "EXISTS", k)
		}
	})
	t.Run("first_nonempty_in_argument_order", func(t *testing.T) {
		adm := e.conn(t, 2)
		k1, k2, k3 := blkKey(t, "k1"), blkKey(t, "k2"), blkKey(t, "k3")
		blkExpect(t, adm, blkInt(2), "RPUSH", k2, "a", "b")
		blkExpect(t, adm, blkInt(1), "RPUSH", k3, "c")
		blkExpect(t, adm, blkKV(k2, "a"), "BLPOP", k1, k2, k3, "1")
		blkExpect(t, adm, blkKV(k3, "c"), "BRPOP", k1, k3, k2, "1")
		blkExpect(t, adm, blkKV(k2, "b"), "BRPOP", k1, k3, k2, "1")
		blkExpect(t, adm, blkInt(0), "EXISTS", k1, k2, k3)
	})
	t.Run("shared_key_fifo", func(t *testing.T) {
		adm := e.conn(t, 2)
		k1, k2 := blkKey(t, "k1"), blkKey(t, "k2")
		a := e.block(t, adm, "BLPOP", k1, k2, "0")
		b := e.block(t, adm, "BLPOP", k2, "0")
		blkExpect(t, adm, blkInt(2), "RPUSH", k2, "x", "y")
		a.expect(t, blkKV(k2, "x"))
		b.expect(t, blkKV(k2, "y"))
	})
	t.Run("same_key_twice", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		w := e.block(t, adm, "BLPOP", k, k, "0")
		blkExpect(t, adm, blkInt(2), "RPUSH", k, "a", "b")
		w.expect(t, blkKV(k, "a"))
		w.ping(t)
		blkList(t, adm, k, "b")
	})
}

// blkBRPOP: BRPOP takes from the tail, blocked or not.
func blkBRPOP(t *testing.T, e *blkEnv) {
	adm := e.conn(t, 2)
	k := blkKey(t, "k")
	w := e.block(t, adm, "BRPOP", k, "0")
	blkExpect(t, adm, blkInt(3), "RPUSH", k, "a", "b", "c")
	w.expect(t, blkKV(k, "c"))
	blkList(t, adm, k, "a", "b")
	blkExpect(t, adm, blkKV(k, "b"), "BRPOP", k, "0")
	blkList(t, adm, k, "a")
}

// blkBLMOVE: every LEFT/RIGHT combination, blocked and then immediate, and
// a list moved onto itself.
func blkBLMOVE(t *testing.T, e *blkEnv) {
	cases := []struct {
		from, to string
		first    string   // served to the blocked BLMOVE after RPUSH src a b c
		srcRest  []string // src after the blocked and an immediate BLMOVE
		dst      []string // dst (initially d1 d2) after both
	}{
		{"LEFT", "LEFT", "a", []string{"c"}, []string{"b", "a", "d1", "d2"}},
		{"LEFT", "RIGHT", "a", []string{"c"}, []string{"d1", "d2", "a", "b"}},
		{"RIGHT", "LEFT", "c", []string{"a"}, []string{"b", "c", "d1", "d2"}},
		{"RIGHT", "RIGHT", "c", []string{"a"}, []string{"d1", "d2", "c", "b"}},
	}
	for _, tc := range cases {
		t.Run(tc.from+"_"+tc.to, func(t *testing.T) {
			adm := e.conn(t, 2)
			src, dst := blkKey(t, "src"), blkKey(t, "dst")
			blkExpect(t, adm, blkInt(2), "RPUSH", dst, "d1", "d2")
			w := e.block(t, adm, "BLMOVE", src, dst, tc.from, tc.to, "0")
			blkExpect(t, adm, blkInt(3), "RPUSH", src, "a", "b", "c")
			w.expect(t, blkBulk(tc.first))
			blkExpect(t, adm, blkBulk("b"), "BLMOVE", src, dst, tc.from, tc.to, "0")
			blkList(t, adm, src, tc.srcRest...)
			blkList(t, adm, dst, tc.dst...)
		})
	}
	t.Run("same_key", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		w := e.block(t, adm, "BLMOVE", k, k, "RIGHT", "LEFT", "0")
		blkExpect(t, adm, blkInt(2), "RPUSH", k, "a", "b")
		w.expect(t, blkBulk("b"))
		blkList(t, adm, k, "b", "a")
		blkExpect(t, adm, blkBulk("b"), "BLMOVE", k, k, "left", "right", "0")
		blkList(t, adm, k, "a", "b")
	})
}

// blkBRPOPLPUSH: tail of the source to the head of the destination.
func blkBRPOPLPUSH(t *testing.T, e *blkEnv) {
	adm := e.conn(t, 2)
	src, dst := blkKey(t, "src"), blkKey(t, "dst")
	w := e.block(t, adm, "BRPOPLPUSH", src, dst, "0")
	blkExpect(t, adm, blkInt(2), "RPUSH", src, "a", "b")
	w.expect(t, blkBulk("b"))
	blkList(t, adm, src, "a")
	blkList(t, adm, dst, "b")
	blkExpect(t, adm, blkBulk("a"), "BRPOPLPUSH", src, dst, "0")
	blkList(t, adm, dst, "a", "b")
	blkExpect(t, adm, blkInt(0), "EXISTS", src)
}

// blkBLMPOP: direction, COUNT (up to n), default COUNT 1, several keys and
// several waiters sharing one push.
func blkBLMPOP(t *testing.T, e *blkEnv) {
	t.Run("immediate", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		blkExpect(t, adm, blkInt(4), "RPUSH", k, "a", "b", "c", "d")
		blkExpect(t, adm, blkMpop(k, "a", "b"), "BLMPOP", "0", "1", k, "LEFT", "COUNT", "2")
		blkExpect(t, adm, blkMpop(k, "d", "c"), "BLMPOP", "0", "1", k, "RIGHT", "COUNT", "5")
		blkExpect(t, adm, blkInt(0), "EXISTS", k)
	})
	t.Run("blocked_count", func(t *testing.T) {
		adm := e.conn(t, 2)
		k1, k2 := blkKey(t, "k1"), blkKey(t, "k2")
		w := e.block(t, adm, "BLMPOP", "0", "2", k1, k2, "RIGHT", "COUNT", "3")
		blkExpect(t, adm, blkInt(2), "RPUSH", k2, "a", "b")
		w.expect(t, blkMpop(k2, "b", "a"))
		blkExpect(t, adm, blkInt(0), "EXISTS", k1, k2)
	})
	t.Run("blocked_default_count", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		w := e.block(t, adm, "BLMPOP", "0", "1", k, "left")
		blkExpect(t, adm, blkInt(2), "RPUSH", k, "x", "y")
		w.expect(t, blkMpop(k, "x"))
		blkList(t, adm, k, "y")
	})
	t.Run("first_nonempty", func(t *testing.T) {
		adm := e.conn(t, 2)
		k1, k2, k3 := blkKey(t, "k1"), blkKey(t, "k2"), blkKey(t, "k3")
		blkExpect(t, adm, blkInt(1), "RPUSH", k2, "a")
		blkExpect(t, adm, blkInt(1), "RPUSH", k3, "b")
		blkExpect(t, adm, blkMpop(k2, "a"), "BLMPOP", "0", "3", k1, k2, k3, "LEFT", "COUNT", "10")
		blkList(t, adm, k3, "b")
	})
	t.Run("two_waiters_share_a_push", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		a := e.block(t, adm, "BLMPOP", "0", "1", k, "LEFT", "COUNT", "2")
		b := e.block(t, adm, "BLMPOP", "0", "1", k, "LEFT", "COUNT", "2")
		blkExpect(t, adm, blkInt(3), "RPUSH", k, "a", "b", "c")
		a.expect(t, blkMpop(k, "a", "b"))
		b.expect(t, blkMpop(k, "c"))
		blkExpect(t, adm, blkInt(0), "EXISTS", k)
	})
}

// blkChained: an element moved by a woken BLMOVE/BRPOPLPUSH wakes the
// clients blocked on its destination, in the same step.
func blkChained(t *testing.T, e *blkEnv) {
	t.Run("blmove_wakes_blpop", func(t *testing.T) {
		adm := e.conn(t, 2)
		src, dst := blkKey(t, "src"), blkKey(t, "dst")
		b := e.block(t, adm, "BLPOP", dst, "0")
		a := e.block(t, adm, "BLMOVE", src, dst, "LEFT", "RIGHT", "0")
		blkExpect(t, adm, blkInt(1), "RPUSH", src, "x")
		a.expect(t, blkBulk("x"))
		b.expect(t, blkKV(dst, "x"))
		blkExpect(t, adm, blkInt(0), "EXISTS", src, dst)
	})
	t.Run("brpoplpush_chain_of_three", func(t *testing.T) {
		adm := e.conn(t, 2)
		k1, k2, k3 := blkKey(t, "k1"), blkKey(t, "k2"), blkKey(t, "k3")
		a := e.block(t, adm, "BRPOPLPUSH", k1, k2, "0")
		b := e.block(t, adm, "BRPOPLPUSH", k2, k3, "0")
		c := e.block(t, adm, "BLPOP", k3, "0")
		blkExpect(t, adm, blkInt(1), "RPUSH", k1, "x")
		a.expect(t, blkBulk("x"))
		b.expect(t, blkBulk("x"))
		c.expect(t, blkKV(k3, "x"))
		blkExpect(t, adm, blkInt(0), "EXISTS", k1, k2, k3)
	})
	t.Run("cycle", func(t *testing.T) {
		adm := e.conn(t, 2)
		k1, k2 := blkKey(t, "k1"), blkKey(t, "k2")
		a := e.block(t, adm, "BLMOVE", k1, k2, "LEFT", "LEFT", "0")
		b := e.block(t, adm, "BLMOVE", k2, k1, "LEFT", "LEFT", "0")
		blkExpect(t, adm, blkInt(1), "RPUSH", k1, "x")
		a.expect(t, blkBulk("x"))
		b.expect(t, blkBulk("x"))
		blkList(t, adm, k1, "x")
		blkList(t, adm, k2)
	})
}

// blkWrongTypeCases: WRONGTYPE for a non-list key at call time, and for a
// BLMOVE whose destination became a string while it waited (the element
// goes back to the source).
func blkWrongTypeCases(t *testing.T, e *blkEnv) {
	adm := e.conn(t, 2)
	s, src, none := blkKey(t, "s"), blkKey(t, "src"), blkKey(t, "none")
	blkExpect(t, adm, "+OK\r\n", "SET", s, "x")
	blkExpect(t, adm, blkWrongType, "BLPOP", none, s, "0")
	blkExpect(t, adm, blkWrongType, "BLMPOP", "0", "2", none, s, "LEFT")
	blkExpect(t, adm, blkInt(1), "RPUSH", src, "x")
	blkExpect(t, adm, blkWrongType, "BLMOVE", src, s, "LEFT", "LEFT", "0")
	blkList(t, adm, src, "x")

	src2, dst2 := blkKey(t, "src2"), blkKey(t, "dst2")
	w := e.block(t, adm, "BLMOVE", src2, dst2, "LEFT", "RIGHT", "0")
	blkExpect(t, adm, "+OK\r\n", "SET", dst2, "str")
	blkExpect(t, adm, blkInt(1), "RPUSH", src2, "x")
	w.expect(t, blkWrongType)
	blkList(t, adm, src2, "x")
	blkExpect(t, adm, blkBulk("str"), "GET", dst2)
	w.ping(t)

	// The element the failed BLMOVE put back goes to the next waiter.
	src3, dst3 := blkKey(t, "src3"), blkKey(t, "dst3")
	a := e.block(t, adm, "BLMOVE", src3, dst3, "LEFT", "RIGHT", "0")
	b := e.block(t, adm, "BLPOP", src3, "0")
	blkExpect(t, adm, "+OK\r\n", "SET", dst3, "str")
	blkExpect(t, adm, blkInt(1), "RPUSH", src3, "x")
	a.expect(t, blkWrongType)
	b.expect(t, blkKV(src3, "x"))
	blkExpect(t, adm, blkInt(0), "EXISTS", src3)
}

// blkShapes: exact reply bytes of each command served after blocking, in
// RESP2 and RESP3.
func blkShapes(t *testing.T, e *blkEnv) {
	for _, proto := range []int{2, 3} {
		t.Run("resp"+strconv.Itoa(proto), func(t *testing.T) {
			adm := e.conn(t, 2)
			k, d := blkKey(t, "k"), blkKey(t, "d")
			cases := []struct {
				args []string
				want string
			}{
				{[]string{"BLPOP", k, "0"}, blkKV(k, "v")},
				{[]string{"BRPOP", k, "0"}, blkKV(k, "w")},
				{[]string{"BLMOVE", k, d, "LEFT", "LEFT", "0"}, blkBulk("v")},
				{[]string{"BRPOPLPUSH", k, d, "0"}, blkBulk("w")},
				{[]string{"BLMPOP", "0", "1", k, "LEFT", "COUNT", "2"}, blkMpop(k, "v", "w")},
			}
			for _, tc := range cases {
				w := e.blockProto(t, adm, proto, tc.args...)
				blkExpect(t, adm, blkInt(2), "RPUSH", k, "v", "w")
				w.expect(t, tc.want)
				if r := adm.Do("DEL", k, d); r.Type != ':' {
					t.Fatalf("DEL: %s", r.String())
				}
			}
		})
	}
}
