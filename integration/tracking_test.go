package integration

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// Client-side caching (CLIENT TRACKING) against a real redis-server 7.0
// and the spillway binary: one script of commands over several
// connections, each reply and each invalidation message (RESP3 pushes,
// RESP2 Pub/Sub messages to a redirection client) compared byte for byte,
// client ids aside.

// trkStep is one step of a tracking script: conn sends args and reads one
// reply, or, with args nil, reads one more message (a push); skip: the
// reply differs by design (HELLO's server fields) and is not compared;
// info: the reply is INFO's, of which the tracking fields are compared.
type trkStep struct {
	conn int
	args []string
	skip bool
	info bool
}

// trkConns is how many connections the script uses. Arguments "$ID<n>"
// are connection n's CLIENT ID.
const trkConns = 5

func do(conn int, args ...string) trkStep { return trkStep{conn: conn, args: args} }
func recv(conn int) trkStep               { return trkStep{conn: conn} }

// trkScript: 0 tracks in RESP3, 1 writes, 2 is a RESP2 redirection client
// subscribed to __redis__:invalidate, 3 tracks in RESP2 with redirection,
// 4 is a redirection client that quits.
var trkScript = []trkStep{
	// Errors, in Redis's order of checks.
	do(3, "CLIENT", "TRACKING"),
	do(3, "CLIENT", "TRACKING", "maybe"),
	do(3, "CLIENT", "TRACKING", "on", "REDIRECT", "x"),
	do(3, "CLIENT", "TRACKING", "on", "REDIRECT", "999999"),
	do(3, "CLIENT", "TRACKING", "on", "REDIRECT", "$ID2", "REDIRECT", "$ID2"),
	do(3, "CLIENT", "TRACKING", "on", "FOO"),
	do(3, "CLIENT", "TRACKING", "on", "PREFIX"),
	do(3, "CLIENT", "TRACKING", "on", "PREFIX", "a"),
	do(3, "CLIENT", "TRACKING", "on", "BCAST", "OPTIN"),
	do(3, "CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"),
	do(3, "CLIENT", "TRACKING", "on", "OPTIN"),
	do(3, "CLIENT", "TRACKING", "on", "OPTOUT"),
	do(3, "CLIENT", "TRACKING", "on", "BCAST"),
	do(3, "CLIENT", "CACHING", "no"),
	do(3, "CLIENT", "CACHING", "maybe"),
	do(3, "CLIENT", "CACHING", "yes"),
	do(3, "CLIENT", "TRACKINGINFO"),
	do(3, "CLIENT", "TRACKING", "off"),
	do(3, "CLIENT", "CACHING", "yes"),
	do(3, "CLIENT", "GETREDIR"),
	do(3, "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "FOOBAR", "PREFIX", "FOO"),
	do(3, "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "FO", "PREFIX", "BAR"),
	do(3, "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "F"),
	do(3, "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "BARB"),
	do(3, "CLIENT", "TRACKING", "on", "OPTIN"),
	do(3, "CLIENT", "TRACKING", "off"),
	// A later prefix overlapping one after it: Redis replies the error,
	// then enables tracking and replies OK.
	do(3, "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a", "PREFIX", "b", "PREFIX", "bc"),
	recv(3),
	do(3, "CLIENT", "TRACKINGINFO"),
	do(3, "CLIENT", "TRACKING", "off"),

	// RESP3: invalidations pushed to the tracking client itself.
	{conn: 0, args: []string{"HELLO", "3"}, skip: true},
	do(0, "CLIENT", "TRACKING", "on"),
	do(0, "CLIENT", "GETREDIR"),
	do(1, "SET", "k1", "1"),
	do(0, "GET", "k1"),
	do(1, "SET", "k1", "2"),
	recv(0),
	do(0, "MGET", "k1", "k2"),
	do(1, "DEL", "k3"), // not tracked, not modified
	do(1, "MSET", "k1", "a", "k2", "b"),
	recv(0),
	recv(0),
	do(0, "GET", "k1"),
	do(0, "SET", "k1", "x"), // its own write: after the reply
	recv(0),
	do(0, "GET", "k1"),
	do(0, "MULTI"),
	do(0, "GET", "k2"),
	do(0, "SET", "k1", "y"),
	do(0, "SET", "k2", "z"),
	do(0, "EXEC"),
	recv(0),
	recv(0),
	do(0, "HSET", "h", "f", "1"),
	do(0, "HGET", "h", "f"),
	do(0, "HDEL", "h", "f"),
	recv(0),
	// A script that reads remembers its declared keys; one that does not,
	// none.
	do(0, "EVAL", "return redis.call('set', 'other', '1')", "2", "s1", "s2"),
	do(1, "MSET", "s1", "1", "s2", "1"),
	do(0, "EVAL", "return redis.call('get', 'other')", "2", "s1", "s2"),
	do(1, "MSET", "s2", "2", "s1", "2"),
	recv(0),
	recv(0),
	do(0, "EVAL_RO", "return redis.call('ping')", "1", "s1"),
	do(1, "SET", "s1", "3"),
	do(0, "PING"),
	{conn: 3, args: []string{"INFO"}, info: true},
	do(0, "GET", "k1"),
	do(1, "FLUSHALL"),
	recv(0),
	{conn: 3, args: []string{"INFO"}, info: true},
	do(0, "FLUSHDB"),
	recv(0),
	do(0, "CLIENT", "TRACKINGINFO"),
	do(0, "CLIENT", "TRACKING", "off"),

	// RESP2 with redirection to a subscribed client.
	do(2, "SUBSCRIBE", "__redis__:invalidate"),
	do(3, "CLIENT", "TRACKING", "on", "REDIRECT", "$ID2"),
	do(3, "CLIENT", "GETREDIR"),
	do(3, "GET", "r1"),
	do(1, "SET", "r1", "1"),
	recv(2),
	do(3, "GET", "r1"),
	do(1, "FLUSHALL"),
	recv(2),
	// Keys are global, not per database; SWAPDB invalidates nothing.
	do(3, "GET", "y"),
	do(1, "SELECT", "1"),
	do(1, "SET", "y", "1"),
	recv(2),
	do(1, "SWAPDB", "0", "1"),
	do(3, "GET", "y"),
	do(1, "SWAPDB", "0", "1"),
	do(1, "SELECT", "0"),
	do(2, "PING"),
	// BCAST, with prefixes, in a transaction: one message per prefix.
	do(3, "CLIENT", "TRACKING", "off"),
	do(3, "CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", "$ID2", "PREFIX", "p:", "PREFIX", "q:"),
	do(3, "CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", "$ID2", "PREFIX", "r:"),
	do(3, "CLIENT", "TRACKINGINFO"),
	do(1, "MULTI"),
	do(1, "SET", "p:1", "1"),
	do(1, "SET", "q:1", "1"),
	do(1, "SET", "p:2", "1"),
	do(1, "SET", "z", "1"),
	do(1, "EXEC"),
	recv(2),
	recv(2),
	{conn: 3, args: []string{"INFO"}, info: true},
	// NOLOOP: not told of its own writes.
	do(3, "CLIENT", "TRACKING", "off"),
	do(3, "CLIENT", "TRACKING", "on", "BCAST", "NOLOOP", "REDIRECT", "$ID2"),
	do(3, "SET", "own", "1"),
	do(1, "SET", "other", "1"),
	recv(2),
	// OPTIN: only reads after CLIENT CACHING yes.
	do(3, "CLIENT", "TRACKING", "off"),
	do(3, "CLIENT", "TRACKING", "on", "OPTIN", "REDIRECT", "$ID2"),
	do(3, "GET", "o1"),
	do(1, "SET", "o1", "1"),
	do(3, "CLIENT", "CACHING", "yes"),
	do(3, "CLIENT", "TRACKINGINFO"),
	do(3, "GET", "o2"),
	do(3, "CLIENT", "TRACKINGINFO"),
	do(1, "SET", "o2", "1"),
	recv(2),
	// OPTOUT: every read but after CLIENT CACHING no.
	do(3, "CLIENT", "TRACKING", "off"),
	do(3, "CLIENT", "TRACKING", "on", "OPTOUT", "REDIRECT", "$ID2"),
	do(3, "CLIENT", "CACHING", "no"),
	do(3, "GET", "o3"),
	do(3, "GET", "o4"),
	do(1, "MSET", "o3", "1", "o4", "1"),
	recv(2),
	// RESET turns tracking off.
	do(3, "RESET"),
	do(3, "CLIENT", "TRACKINGINFO"),
	do(3, "CLIENT", "GETREDIR"),

	// The redirection client goes away: a RESP3 tracker is told.
	do(0, "CLIENT", "TRACKING", "on", "REDIRECT", "$ID4"),
	do(0, "GET", "b1"),
	do(4, "QUIT"),
	do(1, "SET", "b1", "1"),
	recv(0),
	do(0, "CLIENT", "TRACKINGINFO"),
	do(0, "CLIENT", "TRACKING", "off"),
	do(0, "CLIENT", "TRACKINGINFO"),
	// A RESP3 tracker's flush null, sent to a RESP2 redirection client.
	do(0, "CLIENT", "TRACKING", "on", "REDIRECT", "$ID2"),
	do(0, "GET", "f"),
	do(1, "FLUSHDB"),
	recv(2),
	do(0, "CLIENT", "TRACKING", "off"),
	// Overlapping prefixes (Redis's quirk): a key under both, told twice.
	do(0, "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "a", "PREFIX", "b", "PREFIX", "bc"),
	recv(0),
	do(1, "SET", "bcd", "1"),
	recv(0),
	recv(0),
	do(0, "CLIENT", "TRACKING", "off"),
}

// runTrackingScript runs trkScript on srv and returns its transcript.
func runTrackingScript(t *testing.T, srv *harness.Server) []string {
	conns := make([]*harness.Conn, trkConns)
	ids := make([]string, trkConns)
	for i := range conns {
		conns[i] = srv.Conn(t)
		ids[i] = strconv.FormatInt(conns[i].Do("CLIENT", "ID").Int, 10)
	}
	var out []string
	for n, st := range trkScript {
		c := conns[st.conn]
		var r harness.Reply
		if st.args == nil {
			r = c.Read()
		} else {
			args := make([]string, len(st.args))
			for i, a := range st.args {
				if strings.HasPrefix(a, "$ID") {
					k, _ := strconv.Atoi(a[3:])
					a = ids[k]
				}
				args[i] = a
			}
			r = c.Do(args...)
		}
		if r.Err != nil {
			t.Fatalf("step %d %q on conn %d: %v", n, st.args, st.conn, r.Err)
		}
		raw := r.Raw
		switch {
		case st.skip:
			raw = nil
		case st.info:
			raw = trackingInfoLines(r.Str)
		}
		for i, id := range ids {
			// Integer replies (at the start or after a line) holding an id.
			raw = append([]byte{'\n'}, raw...)
			raw = bytes.ReplaceAll(raw, []byte("\n:"+id+"\r\n"), []byte(fmt.Sprintf("\n:ID%d\r\n", i)))[1:]
		}
		out = append(out, fmt.Sprintf("%d %q -> %q", st.conn, st.args, raw))
	}
	return out
}

// trackingInfoLines keeps INFO's tracking fields.
func trackingInfoLines(info string) []byte {
	var b []byte
	for _, l := range strings.Split(info, "\r\n") {
		if strings.HasPrefix(l, "tracking_") {
			b = append(b, l...)
			b = append(b, '\n')
		}
	}
	return b
}

// TestTrackingMatchesRedis: every reply and invalidation message of the
// script, byte for byte.
func TestTrackingMatchesRedis(t *testing.T) {
	var want []string
	for _, tg := range clientTargets(t) {
		got := runTrackingScript(t, tg.srv)
		if want == nil {
			want = got
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s differs from redis at step %d:\n redis: %s\n %s: %s", tg.name, i, want[i], tg.name, got[i])
			}
		}
	}
}

// TestTrackingCacheStaysFresh: the property client-side caching exists
// for. Trackers (RESP3) cache what their GETs and MGETs return and drop
// what invalidations name, while writers keep changing the same keys on
// other connections; once the writers are done and each tracker has seen
// a PING's reply, every value left in every cache is the key's current
// value. An invalidation overtaking the reply of the read it concerns, or
// a read remembered after a concurrent write, leaves a stale value.
func TestTrackingCacheStaysFresh(t *testing.T) {
	const trackers, writers, keys, rounds = 4, 3, 4, 1000
	for _, tg := range clientTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			key := func(i int) string { return "fresh:" + strconv.Itoa(i%keys) }
			caches := make([]map[string]string, trackers)
			done := make(chan error, trackers+writers)
			for w := range writers {
				c := tg.srv.Conn(t)
				go func() {
					for i := range rounds {
						r := c.Do("SET", key(i*7+w), fmt.Sprintf("w%d-%d", w, i))
						if r.Err != nil || r.Str != "OK" {
							done <- fmt.Errorf("SET: %s", r.String())
							return
						}
					}
					done <- nil
				}()
			}
			conns := make([]*harness.Conn, trackers)
			for n := range trackers {
				c := tg.srv.Conn(t)
				conns[n] = c
				c.Do("HELLO", "3")
				if r := c.Do("CLIENT", "TRACKING", "on"); r.Str != "OK" {
					t.Fatalf("CLIENT TRACKING: %s", r.String())
				}
				cache := map[string]string{}
				caches[n] = cache
				go func() {
					for i := range rounds {
						var err error
						if i%5 == 0 {
							a, b := key(i+n), key(i+n+3)
							err = trackedRead(c, cache, []string{a, b}, "MGET", a, b)
						} else {
							err = trackedRead(c, cache, []string{key(i * (n + 1))}, "GET", key(i*(n+1)))
						}
						if err != nil {
							done <- err
							return
						}
					}
					done <- nil
				}()
			}
			for range trackers + writers {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
			check := tg.srv.Conn(t)
			for n, c := range conns {
				if err := trackedRead(c, caches[n], nil, "PING"); err != nil {
					t.Fatal(err)
				}
				for k, v := range caches[n] {
					if now := check.Do("GET", k); now.Str != v {
						t.Errorf("tracker %d caches %s = %q, the server has %q", n, k, v, now.Str)
					}
				}
			}
		})
	}
}

// trackedRead sends args and reads until its reply, applying the
// invalidations met on the way to cache, then caches the reply's values
// for keys (a GET's one, an MGET's each).
func trackedRead(c *harness.Conn, cache map[string]string, keys []string, args ...string) error {
	if err := c.Send(args...); err != nil {
		return err
	}
	for {
		r := c.Read()
		if r.Err != nil {
			return r.Err
		}
		if r.Type == '>' {
			if len(r.Elems) != 2 || r.Elems[0].Str != "invalidate" {
				return fmt.Errorf("unexpected push %s", r.String())
			}
			if r.Elems[1].Null {
				clear(cache)
			}
			for _, k := range r.Elems[1].Elems {
				delete(cache, k.Str)
			}
			continue
		}
		vals := []harness.Reply{r}
		if r.Type == '*' {
			vals = r.Elems
		}
		for i, k := range keys {
			if vals[i].Null {
				delete(cache, k)
			} else {
				cache[k] = vals[i].Str
			}
		}
		return nil
	}
}
