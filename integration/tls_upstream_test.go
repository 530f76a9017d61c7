package integration

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// TestTLSUpstream: upstream mode over rediss:// to a redis-server that
// speaks TLS only on its TLS port and requires client certificates.
// Spillway presents tls-client-cert-file and verifies the upstream
// against tls-ca-cert-file; an upstream whose certificate another CA
// signed, or a Spillway without a client certificate, gets no link.
func TestTLSUpstream(t *testing.T) {
	pki := newTestPKI(t, "Upstream CA")
	redisCert := pki.issue(t, "redis")
	spillCert := pki.issue(t, "spillway")
	tport := harness.FreePort(t)
	up := harness.StartRedis(t, tlsServerArgs(tport, pki, redisCert, "yes")...)
	url := "rediss://127.0.0.1:" + strconv.Itoa(tport)

	t.Setenv("SPILLWAY_TEST_HOOKS", "1") // DEBUG DEMOTE-ALL
	// Spillway's own TLS port too, in upstream mode: its server
	// certificate is tls-cert-file, the upstream sees tls-client-cert-file.
	frontCert := pki.issue(t, "front")
	client := pki.issue(t, "client")
	sport := harness.FreePort(t)
	sp := harness.StartSpillway(t, "", "--upstream", url, "--tls-ca-cert-file", pki.CA,
		"--tls-client-cert-file", spillCert.Cert, "--tls-client-key-file", spillCert.Key,
		"--tls-port", strconv.Itoa(sport), "--tls-cert-file", frontCert.Cert, "--tls-key-file", frontCert.Key)
	c := sp.Conn(t)
	if out, ok := redisCli(t, append(cliTLS(sport, pki, &client), "SET", "via-tls", "1")...); out != "OK" || !ok {
		t.Fatalf("redis-cli --tls to spillway in upstream mode: %q ok=%v", out, ok)
	}
	if r := up.Conn(t).Do("GET", "via-tls"); r.Str != "1" {
		t.Fatalf("GET on the upstream of a key set over TLS end to end: %s", r.String())
	}
	if serial, _, err := tlsPing(addrOf(sport), pki.clientTLS(t, &client)); err != nil || serial != frontCert.Serial {
		t.Fatalf("spillway's TLS port served serial %d (%v); want the front's %d", serial, err, frontCert.Serial)
	}
	if r := c.Do("SET", "k", "over-tls"); r.Str != "OK" {
		t.Fatalf("SET through spillway: %s", r.String())
	}
	if r := up.Conn(t).Do("GET", "k"); r.Str != "over-tls" {
		t.Fatalf("GET on the upstream: %s", r.String())
	}
	// Demote to the store and read back (a cold reload over TLS).
	if r := c.Do("DEBUG", "DEMOTE-ALL"); r.IsError() {
		t.Fatalf("DEBUG DEMOTE-ALL: %s", r.String())
	}
	if r := c.Do("GET", "k"); r.Str != "over-tls" {
		t.Fatalf("GET after demotion: %s", r.String())
	}
	info, err := harness.Info(c, "tiering")
	if err != nil || info["upstream_status"] != "up" || info["upstream"] != "127.0.0.1:"+strconv.Itoa(tport) {
		t.Fatalf("INFO tiering: %v %v", info, err)
	}

	// reasons are what the log may give as the cause: any one of them.
	refused := func(name string, reasons []string, args ...string) {
		t.Helper()
		// A password, so that the harness's readiness PING is answered
		// (NOAUTH) without the upstream.
		s := harness.StartSpillway(t, "", append([]string{"--upstream", url, "--requirepass", "pw"}, args...)...)
		sc := s.Conn(t)
		if r := sc.Do("GET", "k"); !r.IsError() {
			t.Errorf("%s: GET answered %s; want an error (no upstream link)", name, r.String())
		}
		info, err := harness.Info(sc, "tiering")
		if err != nil || info["upstream_status"] != "down" {
			t.Errorf("%s: INFO tiering %v %v; want upstream_status:down", name, info, err)
		}
		log, _ := os.ReadFile(s.LogPath())
		found := false
		for _, r := range reasons {
			found = found || strings.Contains(string(log), r)
		}
		if !found {
			t.Errorf("%s: the log gives none of %q", name, reasons)
		}
	}
	other := newTestPKI(t, "Other CA")
	refused("another CA", []string{"certificate signed by unknown authority"}, "--tls-ca-cert-file", other.CA,
		"--tls-client-cert-file", spillCert.Cert, "--tls-client-key-file", spillCert.Key)
	// In TLS 1.3 the server checks the client's certificate after the
	// client's handshake ended: its "certificate required" alert can reach
	// Spillway first, or Spillway's first command can meet the closed
	// socket (a reset, the alert lost with it) on a loaded machine.
	refused("no client certificate", []string{"tls: certificate required", "connection reset by peer"},
		"--tls-ca-cert-file", pki.CA)
}
