// Package rawio reads and writes sockets with raw system calls. Go's
// sockets are non-blocking, so a read or write on them never blocks the
// thread; making it with syscall.RawSyscall instead of the runtime's
// syscall path skips the bookkeeping that lets the scheduler hand the
// processor to another thread during a long system call. On a proxy whose
// every command is a short socket read and write, that bookkeeping (and
// the monitor thread waking every 20 µs to retake processors from system
// calls) costs more than the calls themselves. Waiting for a socket to be
// ready still goes through the runtime's poller, deadlines included.
package rawio

import (
	"io"
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
	c.wfn = c.writeSome
	return c
}

func (c *Conn) readOnce(fd uintptr) bool {
	for {
		c.reads.Add(1)
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(c.rbuf))), uintptr(len(c.rbuf)))
		switch e {
		case 0:
			c.rn = int(n)
			if n == 0 {
				c.rerr = io.EOF
			}
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			c.waiting.Store(true)
			return false // wait until readable
		default:
			c.rerr = e
			return true
		}
	}
}

// Read reads into p, waiting (in the poller) until data arrives.
func (c *Conn) Read(p []byte) (int, error) {
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
