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
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

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
