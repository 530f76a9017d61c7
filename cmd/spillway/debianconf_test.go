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

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// respCmd sends one inline command on a new connection to port and
// returns the reply's lines joined by spaces (an array of bulk strings
// whole), "" if the server closed the connection.
func respCmd(t *testing.T, port, line string) string {
	t.Helper()
	nc, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		return "dial error"
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write([]byte(line + "\r\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(nc)
	reply, err := r.ReadString('\n')
	if err != nil {
		return ""
	}
	reply = strings.TrimSuffix(reply, "\r\n")
	if n, err := strconv.Atoi(strings.TrimPrefix(reply, "*")); err == nil && reply[0] == '*' {
		for i := 0; i < 2*n; i++ {
			l, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			reply += " " + strings.TrimSuffix(l, "\r\n")
		}
	}
	return reply
}

// TestConfigSetPortRebinds: CONFIG SET port moves the listener; a port in
// use is refused with Redis's apply error and the listener stays; CONFIG
// SET bind to an address that cannot be bound keeps the old one.
func TestConfigSetPortRebinds(t *testing.T) {
	port := freePort(t)
	done := make(chan error, 1)
	go func() {
		done <- run([]string{"--port", port, "--dir", t.TempDir(), "--logfile",
			filepath.Join(t.TempDir(), "log"), "--maxmemory", "64mb"})
	}()
	for i := 0; respCmd(t, port, "PING") != "+PONG"; i++ {
		if i == 200 {
			t.Fatal("spillway did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)

	next := freePort(t)
	if got := respCmd(t, port, "CONFIG SET port "+next); got != "+OK" {
		t.Fatalf("CONFIG SET port = %q", got)
	}
	if got := respCmd(t, next, "PING"); got != "+PONG" {
		t.Errorf("PING on the new port = %q", got)
	}
	if got := respCmd(t, port, "PING"); got != "dial error" {
		t.Errorf("the old port still answers: %q", got)
	}
	want := "-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs."
	if got := respCmd(t, next, "CONFIG SET maxmemory 10000001 port "+busyPort); got != want {
		t.Errorf("CONFIG SET port <busy> = %q, want %q", got, want)
	}
	if got := respCmd(t, next, "CONFIG GET maxmemory"); got != "*2 $9 maxmemory $8 67108864" {
		t.Errorf("CONFIG GET maxmemory = %q", got)
	}
	want = "-ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to specified addresses."
	if got := respCmd(t, next, "CONFIG SET bind 999.999.999.999"); got != want {
		t.Errorf("CONFIG SET bind <bad> = %q, want %q", got, want)
	}
	if got := respCmd(t, next, "CONFIG SET bind \"* -::*\""); got != "+OK" {
		t.Errorf("CONFIG SET bind * = %q", got)
	}
	if got := respCmd(t, next, "PING"); got != "+PONG" {
		t.Errorf("PING after the failed changes = %q", got)
	}
	respCmd(t, next, "SHUTDOWN")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("spillway did not stop")
	}
}
