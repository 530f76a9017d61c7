package upstream

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func splitArgs(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Split(s, " ") {
		if f == `""` {
			f = ""
		}
		out = append(out, []byte(f))
	}
	return out
}

// TestParseMigrate checks MIGRATE's parsing: both forms, the options, and
// the forms left for the upstream to refuse (forwarded as they are).
func TestParseMigrate(t *testing.T) {
	for _, c := range []struct {
		args    string
		ok      bool
		keys    string
		addr    string
		copy    bool
		replace bool
		user    string
		pass    string
		timeout time.Duration
	}{
		{args: "MIGRATE 127.0.0.1 7001 k 0 500", ok: true, keys: "k", addr: "127.0.0.1:7001", timeout: 500 * time.Millisecond},
		{args: `MIGRATE 127.0.0.1 7001 "" 0 0 COPY REPLACE KEYS a b`, ok: true, keys: "a b", addr: "127.0.0.1:7001", copy: true, replace: true, timeout: time.Second},
		{args: `MIGRATE ::1 7001 "" 0 10 AUTH keys KEYS a`, ok: true, keys: "a", addr: "[::1]:7001", pass: "keys", timeout: 10 * time.Millisecond},
		{args: `MIGRATE h 1 "" 0 10 AUTH2 u p KEYS a`, ok: true, keys: "a", addr: "h:1", user: "u", pass: "p", timeout: 10 * time.Millisecond},
		{args: "MIGRATE h 1 k 0 10 KEYS a"}, // a key and KEYS
		{args: `MIGRATE h 1 "" 0 10 KEYS`},  // KEYS with no key
		{args: "MIGRATE h 1 k 0 10 BOGUS"},  // unknown option
		{args: "MIGRATE h 1 k 0 10 AUTH"},   // AUTH without password
		{args: "MIGRATE h 70000 k 0 10"},    // bad port
		{args: "MIGRATE h 1 k -1 10"},       // bad database
		{args: "MIGRATE h 1 k 0 x"},         // bad timeout
		{args: "MIGRATE h 1 k 0"},           // too short
	} {
		m, ok := parseMigrate(splitArgs(c.args))
		if ok != c.ok {
			t.Fatalf("parseMigrate(%s): ok = %v; want %v", c.args, ok, c.ok)
		}
		if !ok {
			continue
		}
		var keys []string
		for _, k := range m.keys {
			keys = append(keys, string(k))
		}
		if strings.Join(keys, " ") != c.keys || m.addr != c.addr || m.copy != c.copy || m.replace != c.replace ||
			m.user != c.user || m.password != c.pass || m.timeout != c.timeout {
			t.Fatalf("parseMigrate(%s) = %+v", c.args, m)
		}
	}
}

// TestMyselfAddr reads the node's own address from CLUSTER NODES in the
// forms Redis 7.0 prints (with a hostname, and before the node knows its
// IP), from RESP2 bulk and RESP3 verbatim replies.
func TestMyselfAddr(t *testing.T) {
	nodes := "e7d1 127.0.0.1:7001@17011 master - 0 1 2 connected 5461-10922\n" +
		"3a4b 10.0.0.5:7000@17010,host-a myself,master - 0 0 1 connected 0-5460\n"
	for _, reply := range []string{
		"$" + strconv.Itoa(len(nodes)) + "\r\n" + nodes + "\r\n",
		"=" + strconv.Itoa(len(nodes)+4) + "\r\ntxt:" + nodes + "\r\n",
	} {
		ip, port, ok := myselfAddr(bulkBody([]byte(reply)))
		if !ok || ip != "10.0.0.5" || port != "7000" {
			t.Fatalf("myselfAddr(%q) = %q %q %v", reply, ip, port, ok)
		}
	}
	if ip, port, ok := myselfAddr([]byte("3a4b :7000@17000 myself,master - 0 0 0 connected\n")); ok {
		t.Fatalf("a node that does not know its address: %q %q %v; want not ok", ip, port, ok)
	}
	if _, _, ok := myselfAddr([]byte("3a4b 127.0.0.1:7000@17000 master - 0 0 0 connected\n")); ok {
		t.Fatal("no myself entry: want not ok")
	}
}
