package integration

// TLS session resumption on spillway's tls-port: tls-session-caching,
// tls-session-cache-size and tls-session-cache-timeout act as Redis's
// OpenSSL server-side session cache does, in TLS 1.2 and 1.3, and CONFIG
// SET of them applies to new connections. A Go client with a
// ClientSessionCache reconnects and reads ConnectionState().DidResume.

import (
	"crypto/tls"
	"strconv"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

func TestTLSSessionCache(t *testing.T) {
	pki := newTestPKI(t, "Spillway Session CA")
	srv := pki.issue(t, "server")
	port := harness.FreePort(t)
	sp := harness.StartSpillway(t, "", tlsServerArgs(port, pki, srv, "no")...)
	admin := sp.Conn(t)
	set := func(name, value string) {
		t.Helper()
		if r := admin.Do("CONFIG", "SET", name, value); r.Str != "OK" {
			t.Fatalf("CONFIG SET %s %s: %s", name, value, r.String())
		}
	}
	addr := addrOf(port)
	for _, ver := range []struct {
		name string
		v    uint16
	}{{"TLSv1.2", tls.VersionTLS12}, {"TLSv1.3", tls.VersionTLS13}} {
		t.Run(ver.name, func(t *testing.T) {
			// connect opens a connection with the client session cache
			// cache, runs PING (a TLS 1.3 ticket arrives before the reply)
			// and reports whether the session was resumed.
			connect := func(cache tls.ClientSessionCache) bool {
				t.Helper()
				cfg := pki.clientTLS(t, nil)
				cfg.MinVersion, cfg.MaxVersion, cfg.ClientSessionCache = ver.v, ver.v, cache
				c, tc, err := tlsDial(addr, cfg)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if r := c.Do("PING"); r.Str != "PONG" {
					t.Fatalf("PING: %s %v", r.String(), r.Err)
				}
				return tc.ConnectionState().DidResume
			}
			fresh := func() tls.ClientSessionCache { return tls.NewLRUClientSessionCache(4) }
			set("tls-session-caching", "yes")
			set("tls-session-cache-size", "20480")
			set("tls-session-cache-timeout", "300")

			cache := fresh()
			if connect(cache) {
				t.Fatal("the first connection resumed")
			}
			if !connect(cache) {
				t.Fatal("caching on: the second connection did not resume")
			}

			set("tls-session-caching", "no")
			cache = fresh()
			connect(cache)
			if connect(cache) {
				t.Fatal("caching off: the second connection resumed")
			}

			set("tls-session-caching", "yes")
			set("tls-session-cache-timeout", "1")
			cache = fresh()
			connect(cache)
			time.Sleep(1100 * time.Millisecond) // past the 1-second timeout
			if connect(cache) {
				t.Fatal("resumed after tls-session-cache-timeout")
			}

			set("tls-session-cache-timeout", "300")
			set("tls-session-cache-size", "1")
			a, b := fresh(), fresh()
			connect(a)
			connect(b) // the cache holds one session: b's replaces a's
			if connect(a) {
				t.Fatal("resumed a session evicted by tls-session-cache-size 1")
			}
			if !connect(a) {
				t.Fatal("the newest session was not resumed")
			}
		})
	}
	if out, ok := redisCli(t, append(cliTLS(port, pki, nil), "PING")...); !ok || out != "PONG" {
		t.Fatalf("redis-cli --tls PING: %q ok=%v", out, ok)
	}
	set("tls-session-caching", "yes")
	if out, ok := redisCli(t, append(cliTLS(port, pki, nil), "SET", "k", strconv.Itoa(port))...); !ok || out != "OK" {
		t.Fatalf("redis-cli --tls SET: %q ok=%v", out, ok)
	}
}
