package integration

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// Helpers of the TLS tests: a certificate authority made at run time
// (crypto/x509), the certificates it signs written as PEM files, TLS
// connections to a server, and redis-cli runs.

// testPKI is a self-signed CA and the files of what it signs.
type testPKI struct {
	dir    string
	CA     string // the CA certificate's file
	caCert *x509.Certificate
	caKey  *ecdsa.PrivateKey
	serial int64
}

func newTestPKI(t *testing.T, name string) *testPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	p := &testPKI{dir: t.TempDir(), caCert: cert, caKey: key, serial: 1}
	p.CA = filepath.Join(p.dir, "ca.crt")
	writePEM(t, p.CA, "CERTIFICATE", der)
	return p
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// issued is a certificate signed by the test CA: its files and serial.
type issued struct {
	Cert, Key string
	Serial    int64
	key       *ecdsa.PrivateKey
}

// issue signs a certificate for name, usable by a server on 127.0.0.1
// and as a client, and writes it and its key as name.crt and name.key.
func (p *testPKI) issue(t *testing.T, name string) issued {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	is := issued{Cert: filepath.Join(p.dir, name+".crt"), Key: filepath.Join(p.dir, name+".key"), Serial: p.serial, key: key}
	writePEM(t, is.Cert, "CERTIFICATE", der)
	writePEM(t, is.Key, "PRIVATE KEY", kder)
	return is
}

// pool is the CA as a certificate pool.
func (p *testPKI) pool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(p.caCert)
	return pool
}

// clientTLS is a client configuration trusting the CA, presenting cert
// when it is not nil.
func (p *testPKI) clientTLS(t *testing.T, cert *issued) *tls.Config {
	t.Helper()
	c := &tls.Config{RootCAs: p.pool(), ServerName: "127.0.0.1"}
	if cert != nil {
		kp, err := tls.LoadX509KeyPair(cert.Cert, cert.Key)
		if err != nil {
			t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{kp}
	}
	return c
}

// tlsServerArgs are the settings of a server with a TLS port: its
// certificate, the CA, and the client policy.
func tlsServerArgs(port int, p *testPKI, srv issued, authClients string) []string {
	return []string{"--tls-port", strconv.Itoa(port), "--tls-cert-file", srv.Cert, "--tls-key-file", srv.Key,
		"--tls-ca-cert-file", p.CA, "--tls-auth-clients", authClients}
}

// tlsDial opens a TLS connection to addr and completes its handshake; the
// error is the handshake's (a refused client certificate shows on the
// first read in TLS 1.3, which the PING of tlsPing makes).
func tlsDial(addr string, cfg *tls.Config) (*harness.Conn, *tls.Conn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	tc, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return nil, nil, err
	}
	c := harness.NewConn(tc)
	c.Timeout = 5 * time.Second
	return c, tc, nil
}

// tlsPing connects to addr over TLS and sends PING; it returns the
// server certificate's serial and the reply ("" and the error if the
// connection or the PING failed).
func tlsPing(addr string, cfg *tls.Config) (serial int64, reply string, err error) {
	c, tc, err := tlsDial(addr, cfg)
	if err != nil {
		return 0, "", err
	}
	defer c.Close()
	r := c.Do("PING")
	if r.Err != nil {
		return 0, "", r.Err
	}
	return tc.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), r.Str, nil
}

// redisCli runs redis-cli with args and returns its standard output and
// whether it exited 0. A missing redis-cli fails the test.
func redisCli(t *testing.T, args ...string) (string, bool) {
	t.Helper()
	bin, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not found on PATH: apt-get install redis-tools")
	}
	cmd := exec.Command(bin, args...)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.Output()
	return strings.TrimRight(string(out), "\n"), err == nil
}

// cliTLS are redis-cli's arguments to reach port over TLS, with cert as
// its client certificate when not nil.
func cliTLS(port int, p *testPKI, cert *issued) []string {
	args := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(port), "--tls", "--cacert", p.CA}
	if cert != nil {
		args = append(args, "--cert", cert.Cert, "--key", cert.Key)
	}
	return args
}
