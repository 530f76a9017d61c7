package integration

// Black-box tests of Redis 7.0's blocking list commands (BLPOP, BRPOP,
// BLMOVE, BRPOPLPUSH, BLMPOP) and CLIENT UNBLOCK. Every scenario runs
// against a real redis-server, which proves the scenario itself right, and
// against Spillway with a 1 MB budget, so that keys are demoted while
// clients wait: TestBlocking/redis/... and TestBlocking/spillway/....
//
// A scenario makes sure a client is really blocked before it relies on it
// (the order of waiters, say) by polling CLIENT LIST ID for flags=b. A
// server that never reports blocked clients (probed once per server) falls
// back to sleeping blkFallbackSleep instead, for ordering only; the
// introspection scenario then fails and says so.

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spillway/spillway/integration/harness"
)

const (
	// blkWait bounds every wait for an expected reply or server state.
	blkWait = 5 * time.Second
	// blkQuiet is how long a client is watched to see that it stays blocked.
	blkQuiet = 150 * time.Millisecond
	// blkFallbackSleep orders clients on a server that does not report
	// blocked clients: time for the server to read and block a command.
	blkFallbackSleep = 150 * time.Millisecond
	// blkUnblockedErr is the error CLIENT UNBLOCK id ERROR sends.
	blkUnblockedErr = "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
	blkNotFloat     = "-ERR timeout is not a float or out of range\r\n"
	blkNegative     = "-ERR timeout is negative\r\n"
	blkWrongType    = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	blkSyntax       = "-ERR syntax error\r\n"
)

// blkSpillwayArgs gives Spillway a 1 MB budget (a 256 KB hot tier), so the
// keys of earlier scenarios are demoted as later ones run.
var blkSpillwayArgs = []string{"--maxmemory", "1mb", "--appendfsync", "no", "--loglevel", "warning"}

// blkScenarios run in order against one server per target; each uses keys
// named after its own test, so no scenario sees another's keys.
var blkScenarios = []struct {
	name string
	run  func(*testing.T, *blkEnv)
}{
	{"introspection", blkIntrospection},
	{"fifo", blkFIFO},
	{"fifo_mixed_commands", blkFIFOMixed},
	{"multi_key", blkMultiKey},
	{"brpop", blkBRPOP},
	{"blmove", blkBLMOVE},
	{"brpoplpush", blkBRPOPLPUSH},
	{"blmpop", blkBLMPOP},
	{"chained_wakeup", blkChained},
	{"wrongtype", blkWrongTypeCases},
	{"reply_shapes", blkShapes},
	{"timeouts", blkTimeouts},
	{"bad_arguments", blkBadArgs},
	{"wake_sources", blkWakeSources},
	{"multi_exec", blkMultiExec},
	{"databases", blkDatabases},
	{"disconnect", blkDisconnect},
	{"client_unblock", blkClientUnblock},
	{"serves_others", blkServesOthers},
	{"pipelined", blkPipelined},
	{"goredis", blkGoRedis},
	{"expired", blkExpired},
	{"conservation", blkConservation},
	{"pressure", blkPressure},
	{"zsets", blkZSets},
}

// TestBlocking runs every blocking scenario against redis-server and
// Spillway.
func TestBlocking(t *testing.T) {
	targets := []struct {
		name  string
		start func(*testing.T) *harness.Server
	}{
		{"redis", func(t *testing.T) *harness.Server { return harness.StartRedis(t) }},
		{"spillway", func(t *testing.T) *harness.Server {
			return harness.StartSpillway(t, "", blkSpillwayArgs...)
		}},
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			e := &blkEnv{srv: tg.start(t), name: tg.name}
			e.visible = e.probeVisible(t)
			if !e.visible {
				if tg.name == "redis" {
					t.Fatal("redis-server did not report a client blocked in BLPOP (CLIENT LIST flags=b)")
				}
				t.Logf("%s does not report blocked clients in CLIENT LIST; ordering falls back to sleeping %v", tg.name, blkFallbackSleep)
			}
			for _, sc := range blkScenarios {
				t.Run(sc.name, func(t *testing.T) {
					e.settle(t)
					sc.run(t, e)
				})
			}
		})
	}
}

// blkEnv is one server under test.
type blkEnv struct {
	srv  *harness.Server
	name string // "redis" or "spillway"
	// visible: the server shows blocked clients as flags=b in CLIENT LIST.
	visible bool
}

func (e *blkEnv) spillway() bool { return e.name == "spillway" }

// conn dials a client speaking protocol proto (2 or 3), closed when t ends.
func (e *blkEnv) conn(t *testing.T, proto int) *harness.Conn {
	t.Helper()
	c := e.srv.Conn(t)
	c.Timeout = 2 * blkWait
	if proto == 3 {
		if r := c.Do("HELLO", "3"); r.Type != '%' {
			t.Fatalf("HELLO 3: %s", r.String())
		}
	}
	return c
}

// probeVisible blocks a throw-away client in BLPOP and reports whether
// CLIENT LIST shows it with flags=b within two seconds.
func (e *blkEnv) probeVisible(t *testing.T) bool {
	t.Helper()
	adm := e.conn(t, 2)
	c, err := harness.Dial(e.srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := c.Do("CLIENT", "ID")
	if r.Type != ':' {
		t.Fatalf("CLIENT ID: %s", r.String())
	}
	if err := c.Send("BLPOP", "blocking-probe", "0"); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if f, ok := blkClientField(t, adm, r.Int, "flags"); ok && strings.Contains(f, "b") {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// settle waits until no client of an earlier scenario is still blocked.
func (e *blkEnv) settle(t *testing.T) {
	t.Helper()
	if e.visible {
		e.waitBlockedCount(t, e.conn(t, 2), 0)
	}
}

// blkClientField returns field (e.g. "flags") of client id's CLIENT LIST
// line; ok is false when the client is not listed.
func blkClientField(t *testing.T, adm *harness.Conn, id int64, field string) (string, bool) {
	t.Helper()
	r := adm.Do("CLIENT", "LIST", "ID", strconv.FormatInt(id, 10))
	if r.IsError() || r.Null {
		t.Fatalf("CLIENT LIST ID %d: %s", id, r.String())
	}
	line := strings.TrimSpace(r.Str)
	if line == "" {
		return "", false
	}
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, field+"="); ok {
			return v, true
		}
	}
	t.Fatalf("CLIENT LIST line has no %s: %q", field, line)
	return "", false
}

// blkBlockedClients returns INFO clients' blocked_clients.
func blkBlockedClients(t *testing.T, adm *harness.Conn) int {
	t.Helper()
	m, err := harness.Info(adm, "clients")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(m["blocked_clients"])
	if err != nil {
		t.Fatalf("INFO clients: blocked_clients=%q: %v", m["blocked_clients"], err)
	}
	return n
}

// waitBlocked returns once client id is blocked (flags=b), or after
// blkFallbackSleep on a server that does not report it.
func (e *blkEnv) waitBlocked(t *testing.T, adm *harness.Conn, id int64) {
	t.Helper()
	e.waitBlockedOrReply(t, adm, id, nil)
}

// waitBlockedOrReply is waitBlocked that fails at once if replies (the
// client's pending reply) delivers one: the command did not block.
func (e *blkEnv) waitBlockedOrReply(t *testing.T, adm *harness.Conn, id int64, replies chan harness.Reply) {
	t.Helper()
	if !e.visible {
		time.Sleep(blkFallbackSleep)
		return
	}
	deadline := time.Now().Add(blkWait)
	for {
		f, ok := blkClientField(t, adm, id, "flags")
		if ok && strings.Contains(f, "b") {
			return
		}
		select {
		case r := <-replies:
			t.Fatalf("client %d answered %q (err %v) instead of blocking", id, harness.Trunc(string(r.Raw), 200), r.Err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("client %d not blocked within %v (listed %v, flags=%s)", id, blkWait, ok, f)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitGone returns once client id has left CLIENT LIST.
func (e *blkEnv) waitGone(t *testing.T, adm *harness.Conn, id int64) {
	t.Helper()
	deadline := time.Now().Add(blkWait)
	for {
		if _, ok := blkClientField(t, adm, id, "id"); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("client %d still in CLIENT LIST %v after its connection ended", id, blkWait)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitBlockedCount returns once INFO reports n blocked clients. On a server
// that does not report blocked clients, n > 0 sleeps blkFallbackSleep.
func (e *blkEnv) waitBlockedCount(t *testing.T, adm *harness.Conn, n int) {
	t.Helper()
	if !e.visible && n > 0 {
		time.Sleep(blkFallbackSleep)
		return
	}
	deadline := time.Now().Add(blkWait)
	for {
		got := blkBlockedClients(t, adm)
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("blocked_clients = %d, want %d (waited %v)", got, n, blkWait)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// blkClient is a connection whose replies are read in the background, so
// the test can act while it is blocked.
type blkClient struct {
	c       *harness.Conn
	id      int64
	replies chan harness.Reply
}

// client dials a blkClient speaking protocol proto.
func (e *blkEnv) client(t *testing.T, proto int) *blkClient {
	t.Helper()
	c := e.conn(t, proto)
	r := c.Do("CLIENT", "ID")
	if r.Type != ':' {
		t.Fatalf("CLIENT ID: %s", r.String())
	}
	return &blkClient{c: c, id: r.Int}
}

// block dials a RESP2 client, sends args and waits until it is blocked.
func (e *blkEnv) block(t *testing.T, adm *harness.Conn, args ...string) *blkClient {
	t.Helper()
	return e.blockProto(t, adm, 2, args...)
}

// blockProto is block with a chosen protocol.
func (e *blkEnv) blockProto(t *testing.T, adm *harness.Conn, proto int, args ...string) *blkClient {
	t.Helper()
	b := e.client(t, proto)
	b.send(t, args)
	e.waitBlockedOrReply(t, adm, b.id, b.replies)
	return b
}

// send writes the commands in one flush (a pipeline) and starts reading
// the first reply in the background.
func (b *blkClient) send(t *testing.T, cmds ...[]string) {
	t.Helper()
	for _, args := range cmds {
		if err := b.c.Send(args...); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.c.Flush(); err != nil {
		t.Fatal(err)
	}
	b.listen()
}

// listen reads the next reply in the background (bounded by the
// connection's read timeout).
func (b *blkClient) listen() {
	ch := make(chan harness.Reply, 1)
	b.replies = ch
	c := b.c
	go func() { ch <- c.Read() }()
}

// await returns the reply read in the background.
func (b *blkClient) await(t *testing.T) harness.Reply {
	t.Helper()
	select {
	case r := <-b.replies:
		return r
	case <-time.After(blkWait):
		t.Fatalf("client %d: no reply within %v", b.id, blkWait)
	}
	return harness.Reply{}
}

// expect checks the background reply's exact bytes.
func (b *blkClient) expect(t *testing.T, want string) {
	t.Helper()
	r := b.await(t)
	if r.Err != nil {
		t.Fatalf("client %d: %v (wanted %q)", b.id, r.Err, harness.Trunc(want, 200))
	}
	if string(r.Raw) != want {
		t.Fatalf("client %d got %q, want %q", b.id, harness.Trunc(string(r.Raw), 200), harness.Trunc(want, 200))
	}
}

// quiet checks that no reply arrives within d (0: none has arrived yet):
// the client is still blocked.
func (b *blkClient) quiet(t *testing.T, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case r := <-b.replies:
		t.Fatalf("client %d answered %q while it should still be blocked", b.id, harness.Trunc(string(r.Raw), 200))
	case <-timer.C:
	}
	select {
	case r := <-b.replies:
		t.Fatalf("client %d answered %q while it should still be blocked", b.id, harness.Trunc(string(r.Raw), 200))
	default:
	}
}

// ping checks that the client is usable again and has no reply left over.
func (b *blkClient) ping(t *testing.T) {
	t.Helper()
	if r := b.c.Do("PING"); string(r.Raw) != "+PONG\r\n" {
		t.Fatalf("client %d: PING after unblocking answered %q", b.id, r.Raw)
	}
}

// blkExpect sends args on c and checks the reply's exact bytes.
func blkExpect(t *testing.T, c *harness.Conn, want string, args ...string) harness.Reply {
	t.Helper()
	r := c.Do(args...)
	if string(r.Raw) != want {
		t.Fatalf("%s: got %q, want %q", harness.Trunc(strings.Join(args, " "), 200),
			harness.Trunc(string(r.Raw), 200), harness.Trunc(want, 200))
	}
	return r
}

// blkList checks a list's whole content with LRANGE (empty: no key).
func blkList(t *testing.T, c *harness.Conn, key string, want ...string) {
	t.Helper()
	blkExpect(t, c, blkBulks(want...), "LRANGE", key, "0", "-1")
}

// blkKey names a key after the running test, so scenarios never share keys.
func blkKey(t *testing.T, name string) string { return t.Name() + ":" + name }

// blkBulk, blkArr, blkBulks and blkInt encode expected RESP replies.
func blkBulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
func blkArr(elems ...string) string {
	return "*" + strconv.Itoa(len(elems)) + "\r\n" + strings.Join(elems, "")
}
func blkBulks(ss ...string) string {
	elems := make([]string, len(ss))
	for i, s := range ss {
		elems[i] = blkBulk(s)
	}
	return blkArr(elems...)
}
func blkInt(n int) string { return ":" + strconv.Itoa(n) + "\r\n" }

// blkKV is the reply of BLPOP/BRPOP: the key and the element.
func blkKV(k, v string) string { return blkBulks(k, v) }

// blkMpop is the reply of BLMPOP: the key and the elements.
func blkMpop(k string, vs ...string) string { return blkArr(blkBulk(k), blkBulks(vs...)) }

// blkNil is the nil reply of a timed-out blocking command.
func blkNil(proto int) string {
	if proto == 3 {
		return "_\r\n"
	}
	return "*-1\r\n"
}

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
