// Package tlsconf turns Redis's tls-* settings into Go TLS configurations
// (crypto/tls) and keeps them current: the server side of the tls-port
// listener and the client side of upstream mode's rediss:// connections.
//
// As Redis's tlsConfigure, a (re)load is atomic: the certificate, key, CA
// and protocol settings are all read and checked, and only a complete new
// configuration replaces the old one; on any failure the old one stays and
// the reason is logged. Connections read the current configuration when
// they start their handshake, so a reload (CONFIG SET of a tls-* setting)
// changes what new connections get and leaves established ones alone.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spillway/spillway/proxy/config"
)

// Settings are the tls-* settings a configuration is built from, in
// CONFIG GET form.
type Settings struct {
	CertFile, KeyFile, KeyFilePass                   string
	ClientCertFile, ClientKeyFile, ClientKeyFilePass string
	CAFile, CADir                                    string
	AuthClients                                      string // no, optional, yes
	Protocols, Ciphers, Ciphersuites                 string
	// DHParamsFile must be readable, as Redis reads it; Go's TLS has no
	// finite-field DHE, so its parameters are not used.
	DHParamsFile string
	// SessionCaching keeps a server-side session cache of SessionCacheSize
	// sessions (0: no limit), each resumable for SessionCacheTimeout
	// seconds (sessions.go); off, no session is resumed.
	SessionCaching                        bool
	SessionCacheSize, SessionCacheTimeout int
	// Server: the server side is needed (tls-port is set). Without it a
	// certificate is optional: a rediss:// upstream that asks for none.
	Server bool
}

// FromConfig reads the settings from cfg.
func FromConfig(cfg *config.Config) Settings {
	v := func(name string) string { s, _ := cfg.Value(name); return s }
	s := Settings{
		CertFile: v("tls-cert-file"), KeyFile: v("tls-key-file"), KeyFilePass: v("tls-key-file-pass"),
		ClientCertFile: v("tls-client-cert-file"), ClientKeyFile: v("tls-client-key-file"),
		ClientKeyFilePass: v("tls-client-key-file-pass"),
		CAFile:            v("tls-ca-cert-file"), CADir: v("tls-ca-cert-dir"),
		AuthClients: v("tls-auth-clients"),
		Protocols:   v("tls-protocols"), Ciphers: v("tls-ciphers"), Ciphersuites: v("tls-ciphersuites"),
		SessionCaching: v("tls-session-caching") == "yes",
		DHParamsFile:   v("tls-dh-params-file"),
	}
	s.SessionCacheSize, _ = strconv.Atoi(v("tls-session-cache-size"))
	s.SessionCacheTimeout, _ = strconv.Atoi(v("tls-session-cache-timeout"))
	return s
}

// Bundle is one loaded configuration: the server side for each
// tls-auth-clients mode, and the client side (nil roots: the system's).
type Bundle struct {
	// server is indexed by authIndex: no, optional, yes (nil: no server
	// side, Settings.Server was false and no certificate is set).
	server [3]*tls.Config
	client *tls.Config
	// sessions is the server side's session cache (nil: caching off).
	sessions *sessionCache
}

// authIndex maps tls-auth-clients to Bundle.server's index.
func authIndex(mode string) int {
	switch mode {
	case "no":
		return 0
	case "optional":
		return 1
	}
	return 2
}

// Build loads a configuration from s, with the checks and log lines of
// Redis's tlsConfigure: for the server side a certificate and a key are
// required, and a CA when clients must (or may) present certificates;
// tls-protocols names TLSv1, TLSv1.1, TLSv1.2 and TLSv1.3 only.
func Build(s Settings) (*Bundle, error) {
	if s.Server && s.CertFile == "" {
		return nil, errors.New("No tls-cert-file configured!")
	}
	if s.Server && s.KeyFile == "" {
		return nil, errors.New("No tls-key-file configured!")
	}
	if s.Server && s.AuthClients != "no" && s.CAFile == "" && s.CADir == "" {
		return nil, errors.New("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!")
	}
	if s.DHParamsFile != "" {
		if _, err := os.ReadFile(s.DHParamsFile); err != nil {
			return nil, fmt.Errorf("Failed to load %s: %w", s.DHParamsFile, err)
		}
	}
	minV, maxV, err := parseProtocols(s.Protocols)
	if err != nil {
		return nil, err
	}
	var certs []tls.Certificate
	if s.CertFile != "" && s.KeyFile != "" {
		cert, err := loadKeyPair(s.CertFile, s.KeyFile, s.KeyFilePass)
		if err != nil {
			return nil, err
		}
		certs = []tls.Certificate{cert}
	}
	var pool *x509.CertPool
	if s.CAFile != "" || s.CADir != "" {
		if pool, err = loadCAs(s.CAFile, s.CADir); err != nil {
			return nil, fmt.Errorf("Failed to configure CA certificate(s) file/directory: %w", err)
		}
	}
	suites, err := parseCiphers(s.Ciphers)
	if err != nil {
		return nil, err
	}
	if err := checkCiphersuites(s.Ciphersuites); err != nil {
		return nil, err
	}
	base := &tls.Config{
		Certificates:           certs,
		MinVersion:             minV,
		MaxVersion:             maxV,
		CipherSuites:           suites,
		SessionTicketsDisabled: !s.SessionCaching,
	}
	b := &Bundle{}
	if s.SessionCaching {
		// Shared by the three server configurations (Clone copies the
		// functions): one cache, whatever tls-auth-clients is.
		b.sessions = newSessionCache(s.SessionCacheSize, s.SessionCacheTimeout)
		b.sessions.install(base)
	}
	// Client certificates are verified against the CA by hand, not with
	// ClientCAs: Go would send the CA's name in the certificate request,
	// and Go clients then hold back a certificate of another CA instead
	// of presenting it and being refused, as OpenSSL (Redis, which sends
	// no names) makes them. No CA trusts no client, as OpenSSL with no
	// verify locations: never the system's roots.
	caPool := pool
	if caPool == nil {
		caPool = x509.NewCertPool()
	}
	verify := func(raw [][]byte, _ [][]*x509.Certificate) error { return verifyClient(raw, caPool) }
	for i, auth := range []tls.ClientAuthType{tls.NoClientCert, tls.RequestClientCert, tls.RequireAnyClientCert} {
		if certs == nil {
			break
		}
		c := base.Clone()
		c.ClientAuth = auth
		if auth != tls.NoClientCert {
			c.VerifyPeerCertificate = verify
		}
		b.server[i] = c
	}
	// The client side presents tls-client-cert-file, or, as Redis does
	// without one, the server's certificate.
	clientCerts := certs
	if s.ClientCertFile != "" && s.ClientKeyFile != "" {
		cert, err := loadKeyPair(s.ClientCertFile, s.ClientKeyFile, s.ClientKeyFilePass)
		if err != nil {
			return nil, err
		}
		clientCerts = []tls.Certificate{cert}
	}
	b.client = &tls.Config{
		Certificates: clientCerts,
		MinVersion:   minV,
		MaxVersion:   maxV,
		CipherSuites: suites,
		RootCAs:      pool,
	}
	if pool != nil {
		// The configured CA pins the upstream: its chain is verified
		// against it, without a host name check, as Redis's replication
		// link does.
		b.client.InsecureSkipVerify = true // replaced by VerifyConnection below
		b.client.VerifyConnection = func(cs tls.ConnectionState) error { return verifyChain(cs, pool) }
	}
	return b, nil
}

// verifyClient checks a client's certificate chain (raw, leaf first; none:
// a client that sent none, which RequireAnyClientCert has refused already)
// against pool, for client authentication.
func verifyClient(raw [][]byte, pool *x509.CertPool) error {
	if len(raw) == 0 {
		return nil
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, r := range raw {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return fmt.Errorf("tls: client certificate: %w", err)
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{
		Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return fmt.Errorf("tls: client certificate: %w", err)
	}
	return nil
}

// verifyChain checks the peer's certificate chain against pool, for a
// server, without a host name (Redis's replication link checks none).
func verifyChain(cs tls.ConnectionState, pool *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the upstream sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
		Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return fmt.Errorf("tls: the upstream's certificate: %w", err)
	}
	return nil
}

// parseProtocols reads tls-protocols ("" is Redis's default, TLSv1.2 and
// TLSv1.3) into the lowest and highest version. Go enables a range, so a
// list with a gap (TLSv1 TLSv1.3) enables the versions between too.
func parseProtocols(s string) (minV, maxV uint16, err error) {
	if s == "" {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	for _, tok := range strings.Split(s, " ") {
		var v uint16
		switch strings.ToLower(tok) {
		case "tlsv1":
			v = tls.VersionTLS10
		case "tlsv1.1":
			v = tls.VersionTLS11
		case "tlsv1.2":
			v = tls.VersionTLS12
		case "tlsv1.3":
			v = tls.VersionTLS13
		default:
			return 0, 0, errors.New("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.")
		}
		if minV == 0 || v < minV {
			minV = v
		}
		maxV = max(maxV, v)
	}
	return minV, maxV, nil
}

// openSSLSuites maps OpenSSL's names of the TLS 1.2 cipher suites Go
// implements to Go's ids.
var openSSLSuites = map[string]uint16{
	"ECDHE-ECDSA-AES128-GCM-SHA256": tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-RSA-AES128-GCM-SHA256":   tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-ECDSA-AES256-GCM-SHA384": tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-RSA-AES256-GCM-SHA384":   tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-ECDSA-CHACHA20-POLY1305": tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-RSA-CHACHA20-POLY1305":   tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-ECDSA-AES128-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
	"ECDHE-RSA-AES128-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
	"ECDHE-ECDSA-AES256-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
	"ECDHE-RSA-AES256-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
	"AES128-GCM-SHA256":             tls.TLS_RSA_WITH_AES_128_GCM_SHA256,
	"AES256-GCM-SHA384":             tls.TLS_RSA_WITH_AES_256_GCM_SHA384,
	"AES128-SHA":                    tls.TLS_RSA_WITH_AES_128_CBC_SHA,
	"AES256-SHA":                    tls.TLS_RSA_WITH_AES_256_CBC_SHA,
	"AES128-SHA256":                 tls.TLS_RSA_WITH_AES_128_CBC_SHA256,
	"ECDHE-ECDSA-AES128-SHA256":     tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
	"ECDHE-RSA-AES128-SHA256":       tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
	"DES-CBC3-SHA":                  tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA,
	"ECDHE-RSA-DES-CBC3-SHA":        tls.TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA,
}

// parseCiphers reads tls-ciphers, OpenSSL's colon-separated cipher list
// for TLS 1.2 and older, over the suites Go implements: a suite's name
// (OpenSSL's or IANA's) adds it, `!name` or `-name` removes it, a keyword
// (DEFAULT, HIGH, ALL...) adds Go's default suites, `+name` and unknown
// names are skipped. As OpenSSL, a list that leaves no suite is refused.
func parseCiphers(s string) ([]uint16, error) {
	if s == "" {
		return nil, nil
	}
	iana := map[string]uint16{}
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		iana[cs.Name] = cs.ID
	}
	lookup := func(name string) (uint16, bool) {
		name = strings.ToUpper(name)
		if id, ok := openSSLSuites[name]; ok {
			return id, true
		}
		id, ok := iana[name]
		return id, ok
	}
	var out []uint16
	add := func(id uint16) {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	for _, tok := range strings.FieldsFunc(s, func(r rune) bool { return r == ':' || r == ',' || r == ' ' }) {
		switch tok[0] {
		case '!', '-':
			if id, ok := lookup(tok[1:]); ok {
				out = slices.DeleteFunc(out, func(x uint16) bool { return x == id })
			}
			continue
		case '+', '@':
			continue
		}
		if id, ok := lookup(tok); ok {
			add(id)
		} else if strings.ToUpper(tok) == tok && !strings.Contains(tok, "-") {
			for _, cs := range tls.CipherSuites() {
				if cs.SupportedVersions[0] < tls.VersionTLS13 {
					add(cs.ID)
				}
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("Failed to configure ciphers: %s", s)
	}
	return out, nil
}

// tls13Suites are the TLS 1.3 suites Go implements (and always enables).
var tls13Suites = map[string]bool{
	"TLS_AES_128_GCM_SHA256": true, "TLS_AES_256_GCM_SHA384": true, "TLS_CHACHA20_POLY1305_SHA256": true,
}

// checkCiphersuites validates tls-ciphersuites (TLS 1.3, colon-separated):
// Go enables its three TLS 1.3 suites whatever the list says, so the list
// is only checked.
func checkCiphersuites(s string) error {
	if s == "" {
		return nil
	}
	for _, tok := range strings.Split(s, ":") {
		if !tls13Suites[strings.ToUpper(tok)] {
			return fmt.Errorf("Failed to configure ciphersuites: %s", s)
		}
	}
	return nil
}

// loadCAs reads the CA certificates of file and of every file in dir (PEM;
// files that hold none are skipped, as OpenSSL skips what its hashed-name
// lookup does not find).
func loadCAs(file, dir string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("%s: no certificate found", file)
		}
	}
	if dir != "" {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if e.IsDir() {
				continue
			}
			if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				pool.AppendCertsFromPEM(b)
			}
		}
	}
	return pool, nil
}

// loadKeyPair reads a certificate chain and its private key (encrypted
// with pass when pass is set: PKCS#8 PBES2 or OpenSSL's legacy PEM
// encryption).
func loadKeyPair(certFile, keyFile, pass string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("Failed to load certificate: %s: %w", certFile, err)
	}
	if blk, _ := pem.Decode(certPEM); blk == nil {
		return tls.Certificate{}, fmt.Errorf("Failed to load certificate: %s: no PEM certificate", certFile)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("Failed to load private key: %s: %w", keyFile, err)
	}
	if keyPEM, err = decryptKey(keyPEM, pass); err != nil {
		return tls.Certificate{}, fmt.Errorf("Failed to load private key: %s: %w", keyFile, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("Failed to load certificate or key: %s, %s: %w", certFile, keyFile, err)
	}
	return cert, nil
}

// Manager holds the current configuration and reloads it when a tls-*
// setting changes. Its methods are safe for concurrent use.
type Manager struct {
	cfg *config.Config
	log *slog.Logger
	cur atomic.Pointer[Bundle]
	// client: a rediss:// upstream uses the client side. TLS is in use
	// while it does or tls-port is set: only then does a change reload,
	// as Redis's applyTlsCfg configures only while TLS is in use.
	client bool
	mu     sync.Mutex // serialises reloads
	srv    tls.Config // the listener's config: hands each handshake the current one
}

// fileSettings are the settings whose CONFIG SET reloads (the file
// settings reload even when set to the same path, as Redis's
// VOLATILE_CONFIG: to pick up a renewed certificate).
var fileSettings = []string{
	"tls-cert-file", "tls-key-file", "tls-key-file-pass", "tls-client-cert-file", "tls-client-key-file",
	"tls-client-key-file-pass", "tls-ca-cert-file", "tls-ca-cert-dir", "tls-protocols", "tls-ciphers",
	"tls-ciphersuites", "tls-prefer-server-ciphers", "tls-session-caching", "tls-session-cache-size",
	"tls-session-cache-timeout", "tls-dh-params-file", "tls-replication", "tls-cluster",
}

// ErrApply is CONFIG SET's reason when a reload fails (Redis's text).
var ErrApply = errors.New("Unable to update TLS configuration. Check server logs.")

// New returns a manager of cfg's TLS settings; client says whether a
// rediss:// upstream uses the client side. It registers the CONFIG SET
// apply step of the tls-* settings and loads nothing yet.
func New(cfg *config.Config, log *slog.Logger, client bool) (*Manager, error) {
	m := &Manager{cfg: cfg, log: log, client: client}
	m.srv.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		b := m.cur.Load()
		if b == nil || b.server[0] == nil {
			return nil, errors.New("tls: not configured")
		}
		mode, _ := m.cfg.Value("tls-auth-clients")
		return b.server[authIndex(mode)], nil
	}
	err := cfg.RegisterApply(func() error {
		if !m.serverSide() && !m.client {
			return nil // not in use: loaded when tls-port is set
		}
		if err := m.Load(); err != nil {
			return ErrApply
		}
		return nil
	}, fileSettings...)
	return m, err
}

// Load (re)loads the configuration from the current settings; on failure
// the previous one stays, and the reason is logged and returned.
func (m *Manager) Load() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := FromConfig(m.cfg)
	s.Server = m.serverSide()
	b, err := Build(s)
	if err != nil {
		m.log.Warn("TLS configuration failed", "err", err)
		return fmt.Errorf("tls: %w", err)
	}
	m.cur.Store(b)
	return nil
}

// serverSide reports whether tls-port is set.
func (m *Manager) serverSide() bool {
	v, _ := m.cfg.Value("tls-port")
	return v != "0"
}

// ServerLoaded reports whether a configuration with a server side has
// been loaded.
func (m *Manager) ServerLoaded() bool {
	b := m.cur.Load()
	return b != nil && b.server[0] != nil
}

// ServerConfig is the configuration of a TLS listener: each handshake
// gets the current configuration, with the client certificate policy of
// tls-auth-clients at that moment.
func (m *Manager) ServerConfig() *tls.Config { return &m.srv }

// ClientConfig returns the configuration of a connection to serverName
// (host of the upstream): the current client side, verifying the peer
// against the configured CA (no host name check, as Redis), or against
// the system's roots and serverName when no CA is configured. nil before
// Load.
func (m *Manager) ClientConfig(serverName string) *tls.Config {
	b := m.cur.Load()
	if b == nil {
		return nil
	}
	c := b.client.Clone()
	c.ServerName = serverName
	return c
}
