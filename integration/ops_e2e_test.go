package integration

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// helloIDRe finds the client id in HELLO's reply.
var helloIDRe = regexp.MustCompile(`\$2\r\nid\r\n:[0-9]+\r\n`)

// TestOpsEndToEnd is issue 22's end-to-end check, run on a real
// redis-server and on the spillway binary with the same self-signed CA
// and settings, every reply compared: clients reach the TLS port with
// client certificates (redis-cli --tls and raw RESP over crypto/tls), an
// ACL user limited by key pattern and category is allowed and refused
// (Redis's NOPERM errors), ACL LOG shows the refusals, SLOWLOG (threshold
// 0) logs the commands with AUTH's password redacted, a tracking client
// in RESP3 gets its invalidation push over TLS; then Spillway's /metrics
// agrees with redis-server's INFO on what the script did.
func TestOpsEndToEnd(t *testing.T) {
	mport := harness.FreePort(t)
	p := startTLSPair(t, "yes", "--metrics-port", strconv.Itoa(mport))
	var got [2][]string
	var infos [2]map[string]string
	p.each(func(i int, srv *harness.Server, port int) {
		note := func(s string) { got[i] = append(got[i], s) }
		dial := func() *harness.Conn {
			c, _, err := tlsDial(addrOf(port), p.pki.clientTLS(t, &p.client))
			if err != nil {
				t.Fatalf("server %d: TLS dial: %v", i, err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		admin, app, trk := dial(), dial(), dial()
		raw := func(c *harness.Conn, args ...string) {
			r := c.Do(args...)
			note(strings.Join(args, " ") + " -> " + string(r.Raw))
		}
		raw(admin, "CONFIG", "SET", "slowlog-log-slower-than", "0")
		raw(admin, "SLOWLOG", "RESET")
		raw(admin, "ACL", "LOG", "RESET")
		raw(admin, "ACL", "SETUSER", "app", "on", ">app-secret", "~app:*", "+@read", "+@write", "-@dangerous")
		raw(app, "AUTH", "app", "app-secret")
		raw(app, "SET", "app:1", "v1")
		raw(app, "GET", "app:1")
		raw(app, "SET", "other:1", "x") // key outside ~app:*
		raw(app, "GET", "other:1")
		raw(app, "FLUSHALL") // @dangerous
		raw(app, "KEYS", "*")
		raw(app, "ACL", "WHOAMI") // @slow, not @read or @write
		raw(app, "MGET", "app:1", "other:1")
		raw(admin, "CLIENT", "SETNAME", "admin")

		// redis-cli over TLS, as the restricted user.
		cli := append(cliTLS(port, p.pki, &p.client), "--user", "app", "--pass", "app-secret", "--no-auth-warning")
		out, ok := redisCli(t, append(cli, "GET", "app:1")...)
		note("redis-cli GET -> " + out + " " + strconv.FormatBool(ok))
		out, _ = redisCli(t, append(cli, "DEL", "other:1")...)
		note("redis-cli DEL other:1 -> " + out)

		// Client-side caching over TLS: RESP3 push on the tracking
		// connection when another client changes a key it read.
		// HELLO's reply, its client id aside.
		hello := trk.Do("HELLO", "3", "SETNAME", "trk")
		note("HELLO -> " + helloIDRe.ReplaceAllString(string(hello.Raw), "$$2\r\nid\r\n:ID\r\n"))
		raw(trk, "CLIENT", "TRACKING", "on")
		raw(trk, "GET", "app:1")
		raw(app, "SET", "app:1", "v2")
		push := trk.Read()
		note("push -> " + string(push.Raw))
		raw(trk, "GET", "app:1")

		// ACL LOG: the refusals, newest first (age and client info aside).
		log := admin.Do("ACL", "LOG")
		for _, e := range log.Elems {
			var fields []string
			for j := 0; j+1 < len(e.Elems); j += 2 {
				k := e.Elems[j].Str
				if k == "age-seconds" || k == "client-info" {
					continue
				}
				fields = append(fields, k+"="+strings.TrimSpace(string(e.Elems[j+1].Raw)))
			}
			note("acl log: " + strings.Join(fields, " "))
		}
		// SLOWLOG: every command since the reset, with its arguments
		// (AUTH's redacted) and client name.
		sl := admin.Do("SLOWLOG", "GET", "-1")
		for _, e := range sl.Elems {
			if len(e.Elems) < 6 {
				t.Fatalf("server %d: slowlog entry %s", i, e.String())
			}
			var args []string
			for _, a := range e.Elems[3].Elems {
				args = append(args, a.Str)
			}
			note("slowlog: " + strings.Join(args, " ") + " name=" + e.Elems[5].Str)
		}
		info, err := harness.Info(admin, "everything")
		if err != nil {
			t.Fatal(err)
		}
		infos[i] = info
	})
	if strings.Join(got[0], "\n") != strings.Join(got[1], "\n") {
		t.Fatalf("redis-server:\n%s\n\nspillway:\n%s", strings.Join(got[0], "\n"), strings.Join(got[1], "\n"))
	}
	// What the script must have shown, on both.
	all := strings.Join(got[1], "\n")
	for _, want := range []string{
		"SET other:1 x -> -NOPERM this user has no permissions to access one of the keys used as arguments\r\n",
		"FLUSHALL -> -NOPERM this user has no permissions to run the 'flushall' command\r\n",
		"redis-cli GET -> v1 true",
		"push -> >2\r\n$10\r\ninvalidate\r\n*1\r\n$5\r\napp:1\r\n",
		"acl log: count=:1 reason=$7\r\ncommand context=$8\r\ntoplevel object=$8\r\nflushall username=$3\r\napp",
		"slowlog: AUTH (redacted) (redacted) name=",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("missing %q in:\n%s", want, all)
		}
	}

	// /metrics agrees with redis-server's INFO after the same script.
	m := scrape(t, "127.0.0.1:"+strconv.Itoa(mport))
	for _, cmd := range []string{"set", "get", "flushall", "keys", "mget"} {
		for _, f := range [][2]string{{"calls", "redis_commands_total"}, {"rejected_calls", "redis_commands_rejected_calls_total"}} {
			want := infoSub(t, infos[0], "cmdstat_"+cmd, f[0])
			if got := m[f[1]+`{cmd="`+cmd+`"}`]; got != want {
				t.Errorf("%s{cmd=%q} = %v; redis-server's INFO says %v", f[1], cmd, got, want)
			}
		}
	}
	if got, want := metric(t, m, `redis_errors_total{err="NOPERM"}`), infoSub(t, infos[0], "errorstat_NOPERM", "count"); got != want {
		t.Errorf(`redis_errors_total{err="NOPERM"} = %v; redis-server's errorstat_NOPERM is %v`, got, want)
	}
	if metric(t, m, "redis_tracking_clients") != 1 {
		t.Errorf("redis_tracking_clients = %v; want 1", m["redis_tracking_clients"])
	}
}
