package upstream

import (
	"fmt"
	"slices"
	"testing"
)

// The replies below have the shape of redis-server 7.0.15's (LATENCY
// HISTOGRAM client in RESP2 and RESP3, SLOWLOG GET), as read from one over
// a raw connection.

func TestParseHistRows(t *testing.T) {
	resp2 := "*4\r\n$9\r\nclient|id\r\n*4\r\n$5\r\ncalls\r\n:1\r\n$14\r\nhistogram_usec\r\n*2\r\n:1\r\n:1\r\n" +
		"$11\r\nclient|list\r\n*4\r\n$5\r\ncalls\r\n:2\r\n$14\r\nhistogram_usec\r\n*4\r\n:8\r\n:1\r\n:16\r\n:2\r\n"
	resp3 := "%2\r\n$9\r\nclient|id\r\n%2\r\n$5\r\ncalls\r\n:1\r\n$14\r\nhistogram_usec\r\n%1\r\n:1\r\n:1\r\n" +
		"$11\r\nclient|list\r\n%2\r\n$5\r\ncalls\r\n:2\r\n$14\r\nhistogram_usec\r\n%2\r\n:8\r\n:1\r\n:16\r\n:2\r\n"
	want := []histRow{{"client|id", 1, []int64{1, 1}}, {"client|list", 2, []int64{8, 1, 16, 2}}}
	for name, in := range map[string]string{"RESP2": resp2, "RESP3": resp3} {
		got, err := parseHistRows([]byte(in))
		if err != nil || len(got) != len(want) {
			t.Fatalf("%s: %v %v", name, got, err)
		}
		for i := range want {
			if got[i].name != want[i].name || got[i].calls != want[i].calls || !slices.Equal(got[i].pairs, want[i].pairs) {
				t.Errorf("%s: row %d = %+v, want %+v", name, i, got[i], want[i])
			}
		}
	}
	if _, err := parseHistRows([]byte("*2\r\n$9\r\nclient|id\r\n")); err == nil {
		t.Error("a truncated reply parsed")
	}
	if rows, err := parseHistRows([]byte("*0\r\n")); err != nil || len(rows) != 0 {
		t.Errorf("empty: %v %v", rows, err)
	}
}

// slowReply is a SLOWLOG GET entry's bytes.
func slowReply(id int64, addr string, args ...string) string {
	s := fmt.Sprintf("*6\r\n:%d\r\n:1795695940\r\n:3\r\n*%d\r\n", id, len(args))
	for _, a := range args {
		s += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
	}
	return s + fmt.Sprintf("$%d\r\n%s\r\n$0\r\n\r\n", len(addr), addr)
}

func TestParseSlowEntries(t *testing.T) {
	e1, e2 := slowReply(7, "127.0.0.1:5000", "config", "set", "x", "1"), slowReply(6, "127.0.0.1:5001", "ping")
	got, err := parseSlowEntries([]byte("*2\r\n" + e1 + e2))
	if err != nil || len(got) != 2 || got[0].id != 7 || got[1].id != 6 || string(got[0].raw) != e1 || string(got[1].raw) != e2 {
		t.Fatalf("%+v %v", got, err)
	}
	if a := entryAddr(got[1].raw); a != "127.0.0.1:5001" {
		t.Errorf("entryAddr = %q", a)
	}
	if _, err := parseSlowEntries([]byte("*1\r\n*5\r\n:1\r\n")); err == nil {
		t.Error("a malformed entry parsed")
	}
}

// The upstream logged slowlog reset (1), an internal request (2), config
// set masterauth (3), another internal one (4) and config set (5);
// Spillway logged two ACL SETUSERs (local 0 after upstream 1, local 1
// after upstream 3): the merge interleaves them as one server would have.
func TestMergeSlow(t *testing.T) {
	const client, internal = "127.0.0.1:1000", "127.0.0.1:2000"
	entry := func(id int64, addr string, args ...string) slowEntry {
		return slowEntry{id: id, raw: []byte(slowReply(id, addr, args...))}
	}
	up := []slowEntry{entry(5, client, "config", "set"), entry(4, internal, "slowlog", "get", "1"),
		entry(3, client, "config", "set", "masterauth"), entry(2, internal, "slowlog", "get", "1"),
		entry(1, client, "slowlog", "reset")}
	local := []slowEntry{entry(1, client, "acl", "setuser", "b"), entry(0, client, "acl", "setuser", "a")}
	anchors := map[int64]int64{0: 1, 1: 3}
	anchor := func(id int64) (int64, bool) { a, ok := anchors[id]; return a, ok }
	own := func(addr string) bool { return addr == internal }
	name := func(e slowEntry) string { return string(e.raw[len(e.raw)-40:]) }
	got := mergeSlow(up, local, anchor, own, 100)
	want := []slowEntry{up[0], local[0], up[2], local[1], up[4]}
	if len(got) != len(want) {
		t.Fatalf("merged %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if string(got[i].raw) != string(want[i].raw) {
			t.Errorf("entry %d: %q, want %q", i, name(got[i]), name(want[i]))
		}
	}
	if got := mergeSlow(up, local, anchor, own, 2); len(got) != 2 || string(got[1].raw) != string(local[0].raw) {
		t.Errorf("max 2: %d entries", len(got))
	}
	// An unanchored local entry goes after the upstream's.
	got = mergeSlow(up[:1], local[:1], func(int64) (int64, bool) { return 0, false }, own, 100)
	if len(got) != 2 || string(got[1].raw) != string(local[0].raw) {
		t.Errorf("unanchored: %d entries", len(got))
	}
}

func TestSkipReply(t *testing.T) {
	for _, r := range []string{"+OK\r\n", "-ERR x\r\n", ":12\r\n", "$-1\r\n", "$3\r\nabc\r\n", "*-1\r\n",
		"*2\r\n$1\r\na\r\n:1\r\n", "%1\r\n+k\r\n*1\r\n_\r\n", "~2\r\n#t\r\n,1.5\r\n", "=7\r\ntxt:abc\r\n",
		"|1\r\n+a\r\n+b\r\n:3\r\n", ">2\r\n+x\r\n(12\r\n"} {
		n, ok := skipReply([]byte(r + "+NEXT\r\n"))
		if !ok || n != len(r) {
			t.Errorf("skipReply(%q) = %d, %v; want %d", r, n, ok, len(r))
		}
	}
	for _, bad := range []string{"", "$5\r\nab\r\n", "*2\r\n+a\r\n", "x\r\n"} {
		if _, ok := skipReply([]byte(bad)); ok {
			t.Errorf("skipReply(%q) accepted", bad)
		}
	}
}
