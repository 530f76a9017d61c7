// Package link talks to the Redis that Spillway fronts in upstream mode,
// byte by byte: connections and their handshake, a pool of shared
// pipelined connections that many clients multiplex onto, dedicated
// connections for clients that need connection state, the payloads that
// reload cold keys (RESTORE), and the commands the demotion policy
// (tiering/uptier) issues. It moves bytes; which keys are cold and which to
// demote is tiering/uptier's, and what a client's command does in upstream
// mode is the front's (proxy/upstream).
package link

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/tiering/uptier"
)

// Target says where the upstream is and how to log in.
type Target struct {
	Addr     string
	Username string
	Password string
	DB       int
	// TLS, when set, makes every connection TLS with the configuration it
	// returns at dial time (nil: not configured, the dial fails), so that
	// reloaded certificates apply to new connections.
	TLS func() *tls.Config
}

// ErrUnavailable wraps every error caused by an unreachable upstream. It is
// uptier.ErrUnavailable, so that the demotion policy tells a lost
// connection from a refusal.
var ErrUnavailable = uptier.ErrUnavailable

// ErrClusterUpstream is the error of a connection to a Redis Cluster node
// that Spillway may not front: one that does not announce Spillway's
// address (Options.AcceptCluster decides). Its -MOVED and -ASK
// redirections and CLUSTER SLOTS would hand clients the upstream's own
// address, and they would then bypass Spillway and its cold keys.
var ErrClusterUpstream = errors.New("the upstream runs in cluster mode (cluster_enabled:1) " +
	"and does not announce this Spillway's address")

// lost wraps a connection's I/O error as ErrUnavailable.
func lost(err error) error { return fmt.Errorf("%w: %v", ErrUnavailable, err) }

// Conn is one upstream connection used by one goroutine at a time:
// requests are buffered by Send and written by Flush; replies are read in
// order by Read. It is what pinned clients, blocking commands and the
// demoter use; shared traffic goes through Mux.
type Conn struct {
	nc      net.Conn
	bw      *bufio.Writer
	rd      *resp.ReplyReader
	Proto   int
	DB      int
	scratch []byte
	onClose func() // run once by Close (Pool.DialInternal)
	// answered: the upstream has replied on the connection (its
	// handshake sent a command), so it has accepted it (awaitAccepted).
	answered bool
	// live is the pool's set of open connections this one is in (with
	// Sentinel: a failover closes them); Close removes it.
	live *sync.Map
}

// Dial connects and logs in: HELLO proto with AUTH when credentials are
// set (AUTH alone for RESP2 against servers without HELLO), then SELECT
// db when db is not 0.
func Dial(t Target, proto, db int, timeout time.Duration) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", t.Addr, timeout)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, t.Addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	nc.SetDeadline(time.Now().Add(timeout))
	if t.TLS != nil {
		cfg := t.TLS()
		if cfg == nil {
			nc.Close()
			return nil, fmt.Errorf("%w: %s: TLS is not configured", ErrUnavailable, t.Addr)
		}
		tc := tls.Client(nc, cfg)
		if err := tc.Handshake(); err != nil {
			nc.Close()
			return nil, fmt.Errorf("%w: %s: TLS handshake: %v", ErrUnavailable, t.Addr, err)
		}
		nc = tc
	}
	c := newConn(nc, proto)
	c.DB = db
	if err := c.handshake(t, proto, db); err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	return c, nil
}

func newConn(nc net.Conn, proto int) *Conn {
	return &Conn{nc: nc, bw: bufio.NewWriterSize(nc, 16<<10), rd: resp.NewReplyReader(nc), Proto: proto}
}

func (c *Conn) handshake(t Target, proto, db int) error {
	user := t.Username
	if user == "" {
		user = "default"
	}
	n := 0
	if proto == 3 {
		if t.Password != "" {
			c.Send("HELLO", "3", "AUTH", user, t.Password)
		} else {
			c.Send("HELLO", "3")
		}
		n++
	} else if t.Password != "" {
		if t.Username != "" {
			c.Send("AUTH", t.Username, t.Password)
		} else {
			c.Send("AUTH", t.Password)
		}
		n++
	}
	if db != 0 {
		c.Send("SELECT", strconv.Itoa(db))
		n++
	}
	if n == 0 {
		return nil
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, t.Addr, err)
	}
	c.answered = true
	for i := 0; i < n; i++ {
		r, err := c.Read()
		if err != nil {
			return fmt.Errorf("%w: %s: handshake: %v", ErrUnavailable, t.Addr, err)
		}
		if len(r) > 0 && (r[0] == '-' || r[0] == '!') {
			return fmt.Errorf("upstream %s refused the handshake: %s", t.Addr, ReplyText(r))
		}
	}
	return nil
}

// acceptProbe is the command awaitAccepted sends: a PING whose argument
// names it, so that a client's MONITOR relayed from the upstream can
// leave its line out (IsAcceptProbe).
var acceptProbe = []string{"PING", "spillway:accepted"}

// acceptProbeLine ends the upstream's MONITOR line of acceptProbe.
var acceptProbeLine = []byte(`] "PING" "spillway:accepted"` + "\r\n")

// IsAcceptProbe reports whether r, a line of the upstream's MONITOR, shows
// a connection's acceptProbe.
func IsAcceptProbe(r []byte) bool { return bytes.HasSuffix(r, acceptProbeLine) }

// awaitAccepted makes sure the upstream has accepted c (its event loop
// reads it) before c carries a client's command, with one PING when the
// handshake sent nothing (RESP2, database 0, no password). Redis reads the
// sockets that became readable in the order they did, except that it only
// watches a socket once it has accepted it: a blocking command sent on a
// connection it has not accepted yet is read after one sent later on a
// connection it has, and the client that blocked second is served first.
// The round trip is bounded by timeout.
func (c *Conn) awaitAccepted(t Target, timeout time.Duration) error {
	if c.answered {
		return nil
	}
	c.SetDeadline(time.Now().Add(timeout))
	// Any reply will do: an error (NOAUTH from an upstream that wants a
	// password none was given for) is for the client's commands to meet.
	if _, err := c.Do(acceptProbe...); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, t.Addr, err)
	}
	c.answered = true
	return c.SetDeadline(time.Time{})
}

// checkStandalone returns ErrClusterUpstream if c's server is a Redis
// Cluster node (INFO cluster says cluster_enabled:1), unless accept (the
// pool's Options.AcceptCluster) is set and returns nil for it. An error
// reply (NOAUTH without a password) says nothing and is left for the
// clients' commands to meet. The pool checks its shared connections, at
// start and on every reconnection; dedicated connections are not checked
// (each check is a command every MONITOR of the upstream would show).
func checkStandalone(c *Conn, addr string, accept func(*Conn) error) error {
	r, err := c.Do("INFO", "cluster")
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, addr, err)
	}
	if bytes.Contains(r, []byte("cluster_enabled:1")) {
		if accept != nil {
			return accept(c)
		}
		return fmt.Errorf("%w: %s", ErrClusterUpstream, addr)
	}
	return nil
}

// LocalAddr is the connection's local address: the addr= by which the
// upstream's CLIENT LIST names it.
func (c *Conn) LocalAddr() string { return c.nc.LocalAddr().String() }

// Send buffers one command.
func (c *Conn) Send(args ...string) {
	c.scratch = AppendCommandStrings(c.scratch[:0], args)
	c.bw.Write(c.scratch)
}

// SendArgs buffers one command given as byte slices.
func (c *Conn) SendArgs(args [][]byte) {
	c.scratch = AppendCommand(c.scratch[:0], args)
	c.bw.Write(c.scratch)
}

// WriteRaw buffers already encoded requests.
func (c *Conn) WriteRaw(b []byte) { c.bw.Write(b) }

// Flush writes the buffered requests.
func (c *Conn) Flush() error { return c.bw.Flush() }

// Read returns the next reply frame, valid until the next Read.
func (c *Conn) Read() ([]byte, error) { return c.rd.Read() }

// Do sends one command and returns its reply (valid until the next Read).
func (c *Conn) Do(args ...string) ([]byte, error) {
	c.Send(args...)
	if err := c.Flush(); err != nil {
		return nil, err
	}
	return c.Read()
}

// NetConn returns the connection's socket, for a caller that takes it over
// as a byte stream (a replication link, a stream relayed verbatim). Call it
// only when no reply is pending: bytes the reply reader buffered are not in
// it. The Conn's own methods must not be used afterwards, except Close.
func (c *Conn) NetConn() net.Conn { return c.nc }

// SetDeadline bounds the connection's I/O.
func (c *Conn) SetDeadline(t time.Time) error { return c.nc.SetDeadline(t) }

// Close closes the connection.
func (c *Conn) Close() error {
	if f := c.onClose; f != nil {
		c.onClose = nil
		f()
	}
	if c.live != nil {
		c.live.Delete(c)
	}
	return c.nc.Close()
}

// AppendCommand appends args as a RESP array of bulk strings.
func AppendCommand(dst []byte, args [][]byte) []byte { return appendCommand(dst, args) }

// AppendCommandStrings is AppendCommand for string arguments.
func AppendCommandStrings(dst []byte, args []string) []byte { return appendCommand(dst, args) }

func appendCommand[T string | []byte](dst []byte, args []T) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// ReplyText returns a simple, error or bulk reply's payload as text (for
// logs and errors); other frames are returned as they are.
func ReplyText(r []byte) string {
	if len(r) < 3 {
		return string(r)
	}
	switch r[0] {
	case '+', '-', ':', '!', ',', '#', '(':
		if r[0] == '!' {
			return string(BulkPayload(r))
		}
		return string(r[1 : len(r)-2])
	case '$', '=':
		return string(BulkPayload(r))
	}
	return string(r)
}

// BulkPayload returns a bulk ('$', '=', '!') frame's payload, nil for a
// null or another frame.
func BulkPayload(r []byte) []byte {
	if len(r) < 4 || (r[0] != '$' && r[0] != '=' && r[0] != '!') {
		return nil
	}
	i := 1
	for i < len(r) && r[i] != '\r' {
		i++
	}
	n, err := strconv.Atoi(string(r[1:i]))
	if err != nil || n < 0 || n > len(r)-i-2 {
		return nil
	}
	return r[i+2 : i+2+n]
}

// IntReply parses an integer (':') frame.
func IntReply(r []byte) (int64, bool) {
	if len(r) < 4 || r[0] != ':' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(r[1:len(r)-2]), 10, 64)
	return n, err == nil
}

// IsError reports whether r is an error frame.
func IsError(r []byte) bool { return len(r) > 0 && (r[0] == '-' || r[0] == '!') }
