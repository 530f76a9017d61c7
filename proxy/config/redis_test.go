package config

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// redisConn is a minimal RESP2 client for comparing with a real
// redis-server.
type redisConn struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

// startRedis starts a real redis-server on a free loopback port with
// extra arguments and returns a connection to it; the server is killed
// when the test ends. A missing redis-server fails the test (make test
// installs it).
func startRedis(t *testing.T, args ...string) *redisConn {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server not found on PATH: run `make test`, which installs it, or apt-get install redis-server")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, append(args, "--port", port, "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--logfile", "", "--daemonize", "no")...)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		nc, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			rc := &redisConn{t: t, nc: nc, r: bufio.NewReader(nc)}
			t.Cleanup(func() { nc.Close() })
			if _, err := rc.do("PING"); err == nil {
				return rc
			}
		}
		if i == 100 {
			t.Fatalf("redis-server did not start: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// do sends a command and returns its reply: a string, an int64, nil, a
// []any, or an error for an error reply.
func (rc *redisConn) do(args ...string) (any, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := rc.nc.Write([]byte(b.String())); err != nil {
		rc.t.Fatal(err)
	}
	return rc.read()
}

func (rc *redisConn) read() (any, error) {
	line, err := rc.r.ReadString('\n')
	if err != nil {
		rc.t.Fatal(err)
	}
	line = strings.TrimSuffix(line, "\r\n")
	switch line[0] {
	case '+':
		return line[1:], nil
	case '-':
		return nil, errors.New(line[1:])
	case ':':
		n, _ := strconv.ParseInt(line[1:], 10, 64)
		return n, nil
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io_ReadFull(rc.r, buf); err != nil {
			rc.t.Fatal(err)
		}
		return string(buf[:n]), nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		out := make([]any, n)
		for i := range out {
			v, err := rc.read()
			if err != nil {
				out[i] = err
			} else {
				out[i] = v
			}
		}
		return out, nil
	}
	rc.t.Fatalf("bad reply %q", line)
	return nil, nil
}

func io_ReadFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// configGet returns CONFIG GET's reply as a map.
func (rc *redisConn) configGet(pattern string) map[string]string {
	rep, err := rc.do("CONFIG", "GET", pattern)
	if err != nil {
		rc.t.Fatal(err)
	}
	arr := rep.([]any)
	m := make(map[string]string, len(arr)/2)
	for i := 0; i+1 < len(arr); i += 2 {
		m[arr[i].(string)] = arr[i+1].(string)
	}
	return m
}

// intentionalDefaults are the settings whose default differs from Redis's
// on purpose (SETTINGS.md says why), and that startRedis overrides: port
// (6380, not to clash with a Redis on 6379), bind (127.0.0.1 rather than
// every address), dir (the cold store, ./data), maxmemory (¼ of the
// machine's memory: Spillway's budget) and save ("": Spillway persists
// continuously, it takes no snapshots).
var intentionalDefaults = map[string]bool{
	"port": true, "bind": true, "dir": true, "maxmemory": true, "save": true,
}

// TestRegistryMatchesRedis compares the registry with a real redis-server
// 7.0: the same names and aliases (plus Spillway's own), the same defaults
// except intentionalDefaults, the same hidden settings, and the same reply
// to CONFIG SET of each setting with a range of values (the error text, or
// the value CONFIG GET then reports).
func TestRegistryMatchesRedis(t *testing.T) {
	rc := startRedis(t)
	theirs := rc.configGet("*")
	ours := get(Default(), "*")
	for name, v := range theirs {
		o, ok := ours[name]
		switch {
		case !ok:
			t.Errorf("redis-server has %s (default %q); Spillway does not", name, v)
		case o != v && !intentionalDefaults[name] && !intentionalDefaults[aliasOf(name)]:
			t.Errorf("default of %s: Spillway %q, redis-server %q", name, o, v)
		}
	}
	for name := range ours {
		if _, ok := theirs[name]; !ok && !registry[names[name].idx].spillway {
			t.Errorf("Spillway has %s; redis-server does not", name)
		}
	}
	for _, s := range registry {
		if !s.hidden {
			continue
		}
		if got := rc.configGet(s.name); len(got) != 1 {
			t.Errorf("hidden %s: redis-server CONFIG GET by name = %v", s.name, got)
		} else if want := get(Default(), s.name)[s.name]; got[s.name] != want {
			t.Errorf("hidden %s: default %q, redis-server %q", s.name, want, got[s.name])
		}
	}

	probes := []string{"abc", "-1", "0", "1", "2", "100", "101%", "50%", "0777", "888", "1kb", "2gb",
		"yes", "no", "YES", "", "99999999999999999999", "18446744073709551615", "4294967296",
		"2147483648", "-2147483649", "local", "hostname", "1 2 3", "1  2", "save now", "relative",
		"everysec", "allkeys-lru", "AKE", "normal 1mb 1mb 1", "{title} {port}", "a.b", "3600 1 60 100"}
	// Settings whose CONFIG SET Redis answers according to the machine
	// (TLS set-up without certificates, file descriptor limits), or that
	// would disturb the test server; and Spillway's listeners.
	skip := map[string]bool{
		"port": true, "bind": true, "dir": true, "requirepass": true, "watchdog-period": true,
		"maxclients": true, "tls-port": true, "tls-cluster": true, "tls-replication": true,
		"tls-session-cache-size": true, "tls-session-cache-timeout": true, "tls-prefer-server-ciphers": true,
		"tls-session-caching": true, "tls-cert-file": true, "tls-key-file": true, "tls-key-file-pass": true,
		"tls-client-cert-file": true, "tls-client-key-file": true, "tls-client-key-file-pass": true,
		"tls-dh-params-file": true, "tls-ca-cert-file": true, "tls-ca-cert-dir": true,
		"tls-protocols": true, "tls-ciphers": true, "tls-ciphersuites": true,
	}
	c := Default()
	checked := 0
	for _, s := range registry {
		if _, ok := theirs[s.name]; (!ok && !s.hidden) || skip[s.name] {
			continue // Spillway's own
		}
		orig := rc.configGet(s.name)[s.name]
		mine, _ := c.Value(s.name)
		for _, p := range probes {
			_, rerr := rc.do("CONFIG", "SET", s.name, p)
			serr := c.Set([][2]string{{s.name, p}})
			switch {
			case rerr != nil && serr != nil:
				if rerr.Error() != serr.Error() {
					t.Errorf("CONFIG SET %s %q: Spillway %q, redis-server %q", s.name, p, serr, rerr)
				}
			case rerr != nil:
				t.Errorf("CONFIG SET %s %q: Spillway OK, redis-server %q", s.name, p, rerr)
			case serr != nil:
				t.Errorf("CONFIG SET %s %q: Spillway %q, redis-server OK", s.name, p, serr)
			default:
				if r, o := rc.configGet(s.name)[s.name], mustValue(t, c, s.name); r != o {
					t.Errorf("CONFIG SET %s %q: then CONFIG GET: Spillway %q, redis-server %q", s.name, p, o, r)
				}
				if _, err := rc.do("CONFIG", "SET", s.name, orig); err != nil {
					t.Fatalf("restoring %s to %q: %v", s.name, orig, err)
				}
				if err := c.Set([][2]string{{s.name, mine}}); err != nil {
					t.Fatalf("restoring %s to %q: %v", s.name, mine, err)
				}
			}
			checked++
		}
	}
	t.Logf("%d settings in common, %d CONFIG SET probes compared", len(theirs), checked)
}

// TestSetGetMatchesRedis compares CONFIG SET with several parameters and
// CONFIG GET with several patterns with a real redis-server.
func TestSetGetMatchesRedis(t *testing.T) {
	rc := startRedis(t)
	c := Default()
	if err := c.Set([][2]string{{"maxmemory", "0"}}); err != nil { // Redis's default
		t.Fatal(err)
	}
	sets := [][]string{
		{"maxmemory", "10000001", "maxmemory-clients", "200%", "client-query-buffer-limit", "invalid"},
		{"maxmemory", "1", "maxmemory", "2"},
		{"maxmemory", "1", "MAXMEMORY", "2"},
		{"slave-read-only", "yes", "replica-read-only", "no"},
		{"daemonize", "yes", "nosuch", "1"},
		{"nosuch", "1", "daemonize", "yes"},
		{"SLAVE-read-only", "x"},
		{"Daemonize", "yes"},
		{"maxmemory", "abc", "databases", "3"},
		{"maxmemory", "abc", "hz", "x"},
		{"dbfilename", "x", "maxmemory", "1"},
		{"list-compress-depth", "2", "repl-ping-slave-period", "5", "maxmemory-clients", "5%"},
		{"shutdown-on-sigint", "save nosave", "hz", "5"},
	}
	for _, args := range sets {
		_, rerr := rc.do(append([]string{"CONFIG", "SET"}, args...)...)
		var pairs [][2]string
		for i := 0; i+1 < len(args); i += 2 {
			pairs = append(pairs, [2]string{args[i], args[i+1]})
		}
		serr := c.Set(pairs)
		if fmt.Sprint(rerr) != fmt.Sprint(serr) {
			t.Errorf("CONFIG SET %q: Spillway %v, redis-server %v", args, serr, rerr)
		}
		for _, p := range pairs {
			if r, o := rc.configGet(p[0]), get(c, p[0]); fmt.Sprint(r) != fmt.Sprint(o) {
				t.Errorf("after CONFIG SET %q: CONFIG GET %s: Spillway %v, redis-server %v", args, p[0], o, r)
			}
		}
	}
	gets := [][]string{
		{"maxmemory", "maxmemory*", "bind", "*of"},
		{"MAXMEMORY", "maxmem*"},
		{"key-load-delay", "KEY-LOAD-DELAY", "key-load-*"},
		{"slaveof", "*of", "replicaof"},
		{"*-ziplist-*", "LIST-*"},
		{"nosuch", "[a"},
	}
	for _, args := range gets {
		rep, err := rc.do(append([]string{"CONFIG", "GET"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var theirs, ours []string
		for i, v := range rep.([]any) {
			if i%2 == 0 {
				theirs = append(theirs, v.(string))
			}
		}
		bs := make([][]byte, len(args))
		for i, a := range args {
			bs[i] = []byte(a)
		}
		for _, kv := range c.Get(bs...) {
			ours = append(ours, kv[0])
		}
		sort.Strings(theirs)
		sort.Strings(ours)
		if fmt.Sprint(theirs) != fmt.Sprint(ours) {
			t.Errorf("CONFIG GET %q: Spillway %q, redis-server %q", args, ours, theirs)
		}
	}
}

func aliasOf(name string) string {
	if e, ok := names[name]; ok {
		return registry[e.idx].name
	}
	return name
}

// TestRegistrySorted keeps SETTINGS.md and the test output stable: every
// name is unique.
func TestRegistryNamesUnique(t *testing.T) {
	seen := map[string]bool{}
	var all []string
	for _, s := range registry {
		for _, n := range []string{s.name, s.alias} {
			if n == "" {
				continue
			}
			if seen[n] {
				t.Errorf("duplicate name %s", n)
			}
			seen[n] = true
			all = append(all, n)
		}
	}
	sort.Strings(all)
	if len(all) != len(names) {
		t.Errorf("%d names, names map has %d", len(all), len(names))
	}
}
