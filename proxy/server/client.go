package server

import (
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/coldstore"
	"github.com/spillway/spillway/proxy/acl"
	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/rawio"
	"github.com/spillway/spillway/proxy/repl"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/tracking"
	"github.com/spillway/spillway/tiering"
)

// replyMode is CLIENT REPLY's state.
type replyMode uint8

const (
	replyOn replyMode = iota
	replyOff
	replySkipNext // skip the next command's reply
	replySkipThis // skipping the current command's reply
)

// flushThreshold is how many reply bytes are buffered before a write even
// when more pipelined commands wait.
const flushThreshold = 64 << 10

// Client is one connection's state. Only its own goroutine touches the
// unexported fields below mu; CLIENT LIST/KILL read the rest under mu.
type Client struct {
	s  *Server
	id int64
	nc net.Conn
	// raw does nc's reads and writes with raw system calls (nil: use nc).
	raw *rawio.Conn
	// src feeds rd: the socket, after what arrived while blocked.
	src *connSource
	rd  *resp.Reader
	// in is the state of the reads' deadline (conn.go).
	in inputState
	w  resp.Writer

	db int
	// authed: the client may run commands (authenticated, or the default
	// user needed no password when it connected or last RESET).
	authed    bool
	replyMode replyMode
	// pending is the latest write awaiting a WAL sync (appendfsync always);
	// waiting on it covers every earlier one.
	pending coldstore.Pending
	// mark is where the current command's reply starts in w.Buf.
	mark int
	// ctx is the context handlers get (ctx.go); reset for each command.
	ctx Ctx
	// txID is the last transaction this client began (see begin).
	txID uint64
	// group is the transaction a MULTI/EXEC or a script holds across its
	// commands (nil otherwise): begin returns it and commit leaves it open.
	group *tiering.Tx
	// groupErr is the storage error that failed the group (it is aborted).
	groupErr error
	// groupMark is where the group's reply starts in w.Buf.
	groupMark int
	// afterUnlock holds what the client's commands asked to run once its
	// hold of the engine's lock ends (Ctx.AfterUnlock).
	afterUnlock []func()
	// multi is MULTI's queue and WATCH's keys (multi.go).
	multi multiState
	// preOOM is the server's out-of-memory state when the current command
	// started (scripts' calls read it: scriptHost.OutOfMemory).
	preOOM bool
	// fwd is the forwarding front's state of the connection (nil in
	// embedded mode; see Forwarder).
	fwd  ForwardConn
	quit bool
	// stat is the client's share of the command statistics (info.go).
	stat clientStat
	// out is the output queue of a client that has subscribed to Pub/Sub
	// (pushout.go): once set, flush hands replies to it instead of
	// writing the socket. nil for every other client.
	out *pushOut
	// noBlock: a blocking command never blocks this client; it replies at
	// once as inside MULTI/EXEC (an in-process client, local.go).
	noBlock bool
	// subscribed: the client subscribes to a channel, pattern or shard
	// channel (Redis's CLIENT_PUBSUB flag).
	subscribed bool
	// writeLookups: the running command writes, so its key lookups do not
	// count in keyspace_hits/misses (tiering.Tx.CountLookups).
	writeLookups bool
	// trk is the client's tracking state (CLIENT TRACKING; notify.go);
	// trkCmd and trkArgs are the running command while tracking is on,
	// whose keys a read remembers; trkPending are the invalidations for
	// this client made during its command, sent after its reply (nil
	// entry: all keys, a flush).
	trk            *tracking.Client
	trkCmd         *cmdtable.Command
	trkArgs        [][]byte
	trkPending     [][]byte
	trkPendingNull bool
	// pushMu guards what other goroutines use to send the client pushes
	// (pushAsync): pushQ, its output queue once it has one, else inbox,
	// the pushes waiting for one (hasInbox: not empty), and gone, set
	// once the client is closing (no one may push to it any more).
	pushMu   sync.Mutex
	pushQ    *pushOut
	inbox    []byte
	gone     bool
	hasInbox atomic.Bool
	// prop is the running command's propagation state and woff the
	// stream offset after the client's last propagated write (WAIT's
	// target; commit.go).
	prop propCmd
	woff int64
	// takeover, set by SYNC/PSYNC with quit, runs the connection as a
	// replica once the reply is flushed (cmd_server.go).
	takeover func()
	// replHS is what REPLCONF told (nil until it is sent).
	replHS *repl.Handshake
	// ml is set on the master client only (commit.go): the command of
	// the master's stream it runs.
	ml *masterLink
	// fwdTxWrites: upstream mode's front queued a command that may write
	// in the client's MULTI (dispatch).
	fwdTxWrites bool
	// run holds the engine's lock across a pipeline's commands (commit.go);
	// inRun: the running command joins it; pipelined: the running command
	// was in the input before the previous one's replies were flushed;
	// runMark: where the run's replies start in w.Buf.
	run       tiering.Run
	inRun     bool
	pipelined bool
	runMark   int

	mu      sync.Mutex
	name    string
	libName string
	libVer  string
	// user is the ACL user the client is authenticated as (guarded by
	// mu; only the client's goroutine changes it).
	user *acl.User
	// aclOn: user's rules restrict something, so dispatch checks each
	// command against them; with unrestricted rules (the default user's)
	// the check costs this one load. Kept current by Server.refreshACL.
	aclOn atomic.Bool
	// lastCmd is the latest command's table entry (CLIENT LIST's cmd=),
	// stored without the lock: it is written on every command.
	lastCmd atomic.Pointer[cmdtable.Command]
	created time.Time
	// coldBufs are the buffers of this client's lock-free cold reads.
	coldBufs tiering.ColdBuffers
	lastIO   atomic.Int64 // unix ms of the last command
	killed   atomic.Bool
	blocked  atomic.Bool // waiting in a blocking pop or for a pause to end
	fresh    atomic.Bool // accepted lately, its first commands not done (freshClients)
	// freshLeft counts the commands left before a fresh client is not
	// (the client's goroutine only).
	freshLeft int
	// deferring: the client waits for fresh clients before a write
	// (awaitFresh); deferLast: with no more input read (nothing blocking
	// of its can follow the write: other writers need not wait for it).
	deferring, deferLast atomic.Bool
	// monitoring: the client is in MONITOR mode (monitor.go).
	monitoring atomic.Bool
	dbShown    atomic.Int32
	protoVer   atomic.Int32

	// nSub, nPSub and nSSub count the client's channels, patterns and
	// shard channels (CLIENT LIST's sub=, psub=, ssub=); only the
	// client's goroutine changes them.
	nSub, nPSub, nSSub atomic.Int32
	// multiLen is 1 + the number of commands MULTI queued, 0 outside MULTI
	// (CLIENT LIST's multi=, which is -1 then).
	multiLen atomic.Int32
	// multiMem is the memory of MULTI's queue as Redis counts it
	// (CLIENT LIST's multi-mem): argument bytes plus a pointer each.
	multiMem atomic.Int64
	// qbufUsed and qbufFree are the query buffer's use as of the client's
	// last wait for input (CLIENT LIST's qbuf and qbuf-free of others).
	qbufUsed, qbufFree atomic.Int32
	// noEvict is CLIENT NO-EVICT's state (CLIENT LIST's e flag).
	noEvict atomic.Bool
	// replica: the connection is an attached replica (CLIENT LIST's S
	// flag, type replica).
	replica atomic.Bool
}

func newClient(s *Server, nc net.Conn) *Client {
	raw := rawio.NewHeld(nc)
	src := newConnSource(nc, raw)
	src.in = &s.stats.netIn
	c := &Client{
		s:       s,
		raw:     raw,
		id:      s.nextID.Add(1),
		nc:      nc,
		src:     src,
		created: time.Now(),
		user:    s.acl.Default(),
	}
	c.trk = tracking.NewClient(c.id)
	c.rd = resp.NewReader(clientInput{c}, 16<<10)
	c.w.Proto = 2
	c.protoVer.Store(2)
	c.authed = defaultNeedsNoAuth(s.acl)
	c.aclOn.Store(!c.user.Rules().Unrestricted())
	if s.fwd != nil {
		c.db = s.fwd.DefaultDB()
		c.dbShown.Store(int32(c.db))
		c.fwd = s.fwd.NewConn((*Conn)(c))
	}
	c.applyLimits()
	c.publishQueryBuf()
	c.lastIO.Store(time.Now().UnixMilli())
	return c
}

// applyLimits sets the request parser's limits for the client's state.
func (c *Client) applyLimits() {
	c.rd.SetLimits(resp.Limits{
		MaxBulkLen:      c.s.cfg.ProtoMaxBulkLen(),
		Unauthenticated: !c.authed,
	})
}

// serve runs the connection until it is closed.
func (c *Client) serve() {
	defer c.nc.Close()
	defer c.releaseRead() // before the close, which waits for it
	if c.fwd != nil {
		defer c.fwd.Close()
	}
	defer c.waitPending()
	defer c.endPubSub()
	defer c.stopMonitor() // before its output queue closes
	defer c.markGone()    // first: nothing is pushed to a closing client
	defer c.s.fresh.end(c)
	defer c.endRun() // first of all: the lock is released
	for {
		if !c.in.armed {
			c.armDeadline(time.Now()) // conn.go: idle release and timeout
		}
		args, err := c.rd.ReadCommand()
		if err != nil {
			c.endRun() // nothing more to run: no write or wait under the lock
		}
		if errors.Is(err, resp.ErrWait) {
			// Idle: the reader freed its buffers; wait without them.
			c.publishQueryBuf()
			if !c.waitInput() {
				return
			}
			continue
		}
		if err != nil {
			var pe *resp.ProtocolError
			if errors.As(err, &pe) {
				c.s.log.Debug("protocol error", "client", c.id, "addr", c.nc.RemoteAddr().String(), "err", pe.Error())
				c.w.Error(pe.Error())
				c.flush()
			} else if !errors.Is(err, io.EOF) && !c.killed.Load() && !c.s.closing.Load() {
				c.s.log.Debug("connection read failed", "client", c.id, "err", err)
			}
			return
		}
		c.execute(args)
		c.noteRan()
		if c.fresh.Load() {
			if c.freshLeft--; c.freshLeft <= 0 {
				c.s.fresh.end(c)
			}
		}
		if c.quit || c.killed.Load() {
			c.endRun()
			c.markGone() // tracking redirected here is broken from now
			c.flush()
			if fn := c.takeover; fn != nil && !c.killed.Load() {
				c.takeover = nil
				c.releaseRead() // fn reads the socket
				fn()
			}
			return
		}
		// A client with an output queue hands over every command's reply
		// at once, so messages delivered meanwhile keep their place.
		if c.out != nil || c.w.Len() >= flushThreshold || !c.rd.Ready() {
			c.pipelined = false
			if !c.endRun() {
				c.flush() // the replies before the run
				return
			}
			if now := c.lastIO.Load(); now-c.in.lastTrim >= trimInterval.Milliseconds() {
				c.rd.TrimSpare()
				c.in.lastTrim = now
			}
			c.publishQueryBuf()
			if !c.flush() {
				return
			}
			continue
		}
		// The next command is in the input already: it may join the run,
		// unless the run is long enough to let the other clients in.
		c.pipelined = true
		if _, n := c.run.Held(); n >= maxRun && !c.endRun() {
			c.flush()
			return
		}
	}
}

// noteRan records, when nothing more is read, that the client has run all
// it read: until it reads again it only sends its replies (or forwards its
// batch) (inputPending's replying).
func (c *Client) noteRan() {
	if c.src.raw != nil && c.rd.Buffered() == 0 && len(c.src.pending) == 0 {
		r, _ := c.src.raw.ReadState()
		c.src.ran.Store(r)
	}
}

// waitPending waits until this client's writes are durable.
func (c *Client) waitPending() error {
	p := c.pending
	c.pending = coldstore.Pending{}
	return p.Wait()
}

// flush makes the buffered writes durable (appendfsync always) and sends the
// buffered replies (a client with an output queue hands them to it). If the
// store cannot sync, the replies are not sent and the connection is closed:
// nothing unsynced is acknowledged.
func (c *Client) flush() bool {
	if f := c.fwd; f != nil {
		if done, ok := f.Flush(c.w.Len() == 0 && c.replyMode == replyOn && c.pending.IsZero()); done || !ok {
			return ok
		}
	}
	if err := c.waitPending(); err != nil {
		c.s.log.Error("write not durable; closing client", "client", c.id, "err", err)
		c.w.Reset()
		return false
	}
	if c.out != nil {
		return c.out.put(&c.w)
	}
	if c.w.Len() == 0 {
		return true
	}
	if c.fwd != nil {
		if mu := c.fwd.WriteLock(); mu != nil {
			mu.Lock()
			defer mu.Unlock()
		}
	}
	var n int
	var err error
	if c.raw != nil {
		n, err = c.raw.Write(c.w.Buf)
	} else {
		n, err = c.nc.Write(c.w.Buf)
	}
	c.s.stats.netOut.Add(int64(n))
	if cap(c.w.Buf) > 1<<20 {
		c.w.Buf = nil
	} else {
		c.w.Reset()
	}
	return err == nil
}

// kill closes the connection from another goroutine (CLIENT KILL). It is
// gone at once for tracking: a client redirecting to it finds its
// redirection broken, as after Redis's CLIENT KILL.
func (c *Client) kill() {
	c.killed.Store(true)
	c.markGone()
	c.closeSocket()
}

// closeSocket closes the connection from another goroutine without
// waiting for the client's goroutine: the socket is shut down at once
// (the peer sees it closed, the client's next read ends), and closed by a
// goroutine of its own, which waits for the client's open read to end
// (rawio.Conn.Read).
func (c *Client) closeSocket() {
	if c.raw == nil {
		c.nc.Close()
		return
	}
	c.raw.Shutdown()
	go c.nc.Close()
}

// releaseRead ends the client's open read (rawio.Conn.Release), before
// anything else reads its socket or the socket closes (the client's
// goroutine).
func (c *Client) releaseRead() {
	if c.raw != nil {
		c.raw.Release()
	}
}

// postponeIfPaused waits while CLIENT PAUSE holds the command about to run
// (mayWrite: it may write or replicate), as Redis postpones the client:
// the replies before it are sent first, the client counts as blocked
// (CLIENT LIST's b flag, INFO's blocked_clients), and a client that
// disconnects meanwhile never runs the command. It reports false if the
// connection is gone. Monitors are never paused, as in Redis.
func (c *Client) postponeIfPaused(mayWrite bool) bool {
	ended, ok := c.s.pausedFor(mayWrite)
	if !ok || c.monitoring.Load() {
		return true
	}
	if !c.flush() {
		return false
	}
	c.mark = c.w.Len()
	c.blocked.Store(true)
	c.s.postponed.Add(1)
	defer func() {
		c.s.postponed.Add(-1)
		c.blocked.Store(false)
	}()
	var gone chan struct{}
	if !c.noBlock {
		g, exited := make(chan struct{}), make(chan struct{})
		gone = g
		c.startWatch(g, exited)
		defer func() {
			c.nc.SetReadDeadline(time.Now()) // stops the watcher
			<-exited
			c.nc.SetReadDeadline(time.Time{})
			c.in.armed = false
		}()
	}
	for ok {
		select {
		case <-ended:
		case <-gone:
			c.quit = true
			return false
		}
		ended, ok = c.s.pausedFor(mayWrite)
	}
	return true
}

// mayWrite reports whether a command may write or replicate, as Redis's
// processCommand decides for CLIENT PAUSE WRITE: the command's write and
// may_replicate flags, a script's or function's declared flags for EVAL,
// EVALSHA and FCALL (getCommandFlags), and for EXEC those of the commands
// queued. In upstream mode an EVALSHA or FCALL of a script Spillway has
// not seen is taken as not writing.
func (c *Client) mayWrite(cmd *cmdtable.Command, args [][]byte) bool {
	if cmd.Name == "exec" && c.fwd != nil {
		return c.fwdTxWrites
	}
	if cmd.Name == "exec" && c.multi.active {
		for _, q := range c.multi.queue {
			if c.mayWrite(q.cmd, q.args) {
				return true
			}
		}
		return false
	}
	if isScriptCall(cmd) {
		if declared, w := c.s.scripts.DeclaredWrites(args); declared {
			return w
		}
		if c.fwd != nil && cmd.Name != "eval" {
			// Upstream mode: the upstream holds the scripts and functions,
			// whose flags Spillway does not know; it does not hold them.
			return false
		}
	}
	return cmd.Is(cmdtable.FlagWrite) || cmd.MayReplicate()
}

// publishQueryBuf records the query buffer's use for CLIENT LIST.
func (c *Client) publishQueryBuf() {
	used, free := c.rd.QueryBuf()
	c.qbufUsed.Store(int32(used))
	c.qbufFree.Store(int32(free))
}

// keepExpiredIfReading keeps the expired keys the current command meets
// while clients are paused, as Redis does, if the command writes nothing
// (a write deletes them as usual: it cannot run under PAUSE WRITE unless
// it was already running, and a write over a kept key would be wrong).
func (c *Client) keepExpiredIfReading(tx *tiering.Tx) {
	if cmd := c.lastCmd.Load(); cmd != nil && !cmd.Is(cmdtable.FlagWrite) && !cmd.MayReplicate() {
		tx.KeepExpired()
	}
}

// defaultNeedsNoAuth reports whether a new (or RESET) connection is
// authenticated as the default user without AUTH: it is on and nopass.
func defaultNeedsNoAuth(r *acl.Registry) bool {
	rules := r.Default().Rules()
	return rules.NoPass() && rules.Enabled()
}

// userOf returns the client's ACL user.
func (c *Client) userOf() *acl.User {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.user
}

// setUser makes u the client's user: authenticated (AUTH, HELLO) or back
// to the default user (RESET, with authenticated telling whether it needs
// no password).
func (c *Client) setUser(u *acl.User, authenticated bool) {
	c.mu.Lock()
	c.user = u
	c.mu.Unlock()
	c.aclOn.Store(!u.Rules().Unrestricted())
	if c.authed != authenticated {
		c.authed = authenticated
		c.applyLimits()
	}
}

// refreshACL follows a change of u's rules on its clients: their check
// flag, and, when the change takes channels away (old: the rules before),
// the Pub/Sub clients subscribed to one of them are disconnected, as
// Redis's ACLKillPubsubClientsIfNeeded. Killing the caller (self) closes
// it after its reply.
func (s *Server) refreshACL(self *Client, u *acl.User, old *acl.Rules) {
	rules := u.Rules()
	var revoked func([]byte, bool) bool
	if old != nil {
		revoked = rules.ChannelCheck(old)
	}
	for _, cl := range s.clientList() {
		if cl.userOf() != u {
			continue
		}
		cl.aclOn.Store(!rules.Unrestricted())
		// cl.out is set before the subscription counters clientType reads.
		if revoked != nil && cl.clientType() == "pubsub" {
			if q := cl.out; q != nil && s.pubsub.AnyOf(q, revoked) {
				self.killClient(cl)
			}
		}
	}
}

// dropUsers disconnects the clients of deleted users (ACL DELUSER, ACL
// LOAD); the caller itself is closed after its reply. Until its
// connection ends (after the command it may be running), a client keeps
// the deleted user's rules: it never gains the default user's.
func (s *Server) dropUsers(self *Client, gone []*acl.User) {
	for _, cl := range s.clientList() {
		u := cl.userOf()
		for _, g := range gone {
			if u == g {
				self.killClient(cl)
			}
		}
	}
}

// permitted checks a command against the client's ACL rules (dispatch
// calls it when aclOn is set). A refused command is logged (ACL LOG),
// answered with Redis's NOPERM error and fails an open MULTI.
func (c *Client) permitted(cmd *cmdtable.Command, args [][]byte) bool {
	reason, pos := c.userOf().Rules().Check(cmd, args)
	if reason == acl.OK {
		return true
	}
	ctx := acl.CtxTopLevel
	if c.multi.active {
		ctx = acl.CtxMulti
	}
	c.lastCmd.Store(cmd) // the entry's client line names it, as Redis's
	c.logDenial(c, reason, ctx, denialObject(reason, cmd, args, pos), "", args)
	var msg string
	switch reason {
	case acl.DeniedCmd:
		msg = "NOPERM this user has no permissions to run the '" + cmd.Name + "' command"
	case acl.DeniedKey:
		msg = "NOPERM this user has no permissions to access one of the keys used as arguments"
	default:
		msg = "NOPERM this user has no permissions to access one of the channels used as arguments"
	}
	c.countRejected(cmd)
	c.rejectInMulti(msg)
	return false
}

// execPermitted re-checks a queued command when EXEC (execArgs) runs it,
// as Redis does in case the rules changed meanwhile: a refused command is
// logged and replied NOPERM in EXEC's reply.
func (c *Client) execPermitted(cmd *cmdtable.Command, args, execArgs [][]byte) bool {
	if !c.aclOn.Load() {
		return true
	}
	reason, pos := c.userOf().Rules().Check(cmd, args)
	if reason == acl.OK {
		return true
	}
	c.logDenial(c, reason, acl.CtxMulti, denialObject(reason, cmd, args, pos), "", execArgs)
	why := "no permission to execute the command or subcommand"
	switch reason {
	case acl.DeniedKey:
		why = "no permission to touch the specified keys"
	case acl.DeniedChannel:
		why = "no permission to access one of the channels used as arguments"
	}
	c.err("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: " + why)
	return false
}

// denialObject is what an ACL LOG entry names: the command, or the key or
// channel refused.
func denialObject(reason acl.Reason, cmd *cmdtable.Command, args [][]byte, pos int) string {
	if reason == acl.DeniedCmd || pos <= 0 || pos >= len(args) {
		return cmd.Name
	}
	return string(args[pos])
}

// logDenial adds an ACL LOG entry for a refusal to c (the client that
// sent the command, whose CLIENT LIST line the entry keeps; args its
// command): username "" is c's user.
func (c *Client) logDenial(self *Client, reason acl.Reason, ctx acl.Context, object, username string, args [][]byte) {
	if username == "" {
		username = c.userOf().Name()
	}
	var sb strings.Builder
	c.describe(&sb, self, args, time.Now())
	n, _ := c.s.cfg.Value("acllog-max-len")
	maxLen, _ := strconv.Atoi(n)
	c.s.acl.Log.Add(acl.LogEntry{
		Reason: reason, Context: ctx, Object: object, Username: username,
		Millis: time.Now().UnixMilli(), ClientInfo: strings.TrimSuffix(sb.String(), "\n"),
	}, maxLen)
}
