package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/spillway/spillway/proxy/cstr"
)

// ReplyReader reads whole replies (RESP2 or RESP3) from a server, as raw
// bytes that can be relayed unchanged: it checks each frame's shape and
// nothing else. It is the upstream side of a proxy; requests from clients
// are read with Reader.
type ReplyReader struct {
	br  *bufio.Reader
	buf []byte
	// MaxBulkLen bounds a bulk or verbatim string's length (0: 512 MB).
	MaxBulkLen int64
	// MaxDepth bounds the nesting of aggregates (0: DefaultMaxDepth).
	MaxDepth int
}

// NewReplyReader reads replies from r.
func NewReplyReader(r io.Reader) *ReplyReader {
	return &ReplyReader{br: bufio.NewReaderSize(r, 16<<10)}
}

// DefaultMaxDepth is the nesting of aggregates a ReplyReader accepts by
// default. Redis's deepest replies come from a Lua script returning a
// table that contains itself: Redis 7.0 nests about 8,000 arrays before
// it writes "-ERR reached lua stack limit", and a proxy must relay that
// reply whole, or the replies after it are misread.
const DefaultMaxDepth = 16384

// ErrBadReply is wrapped by every error about a malformed reply.
var ErrBadReply = errors.New("resp: malformed reply")

// Read returns the next reply's raw bytes, type byte included. An
// attribute (RESP3 '|') is returned together with the reply it annotates;
// a push ('>') is returned on its own, like a reply. The slice is valid
// until the next call. I/O errors are returned as they are (io.EOF between
// replies, io.ErrUnexpectedEOF inside one).
func (r *ReplyReader) Read() ([]byte, error) {
	r.buf = r.buf[:0]
	maxDepth := r.MaxDepth
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	if err := r.frame(maxDepth); err != nil {
		if errors.Is(err, io.EOF) && len(r.buf) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return r.buf, nil
}

// line appends one CRLF-terminated line and returns it without the CRLF.
func (r *ReplyReader) line() ([]byte, error) {
	start := len(r.buf)
	for {
		chunk, err := r.br.ReadSlice('\n')
		r.buf = append(r.buf, chunk...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
		if len(r.buf)-start > 64<<10 {
			return nil, fmt.Errorf("%w: line longer than 64 KB", ErrBadReply)
		}
	}
	l := r.buf[start:]
	if len(l) < 3 || l[len(l)-2] != '\r' {
		return nil, fmt.Errorf("%w: line %q", ErrBadReply, trimLine(l))
	}
	return l[:len(l)-2], nil
}

func trimLine(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}

// count parses a header line's length: -1 or more.
func count(l []byte) (int64, error) {
	n, ok := cstr.ParseInt(l[1:])
	if !ok || n < -1 {
		return 0, fmt.Errorf("%w: length in %q", ErrBadReply, trimLine(l))
	}
	return n, nil
}

// frame appends one reply, nested up to depth levels.
func (r *ReplyReader) frame(depth int) error {
	if depth == 0 {
		return fmt.Errorf("%w: nested too deep", ErrBadReply)
	}
	l, err := r.line()
	if err != nil {
		return err
	}
	switch l[0] {
	case '+', '-', ':', ',', '#', '_', '(':
		if l[0] == '_' && len(l) != 1 || l[0] == '#' && (len(l) != 2 || l[1] != 't' && l[1] != 'f') {
			return fmt.Errorf("%w: %q", ErrBadReply, trimLine(l))
		}
		return nil
	case '$', '!', '=':
		n, err := count(l)
		if err != nil || n == -1 && l[0] == '$' {
			return err
		}
		if n < 0 {
			return fmt.Errorf("%w: %q", ErrBadReply, trimLine(l))
		}
		max := r.MaxBulkLen
		if max <= 0 {
			max = DefaultMaxBulkLen
		}
		if n > max {
			return fmt.Errorf("%w: bulk of %d bytes", ErrBadReply, n)
		}
		start := len(r.buf)
		r.buf = append(r.buf, make([]byte, n+2)...)
		if _, err := io.ReadFull(r.br, r.buf[start:]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if r.buf[len(r.buf)-2] != '\r' || r.buf[len(r.buf)-1] != '\n' {
			return fmt.Errorf("%w: bulk not followed by CRLF", ErrBadReply)
		}
		return nil
	case '*', '~', '>', '%', '|':
		n, err := count(l)
		if err != nil || n == -1 && l[0] == '*' {
			return err
		}
		if n < 0 {
			return fmt.Errorf("%w: %q", ErrBadReply, trimLine(l))
		}
		elems := n
		if l[0] == '%' || l[0] == '|' {
			elems = 2 * n
		}
		for range elems {
			if err := r.frame(depth - 1); err != nil {
				return noEOF(err)
			}
		}
		if l[0] == '|' { // an attribute precedes the reply it annotates
			return noEOF(r.frame(depth))
		}
		return nil
	}
	return fmt.Errorf("%w: unknown type %q", ErrBadReply, l[0])
}

// noEOF turns an EOF inside a reply into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
