package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/upstream"
)

// upClient is a client's upstream-mode state.
//
// Commands on keys that are not cold are encoded into reqs and sent as one
// batch when the client's pipeline is drained (flushForwards), on a shared
// connection or on the client's pinned one; replies land in the client's
// reply buffer unchanged. From the first key check of a batch until its
// replies are in, the client holds the gate's read side (see
// uptier.Gate), which is what makes demotion safe against the batch.
type upClient struct {
	call     *upstream.Call
	ctlCall  *upstream.Call
	reqs     []byte
	n        int
	gateHeld *sync.RWMutex
	keyBuf   []int
	dump     upstream.Dump

	// pinned is the dedicated connection of a client that needs connection
	// state upstream: a non-default database, MULTI, WATCH, or a
	// subscription (passthrough).
	pinned            *upstream.Conn
	inMulti, watching bool
	// queueDB is the database commands queued in MULTI run on (a queued
	// SELECT changes it; EXEC makes it the client's).
	queueDB int
	// passthrough: the pinned connection's frames are copied to the client
	// as they come (pub/sub, MONITOR, CLIENT TRACKING), by ptLoop.
	passthrough bool
	ptClosing   atomic.Bool
	wmu         sync.Mutex // serializes socket writes in passthrough
	// protected are the keys this client keeps from demotion.
	protected []protectedKey

	// asyncOut is set while a batch sent by submitAsync is in flight: its
	// replies are written to the socket by the connection's reader.
	asyncOut    bool
	asyncFailed bool
	asyncBuf    []byte
	onDone      func() bool
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

func newUpClient(c *Client) *upClient {
	u := &upClient{call: upstream.NewCall(), ctlCall: upstream.NewCall()}
	u.onDone = c.onAsyncDone
	return u
}

// submitAsync sends the batch at the end of the client's pipeline without
// waiting for it: the shared connection's reader writes the replies to the
// socket (onAsyncDone), sparing the client's goroutine a wake-up per
// batch. It reports false when the batch could not be sent; error replies
// are then in the reply buffer.
func (c *Client) submitAsync() bool {
	u := c.up
	n, reqs := u.n, u.reqs
	u.n, u.reqs = 0, u.reqs[:0]
	m, err := c.s.up.pool.Shared(c.w.Proto, c.id)
	if err == nil {
		u.call.Replies = u.asyncBuf[:0]
		u.call.OnDone = u.onDone
		u.asyncOut, u.asyncFailed = true, false
		if err = m.Submit(u.call, reqs, n); err == nil {
			return true
		}
		u.asyncOut = false
		u.call.OnDone = nil
	}
	for i := 0; i < n; i++ {
		c.err(upstream.ErrorReply(err))
	}
	c.leaveGate()
	return false
}

// onAsyncDone runs on the reader goroutine when an async batch is in (or
// failed): it leaves the gate and writes the replies with one non-blocking
// write; what the socket does not take is written by a goroutine that then
// finishes the call.
func (c *Client) onAsyncDone() bool {
	u := c.up
	call := u.call
	buf := call.Replies
	if call.Err != nil {
		msg := upstream.ErrorReply(call.Err)
		for i := call.Got(); i < call.N(); i++ {
			buf = append(buf, '-')
			buf = append(buf, msg...)
			buf = append(buf, '\r', '\n')
			c.s.stats.errorReplies.Add(1)
		}
	}
	c.leaveGate()
	u.asyncBuf = buf
	written := 0
	if c.raw != nil {
		n, err := c.raw.TryWrite(buf)
		if err != nil {
			u.asyncFailed = true
			return true
		}
		written = n
	}
	c.s.stats.netOut.Add(int64(written))
	if written == len(buf) {
		return true
	}
	go func() {
		n, err := c.nc.Write(buf[written:])
		c.s.stats.netOut.Add(int64(n))
		if err != nil {
			u.asyncFailed = true
		}
		call.Signal()
	}()
	return false
}

// awaitAsync waits for the batch in flight, if any, and reports whether
// its replies reached the socket.
func (c *Client) awaitAsync() bool {
	u := c.up
	if u == nil || !u.asyncOut {
		return true
	}
	u.call.Wait()
	u.asyncOut = false
	u.call.OnDone = nil
	u.call.Replies = nil
	return !u.asyncFailed
}

func (c *Client) enterGate() {
	if c.up.gateHeld == nil {
		c.up.gateHeld = c.s.up.gate.Enter(c.id)
	}
}

func (c *Client) leaveGate() {
	if m := c.up.gateHeld; m != nil {
		m.RUnlock()
		c.up.gateHeld = nil
	}
}

// enqueue adds a request to the batch.
func (c *Client) enqueue(args [][]byte) {
	u := c.up
	u.reqs = upstream.AppendCommand(u.reqs, args)
	u.n++
	if len(u.reqs) >= maxBatchBytes || u.n >= maxBatchCmds {
		c.flushForwards()
	}
}

// flushForwards sends the batch and appends its replies to the client's
// buffer (an error reply for each request that got none), then leaves
// the gate.
func (c *Client) flushForwards() {
	u := c.up
	if u == nil {
		return
	}
	if u.n == 0 {
		c.leaveGate()
		return
	}
	n, reqs := u.n, u.reqs
	u.n, u.reqs = 0, u.reqs[:0]
	var err error
	got := 0
	switch {
	case u.pinned != nil && u.passthrough:
		u.pinned.WriteRaw(reqs)
		err = u.pinned.Flush()
		got = n
	case u.pinned != nil:
		u.pinned.WriteRaw(reqs)
		if err = u.pinned.Flush(); err == nil {
			for got < n {
				var r []byte
				if r, err = u.pinned.Read(); err != nil {
					break
				}
				c.w.Raw(r)
				got++
			}
		}
	default:
		var m *upstream.Mux
		if m, err = c.s.up.pool.Shared(c.w.Proto, c.id); err == nil {
			u.call.Replies = c.w.Buf
			err = m.Do(u.call, reqs, n)
			c.w.Buf, u.call.Replies = u.call.Replies, nil
			got = u.call.Got()
		}
	}
	c.leaveGate()
	if err != nil {
		for ; got < n; got++ {
			c.err(upstream.ErrorReply(err))
		}
		if u.pinned != nil {
			c.dropPinned()
		}
	}
}

// upDispatch runs one command in upstream mode.
func (c *Client) upDispatch(cmd *cmdtable.Command, args [][]byte) {
	if h := c.s.up.local[cmd]; h != nil && !c.subscribedRESP2(cmd) {
		c.flushForwards()
		c.call(h, args)
		return
	}
	switch {
	case c.up.passthrough:
		c.upPassthroughCmd(cmd, args)
	case c.up.inMulti:
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
func (c *Client) subscribedRESP2(cmd *cmdtable.Command) bool {
	if !c.up.passthrough || c.w.Proto != 2 {
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
func (c *Client) upForwardUnknown(args [][]byte) {
	if c.up.inMulti || c.up.passthrough {
		c.enqueue(args)
		return
	}
	c.enterGate()
	c.enqueue(args)
}

// upForward forwards a command whose keys are not cold, after making them
// so: cold keys are reloaded, or the command is answered from the cold
// store (metadata commands, and reads the promotion policy keeps cold).
func (c *Client) upForward(cmd *cmdtable.Command, args [][]byte) {
	up := c.s.up
	if up.demoter.Throttling() && cmd.Is(cmdtable.FlagDenyOOM) {
		c.flushForwards()
		up.demoter.Throttle(time.Second)
	}
	idx := up.index(c.db)
	var keys []int
	keysFound := false
	for attempt := 0; attempt < 50; attempt++ {
		c.enterGate()
		cold := false
		if idx.Len() > 0 {
			// The keys are only looked for when some key is cold at all.
			if !keysFound {
				keys, _ = cmd.KeyPositions(args, c.up.keyBuf[:0])
				c.up.keyBuf, keysFound = keys, true
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
	c.err("ERR spillway: the command's keys kept moving between tiers; try again")
}
