package integration

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// Blocking scenarios (run by TestBlocking, see blocking_test.go) on when a
// wait ends: timeouts, argument errors, the writes that wake a waiter and
// those that do not, MULTI/EXEC, and databases (SELECT, SWAPDB).

// blkTimeoutCmds are the blocking commands with a timeout placeholder.
func blkTimeoutCmds(k, d, timeout string) [][]string {
	return [][]string{
		{"BLPOP", k, timeout},
		{"BRPOP", k, timeout},
		{"BLMOVE", k, d, "LEFT", "RIGHT", timeout},
		{"BRPOPLPUSH", k, d, timeout},
		{"BLMPOP", timeout, "1", k, "LEFT"},
	}
}

// blkTimeouts: a fractional timeout ends in the protocol's nil after at
// least that long; timeout 0 waits for a push; a served client gets no
// late timeout reply.
func blkTimeouts(t *testing.T, e *blkEnv) {
	for _, proto := range []int{2, 3} {
		t.Run("fractional_resp"+strconv.Itoa(proto), func(t *testing.T) {
			c := e.conn(t, proto)
			k, d := blkKey(t, "k"), blkKey(t, "d")
			for _, args := range blkTimeoutCmds(k, d, "0.1") {
				start := time.Now()
				r := c.Do(args...)
				took := time.Since(start)
				if string(r.Raw) != blkNil(proto) {
					t.Fatalf("%s: got %q, want %q", args[0], r.Raw, blkNil(proto))
				}
				// Redis keeps deadlines in whole milliseconds, so it may
				// answer up to 1 ms early; a lower bound only.
				if took < 98*time.Millisecond {
					t.Fatalf("%s with timeout 0.1 answered nil after %v", args[0], took)
				}
				if r := c.Do("PING"); r.Str != "PONG" {
					t.Fatalf("PING after %s timed out: %s", args[0], r.String())
				}
			}
			blkExpect(t, c, blkInt(0), "EXISTS", k, d)
		})
	}
	t.Run("zero_waits_for_push", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		w := e.block(t, adm, "BLPOP", k, "0")
		w.quiet(t, 2*blkQuiet)
		blkExpect(t, adm, blkInt(1), "RPUSH", k, "a")
		w.expect(t, blkKV(k, "a"))
	})
	t.Run("served_before_timeout", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		w := e.block(t, adm, "BLPOP", k, "1")
		blkExpect(t, adm, blkInt(1), "RPUSH", k, "a")
		w.expect(t, blkKV(k, "a"))
		// Past the original deadline: nothing more may arrive. The PING
		// goes straight to the socket, as a reader is already waiting.
		w.listen()
		w.quiet(t, 1100*time.Millisecond)
		if _, err := w.c.NetConn().Write(harness.EncodeCommand([]byte("PING"))); err != nil {
			t.Fatal(err)
		}
		w.expect(t, "+PONG\r\n")
	})
	t.Run("sub_millisecond_times_out", func(t *testing.T) {
		// Redis rounds a positive timeout up to whole milliseconds: these
		// time out (within a few hundred ms), they do not wait for ever.
		// Sent at once on separate connections, so a server that waits
		// for ever costs one blkWait, not three.
		k := blkKey(t, "k")
		var ws []*blkClient
		timeouts := []string{"0.0001", "0.0009", "0.001", "1e-3"}
		for _, to := range timeouts {
			w := e.client(t, 2)
			w.send(t, []string{"BLPOP", k, to})
			ws = append(ws, w)
		}
		deadline := time.Now().Add(blkWait)
		for i, w := range ws {
			timer := time.NewTimer(max(time.Until(deadline), time.Millisecond))
			select {
			case r := <-w.replies:
				if string(r.Raw) != "*-1\r\n" {
					t.Errorf("BLPOP %s %s: got %q (err %v), want a nil array", k, timeouts[i], r.Raw, r.Err)
				}
			case <-timer.C:
				t.Errorf("BLPOP %s %s: no reply within %v; the timeout was taken as 0 (wait for ever)", k, timeouts[i], blkWait)
			}
			timer.Stop()
		}
	})
	t.Run("huge_or_negative_zero_blocks", func(t *testing.T) {
		// -0.0001 s rounds to 0 (no timeout), not an error; timeouts of
		// centuries (1e10 s: 1e13 ms) simply block.
		for _, to := range []string{"-0.0001", "1e10", "9300000000", "1e12"} {
			t.Run(to, func(t *testing.T) {
				adm := e.conn(t, 2)
				k := blkKey(t, "k")
				w := e.block(t, adm, "BLPOP", k, to)
				w.quiet(t, blkQuiet)
				blkExpect(t, adm, blkInt(1), "RPUSH", k, to)
				w.expect(t, blkKV(k, to))
			})
		}
	})
}

// blkBadArgs: timeout errors for every blocking command (checked before
// any key, so nothing is popped), and BLMPOP's argument errors.
func blkBadArgs(t *testing.T, e *blkEnv) {
	c := e.conn(t, 2)
	c.Timeout = 2 * time.Second // none of these may block
	k, d := blkKey(t, "k"), blkKey(t, "d")
	timeouts := []struct{ timeout, want string }{
		{"abc", blkNotFloat},
		{"", blkNotFloat},
		{"nan", blkNotFloat},
		{" 1", blkNotFloat},
		{"1 ", blkNotFloat},
		{"1s", blkNotFloat},
		{"-1", blkNegative},
		{"-0.5", blkNegative},
		{"-inf", blkNegative},
		// Redis converts to milliseconds in a long long: +inf overflows to
		// a negative value.
		{"inf", blkNegative},
	}
	for _, tc := range timeouts {
		for _, args := range blkTimeoutCmds(k, d, tc.timeout) {
			blkExpect(t, c, tc.want, args...)
		}
	}
	blkExpect(t, c, blkInt(1), "RPUSH", k, "a")
	for _, args := range blkTimeoutCmds(k, d, "abc") {
		blkExpect(t, c, blkNotFloat, args...)
	}
	blkList(t, c, k, "a")
	blkExpect(t, c, blkInt(0), "EXISTS", d)

	const numkeys = "-ERR numkeys should be greater than 0\r\n"
	const count = "-ERR count should be greater than 0\r\n"
	argErrs := []struct {
		args []string
		want string
	}{
		{[]string{"BLMPOP", "0", "0", k, "LEFT"}, numkeys},
		{[]string{"BLMPOP", "0", "-1", k, "LEFT"}, numkeys},
		{[]string{"BLMPOP", "-1", "x", k, "LEFT"}, numkeys},
		{[]string{"BLMPOP", "0", "1", k, "UP"}, blkSyntax},
		{[]string{"BLMPOP", "0", "2", k, "LEFT"}, blkSyntax},
		{[]string{"BLMPOP", "abc", "1", k, "UP"}, blkSyntax},
		{[]string{"BLMPOP", "0", "1", k, "LEFT", "COUNT", "0"}, count},
		{[]string{"BLMPOP", "0", "1", k, "LEFT", "COUNT", "-1"}, count},
		{[]string{"BLMPOP", "abc", "1", k, "LEFT", "COUNT", "0"}, count},
		{[]string{"BLMPOP", "0", "1", k, "LEFT", "COUNT", "1", "COUNT", "2"}, blkSyntax},
		{[]string{"BLMOVE", k, d, "UP", "LEFT", "0"}, blkSyntax},
		{[]string{"BLMOVE", k, d, "LEFT", "UP", "abc"}, blkSyntax},
	}
	for _, tc := range argErrs {
		blkExpect(t, c, tc.want, tc.args...)
	}
	blkList(t, c, k, "a")
}

// blkWakeSources: which writes wake a client blocked in BLPOP k 0. Pushes,
// LMOVE/RPOPLPUSH/BLMOVE into k, and a list created by RENAME or COPY do;
// LPUSHX/RPUSHX/LINSERT (no list to act on), a write to another key, and a
// string at k do not.
func blkWakeSources(t *testing.T, e *blkEnv) {
	type step struct {
		args []string
		want string
	}
	cases := []struct {
		name   string
		setup  func(src string) [][]string
		steps  func(k, src string) []step
		served string   // element served, "" if the client stays blocked
		rest   []string // k afterwards (after a final RPUSH k z when blocked)
	}{
		{"lpush", nil, func(k, _ string) []step { return []step{{[]string{"LPUSH", k, "a", "b"}, blkInt(2)}} },
			"b", []string{"a"}},
		{"rpush", nil, func(k, _ string) []step { return []step{{[]string{"RPUSH", k, "a", "b"}, blkInt(2)}} },
			"a", []string{"b"}},
		{"lmove", func(src string) [][]string { return [][]string{{"RPUSH", src, "x", "y"}} },
			func(k, src string) []step { return []step{{[]string{"LMOVE", src, k, "RIGHT", "LEFT"}, blkBulk("y")}} },
			"y", nil},
		{"rpoplpush", func(src string) [][]string { return [][]string{{"RPUSH", src, "x", "y"}} },
			func(k, src string) []step { return []step{{[]string{"RPOPLPUSH", src, k}, blkBulk("y")}} },
			"y", nil},
		{"blmove_immediate", func(src string) [][]string { return [][]string{{"RPUSH", src, "x"}} },
			func(k, src string) []step {
				return []step{{[]string{"BLMOVE", src, k, "LEFT", "LEFT", "0"}, blkBulk("x")}}
			}, "x", nil},
		{"rename", func(src string) [][]string { return [][]string{{"RPUSH", src, "x", "y"}} },
			func(k, src string) []step { return []step{{[]string{"RENAME", src, k}, "+OK\r\n"}} },
			"x", []string{"y"}},
		{"copy", func(src string) [][]string { return [][]string{{"RPUSH", src, "x", "y"}} },
			func(k, src string) []step { return []step{{[]string{"COPY", src, k}, blkInt(1)}} },
			"x", []string{"y"}},
		{"lpushx", nil, func(k, _ string) []step { return []step{{[]string{"LPUSHX", k, "a"}, blkInt(0)}} },
			"", nil},
		{"rpushx", nil, func(k, _ string) []step { return []step{{[]string{"RPUSHX", k, "a"}, blkInt(0)}} },
			"", nil},
		{"linsert", nil, func(k, _ string) []step {
			return []step{{[]string{"LINSERT", k, "BEFORE", "p", "x"}, blkInt(0)}}
		}, "", nil},
		{"other_key", nil, func(_, src string) []step { return []step{{[]string{"RPUSH", src, "a"}, blkInt(1)}} },
			"", nil},
		{"string_then_del", nil, func(k, _ string) []step {
			return []step{{[]string{"SET", k, "s"}, "+OK\r\n"}, {[]string{"DEL", k}, blkInt(1)}}
		}, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			adm := e.conn(t, 2)
			k, src := blkKey(t, "k"), blkKey(t, "src")
			if tc.setup != nil {
				for _, args := range tc.setup(src) {
					if r := adm.Do(args...); r.IsError() {
						t.Fatalf("%v: %s", args, r.String())
					}
				}
			}
			w := e.block(t, adm, "BLPOP", k, "0")
			for _, s := range tc.steps(k, src) {
				blkExpect(t, adm, s.want, s.args...)
			}
			if tc.served != "" {
				w.expect(t, blkKV(k, tc.served))
			} else {
				w.quiet(t, blkQuiet)
				blkExpect(t, adm, blkInt(1), "RPUSH", k, "z")
				w.expect(t, blkKV(k, "z"))
			}
			blkList(t, adm, k, tc.rest...)
		})
	}
}

// blkMultiExec: a push inside MULTI/EXEC wakes at EXEC, one popped again in
// the same transaction wakes nobody, and blocking commands inside MULTI
// answer at once. Skipped (the only skip) when the server lacks MULTI.
func blkMultiExec(t *testing.T, e *blkEnv) {
	adm := e.conn(t, 2)
	adm.Timeout = blkWait
	k, k2 := blkKey(t, "k"), blkKey(t, "k2")
	w := e.block(t, adm, "BLPOP", k, "0")
	r := adm.Do("MULTI")
	if r.IsError() && strings.Contains(r.Str, "unknown command") && e.name != "redis" {
		t.Skipf("%s does not support MULTI: %s", e.name, r.String())
	}
	if r.Str != "OK" {
		t.Fatalf("MULTI: %s", r.String())
	}
	blkExpect(t, adm, "+QUEUED\r\n", "RPUSH", k, "a", "b")
	w.quiet(t, blkQuiet)
	blkExpect(t, adm, blkArr(blkInt(2)), "EXEC")
	w.expect(t, blkKV(k, "a"))
	blkList(t, adm, k, "b")

	w2 := e.block(t, adm, "BLPOP", k2, "0")
	blkExpect(t, adm, "+OK\r\n", "MULTI")
	blkExpect(t, adm, "+QUEUED\r\n", "RPUSH", k2, "a")
	blkExpect(t, adm, "+QUEUED\r\n", "LPOP", k2)
	blkExpect(t, adm, blkArr(blkInt(1), blkBulk("a")), "EXEC")
	w2.quiet(t, blkQuiet)
	blkExpect(t, adm, blkInt(1), "RPUSH", k2, "z")
	w2.expect(t, blkKV(k2, "z"))

	none, d := blkKey(t, "none"), blkKey(t, "d")
	blkExpect(t, adm, "+OK\r\n", "MULTI")
	blkExpect(t, adm, "+QUEUED\r\n", "BLPOP", none, "0")
	blkExpect(t, adm, "+QUEUED\r\n", "BLMOVE", none, d, "LEFT", "LEFT", "0")
	blkExpect(t, adm, "+QUEUED\r\n", "BLMPOP", "0", "1", none, "LEFT")
	blkExpect(t, adm, blkArr("*-1\r\n", "$-1\r\n", "*-1\r\n"), "EXEC")
}

// blkDatabases: a waiter is woken only by its own database, and SWAPDB
// wakes it when the swapped-in database has a list at its key.
func blkDatabases(t *testing.T, e *blkEnv) {
	t.Run("select", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		w := e.client(t, 2)
		blkExpect(t, w.c, "+OK\r\n", "SELECT", "1")
		w.send(t, []string{"BLPOP", k, "0"})
		e.waitBlocked(t, adm, w.id)
		blkExpect(t, adm, blkInt(1), "RPUSH", k, "x")
		w.quiet(t, blkQuiet)
		blkList(t, adm, k, "x")
		blkExpect(t, adm, "+OK\r\n", "SELECT", "1")
		blkExpect(t, adm, blkInt(1), "RPUSH", k, "y")
		w.expect(t, blkKV(k, "y"))
		blkExpect(t, adm, blkInt(0), "EXISTS", k)
	})
	t.Run("move", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		w := e.client(t, 2)
		blkExpect(t, w.c, "+OK\r\n", "SELECT", "2")
		w.send(t, []string{"BLPOP", k, "0"})
		e.waitBlockedOrReply(t, adm, w.id, w.replies)
		blkExpect(t, adm, blkInt(2), "RPUSH", k, "x", "y")
		blkExpect(t, adm, blkInt(1), "MOVE", k, "2")
		w.expect(t, blkKV(k, "x"))
		blkExpect(t, adm, "+OK\r\n", "SELECT", "2")
		blkList(t, adm, k, "y")
	})
	t.Run("copy_db", func(t *testing.T) {
		adm := e.conn(t, 2)
		k, src := blkKey(t, "k"), blkKey(t, "src")
		w := e.client(t, 2)
		blkExpect(t, w.c, "+OK\r\n", "SELECT", "3")
		w.send(t, []string{"BLPOP", k, "0"})
		e.waitBlockedOrReply(t, adm, w.id, w.replies)
		blkExpect(t, adm, blkInt(2), "RPUSH", src, "x", "y")
		blkExpect(t, adm, blkInt(1), "COPY", src, k, "DB", "3")
		w.expect(t, blkKV(k, "x"))
		blkList(t, adm, src, "x", "y")
		blkExpect(t, adm, "+OK\r\n", "SELECT", "3")
		blkList(t, adm, k, "y")
	})
	t.Run("swapdb_two_waiters", func(t *testing.T) {
		adm := e.conn(t, 2)
		k1, k2, k3 := blkKey(t, "k1"), blkKey(t, "k2"), blkKey(t, "k3")
		a := e.block(t, adm, "BLPOP", k1, "0")
		b := e.block(t, adm, "BLMOVE", k2, k3, "RIGHT", "LEFT", "0")
		blkExpect(t, adm, "+OK\r\n", "SELECT", "4")
		blkExpect(t, adm, blkInt(2), "RPUSH", k1, "a1", "a2")
		blkExpect(t, adm, blkInt(2), "RPUSH", k2, "b1", "b2")
		blkExpect(t, adm, "+OK\r\n", "SWAPDB", "0", "4")
		a.expect(t, blkKV(k1, "a1"))
		b.expect(t, blkBulk("b2"))
		blkExpect(t, adm, "+OK\r\n", "SWAPDB", "0", "4")
		blkList(t, adm, k1, "a2")
		blkList(t, adm, k2, "b1")
		blkList(t, adm, k3, "b2")
	})
	t.Run("swapdb", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		w := e.block(t, adm, "BLPOP", k, "0")
		blkExpect(t, adm, "+OK\r\n", "SELECT", "1")
		blkExpect(t, adm, blkInt(2), "RPUSH", k, "x", "y")
		blkExpect(t, adm, "+OK\r\n", "SWAPDB", "0", "1")
		w.expect(t, blkKV(k, "x"))
		blkList(t, adm, k) // db 1 now holds the old db 0
		blkExpect(t, adm, "+OK\r\n", "SELECT", "0")
		blkList(t, adm, k, "y")
		blkExpect(t, adm, "+OK\r\n", "SWAPDB", "0", "1")
	})
}
