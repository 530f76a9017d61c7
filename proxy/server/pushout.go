package server

import (
	"sync"
	"time"

	"github.com/spillway/spillway/proxy/config"
	"github.com/spillway/spillway/proxy/pubsub"
	"github.com/spillway/spillway/proxy/resp"
)

// pushOut is the output queue of a client that has subscribed to Pub/Sub
// (embedded mode). Once a client has one, everything it sends goes
// through it: its own replies, handed over by flush after every command,
// and the messages publishers deliver, appended by the publishers'
// goroutines under mu. A writer goroutine of its own writes the queue to
// the socket, so a publisher never waits for a subscriber's socket: it
// encodes the message into the queue and returns.
//
// Order: a message delivered while the client runs a command lands before
// that command's reply, as if published just before the command; the
// client's earlier replies were handed over already. While a command
// subscribes (hold), deliveries wait in held until its replies, the
// confirmations, are handed over. A message the client publishes to
// itself goes straight into its reply buffer, where Redis puts it.
//
// A queue holding more than client-output-buffer-limit allows (the pubsub
// class while the client subscribes to anything, the normal class
// otherwise) closes the connection, as Redis does.
type pushOut struct {
	c    *Client
	cond sync.Cond // signals the writer; its L is &mu

	mu sync.Mutex
	// buf is what the writer sends next.
	buf []byte
	// held are messages delivered while the client subscribes.
	held []byte
	hold bool
	// proto is the protocol messages are encoded in: the client's as of
	// the replies handed over so far (HELLO may change it).
	proto int
	// pubsubClass: the client subscribes to something (the pubsub limits
	// apply), else the normal ones.
	pubsubClass bool
	// writing is how many bytes the writer took and has not written yet.
	writing int
	// softSince is the unix second the soft limit was first exceeded
	// (0: it is not).
	softSince int64
	// closed: nothing more is queued or written (limit exceeded, write
	// failed, or the client is gone); draining: the client is gone,
	// the writer sends what is queued and exits.
	closed, draining bool
	done             chan struct{} // closed when the writer exits
}

// maxSpareBuf bounds the buffer the writer keeps for reuse.
const maxSpareBuf = 1 << 20

// drainTimeout bounds how long a closing client's last bytes may take to
// be written.
const drainTimeout = 5 * time.Second

// ensurePushOut gives the client its output queue (and starts its writer)
// if it has none yet.
func (c *Client) ensurePushOut() *pushOut {
	if c.out != nil {
		return c.out
	}
	q := &pushOut{c: c, proto: c.w.Proto, done: make(chan struct{})}
	q.cond.L = &q.mu
	c.out = q
	c.pushMu.Lock()
	c.pushQ = q
	q.buf = append(q.buf, c.inbox...) // pushes sent before (pushAsync)
	c.inbox = nil
	c.hasInbox.Store(false)
	c.pushMu.Unlock()
	go q.run()
	return q
}

// pushAsync sends the client b, encoded pushes, from another client's
// goroutine (tracking's invalidations): through its output queue, or, if
// it has none yet, into its inbox, waking its goroutine (a read deadline
// in the past), which then takes the inbox into a new queue (takeInbox)
// as soon as it waits for input. It reports false if the client is
// closing or in-process (a Local, which has no connection to push to).
// It never waits for the client's socket.
func (c *Client) pushAsync(b []byte) bool {
	c.pushMu.Lock()
	defer c.pushMu.Unlock()
	switch {
	case c.gone, c.noBlock:
		return false
	case c.pushQ != nil:
		c.pushQ.deliverRaw(b)
	default:
		c.inbox = append(c.inbox, b...)
		// A blocked client's deadline belongs to its socket watcher: it
		// takes the inbox once unblocked (armDeadline wakes it then).
		if !c.hasInbox.Swap(true) && !c.blocked.Load() {
			c.nc.SetReadDeadline(time.Now())
		}
	}
	return true
}

// takeInbox gives the client an output queue holding what pushAsync left
// in its inbox (the client's goroutine).
func (c *Client) takeInbox() { c.ensurePushOut() }

// markGone stops pushes to the client (it quits or is gone): a client
// redirecting its invalidations here finds its redirection broken.
func (c *Client) markGone() {
	c.pushMu.Lock()
	c.gone = true
	c.inbox = nil
	c.pushMu.Unlock()
}

// run is the writer goroutine.
func (q *pushOut) run() {
	defer close(q.done)
	c := q.c
	var spare []byte
	for {
		q.mu.Lock()
		for len(q.buf) == 0 && !q.closed && !q.draining {
			q.cond.Wait()
		}
		if q.closed || len(q.buf) == 0 {
			q.mu.Unlock()
			return
		}
		b := q.buf
		q.buf = spare[:0]
		q.writing = len(b)
		q.mu.Unlock()

		var n int
		var err error
		if c.raw != nil {
			n, err = c.raw.Write(b)
		} else {
			n, err = c.nc.Write(b)
		}
		c.s.stats.netOut.Add(int64(n))

		q.mu.Lock()
		q.writing = 0
		if err != nil {
			q.closed = true
			q.buf, q.held = nil, nil
		}
		q.mu.Unlock()
		if err != nil {
			if !c.killed.Load() && !c.s.closing.Load() {
				c.s.log.Debug("connection write failed", "client", c.id, "err", err)
			}
			c.kill() // the serve loop sees the closed connection and exits
			return
		}
		if cap(b) <= maxSpareBuf {
			spare = b[:0]
		} else {
			spare = nil
		}
	}
}

// put hands the client's buffered replies (w's buffer, left empty) to the
// queue, then the messages held while it subscribed; flush calls it. It
// reports false when the connection is being closed.
func (q *pushOut) put(w *resp.Writer) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		w.Reset()
		return false
	}
	if len(q.buf) == 0 {
		// Nothing queued: take the buffer instead of copying it.
		q.buf, w.Buf = w.Buf, q.buf[:0]
	} else {
		q.buf = append(q.buf, w.Buf...)
		if cap(w.Buf) > maxSpareBuf {
			w.Buf = nil
		} else {
			w.Reset()
		}
	}
	if q.hold {
		q.buf = append(q.buf, q.held...)
		q.held = q.held[:0]
		q.hold = false
	}
	q.proto = w.Proto
	ok := q.checkLimitLocked()
	q.mu.Unlock()
	q.cond.Signal()
	return ok
}

// holdDeliveries makes deliveries wait until the next put: the client is
// about to subscribe, and its confirmations, still in its reply buffer,
// must reach it before the first message.
func (q *pushOut) holdDeliveries() {
	q.mu.Lock()
	q.hold = true
	q.mu.Unlock()
}

// setPubSubClass sets which output buffer limits apply.
func (q *pushOut) setPubSubClass(on bool) {
	q.mu.Lock()
	q.pubsubClass = on
	q.mu.Unlock()
}

// Deliver queues one message in the protocol the client speaks. It never
// blocks on the socket; a message the client published itself (it runs on
// the client's goroutine) is written among its replies.
func (q *pushOut) Deliver(m *pubsub.Message) {
	if m.Sender == pubsub.Subscriber(q) {
		c := q.c
		appendPush(&c.w, m)
		// Pushes are sent even under CLIENT REPLY OFF/SKIP, as in Redis:
		// keep them out of the reply truncated afterwards.
		c.mark = c.w.Len()
		return
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	w := resp.Writer{Proto: q.proto}
	if q.hold {
		w.Buf = q.held
		appendPush(&w, m)
		q.held = w.Buf
	} else {
		w.Buf = q.buf
		appendPush(&w, m)
		q.buf = w.Buf
	}
	q.checkLimitLocked()
	q.mu.Unlock()
	q.cond.Signal()
}

// appendPush encodes m as Redis 7.0's addReplyPubsubMessage and
// addReplyPubsubPatMessage do: an array in RESP2, a push in RESP3.
func appendPush(w *resp.Writer, m *pubsub.Message) {
	switch m.Kind {
	case pubsub.KindPMessage:
		w.Push(4)
		w.BulkString("pmessage")
		w.Bulk(m.Pattern)
	case pubsub.KindSMessage:
		w.Push(3)
		w.BulkString("smessage")
	default:
		w.Push(3)
		w.BulkString("message")
	}
	w.Bulk(m.Channel)
	w.Bulk(m.Payload)
}

// checkLimitLocked applies client-output-buffer-limit as Redis's
// checkClientOutputBufferLimits does: over the hard limit, or over the
// soft limit for more than its seconds (counted in whole unix seconds),
// the client is closed. It reports false if it closed the client. The
// caller holds mu.
func (q *pushOut) checkLimitLocked() bool {
	class := config.ClassNormal
	if q.pubsubClass {
		class = config.ClassPubSub
	}
	lim := q.c.s.cfg.ClientOutputBufferLimit(class)
	if lim.Hard == 0 && lim.Soft == 0 {
		return true
	}
	used := uint64(len(q.buf) + len(q.held) + q.writing)
	hard := lim.Hard != 0 && used >= lim.Hard
	soft := false
	if lim.Soft != 0 && used >= lim.Soft {
		now := time.Now().Unix()
		if q.softSince == 0 {
			q.softSince = now
		} else if now-q.softSince > lim.SoftSeconds {
			soft = true
		}
	} else {
		q.softSince = 0
	}
	if !hard && !soft {
		return true
	}
	q.closed = true
	q.buf, q.held = nil, nil
	q.cond.Signal()
	which := "hard"
	if !hard {
		which = "soft"
	}
	// Closing a socket may wait for its writer to notice: never in a
	// publisher's goroutine.
	go q.c.closeOverLimit(class, used, which)
	return false
}

// closeOverLimit logs and closes a client whose output exceeded its limit.
func (c *Client) closeOverLimit(class config.ClientClass, used uint64, which string) {
	c.s.log.Warn("client scheduled to be closed for overcoming of output buffer limits",
		"client", c.id, "addr", c.nc.RemoteAddr().String(), "class", class.String(),
		"limit", which, "omem", used)
	c.kill()
}

// close ends the queue when the client's serve loop exits: what is queued
// is written (within drainTimeout) unless the client was killed, then the
// writer exits. The caller has taken the client out of the hub.
func (q *pushOut) close() {
	q.mu.Lock()
	if q.c.killed.Load() {
		q.closed = true
		q.buf, q.held = nil, nil
	} else {
		q.draining = true
		if q.hold {
			q.buf = append(q.buf, q.held...)
			q.held, q.hold = nil, false
		}
	}
	q.mu.Unlock()
	q.cond.Signal()
	q.c.nc.SetWriteDeadline(time.Now().Add(drainTimeout))
	<-q.done
}
