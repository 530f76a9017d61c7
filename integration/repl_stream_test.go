package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// The replication stream, command by command: each case file in
// testdata/repl runs on a redis-server and on Spillway, each with a
// SYNC connection attached as the suite's attach_to_replication_stream
// does, and the two streams must hold the same commands (what each
// command propagates as: SET ... PXAT for SET EX, PEXPIREAT for EXPIRE,
// LPOP for a served BLPOP, MULTI/EXEC around a transaction's writes,
// SELECT when the database changes...). Absolute times are compared as
// "<ms>", since the two servers' clocks run a few milliseconds apart.
// Case files use testdata/diff's format (one command per line, redis-cli
// quoting, @sleep MS); a line whose first word is "~" runs the rest on a
// second connection of each server and is not waited for (a blocking pop
// the next lines serve, before the next "~").

// streamReader reads a replication stream from a SYNC connection.
type streamReader struct {
	nc net.Conn
	br *bufio.Reader
}

// attachStream connects to addr, sends SYNC and skips the RDB payload, as
// the suite's attach_to_replication_stream.
func attachStream(t *testing.T, addr string) *streamReader {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(20 * time.Second))
	s := &streamReader{nc: nc, br: bufio.NewReader(nc)}
	if _, err := io.WriteString(nc, "SYNC\r\n"); err != nil {
		t.Fatal(err)
	}
	var line string
	for range 1000 { // newlines are allowed as keep-alives before the payload
		if line, err = s.br.ReadString('\n'); err != nil {
			t.Fatalf("SYNC on %s: %v", addr, err)
		}
		if line = strings.TrimRight(line, "\r\n"); line != "" {
			break
		}
	}
	if !strings.HasPrefix(line, "$") {
		t.Fatalf("SYNC on %s: got %q, want a bulk payload", addr, line)
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil {
		t.Fatalf("SYNC on %s: payload header %q", addr, line)
	}
	if _, err := io.CopyN(io.Discard, s.br, int64(n)); err != nil {
		t.Fatalf("SYNC on %s: payload: %v", addr, err)
	}
	return s
}

// next reads one command of the stream (its name lowercased).
func (s *streamReader) next() ([]string, error) {
	s.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	args, err := readStreamCommand(s.br)
	if err == nil && len(args) > 0 {
		args[0] = strings.ToLower(args[0])
	}
	return args, err
}

// until reads the stream up to the command SET __end__ tag (excluded),
// leaving out the PINGs and REPLCONF GETACKs the master sends on its own.
func (s *streamReader) until(tag string) ([]string, error) {
	var out []string
	for range 100000 {
		args, err := s.next()
		if err != nil {
			return out, err
		}
		if len(args) == 3 && args[0] == "set" && args[1] == "__end__" && args[2] == tag {
			return out, nil
		}
		if args[0] == "ping" || args[0] == "replconf" {
			continue
		}
		out = append(out, normalizeStream(args))
	}
	return out, fmt.Errorf("no end marker %q", tag)
}

// readStreamCommand reads a RESP array of bulk strings.
func readStreamCommand(br *bufio.Reader) ([]string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if !strings.HasPrefix(line, "*") {
		return nil, fmt.Errorf("stream: want an array, got %q", line)
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 1 {
		return nil, fmt.Errorf("stream: bad array header %q", line)
	}
	args := make([]string, n)
	for i := range args {
		h, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		l, err := strconv.Atoi(strings.TrimRight(h, "\r\n")[1:])
		if err != nil || l < 0 {
			return nil, fmt.Errorf("stream: bad bulk header %q", h)
		}
		b := make([]byte, l+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:l])
	}
	return args, nil
}

// unixMillis matches an absolute time in milliseconds of this century.
var unixMillis = regexp.MustCompile(`^1[0-9]{12}$|^2[0-9]{12}$`)

// normalizeStream renders a command, absolute times as <ms>.
func normalizeStream(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if unixMillis.MatchString(a) {
			a = "<ms>"
		}
		out[i] = strconv.Quote(a)
	}
	return strings.Join(out, " ")
}

// TestReplStreamCases compares the replication streams of redis-server and
// Spillway for each case file.
func TestReplStreamCases(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "repl", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no case files in testdata/repl (err %v)", err)
	}
	ref := harness.StartRedis(t)
	sub := harness.StartSpillway(t, "")
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			lines, err := loadReplCases(path)
			if err != nil {
				t.Fatal(err)
			}
			want := replStream(t, ref, lines, filepath.Base(path))
			got := replStream(t, sub, lines, filepath.Base(path))
			if len(want) == 0 {
				t.Fatalf("redis-server propagated nothing: the case tests nothing")
			}
			for i := range max(len(want), len(got)) {
				var w, g string
				if i < len(want) {
					w = want[i]
				}
				if i < len(got) {
					g = got[i]
				}
				if w != g {
					t.Errorf("stream command %d: got %s, want %s", i, g, w)
				}
			}
		})
	}
}

// replCase is a case line, run on a second connection when blocked.
type replCase struct {
	caseLine
	blocked bool
}

func loadReplCases(path string) ([]replCase, error) {
	lines, err := loadCaseFile(path)
	if err != nil {
		return nil, err
	}
	out := make([]replCase, 0, len(lines))
	for _, l := range lines {
		rc := replCase{caseLine: l}
		if len(l.args) > 1 && l.args[0] == "~" {
			rc.blocked, rc.args = true, l.args[1:]
		}
		out = append(out, rc)
	}
	return out, nil
}

// replStream flushes srv, attaches a stream, runs lines and returns what
// the stream carried.
func replStream(t *testing.T, srv *harness.Server, lines []replCase, tag string) []string {
	t.Helper()
	c := srv.Conn(t)
	c.Do("FLUSHALL")
	c.Do("CONFIG", "SET", "repl-ping-replica-period", "3600")
	s := attachStream(t, srv.Addr())
	var blocked []*harness.Conn
	for _, l := range lines {
		switch {
		case l.sleep > 0:
			time.Sleep(l.sleep)
		case l.blocked:
			b := srv.Conn(t)
			if err := b.Send(l.args...); err != nil || b.Flush() != nil {
				t.Fatalf("send %v: %v", l.args, err)
			}
			blocked = append(blocked, b)
			waitBlocked(t, c, 1) // the lines before served the previous one
		default:
			c.Do(l.args...)
		}
	}
	for _, b := range blocked {
		b.Read() // served (or timed out) before the end marker
	}
	c.Do("SELECT", "0")
	c.Do("SET", "__end__", tag)
	out, err := s.until(tag)
	if err != nil {
		t.Fatalf("stream so far %v: %v", out, err)
	}
	return out
}

// waitBlocked waits until n clients are blocked (INFO blocked_clients).
func waitBlocked(t *testing.T, c *harness.Conn, n int) {
	t.Helper()
	for range 200 {
		m, err := harness.Info(c, "clients")
		if err != nil {
			t.Fatal(err)
		}
		if m["blocked_clients"] == strconv.Itoa(n) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("never saw %d blocked clients", n)
}
