package server

import (
	"bytes"
	"io"
	"net"
	"sync"
	"time"

	"github.com/spillway/spillway/proxy/cmdtable"
)

// Local is a client without a socket, for in-process use (tests, tools):
// each Do runs one command through exactly the path a connection's command
// takes (Client.execute: lookup, arity, authentication, MULTI queueing,
// CLIENT REPLY, panic recovery, the handler, its commit) and returns the
// bytes the connection would have been sent.
//
// A Local is a client like any other: it is listed by CLIENT LIST (with
// the addresses of localAddr), CLIENT KILL and CLIENT UNBLOCK reach it,
// its protocol is switched by HELLO, and MULTI, WATCH, SELECT and AUTH
// keep their state across its calls. It differs from a connection in
// three ways:
//
//   - A command that would block (BLPOP and the like on keys with nothing
//     to pop) never blocks: it replies at once as inside MULTI/EXEC (a
//     null, or a null bulk for BLMOVE and BRPOPLPUSH). Families not yet
//     moved to the command library reply the timeout's null instead.
//   - SUBSCRIBE, PSUBSCRIBE and SSUBSCRIBE are refused with an error (and
//     fail an open MULTI): a Local has no output queue for messages
//     published later. Pub/Sub needs a connection.
//   - It serves embedded mode only: NewLocal panics on a server in
//     upstream mode.
//
// A Local is not safe for concurrent use: one goroutine calls Do at a
// time, as a connection's goroutine runs its commands one at a time.
type Local struct {
	c      *Client
	conn   *localConn
	closed bool
}

// errLocalClosed is Do's reply once the Local is closed.
var errLocalClosed = []byte("-ERR the in-process client is closed\r\n")

// errLocalSubscribe is Do's reply to SUBSCRIBE and its kin.
const errLocalSubscribe = "ERR Pub/Sub subscriptions are not supported by an in-process client"

// NewLocal returns a new in-process client of s, in RESP2, database 0,
// authenticated unless requirepass is set (AUTH works as on a connection).
// The server does not need to listen. Close it when done.
func (s *Server) NewLocal() *Local {
	if s.fwd != nil {
		panic("server: NewLocal: in-process clients serve embedded mode only")
	}
	nc := &localConn{closed: make(chan struct{})}
	c := newClient(s, nc)
	c.noBlock = true
	s.mu.Lock()
	s.clients[c.id] = c
	s.mu.Unlock()
	return &Local{c: c, conn: nc}
}

// Do runs one command (args[0] is its name) and returns its reply, in the
// client's protocol: the bytes a connection would have been sent for it
// (none under CLIENT REPLY OFF; a queued command's QUEUED; EXEC's whole
// array). The returned slice is the caller's. Writes are durable when Do
// returns (it waits for the sync under appendfsync always, as a
// connection's flush does).
//
// After a command that closes the connection (QUIT, a panic in the
// handler, CLIENT KILL of itself) Do returns that command's reply and the
// Local is closed; Do then replies an error without running anything. If
// the store cannot make the command's writes durable, the reply is
// dropped as a connection's would be, the Local is closed and Do returns
// nil.
func (l *Local) Do(args ...[]byte) []byte {
	c := l.c
	if l.closed || c.killed.Load() {
		l.Close()
		return bytes.Clone(errLocalClosed)
	}
	if len(args) == 0 {
		return nil // a connection ignores an empty request
	}
	if refusedLocally(args[0]) {
		c.mark = c.w.Len()
		c.rejectInMulti(errLocalSubscribe)
		if c.replyMode != replyOn {
			c.w.Truncate(c.mark) // CLIENT REPLY OFF or SKIP drops it too
			if c.replyMode == replySkipNext {
				c.replyMode = replyOn
			}
		}
	} else {
		c.execute(args)
	}
	if err := c.waitPending(); err != nil {
		c.s.log.Error("write not durable; closing in-process client", "client", c.id, "err", err)
		c.w.Reset()
		l.Close()
		return nil
	}
	out := bytes.Clone(c.w.Buf)
	c.w.Reset()
	if c.quit || c.killed.Load() {
		l.Close()
	}
	return out
}

// DoString is Do with string arguments.
func (l *Local) DoString(args ...string) []byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return l.Do(b...)
}

// Proto returns the client's protocol version (2 or 3; HELLO changes it).
func (l *Local) Proto() int { return l.c.w.Proto }

// ID returns the client's id (CLIENT ID).
func (l *Local) ID() int64 { return l.c.id }

// Closed reports whether the Local is closed (Close, QUIT, a panic, a
// kill).
func (l *Local) Closed() bool { return l.closed }

// Close ends the client as a closed connection ends: its WATCHed keys are
// forgotten and it leaves the client list. Closing twice does nothing.
func (l *Local) Close() {
	if l.closed {
		return
	}
	l.closed = true
	c := l.c
	c.endPubSub()
	c.unwatchAll()
	c.markGone()
	c.endTracking()
	c.nc.Close()
	c.s.mu.Lock()
	delete(c.s.clients, c.id)
	c.s.mu.Unlock()
}

// refusedLocally reports whether name is a command a Local refuses
// (subscriptions, which need an output queue of their own).
func refusedLocally(name []byte) bool {
	cmd := cmdtable.Lookup(name)
	if cmd == nil {
		return false
	}
	switch cmd.Name {
	case "subscribe", "psubscribe", "ssubscribe":
		return true
	}
	return false
}

// localAddr is the address a Local's connection reports on both ends.
var localAddr = &net.UnixAddr{Name: "in-process", Net: "unix"}

// localConn is a Local's stand-in connection: it gives CLIENT LIST and
// CLIENT KILL what they read of a connection. Nothing is read from it (a
// Read waits until it is closed) and what is written to it is dropped:
// a Local takes its replies from the client's buffer.
type localConn struct {
	once   sync.Once
	closed chan struct{}
}

func (lc *localConn) Read([]byte) (int, error) {
	<-lc.closed
	return 0, io.EOF
}

func (lc *localConn) Write(b []byte) (int, error) {
	select {
	case <-lc.closed:
		return 0, net.ErrClosed
	default:
		return len(b), nil
	}
}

func (lc *localConn) Close() error {
	lc.once.Do(func() { close(lc.closed) })
	return nil
}

func (lc *localConn) LocalAddr() net.Addr              { return localAddr }
func (lc *localConn) RemoteAddr() net.Addr             { return localAddr }
func (lc *localConn) SetDeadline(time.Time) error      { return nil }
func (lc *localConn) SetReadDeadline(time.Time) error  { return nil }
func (lc *localConn) SetWriteDeadline(time.Time) error { return nil }

var _ net.Conn = (*localConn)(nil)
