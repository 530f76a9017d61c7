package upstream

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/acl"
	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/upstream/link"
)

// client is a client connection's upstream-mode state: the server's
// connection (server.Conn) and what the front keeps for it. It implements
// server.ForwardConn.
//
// Commands on keys that are not cold are encoded into reqs and sent as one
// batch when the client's pipeline is drained (flushForwards), on a shared
// connection or on the client's pinned one; replies land in the client's
// reply buffer unchanged. From the first key check of a batch until its
// replies are in, the client holds the gate's read side (see
// uptier.Gate), which is what makes demotion safe against the batch.
type client struct {
	*server.Conn
	f *Front
	// w is the connection's reply buffer (Conn.W) and id its CLIENT ID.
	w  *resp.Writer
	id int64

	call     *link.Call
	ctlCall  *link.Call
	reqs     []byte
	n        int
	gateHeld *sync.RWMutex
	keyBuf   []int
	dump     link.Dump

	// pinned is the dedicated connection of a client that needs connection
	// state upstream: a non-default database, MULTI, WATCH, or a
	// subscription (passthrough).
	pinned *link.Conn
	// pinnedAs is the ACL user whose mirror pinned is logged in as (nil:
	// Spillway's upstream user; pin.go).
	pinnedAs          *acl.User
	replconf          [][][]byte // REPLCONFs of a cluster replica, for its splice (cluster_repl.go)
	inMulti, watching bool
	// txRefused is set when Spillway refused a command queued in the
	// open transaction (the upstream never saw it): EXEC then discards
	// the upstream's transaction and answers EXECABORT, as Redis does
	// after a queueing error.
	txRefused bool
	// txNotStale, txWrite: a command queued in the open transaction has
	// no stale flag, has the write flag; txRelayLocked: a queued
	// REPLICAOF holds the relay's startMu from before the upstream's EXEC
	// until upEndTx ends (replicaof.go).
	txNotStale, txWrite, txRelayLocked bool
	// queueDB is the database commands queued in MULTI run on (a queued
	// SELECT changes it; EXEC makes it the client's).
	queueDB int
	// passthrough: the pinned connection's frames are copied to the client
	// as they come (pub/sub, MONITOR, CLIENT TRACKING), by ptLoop.
	passthrough bool
	// subscribed is set once a passthrough client sent a (P|S)SUBSCRIBE
	// (kept until RESET: replies are relayed, not parsed, so an
	// unsubscribe that empties the set goes unnoticed): only then is it
	// in RESP2's subscribed context, where the upstream must answer the
	// commands Spillway would answer itself. A client in passthrough for
	// CLIENT TRACKING alone is not.
	subscribed bool
	ptClosing  atomic.Bool
	// ptFixes are the changes the relay makes to coming frames, in order
	// (relayFixes).
	ptFixes relayFixes
	// redir is the translation of the last CLIENT TRACKING ... REDIRECT,
	// nil before one.
	redir *redirIDs
	wmu   sync.Mutex // serializes socket writes in passthrough
	// sink is the upstream connection of a redirect target (tracking.go);
	// sinkOn is set once it is open (its relay writes to the socket).
	sinkMu     sync.Mutex
	sink       *redirSink
	sinkClosed bool
	sinkOn     atomic.Bool
	// localQ are the local commands queued in MULTI, multiQueued the
	// commands queued upstream so far (multilocal.go).
	localQ      []queuedLocal
	multiQueued int
	// protected are the keys this client keeps from demotion.
	protected []protectedKey

	// asyncOut is set while a batch sent by submitAsync is in flight: its
	// replies are written to the socket by the connection's reader.
	// asking: the client sent ASKING in front of a cluster node; its next
	// command goes with it (upAskingForward).
	asking bool

	asyncOut    bool
	asyncFailed bool
	asyncBuf    []byte
	onDone      func() bool

	// ord is the client's forwarding-order ticket, orderBuf scratch space
	// for the tickets it waits for (fence.go).
	ord      orderTicket
	orderBuf []chan struct{}
}

type protectedKey struct {
	db int
	h  uint64
}

// maxBatchBytes and maxBatchCmds bound a batch of forwarded requests.
const (
	maxBatchBytes = 64 << 10
	maxBatchCmds  = 512
)

// NewConn returns a new client connection's state (server.Forwarder).
func (f *Front) NewConn(conn *server.Conn) server.ForwardConn {
	c := &client{Conn: conn, f: f, w: conn.W(), id: conn.ID(), call: link.NewCall(), ctlCall: link.NewCall()}
	c.onDone = c.onAsyncDone
	f.clients.Store(c.id, c)
	return c
}

// BeforeCommand waits for the batch in flight, if any (server.ForwardConn).
func (c *client) BeforeCommand() bool { return !c.asyncOut || c.awaitAsync() }

// Dispatch runs one command (server.ForwardConn).
func (c *client) Dispatch(cmd *cmdtable.Command, args [][]byte) {
	c.upDispatch(cmd, args)
	if c.ord.held {
		c.orderEnd() // fence.go
	}
}

// ForwardUnknown forwards a command Spillway does not know, or one whose
// arity is wrong inside MULTI (server.ForwardConn).
func (c *client) ForwardUnknown(args [][]byte) { c.upForwardUnknown(args) }

// InTransaction reports whether the client is in MULTI upstream
// (server.ForwardConn).
func (c *client) InTransaction() bool { return c.inMulti }

// Drain sends the batch and waits for its replies (server.ForwardConn).
func (c *client) Drain() { c.flushForwards() }

// Flush waits for the batch in flight, then sends the batch at the end of
// the client's pipeline: without waiting for it when the server has
// nothing else to send and the client is not pinned (submitAsync), else
// with its replies appended to the reply buffer (server.ForwardConn).
func (c *client) Flush(unbuffered bool) (done, ok bool) {
	if !c.awaitAsync() {
		return false, false
	}
	if c.n > 0 && c.pinned == nil && unbuffered && !c.sinkOn.Load() && !c.ord.held && c.submitAsync() {
		return true, true
	}
	c.flushForwards()
	return false, true
}

// WriteLock is the passthrough relay's socket lock (server.ForwardConn).
func (c *client) WriteLock() *sync.Mutex {
	if c.passthrough || c.sinkOn.Load() {
		return &c.wmu
	}
	return nil
}

// Close releases the client's upstream state (server.ForwardConn).
func (c *client) Close() { c.upClose() }

// submitAsync sends the batch at the end of the client's pipeline without
// waiting for it: the shared connection's reader writes the replies to the
// socket (onAsyncDone), sparing the client's goroutine a wake-up per
// batch. It reports false when the batch could not be sent; error replies
// are then in the reply buffer.
func (c *client) submitAsync() bool {
	n, reqs := c.n, c.reqs
	c.n, c.reqs = 0, c.reqs[:0]
	m, err := c.f.pool.Shared(c.w.Proto, c.id)
	if err == nil {
		c.call.Replies = c.asyncBuf[:0]
		c.call.OnDone = c.onDone
		c.asyncOut, c.asyncFailed = true, false
		if err = m.Submit(c.call, reqs, n); err == nil {
			return true
		}
		c.asyncOut = false
		c.call.OnDone = nil
	}
	for i := 0; i < n; i++ {
		c.Err(link.ErrorReply(err))
	}
	c.leaveGate()
	return false
}

// onAsyncDone runs on the reader goroutine when an async batch is in (or
// failed): it leaves the gate and writes the replies with one non-blocking
// write; what the socket does not take is written by a goroutine that then
// finishes the call.
func (c *client) onAsyncDone() bool {
	call := c.call
	buf := call.Replies
	if call.Err != nil {
		msg := link.ErrorReply(call.Err)
		for i := call.Got(); i < call.N(); i++ {
			buf = append(buf, '-')
			buf = append(buf, msg...)
			buf = append(buf, '\r', '\n')
			c.CountErrorReply()
		}
	}
	c.leaveGate()
	c.asyncBuf = buf
	written, err := c.TryWriteSocket(buf)
	if err != nil {
		c.asyncFailed = true
		return true
	}
	c.AddNetOut(int64(written))
	if written == len(buf) {
		return true
	}
	go func() {
		n, err := c.WriteSocket(buf[written:])
		c.AddNetOut(int64(n))
		if err != nil {
			c.asyncFailed = true
		}
		call.Signal()
	}()
	return false
}

// awaitAsync waits for the batch in flight, if any, and reports whether
// its replies reached the socket.
func (c *client) awaitAsync() bool {
	if !c.asyncOut {
		return true
	}
	c.call.Wait()
	c.asyncOut = false
	c.call.OnDone = nil
	c.call.Replies = nil
	return !c.asyncFailed
}

func (c *client) enterGate() {
	if c.gateHeld == nil {
		c.gateHeld = c.f.gate.Enter(c.id)
	}
}

func (c *client) leaveGate() {
	if m := c.gateHeld; m != nil {
		m.RUnlock()
		c.gateHeld = nil
	}
}

// enqueue adds a request to the batch.
func (c *client) enqueue(args [][]byte) {
	if c.inMulti {
		c.multiQueued++ // where a local command queued next goes (multilocal.go)
	}
	c.reqs = link.AppendCommand(c.reqs, args)
	c.n++
	if c.ord.held {
		c.ord.queued = true // written with the batch (fence.go)
	}
	if len(c.reqs) >= maxBatchBytes || c.n >= maxBatchCmds {
		c.flushForwards()
	}
}

// flushForwards sends the batch and appends its replies to the client's
// buffer (an error reply for each request that got none), then leaves
// the gate.
func (c *client) flushForwards() {
	if c.n == 0 {
		c.leaveGate()
		return
	}
	n, reqs := c.n, c.reqs
	c.n, c.reqs = 0, c.reqs[:0]
	var err error
	got := 0
	switch {
	case c.pinned != nil && c.passthrough:
		c.pinned.WriteRaw(reqs)
		err = c.pinned.Flush()
		c.orderWritten() // fence.go
		got = n
	case c.pinned != nil:
		c.pinned.WriteRaw(reqs)
		err = c.pinned.Flush()
		c.orderWritten() // fence.go
		if err == nil {
			for got < n {
				var r []byte
				if r, err = c.pinned.Read(); err != nil {
					break
				}
				c.w.Raw(r)
				got++
			}
		}
	default:
		var m *link.Mux
		if m, err = c.f.pool.Shared(c.w.Proto, c.id); err == nil {
			c.call.Replies = c.w.Buf
			err = m.Do(c.call, reqs, n)
			c.w.Buf, c.call.Replies = c.call.Replies, nil
			got = c.call.Got()
		}
		c.orderWritten() // fence.go
	}
	c.leaveGate()
	if err != nil {
		for ; got < n; got++ {
			c.Err(link.ErrorReply(err))
		}
		if c.pinned != nil {
			c.dropPinned()
		}
	}
}

// upDispatch runs one command in upstream mode.
func (c *client) upDispatch(cmd *cmdtable.Command, args [][]byte) {
	special := c.f.special[cmd.ID()] // in local, scripts or orderWrites
	if c.f.fence.waiting.Load() != 0 {
		c.awaitIfWaking(cmd, args) // fence.go
	}
	if c.pinned != nil || special || c.f.order.n.Load() != 0 {
		c.orderBegin(cmd, special) // the forwarding order (fence.go)
	}
	if special && c.f.fence.last.Load() != 0 && c.f.orderWrites[cmd] && c.f.fence.recent() {
		// A blocking command read meanwhile goes first (fence.go).
		keys, _ := cmd.KeyPositions(args, c.keyBuf[:0])
		c.keyBuf = keys
		var queued []protectedKey
		exec := cmd.Name == "exec"
		if exec {
			queued = c.protected
		}
		if c.f.fence.blockedRecently(c.DB(), args, keys, exec, queued) {
			c.orderHold() // the others' commands got meanwhile wait for it
			c.flushForwards()
			c.awaitOthersLong()
		}
	}
	if c.f.fence.n.Load() != 0 && (cmd.Is(cmdtable.FlagWrite) || special && c.f.orderWrites[cmd]) && !cmd.Is(cmdtable.FlagBlocking) {
		// Another client's blocking command is on its way upstream: a
		// write it may concern follows it (fence.go).
		c.orderHold()
		c.flushForwards()
		c.keyBuf = c.f.fence.waitFor(c.DB(), cmd, args, c.keyBuf, c.Block)
	}
	if c.asking {
		if c.asking = false; c.f.local[cmd] == nil && c.pinned == nil && !cmd.Is(cmdtable.FlagBlocking) && !c.f.scripts[cmd] {
			c.upAskingForward(cmd, args)
			return
		}
	}
	if c.inMulti && !runsInMulti(cmd) {
		if msg := c.queueRefusal(cmd); msg != "" {
			c.refuse(msg)
			return
		}
		c.noteQueued(cmd)
	}
	if !special {
		c.upRoutePlain(cmd, args)
		return
	}
	if h := c.f.local[cmd]; h != nil && !c.subscribedRESP2(cmd) {
		c.flushForwards()
		if c.inMulti && c.f.queueableLocal(cmd) {
			c.queueLocal(h, cmd, args) // run at EXEC (multilocal.go)
			return
		}
		start := time.Now()
		h(c, args)
		c.f.countLocal(c, cmd, args, start) // localstats.go
		c.f.feedLocal(c, cmd, args)
		return
	}
	c.upRoute(cmd, args)
}

// errScriptPinned refuses a script inside MULTI or on a subscribed
// connection whose upstream connection is not logged in as the client's
// user needs (the user changed since MULTI or the subscription started).
const errScriptPinned = "ERR spillway: in upstream mode, a script cannot run inside MULTI or while subscribed " +
	"after the client's ACL user changed since they started"

// upRoute runs a command Spillway does not answer itself: relayed in
// passthrough, queued in MULTI, on a connection of its own if it blocks,
// else forwarded.
func (c *client) upRoute(cmd *cmdtable.Command, args [][]byte) {
	switch {
	case (c.passthrough || c.inMulti) && c.f.scripts[cmd] && !c.scriptLoginFits():
		// Refused: it would run as another user (pin.go).
	case c.passthrough:
		c.upPassthroughCmd(cmd, args)
	case c.inMulti:
		c.upQueue(cmd, args)
	case cmd.Is(cmdtable.FlagBlocking) || c.f.scripts[cmd]:
		c.upBlocking(cmd, args)
	default:
		c.upForward(cmd, args)
	}
}

// upRoutePlain is upRoute for a command that is no script (special is
// unset): the same routes, without the scripts map's lookup.
func (c *client) upRoutePlain(cmd *cmdtable.Command, args [][]byte) {
	switch {
	case c.passthrough:
		c.upPassthroughCmd(cmd, args)
	case c.inMulti:
		c.upQueue(cmd, args)
	case cmd.Is(cmdtable.FlagBlocking):
		c.upBlocking(cmd, args)
	default:
		c.upForward(cmd, args)
	}
}

// subscribedRESP2 reports whether a RESP2 client in passthrough (pub/sub)
// sends a command Spillway would answer itself: the upstream gets it, so
// the client sees Redis's "only (P|S)SUBSCRIBE ... allowed" error.
func (c *client) subscribedRESP2(cmd *cmdtable.Command) bool {
	if !c.subscribed || c.w.Proto != 2 {
		return false
	}
	switch cmd.Name {
	case "quit", "reset", "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe":
		return false
	}
	return true
}

// upForwardUnknown forwards a command Spillway's table does not know (a
// newer upstream's); it has no known keys.
func (c *client) upForwardUnknown(args [][]byte) {
	if c.inMulti || c.passthrough {
		c.enqueue(args)
		return
	}
	c.enterGate()
	c.enqueue(args)
}

// upForward forwards a command whose keys are not cold, after making them
// so: cold keys are reloaded, or the command is answered from the cold
// store (metadata commands, and reads the promotion policy keeps cold).
func (c *client) upForward(cmd *cmdtable.Command, args [][]byte) {
	c.upForwardWith(cmd, args, -1, 0)
}

// upForwardWith is upForward for a command that also names a key of
// another database (COPY's destination with DB, MOVE's key in the target
// database): args[pos] in database db (none when db < 0) is reloaded too,
// and found not cold under the gate as the command's own keys are, so
// that the demoter cannot move it back between its reload and the
// command (COPY then found no destination and copied: 1 where Redis
// answers 0, and the key had two values).
func (c *client) upForwardWith(cmd *cmdtable.Command, args [][]byte, db, pos int) {
	if c.f.demoter.Throttling() && cmd.Is(cmdtable.FlagDenyOOM) {
		c.flushForwards()
		c.f.demoter.Throttle(time.Second)
	}
	idx := c.f.index(c.DB())
	var keys []int
	keysFound := false
	for attempt := 0; attempt < 50; attempt++ {
		c.enterGate()
		if db >= 0 && c.f.index(db).Has(codec.KeyHash(args[pos])) {
			c.flushForwards() // and leave the gate: the reload waits for it
			if !c.prepareKeys(db, args, []int{pos}, false) {
				return
			}
			continue
		}
		cold := false
		if idx.Len() > 0 {
			// The keys are only looked for when some key is cold at all.
			if !keysFound {
				keys, _ = cmd.KeyPositions(args, c.keyBuf[:0])
				c.keyBuf, keysFound = keys, true
			}
			for _, p := range keys {
				if idx.Has(codec.KeyHash(args[p])) {
					cold = true
					break
				}
			}
		}
		if !cold {
			c.enqueue(args)
			return
		}
		c.flushForwards()
		if c.upCold(cmd, args, keys) {
			return
		}
	}
	c.Err("ERR spillway: the command's keys kept moving between tiers; try again")
}
