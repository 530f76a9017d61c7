package harness

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"
)

// DefaultTimeout bounds every read and write of a Conn unless Conn.Timeout
// is changed.
const DefaultTimeout = 10 * time.Second

// maxBulk bounds the bulk length the client accepts from a server (Redis's
// own proto-max-bulk-len is 512 MB).
const maxBulk = 512 << 20

// maxElems bounds the element count of one aggregate reply.
const maxElems = 1 << 26

// Conn is a raw RESP client connection for tests. It is not safe for
// concurrent use. Requests are buffered by Send and flushed by Flush or by
// the next Read, so Send+Send+Read+Read pipelines.
type Conn struct {
	nc net.Conn
	br *bufio.Reader
	bw *bufio.Writer
	// Timeout is the deadline for each Read (the whole reply) and each Flush.
	Timeout time.Duration
	raw     []byte
	t       testing.TB
}

// Dial opens a connection to addr ("host:port").
func Dial(addr string) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return NewConn(nc), nil
}

// NewConn wraps an established connection.
func NewConn(nc net.Conn) *Conn {
	return &Conn{
		nc:      nc,
		br:      bufio.NewReaderSize(nc, 64<<10),
		bw:      bufio.NewWriterSize(nc, 64<<10),
		Timeout: DefaultTimeout,
	}
}

// MustDial dials addr, failing t on error, and closes the connection when
// the test ends. Do and DoBytes on the returned Conn fail t (Fatal) on
// transport errors instead of returning a Reply with Err set.
func MustDial(t testing.TB, addr string) *Conn {
	t.Helper()
	c, err := Dial(addr)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	c.t = t
	t.Cleanup(func() { c.Close() })
	return c
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// NetConn exposes the underlying connection (e.g. for half-closing).
func (c *Conn) NetConn() net.Conn { return c.nc }

// Send buffers one command; it is written by Flush or the next Read.
func (c *Conn) Send(args ...string) error {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return c.SendBytes(b...)
}

// SendBytes buffers one command with binary arguments.
func (c *Conn) SendBytes(args ...[]byte) error {
	if _, err := c.bw.Write(EncodeCommand(args...)); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// WriteRaw writes b unchanged (after anything buffered) and flushes.
func (c *Conn) WriteRaw(b []byte) error {
	if _, err := c.bw.Write(b); err != nil {
		return fmt.Errorf("write raw: %w", err)
	}
	return c.Flush()
}

// Flush writes buffered commands.
func (c *Conn) Flush() error {
	if c.bw.Buffered() == 0 {
		return nil
	}
	if err := c.nc.SetWriteDeadline(time.Now().Add(c.Timeout)); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	if err := c.bw.Flush(); err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	return nil
}

// Do sends one command and reads its reply.
func (c *Conn) Do(args ...string) Reply {
	if err := c.Send(args...); err != nil {
		return c.fail(Reply{Err: err})
	}
	return c.fail(c.Read())
}

// DoBytes sends one command with binary arguments and reads its reply.
func (c *Conn) DoBytes(args ...[]byte) Reply {
	if err := c.SendBytes(args...); err != nil {
		return c.fail(Reply{Err: err})
	}
	return c.fail(c.Read())
}

// DoAll sends cmds in one pipeline and returns their replies, one each,
// in order, as Do would (a transport error fails the test of a Conn from
// Server.Conn; otherwise it is in the Err of the replies it cost). The
// requests should be small enough to sit in the socket's buffers while the
// server writes its replies (a few hundred commands).
func (c *Conn) DoAll(cmds [][]string) []Reply {
	out := make([]Reply, len(cmds))
	for _, cmd := range cmds {
		if err := c.Send(cmd...); err != nil {
			r := c.fail(Reply{Err: err})
			for i := range out {
				out[i] = r
			}
			return out
		}
	}
	for i := range cmds {
		out[i] = c.fail(c.Read())
	}
	return out
}

func (c *Conn) fail(r Reply) Reply {
	if r.Err != nil && c.t != nil {
		c.t.Helper()
		c.t.Fatalf("harness: %v", r.Err)
	}
	return r
}

// ReadRaw reads one complete reply and returns its exact bytes.
func (c *Conn) ReadRaw() ([]byte, error) {
	r := c.Read()
	return r.Raw, r.Err
}

// Read flushes pending commands, then reads and parses one complete reply
// (an attribute and the reply it precedes count as one). A transport or
// protocol error is returned in Reply.Err, with whatever bytes were read in
// Raw.
func (c *Conn) Read() Reply {
	if err := c.Flush(); err != nil {
		return Reply{Err: err}
	}
	// A peer that already closed may still have left a reply in the buffer
	// (net.Pipe refuses deadlines once either end is closed).
	if err := c.nc.SetReadDeadline(time.Now().Add(c.Timeout)); err != nil && c.br.Buffered() == 0 {
		return Reply{Err: fmt.Errorf("read: %w", err)}
	}
	// A fresh buffer per reply: element Raw slices of earlier replies point
	// into the old one.
	c.raw = make([]byte, 0, 512)
	r, err := c.parse(0)
	raw := c.raw
	if err != nil {
		return Reply{Err: fmt.Errorf("read reply: %w", err), Raw: raw}
	}
	r.Raw = raw
	return r
}

// ReadAll reads until the server closes the connection or until no byte has
// arrived for idle, returning the bytes and whether the connection was closed
// by the peer (EOF or reset).
func (c *Conn) ReadAll(idle time.Duration) (data []byte, closed bool) {
	if err := c.Flush(); err != nil {
		return nil, true
	}
	buf := make([]byte, 32<<10)
	for {
		_ = c.nc.SetReadDeadline(time.Now().Add(idle))
		n, err := c.br.Read(buf)
		data = append(data, buf[:n]...)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return data, false
			}
			return data, true
		}
	}
}

// parse reads one reply; depth guards against absurd nesting.
func (c *Conn) parse(depth int) (Reply, error) {
	if depth > 64 {
		return Reply{}, errors.New("reply nested too deeply")
	}
	start := len(c.raw)
	line, err := c.line()
	if err != nil {
		return Reply{}, err
	}
	if len(line) == 0 {
		return Reply{}, errors.New("empty reply line")
	}
	t, body := line[0], string(line[1:])
	r := Reply{Type: t}
	switch t {
	case '+', '-', ',', '(':
		r.Str = body
	case '#':
		if body != "t" && body != "f" {
			return Reply{}, fmt.Errorf("bad boolean %q", body)
		}
		r.Str = body
	case '_':
		if body != "" {
			return Reply{}, fmt.Errorf("bad null %q", body)
		}
		r.Null = true
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil {
			return Reply{}, fmt.Errorf("bad integer %q", body)
		}
		r.Int, r.Str = n, body
	case '$', '!', '=':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil || n < -1 || n > maxBulk {
			return Reply{}, fmt.Errorf("bad bulk length %q", body)
		}
		if n == -1 {
			if t != '$' {
				return Reply{}, fmt.Errorf("null %q not allowed", t)
			}
			r.Null = true
			break
		}
		data, err := c.bulk(int(n))
		if err != nil {
			return Reply{}, err
		}
		r.Str = string(data)
		if t == '=' {
			if len(r.Str) < 4 || r.Str[3] != ':' {
				return Reply{}, fmt.Errorf("bad verbatim string %q", Trunc(r.Str, 40))
			}
			r.Str = r.Str[4:]
		}
	case '*', '~', '>', '%', '|':
		n, err := strconv.ParseInt(body, 10, 64)
		if err != nil || n < -1 || n > maxElems {
			return Reply{}, fmt.Errorf("bad aggregate length %q", body)
		}
		if n == -1 {
			if t != '*' {
				return Reply{}, fmt.Errorf("null %q not allowed", t)
			}
			r.Null = true
			break
		}
		if t == '%' || t == '|' {
			n *= 2
		}
		r.Elems = make([]Reply, 0, min(n, 1024))
		for i := int64(0); i < n; i++ {
			e, err := c.parse(depth + 1)
			if err != nil {
				return Reply{}, err
			}
			r.Elems = append(r.Elems, e)
		}
		if t == '|' {
			next, err := c.parse(depth + 1)
			if err != nil {
				return Reply{}, err
			}
			attr := r
			attr.Raw = append([]byte(nil), c.raw[start:len(c.raw)-len(next.Raw)]...)
			next.Attr = &attr
			next.Raw = nil
			r = next
		}
	default:
		return Reply{}, fmt.Errorf("unknown reply type %q in line %q", t, Trunc(string(line), 60))
	}
	r.Raw = c.raw[start:len(c.raw):len(c.raw)]
	return r, nil
}

// line reads one CRLF-terminated line, appends it to c.raw and returns it
// without the CRLF.
func (c *Conn) line() ([]byte, error) {
	start := len(c.raw)
	for {
		frag, err := c.br.ReadSlice('\n')
		c.raw = append(c.raw, frag...)
		if err == bufio.ErrBufferFull {
			if len(c.raw)-start > 1<<20 {
				return nil, errors.New("reply line too long")
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		break
	}
	l := c.raw[start:]
	if len(l) < 2 || l[len(l)-2] != '\r' {
		return nil, fmt.Errorf("line not terminated by CRLF: %q", Trunc(string(l), 60))
	}
	return l[:len(l)-2], nil
}

// bulk reads n payload bytes plus CRLF.
func (c *Conn) bulk(n int) ([]byte, error) {
	start := len(c.raw)
	c.raw = append(c.raw, make([]byte, n+2)...)
	if _, err := io.ReadFull(c.br, c.raw[start:]); err != nil {
		return nil, err
	}
	if c.raw[len(c.raw)-2] != '\r' || c.raw[len(c.raw)-1] != '\n' {
		return nil, errors.New("bulk string not terminated by CRLF")
	}
	return c.raw[start : start+n], nil
}
