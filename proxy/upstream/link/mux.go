package link

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/spillway/spillway/proxy/rawio"
)

// Call is one batch of pipelined requests submitted to a Mux, and where its
// replies go. A client reuses one Call for all its batches.
type Call struct {
	// Replies receives the replies' raw frames, appended in order. The Mux's
	// reader owns it from Submit until Wait returns.
	Replies []byte
	// Err is set when the batch failed (the upstream went away); Replies
	// then holds the replies that did arrive.
	Err error

	// OnDone, if set, runs on the connection's reader goroutine when the
	// batch is complete (or failed), before Wait returns. It reports
	// whether the call is finished; if not, whoever finishes it calls
	// Signal.
	OnDone func() bool

	n, got int
	done   chan struct{}
}

// N returns how many replies the last batch expects.
func (c *Call) N() int { return c.n }

// Signal finishes a call whose OnDone reported false.
func (c *Call) Signal() { c.done <- struct{}{} }

func (c *Call) complete() {
	if c.OnDone == nil || c.OnDone() {
		c.done <- struct{}{}
	}
}

// NewCall returns a Call ready for Submit.
func NewCall() *Call { return &Call{done: make(chan struct{}, 1)} }

// Got returns how many replies of the last batch arrived.
func (c *Call) Got() int { return c.got }

// Wait blocks until every reply of the submitted batch has arrived (or the
// batch failed) and returns Err.
func (c *Call) Wait() error {
	<-c.done
	return c.Err
}

// frameReader reads whole raw reply frames (resp.ReplyReader, scanner).
type frameReader interface {
	Read() ([]byte, error)
}

// Mux is a shared upstream connection: batches from many clients are
// written to it back to back and their replies handed back in order. The
// goroutine that finds the connection idle writes what is queued (so
// concurrent batches coalesce into one write); one reader goroutine
// delivers replies. A broken Mux fails its queued calls at once and is
// replaced by the Pool.
type Mux struct {
	nc  net.Conn
	raw *rawio.Conn // nc's raw reads and writes (nil: use nc)
	// rd reads the replies: a scanner over raw, else the connection's
	// reader (TLS).
	rd   frameReader
	pool *Pool

	mu      sync.Mutex
	out     []byte // requests not yet written
	spare   []byte
	writing bool
	queue   []*Call // calls awaiting replies, oldest first
	head    int
	err     error // set once broken
	broken  atomic.Bool
	closed  chan struct{}
}

func newMux(c *Conn, p *Pool) *Mux {
	m := &Mux{nc: c.nc, rd: c.rd, pool: p, closed: make(chan struct{})}
	if raw := rawio.New(c.nc); raw != nil {
		// The handshake's replies are consumed: nothing is buffered yet.
		m.raw = raw
		m.rd = newScanner(raw)
	}
	go m.readLoop()
	return m
}

// inFlight is how many requests the calls still awaiting replies hold
// (a call partly answered counts whole: its got belongs to the reader).
func (m *Mux) inFlight() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.queue[m.head:] {
		n += c.n
	}
	return n
}

// Broken reports whether the connection failed.
func (m *Mux) Broken() bool { return m.broken.Load() }

// Submit queues reqs (n encoded requests) with c, which is told through
// Wait when the n replies are in c.Replies. It fails at once if the
// connection is broken.
func (m *Mux) Submit(c *Call, reqs []byte, n int) error {
	c.n, c.got, c.Err = n, 0, nil
	m.mu.Lock()
	if m.err != nil {
		err := m.err
		m.mu.Unlock()
		return err
	}
	m.out = append(m.out, reqs...)
	m.queue = append(m.queue, c)
	if m.writing {
		m.mu.Unlock()
		return nil
	}
	m.writing = true
	m.mu.Unlock()
	// Let the other runnable clients queue their requests first, so that
	// one write carries many (as an event loop's would).
	runtime.Gosched()
	m.mu.Lock()
	for {
		buf := m.out
		m.out = m.spare[:0]
		m.mu.Unlock()
		var err error
		if m.raw != nil {
			_, err = m.raw.Write(buf)
		} else {
			_, err = m.nc.Write(buf)
		}
		m.mu.Lock()
		m.spare = buf[:0]
		if err != nil {
			m.writing = false
			m.breakLocked(fmt.Errorf("%w: write: %v", ErrUnavailable, err))
			m.mu.Unlock()
			return nil // the reader fails the call with the others
		}
		if len(m.out) == 0 {
			m.writing = false
			m.mu.Unlock()
			return nil
		}
	}
}

// Do submits one batch and waits for it.
func (m *Mux) Do(c *Call, reqs []byte, n int) error {
	if err := m.Submit(c, reqs, n); err != nil {
		return err
	}
	return c.Wait()
}

func (m *Mux) readLoop() {
	for {
		frame, err := m.rd.Read()
		if err != nil {
			m.fail(fmt.Errorf("%w: read: %v", ErrUnavailable, err))
			return
		}
		if len(frame) > 0 && frame[0] == '>' {
			continue // a push on a shared connection is nobody's reply
		}
		if len(frame) > 9 && frame[0] == '-' && frame[1] == 'R' && m.pool != nil && m.pool.watch != nil &&
			bytes.HasPrefix(frame, readOnly) {
			m.pool.watch.Kick() // the master became a replica: a failover
		}
		m.mu.Lock()
		if m.head == len(m.queue) {
			m.mu.Unlock()
			m.fail(errors.New("upstream sent a reply nobody asked for"))
			return
		}
		c := m.queue[m.head]
		m.mu.Unlock()
		c.Replies = append(c.Replies, frame...)
		c.got++
		if c.got == c.n {
			m.mu.Lock()
			m.queue[m.head] = nil
			m.head++
			if m.head == len(m.queue) {
				m.queue, m.head = m.queue[:0], 0
			}
			m.mu.Unlock()
			c.complete()
		}
	}
}

// breakLocked marks the connection broken and closes it; the reader then
// fails the queued calls (it alone signals calls, so none is signalled
// while the reader still appends to it).
func (m *Mux) breakLocked(err error) {
	if m.err != nil {
		return
	}
	m.err = err
	m.broken.Store(true)
	m.nc.Close()
	if m.pool != nil {
		go m.pool.noteBroken(err)
	}
}

// fail is the reader's exit: the connection is broken and every queued
// call gets the error.
func (m *Mux) fail(err error) {
	m.mu.Lock()
	m.breakLocked(err)
	err = m.err
	q := m.queue[m.head:]
	m.queue, m.head = nil, 0
	m.mu.Unlock()
	for _, c := range q {
		c.Err = err
		c.complete()
	}
	close(m.closed)
}

// Close breaks the connection on purpose.
func (m *Mux) Close() { m.closeWith(fmt.Errorf("%w: closed", ErrUnavailable)) }

// closeWith breaks the connection on purpose: the calls queued on it fail
// with err.
func (m *Mux) closeWith(err error) {
	m.mu.Lock()
	m.breakLocked(err)
	m.mu.Unlock()
}

// readOnly starts the error a replica answers writes with.
var readOnly = []byte("-READONLY ")
