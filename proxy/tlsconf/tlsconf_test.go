package tlsconf

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseProtocols(t *testing.T) {
	cases := []struct {
		in       string
		min, max uint16
		ok       bool
	}{
		{"", tls.VersionTLS12, tls.VersionTLS13, true},
		{"TLSv1.2", tls.VersionTLS12, tls.VersionTLS12, true},
		{"tlsv1.3", tls.VersionTLS13, tls.VersionTLS13, true},
		{"TLSv1 TLSv1.1", tls.VersionTLS10, tls.VersionTLS11, true},
		{"TLSv1.3 TLSv1.2", tls.VersionTLS12, tls.VersionTLS13, true},
		{"SSLv3", 0, 0, false},
		{"TLSv1.2  TLSv1.3", 0, 0, false}, // an empty token, as Redis's split gives
	}
	for _, c := range cases {
		lo, hi, err := parseProtocols(c.in)
		if (err == nil) != c.ok || lo != c.min || hi != c.max {
			t.Errorf("parseProtocols(%q) = %x, %x, %v; want %x, %x, ok=%v", c.in, lo, hi, err, c.min, c.max, c.ok)
		}
	}
}

func TestParseCiphers(t *testing.T) {
	got, err := parseCiphers("ECDHE-RSA-AES256-GCM-SHA384:TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256:!aNULL")
	want := []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("named suites: %v %v; want %v", got, err, want)
	}
	def, err := parseCiphers("DEFAULT:!MEDIUM")
	if err != nil || !slices.Contains(def, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) {
		t.Errorf("keywords: %v %v; want Go's default suites", def, err)
	}
	less, err := parseCiphers("DEFAULT:-ECDHE-RSA-AES128-GCM-SHA256")
	if err != nil || len(less) != len(def)-1 || slices.Contains(less, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) {
		t.Errorf("an exclusion: %v %v", less, err)
	}
	if _, err := parseCiphers("AES128-SHA256:!AES128-SHA256"); err == nil {
		t.Error("a list left empty was accepted")
	}
	if _, err := parseCiphers("NO-SUCH-CIPHER"); err == nil {
		t.Error("a list naming no known suite was accepted")
	}
	if err := checkCiphersuites("TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256"); err != nil {
		t.Error(err)
	}
	if err := checkCiphersuites("TLS_AES_128_CCM_8_SHA256"); err == nil {
		t.Error("an unimplemented TLS 1.3 suite was accepted")
	}
}

func TestBuildChecks(t *testing.T) {
	if _, err := Build(Settings{Server: true, AuthClients: "no"}); err == nil || !strings.Contains(err.Error(), "No tls-cert-file") {
		t.Errorf("no certificate: %v", err)
	}
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	if _, err := Build(Settings{Server: true, CertFile: cert, KeyFile: key, AuthClients: "yes"}); err == nil ||
		!strings.Contains(err.Error(), "tls-ca-cert-file or tls-ca-cert-dir") {
		t.Errorf("client auth without a CA: %v", err)
	}
	if _, err := Build(Settings{Server: true, CertFile: cert, KeyFile: key, AuthClients: "no",
		DHParamsFile: filepath.Join(dir, "missing.dh")}); err == nil || !strings.Contains(err.Error(), "Failed to load") {
		t.Errorf("a missing tls-dh-params-file: %v", err)
	}
	b, err := Build(Settings{Server: true, CertFile: cert, KeyFile: key, AuthClients: "yes", CADir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if b.server[2].ClientAuth != tls.RequireAnyClientCert || b.server[2].VerifyPeerCertificate == nil ||
		b.server[2].ClientCAs != nil || b.server[0].ClientAuth != tls.NoClientCert {
		t.Errorf("client auth modes: %+v", b.server)
	}
	// The client side alone needs no certificate (a rediss:// upstream).
	b, err = Build(Settings{AuthClients: "yes"})
	if err != nil || b.client == nil || b.server[0] != nil {
		t.Errorf("client side only: %v %+v", err, b)
	}
}

// selfSigned writes a self-signed certificate and its key with openssl,
// or fails the test when openssl is missing.
func selfSigned(t *testing.T, dir string) (cert, key string) {
	t.Helper()
	cert, key = filepath.Join(dir, "c.crt"), filepath.Join(dir, "c.key")
	openssl(t, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
		"-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=test")
	return cert, key
}

func openssl(t *testing.T, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl is not installed (apt-get install openssl)")
	}
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("openssl %v: %v\n%s", args, err, out)
	}
}

// TestEncryptedKeys decrypts keys OpenSSL encrypted: PKCS#8 PBES2 with
// each cipher and PRF it offers that Spillway reads, and the legacy PEM
// encryption; a wrong or missing password is refused.
func TestEncryptedKeys(t *testing.T) {
	dir := t.TempDir()
	cert, plain := selfSigned(t, dir)
	want, err := tls.LoadX509KeyPair(cert, plain)
	if err != nil {
		t.Fatal(err)
	}
	variants := map[string][]string{
		"pkcs8-aes256-sha256": {"pkcs8", "-topk8", "-v2", "aes-256-cbc", "-v2prf", "hmacWithSHA256"},
		"pkcs8-aes128-sha1":   {"pkcs8", "-topk8", "-v2", "aes-128-cbc", "-v2prf", "hmacWithSHA1"},
		"pkcs8-aes192":        {"pkcs8", "-topk8", "-v2", "aes-192-cbc"},
		"pkcs8-des3":          {"pkcs8", "-topk8", "-v2", "des3"},
		"legacy-aes256":       {"ec", "-aes256"},
	}
	for name, args := range variants {
		out := filepath.Join(dir, name+".key")
		openssl(t, append(args, "-in", plain, "-out", out, "-passout", "pass:pw")...)
		b, _ := os.ReadFile(out)
		if blk, _ := pem.Decode(b); blk == nil || (blk.Type != "ENCRYPTED PRIVATE KEY" && !x509.IsEncryptedPEMBlock(blk)) { //nolint:staticcheck
			t.Fatalf("%s: openssl wrote no encrypted key", name)
		}
		got, err := loadKeyPair(cert, out, "pw")
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !got.PrivateKey.(interface{ Equal(crypto.PrivateKey) bool }).Equal(want.PrivateKey) {
			t.Errorf("%s: decrypted another key", name)
		}
		if _, err := loadKeyPair(cert, out, "wrong"); err == nil {
			t.Errorf("%s: a wrong password was accepted", name)
		}
		if _, err := loadKeyPair(cert, out, ""); err == nil {
			t.Errorf("%s: no password was accepted", name)
		}
	}
}
