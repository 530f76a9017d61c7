package server

import (
	"errors"
	"net"
	"os"
	"time"

	"github.com/spillway/spillway/proxy/acl"
	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/repl"
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

// User returns the client's ACL user (upstream mode runs its scripts as
// the user's mirror).
func (c *Conn) User() *acl.User { return c.cl().userOf() }

// ACL returns the server's ACL users.
func (c *Conn) ACL() *acl.Registry { return c.s.acl }

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
// is replaced by the error's: the reply starts where the buffer ends (the
// replies the front appended before it are kept). Its key lookups count
// in keyspace_hits and misses as the command's would (none for a write
// command's).
func (c *Conn) Call(h Handler, args [][]byte) {
	cl := c.cl()
	cl.mark = cl.w.Len()
	cl.stat.evKey = nil // a new command: its first change counts (countChange)
	if cmd := cl.lastCmd.Load(); cmd != nil {
		cl.writeLookups = c.s.info.cmds[cmd.ID()].writeLookups
	}
	cl.call(h, args)
}

// CountLocal records a command the front ran without the server's
// dispatch (upstream mode's local commands) as the server records its own:
// its duration d in the command's latency histogram (latency-tracking) and,
// at or past their thresholds, in the slow log and the latency monitor.
// It returns the slow log entry's ID, or -1 if it made none.
func (c *Conn) CountLocal(cmd *cmdtable.Command, args [][]byte, d time.Duration) int64 {
	cl := c.cl()
	if cl.s.info.latency.Load() {
		cl.s.info.cmds[cmd.ID()].record(d)
	}
	if int64(d) >= cl.s.watchNs.Load() {
		return cl.noteSlow(cmd, args, d)
	}
	return -1
}

// Fail replaces the current command's reply, from where it started, by
// err's: a Redis error (*resp.Error) as is, any other as a failure of the
// store ("ERR ...", logged).
func (c *Conn) Fail(err error) { c.cl().fail(err) }

// ReplyError replaces the current command's reply by a failure of the
// store or of an engine operation: "ERR <err>", logged.
func (c *Conn) ReplyError(err error) { c.cl().replyError(err) }

// Quit closes the connection once the current command's reply is sent.
func (c *Conn) Quit() { c.quit = true }

// BecomeReplica makes the connection a replica's (SYNC, PSYNC): it is
// marked a replica (CLIENT LIST flags=S, a second SYNC ignored) and, as
// with TakeOver, fn then owns its socket (repl.Master.Run closes it).
func (c *Conn) BecomeReplica(fn func(nc net.Conn)) {
	c.cl().replica.Store(true)
	c.TakeOver(fn)
}

// IsMaster reports whether the connection is the master client (a
// replica applying its master's stream): no refusal applies to it.
func (c *Conn) IsMaster() bool { return c.ml != nil }

// ReplHandshake returns what the client told with REPLCONF (the zero value
// if it sent none), and whether the connection is a replica already.
func (c *Conn) ReplHandshake() (h repl.Handshake, isReplica bool) {
	if c.replHS != nil {
		h = *c.replHS
	}
	return h, c.replica.Load()
}

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

// TakeOver hands the client's socket to fn once the current command's
// reply is flushed: the connection's goroutine runs fn, then ends the
// connection (closing the socket) when fn returns. What the client sends
// next is fn's to read from nc (a replication stream relayed verbatim).
func (c *Conn) TakeOver(fn func(nc net.Conn)) {
	cl := c.cl()
	cl.quit = true
	cl.takeover = func() { fn(cl.nc) }
}

// CloseSocket closes the client's socket: the connection's goroutine then
// ends (its next read fails). Any goroutine may call it.
func (c *Conn) CloseSocket() { c.cl().closeSocket() }

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
	cl.startWatch(g, exited)
	return g, func(disconnected bool) {
		if disconnected {
			cl.blocked.Store(false)
			<-exited
			return
		}
		cl.nc.SetReadDeadline(time.Now()) // stops the watcher
		<-exited
		cl.nc.SetReadDeadline(time.Time{})
		cl.in.armed = false
		cl.blocked.Store(false)
	}
}

// idleRelease is how long a client may stay idle before its request
// reader's buffers are freed, as Redis frees the query buffer of a client
// idle for more than 2 seconds (clientsCronResizeQueryBuffer).
const idleRelease = 2 * time.Second

// trimInterval is how often a client drops the big-argument buffers its
// reader kept but did not reuse (as Redis shrinks a query buffer larger
// than its recent peak).
const trimInterval = 250 * time.Millisecond

// inputState is a connection's read deadline, which serves two ends: the
// timeout setting (an idle client is closed, as Redis's maxidletime) and
// the release of an idle client's query buffer. It is set once and moved
// only when it passes, so a busy client pays for it once per idleRelease,
// not per command. Only the client's goroutine uses it.
type inputState struct {
	armed    bool  // a deadline is set, or none is needed
	released bool  // the reader was asked to free its buffers
	inputAt  int64 // unix ms of the input that ended a release
	lastTrim int64 // unix ms of the last TrimSpare
	one      [1]byte
}

// clientInput is what a client's request reader reads: the connection
// (connSource), the deadline handled.
type clientInput struct{ c *Client }

// Read reads the connection. When the deadline passes it closes an idle
// client under the timeout setting (the error is returned), asks the
// reader to free its buffers once the client has been idle for
// idleRelease (resp.ErrWait), or sets the next deadline and reads on.
func (in clientInput) Read(p []byte) (int, error) {
	c := in.c
	for {
		n, err := c.src.Read(p)
		if n > 0 || err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		now := time.Now()
		if c.hasInbox.Load() {
			c.takeInbox() // pushes another client sent (pushAsync)
		}
		if c.timedOut(now) {
			return 0, err
		}
		if !c.in.released && now.Sub(c.idleSince()) >= idleRelease {
			c.in.released = true
			c.in.armed = false
			return 0, resp.ErrWait
		}
		c.armDeadline(now)
	}
}

// idleSince is when the client last sent a command or, after a release,
// input.
func (c *Client) idleSince() time.Time {
	return time.UnixMilli(max(c.lastIO.Load(), c.in.inputAt))
}

// timedOut reports whether the timeout setting closes the client now
// (Pub/Sub subscribers are exempt, as in Redis).
func (c *Client) timedOut(now time.Time) bool {
	t := c.s.cfg.Timeout()
	return t > 0 && !c.subscribed && now.Sub(c.idleSince()) >= t
}

// armDeadline sets the read deadline to the next of the idle release (if
// the reader holds buffers) and the timeout, or clears it.
func (c *Client) armDeadline(now time.Time) {
	var d time.Time
	since := c.idleSince()
	if !c.in.released {
		d = since.Add(idleRelease)
	}
	if t := c.s.cfg.Timeout(); t > 0 && !c.subscribed {
		if td := since.Add(t); d.IsZero() || td.Before(d) {
			d = td
		}
	}
	c.nc.SetReadDeadline(d)
	c.in.armed = true
	if c.hasInbox.Load() {
		c.nc.SetReadDeadline(time.Now()) // pushAsync's wake-up, overwritten
	}
}

// waitInput waits, holding no query buffer, until an idle client sends
// something (kept for the reader) and reports whether it did; false if the
// connection failed or the timeout setting closed it.
func (c *Client) waitInput() bool {
	for {
		c.armDeadline(time.Now())
		n, err := c.src.read(c.in.one[:], true)
		if n > 0 {
			c.src.pending = c.in.one[:n]
			c.in.released, c.in.armed = false, false
			c.in.inputAt = time.Now().UnixMilli()
			return true
		}
		if err == nil {
			continue
		}
		if c.hasInbox.Load() {
			c.takeInbox()
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) || c.timedOut(time.Now()) {
			return false
		}
	}
}

// MonitorLine returns the MONITOR line Redis shows for cmd (args as the
// client sent them) run by this connection's client in its current
// database, secrets redacted, and false for a command Redis hides from
// monitors (admin, skip_monitor). A front relaying another server's
// MONITOR shows the commands it answers itself with it.
func (c *Conn) MonitorLine(cmd *cmdtable.Command, args [][]byte) ([]byte, bool) {
	if cmd.Is(cmdtable.FlagAdmin) || cmd.Is(cmdtable.FlagSkipMonitor) {
		return nil, false
	}
	return c.cl().monitorLine(time.Now(), args), true
}

// AwaitOthers waits, before a blocking command is sent elsewhere, until
// the other clients have run the input they had (bounded, as embedded
// mode's blocking commands wait): a blocking command another client sent
// earlier then blocks first, as in Redis.
func (c *Conn) AwaitOthers() { c.cl().awaitOthers() }
