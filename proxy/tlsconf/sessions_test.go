package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// sessionServer serves TLS with the server side of b on a loopback port:
// each connection's handshake, then "ok", then it waits for the client to
// close. It is closed when the test ends.
func sessionServer(t *testing.T, b *Bundle) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				nc.SetDeadline(time.Now().Add(10 * time.Second))
				c := tls.Server(nc, b.server[0])
				if c.Handshake() != nil {
					return
				}
				c.Write([]byte("ok"))
				io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// sessionClient connects to addr with version v and the client session
// cache cache, reads the server's "ok" (which processes a TLS 1.3 ticket
// sent before it) and reports whether the session was resumed.
func sessionClient(t *testing.T, addr string, roots *x509.CertPool, v uint16, cache tls.ClientSessionCache) bool {
	t.Helper()
	d := &net.Dialer{Timeout: 10 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{RootCAs: roots, ServerName: "test",
		MinVersion: v, MaxVersion: v, ClientSessionCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 2)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ok" {
		t.Fatalf("read: %q %v", buf, err)
	}
	return c.ConnectionState().DidResume
}

// sessionBundle builds a server configuration with a self-signed
// certificate (CN test) and the session settings given.
func sessionBundle(t *testing.T, caching bool, size, timeout int) (*Bundle, *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "s.crt"), filepath.Join(dir, "s.key")
	openssl(t, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
		"-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=test", "-addext", "subjectAltName=DNS:test")
	b, err := Build(Settings{Server: true, CertFile: cert, KeyFile: key, AuthClients: "no",
		SessionCaching: caching, SessionCacheSize: size, SessionCacheTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	return b, roots
}

var sessionVersions = []struct {
	name string
	v    uint16
}{{"TLSv1.2", tls.VersionTLS12}, {"TLSv1.3", tls.VersionTLS13}}

// A second connection resumes the first one's session with caching on,
// not with it off; the server holds the session (the ticket is only its
// identifier).
func TestSessionCachingOnOff(t *testing.T) {
	for _, ver := range sessionVersions {
		t.Run(ver.name, func(t *testing.T) {
			b, roots := sessionBundle(t, true, 20480, 300)
			addr := sessionServer(t, b)
			cache := tls.NewLRUClientSessionCache(8)
			if sessionClient(t, addr, roots, ver.v, cache) {
				t.Fatal("the first connection resumed")
			}
			if b.sessions.Len() == 0 {
				t.Fatal("no session was stored on the server")
			}
			if !sessionClient(t, addr, roots, ver.v, cache) {
				t.Fatal("caching on: the second connection did not resume")
			}
			// The sessions are the server's: an empty cache resumes nothing.
			b.sessions.mu.Lock()
			for el := b.sessions.order.Front(); el != nil; el = b.sessions.order.Front() {
				b.sessions.removeLocked(el)
			}
			b.sessions.mu.Unlock()
			if sessionClient(t, addr, roots, ver.v, cache) {
				t.Fatal("resumed a session the server no longer holds")
			}

			off, roots := sessionBundle(t, false, 20480, 300)
			if off.sessions != nil || !off.server[0].SessionTicketsDisabled {
				t.Fatal("caching off: a session store is configured")
			}
			addr = sessionServer(t, off)
			cache = tls.NewLRUClientSessionCache(8)
			sessionClient(t, addr, roots, ver.v, cache)
			if sessionClient(t, addr, roots, ver.v, cache) {
				t.Fatal("caching off: the second connection resumed")
			}
		})
	}
}

// A session is resumable for the timeout after it was stored, and not
// after (the cache's clock is moved, no waiting).
func TestSessionCacheTimeout(t *testing.T) {
	for _, ver := range sessionVersions {
		t.Run(ver.name, func(t *testing.T) {
			b, roots := sessionBundle(t, true, 20480, 1)
			var mu sync.Mutex
			now := time.Now()
			b.sessions.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
			addr := sessionServer(t, b)
			cache := tls.NewLRUClientSessionCache(8)
			sessionClient(t, addr, roots, ver.v, cache)
			advance(900 * time.Millisecond)
			if !sessionClient(t, addr, roots, ver.v, cache) {
				t.Fatal("not resumed within the timeout")
			}
			cache = tls.NewLRUClientSessionCache(8)
			sessionClient(t, addr, roots, ver.v, cache)
			advance(time.Second)
			if sessionClient(t, addr, roots, ver.v, cache) {
				t.Fatal("resumed after the timeout")
			}
		})
	}
}

// The cache holds at most tls-session-cache-size sessions: the oldest
// make room, and their clients make a full handshake.
func TestSessionCacheSize(t *testing.T) {
	for _, ver := range sessionVersions {
		t.Run(ver.name, func(t *testing.T) {
			const size = 2
			b, roots := sessionBundle(t, true, size, 300)
			addr := sessionServer(t, b)
			clients := make([]tls.ClientSessionCache, 4)
			for i := range clients {
				clients[i] = tls.NewLRUClientSessionCache(8)
				sessionClient(t, addr, roots, ver.v, clients[i])
				if n := b.sessions.Len(); n > size {
					t.Fatalf("%d sessions held, size %d", n, size)
				}
			}
			if sessionClient(t, addr, roots, ver.v, clients[0]) {
				t.Error("the oldest session was resumed after newer ones filled the cache")
			}
			if !sessionClient(t, addr, roots, ver.v, clients[3]) {
				t.Error("the newest session was not resumed")
			}
			if n := b.sessions.Len(); n > size {
				t.Fatalf("%d sessions held, size %d", n, size)
			}
		})
	}
}
