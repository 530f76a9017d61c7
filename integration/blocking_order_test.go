package integration

// Blocked clients are served in the order their commands reached the
// server, as Redis runs them, even when the first client's goroutine is
// still busy with earlier input when the second blocks (blocking.go,
// awaitOthers). Both servers run the test.

import (
	"strconv"
	"strings"
	"testing"
)

// slowScript keeps the server busy for some milliseconds.
const slowScript = "local i = 0 while i < 1000000 do i = i + 1 end return i"

// TestBlockingOrderAcrossConnections is the suite's "BRPOPLPUSH with
// multiple blocked clients" with the first client busy: it sends a slow
// EVAL and its BRPOPLPUSH (to a destination of the wrong type) in one
// write; once the server runs the EVAL, the second client sends its
// BRPOPLPUSH, then an LPUSH comes. The first client, blocked first, must
// get WRONGTYPE (nothing popped) and the second the element. (Without the
// wait, Spillway could block the second client first, and the first then
// blocked for ever.)
func TestBlockingOrderAcrossConnections(t *testing.T) {
	for _, tg := range psTargets(t) {
		t.Run(tg.name, func(t *testing.T) {
			r := tg.srv.Conn(t)
			for round := range 20 {
				r.Do("DEL", "blist", "target2")
				r.Do("SET", "target1", "nolist")
				rd1, rd2 := tg.srv.Conn(t), tg.srv.Conn(t)
				id := "id=" + strconv.FormatInt(rd1.Do("CLIENT", "ID").Int, 10) + " "
				rd1.Send("EVAL", slowScript, "0")
				rd1.Send("BRPOPLPUSH", "blist", "target1", "0")
				if err := rd1.Flush(); err != nil {
					t.Fatal(err)
				}
				// The server has read rd1's commands once it runs them.
				for running := false; !running; {
					for _, line := range strings.Split(r.Do("CLIENT", "LIST").Str, "\n") {
						running = running || strings.HasPrefix(line, id) &&
							(strings.Contains(line, " cmd=eval ") || strings.Contains(line, " cmd=brpoplpush "))
					}
				}
				rd2.Send("BRPOPLPUSH", "blist", "target2", "0")
				if err := rd2.Flush(); err != nil {
					t.Fatal(err)
				}
				for !strings.Contains(r.Do("INFO", "clients").Str, "blocked_clients:2\r\n") {
				}
				elem := "foo" + strconv.Itoa(round)
				r.Do("LPUSH", "blist", elem)
				if got := rd1.Read(); got.Int != 1000000 {
					t.Fatalf("EVAL: %q", got.Raw)
				}
				if got := rd1.Read(); got.Type != '-' || !strings.HasPrefix(got.Str, "WRONGTYPE") {
					t.Fatalf("round %d: first client got %q, want WRONGTYPE", round, got.Raw)
				}
				if got := rd2.Read(); got.Str != elem {
					t.Fatalf("round %d: second client got %q, want %q", round, got.Raw, elem)
				}
				rd1.Close()
				rd2.Close()
			}
		})
	}
}
