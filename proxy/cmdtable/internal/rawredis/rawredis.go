// Package rawredis starts throwaway redis-server processes and talks to
// them over raw RESP, keeping the exact bytes of every reply. It serves the
// command-table generator and the byte-for-byte comparison tests.
package rawredis

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// Server is a redis-server child process listening on Addr.
type Server struct {
	Addr string
	cmd  *exec.Cmd
	dir  string
}

// Start launches redis-server on a free loopback port with persistence
// disabled and waits until it accepts connections. It fails if
// redis-server is not on PATH.
func Start() (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("rawredis: redis-server not found on PATH: %w", err)
	}
	dir, err := os.MkdirTemp("", "rawredis-")
	if err != nil {
		return nil, fmt.Errorf("rawredis: temp dir: %w", err)
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", dir)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("rawredis: start redis-server: %w", err)
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd, dir: dir}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return s, nil
		}
		if time.Now().After(deadline) {
			s.Close()
			return nil, fmt.Errorf("rawredis: redis-server on %s did not come up: %w", s.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Close kills the server and removes its directory.
func (s *Server) Close() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
	}
	os.RemoveAll(s.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("rawredis: find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Conn is a synchronous raw RESP connection.
type Conn struct {
	c net.Conn
	r *bufio.Reader
}

// Dial connects to addr.
func Dial(addr string) (*Conn, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("rawredis: dial %s: %w", addr, err)
	}
	return &Conn{c: c, r: bufio.NewReaderSize(c, 1<<16)}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.c.Close() }

// Do sends one command and returns its reply, parsed, with Raw holding the
// exact reply bytes.
func (c *Conn) Do(args ...string) (*Value, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	c.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.c.Write(b.Bytes()); err != nil {
		return nil, fmt.Errorf("rawredis: write: %w", err)
	}
	var raw []byte
	v, err := read(c.r, &raw)
	if err != nil {
		return nil, fmt.Errorf("rawredis: read reply to %q: %w", args, err)
	}
	return v, nil
}

// Value is one parsed RESP2/RESP3 reply.
type Value struct {
	// Type is the RESP type byte: + - : $ * % ~ _ , # = > ( !
	// A RESP2 null bulk or null array has Type '$' or '*' and Null set.
	Type  byte
	Null  bool
	Str   string // simple, error, bulk, verbatim, double, big number text
	Int   int64
	Elems []*Value // aggregate children; a map holds key, value, key, value...
	Raw   []byte   // exact encoded bytes of this value
}

// IsAggregate reports whether v has children.
func (v *Value) IsAggregate() bool {
	switch v.Type {
	case '*', '%', '~', '>', '|':
		return !v.Null
	}
	return false
}

// MapGet returns the value under key in a map (or a RESP2 flat key/value
// array), or nil.
func (v *Value) MapGet(key string) *Value {
	for i := 0; i+1 < len(v.Elems); i += 2 {
		if v.Elems[i].Str == key {
			return v.Elems[i+1]
		}
	}
	return nil
}

// Strings returns the Str of every child.
func (v *Value) Strings() []string {
	out := make([]string, 0, len(v.Elems))
	for _, e := range v.Elems {
		out = append(out, e.Str)
	}
	return out
}

func read(r *bufio.Reader, raw *[]byte) (*Value, error) {
	start := len(*raw)
	line, err := r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, errors.New("malformed line")
	}
	*raw = append(*raw, line...)
	v := &Value{Type: line[0]}
	body := string(line[1 : len(line)-2])
	switch v.Type {
	case '+', '-', ',', '(', '#':
		v.Str = body
	case '_':
		v.Null = true
	case ':':
		if v.Int, err = strconv.ParseInt(body, 10, 64); err != nil {
			return nil, fmt.Errorf("bad integer %q", body)
		}
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, fmt.Errorf("bad length %q", body)
		}
		if n < 0 {
			v.Null = true
			break
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		*raw = append(*raw, buf...)
		v.Str = string(buf[:n])
	case '*', '%', '~', '>', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, fmt.Errorf("bad length %q", body)
		}
		if n < 0 {
			v.Null = true
			break
		}
		if v.Type == '%' || v.Type == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			e, err := read(r, raw)
			if err != nil {
				return nil, err
			}
			v.Elems = append(v.Elems, e)
		}
		if v.Type == '|' { // attribute: the real value follows
			return read(r, raw)
		}
	default:
		return nil, fmt.Errorf("unknown RESP type %q", v.Type)
	}
	v.Raw = append([]byte(nil), (*raw)[start:]...)
	return v, nil
}

// Encode re-serialises v from its children, so that a tree whose children
// were reordered can be compared byte for byte. Leaves keep their Raw bytes.
func Encode(dst []byte, v *Value) []byte {
	if !v.IsAggregate() {
		return append(dst, v.Raw...)
	}
	n := len(v.Elems)
	if v.Type == '%' {
		n /= 2
	}
	dst = append(dst, v.Type)
	dst = strconv.AppendInt(dst, int64(n), 10)
	dst = append(dst, '\r', '\n')
	for _, e := range v.Elems {
		dst = Encode(dst, e)
	}
	return dst
}

// Parse parses exactly one complete reply from b.
func Parse(b []byte) (*Value, error) {
	r := bufio.NewReader(bytes.NewReader(b))
	var raw []byte
	v, err := read(r, &raw)
	if err != nil {
		return nil, err
	}
	if len(raw) != len(b) {
		return nil, fmt.Errorf("rawredis: %d trailing bytes", len(b)-len(raw))
	}
	return v, nil
}
