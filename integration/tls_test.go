package integration

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/spillway/spillway/integration/harness"
)

// TLS (tls-port and the tls-* settings) against a real redis-server 7.0
// with the same certificates and settings: redis-cli --tls and a Go
// client, client certificates (tls-auth-clients yes, optional, no),
// reloading certificates with CONFIG SET (a bad file refused with Redis's
// error), moving tls-port and closing the plain port, encrypted keys, and
// upstream mode over rediss://.

// tlsPair is a redis-server and a spillway with the same TLS settings;
// tlsPorts are their TLS ports.
type tlsPair struct {
	pki      *testPKI
	srvCert  issued
	client   issued
	redis    *harness.Server
	spill    *harness.Server
	tlsPorts [2]int
}

func startTLSPair(t *testing.T, authClients string, spillExtra ...string) *tlsPair {
	t.Helper()
	p := &tlsPair{pki: newTestPKI(t, "Spillway Test CA")}
	p.srvCert = p.pki.issue(t, "server")
	p.client = p.pki.issue(t, "client")
	p.tlsPorts[0] = harness.FreePort(t)
	p.redis = harness.StartRedis(t, tlsServerArgs(p.tlsPorts[0], p.pki, p.srvCert, authClients)...)
	p.tlsPorts[1] = harness.FreePort(t)
	p.spill = harness.StartSpillway(t, "", append(tlsServerArgs(p.tlsPorts[1], p.pki, p.srvCert, authClients), spillExtra...)...)
	return p
}

// each runs fn for redis-server (i 0) then spillway (i 1).
func (p *tlsPair) each(fn func(i int, srv *harness.Server, tlsPort int)) {
	fn(0, p.redis, p.tlsPorts[0])
	fn(1, p.spill, p.tlsPorts[1])
}

func TestTLSClientsMatchRedis(t *testing.T) {
	p := startTLSPair(t, "yes")
	var got [2][]string
	p.each(func(i int, srv *harness.Server, port int) {
		note := func(s string, ok bool) { got[i] = append(got[i], s+" ok="+strconv.FormatBool(ok)) }
		note(redisCli(t, append(cliTLS(port, p.pki, &p.client), "SET", "k", "v")...))
		note(redisCli(t, append(cliTLS(port, p.pki, &p.client), "GET", "k")...))
		// No client certificate: refused while tls-auth-clients is yes.
		out, ok := redisCli(t, append(cliTLS(port, p.pki, nil), "PING")...)
		if ok || out == "PONG" {
			t.Errorf("server %d: redis-cli without a certificate answered %q (ok=%v); want refused", i, out, ok)
		}
		if _, reply, err := tlsPing(addrOf(port), p.pki.clientTLS(t, nil)); err == nil {
			t.Errorf("server %d: a Go client without a certificate got %q", i, reply)
		}
		admin := srv.Conn(t)
		note(string(admin.Do("CONFIG", "SET", "tls-auth-clients", "optional").Raw), true)
		note(redisCli(t, append(cliTLS(port, p.pki, nil), "PING")...))
		note(redisCli(t, append(cliTLS(port, p.pki, &p.client), "PING")...))
		// A certificate of another CA is refused even when optional.
		other := newTestPKI(t, "Other CA")
		stranger := other.issue(t, "stranger")
		cfg := p.pki.clientTLS(t, nil)
		cfg.Certificates = other.clientTLS(t, &stranger).Certificates
		if _, reply, err := tlsPing(addrOf(port), cfg); err == nil {
			t.Errorf("server %d: a client certificate of another CA got %q", i, reply)
		}
		note(string(admin.Do("CONFIG", "SET", "tls-auth-clients", "no").Raw), true)
		note(redisCli(t, append(cliTLS(port, p.pki, nil), "GET", "k")...))

		// go-redis over TLS, RESP2 and RESP3.
		for _, proto := range []int{2, 3} {
			c := redis.NewClient(&redis.Options{Addr: addrOf(port), Protocol: proto, DisableIdentity: true,
				TLSConfig: p.pki.clientTLS(t, &p.client)})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := c.Set(ctx, "go", "resp"+strconv.Itoa(proto), 0).Err()
			v, gerr := c.Get(ctx, "go").Result()
			cancel()
			c.Close()
			note("go-redis "+v, err == nil && gerr == nil)
		}
	})
	if strings.Join(got[0], "\n") != strings.Join(got[1], "\n") {
		t.Fatalf("redis-server:\n%s\nspillway:\n%s", strings.Join(got[0], "\n"), strings.Join(got[1], "\n"))
	}
	want := []string{"OK ok=true", "v ok=true", "+OK\r\n ok=true", "PONG ok=true", "PONG ok=true", "+OK\r\n ok=true", "v ok=true",
		"go-redis resp2 ok=true", "go-redis resp3 ok=true"}
	if strings.Join(got[1], "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got[1], "\n"), strings.Join(want, "\n"))
	}
}

func addrOf(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// TestTLSReload: CONFIG SET of the certificate settings reloads them for
// new connections (the same path too, for a renewed file); a file that
// cannot be loaded is refused with Redis's error and the old certificate
// stays; an encrypted key loads with tls-key-file-pass.
func TestTLSReload(t *testing.T) {
	p := startTLSPair(t, "no")
	second := p.pki.issue(t, "second")
	renewed := p.pki.issue(t, "renewed")
	encrypted := encryptKey(t, p.pki.issue(t, "encrypted"), "s3cret")
	var got [2][]string
	p.each(func(i int, srv *harness.Server, port int) {
		// This server's own copy of the file renewed in place.
		second := issued{Cert: second.Cert + strconv.Itoa(i), Key: second.Key + strconv.Itoa(i), Serial: second.Serial}
		copyFile(t, strings.TrimSuffix(second.Cert, strconv.Itoa(i)), second.Cert)
		copyFile(t, strings.TrimSuffix(second.Key, strconv.Itoa(i)), second.Key)
		admin := srv.Conn(t)
		cfg := p.pki.clientTLS(t, nil)
		serial := func() string {
			s, reply, err := tlsPing(addrOf(port), cfg)
			if err != nil {
				return "error: " + err.Error()
			}
			return strconv.FormatInt(s, 10) + " " + reply
		}
		note := func(s string) { got[i] = append(got[i], s) }
		note(serial())
		note(string(admin.Do("CONFIG", "SET", "tls-cert-file", filepath.Join(p.pki.dir, "missing.crt")).Raw))
		note(serial()) // still the old certificate
		// A key that does not match the certificate.
		note(string(admin.Do("CONFIG", "SET", "tls-key-file", second.Key).Raw))
		note(serial())
		note(string(admin.Do("CONFIG", "SET", "tls-cert-file", second.Cert, "tls-key-file", second.Key).Raw))
		note(serial())
		// Renew the file in place, then set the same path: reloaded.
		copyFile(t, renewed.Cert, second.Cert)
		copyFile(t, renewed.Key, second.Key)
		note(serial()) // not yet
		note(string(admin.Do("CONFIG", "SET", "tls-cert-file", second.Cert).Raw))
		note(serial())
		note(string(admin.Do("CONFIG", "SET", "tls-cert-file", encrypted.Cert, "tls-key-file", encrypted.Key,
			"tls-key-file-pass", "wrong").Raw))
		note(serial())
		note(string(admin.Do("CONFIG", "SET", "tls-cert-file", encrypted.Cert, "tls-key-file", encrypted.Key,
			"tls-key-file-pass", "s3cret").Raw))
		note(serial())
		note(string(admin.Do("CONFIG", "SET", "tls-protocols", "TLSv1.2 SSLv3").Raw))
		note(string(admin.Do("CONFIG", "GET", "tls-cert-file").Raw))
	})
	if strings.Join(got[0], "\n") != strings.Join(got[1], "\n") {
		t.Fatalf("redis-server:\n%s\nspillway:\n%s", strings.Join(got[0], "\n"), strings.Join(got[1], "\n"))
	}
	s := func(n int64) string { return strconv.FormatInt(n, 10) + " PONG" }
	if got[1][0] != s(p.srvCert.Serial) || got[1][6] != s(second.Serial) || got[1][7] != s(second.Serial) || got[1][9] != s(renewed.Serial) ||
		got[1][13] != s(encrypted.Serial) {
		t.Fatalf("certificates served:\n%s", strings.Join(got[1], "\n"))
	}
	if want := "-ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration. Check server logs.\r\n"; got[1][1] != want {
		t.Fatalf("bad file: %s; want %s", got[1][1], want)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// encryptKey rewrites is's key encrypted with pass, in OpenSSL's legacy
// PEM encryption (AES-256-CBC), which both OpenSSL and Spillway read.
func encryptKey(t *testing.T, is issued, pass string) issued {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(is.key)
	if err != nil {
		t.Fatal(err)
	}
	//nolint:staticcheck // the legacy format is what is being tested
	blk, err := x509.EncryptPEMBlock(rand.Reader, "EC PRIVATE KEY", der, []byte(pass), x509.PEMCipherAES256)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(is.Key, pem.EncodeToMemory(blk), 0o600); err != nil {
		t.Fatal(err)
	}
	return is
}

// TestTLSPorts: tls-port moves with CONFIG SET as port does, and port 0
// leaves the TLS port alone serving (redis-server likewise).
func TestTLSPorts(t *testing.T) {
	p := startTLSPair(t, "no")
	var got [2][]string
	p.each(func(i int, srv *harness.Server, port int) {
		note := func(s string) { got[i] = append(got[i], s) }
		cfg := p.pki.clientTLS(t, nil)
		c, _, err := tlsDial(addrOf(port), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		moved := harness.FreePort(t)
		note(string(c.Do("CONFIG", "SET", "tls-port", strconv.Itoa(moved)).Raw))
		_, r, err := tlsPing(addrOf(moved), cfg)
		note(r + " " + strconv.FormatBool(err == nil))
		_, _, err = tlsPing(addrOf(port), cfg)
		note("old port refused: " + strconv.FormatBool(err != nil))
		// Close the plain port over the TLS connection (still open).
		note(string(c.Do("CONFIG", "SET", "port", "0").Raw))
		_, err = harness.Dial(srv.Addr())
		note("plain port refused: " + strconv.FormatBool(err != nil))
		_, r, err = tlsPing(addrOf(moved), cfg)
		note(r + " " + strconv.FormatBool(err == nil))
		tp := c.Do("CONFIG", "GET", "tls-port")
		note("tls-port moved: " + strconv.FormatBool(len(tp.Elems) == 2 && tp.Elems[1].Str == strconv.Itoa(moved)))
		note(string(c.Do("CONFIG", "SET", "port", strconv.Itoa(srv.Port())).Raw))
		_, err = harness.Dial(srv.Addr())
		note("plain port back: " + strconv.FormatBool(err == nil))
		// With no TLS port, TLS files are not loaded (a bad one is
		// accepted); opening the port again serves the configuration
		// loaded before.
		plain := srv.Conn(t)
		note(string(plain.Do("CONFIG", "SET", "tls-port", "0").Raw))
		note(string(plain.Do("CONFIG", "SET", "tls-cert-file", filepath.Join(p.pki.dir, "missing.crt")).Raw))
		again := harness.FreePort(t)
		note(string(plain.Do("CONFIG", "SET", "tls-port", strconv.Itoa(again)).Raw))
		serial, r, err := tlsPing(addrOf(again), cfg)
		note(r + " " + strconv.FormatBool(err == nil && serial == p.srvCert.Serial))
		note(string(plain.Do("CONFIG", "SET", "tls-cert-file", p.srvCert.Cert).Raw))
	})
	if strings.Join(got[0], "\n") != strings.Join(got[1], "\n") {
		t.Fatalf("redis-server:\n%s\nspillway:\n%s", strings.Join(got[0], "\n"), strings.Join(got[1], "\n"))
	}
	want := "+OK\r\n\nPONG true\nold port refused: true\n+OK\r\n\nplain port refused: true\nPONG true\ntls-port moved: true\n+OK\r\n\nplain port back: true\n" +
		"+OK\r\n\n+OK\r\n\n+OK\r\n\nPONG true\n+OK\r\n"
	if strings.Join(got[1], "\n") != want {
		t.Fatalf("got:\n%s", strings.Join(got[1], "\n"))
	}
}
