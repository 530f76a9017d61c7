package integration

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// TestPanicInCommandIsContained: a command that panics (here a test hook,
// in production a bug) gets an error reply and its connection closed; the
// transaction it held is aborted, so its write is gone and the engine's
// lock is free: the server keeps serving every other client.
func TestPanicInCommandIsContained(t *testing.T) {
	t.Setenv("SPILLWAY_TEST_HOOKS", "1")
	s := harness.StartSpillway(t, "", "--loglevel", "warning")
	const internal = "-ERR internal error; see the server log\r\n"
	cases := []struct {
		name string
		send string // raw RESP; a PING follows, which must not be answered
		want string // everything the victim reads before the close
	}{
		{"alone", "*2\r\n$5\r\nDEBUG\r\n$11\r\nPANIC-IN-TX\r\n", internal},
		// Inside EXEC the whole transaction is aborted: the SET queued
		// before the panicking command is not kept either.
		{"in EXEC", "*1\r\n$5\r\nMULTI\r\n*3\r\n$3\r\nSET\r\n$6\r\nqueued\r\n$1\r\n1\r\n" +
			"*2\r\n$5\r\nDEBUG\r\n$11\r\nPANIC-IN-TX\r\n*1\r\n$4\r\nEXEC\r\n",
			"+OK\r\n+QUEUED\r\n+QUEUED\r\n" + internal},
	}
	other := s.Conn(t)
	if r := other.Do("SET", "before", "1"); r.Str != "OK" {
		t.Fatalf("SET: %s", r.String())
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The victim speaks raw RESP: its connection is expected to close.
			victim, err := net.Dial("tcp", s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer victim.Close()
			victim.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := victim.Write([]byte(tc.send + "*1\r\n$4\r\nPING\r\n")); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(victim)
			if err != nil {
				t.Fatalf("reading the panicked connection: %v", err)
			}
			if string(got) != tc.want {
				t.Fatalf("the panicked connection got %q then closed, want %q (and no PONG)", got, tc.want)
			}
			for range 3 { // the lock was released: commands keep running
				if r := other.Do("GET", "before"); r.Str != "1" {
					t.Fatalf("GET before = %s", r.String())
				}
				if r := other.Do("EXISTS", "debug:panic", "queued"); r.Int != 0 {
					t.Fatalf("the panicked transaction's writes were kept: EXISTS = %s", r.String())
				}
			}
			if r := s.Conn(t).Do("PING"); r.Str != "PONG" {
				t.Fatalf("a new connection: PING = %s", r.String())
			}
		})
	}
}
