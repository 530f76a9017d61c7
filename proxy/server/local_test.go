package server

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/spillway/spillway/coldstore"
	"github.com/spillway/spillway/proxy/config"
	"github.com/spillway/spillway/tiering"
)

// localServer returns a server over a fresh engine in t.TempDir(), not
// listening, with the handlers of cmds (nil: the server's own).
func localServer(t testing.TB, cmds *Table) *Server {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cold, err := coldstore.Open(coldstore.Options{Dir: t.TempDir(), CacheBytes: 1 << 20, MemTableBytes: 1 << 20, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	e, err := tiering.Open(cold, tiering.Options{Databases: 16, HotBudget: 8 << 20, Logger: log})
	if err != nil {
		cold.Close()
		t.Fatal(err)
	}
	s := NewServer(config.Default(), e, log, cmds)
	t.Cleanup(func() {
		s.Close()
		e.Close()
		cold.Close()
	})
	return s
}

func TestLocal(t *testing.T) {
	s := localServer(t, nil)
	l := s.NewLocal()
	defer l.Close()
	steps := []struct{ cmd, want string }{
		{"PING", "+PONG\r\n"},
		{"SET k v", "+OK\r\n"},
		{"GET k", "$1\r\nv\r\n"},
		{"NOSUCH a", "-ERR unknown command 'NOSUCH', with args beginning with: 'a' \r\n"},
		{"GET", "-ERR wrong number of arguments for 'get' command\r\n"},
		// A blocking command on empty keys replies at once.
		{"BLPOP empty 0", "*-1\r\n"},
		{"BZPOPMIN empty 0", "*-1\r\n"},
		{"MULTI", "+OK\r\n"},
		{"INCR n", "+QUEUED\r\n"},
		{"BLPOP empty 0", "+QUEUED\r\n"},
		{"EXEC", "*2\r\n:1\r\n*-1\r\n"},
		{"SUBSCRIBE ch", "-" + errLocalSubscribe + "\r\n"},
		{"CLIENT REPLY OFF", ""},
		{"SET k w", ""},
		{"CLIENT REPLY ON", "+OK\r\n"},
		{"GET k", "$1\r\nw\r\n"},
		{"HELLO 3", ""}, // checked below
		{"GET missing", "_\r\n"},
		{"LRANGE missing 0 -1", "*0\r\n"},
		{"CLIENT ID", ""},
	}
	for _, st := range steps {
		got := string(l.DoString(strings.Fields(st.cmd)...))
		if st.want != "" && got != st.want {
			t.Errorf("%s: got %q, want %q", st.cmd, got, st.want)
		}
	}
	if l.Proto() != 3 {
		t.Errorf("after HELLO 3: proto %d", l.Proto())
	}
	if got := string(l.DoString("CLIENT", "LIST")); !strings.Contains(got, "addr=in-process") {
		t.Errorf("CLIENT LIST does not list the Local: %q", got)
	}
	if got := string(l.DoString("QUIT")); got != "+OK\r\n" || !l.Closed() {
		t.Errorf("QUIT: %q, closed %v", got, l.Closed())
	}
	if got := string(l.DoString("PING")); got != string(errLocalClosed) {
		t.Errorf("PING after QUIT: %q", got)
	}
	if n := len(s.clientList()); n != 0 {
		t.Errorf("%d clients listed after Close", n)
	}
}

// TestLocalPanic: a handler's panic is recovered as for a connection, and
// the Local is closed.
func TestLocalPanic(t *testing.T) {
	tb := NewTable()
	tb.Register("get", func(x *Ctx, args [][]byte) error {
		return x.Update(func(tx *tiering.Tx) error { panic("boom") })
	})
	s := localServer(t, tb)
	l := s.NewLocal()
	if got := string(l.DoString("GET", "k")); got != "-ERR internal error; see the server log\r\n" || !l.Closed() {
		t.Fatalf("panic: %q, closed %v", got, l.Closed())
	}
	l2 := s.NewLocal() // the lock was released
	defer l2.Close()
	if got := string(l2.DoString("SET", "k", "v")); got != "+OK\r\n" {
		t.Fatalf("SET after the panic: %q", got)
	}
}
