package integration

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// configGet returns CONFIG GET name's value on c (RESP2), "" if absent.
func configGet(t *testing.T, c *harness.Conn, name string) string {
	t.Helper()
	r := c.Do("CONFIG", "GET", name)
	if r.Type != '*' {
		t.Fatalf("CONFIG GET %s = %s", name, r.String())
	}
	for i := 0; i+1 < len(r.Elems); i += 2 {
		if r.Elems[i].Str == name {
			return r.Elems[i+1].Str
		}
	}
	return ""
}

// TestUpstreamConfig: CONFIG SET through upstream-mode Spillway reaches
// the upstream for the settings it acts on, and stays in Spillway for
// Spillway's own (maxmemory is Spillway's budget of the upstream's
// memory); CONFIG GET reads each from where it applies; a value Redis
// refuses changes nothing anywhere.
func TestUpstreamConfig(t *testing.T) {
	up := harness.StartRedis(t)
	sp := utStartSpillway(t, up, "", 64*utMB)
	c := utDial(t, sp.Addr(), 10*time.Second)
	uc := utDial(t, up.Addr(), 10*time.Second)

	if r := c.Do("CONFIG", "SET", "notify-keyspace-events", "KEA", "maxmemory", "100mb", "hash-max-listpack-entries", "77"); r.Str != "OK" {
		t.Fatalf("CONFIG SET = %s", r.String())
	}
	for _, tc := range []struct{ name, spillway, upstream string }{
		{"notify-keyspace-events", "AKE", "AKE"},
		{"hash-max-listpack-entries", "77", "77"},
		{"maxmemory", "104857600", "0"},
	} {
		if got := configGet(t, c, tc.name); got != tc.spillway {
			t.Errorf("CONFIG GET %s through Spillway = %q; want %q", tc.name, got, tc.spillway)
		}
		if got := configGet(t, uc, tc.name); got != tc.upstream {
			t.Errorf("CONFIG GET %s on the upstream = %q; want %q", tc.name, got, tc.upstream)
		}
	}
	// A refused value: Redis's error, and neither side changed.
	r := c.Do("CONFIG", "SET", "hash-max-listpack-entries", "5", "maxmemory-policy", "sometimes")
	if !r.IsError() || !strings.Contains(r.Str, "maxmemory-policy") {
		t.Fatalf("CONFIG SET of an invalid policy = %s; want Redis's error", r.String())
	}
	if got := configGet(t, uc, "hash-max-listpack-entries"); got != "77" {
		t.Errorf("after the refused CONFIG SET the upstream has hash-max-listpack-entries %q; want 77", got)
	}
	// The keyspace events are the upstream's: a subscriber through
	// Spillway gets them.
	sub := utDial(t, sp.Addr(), 10*time.Second)
	if r := sub.Do("SUBSCRIBE", "__keyevent@0__:set"); r.Type != '*' {
		t.Fatalf("SUBSCRIBE = %s", r.String())
	}
	c.Do("SET", "cfg:key", "v")
	if r := sub.Read(); len(r.Elems) != 3 || r.Elems[2].Str != "cfg:key" {
		t.Fatalf("keyspace event through Spillway = %s; want the SET of cfg:key", r.String())
	}
}

// TestUpstreamBusyScript: a script running upstream does not hold the
// other clients' commands behind it: they get BUSY as Redis's clients do,
// and SCRIPT KILL through Spillway ends it.
func TestUpstreamBusyScript(t *testing.T) {
	up := harness.StartRedis(t)
	sp := utStartSpillway(t, up, "", 64*utMB)
	c := utDial(t, sp.Addr(), 20*time.Second)
	if r := c.Do("CONFIG", "SET", "busy-reply-threshold", "50"); r.Str != "OK" {
		t.Fatalf("CONFIG SET busy-reply-threshold = %s", r.String())
	}
	busy := utDial(t, sp.Addr(), 20*time.Second)
	if err := busy.Send("EVAL", "while true do end", "0"); err != nil {
		t.Fatal(err)
	}
	if err := busy.Flush(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := c.Do("GET", "busy:key")
		if r.IsError() && strings.HasPrefix(r.Str, "BUSY ") {
			break
		}
		if r.Err != nil || time.Now().After(deadline) {
			t.Fatalf("GET while a script runs upstream = %s; want BUSY", r.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r := c.Do("SCRIPT", "KILL"); r.Str != "OK" {
		t.Fatalf("SCRIPT KILL = %s", r.String())
	}
	if r := busy.Read(); !r.IsError() || !strings.Contains(r.Str, "Script killed by user with SCRIPT KILL") {
		t.Fatalf("the killed script's reply = %s", r.String())
	}
	if r := c.Do("PING"); r.Str != "PONG" {
		t.Fatalf("PING after the kill = %s", r.String())
	}
}

// TestUpstreamMonitorShowsClientsOnly: MONITOR through upstream-mode
// Spillway shows the clients' commands, not Spillway's own (the demoter
// polls INFO memory every 100 ms on connections of its own).
func TestUpstreamMonitorShowsClientsOnly(t *testing.T) {
	up := harness.StartRedis(t)
	sp := utStartSpillway(t, up, "", 64*utMB)
	mon := utDial(t, sp.Addr(), 10*time.Second)
	if r := mon.Do("MONITOR"); r.Str != "OK" {
		t.Fatalf("MONITOR = %s", r.String())
	}
	c := utDial(t, sp.Addr(), 10*time.Second)
	time.Sleep(350 * time.Millisecond) // a few of the demoter's polls
	c.Do("SET", "mon:key", "v")
	for {
		r := mon.Read()
		if r.Err != nil {
			t.Fatalf("monitor read: %v", r.Err)
		}
		if strings.Contains(r.Str, `"INFO"`) || strings.Contains(r.Str, `"info"`) {
			t.Fatalf("MONITOR showed Spillway's own command: %s", r.Str)
		}
		if strings.Contains(r.Str, `"SET" "mon:key" "v"`) {
			return
		}
	}
}

// TestUpstreamTrackingRedirect: CLIENT TRACKING ... REDIRECT names a
// Spillway client; the upstream knows that client by its own id, and
// Spillway translates it, so a RESP2 client subscribed to
// __redis__:invalidate gets the invalidations of another's reads.
func TestUpstreamTrackingRedirect(t *testing.T) {
	up := harness.StartRedis(t)
	sp := utStartSpillway(t, up, "", 64*utMB)
	redir := utDial(t, sp.Addr(), 10*time.Second)
	id := redir.Do("CLIENT", "ID").Int
	if r := redir.Do("SUBSCRIBE", "__redis__:invalidate"); r.Type != '*' {
		t.Fatalf("SUBSCRIBE = %s", r.String())
	}
	tr := utDial(t, sp.Addr(), 10*time.Second)
	if r := tr.Do("CLIENT", "TRACKING", "on", "REDIRECT", strconv.FormatInt(id, 10)); r.Str != "OK" {
		t.Fatalf("CLIENT TRACKING on REDIRECT %d = %s", id, r.String())
	}
	w := utDial(t, sp.Addr(), 10*time.Second)
	w.Do("SET", "trk:key", "1")
	tr.Do("GET", "trk:key")
	w.Do("SET", "trk:key", "2")
	r := redir.Read()
	if len(r.Elems) != 3 || r.Elems[0].Str != "message" || r.Elems[1].Str != "__redis__:invalidate" ||
		len(r.Elems[2].Elems) != 1 || r.Elems[2].Elems[0].Str != "trk:key" {
		t.Fatalf("redirected invalidation = %s; want message __redis__:invalidate [trk:key]", r.String())
	}
	if r := tr.Do("CLIENT", "TRACKING", "on", "REDIRECT", "999999"); !r.IsError() || !strings.Contains(r.Str, "does not exist") {
		t.Fatalf("REDIRECT to no client = %s; want Redis's error", r.String())
	}
}

// TestUpstreamTrackingPassthroughState: a client in passthrough for
// CLIENT TRACKING alone is not in RESP2's subscribed context (it can turn
// tracking off and on again with another REDIRECT), CLIENT GETREDIR and
// TRACKINGINFO name the Spillway client it redirects to (the upstream
// knows another id), and HELLO 3 switches its upstream connection too, so
// invalidations then arrive as RESP3 pushes on it.
func TestUpstreamTrackingPassthroughState(t *testing.T) {
	up := harness.StartRedis(t)
	sp := utStartSpillway(t, up, "", 64*utMB)
	redir := utDial(t, sp.Addr(), 10*time.Second)
	id := strconv.FormatInt(redir.Do("CLIENT", "ID").Int, 10)
	redir.Do("SUBSCRIBE", "__redis__:invalidate")
	tr := utDial(t, sp.Addr(), 10*time.Second)
	w := utDial(t, sp.Addr(), 10*time.Second)
	for _, step := range [][]string{
		{"CLIENT", "TRACKING", "on", "REDIRECT", id},
		{"CLIENT", "TRACKING", "off"},
		{"CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", id},
	} {
		if r := tr.Do(step...); r.Str != "OK" {
			t.Fatalf("%v = %s; want OK", step, r.String())
		}
	}
	if r := tr.Do("CLIENT", "GETREDIR"); r.Type != ':' || r.Str != id {
		t.Fatalf("CLIENT GETREDIR = %s; want %s", r.String(), id)
	}
	info := tr.Do("CLIENT", "TRACKINGINFO")
	found := false
	for i := 0; i+1 < len(info.Elems); i += 2 {
		if info.Elems[i].Str == "redirect" {
			found = true
			if info.Elems[i+1].Str != id {
				t.Fatalf("TRACKINGINFO redirect = %s; want %s", info.Elems[i+1].String(), id)
			}
		}
	}
	if !found {
		t.Fatalf("TRACKINGINFO = %s; no redirect field", info.String())
	}
	w.Do("SET", "bc:key", "1")
	if r := redir.Read(); len(r.Elems) != 3 || len(r.Elems[2].Elems) != 1 || r.Elems[2].Elems[0].Str != "bc:key" {
		t.Fatalf("BCAST invalidation = %s; want [bc:key]", r.String())
	}

	tr.Do("CLIENT", "TRACKING", "off")
	if r := tr.Do("HELLO", "3"); r.Type != '%' {
		t.Fatalf("HELLO 3 = %s", r.String())
	}
	tr.Do("CLIENT", "TRACKING", "on")
	w.Do("SET", "r3:key", "1")
	if r := tr.Do("GET", "r3:key"); r.Str != "1" {
		t.Fatalf("GET = %s; want 1 (a stray frame is ahead of the reply)", r.String())
	}
	w.Do("SET", "r3:key", "2")
	if r := tr.Read(); r.Type != '>' || len(r.Elems) != 2 || r.Elems[0].Str != "invalidate" {
		t.Fatalf("invalidation after HELLO 3 = %s; want a RESP3 push", r.String())
	}
	if r := tr.Do("HELLO", "2"); r.Type != '*' {
		t.Fatalf("HELLO 2 = %s", r.String())
	}
	if r := tr.Do("PING"); r.Str != "PONG" {
		t.Fatalf("PING after HELLO 2 = %s; want PONG (the upstream's HELLO reply must not reach the client)", r.String())
	}
}

// TestUpstreamMonitorShowsLocalCommands: the commands Spillway answers
// itself never reach the upstream, whose MONITOR is what a monitor sees;
// Spillway writes their lines into it, with Redis's redactions, in order
// with the relayed ones.
func TestUpstreamMonitorShowsLocalCommands(t *testing.T) {
	up := harness.StartRedis(t)
	sp := utStartSpillway(t, up, "", 64*utMB)
	mon := utDial(t, sp.Addr(), 10*time.Second)
	if r := mon.Do("MONITOR"); r.Str != "OK" {
		t.Fatalf("MONITOR = %s", r.String())
	}
	c := utDial(t, sp.Addr(), 10*time.Second)
	c.Do("AUTH", "not-real")
	c.Do("HELLO", "2", "AUTH", "u", "secret-pw")
	c.Do("CLIENT", "SETNAME", "mon-test")
	c.Do("SET", "mon:after", "v")
	want := []string{`"auth" "(redacted)"`, `"hello" "2" "AUTH" "(redacted)" "(redacted)"`, `"client" "setname" "mon-test"`, `"SET" "mon:after" "v"`}
	for _, w := range want {
		r := mon.Read()
		if r.Err != nil {
			t.Fatalf("monitor read: %v (waiting for %s)", r.Err, w)
		}
		if strings.Contains(r.Str, "secret-pw") || strings.Contains(r.Str, "not-real") {
			t.Fatalf("MONITOR showed a secret: %s", r.Str)
		}
		if !strings.Contains(strings.ToLower(r.Str), strings.ToLower(w)) {
			t.Fatalf("MONITOR line = %s; want one with %s", r.Str, w)
		}
	}
}

// TestUpstreamBlockingOrder: blocking commands sent one after the other on
// two connections block upstream in that order (Redis serves the first
// blocked first), though each goes on a dedicated upstream connection of
// its own. Repeated: without the ordering wait the second overtakes the
// first now and then.
func TestUpstreamBlockingOrder(t *testing.T) {
	up := harness.StartRedis(t)
	sp := utStartSpillway(t, up, "", 64*utMB)
	r := utDial(t, sp.Addr(), 10*time.Second)
	for i := range 20 {
		rd1 := utDial(t, sp.Addr(), 10*time.Second)
		rd2 := utDial(t, sp.Addr(), 10*time.Second)
		r.Do("DEL", "bo:list", "bo:t1", "bo:t2") // (the connections are accepted meanwhile)
		if err := rd1.Send("BRPOPLPUSH", "bo:list", "bo:t1", "0"); err != nil {
			t.Fatal(err)
		}
		if err := rd1.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := rd2.Send("BRPOPLPUSH", "bo:list", "bo:t2", "0"); err != nil {
			t.Fatal(err)
		}
		if err := rd2.Flush(); err != nil {
			t.Fatal(err)
		}
		r.Do("LPUSH", "bo:list", "a", "b")
		if got := rd1.Read(); got.Str != "a" {
			t.Fatalf("round %d: first blocked client got %s; want a (it blocked first)", i, got.String())
		}
		if got := rd2.Read(); got.Str != "b" {
			t.Fatalf("round %d: second blocked client got %s; want b", i, got.String())
		}
		rd1.Close()
		rd2.Close()
	}
}
