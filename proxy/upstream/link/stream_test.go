package link

import (
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/tiering/uptier"
)

// TestColdCopyStreamRoundTrip reads a stream with deleted entries, groups,
// consumers and pending entries out of a real redis-server as the demoter
// does (ReadChunks: DUMP, decoded), imports it into a cold store, builds
// its RESTORE payload back (DumpKey) and restores it under another key of
// the same server: XINFO STREAM FULL (its pending entries with their
// absolute delivery times and counts), XINFO GROUPS, XPENDING's summary and
// XRANGE of the two keys must be byte-identical.
func TestColdCopyStreamRoundTrip(t *testing.T) {
	eng := openColdEngine(t)
	s := startServer(t, 0)
	c := s.admin(t, 0)
	for i := 1; i <= 700; i++ {
		id := strconv.Itoa(i) + "-" + strconv.Itoa(i%3)
		if i%9 == 0 {
			mustDo(t, c, "XADD", "s", id, "other", strings.Repeat("o", i%40))
		} else {
			mustDo(t, c, "XADD", "s", id, "a", strconv.Itoa(i), "b", "\x00\r\n"+strconv.Itoa(i))
		}
	}
	for _, cmd := range [][]string{
		{"XDEL", "s", "5-2", "6-0", "350-2", "700-1"},
		{"XGROUP", "CREATE", "s", "g1", "0"},
		{"XGROUP", "CREATE", "s", "g2", "$", "ENTRIESREAD", "12"},
		{"XGROUP", "CREATECONSUMER", "s", "g2", "nobody"},
		{"XREADGROUP", "GROUP", "g1", "alice", "COUNT", "50", "STREAMS", "s", ">"},
		{"XREADGROUP", "GROUP", "g1", "bob", "COUNT", "30", "STREAMS", "s", ">"},
		{"XACK", "s", "g1", "1-1", "2-2"},
		{"XCLAIM", "s", "g1", "carol", "0", "10-1", "11-2"},
		{"XSETID", "s", "900-0", "ENTRIESADDED", "5000", "MAXDELETEDID", "800-0"},
	} {
		mustDo(t, c, cmd...)
	}
	mustDo(t, c, "WATCH", "s")
	pc := policyConn{c: c}
	replies, err := pc.ReadChunks([]uptier.Chunk{{Key: []byte("s"), Type: codec.TypeStream}})
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, c, "UNWATCH")
	if replies[0].Stream == nil {
		t.Fatal("ReadChunks of a Redis 7.0 stream gave no model")
	}
	v := &uptier.Value{Key: []byte("s"), Type: codec.TypeStream, Stream: replies[0].Stream}
	if err := uptier.Import(eng, 0, []*uptier.Value{v}); err != nil {
		t.Fatal(err)
	}
	var d Dump
	exp, ok, err := DumpKey(eng, 0, []byte("s"), &d)
	if err != nil || !ok || exp != 0 {
		t.Fatalf("DumpKey: expiry %d, found %v, %v", exp, ok, err)
	}
	payload := d.Finish()
	r, err := c.Do("RESTORE", "s2", "0", string(payload))
	if err != nil || ReplyText(r) != "OK" {
		t.Fatalf("RESTORE of the cold copy's payload: %q %v", r, err)
	}
	for _, cmd := range [][]string{
		{"XINFO", "STREAM", "%s", "FULL"},
		{"XINFO", "GROUPS", "%s"},
		{"XPENDING", "%s", "g1"}, // the extended form's idle times move between the two calls
		{"XRANGE", "%s", "-", "+"},
	} {
		var got [2]string
		for i, key := range []string{"s", "s2"} {
			args := append([]string(nil), cmd...)
			for j := range args {
				args[j] = strings.ReplaceAll(args[j], "%s", key)
			}
			got[i] = string(mustDo(t, c, args...))
		}
		if got[0] != got[1] {
			t.Fatalf("%v: the restored cold copy differs:\nupstream's %q\nrestored   %q", cmd, got[0], got[1])
		}
	}

	// ReadChunks of a missing key gives no model; a payload of Redis 5 to
	// 6.2 (RDB_TYPE_STREAM_LISTPACKS) is left upstream: no model, no error.
	replies, err = pc.ReadChunks([]uptier.Chunk{{Key: []byte("missing"), Type: codec.TypeStream}})
	if err != nil || replies[0].Stream != nil {
		t.Fatalf("ReadChunks of a missing key: %v, %v", replies[0].Stream, err)
	}
	// A stream over MaxStreamDemotion (MEMORY USAGE) is left upstream.
	defer func(max int64) { MaxStreamDemotion = max }(MaxStreamDemotion)
	MaxStreamDemotion = 1000
	replies, err = pc.ReadChunks([]uptier.Chunk{{Key: []byte("s"), Type: codec.TypeStream},
		{Key: []byte("small"), Type: codec.TypeString}})
	if err != nil || replies[0].Stream != nil {
		t.Fatalf("ReadChunks of a stream over MaxStreamDemotion: %v, %v", replies[0].Stream, err)
	}
	if replies[1].Str != nil {
		t.Fatalf("GET of a missing key beside a big stream: %q", replies[1].Str)
	}
	old := append([]byte{15}, payload[1:]...)
	if m, err := decodeStreamPayload([]byte("s"), old); m != nil || err != nil {
		t.Fatalf("a RDB_TYPE_STREAM_LISTPACKS payload gave %v, %v", m, err)
	}
	if _, err := decodeStreamPayload([]byte("s"), payload[:20]); err == nil {
		t.Fatal("a truncated payload decoded")
	}
}
