package config

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// debianConf is the redis.conf Debian 12 installs with redis-server
// 7.0.15 (/etc/redis/redis.conf), unchanged.
var debianConf = filepath.Join("testdata", "redis-debian.conf")

// debianOverrides replace its paths, which need root, as a test can.
var debianOverrides = []string{"--logfile", "", "--pidfile", "", "--daemonize", "no"}

// TestDebianRedisConf: a stock redis.conf is accepted whole, and every
// setting it holds reads back as redis-server reads it from the same file.
func TestDebianRedisConf(t *testing.T) {
	c, err := Parse(append([]string{debianConf, "--dir", t.TempDir()}, debianOverrides...))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"127.0.0.1", "-::1"}; !reflect.DeepEqual(c.Bind(), want) || c.Port() != 6379 {
		t.Errorf("bind %q port %d, want %q 6379", c.Bind(), c.Port(), want)
	}
	// The file sets no Spillway setting, and of Redis's, these have an
	// effect in Spillway.
	for _, name := range c.Inert() {
		if registry[names[name].idx].effect {
			t.Errorf("Inert() lists %s, which has an effect", name)
		}
	}
	for _, name := range []string{"daemonize", "pidfile", "tcp-backlog", "list-compress-depth"} {
		if !strings.Contains(" "+strings.Join(c.Inert(), " ")+" ", " "+name+" ") {
			t.Errorf("Inert() = %q, lacks %s", c.Inert(), name)
		}
	}

	abs, err := filepath.Abs(debianConf)
	if err != nil {
		t.Fatal(err)
	}
	rc := startRedis(t, append([]string{abs}, debianOverrides...)...)
	theirs := rc.configGet("*")
	ours := get(c, "*")
	for name, v := range theirs {
		if intentionalDefaults[name] {
			continue
		}
		if ours[name] != v {
			t.Errorf("%s: Spillway %q, redis-server %q (same file)", name, ours[name], v)
		}
	}
}

// TestConfigErrorNamesLine: a bad value in a stock config file stops
// start-up with the file name and line number.
func TestConfigErrorNamesLine(t *testing.T) {
	p := writeConf(t, "# a comment\nport 6379\n\nmaxmemory-policy sometimes\n")
	_, err := Parse([]string{p})
	want := fmt.Sprintf(`config: %s: line 4: maxmemory-policy "sometimes": argument(s) must be one of the following: `, p)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Parse = %v, want prefix %s", err, want)
	}
}
