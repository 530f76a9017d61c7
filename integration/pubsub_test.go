package integration

// Pub/Sub in embedded mode, black box. TestPubSubDiff sends the same
// commands from several raw connections to a real redis-server and to
// Spillway, in RESP2 and RESP3, and compares every reply and every pushed
// message byte for byte. The other tests run against both servers too
// (proving the test right on Redis) and cover many subscribers, go-redis's
// PubSub client, a slow subscriber disconnected at
// client-output-buffer-limit while publishers keep going, RESP3 commands
// interleaved with pushes, and the idle timeout subscribers are exempt
// from.
//
// Pushed messages are collected without sleeping: after a step, every
// connection sends PING with a fresh token, and whatever arrives before
// the token's reply was pushed to it. Where Redis leaves an order to its
// hash tables (the pmessages one publish sends one client, channels
// unsubscribed all at once, PUBSUB CHANNELS), the comparison sorts.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spillway/spillway/integration/harness"
)

// psSpillwayArgs start Spillway for the Pub/Sub tests.
var psSpillwayArgs = []string{"--appendfsync", "no", "--loglevel", "warning"}

// psWait bounds every wait for a message or a server state.
const psWait = 10 * time.Second

// psTarget is one server under test.
type psTarget struct {
	name string
	srv  *harness.Server
}

// psTargets starts redis-server and Spillway.
func psTargets(t *testing.T) []psTarget {
	t.Helper()
	return []psTarget{
		{"redis", harness.StartRedis(t)},
		{"spillway", harness.StartSpillway(t, "", psSpillwayArgs...)},
	}
}

// psPair is one named connection, opened on both servers.
type psPair struct {
	name  string
	proto int
	r, s  *harness.Conn
}

// psDiff runs a differential scenario.
type psDiff struct {
	t     *testing.T
	redis *harness.Server
	spw   *harness.Server
	conns []*psPair
	seq   int
}

// conn returns the connection named name, opening it (in protocol proto)
// on both servers the first time.
func (d *psDiff) conn(name string, proto int) *psPair {
	d.t.Helper()
	for _, p := range d.conns {
		if p.name == name {
			return p
		}
	}
	p := &psPair{name: name, proto: proto, r: d.redis.Conn(d.t), s: d.spw.Conn(d.t)}
	if proto == 3 {
		for _, c := range []*harness.Conn{p.r, p.s} {
			if r := c.Do("HELLO", "3"); r.Type != '%' {
				d.t.Fatalf("%s: HELLO 3: %s", name, r.String())
			}
		}
	}
	d.conns = append(d.conns, p)
	return p
}

// token returns a fresh PING argument.
func (d *psDiff) token() string {
	d.seq++
	return "sync-" + strconv.Itoa(d.seq)
}

// isToken reports whether r is PING token's reply: the bulk string, or
// in the RESP2 subscribed context ["pong", token].
func isToken(r harness.Reply, token string) bool {
	switch r.Type {
	case '$':
		return r.Str == token
	case '*':
		return len(r.Elems) == 2 && r.Elems[0].Str == "pong" && r.Elems[1].Str == token
	}
	return false
}

// psExchange sends cmds, then PING token, and returns every frame that
// arrives before the token's reply, then that reply.
func psExchange(c *harness.Conn, cmds [][]string, token string) ([]harness.Reply, error) {
	for _, cmd := range cmds {
		if err := c.Send(cmd...); err != nil {
			return nil, err
		}
	}
	if err := c.Send("PING", token); err != nil {
		return nil, err
	}
	var out []harness.Reply
	for i := 0; i < 100000; i++ {
		r := c.Read()
		if r.Err != nil {
			return out, r.Err
		}
		out = append(out, r)
		if isToken(r, token) {
			return out, nil
		}
	}
	return out, fmt.Errorf("no reply to PING %s after 100000 frames", token)
}

// frameKind returns the first element of a message or confirmation frame
// ("message", "subscribe"...), "" for other replies.
func frameKind(r harness.Reply) string {
	if (r.Type == '*' || r.Type == '>') && len(r.Elems) >= 3 && r.Elems[0].Type == '$' {
		return r.Elems[0].Str
	}
	return ""
}

// psNormalize renders frames for comparison. Runs of pmessages one publish
// sent (same channel and payload) are sorted. With unsubAll, the
// names of (s)unsubscribe confirmations are sorted among themselves, their
// counts kept in place (Redis unsubscribes a dict's entries in its hash
// order). With unorderedArray, array replies are compared sorted.
func psNormalize(frames []harness.Reply, unsubAll, unorderedArray bool) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		out[i] = string(f.Raw)
		if unorderedArray && f.Type == '*' && frameKind(f) == "" {
			out[i] = string(harness.Canonical(f).Raw)
		}
	}
	for i := 0; i < len(frames); {
		j := i
		if frameKind(frames[i]) == "pmessage" {
			for j < len(frames) && frameKind(frames[j]) == "pmessage" &&
				bytes.Equal(frames[j].Elems[2].Raw, frames[i].Elems[2].Raw) &&
				bytes.Equal(frames[j].Elems[3].Raw, frames[i].Elems[3].Raw) {
				j++
			}
			sort.Strings(out[i:j])
		}
		i = max(j, i+1)
	}
	if unsubAll {
		var idx []int
		var names []string
		for i, f := range frames {
			if k := frameKind(f); k == "unsubscribe" || k == "sunsubscribe" {
				idx = append(idx, i)
				names = append(names, string(f.Elems[1].Raw))
			}
		}
		sort.Strings(names)
		for n, i := range idx {
			f := frames[i]
			out[i] = fmt.Sprintf("%c %s name=%q count=%s", f.Type, f.Elems[0].Str, names[n], f.Elems[2].Raw)
		}
	}
	return out
}

// exchangeBoth runs one exchange on both servers and compares the frames.
func (d *psDiff) exchangeBoth(p *psPair, cmds [][]string, unsubAll, unordered bool) []harness.Reply {
	d.t.Helper()
	tok := d.token()
	rf, rerr := psExchange(p.r, cmds, tok)
	sf, serr := psExchange(p.s, cmds, tok)
	if rerr != nil || serr != nil {
		d.t.Fatalf("%s %q: transport error: redis %v, spillway %v\nredis frames:\n%s\nspillway frames:\n%s",
			p.name, cmds, rerr, serr, psDump(rf), psDump(sf))
	}
	rn, sn := psNormalize(rf, unsubAll, unordered), psNormalize(sf, unsubAll, unordered)
	if strings.Join(rn, "\x00") != strings.Join(sn, "\x00") {
		d.t.Errorf("%s (RESP%d) %q: frames differ\nredis:\n%s\nspillway:\n%s",
			p.name, p.proto, cmds, psDump(rf), psDump(sf))
	}
	return sf
}

func psDump(frames []harness.Reply) string {
	var b strings.Builder
	for i, f := range frames {
		fmt.Fprintf(&b, "  %d: %q\n", i, harness.Trunc(string(f.Raw), 300))
	}
	return b.String()
}

// do runs one command on connection name and then collects what every
// other connection was pushed. It returns Spillway's frames (the last is
// the sync PING's reply).
func (d *psDiff) do(name string, args ...string) []harness.Reply {
	d.t.Helper()
	p := d.conn(name, 2)
	cmd := strings.ToLower(args[0])
	unsubAll := len(args) == 1 && (cmd == "unsubscribe" || cmd == "sunsubscribe")
	unordered := cmd == "pubsub" && len(args) >= 2 &&
		(strings.EqualFold(args[1], "channels") || strings.EqualFold(args[1], "shardchannels"))
	out := d.exchangeBoth(p, [][]string{args}, unsubAll, unordered)
	d.syncOthers(p)
	return out
}

// pipe sends several commands at once on connection name (MULTI...EXEC,
// CLIENT REPLY OFF...ON), then collects the others' pushes.
func (d *psDiff) pipe(name string, cmds ...[]string) {
	d.t.Helper()
	p := d.conn(name, 2)
	d.exchangeBoth(p, cmds, false, false)
	d.syncOthers(p)
}

// syncOthers collects and compares what was pushed to every connection
// but p.
func (d *psDiff) syncOthers(p *psPair) {
	d.t.Helper()
	for _, o := range d.conns {
		if o != p {
			d.exchangeBoth(o, nil, false, false)
		}
	}
}

// close RESETs (unsubscribing everything, synchronously) and closes every
// connection, so the next scenario starts with no subscriptions.
func (d *psDiff) close() {
	d.t.Helper()
	for _, p := range d.conns {
		for _, c := range []*harness.Conn{p.r, p.s} {
			if err := c.Send("RESET"); err != nil {
				d.t.Fatal(err)
			}
			for i := 0; ; i++ {
				r := c.Read()
				if r.Err != nil || i > 100000 {
					d.t.Fatalf("%s: RESET: %v", p.name, r.Err)
				}
				if r.Type == '+' && r.Str == "RESET" {
					break
				}
			}
			c.Close()
		}
	}
	d.conns = nil
}

// clientFields returns, for every client of type pubsub, its flags, sub,
// psub and ssub fields and resp, sorted; and INFO's pubsub counters.
func psIntrospect(t *testing.T, c *harness.Conn) (clients []string, info string) {
	t.Helper()
	r := c.Do("CLIENT", "LIST", "TYPE", "pubsub")
	for _, line := range strings.Split(strings.TrimSpace(r.Str), "\n") {
		if line == "" {
			continue
		}
		var keep []string
		for _, f := range strings.Fields(line) {
			for _, k := range []string{"flags=", "sub=", "psub=", "ssub=", "resp="} {
				if strings.HasPrefix(f, k) {
					keep = append(keep, f)
				}
			}
		}
		clients = append(clients, strings.Join(keep, " "))
	}
	sort.Strings(clients)
	m, err := harness.Info(c, "stats")
	if err != nil {
		t.Fatal(err)
	}
	info = fmt.Sprintf("pubsub_channels=%s pubsub_patterns=%s pubsubshard_channels=%s",
		m["pubsub_channels"], m["pubsub_patterns"], m["pubsubshard_channels"])
	return clients, info
}

// introspect compares CLIENT LIST TYPE pubsub and INFO's pubsub fields.
func (d *psDiff) introspect() {
	d.t.Helper()
	p := d.conn("observer", 2)
	rc, ri := psIntrospect(d.t, p.r)
	sc, si := psIntrospect(d.t, p.s)
	if strings.Join(rc, "\n") != strings.Join(sc, "\n") || ri != si {
		d.t.Errorf("introspection differs\nredis:    %q %s\nspillway: %q %s", rc, ri, sc, si)
	}
}

// psScenario is one differential scenario; p is the protocol of the
// subscribing connections (publishers and observers speak RESP2).
type psScenario struct {
	name string
	run  func(d *psDiff, p int)
}

var psScenarios = []psScenario{
	{"subscribe_publish", func(d *psDiff, p int) {
		d.conn("sub1", p)
		d.conn("sub2", p)
		d.conn("pub", 2)
		d.do("sub1", "SUBSCRIBE", "news", "sport", "news")
		d.do("sub2", "SUBSCRIBE", "news")
		d.do("pub", "PUBLISH", "news", "hello")
		d.do("pub", "PUBLISH", "sport", "goal")
		d.do("pub", "PUBLISH", "nobody", "x")
		d.do("pub", "PUBLISH", "news", "")
		d.do("sub2", "SUBSCRIBE", "sport")
		d.do("pub", "PUBLISH", "sport", "again")
		d.introspect()
		d.do("pub", "PUBSUB", "NUMSUB", "news", "sport", "nobody")
		d.do("pub", "PUBSUB", "CHANNELS")
		d.do("sub1", "PING")
		d.do("sub1", "PING", "hi")
	}},
	{"patterns", func(d *psDiff, p int) {
		d.conn("psub", p)
		d.conn("sub", p)
		d.conn("pub", 2)
		d.do("psub", "PSUBSCRIBE", "n*", "*s", "h?llo", "h[^e]llo", `h\*`, "", "n*")
		d.do("sub", "SUBSCRIBE", "news")
		d.do("sub", "PSUBSCRIBE", "new?", "*")
		// One publish, several matching patterns per subscriber.
		d.do("pub", "PUBLISH", "news", "m1")
		d.do("pub", "PUBLISH", "hallo", "m2")
		d.do("pub", "PUBLISH", "h*", "m3")
		d.do("pub", "PUBLISH", "", "m4")
		d.do("pub", "PUBLISH", "Hello", "m5")
		d.do("pub", "PUBSUB", "NUMPAT")
		d.introspect()
		d.do("psub", "PUNSUBSCRIBE", "*s", "zz")
		d.do("pub", "PUBLISH", "news", "m6")
		// Patterns are unsubscribed in subscription order.
		d.do("psub", "PUNSUBSCRIBE")
		d.do("psub", "PUNSUBSCRIBE")
		d.do("pub", "PUBSUB", "NUMPAT")
	}},
	{"shard", func(d *psDiff, p int) {
		d.conn("ssub", p)
		d.conn("sub", p)
		d.conn("pub", 2)
		d.do("ssub", "SSUBSCRIBE", "s1", "s2", "s1")
		d.do("sub", "SUBSCRIBE", "s1")
		d.do("sub", "PSUBSCRIBE", "s*")
		d.do("pub", "SPUBLISH", "s1", "shard-only")
		d.do("pub", "PUBLISH", "s1", "not-shard")
		d.do("pub", "SPUBLISH", "nobody", "x")
		d.do("pub", "PUBSUB", "SHARDCHANNELS")
		d.do("pub", "PUBSUB", "SHARDCHANNELS", "s?")
		d.do("pub", "PUBSUB", "SHARDCHANNELS", "x*")
		d.do("pub", "PUBSUB", "SHARDNUMSUB", "s1", "s2", "s3")
		d.do("pub", "PUBSUB", "NUMSUB", "s1")
		d.introspect()
		d.do("ssub", "SUNSUBSCRIBE", "s2", "s2")
		d.do("ssub", "SUNSUBSCRIBE")
		d.do("ssub", "SUNSUBSCRIBE")
		d.do("ssub", "PING")
	}},
	{"unsubscribe", func(d *psDiff, p int) {
		d.conn("a", p)
		d.conn("pub", 2)
		d.do("a", "UNSUBSCRIBE")
		d.do("a", "PUNSUBSCRIBE")
		d.do("a", "SUNSUBSCRIBE")
		d.do("a", "UNSUBSCRIBE", "x", "y")
		d.do("a", "PING")
		d.do("a", "SUBSCRIBE", "c1", "c2", "c3", "c4")
		d.do("a", "PSUBSCRIBE", "p1", "p2")
		d.do("a", "SSUBSCRIBE", "s1")
		d.do("a", "UNSUBSCRIBE", "c2", "nope")
		d.do("pub", "PUBLISH", "c2", "gone")
		d.do("pub", "PUBLISH", "c1", "here")
		d.do("a", "UNSUBSCRIBE")
		d.do("a", "UNSUBSCRIBE")
		d.do("a", "PING")
		d.do("a", "PUNSUBSCRIBE")
		// Still subscribed to a shard channel: still in the context.
		d.do("a", "PING")
		d.do("a", "GET", "k")
		d.do("a", "SUNSUBSCRIBE")
		d.do("a", "PING")
		d.do("a", "GET", "k")
		d.do("pub", "PUBSUB", "NUMSUB", "c1", "c3")
	}},
	{"subscribed_context", func(d *psDiff, p int) {
		d.conn("a", p)
		d.do("a", "SUBSCRIBE", "ctx")
		d.do("a", "GET", "k")
		d.do("a", "SET", "k", "v")
		d.do("a", "GET", "k")
		d.do("a", "CLIENT", "GETNAME")
		d.do("a", "PUBLISH", "ctx", "to-self")
		d.do("a", "nosuchcommand", "x")
		d.do("a", "get")
		d.do("a", "PUBSUB", "NUMSUB", "ctx")
		d.do("a", "ECHO", "x")
		d.do("a", "SELECT", "0")
		d.do("a", "PING")
		d.do("a", "PING", "arg")
		d.do("a", "SUBSCRIBE")
		d.do("a", "PUBLISH", "x")
		d.do("a", "DEL", "k")
		if p == 2 {
			// A Redis command Spillway lacks is refused like the others.
			d.do("a", "XADD", "s", "*", "f", "v")
		}
	}},
	{"multi_exec", func(d *psDiff, p int) {
		d.conn("a", p)
		d.conn("pub", 2)
		d.pipe("a", []string{"MULTI"}, []string{"SUBSCRIBE", "m1"}, []string{"SSUBSCRIBE", "m2"},
			[]string{"PSUBSCRIBE", "m*"}, []string{"PUBLISH", "m1", "inside"}, []string{"EXEC"})
		d.do("pub", "PUBLISH", "m1", "after")
		d.do("a", "PING")
		if p == 2 {
			d.do("a", "MULTI") // refused in the RESP2 subscribed context
		} else {
			// A message to oneself lands inside EXEC's array, as in Redis.
			d.pipe("a", []string{"MULTI"}, []string{"PUBLISH", "m1", "queued"}, []string{"GET", "k"},
				[]string{"SPUBLISH", "m2", "s"}, []string{"SSUBSCRIBE", "m3"}, []string{"EXEC"})
		}
		d.do("a", "RESET")
		d.do("a", "PING")
		d.do("pub", "PUBSUB", "NUMSUB", "m1")
	}},
	{"self_and_pipelines", func(d *psDiff, p int) {
		d.conn("a", p)
		d.conn("pub", 2)
		d.do("a", "SUBSCRIBE", "self")
		d.do("a", "PSUBSCRIBE", "se*", "*f")
		d.do("a", "SSUBSCRIBE", "self")
		d.do("a", "PUBLISH", "self", "m")
		d.do("a", "SPUBLISH", "self", "s")
		// Replies and messages of a pipeline keep Redis's order.
		d.pipe("a", []string{"SET", "pk", "1"}, []string{"PUBLISH", "self", "p1"}, []string{"GET", "pk"},
			[]string{"PUBLISH", "other", "p2"}, []string{"SUBSCRIBE", "other"}, []string{"PUBLISH", "other", "p3"},
			[]string{"UNSUBSCRIBE", "other"}, []string{"PUBLISH", "other", "p4"}, []string{"DEL", "pk"})
		d.pipe("pub", []string{"PUBLISH", "self", "x1"}, []string{"PUBLISH", "self", "x2"},
			[]string{"SPUBLISH", "self", "x3"}, []string{"PUBLISH", "elf", "x4"})
	}},
	{"reply_off", func(d *psDiff, p int) {
		d.conn("a", p)
		d.conn("pub", 2)
		// Confirmations and messages are pushes: CLIENT REPLY OFF and
		// SKIP do not silence them.
		d.pipe("a", []string{"CLIENT", "REPLY", "OFF"}, []string{"SUBSCRIBE", "r1"}, []string{"UNSUBSCRIBE", "r1"},
			[]string{"CLIENT", "REPLY", "ON"}, []string{"SUBSCRIBE", "r1"})
		d.do("pub", "PUBLISH", "r1", "m")
		if p == 3 {
			d.pipe("a", []string{"CLIENT", "REPLY", "OFF"}, []string{"PUBLISH", "r1", "self-off"},
				[]string{"PSUBSCRIBE", "r*"}, []string{"CLIENT", "REPLY", "ON"})
			d.pipe("a", []string{"CLIENT", "REPLY", "SKIP"}, []string{"PUBLISH", "r1", "self-skip"},
				[]string{"UNSUBSCRIBE", "r1"}, []string{"PUBLISH", "r1", "after"})
		}
	}},
	{"reset", func(d *psDiff, p int) {
		d.conn("a", p)
		d.conn("pub", 2)
		d.do("a", "SUBSCRIBE", "q1")
		d.do("a", "PSUBSCRIBE", "q*")
		d.do("a", "SSUBSCRIBE", "q1")
		d.do("a", "RESET")
		d.do("pub", "PUBLISH", "q1", "after-reset")
		d.do("pub", "SPUBLISH", "q1", "after-reset")
		d.do("pub", "PUBSUB", "NUMSUB", "q1")
		d.do("pub", "PUBSUB", "NUMPAT")
		d.do("a", "GET", "k")
		d.introspect()
	}},
	{"binary", func(d *psDiff, p int) {
		d.conn("a", p)
		d.conn("pub", 2)
		ch, msg := "bin\r\n\x00ch", strings.Repeat("\x00\xff\r\n", 5000)
		d.do("a", "SUBSCRIBE", ch)
		d.do("a", "PSUBSCRIBE", "bin\r\n?ch")
		d.do("pub", "PUBLISH", ch, msg)
		d.do("pub", "PUBSUB", "CHANNELS", "bin*")
		d.do("a", "UNSUBSCRIBE", ch)
	}},
}

// TestPubSubDiff runs the scenarios against redis-server and Spillway, with
// subscribers speaking RESP2 and then RESP3.
func TestPubSubDiff(t *testing.T) {
	redisSrv := harness.StartRedis(t)
	spw := harness.StartSpillway(t, "", psSpillwayArgs...)
	for _, proto := range []int{2, 3} {
		for _, sc := range psScenarios {
			t.Run(fmt.Sprintf("resp%d/%s", proto, sc.name), func(t *testing.T) {
				d := &psDiff{t: t, redis: redisSrv, spw: spw}
				defer d.close()
				sc.run(d, proto)
			})
		}
	}
}

// TestPubSubDisconnect: a subscriber that closes its connection, or sends
// QUIT, leaves every channel, pattern and shard channel (asynchronously,
// on both servers).
func TestPubSubDisconnect(t *testing.T) {
	for _, tg := range psTargets(t) {
		for _, how := range []string{"close", "quit"} {
			t.Run(tg.name+"/"+how, func(t *testing.T) {
				psDisconnect(t, tg.srv, how == "quit")
			})
		}
	}
}

func psDisconnect(t *testing.T, srv *harness.Server, quit bool) {
	sub := srv.Conn(t)
	for _, cmd := range [][]string{{"SUBSCRIBE", "dc1", "dc2"}, {"PSUBSCRIBE", "dc*"}, {"SSUBSCRIBE", "dc1"}} {
		if _, err := psExchange(sub, [][]string{cmd}, "t"); err != nil {
			t.Fatal(err)
		}
	}
	obs := srv.Conn(t)
	if r := obs.Do("PUBLISH", "dc1", "x"); r.Int != 2 {
		t.Fatalf("PUBLISH before disconnect = %s, want 2", r.String())
	}
	if quit {
		frames, err := psExchange(sub, [][]string{{"QUIT"}}, "t")
		if len(frames) < 3 || string(frames[2].Raw) != "+OK\r\n" || err == nil {
			t.Fatalf("QUIT: frames %s, err %v; want two messages, +OK, then the connection closed", psDump(frames), err)
		}
	} else {
		sub.Close()
	}
	deadline := time.Now().Add(psWait)
	for {
		n := obs.Do("PUBLISH", "dc1", "x").Int + obs.Do("SPUBLISH", "dc1", "x").Int +
			obs.Do("PUBSUB", "NUMPAT").Int
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscriptions left %v after the subscriber closed", psWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
	clients, info := psIntrospect(t, obs)
	if len(clients) != 0 || info != "pubsub_channels=0 pubsub_patterns=0 pubsubshard_channels=0" {
		t.Errorf("after disconnect: clients %q, %s", clients, info)
	}
}

// TestPubSubManySubscribers: 200 subscribers (RESP2 and RESP3) on channels,
// patterns and shard channels, the same publishes on both servers; every
// PUBLISH reply and every subscriber's messages compared, and counted
// against a model.
func TestPubSubManySubscribers(t *testing.T) {
	const (
		nSubs     = 200
		nChannels = 10
		nRounds   = 15
	)
	type result struct {
		replies []int64
		frames  [][]harness.Reply
	}
	want := make([]int, nSubs) // frames each subscriber should receive
	for k := 0; k < nRounds; k++ {
		for c := 0; c < nChannels; c++ {
			for i := 0; i < nSubs; i++ {
				if i%nChannels == c {
					want[i]++
				}
				if i%3 == 0 {
					want[i]++
				}
				if i%5 == 0 && c <= 4 {
					want[i]++
				}
			}
		}
		for i := 0; i < nSubs; i++ {
			if i%7 == 0 && i%nChannels == k%nChannels {
				want[i]++
			}
		}
	}
	run := func(t *testing.T, srv *harness.Server) result {
		subs := make([]*harness.Conn, nSubs)
		for i := range subs {
			c := srv.Conn(t)
			subs[i] = c
			cmds := [][]string{{"SUBSCRIBE", fmt.Sprintf("m:ch%d", i%nChannels)}}
			if i%2 == 1 {
				cmds = append([][]string{{"HELLO", "3"}}, cmds...)
			}
			if i%3 == 0 {
				cmds = append(cmds, []string{"PSUBSCRIBE", "m:ch*"})
			}
			if i%5 == 0 {
				cmds = append(cmds, []string{"PSUBSCRIBE", "m:ch[0-4]"})
			}
			if i%7 == 0 {
				cmds = append(cmds, []string{"SSUBSCRIBE", fmt.Sprintf("m:ch%d", i%nChannels)})
			}
			if _, err := psExchange(c, cmds, "ready"); err != nil {
				t.Fatalf("subscriber %d: %v", i, err)
			}
		}
		res := result{frames: make([][]harness.Reply, nSubs)}
		var wg sync.WaitGroup
		errs := make(chan error, nSubs)
		for i, c := range subs {
			wg.Add(1)
			go func(i int, c *harness.Conn) {
				defer wg.Done()
				for len(res.frames[i]) < want[i] {
					r := c.Read()
					if r.Err != nil {
						errs <- fmt.Errorf("subscriber %d after %d of %d messages: %v", i, len(res.frames[i]), want[i], r.Err)
						return
					}
					res.frames[i] = append(res.frames[i], r)
				}
			}(i, c)
		}
		pub := srv.Conn(t)
		for k := 0; k < nRounds; k++ {
			for c := 0; c < nChannels; c++ {
				pub.Send("PUBLISH", fmt.Sprintf("m:ch%d", c), fmt.Sprintf("r%d-c%d", k, c))
			}
			pub.Send("SPUBLISH", fmt.Sprintf("m:ch%d", k%nChannels), fmt.Sprintf("shard-r%d", k))
			for c := 0; c <= nChannels; c++ {
				r := pub.Read()
				if r.Type != ':' {
					t.Fatalf("publish reply %s", r.String())
				}
				res.replies = append(res.replies, r.Int)
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		// Nothing more arrived than the model says.
		for i, c := range subs {
			extra, err := psExchange(c, nil, "end")
			if err != nil || len(extra) != 1 {
				t.Fatalf("subscriber %d: %d extra frames (%v)", i, len(extra)-1, err)
			}
		}
		return res
	}
	var results []result
	for _, tg := range psTargets(t) {
		results = append(results, run(t, tg.srv))
	}
	rd, sp := results[0], results[1]
	if fmt.Sprint(rd.replies) != fmt.Sprint(sp.replies) {
		t.Errorf("PUBLISH replies differ\nredis:    %v\nspillway: %v", rd.replies, sp.replies)
	}
	for i := 0; i < nSubs; i++ {
		a, b := psNormalize(rd.frames[i], false, false), psNormalize(sp.frames[i], false, false)
		if strings.Join(a, "") != strings.Join(b, "") {
			t.Errorf("subscriber %d: messages differ\nredis:\n%s\nspillway:\n%s", i, psDump(rd.frames[i]), psDump(sp.frames[i]))
			break
		}
	}
}

// TestPubSubGoRedis: go-redis's PubSub client, RESP2 and RESP3.
func TestPubSubGoRedis(t *testing.T) {
	for _, tg := range psTargets(t) {
		for _, proto := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/resp%d", tg.name, proto), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), psWait)
				defer cancel()
				cl := harness.GoRedis(t, tg.srv.Addr(), proto)
				ch := fmt.Sprintf("gr%d:news", proto)
				sub := cl.Subscribe(ctx, ch)
				defer sub.Close()
				if m, err := sub.Receive(ctx); err != nil || fmt.Sprint(m) != fmt.Sprint(&redis.Subscription{Kind: "subscribe", Channel: ch, Count: 1}) {
					t.Fatalf("Receive = %v, %v", m, err)
				}
				if err := sub.PSubscribe(ctx, fmt.Sprintf("gr%d:*", proto)); err != nil {
					t.Fatal(err)
				}
				if m, err := sub.Receive(ctx); err != nil || fmt.Sprint(m) != fmt.Sprint(&redis.Subscription{Kind: "psubscribe", Channel: fmt.Sprintf("gr%d:*", proto), Count: 2}) {
					t.Fatalf("Receive = %v, %v", m, err)
				}
				ssub := cl.SSubscribe(ctx, ch)
				defer ssub.Close()
				if _, err := ssub.Receive(ctx); err != nil {
					t.Fatal(err)
				}
				if n, err := cl.Publish(ctx, ch, "hello").Result(); err != nil || n != 2 {
					t.Fatalf("PUBLISH = %d, %v", n, err)
				}
				if n, err := cl.SPublish(ctx, ch, "shard").Result(); err != nil || n != 1 {
					t.Fatalf("SPUBLISH = %d, %v", n, err)
				}
				msgs := sub.Channel()
				got := map[string]bool{}
				for i := 0; i < 2; i++ {
					select {
					case m := <-msgs:
						got[m.Pattern+"|"+m.Channel+"|"+m.Payload] = true
					case <-ctx.Done():
						t.Fatalf("only %d messages: %v", i, got)
					}
				}
				if !got["|"+ch+"|hello"] || !got[fmt.Sprintf("gr%d:*", proto)+"|"+ch+"|hello"] {
					t.Errorf("messages %v", got)
				}
				if m, err := ssub.ReceiveMessage(ctx); err != nil || m.Channel != ch || m.Payload != "shard" {
					t.Errorf("shard message %v, %v", m, err)
				}
				if v, err := cl.PubSubNumSub(ctx, ch, "none").Result(); err != nil || v[ch] != 1 || v["none"] != 0 {
					t.Errorf("PUBSUB NUMSUB = %v, %v", v, err)
				}
				if v, err := cl.PubSubNumPat(ctx).Result(); err != nil || v != 1 {
					t.Errorf("PUBSUB NUMPAT = %v, %v", v, err)
				}
				if v, err := cl.PubSubChannels(ctx, fmt.Sprintf("gr%d:*", proto)).Result(); err != nil || fmt.Sprint(v) != fmt.Sprint([]string{ch}) {
					t.Errorf("PUBSUB CHANNELS = %v, %v", v, err)
				}
				if v, err := cl.PubSubShardNumSub(ctx, ch).Result(); err != nil || v[ch] != 1 {
					t.Errorf("PUBSUB SHARDNUMSUB = %v, %v", v, err)
				}
				// A burst arrives complete and in order.
				const burst = 200
				for i := 0; i < burst; i++ {
					if err := cl.Publish(ctx, ch, strconv.Itoa(i)).Err(); err != nil {
						t.Fatal(err)
					}
				}
				next := map[string]int{}
				for i := 0; i < 2*burst; i++ {
					select {
					case m := <-msgs:
						if want := strconv.Itoa(next[m.Pattern]); m.Payload != want {
							t.Fatalf("pattern %q: got %q, want %q", m.Pattern, m.Payload, want)
						}
						next[m.Pattern]++
					case <-ctx.Done():
						t.Fatalf("burst: %d of %d messages", i, 2*burst)
					}
				}
				if err := sub.Unsubscribe(ctx, ch); err != nil {
					t.Fatal(err)
				}
				if err := sub.PUnsubscribe(ctx); err != nil {
					t.Fatal(err)
				}
				deadline := time.Now().Add(psWait)
				for cl.PubSubNumSub(ctx, ch).Val()[ch] != 0 || cl.PubSubNumPat(ctx).Val() != 0 {
					if time.Now().After(deadline) {
						t.Fatal("still subscribed after Unsubscribe and PUnsubscribe")
					}
					time.Sleep(5 * time.Millisecond)
				}
			})
		}
	}
}

// dialSmallRcvBuf connects to addr with a tiny receive buffer, so that a
// client that stops reading backs up into the server quickly.
func dialSmallRcvBuf(t *testing.T, addr string) *harness.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := harness.NewConn(nc)
	t.Cleanup(func() { c.Close() })
	return c
}

// TestPubSubSlowSubscriber: a subscriber that stops reading is disconnected
// once its output passes client-output-buffer-limit's pubsub class, while
// the publisher's PUBLISHes keep being answered promptly and a subscriber
// that reads gets every message.
func TestPubSubSlowSubscriber(t *testing.T) {
	const (
		msgSize  = 32 << 10
		maxMsgs  = 2000 // 64 MB: far past any socket buffers plus 1 MB
		afterGap = 20   // messages published after the disconnect
		promptly = 2 * time.Second
	)
	for _, tg := range psTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			admin := tg.srv.Conn(t)
			if r := admin.Do("CONFIG", "SET", "client-output-buffer-limit", "pubsub 1mb 512kb 1"); r.Str != "OK" {
				t.Fatalf("CONFIG SET: %s", r.String())
			}
			slow := dialSmallRcvBuf(t, tg.srv.Addr())
			if _, err := psExchange(slow, [][]string{{"SUBSCRIBE", "slow:ch"}}, "ready"); err != nil {
				t.Fatal(err)
			}
			good := tg.srv.Conn(t)
			if _, err := psExchange(good, [][]string{{"SUBSCRIBE", "slow:ch"}}, "ready"); err != nil {
				t.Fatal(err)
			}
			// The good subscriber reads in the background until "end".
			type goodResult struct {
				n   int
				err error
			}
			done := make(chan goodResult, 1)
			go func() {
				n := 0
				for {
					r := good.Read()
					if r.Err != nil {
						done <- goodResult{n, r.Err}
						return
					}
					if frameKind(r) != "message" {
						done <- goodResult{n, fmt.Errorf("unexpected frame %q", harness.Trunc(string(r.Raw), 80))}
						return
					}
					p := r.Elems[2].Str
					if p == "end" {
						done <- goodResult{n, nil}
						return
					}
					if want := fmt.Sprintf("%06d", n); !strings.HasPrefix(p, want) {
						done <- goodResult{n, fmt.Errorf("message %d starts %q", n, harness.Trunc(p, 10))}
						return
					}
					n++
				}
			}()
			pub := tg.srv.Conn(t)
			pad := strings.Repeat("x", msgSize-6)
			published, disconnectedAt := 0, -1
			var slowest time.Duration
			for published < maxMsgs && (disconnectedAt < 0 || published < disconnectedAt+afterGap) {
				start := time.Now()
				r := pub.Do("PUBLISH", "slow:ch", fmt.Sprintf("%06d", published)+pad)
				slowest = max(slowest, time.Since(start))
				published++
				if r.Type != ':' {
					t.Fatalf("PUBLISH: %s", r.String())
				}
				if r.Int == 1 && disconnectedAt < 0 {
					disconnectedAt = published
				}
			}
			if r := pub.Do("PUBLISH", "slow:ch", "end"); r.Int != 1 {
				t.Errorf("final PUBLISH = %s, want 1 receiver", r.String())
			}
			if disconnectedAt < 0 {
				t.Fatalf("the slow subscriber was never disconnected (%d messages of %d bytes)", published, msgSize)
			}
			t.Logf("slow subscriber dropped after %d messages (%d MB); slowest PUBLISH %v",
				disconnectedAt, disconnectedAt*msgSize>>20, slowest)
			if slowest > promptly {
				t.Errorf("a PUBLISH took %v (want < %v): publishers wait for a slow subscriber", slowest, promptly)
			}
			select {
			case res := <-done:
				if res.err != nil || res.n != published {
					t.Errorf("the reading subscriber got %d of %d messages (%v)", res.n, published, res.err)
				}
			case <-time.After(psWait):
				t.Fatal("the reading subscriber did not finish")
			}
			if _, closed := slow.ReadAll(3 * time.Second); !closed {
				t.Error("the slow subscriber's connection was not closed")
			}
			if tg.name == "spillway" {
				log, _ := os.ReadFile(tg.srv.LogPath())
				if !bytes.Contains(log, []byte("output buffer limits")) {
					t.Errorf("no log line about the output buffer limit in:\n%s", harness.Trunc(string(log), 2000))
				}
			}
		})
	}
}

// TestPubSubRESP3Interleaved: a RESP3 subscriber runs SET and GET while
// messages are pushed to it; every reply is the right one and every
// message arrives, in order.
func TestPubSubRESP3Interleaved(t *testing.T) {
	const n = 300
	for _, tg := range psTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			c := tg.srv.Conn(t)
			if r := c.Do("HELLO", "3"); r.Type != '%' {
				t.Fatalf("HELLO 3: %s", r.String())
			}
			if _, err := psExchange(c, [][]string{{"SUBSCRIBE", "il:ch"}}, "ready"); err != nil {
				t.Fatal(err)
			}
			pubErr := make(chan error, 1)
			go func() {
				pub, err := harness.Dial(tg.srv.Addr())
				if err != nil {
					pubErr <- err
					return
				}
				defer pub.Close()
				for i := 0; i < n; i++ {
					if r := pub.Do("PUBLISH", "il:ch", strconv.Itoa(i)); r.Int != 1 {
						pubErr <- fmt.Errorf("PUBLISH %d: %s", i, r.String())
						return
					}
				}
				pubErr <- nil
			}()
			var got []string
			// reply reads frames until a non-push one: the command's reply.
			reply := func() harness.Reply {
				for {
					r := c.Read()
					if r.Err != nil {
						t.Fatal(r.Err)
					}
					if r.Type != '>' {
						return r
					}
					if frameKind(r) != "message" || r.Elems[1].Str != "il:ch" {
						t.Fatalf("unexpected push %q", r.Raw)
					}
					got = append(got, r.Elems[2].Str)
				}
			}
			for i := 0; i < n; i++ {
				v := "v" + strconv.Itoa(i)
				c.Send("SET", "il:k", v)
				if r := reply(); r.Str != "OK" {
					t.Fatalf("SET: %s", r.String())
				}
				c.Send("GET", "il:k")
				if r := reply(); r.Type != '$' || r.Str != v {
					t.Fatalf("GET = %s, want %q", r.String(), v)
				}
			}
			if err := <-pubErr; err != nil {
				t.Fatal(err)
			}
			c.Send("PING", "end")
			if r := reply(); r.Str != "end" {
				t.Fatalf("PING: %s", r.String())
			}
			if len(got) != n {
				t.Fatalf("%d of %d messages", len(got), n)
			}
			for i, m := range got {
				if m != strconv.Itoa(i) {
					t.Fatalf("message %d is %q", i, m)
				}
			}
			c.Do("DEL", "il:k")
		})
	}
}

// TestPubSubIdleTimeout: `timeout` closes idle clients but not
// subscribers, as in Redis.
func TestPubSubIdleTimeout(t *testing.T) {
	for _, tg := range psTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			if r := tg.srv.Conn(t).Do("CONFIG", "SET", "timeout", "1"); r.Str != "OK" {
				t.Fatalf("CONFIG SET timeout: %s", r.String())
			}
			defer func() { tg.srv.Conn(t).Do("CONFIG", "SET", "timeout", "0") }()
			sub := tg.srv.Conn(t)
			if _, err := psExchange(sub, [][]string{{"SUBSCRIBE", "idle:ch"}}, "ready"); err != nil {
				t.Fatal(err)
			}
			idle := tg.srv.Conn(t)
			idle.Do("PING")
			time.Sleep(2500 * time.Millisecond)
			if _, closed := idle.ReadAll(500 * time.Millisecond); !closed {
				t.Error("an idle normal client was not closed")
			}
			if r := tg.srv.Conn(t).Do("PUBLISH", "idle:ch", "still-here"); r.Int != 1 {
				t.Fatalf("PUBLISH = %s: the idle subscriber was closed", r.String())
			}
			sub.Timeout = psWait
			if r := sub.Read(); frameKind(r) != "message" || r.Elems[2].Str != "still-here" {
				t.Fatalf("subscriber read %s", r.String())
			}
		})
	}
}
