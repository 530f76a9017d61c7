// Package rawio reads and writes sockets with raw system calls. Go's
// sockets are non-blocking, so a read or write on them never blocks the
// thread; making it with syscall.RawSyscall instead of the runtime's
// syscall path skips the bookkeeping that lets the scheduler hand the
// processor to another thread during a long system call. On a proxy whose
// every command is a short socket read and write, that bookkeeping (and
// the monitor thread waking every 20 µs to retake processors from system
// calls) costs more than the calls themselves. Waiting for a socket to be
// ready still goes through the runtime's poller, deadlines included.
//
// Reads also skip the read that would find nothing. Each of Go's raw
// reads (syscall.RawConn.Read) forgets the poller's readiness before its
// first attempt, so a connection that waits for its next request after a
// reply makes a read that fails (EAGAIN) before it waits: a third of an
// unpipelined request's system calls. Conn.Read keeps one raw read open
// across calls instead, in a coroutine (iter.Pull): after a read that
// left the socket empty (it returned less than asked), the next call
// waits for the poller without reading first. The poller's readiness is
// edge-triggered and kept since the last wait, so input that arrived
// after that read is never missed. The open read holds the descriptor's
// read lock and a reference to it: Release ends it before anything else
// reads the connection, and a Close waits for it. So it is only for a
// connection whose reader releases it (NewHeld: a client of the server);
// New's reads make one raw read each.
package rawio

import (
	"io"
	"iter"
	"net"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Conn does raw reads and writes on one connection. It is used by one
// reader and one writer goroutine at a time, as a net.Conn is.
type Conn struct {
	rc syscall.RawConn

	rbuf []byte
	rn   int
	rerr error
	rfn  func(fd uintptr) bool
	// The open read (Read): next resumes it for one read, stop ends it;
	// yield hands a read's result back from inside it, and drained says
	// the last read left the socket empty. serr is what the raw read
	// returned when it ended by itself (a deadline, a closed socket).
	next    func() (struct{}, bool)
	stop    func()
	yield   func(struct{}) bool
	drained bool
	serr    error
	hfn     func(fd uintptr) bool
	hold    bool // NewHeld: Read keeps a read open
	// reads counts read attempts, each before its system call; waiting is
	// set while Read waits in the poller for input (ReadState).
	reads   atomic.Uint64
	waiting atomic.Bool

	wbuf []byte
	wn   int
	werr error
	once bool // TryWrite: one attempt, no wait
	wfn  func(fd uintptr) bool
}

// New wraps nc; it returns nil when nc has no file descriptor (a pipe in a
// test), and callers then use nc itself.
func New(nc net.Conn) *Conn {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	c := &Conn{rc: rc}
	c.rfn = c.readOnce
	c.hfn = c.readHeld
	c.wfn = c.writeSome
	return c
}

// NewHeld is New for a connection whose Read keeps a read open (see the
// package's comment): its reader must Release it before the connection
// is read another way or closed, and a goroutine that closes it while the
// reader may hold it shuts it down first (Shutdown).
func NewHeld(nc net.Conn) *Conn {
	c := New(nc)
	if c != nil {
		c.hold = true
	}
	return c
}

func (c *Conn) readOnce(fd uintptr) bool { return !c.readSys(fd) }

// readSys makes one read into rbuf, its outcome in rn and rerr (EOF for
// a read of nothing); it reports wait, with waiting set, when the socket
// is empty (EAGAIN).
func (c *Conn) readSys(fd uintptr) (wait bool) {
	for {
		c.reads.Add(1)
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(c.rbuf))), uintptr(len(c.rbuf)))
		switch e {
		case 0:
			c.rn = int(n)
			if n == 0 {
				c.rerr = io.EOF
			}
			return false
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			c.waiting.Store(true)
			return true
		default:
			c.rerr = e
			return false
		}
	}
}

// Read reads into p, waiting (in the poller) until data arrives. On a
// NewHeld connection it reads through the open read, opening one if none
// is.
func (c *Conn) Read(p []byte) (int, error) {
	if !c.hold {
		return c.ReadOnce(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if c.next == nil {
		c.next, c.stop = iter.Pull(c.held)
	}
	c.rbuf, c.rn, c.rerr = p, 0, nil
	_, ok := c.next()
	c.rbuf = nil
	c.waiting.Store(false)
	if !ok {
		// The raw read ended (its error, or nil after Release): the
		// next call opens another.
		c.next, c.stop = nil, nil
		err := c.serr
		c.serr = nil
		if err == nil {
			err = c.rerr
		}
		return c.rn, err
	}
	return c.rn, c.rerr
}

// ReadOnce is Read without the open read: one raw read of its own (a
// failed attempt first when the socket is empty), which holds nothing
// once it returns; for a connection that may stay idle long (an open read
// is a goroutine). It releases the open read first.
func (c *Conn) ReadOnce(p []byte) (int, error) {
	c.Release()
	if len(p) == 0 {
		return 0, nil
	}
	c.rbuf, c.rn, c.rerr = p, 0, nil
	err := c.rc.Read(c.rfn)
	c.rbuf = nil
	c.waiting.Store(false)
	if err != nil {
		return c.rn, err
	}
	return c.rn, c.rerr
}

// Release ends the open read, if any, so that the connection can be read
// some other way (another goroutine, a hand-over) or dropped. The
// goroutine that calls Read calls it, never during a Read.
func (c *Conn) Release() {
	if c.stop != nil {
		c.stop()
		c.next, c.stop = nil, nil
		c.serr = nil
	}
}

// Shutdown shuts the socket down both ways, without waiting for anyone:
// the peer sees it closed and the reader's next read ends (EOF). Closing
// the connection waits for an open read to end (a net.Conn's Close waits
// for the reads in progress), so a goroutine other than the reader's shuts
// it down first and leaves the closing to a goroutine that may wait.
func (c *Conn) Shutdown() {
	c.rc.Control(func(fd uintptr) { syscall.Shutdown(int(fd), syscall.SHUT_RDWR) })
}

// held is the open read's body: one raw read whose function (readHeld)
// yields each read's result to Read.
func (c *Conn) held(yield func(struct{}) bool) {
	c.yield, c.drained = yield, false
	c.serr = c.rc.Read(c.hfn)
	c.yield = nil
}

// readHeld is the open read's function: it reads into the buffer of the
// Read in progress and yields; resumed by the next Read, it waits in the
// poller first if the last read left the socket empty. It returns true,
// ending the raw read (and the open read), on EOF, on an error, and when
// Release stops it.
func (c *Conn) readHeld(fd uintptr) bool {
	for {
		if c.drained {
			c.drained = false
			c.waiting.Store(true)
			return false // wait until readable
		}
		if c.readSys(fd) {
			return false // wait until readable
		}
		if c.rerr != nil {
			return true // EOF or an error ends the open read
		}
		c.drained = c.rn < len(c.rbuf)
		if !c.yield(struct{}{}) {
			return true
		}
	}
}

// ReadState tells another goroutine where the reader is: waiting is true
// while it waits in Read for input, having consumed all that had arrived;
// reads changes before every read system call. A caller that sees waiting,
// then finds the socket empty, then sees the same reads and still waiting,
// knows the reader had consumed everything sent before its look.
func (c *Conn) ReadState() (reads uint64, waiting bool) {
	return c.reads.Load(), c.waiting.Load()
}

func (c *Conn) writeSome(fd uintptr) bool {
	for c.wn < len(c.wbuf) {
		rest := c.wbuf[c.wn:]
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(rest))), uintptr(len(rest)))
		switch e {
		case 0:
			c.wn += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return c.once // wait until writable, unless one attempt
		default:
			c.werr = e
			return true
		}
	}
	return true
}

// Write writes all of p, waiting (in the poller) while the socket is full.
func (c *Conn) Write(p []byte) (int, error) {
	c.wbuf, c.wn, c.werr, c.once = p, 0, nil, false
	err := c.rc.Write(c.wfn)
	c.wbuf = nil
	if err != nil {
		return c.wn, err
	}
	return c.wn, c.werr
}

// TryWrite writes what the socket takes now, without waiting.
func (c *Conn) TryWrite(p []byte) (int, error) {
	c.wbuf, c.wn, c.werr, c.once = p, 0, nil, true
	err := c.rc.Write(c.wfn)
	c.wbuf = nil
	if err != nil {
		return c.wn, err
	}
	return c.wn, c.werr
}
