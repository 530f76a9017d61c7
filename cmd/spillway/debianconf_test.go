package main

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStartWithDebianRedisConf starts Spillway with the redis.conf Debian
// installs with redis-server 7.0.15, overriding only what needs root (the
// data directory and log file) and the port: it serves, listens on the
// file's bind addresses ("-::1" skipped if IPv6 is missing), logs the
// settings it stores without effect in one line, and shuts down cleanly.
func TestStartWithDebianRedisConf(t *testing.T) {
	conf, err := filepath.Abs("../../proxy/config/testdata/redis-debian.conf")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	tmp := t.TempDir()
	logPath := filepath.Join(tmp, "spillway.log")
	done := make(chan error, 1)
	go func() {
		done <- run([]string{conf, "--port", port, "--dir", filepath.Join(tmp, "data"),
			"--logfile", logPath, "--maxmemory", "64mb"})
	}()
	var nc net.Conn
	for i := 0; ; i++ {
		if nc, err = net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run returned %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		if i == 200 {
			t.Fatal("spillway did not start")
		}
	}
	defer nc.Close()
	r := bufio.NewReader(nc)
	cmd := func(line, want string) {
		t.Helper()
		if _, err := nc.Write([]byte(line + "\r\n")); err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for got.Len() < len(want) {
			b, err := r.ReadByte()
			if err != nil {
				t.Fatalf("%s: read %q: %v", line, got.String(), err)
			}
			got.WriteByte(b)
		}
		if got.String() != want {
			t.Errorf("%s = %q, want %q", line, got.String(), want)
		}
	}
	cmd("PING", "+PONG\r\n")
	cmd("CONFIG GET bind", "*2\r\n$4\r\nbind\r\n$14\r\n127.0.0.1 -::1\r\n")
	cmd("CONFIG GET daemonize", "*2\r\n$9\r\ndaemonize\r\n$3\r\nyes\r\n")
	cmd("SHUTDOWN", "")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("spillway did not stop")
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	n := strings.Count(string(data), `msg="settings stored without effect"`)
	if n != 1 || !strings.Contains(string(data), "daemonize") {
		t.Errorf("log has %d 'settings stored without effect' lines:\n%s", n, data)
	}
}
