package server

import (
	"time"

	"github.com/spillway/spillway/proxy/resp"
)

// Conn is a client connection as a forwarding front sees it (see
// Forwarder): the per-client state both fronts share, which the server
// owns (socket, reply buffer, selected database, statistics), through a
// few methods. It is the same connection as the server's Client, typed
// apart so that a front reaches only what it is given here.
//
// Unless a method says otherwise, it may be called only from the
// connection's goroutine (the one that calls the ForwardConn's hooks).
type Conn Client

func (c *Conn) cl() *Client { return (*Client)(c) }

// ID returns the client's id (CLIENT ID).
func (c *Conn) ID() int64 { return c.id }

// W returns the client's reply buffer, in its protocol (W().Proto). What a
// front appends there is sent by the server when it flushes.
func (c *Conn) W() *resp.Writer { return &c.w }

// DB returns the client's selected database.
func (c *Conn) DB() int { return c.db }

// SetDB selects db for the client (as SELECT; CLIENT LIST shows it).
func (c *Conn) SetDB(db int) {
	c.db = db
	c.dbShown.Store(int32(db))
}

// Err appends the error reply msg and counts it (INFO's error replies).
func (c *Conn) Err(msg string) { c.cl().err(msg) }

// CountErrorReply counts an error reply the front wrote elsewhere than W.
// Any goroutine may call it.
func (c *Conn) CountErrorReply() { c.s.stats.errorReplies.Add(1) }

// Call runs one of the server's handlers (Server.Handler) for the client's
// current command, as the server would: on an error, the command's reply
// is replaced by the error's.
func (c *Conn) Call(h Handler, args [][]byte) { c.cl().call(h, args) }

// Fail replaces the current command's reply, from where it started, by
// err's: a Redis error (*resp.Error) as is, any other as a failure of the
// store ("ERR ...", logged).
func (c *Conn) Fail(err error) { c.cl().fail(err) }

// ReplyError replaces the current command's reply by a failure of the
// store or of an engine operation: "ERR <err>", logged.
func (c *Conn) ReplyError(err error) { c.cl().replyError(err) }

// Quit closes the connection once the current command's reply is sent.
func (c *Conn) Quit() { c.quit = true }

// TryWriteSocket writes what the client's socket takes of b now, without
// blocking, and returns how much; 0 and no error when the connection has
// no non-blocking writes (the caller then writes with WriteSocket). Any
// goroutine may call it while the connection's goroutine does not write.
func (c *Conn) TryWriteSocket(b []byte) (int, error) {
	if c.raw == nil {
		return 0, nil
	}
	return c.raw.TryWrite(b)
}

// WriteSocket writes b to the client's socket, blocking. Any goroutine may
// call it while no other writes the socket (see ForwardConn.WriteLock).
func (c *Conn) WriteSocket(b []byte) (int, error) { return c.nc.Write(b) }

// AddNetOut counts n bytes written to the client by the front (INFO's
// total_net_output_bytes). Any goroutine may call it.
func (c *Conn) AddNetOut(n int64) { c.s.stats.netOut.Add(n) }

// CloseSocket closes the client's socket: the connection's goroutine then
// ends (its next read fails). Any goroutine may call it.
func (c *Conn) CloseSocket() { c.nc.Close() }

// Block marks the client blocked (CLIENT LIST) while the front waits for
// a blocking command's reply elsewhere, and watches its socket meanwhile:
// what the client sends is kept for after, and gone is closed if the
// client disconnects. unblock ends the wait (stops watching, clears the
// mark): call it once, with disconnected true if the wait ended because
// gone was closed.
func (c *Conn) Block() (gone <-chan struct{}, unblock func(disconnected bool)) {
	cl := c.cl()
	g, exited := make(chan struct{}), make(chan struct{})
	cl.blocked.Store(true)
	cl.nc.SetReadDeadline(time.Time{})
	go cl.watchConn(g, exited)
	return g, func(disconnected bool) {
		if disconnected {
			cl.blocked.Store(false)
			<-exited
			return
		}
		cl.nc.SetReadDeadline(time.Now()) // stops the watcher
		<-exited
		cl.nc.SetReadDeadline(time.Time{})
		cl.blocked.Store(false)
	}
}
