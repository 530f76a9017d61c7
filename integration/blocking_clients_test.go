package integration

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spillway/spillway/integration/harness"
)

// Blocking scenarios (run by TestBlocking, see blocking_test.go) on the
// clients around a waiter: disconnects, CLIENT UNBLOCK, other clients served
// meanwhile, commands pipelined behind a blocking one, and go-redis.

// blkDisconnect: a blocked client that disconnects or is killed takes
// nothing: a later push stays in the list, or goes to the next waiter.
func blkDisconnect(t *testing.T, e *blkEnv) {
	cases := []struct {
		name  string
		block func(k, d string) []string
		kill  bool
	}{
		{"close_blpop", func(k, _ string) []string { return []string{"BLPOP", k, "0"} }, false},
		{"close_blmove", func(k, d string) []string { return []string{"BLMOVE", k, d, "LEFT", "LEFT", "0"} }, false},
		{"close_blmpop", func(k, _ string) []string { return []string{"BLMPOP", "0", "1", k, "LEFT", "COUNT", "5"} }, false},
		{"kill_blpop", func(k, _ string) []string { return []string{"BLPOP", k, "0"} }, true},
		{"kill_brpoplpush", func(k, d string) []string { return []string{"BRPOPLPUSH", k, d, "0"} }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			adm := e.conn(t, 2)
			k, d := blkKey(t, "k"), blkKey(t, "d")
			w := e.block(t, adm, tc.block(k, d)...)
			e.waitBlockedCount(t, adm, 1)
			if tc.kill {
				blkExpect(t, adm, blkInt(1), "CLIENT", "KILL", "ID", strconv.FormatInt(w.id, 10))
				if r := w.await(t); r.Err == nil {
					t.Fatalf("killed client got a reply: %q", r.Raw)
				}
			} else {
				w.c.Close()
			}
			e.waitGone(t, adm, w.id)
			e.waitBlockedCount(t, adm, 0)
			blkExpect(t, adm, blkInt(2), "RPUSH", k, "a", "b")
			blkList(t, adm, k, "a", "b")
			blkExpect(t, adm, blkInt(0), "EXISTS", d)
		})
	}
	t.Run("close_discards_pipeline", func(t *testing.T) {
		// Commands pipelined behind the blocked one never run once the
		// client has gone.
		adm := e.conn(t, 2)
		k, marker := blkKey(t, "k"), blkKey(t, "marker")
		w := e.client(t, 2)
		w.send(t, []string{"BLPOP", k, "0"}, []string{"RPUSH", marker, "m"}, []string{"LPOP", k})
		e.waitBlockedOrReply(t, adm, w.id, w.replies)
		w.c.Close()
		e.waitGone(t, adm, w.id)
		blkExpect(t, adm, blkInt(2), "RPUSH", k, "a", "b")
		blkList(t, adm, k, "a", "b")
		blkExpect(t, adm, blkInt(0), "EXISTS", marker)
	})
	t.Run("kill_first_of_two", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		a := e.block(t, adm, "BLPOP", k, "0")
		b := e.block(t, adm, "BLPOP", k, "0")
		blkExpect(t, adm, blkInt(1), "CLIENT", "KILL", "ID", strconv.FormatInt(a.id, 10))
		e.waitGone(t, adm, a.id)
		blkExpect(t, adm, blkInt(1), "RPUSH", k, "a")
		b.expect(t, blkKV(k, "a"))
		blkExpect(t, adm, blkInt(0), "EXISTS", k)
		e.waitBlockedCount(t, adm, 0)
	})
}

// blkClientUnblock: CLIENT UNBLOCK id [TIMEOUT|ERROR] ends the wait with
// the timeout reply or the UNBLOCKED error, takes nothing, and answers 0
// for a client that is not blocked.
func blkClientUnblock(t *testing.T, e *blkEnv) {
	reasons := []struct {
		name string
		args []string
		want func(proto int) string
	}{
		{"default", nil, blkNil},
		{"timeout", []string{"timeout"}, blkNil},
		{"error", []string{"ERROR"}, func(int) string { return blkUnblockedErr }},
	}
	for _, rs := range reasons {
		for _, proto := range []int{2, 3} {
			t.Run(rs.name+"_resp"+strconv.Itoa(proto), func(t *testing.T) {
				adm := e.conn(t, 2)
				k, d := blkKey(t, "k"), blkKey(t, "d")
				for _, args := range blkTimeoutCmds(k, d, "0") {
					w := e.blockProto(t, adm, proto, args...)
					unblock := append([]string{"CLIENT", "UNBLOCK", strconv.FormatInt(w.id, 10)}, rs.args...)
					blkExpect(t, adm, blkInt(1), unblock...)
					w.expect(t, rs.want(proto))
					blkExpect(t, adm, blkInt(0), unblock...)
					if r := w.c.Do("PING"); r.Str != "PONG" {
						t.Fatalf("PING after CLIENT UNBLOCK of %s: %s", args[0], r.String())
					}
				}
				e.waitBlockedCount(t, adm, 0)
				blkExpect(t, adm, blkInt(1), "RPUSH", k, "a")
				blkList(t, adm, k, "a")
				blkExpect(t, adm, blkInt(0), "EXISTS", d)
			})
		}
	}
	t.Run("not_blocked", func(t *testing.T) {
		adm := e.conn(t, 2)
		idle := e.client(t, 2)
		id := strconv.FormatInt(idle.id, 10)
		blkExpect(t, adm, blkInt(0), "CLIENT", "UNBLOCK", id)
		blkExpect(t, adm, blkInt(0), "CLIENT", "UNBLOCK", id, "ERROR")
		blkExpect(t, adm, blkInt(0), "CLIENT", "UNBLOCK", "999999999")
		r := adm.Do("CLIENT", "ID")
		blkExpect(t, adm, blkInt(0), "CLIENT", "UNBLOCK", r.Str)
		idle.ping(t)
	})
	t.Run("one_of_two", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		a := e.block(t, adm, "BLPOP", k, "0")
		b := e.block(t, adm, "BLPOP", k, "0")
		blkExpect(t, adm, blkInt(1), "CLIENT", "UNBLOCK", strconv.FormatInt(a.id, 10))
		a.expect(t, "*-1\r\n")
		blkExpect(t, adm, blkInt(1), "RPUSH", k, "x")
		b.expect(t, blkKV(k, "x"))
		blkExpect(t, adm, blkInt(0), "EXISTS", k)
	})
}

// blkServesOthers: while clients are blocked, other clients (including new
// connections) are served, reads and writes alike.
func blkServesOthers(t *testing.T, e *blkEnv) {
	adm := e.conn(t, 2)
	k1, k2, s, l := blkKey(t, "k1"), blkKey(t, "k2"), blkKey(t, "s"), blkKey(t, "l")
	a := e.block(t, adm, "BLPOP", k1, "0")
	b := e.block(t, adm, "BRPOP", k2, "0")
	c := e.conn(t, 2)
	blkExpect(t, c, "+PONG\r\n", "PING")
	blkExpect(t, c, "+OK\r\n", "SET", s, "v")
	blkExpect(t, c, blkBulk("v"), "GET", s)
	blkExpect(t, c, blkInt(2), "RPUSH", l, "x", "y")
	blkList(t, c, l, "x", "y")
	blkExpect(t, c, "*-1\r\n", "BLPOP", blkKey(t, "none"), "0.01")
	if r := c.Do("DBSIZE"); r.Type != ':' || r.Int < 2 {
		t.Fatalf("DBSIZE: %s", r.String())
	}
	if _, err := harness.Info(c, "server"); err != nil {
		t.Fatal(err)
	}
	blkExpect(t, e.conn(t, 3), "+PONG\r\n", "PING")
	a.quiet(t, 0)
	b.quiet(t, 0)
	blkExpect(t, c, blkInt(1), "RPUSH", k1, "a")
	blkExpect(t, c, blkInt(1), "RPUSH", k2, "b")
	a.expect(t, blkKV(k1, "a"))
	b.expect(t, blkKV(k2, "b"))
}

// blkPipelined: commands pipelined after a blocking command on the same
// connection run only after it is served, in order.
func blkPipelined(t *testing.T, e *blkEnv) {
	t.Run("after_blpop", func(t *testing.T) {
		adm := e.conn(t, 2)
		k, marker := blkKey(t, "k"), blkKey(t, "marker")
		p := e.client(t, 2)
		p.send(t, []string{"BLPOP", k, "0"}, []string{"RPUSH", marker, "m"},
			[]string{"ECHO", "after"}, []string{"LPOP", k})
		e.waitBlocked(t, adm, p.id)
		p.quiet(t, blkQuiet)
		blkExpect(t, adm, blkInt(0), "EXISTS", marker)
		blkExpect(t, adm, blkInt(2), "RPUSH", k, "a", "b")
		p.expect(t, blkKV(k, "a"))
		for _, want := range []string{blkInt(1), blkBulk("after"), blkBulk("b")} {
			if r := p.c.Read(); string(r.Raw) != want {
				t.Fatalf("pipelined reply %q (err %v), want %q", r.Raw, r.Err, want)
			}
		}
		blkList(t, adm, marker, "m")
		blkExpect(t, adm, blkInt(0), "EXISTS", k)
	})
	t.Run("two_blocking", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		p := e.client(t, 2)
		p.send(t, []string{"BLPOP", k, "0"}, []string{"BLPOP", k, "0"})
		e.waitBlocked(t, adm, p.id)
		blkExpect(t, adm, blkInt(1), "RPUSH", k, "a")
		p.expect(t, blkKV(k, "a"))
		p.listen()
		e.waitBlocked(t, adm, p.id)
		p.quiet(t, blkQuiet)
		blkExpect(t, adm, blkInt(1), "RPUSH", k, "b")
		p.expect(t, blkKV(k, "b"))
	})
	t.Run("reply_before_block_is_sent", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		p := e.client(t, 2)
		p.send(t, []string{"ECHO", "before"}, []string{"BLPOP", k, "0"}, []string{"ECHO", "after"})
		p.expect(t, blkBulk("before"))
		p.listen()
		e.waitBlockedOrReply(t, adm, p.id, p.replies)
		p.quiet(t, blkQuiet)
		blkExpect(t, adm, blkInt(1), "RPUSH", k, "a")
		p.expect(t, blkKV(k, "a"))
		if r := p.c.Read(); string(r.Raw) != blkBulk("after") {
			t.Fatalf("pipelined ECHO after BLPOP: %q (err %v)", r.Raw, r.Err)
		}
	})
	t.Run("after_unblock_and_timeout", func(t *testing.T) {
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		p := e.client(t, 2)
		p.send(t, []string{"BLPOP", k, "0"}, []string{"ECHO", "one"},
			[]string{"BLPOP", k, "0.05"}, []string{"ECHO", "two"})
		e.waitBlockedOrReply(t, adm, p.id, p.replies)
		blkExpect(t, adm, blkInt(1), "CLIENT", "UNBLOCK", strconv.FormatInt(p.id, 10))
		p.expect(t, "*-1\r\n")
		for _, want := range []string{blkBulk("one"), "*-1\r\n", blkBulk("two")} {
			if r := p.c.Read(); string(r.Raw) != want {
				t.Fatalf("pipelined reply %q (err %v), want %q", r.Raw, r.Err, want)
			}
		}
	})
	t.Run("quit_waits_for_blpop", func(t *testing.T) {
		// QUIT pipelined behind BLPOP runs only after BLPOP is served.
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		p := e.client(t, 2)
		p.send(t, []string{"BLPOP", k, "0"}, []string{"QUIT"})
		e.waitBlockedOrReply(t, adm, p.id, p.replies)
		p.quiet(t, blkQuiet)
		blkExpect(t, adm, blkInt(2), "RPUSH", k, "a", "b")
		p.expect(t, blkKV(k, "a"))
		if r := p.c.Read(); r.Str != "OK" {
			t.Fatalf("QUIT after BLPOP: %q (err %v)", r.Raw, r.Err)
		}
		e.waitGone(t, adm, p.id)
		blkList(t, adm, k, "b")
	})
	t.Run("pusher_pops_after_push", func(t *testing.T) {
		// A waiter is served as part of the push, before the pusher's next
		// pipelined command.
		adm := e.conn(t, 2)
		k := blkKey(t, "k")
		w := e.block(t, adm, "BLPOP", k, "0")
		for _, args := range [][]string{{"RPUSH", k, "a"}, {"LPOP", k}, {"EXISTS", k}} {
			if err := adm.Send(args...); err != nil {
				t.Fatal(err)
			}
		}
		for _, want := range []string{blkInt(1), "$-1\r\n", blkInt(0)} {
			if r := adm.Read(); string(r.Raw) != want {
				t.Fatalf("pusher's pipeline: %q (err %v), want %q", r.Raw, r.Err, want)
			}
		}
		w.expect(t, blkKV(k, "a"))
	})
}

// blkGoRedis: the blocking commands through go-redis v9, RESP2 and RESP3.
func blkGoRedis(t *testing.T, e *blkEnv) {
	for _, proto := range []int{2, 3} {
		t.Run("resp"+strconv.Itoa(proto), func(t *testing.T) {
			adm := e.conn(t, 2)
			rdb := harness.GoRedis(t, e.srv.Addr(), proto)
			ctx, cancel := context.WithTimeout(context.Background(), 2*blkWait)
			defer cancel()
			k1, k2, d := blkKey(t, "k1"), blkKey(t, "k2"), blkKey(t, "d")
			// background runs f while the test pushes, returning its error.
			background := func(f func() error) func() error {
				ch := make(chan error, 1)
				go func() { ch <- f() }()
				e.waitBlockedCount(t, adm, 1)
				return func() error {
					select {
					case err := <-ch:
						return err
					case <-time.After(blkWait):
						return errors.New("no reply")
					}
				}
			}

			var got []string
			wait := background(func() (err error) {
				got, err = rdb.BLPop(ctx, 4*time.Second, k1, k2).Result()
				return err
			})
			blkExpect(t, adm, blkInt(1), "RPUSH", k2, "v")
			if err := wait(); err != nil {
				t.Fatalf("BLPop: %v", err)
			}
			if fmt.Sprint(got) != fmt.Sprint([]string{k2, "v"}) {
				t.Fatalf("BLPop = %q", got)
			}

			var moved string
			wait = background(func() (err error) {
				moved, err = rdb.BLMove(ctx, k1, d, "RIGHT", "LEFT", 4*time.Second).Result()
				return err
			})
			blkExpect(t, adm, blkInt(2), "RPUSH", k1, "a", "b")
			if err := wait(); err != nil {
				t.Fatalf("BLMove: %v", err)
			}
			if moved != "b" {
				t.Fatalf("BLMove = %q", moved)
			}

			var mkey string
			var mvals []string
			wait = background(func() (err error) {
				mkey, mvals, err = rdb.BLMPop(ctx, 4*time.Second, "left", 2, k2).Result()
				return err
			})
			blkExpect(t, adm, blkInt(3), "RPUSH", k2, "x", "y", "z")
			if err := wait(); err != nil {
				t.Fatalf("BLMPop: %v", err)
			}
			if mkey != k2 || fmt.Sprint(mvals) != "[x y]" {
				t.Fatalf("BLMPop = %q %q", mkey, mvals)
			}

			if v, err := rdb.BRPop(ctx, time.Second, k1, k2).Result(); err != nil || fmt.Sprint(v) != fmt.Sprint([]string{k1, "a"}) {
				t.Fatalf("BRPop = %q, %v", v, err)
			}
			if v, err := rdb.BRPopLPush(ctx, k2, d, time.Second).Result(); err != nil || v != "z" {
				t.Fatalf("BRPopLPush = %q, %v", v, err)
			}
			if v, err := rdb.LRange(ctx, d, 0, -1).Result(); err != nil || fmt.Sprint(v) != "[z b]" {
				t.Fatalf("LRange dst = %q, %v", v, err)
			}
			if v, err := rdb.Do(ctx, "BLPOP", k1, "0.1").Result(); !errors.Is(err, redis.Nil) {
				t.Fatalf("BLPOP with timeout 0.1 on an empty key = %v, %v; want redis.Nil", v, err)
			}
			if v, err := rdb.Do(ctx, "BLMOVE", k1, d, "LEFT", "LEFT", "0.1").Result(); !errors.Is(err, redis.Nil) {
				t.Fatalf("BLMOVE with timeout 0.1 on an empty key = %v, %v; want redis.Nil", v, err)
			}
		})
	}
}
