package integration

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// Connection introspection and control against a real redis-server 7.0
// and the spillway binary, compared where the output is deterministic:
// MONITOR's lines (timestamps and client addresses aside), CLIENT LIST's
// fields, CLIENT PAUSE's postponed clients and suspended expiry, and the
// query buffer of an idle client.

// clientTargets starts one redis-server and one spillway.
func clientTargets(t *testing.T) []psTarget {
	t.Helper()
	return []psTarget{
		{"redis", harness.StartRedis(t)},
		{"spillway", harness.StartSpillway(t, "")},
	}
}

// waitFor polls cond every 10 ms until it holds or 10 s pass (a bound for
// a stuck server, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var monitorPrefix = regexp.MustCompile(`^[0-9]+\.[0-9]{6} \[([0-9]+) ([^\]]+)\] `)

// monitorScript is what a client runs while another monitors; ECHO end
// closes it.
var monitorScript = [][]string{
	{"SET", "k", "a \"quoted\"\n\tvalue\x01\xff"},
	{"SET", "allbytes", allBytes()},
	{"GET", "k"},
	{"SELECT", "3"},
	{"SET", "k3", "v"},
	{"SELECT", "0"},
	{"MULTI"}, {"SET", "m", "1"}, {"INCR", "m"}, {"EXEC"},
	{"MULTI"}, {"NOSUCHCOMMAND"}, {"EXEC"},
	{"EVAL", "redis.call('set', KEYS[1], ARGV[1]); return redis.call('get', KEYS[1])", "1", "ek", "ev"},
	{"AUTH", "not-real"},
	{"AUTH", "user", "not-a-password"},
	{"HELLO", "2", "AUTH", "user", "pass"},
	{"HELLO", "2", "SETNAME", "n"},
	{"AUTH", "a", "b", "c"},          // syntax error: shown as sent
	{"HELLO", "4", "AUTH", "u", "p"}, // NOPROTO: shown as sent
	{"HELLO", "2", "AUTH", "u"},      // syntax error: shown as sent
	{"EVALSHA", "0123456789012345678901234567890123456789", "0"},
	{"FCALL", "nosuchfunction", "0"},
	{"CONFIG", "GET", "maxmemory"}, // admin: not shown
	{"CLIENT", "PAUSE", "0"},       // admin: not shown
	{"PING"},
	{"ECHO", "end"},
}

// allBytes is every byte value once, for sdscatrepr's quoting.
func allBytes() string {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return string(b)
}

// monitorLines runs monitorScript on srv under MONITOR and returns the
// lines shown, with the client address replaced by "addr".
func monitorLines(t *testing.T, srv *harness.Server) []string {
	mon := srv.Conn(t)
	if r := mon.Do("MONITOR"); r.Str != "OK" {
		t.Fatalf("MONITOR = %s", r.String())
	}
	c := srv.Conn(t)
	for _, cmd := range monitorScript {
		c.Do(cmd...)
	}
	var lines []string
	for {
		r := mon.Read()
		if r.Type != '+' {
			t.Fatalf("monitor read %s after %q", r.String(), lines)
		}
		m := monitorPrefix.FindStringSubmatch(r.Str)
		if m == nil {
			t.Fatalf("monitor line %q lacks Redis's timestamp and client prefix", r.Str)
		}
		who := m[2]
		if who != "lua" {
			who = "addr"
		}
		line := "[" + m[1] + " " + who + "] " + r.Str[len(m[0]):]
		lines = append(lines, strings.TrimSpace(line))
		if strings.HasSuffix(strings.ToLower(r.Str), `"echo" "end"`) {
			return lines
		}
	}
}

// TestMonitorMatchesRedis: the lines a monitor gets, quoting, redaction,
// databases, MULTI/EXEC, scripts and hidden admin commands included.
func TestMonitorMatchesRedis(t *testing.T) {
	var want []string
	for _, tg := range clientTargets(t) {
		got := monitorLines(t, tg.srv)
		if want == nil {
			want = got
			continue
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s monitor lines:\n%s\nredis-server's:\n%s", tg.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestMonitorReset: RESET leaves monitor mode; the client then gets
// replies only.
func TestMonitorReset(t *testing.T) {
	for _, tg := range clientTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			mon := tg.srv.Conn(t)
			mon.Do("MONITOR")
			if r := mon.Do("RESET"); r.Str != "RESET" {
				t.Fatalf("RESET = %s", r.String())
			}
			tg.srv.Conn(t).Do("SET", "x", "1")
			if r := mon.Do("PING"); r.Str != "PONG" {
				t.Fatalf("PING after RESET = %s, want PONG and no monitor line", r.String())
			}
		})
	}
}

// clientFields returns the field names of a CLIENT LIST line in order,
// and the line's fields by name.
func clientFields(line string) ([]string, map[string]string) {
	var names []string
	vals := map[string]string{}
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		names = append(names, k)
		vals[k] = v
	}
	return names, vals
}

// clientLine returns the CLIENT LIST line of the client named name.
func clientLine(t *testing.T, c *harness.Conn, name string) string {
	t.Helper()
	for _, l := range strings.Split(c.Do("CLIENT", "LIST").Str, "\n") {
		if strings.Contains(l, " name="+name+" ") {
			return l
		}
	}
	return ""
}

// TestClientListFields: the same fields in the same order, with the
// values a fresh client's own CLIENT INFO has on both servers, and the
// flags of a monitor, a client in MULTI and a NO-EVICT client.
func TestClientListFields(t *testing.T) {
	type view struct {
		names                      []string
		own                        map[string]string
		monFlags, multi, evictFlag string
	}
	var views []view
	for _, tg := range clientTargets(t) {
		c := tg.srv.Conn(t)
		names, own := clientFields(c.Do("CLIENT", "INFO").Str)
		mon := tg.srv.Conn(t)
		mon.Do("CLIENT", "SETNAME", "mon")
		mon.Do("MONITOR")
		m := tg.srv.Conn(t)
		m.Do("CLIENT", "SETNAME", "inmulti")
		m.Do("MULTI")
		m.Do("SET", "a", "b")
		e := tg.srv.Conn(t)
		e.Do("CLIENT", "SETNAME", "noevict")
		e.Do("CLIENT", "NO-EVICT", "on")
		_, mv := clientFields(clientLine(t, c, "mon"))
		_, xv := clientFields(clientLine(t, c, "inmulti"))
		_, ev := clientFields(clientLine(t, c, "noevict"))
		views = append(views, view{names, own, mv["flags"], xv["flags"] + " multi=" + xv["multi"] + " cmd=" + xv["cmd"] + " multi-mem=" + xv["multi-mem"], ev["flags"]})
	}
	r, s := views[0], views[1]
	if strings.Join(s.names, " ") != strings.Join(r.names, " ") {
		t.Fatalf("CLIENT INFO fields:\n%v\nredis-server's:\n%v", s.names, r.names)
	}
	for _, k := range []string{"flags", "db", "sub", "psub", "ssub", "multi", "qbuf", "argv-mem", "multi-mem", "obl", "oll", "omem", "events", "cmd", "user", "redir", "resp"} {
		if s.own[k] != r.own[k] {
			t.Errorf("CLIENT INFO %s=%s, redis-server's %s", k, s.own[k], r.own[k])
		}
	}
	if s.monFlags != r.monFlags || s.multi != r.multi || s.evictFlag != r.evictFlag {
		t.Errorf("monitor flags %q, MULTI %q, NO-EVICT flags %q; redis-server's %q, %q, %q",
			s.monFlags, s.multi, s.evictFlag, r.monFlags, r.multi, r.evictFlag)
	}
}

// pauseObservations runs CLIENT PAUSE WRITE scenarios on srv and returns
// what a client observes.
func pauseObservations(t *testing.T, srv *harness.Server) []string {
	var obs []string
	note := func(s string) { obs = append(obs, s) }
	r := srv.Conn(t)
	info := func(field string) string {
		m, err := harness.Info(r, "")
		if err != nil {
			t.Fatal(err)
		}
		return m[field]
	}
	r.Do("SET", "ro", "v")
	r.Do("CLIENT", "PAUSE", "100000", "WRITE")

	// Reads and read-only scripts go on; writes wait, shown as blocked.
	note("GET " + r.Do("GET", "ro").String())
	note("EVAL no-writes " + r.Do("EVAL", "#!lua flags=no-writes\nreturn redis.call('get','ro')", "0").String())
	w := srv.Conn(t)
	w.Do("CLIENT", "SETNAME", "writer")
	w.Send("SET", "w", "1")
	w.Flush()
	p := srv.Conn(t)
	p.Send("PUBLISH", "ch", "m")
	p.Flush()
	e := srv.Conn(t)
	e.Send("EVAL", "return 1", "0")
	e.Flush()
	waitFor(t, "3 postponed clients", func() bool { return info("blocked_clients") == "3" })
	_, wv := clientFields(clientLine(t, r, "writer"))
	note("writer flags=" + wv["flags"] + " cmd=" + wv["cmd"])
	note("w while paused " + r.Do("EXISTS", "w").String())
	r.Do("CLIENT", "UNPAUSE")
	note("SET " + w.Read().String())
	note("PUBLISH " + p.Read().String())
	note("EVAL " + e.Read().String())
	note("read-only script may not PUBLISH: " + r.Do("EVAL_RO", "return redis.call('publish','ch','m')", "0").String()[:60])

	// A postponed client that disconnects never runs its command.
	gone := srv.Conn(t)
	gone.Do("CLIENT", "SETNAME", "gone")
	r.Do("CLIENT", "PAUSE", "100000", "WRITE")
	gone.Send("SET", "gone", "1")
	gone.Flush()
	waitFor(t, "the postponed client", func() bool { return info("blocked_clients") == "1" })
	gone.Close()
	waitFor(t, "the client gone", func() bool { return clientLine(t, r, "gone") == "" })
	r.Do("CLIENT", "UNPAUSE")
	note("disconnected while postponed, its SET ran: " + r.Do("EXISTS", "gone").String())

	// PAUSE ALL holds every command (CLIENT UNPAUSE and INFO too) until
	// it times out; the reply then comes.
	rd := srv.Conn(t)
	r.Do("CLIENT", "PAUSE", "300", "ALL")
	rd.Send("GET", "ro")
	rd.Flush()
	note("GET under PAUSE ALL " + rd.Read().String())

	// Expiry is suspended while paused.
	base := info("expired_keys")
	r.Do("MULTI")
	r.Do("SET", "e1", "v", "PX", "10")
	r.Do("SET", "e2", "v", "PX", "10")
	r.Do("CLIENT", "PAUSE", "100000", "WRITE")
	r.Do("EXEC")
	waitFor(t, "keys logically expired", func() bool {
		return r.Do("GET", "e1").Null && r.Do("GET", "e2").Null
	})
	note("expired while paused: " + diffCount(info("expired_keys"), base))
	r.Do("CLIENT", "UNPAUSE")
	r.Do("GET", "e1")
	r.Do("GET", "e2")
	note("expired after unpause: " + diffCount(info("expired_keys"), base))
	return obs
}

func diffCount(now, base string) string {
	if now == base {
		return "none"
	}
	return "some"
}

// TestClientPauseMatchesRedis: postponed writes, PUBLISH and scripts that
// may write, reads going on, and suspended expiry, as redis-server.
func TestClientPauseMatchesRedis(t *testing.T) {
	var want []string
	for _, tg := range clientTargets(t) {
		got := pauseObservations(t, tg.srv)
		t.Logf("%s: %q", tg.name, got)
		if want == nil {
			want = got
			continue
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s under CLIENT PAUSE:\n%s\nredis-server:\n%s", tg.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestIdleQueryBufferReleased: an idle client holds a 16 KB query buffer
// at first, and none once idle for more than 2 s, as in Redis; it then
// works as before.
func TestIdleQueryBufferReleased(t *testing.T) {
	for _, tg := range clientTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			obs := tg.srv.Conn(t)
			c := tg.srv.Conn(t)
			c.Do("CLIENT", "SETNAME", "idler")
			size := func() (int, int) {
				_, v := clientFields(clientLine(t, obs, "idler"))
				return atoi(v["qbuf"]) + atoi(v["qbuf-free"]), atoi(v["idle"])
			}
			if n, _ := size(); n < 16384 || n >= 32768 {
				t.Fatalf("query buffer of a new client %d bytes, want 16 KB and less than 32 KB", n)
			}
			waitFor(t, "the idle client's query buffer freed", func() bool {
				n, idle := size()
				return n == 0 && idle >= 2
			})
			if r := c.Do("ECHO", "still here"); r.Str != "still here" {
				t.Fatalf("ECHO after the release = %s", r.String())
			}
		})
	}
}

func atoi(s string) int {
	n := 0
	for _, ch := range s {
		n = n*10 + int(ch-'0')
	}
	return n
}
