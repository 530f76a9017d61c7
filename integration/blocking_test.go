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
	"strconv"
	"strings"
	"testing"
	"time"

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
