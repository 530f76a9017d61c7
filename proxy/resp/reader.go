package resp

import (
	"bytes"
	"errors"
	"io"
	"math"

	"github.com/spillway/spillway/proxy/cstr"
)

// Redis 7.0 request limits and sizes (server.h, networking.c).
const (
	// DefaultMaxBulkLen is proto-max-bulk-len's default.
	DefaultMaxBulkLen = 512 << 20
	// DefaultMaxMultibulkLen is the largest array count Redis 7.0 accepts
	// (processMultibulkBuffer rejects counts above INT_MAX).
	DefaultMaxMultibulkLen = math.MaxInt32
	// DefaultMaxInlineLen is PROTO_INLINE_MAX_SIZE: the most bytes Redis
	// buffers while looking for the end of an inline request or of a
	// '*'/'$' header line.
	DefaultMaxInlineLen = 64 << 10

	unauthMaxMultibulk = 10    // multibulk count allowed before AUTH
	unauthMaxBulk      = 16384 // bulk length allowed before AUTH
	bigArg             = 32 << 10
	ioChunk            = 16 << 10 // PROTO_IOBUF_LEN: most bytes read at once
	defaultBufSize     = 16 << 10
	spareLimit         = 1 << 20 // big-argument buffers kept for reuse
)

// Limits are the request limits a Reader enforces. A zero field means the
// Redis default.
type Limits struct {
	MaxBulkLen      int64 // proto-max-bulk-len
	MaxMultibulkLen int64 // largest '*' count
	MaxInlineLen    int   // PROTO_INLINE_MAX_SIZE
	// Unauthenticated applies Redis's limits for clients that still have
	// to AUTH: at most 10 arguments of at most 16384 bytes each.
	Unauthenticated bool
}

// DefaultLimits returns Redis 7.0's default limits.
func DefaultLimits() Limits {
	return Limits{
		MaxBulkLen:      DefaultMaxBulkLen,
		MaxMultibulkLen: DefaultMaxMultibulkLen,
		MaxInlineLen:    DefaultMaxInlineLen,
	}
}

func (l Limits) normalized() Limits {
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = DefaultMaxBulkLen
	}
	// Keep bulk+2 and buffer sizes representable as int.
	if l.MaxBulkLen > math.MaxInt-2 {
		l.MaxBulkLen = math.MaxInt - 2
	}
	if l.MaxMultibulkLen <= 0 {
		l.MaxMultibulkLen = DefaultMaxMultibulkLen
	}
	if l.MaxInlineLen <= 0 {
		l.MaxInlineLen = DefaultMaxInlineLen
	}
	return l
}

// ProtocolError is a request Redis would reject before running it. Error
// returns Redis's reply text without the leading '-'. The connection must be
// closed after the reply is sent.
type ProtocolError struct{ msg string }

func (e *ProtocolError) Error() string { return e.msg }

var (
	errInvalidMultibulk = &ProtocolError{"ERR Protocol error: invalid multibulk length"}
	errUnauthMultibulk  = &ProtocolError{"ERR Protocol error: unauthenticated multibulk length"}
	errInvalidBulk      = &ProtocolError{"ERR Protocol error: invalid bulk length"}
	errUnauthBulk       = &ProtocolError{"ERR Protocol error: unauthenticated bulk length"}
	errTooBigMbulk      = &ProtocolError{"ERR Protocol error: too big mbulk count string"}
	errTooBigBulk       = &ProtocolError{"ERR Protocol error: too big bulk count string"}
	errTooBigInline     = &ProtocolError{"ERR Protocol error: too big inline request"}
	errUnbalanced       = &ProtocolError{"ERR Protocol error: unbalanced quotes in request"}
)

// errExpectedDollar is Redis's reply when a bulk header does not start with
// '$'. Redis prints the byte with %c and then turns CR and LF into spaces.
func errExpectedDollar(c byte) *ProtocolError {
	if c == '\r' || c == '\n' {
		c = ' '
	}
	return &ProtocolError{"ERR Protocol error: expected '$', got '" + string([]byte{c}) + "'"}
}

type parseState uint8

const (
	stIdle      parseState = iota // between commands
	stInline                      // looking for the end of an inline line
	stMultibulk                   // reading a '*' command
)

// argDesc locates a parsed bulk: in buf at start+off, or in bigs[big].
type argDesc struct {
	off, n, big int
}

// Reader parses client requests the way Redis 7.0 does (networking.c
// processInlineBuffer and processMultibulkBuffer, sds.c sdssplitargs).
// Parsing is incremental: a command arriving in many reads is scanned once.
// Like Redis it reads at most 16 KB at a time (a bulk of 32 KB or more goes
// straight into a buffer of its exact size), so the 64 KB inline limit fires
// at the same point as Redis's. A Reader is not safe for concurrent use.
type Reader struct {
	rd       io.Reader
	buf      []byte
	r, w     int // unread bytes are buf[r:w]
	initSize int
	lim      Limits
	rerr     error // read error held back until buffered bytes are parsed
	err      error // sticky: protocol or read error already returned

	st       parseState
	done     bool // a whole command is parsed and not yet returned
	returned bool // args hold the last returned command
	inline   bool
	start    int  // buf offset where the current command starts
	line     int  // buf offset of the line whose terminator is awaited
	scan     int  // buf offset up to which that line has been searched
	blocked  bool // a NUL precedes the terminator: Redis's strchr never finds it
	nargs    int64
	bulk     int64  // length of the bulk being read, -1 while its header is awaited
	big      []byte // a bulk of at least bigArg bytes read straight into its own buffer
	bigN     int    // bytes of big filled
	descs    []argDesc
	bigs     [][]byte
	spare    [][]byte
	// spareUsed: a spare buffer was kept or reused since TrimSpare.
	spareUsed bool
	args      [][]byte
}

// NewReader returns a Reader on rd with a buffer of size bytes (16 KB if
// size < 1) and the default limits. The buffer grows for commands that do
// not fit and shrinks back once they are parsed.
func NewReader(rd io.Reader, size int) *Reader {
	if size < 1 {
		size = defaultBufSize
	}
	return &Reader{
		rd:       rd,
		buf:      make([]byte, size),
		initSize: size,
		lim:      DefaultLimits(),
		bulk:     -1,
	}
}

// SetLimits replaces the limits; they apply from the next command on (a
// command already partly parsed keeps the limits it was checked against).
func (r *Reader) SetLimits(l Limits) { r.lim = l.normalized() }

// Limits returns the limits in force.
func (r *Reader) Limits() Limits { return r.lim }

// Buffered reports how many unread bytes are buffered. 0 means the next
// ReadCommand will read from the underlying reader; a nonzero count may still
// be only part of a command (see Ready).
func (r *Reader) Buffered() int { return r.w - r.r }

// QueryBuf reports the query buffer as Redis's CLIENT LIST shows it: used
// is the bytes buffered from the start of the command being parsed or run
// (and any pipelined after it), free the room left after them plus the
// big-argument buffers kept for reuse.
func (r *Reader) QueryBuf() (used, free int) {
	start := r.r
	if r.returned || r.st != stIdle {
		start = r.start
	}
	return r.w - start, len(r.buf) - r.w + r.spareBytes()
}

// ErrWait, returned by the underlying reader with no bytes, asks the
// Reader to return at once: ReadCommand returns ErrWait (not sticky; the
// next call resumes where parsing stopped), after freeing its buffers if
// it holds no part of a command (Release).
var ErrWait = errors.New("resp: no input yet")

// Release frees the Reader's buffers if it holds no part of a command (an
// idle client); the next read allocates a fresh one. It reports whether it
// did.
func (r *Reader) Release() bool {
	if r.st != stIdle || r.returned || r.done || r.r != r.w || r.big != nil {
		return false
	}
	r.buf, r.spare = nil, nil
	r.r, r.w = 0, 0
	return true
}

// TrimSpare drops the big-argument buffers kept for reuse unless one was
// reused or kept since the last call, as Redis shrinks a query buffer
// larger than its recent peak.
func (r *Reader) TrimSpare() {
	if !r.spareUsed {
		r.spare = nil
	}
	r.spareUsed = false
}

// Inline reports whether the last command returned came in the inline format.
func (r *Reader) Inline() bool { return r.inline }

// Ready reports whether ReadCommand can return without reading: a whole
// command (or a protocol error) is buffered. Like ReadCommand it invalidates
// the arguments of the previous command.
func (r *Reader) Ready() bool {
	if r.err != nil || r.done {
		return true
	}
	if r.returned {
		r.endCommand()
	}
	for {
		done, err := r.step()
		if err != nil {
			r.err = err
			return true
		}
		if !done {
			// A held-back read error ends the next ReadCommand at once.
			return r.rerr != nil
		}
		if len(r.args) > 0 {
			r.done = true
			return true
		}
		r.endCommand() // empty command: skipped, as Redis does
	}
}

// ReadCommand blocks until one whole command is available and returns its
// arguments. They alias the Reader's buffers and are valid only until the
// next call to ReadCommand or Ready. Empty commands (empty inline lines, *0,
// *-1) are skipped as Redis skips them. A protocol violation returns a
// *ProtocolError; a read error (io.EOF included, also in the middle of a
// command, where Redis closes without a reply) is returned as is. Errors are
// sticky.
func (r *Reader) ReadCommand() ([][]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	if !r.done {
		if r.returned {
			r.endCommand()
		}
		for {
			done, err := r.step()
			if err != nil {
				r.err = err
				return nil, err
			}
			if done {
				if len(r.args) > 0 {
					break
				}
				r.endCommand()
				continue
			}
			if err := r.fill(); err != nil {
				if errors.Is(err, ErrWait) {
					r.Release()
					return nil, err
				}
				r.err = err
				return nil, err
			}
		}
	}
	r.done = false
	r.returned = true
	return r.args, nil
}

// endCommand releases the last command's memory and returns to stIdle.
func (r *Reader) endCommand() {
	r.returned = false
	r.st = stIdle
	clear(r.args)
	r.args = r.args[:0]
	r.descs = r.descs[:0]
	for i, b := range r.bigs {
		if len(r.spare) < 4 && cap(b) <= spareLimit-r.spareBytes() {
			r.spare = append(r.spare, b[:cap(b)])
			r.spareUsed = true
		}
		r.bigs[i] = nil
	}
	r.bigs = r.bigs[:0]
	if r.r == r.w {
		r.r, r.w = 0, 0
	}
	if len(r.buf) > max(4*r.initSize, 4*ioChunk) && r.w-r.r <= r.initSize {
		r.relocate(make([]byte, r.initSize), r.r)
	}
}

func (r *Reader) spareBytes() int {
	n := 0
	for _, b := range r.spare {
		n += cap(b)
	}
	return n
}

// step parses as far as the buffered bytes allow. It reports whether a
// command is complete (its arguments in r.args, possibly none).
func (r *Reader) step() (bool, error) {
	if r.st == stIdle {
		if r.r == r.w {
			return false, nil
		}
		r.start = r.r
		r.startLine(r.r)
		r.nargs, r.bulk = 0, -1
		if r.buf[r.r] == '*' {
			r.st = stMultibulk
		} else {
			r.st = stInline
		}
	}
	if r.st == stInline {
		return r.stepInline()
	}
	return r.stepMultibulk()
}

func (r *Reader) startLine(at int) {
	r.line, r.scan, r.blocked = at, at, false
}

// findLine returns the offset of the first c in the current line, or -1 if
// it is not buffered yet. Like strchr on Redis's NUL-terminated query buffer
// it never finds c past a NUL byte. Bytes already searched are not searched
// again.
func (r *Reader) findLine(c byte) int {
	if r.blocked {
		return -1
	}
	seg := r.buf[r.scan:r.w]
	i := bytes.IndexByte(seg, c)
	if i < 0 {
		i = len(seg)
	}
	if bytes.IndexByte(seg[:i], 0) >= 0 {
		r.blocked = true
		return -1
	}
	r.scan += i
	if i == len(seg) {
		return -1
	}
	return r.scan
}

func (r *Reader) stepInline() (bool, error) {
	nl := r.findLine('\n')
	if nl < 0 {
		if r.w-r.line > r.lim.MaxInlineLen {
			return false, errTooBigInline
		}
		return false, nil
	}
	end := nl
	if end > r.line && r.buf[end-1] == '\r' {
		end--
	}
	args, ok := cstr.SplitArgsInPlace(r.buf[r.line:end], r.args[:0])
	r.args = args
	if !ok {
		return false, errUnbalanced
	}
	r.r = nl + 1
	r.inline = true
	return true, nil
}

// headerLine returns the offset of the '\r' ending the current header line
// once one more byte follows it (Redis skips that byte unchecked), or -1.
func (r *Reader) headerLine(tooBig error) (int, error) {
	cr := r.findLine('\r')
	if cr < 0 {
		if r.w-r.line > r.lim.MaxInlineLen {
			return -1, tooBig
		}
		return -1, nil
	}
	if cr+1 >= r.w {
		return -1, nil
	}
	return cr, nil
}

func (r *Reader) stepMultibulk() (bool, error) {
	if r.nargs == 0 {
		cr, err := r.headerLine(errTooBigMbulk)
		if cr < 0 {
			return false, err
		}
		n, ok := cstr.ParseInt(r.buf[r.line+1 : cr])
		if !ok || n > r.lim.MaxMultibulkLen {
			return false, errInvalidMultibulk
		}
		if n > unauthMaxMultibulk && r.lim.Unauthenticated {
			return false, errUnauthMultibulk
		}
		r.r = cr + 2
		r.inline = false
		if n <= 0 {
			r.args = r.args[:0]
			return true, nil
		}
		r.nargs = n
		r.startLine(r.r)
	}
	for r.nargs > 0 {
		if r.bulk < 0 {
			cr, err := r.headerLine(errTooBigBulk)
			if cr < 0 {
				return false, err
			}
			if c := r.buf[r.line]; c != '$' {
				return false, errExpectedDollar(c)
			}
			n, ok := cstr.ParseInt(r.buf[r.line+1 : cr])
			if !ok || n < 0 || n > r.lim.MaxBulkLen {
				return false, errInvalidBulk
			}
			if n > unauthMaxBulk && r.lim.Unauthenticated {
				return false, errUnauthBulk
			}
			r.r = cr + 2
			r.bulk = n
			if n >= bigArg && int64(r.w-r.r) < n+2 {
				r.startBig(int(n) + 2)
			}
		}
		if r.big != nil {
			if r.bigN < len(r.big) {
				return false, nil
			}
			r.descs = append(r.descs, argDesc{n: int(r.bulk), big: len(r.bigs)})
			r.bigs = append(r.bigs, r.big)
			r.big = nil
		} else {
			if int64(r.w-r.r) < r.bulk+2 {
				return false, nil
			}
			// The two bytes after the data are skipped unchecked, as Redis does.
			r.descs = append(r.descs, argDesc{off: r.r - r.start, n: int(r.bulk), big: -1})
			r.r += int(r.bulk) + 2
		}
		r.nargs--
		r.bulk = -1
		r.startLine(r.r)
	}
	r.args = r.args[:0]
	for _, d := range r.descs {
		if d.big >= 0 {
			r.args = append(r.args, r.bigs[d.big][:d.n:d.n])
			continue
		}
		off := r.start + d.off
		r.args = append(r.args, r.buf[off:off+d.n:off+d.n])
	}
	return true, nil
}

// startBig moves a big bulk (data and CRLF, size bytes) out of the main
// buffer into a buffer of its own that the rest of it is read into directly.
func (r *Reader) startBig(size int) {
	var b []byte
	for i, s := range r.spare {
		if cap(s) >= size {
			b = s[:size]
			last := len(r.spare) - 1
			r.spare[i] = r.spare[last]
			r.spare[last] = nil
			r.spare = r.spare[:last]
			break
		}
	}
	if b == nil {
		b = make([]byte, size)
	}
	r.bigN = copy(b, r.buf[r.r:r.w])
	r.r = r.w
	r.big = b
}

// fill reads once (at most ioChunk bytes into the main buffer, or the rest of
// a big bulk into its own buffer).
func (r *Reader) fill() error {
	if r.rerr != nil {
		return r.rerr
	}
	var dst []byte
	if r.big != nil {
		dst = r.big[r.bigN:]
	} else {
		r.makeRoom()
		dst = r.buf[r.w:min(len(r.buf), r.w+ioChunk)]
	}
	for range 100 {
		n, err := r.rd.Read(dst)
		if n < 0 || n > len(dst) {
			return errors.New("resp: reader returned an invalid count")
		}
		if r.big != nil {
			r.bigN += n
		} else {
			r.w += n
		}
		if err != nil {
			if n > 0 {
				r.rerr = err
				return nil
			}
			return err
		}
		if n > 0 {
			return nil
		}
	}
	return io.ErrNoProgress
}

// makeRoom makes free space after r.w, keeping the current command (or the
// unread bytes when idle) in the buffer.
func (r *Reader) makeRoom() {
	keep := r.r
	if r.st != stIdle {
		keep = r.start
	}
	free := len(r.buf) - r.w
	if keep > 0 && free < len(r.buf)/2 {
		r.relocate(r.buf, keep)
		keep = 0
		free = len(r.buf) - r.w
	}
	if free > 0 {
		return
	}
	need := r.w - keep + ioChunk
	if r.st == stMultibulk && r.bulk >= 0 {
		need = max(need, r.r-keep+int(r.bulk)+2)
	}
	r.relocate(make([]byte, max(2*len(r.buf), need)), keep)
}

// relocate moves buf[keep:w] to the start of nb and shifts every offset.
func (r *Reader) relocate(nb []byte, keep int) {
	copy(nb, r.buf[keep:r.w])
	r.buf = nb
	r.r -= keep
	r.w -= keep
	r.start -= keep
	r.line -= keep
	r.scan -= keep
}
