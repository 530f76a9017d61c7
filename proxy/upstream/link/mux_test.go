package link

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hangLimit bounds every wait in these tests; reaching it is a hang, not
// a timing assertion.
const hangLimit = 60 * time.Second

// newTestMux dials s in proto and runs a Mux (without a Pool) on the
// connection; it is closed when the test ends.
func newTestMux(t *testing.T, s *redisServer, proto int) *Mux {
	t.Helper()
	c, err := Dial(Target{Addr: s.addr, Password: s.password}, proto, 0, 5*time.Second)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	m := newMux(c, nil)
	t.Cleanup(func() {
		m.Close()
		select {
		case <-m.closed:
		case <-time.After(hangLimit):
			t.Errorf("Mux reader did not exit after Close (hang detector)")
		}
	})
	return m
}

// encode encodes commands given as space-separated words.
func encode(cmds ...string) []byte {
	var b []byte
	for _, c := range cmds {
		b = AppendCommandStrings(b, strings.Fields(c))
	}
	return b
}

// waitCall waits for c with a hang detector.
func waitCall(t *testing.T, c *Call) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(hangLimit):
		t.Fatalf("Call.Wait did not return (hang detector)")
		return nil
	}
}

// TestMuxConcurrentPipelines runs 50 goroutines × 200 batches of
// pipelined INCRs on their own keys through one Mux: every batch's
// replies must be its own, in order, with exact values.
func TestMuxConcurrentPipelines(t *testing.T) {
	s := startServer(t, 0)
	m := newTestMux(t, s, 2)
	const workers, batches = 50, 200
	totals := make([]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "mux:" + strconv.Itoa(w)
			call := NewCall() // reused for every batch
			var reqs, want []byte
			n := 0
			for b := range batches {
				k := 1 + (w+b)%5 // 1 to 5 requests per batch
				reqs, want = reqs[:0], want[:0]
				for range k {
					reqs = AppendCommandStrings(reqs, []string{"INCR", key})
					n++
					want = append(want, ':')
					want = strconv.AppendInt(want, int64(n), 10)
					want = append(want, '\r', '\n')
				}
				call.Replies = call.Replies[:0]
				if err := m.Do(call, reqs, k); err != nil {
					t.Errorf("worker %d batch %d: %v", w, b, err)
					return
				}
				if call.N() != k || call.Got() != k {
					t.Errorf("worker %d batch %d: N %d Got %d; want %d", w, b, call.N(), call.Got(), k)
					return
				}
				if !bytes.Equal(call.Replies, want) {
					t.Errorf("worker %d batch %d: replies %q; want %q", w, b, call.Replies, want)
					return
				}
			}
			totals[w] = n
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(hangLimit):
		t.Fatal("workers did not finish (hang detector)")
	}
	if t.Failed() {
		return
	}
	a := s.admin(t, 0)
	for w, n := range totals {
		if got := ReplyText(mustDo(t, a, "GET", "mux:"+strconv.Itoa(w))); got != strconv.Itoa(n) {
			t.Errorf("mux:%d = %s; want %d", w, got, n)
		}
	}
	if m.Broken() {
		t.Error("Mux broken after a clean run")
	}
}

// TestMuxCallReuse checks that Submit resets N, Got and Err but appends to
// Replies, so a client reusing a Call truncates Replies itself.
func TestMuxCallReuse(t *testing.T) {
	s := startServer(t, 0)
	m := newTestMux(t, s, 2)
	c := NewCall()
	steps := []struct {
		reqs     []byte
		n        int
		truncate bool
		want     string
	}{
		{encode("SET k 1", "GET k"), 2, false, "+OK\r\n$1\r\n1\r\n"},
		{encode("INCR k"), 1, false, "+OK\r\n$1\r\n1\r\n:2\r\n"}, // appended
		{encode("INCR k", "INCR k", "GET nope"), 3, true, ":3\r\n:4\r\n$-1\r\n"},
		{encode("LPUSH k x"), 1, true, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"},
		{encode("PING"), 1, true, "+PONG\r\n"},
	}
	for i, st := range steps {
		if st.truncate {
			c.Replies = c.Replies[:0]
		}
		if err := m.Submit(c, st.reqs, st.n); err != nil {
			t.Fatalf("step %d: Submit: %v", i, err)
		}
		if err := waitCall(t, c); err != nil {
			t.Fatalf("step %d: Wait: %v", i, err)
		}
		if string(c.Replies) != st.want || c.N() != st.n || c.Got() != st.n || c.Err != nil {
			t.Fatalf("step %d: Replies %q N %d Got %d Err %v; want %q N=Got=%d", i, c.Replies, c.N(), c.Got(), c.Err, st.want, st.n)
		}
	}
}

// TestMuxOnDone checks that OnDone runs once the replies are in, before
// Wait returns, and that returning false holds Wait until Signal.
func TestMuxOnDone(t *testing.T) {
	s := startServer(t, 0)
	m := newTestMux(t, s, 2)

	t.Run("finishes", func(t *testing.T) {
		c := NewCall()
		var seen string
		calls := 0
		c.OnDone = func() bool {
			calls++
			seen = string(c.Replies) // the reader hands over complete replies
			return true
		}
		if err := m.Do(c, encode("SET a 1", "GET a"), 2); err != nil {
			t.Fatal(err)
		}
		// Wait returned: OnDone's writes must be visible (and -race agrees).
		if calls != 1 || seen != "+OK\r\n$1\r\n1\r\n" {
			t.Fatalf("OnDone ran %d times and saw %q; want once with both replies", calls, seen)
		}
	})

	t.Run("deferred with Signal", func(t *testing.T) {
		c := NewCall()
		ran := make(chan struct{})
		c.OnDone = func() bool { close(ran); return false }
		if err := m.Submit(c, encode("PING"), 1); err != nil {
			t.Fatal(err)
		}
		waited := make(chan error, 1)
		go func() { waited <- c.Wait() }()
		select {
		case <-ran:
		case <-time.After(hangLimit):
			t.Fatal("OnDone did not run (hang detector)")
		}
		// Later traffic on the Mux completes, while c stays unfinished.
		if err := m.Do(NewCall(), encode("PING"), 1); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-waited:
			t.Fatalf("Wait returned (%v) although OnDone reported false and nobody signalled", err)
		default:
		}
		c.Signal()
		select {
		case err := <-waited:
			if err != nil || string(c.Replies) != "+PONG\r\n" {
				t.Fatalf("after Signal: Wait = %v, Replies %q", err, c.Replies)
			}
		case <-time.After(hangLimit):
			t.Fatal("Wait did not return after Signal (hang detector)")
		}
	})
}

// TestMuxSkipsPushes checks that a RESP3 push on the shared connection (a
// tracking invalidation) is nobody's reply.
func TestMuxSkipsPushes(t *testing.T) {
	s := startServer(t, 0)
	m := newTestMux(t, s, 3)
	c := NewCall()
	if err := m.Do(c, encode("CLIENT TRACKING ON", "GET tracked"), 2); err != nil {
		t.Fatal(err)
	}
	mustDo(t, s.admin(t, 0), "SET", "tracked", "1") // queues an invalidation push to m's connection
	for i := range 3 {
		c.Replies = c.Replies[:0]
		if err := m.Do(c, encode("PING"), 1); err != nil {
			t.Fatal(err)
		}
		if string(c.Replies) != "+PONG\r\n" {
			t.Fatalf("PING %d through the Mux = %q; want +PONG (the push skipped)", i, c.Replies)
		}
	}
}

// TestMuxFailure breaks the upstream (killed, or the Mux closed) while
// calls wait behind a blocked command: every queued call fails with an
// error wrapping ErrUnavailable, keeping the replies that did arrive, and
// later Submits fail at once.
func TestMuxFailure(t *testing.T) {
	tests := []struct {
		name   string
		breakf func(s *redisServer, m *Mux)
		// exact: the reply sent before the break must be in Replies. When
		// the Mux is closed locally its reader may not have read it yet.
		exact bool
	}{
		{"upstream killed", func(s *redisServer, m *Mux) { s.kill() }, true},
		{"Mux closed", func(s *redisServer, m *Mux) { m.Close() }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startServer(t, 0)
			m := newTestMux(t, s, 2)
			// PING answers, then BLPOP blocks the connection for good: what
			// follows is queued in the Mux with no reply coming.
			first := NewCall()
			var onDoneErr atomic.Value
			first.OnDone = func() bool { onDoneErr.Store(fmt.Sprint(first.Err)); return true }
			if err := m.Submit(first, encode("PING", "BLPOP never 0"), 2); err != nil {
				t.Fatal(err)
			}
			queued := make([]*Call, 10)
			for i := range queued {
				queued[i] = NewCall()
				if err := m.Submit(queued[i], encode("INCR n", "PING"), 2); err != nil {
					t.Fatalf("Submit %d: %v", i, err)
				}
			}
			waitBlocked(t, s)
			tt.breakf(s, m)

			err := waitCall(t, first)
			if !errors.Is(err, ErrUnavailable) {
				t.Fatalf("blocked call: Wait = %v; want an error wrapping ErrUnavailable", err)
			}
			wantReplies := "+PONG\r\n"
			if !tt.exact && first.Got() == 0 {
				wantReplies = ""
			}
			if string(first.Replies) != wantReplies || first.Got() != len(wantReplies)/len("+PONG\r\n") {
				t.Fatalf("blocked call kept Replies %q Got %d; want %q", first.Replies, first.Got(), wantReplies)
			}
			if s, _ := onDoneErr.Load().(string); s != err.Error() {
				t.Fatalf("OnDone saw Err %q; want %q", s, err)
			}
			for i, c := range queued {
				err := waitCall(t, c)
				if !errors.Is(err, ErrUnavailable) || c.Got() != 0 || len(c.Replies) != 0 {
					t.Fatalf("queued call %d: Wait = %v, Got %d, Replies %q; want ErrUnavailable and nothing", i, err, c.Got(), c.Replies)
				}
			}
			if !m.Broken() {
				t.Fatal("Broken() = false after the failure")
			}
			// Later submits fail at once, without queuing.
			for i := range 3 {
				res := make(chan error, 1)
				c := NewCall()
				go func() { res <- m.Submit(c, encode("PING"), 1) }()
				select {
				case err := <-res:
					if !errors.Is(err, ErrUnavailable) {
						t.Fatalf("Submit %d after failure = %v; want an error wrapping ErrUnavailable", i, err)
					}
				case <-time.After(hangLimit):
					t.Fatalf("Submit %d after failure blocked (hang detector)", i)
				}
			}
			select {
			case <-m.closed:
			case <-time.After(hangLimit):
				t.Fatal("reader did not exit (hang detector)")
			}
		})
	}
}

// waitBlocked waits until a client of s is blocked in BLPOP, then makes
// one more round trip, so that the replies written before it blocked have
// left the server.
func waitBlocked(t *testing.T, s *redisServer) {
	t.Helper()
	a := s.admin(t, 0)
	for range 1000 {
		if strings.Contains(ReplyText(mustDo(t, a, "CLIENT", "LIST")), "cmd=blpop") {
			mustDo(t, a, "PING")
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no client blocked in BLPOP")
}

// TestMuxUnaskedReply checks that a reply beyond what was submitted breaks
// the Mux (the stream is out of step) instead of going to a later call.
func TestMuxUnaskedReply(t *testing.T) {
	s := startServer(t, 0)
	m := newTestMux(t, s, 2)
	c := NewCall()
	// Two requests declared as one: the second PONG belongs to nobody.
	if err := m.Do(c, encode("PING", "PING"), 1); err != nil {
		t.Fatalf("first call: %v", err)
	}
	select {
	case <-m.closed:
	case <-time.After(hangLimit):
		t.Fatal("Mux did not break on an unasked-for reply (hang detector)")
	}
	if !m.Broken() {
		t.Fatal("Broken() = false")
	}
	err := m.Submit(NewCall(), encode("PING"), 1)
	if err == nil || !strings.Contains(err.Error(), "nobody asked for") {
		t.Fatalf("Submit after desync = %v; want the desync error", err)
	}
}
