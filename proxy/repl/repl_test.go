package repl

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"
)

func settings(kv map[string]string) func(string) string {
	return func(name string) string { return kv[name] }
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// stream returns the bytes of the stream from offset from to the end.
func (m *Master) streamFrom(from int64) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	buf := make([]byte, m.offset-from+1)
	n := m.bl.read(from, m.offset, buf)
	return string(buf[:n])
}

func TestBacklogRingWraps(t *testing.T) {
	b := &backlog{buf: make([]byte, 8)}
	var all []byte
	off := int64(1)
	for i, chunk := range []string{"abc", "defgh", "ij", "klmnopqrstu", "v"} {
		b.write(off, []byte(chunk))
		off += int64(len(chunk))
		all = append(all, chunk...)
		last := off - 1
		first := last - b.histlen + 1
		if want := min(int64(len(all)), 8); b.histlen != want {
			t.Fatalf("step %d: histlen %d, want %d", i, b.histlen, want)
		}
		got := make([]byte, b.histlen)
		if n := b.read(first, last, got); n != len(got) || !bytes.Equal(got, all[first-1:]) {
			t.Fatalf("step %d: read %q, want %q", i, got[:n], all[first-1:])
		}
	}
	// A short buffer reads a prefix.
	p := make([]byte, 3)
	if n := b.read(off-5, off-1, p); n != 3 || string(p) != string(all[len(all)-5:len(all)-2]) {
		t.Fatalf("prefix read %q", p[:n])
	}
}

func TestFeedSelectsAndWraps(t *testing.T) {
	m := New(Options{Log: quiet, Setting: settings(map[string]string{"repl-backlog-size": "1mb"})})
	defer m.Close()
	var u Unit
	u.AddStrings(0, "SET", "a", "1")
	if off := m.Feed(&u, true); off != 0 || u.Len() != 0 {
		t.Fatalf("without a backlog Feed must record nothing: offset %d, unit %d", off, u.Len())
	}
	r := m.Attach(Handshake{}, false, "", 0, "127.0.0.1")
	if !r.Full() || !m.Active() {
		t.Fatal("SYNC must be a full resync and create the backlog")
	}
	u.AddStrings(0, "SET", "a", "1")
	m.Feed(&u, true)
	u.AddStrings(0, "INCR", "a")
	u.AddStrings(2, "DEL", "b")
	m.Feed(&u, true)
	u.AddStrings(2, "DEL", "x")
	u.AddStrings(2, "DEL", "y")
	m.Feed(&u, false) // an active expiry's batch: never wrapped
	want := "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n" +
		"*1\r\n$5\r\nMULTI\r\n*2\r\n$4\r\nINCR\r\n$1\r\na\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n" +
		"*2\r\n$3\r\nDEL\r\n$1\r\nb\r\n*1\r\n$4\r\nEXEC\r\n" +
		"*2\r\n$3\r\nDEL\r\n$1\r\nx\r\n*2\r\n$3\r\nDEL\r\n$1\r\ny\r\n"
	if got := m.streamFrom(1); got != want {
		t.Fatalf("stream:\n%q\nwant\n%q", got, want)
	}
	if m.Offset() != int64(len(want)) {
		t.Fatalf("offset %d, want %d", m.Offset(), len(want))
	}
}

func TestAttachPartialOrFull(t *testing.T) {
	m := New(Options{Log: quiet, Setting: settings(map[string]string{"repl-backlog-size": "16kb"})})
	defer m.Close()
	first := m.Attach(Handshake{CapaPsync2: true}, true, "?", -1, "127.0.0.1")
	if !first.Full() || !strings.HasPrefix(first.reply, "+FULLRESYNC "+m.ID()+" 0\r\n") {
		t.Fatalf("first PSYNC: full %v, reply %q", first.Full(), first.reply)
	}
	var u Unit
	for i := 0; i < 100; i++ {
		u.AddStrings(0, "SET", "k", strings.Repeat("v", 100))
		m.Feed(&u, true)
	}
	id, end := m.ID(), m.Offset()
	cases := []struct {
		name   string
		replid string
		offset int64
		full   bool
	}{
		{"at the end", id, end + 1, false},
		{"within the backlog", id, end - 1000, false},
		{"past the end", id, end + 2, true},
		{"before the backlog", id, end - 20000, true},
		{"another history", strings.Repeat("a", 40), end + 1, true},
	}
	for _, c := range cases {
		r := m.Attach(Handshake{CapaPsync2: true}, true, c.replid, c.offset, "127.0.0.1")
		if r.Full() != c.full {
			t.Errorf("%s: full %v, want %v", c.name, r.Full(), c.full)
		}
		if !c.full {
			if r.reply != "+CONTINUE "+id+"\r\n" || r.next != c.offset {
				t.Errorf("%s: reply %q, next %d", c.name, r.reply, r.next)
			}
		}
	}
	if m.SyncPartialOK.Load() != 2 || m.SyncPartialErr.Load() != 3 || m.SyncFull.Load() != 4 {
		t.Errorf("stats: ok %d err %d full %d", m.SyncPartialOK.Load(), m.SyncPartialErr.Load(), m.SyncFull.Load())
	}
	if r := m.Attach(Handshake{}, true, id, end+1, "127.0.0.1"); r.reply != "+CONTINUE\r\n" {
		t.Errorf("a replica without psync2 gets %q", r.reply)
	}
}

func TestHandshakeConf(t *testing.T) {
	args := func(s string) [][]byte {
		var out [][]byte
		for _, f := range strings.Fields(s) {
			out = append(out, []byte(f))
		}
		return out
	}
	var h Handshake
	for _, c := range []struct {
		in    string
		msg   string
		reply bool
	}{
		{"replconf listening-port 6390 capa eof capa psync2", "", true},
		{"replconf ip-address 10.0.0.1", "", true},
		{"replconf listening-port x", "ERR value is not an integer or out of range", true},
		{"replconf capa", "ERR syntax error", true},
		{"replconf rdb-only 1", "", true},
		{"replconf rdb-only 3", "ERR value is out of range, value must between 0 and 1", true},
		{"replconf rdb-filter-only functions", "", true},
		{"replconf rdb-filter-only keys", "ERR Unsupported rdb-filter-only option: keys", true},
		{"replconf ack 10", "", false},
		{"replconf nope 1", "ERR Unrecognized REPLCONF option: nope", true},
	} {
		msg, reply := h.Conf(args(c.in))
		if msg != c.msg || reply != c.reply {
			t.Errorf("%s: (%q, %v), want (%q, %v)", c.in, msg, reply, c.msg, c.reply)
		}
	}
	// The refused "keys" filter still set the exclusions, as in Redis.
	want := Handshake{ListeningPort: 6390, IPAddress: "10.0.0.1", CapaEOF: true, CapaPsync2: true, RDBOnly: true,
		ExcludeData: true, ExcludeFunctions: true}
	if h != want {
		t.Errorf("handshake %+v, want %+v", h, want)
	}
}

// TestSlowReplicaSpills: a replica that has not been sent the bytes the
// backlog overwrites gets them from its spill, in order, even for a
// command larger than the backlog; one whose spill passes the replica
// output buffer limit is dropped.
func TestSlowReplicaSpills(t *testing.T) {
	limit := "normal 0 0 0 replica 100kb 0 0 pubsub 32mb 8mb 60"
	m := New(Options{Log: quiet, Setting: settings(map[string]string{"repl-backlog-size": "16kb",
		"client-output-buffer-limit": limit})})
	defer m.Close()
	r := m.Attach(Handshake{}, false, "", 0, "127.0.0.1")
	var u Unit
	var want []byte
	for i := 0; i < 40; i++ {
		n := 1000
		if i == 20 {
			n = 40000 // one command larger than the backlog
		}
		u.AddStrings(i%3, "SET", "k", strings.Repeat(string(rune('a'+i%26)), n))
		want = append(want, u.buf...)
		m.Feed(&u, true)
	}
	m.mu.Lock()
	got := append([]byte(nil), r.spill...)
	rest := make([]byte, m.offset-(r.next+int64(len(r.spill)))+1)
	m.bl.read(r.next+int64(len(r.spill)), m.offset, rest)
	m.mu.Unlock()
	got = append(got, rest...)
	// want lacks the SELECTs Feed adds: compare without them.
	strip := func(b []byte) string {
		s := string(b)
		for _, db := range []string{"0", "1", "2"} {
			s = strings.ReplaceAll(s, "*2\r\n$6\r\nSELECT\r\n$1\r\n"+db+"\r\n", "")
		}
		return s
	}
	if strip(got) != strip(want) {
		t.Fatalf("spill + backlog differ from the stream (%d vs %d bytes)", len(got), len(want))
	}
	for i := 0; i < 100; i++ {
		u.AddStrings(0, "SET", "k", strings.Repeat("z", 1000))
		m.Feed(&u, true)
	}
	select {
	case <-r.done:
	default:
		t.Fatal("a replica 100 KB behind with a 100kb limit was not dropped")
	}
}
