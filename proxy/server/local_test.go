package server

import (
	"io"
	"log/slog"
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

// TestLocalPanic: a handler's panic is recovered as for a connection, and
// the Local is closed.
func TestLocalPanic(t *testing.T) {
	tb := NewTable()
	tb.Register("get", func(x *Ctx, args [][]byte) error {
		return x.Update(func(tx *tiering.Tx) error { panic("boom") })
	})
	tb.Register("set", func(x *Ctx, args [][]byte) error {
		return x.Update(func(tx *tiering.Tx) error {
			x.W.OK()
			return tx.SetString(x.DB(), args[1], args[2], 0)
		})
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
