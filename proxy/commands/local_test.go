package commands_test

import (
	"strings"
	"testing"
)

// TestLocal runs a connection's life through an in-process client
// (server.Local) with the command library: replies, errors, blocking
// commands answering at once, MULTI, CLIENT REPLY, HELLO, QUIT.
func TestLocal(t *testing.T) {
	s, _ := openLocal(t, modes[0])
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
		{"SUBSCRIBE ch", "-ERR Pub/Sub subscriptions are not supported by an in-process client\r\n"},
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
	if got := string(l.DoString("PING")); got != "-ERR the in-process client is closed\r\n" {
		t.Errorf("PING after QUIT: %q", got)
	}
	l2 := s.NewLocal() // the closed Local has left the client list
	defer l2.Close()
	if got := string(l2.DoString("CLIENT", "LIST")); strings.Count(got, " addr=in-process") != 1 {
		t.Errorf("clients listed after Close: %q", got)
	}
}
