package link

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
)

// scanner reads whole replies from the upstream as raw frames, as
// resp.ReplyReader does and with its rules (every frame's shape checked,
// resp.ErrBadReply, MaxBulkLen, MaxDepth, io.ErrUnexpectedEOF inside a
// reply), but in place: the socket is read straight into one buffer and a
// frame's end is found by skipping (a bulk's length, a line's end), so a
// frame is handed out as a slice of that buffer, never copied, and an
// array of a hundred elements costs a hundred short scans instead of a
// hundred buffered reads and appends. A frame cut by the end of what was
// read is resumed where its scan stopped once more bytes are in.
//
// Frames stay where they were read until the buffer must be compacted or
// grown to take more input (gen counts those moves): a reader that hands
// several consecutive frames on as one span checks gen first.
type scanner struct {
	rd  io.Reader
	buf []byte
	// r is where the frame being scanned starts, w the end of the input.
	r, w int
	// The scan of the frame at r: bytes of it scanned, and the elements
	// still expected at each open level (level 0 is the frame itself).
	off  int
	need []int
	// gen is incremented whenever bytes move in buf (compaction, growth).
	gen uint64
	// maxBulk bounds a bulk string's length, maxDepth the nesting of
	// aggregates (as resp.ReplyReader's MaxBulkLen and MaxDepth).
	maxBulk  int64
	maxDepth int
	// start is the offset in buf of the last frame Read returned.
	start int
}

// scanBufSize is the scanner's initial buffer: a socket read of a busy
// shared connection's replies.
const scanBufSize = 64 << 10

// maxLine bounds a header or simple line, as resp.ReplyReader does.
const maxLine = 64 << 10

func newScanner(rd io.Reader) *scanner {
	return &scanner{rd: rd, buf: make([]byte, scanBufSize), need: append(make([]int, 0, 16), 1),
		maxBulk: resp.DefaultMaxBulkLen, maxDepth: resp.DefaultMaxDepth}
}

// Read returns the next reply's raw bytes. The slice is valid until the
// next call that has to read input; its offset in the buffer is s.start.
func (s *scanner) Read() ([]byte, error) {
	for {
		done, want, err := s.scan()
		if err != nil {
			return nil, err
		}
		if done {
			frame := s.buf[s.r : s.r+s.off]
			s.start = s.r
			s.r += s.off
			s.off = 0
			s.need = append(s.need[:0], 1)
			return frame, nil
		}
		if err := s.fill(want); err != nil {
			if errors.Is(err, io.EOF) && s.w > s.r {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// buffered reports whether input is buffered beyond the last frame.
func (s *scanner) buffered() bool { return s.w > s.r }

// fill reads more input, making room first: the frame being scanned is
// moved to the buffer's front, and the buffer grows to hold at least want
// bytes of it (a bulk's length is known before its bytes arrive).
func (s *scanner) fill(want int) error {
	if s.r == s.w && s.r > 0 {
		// Nothing buffered: read at the front (the frames handed out so
		// far are overwritten).
		s.r, s.w = 0, 0
		s.gen++
	}
	have := s.w - s.r
	if s.w == len(s.buf) || want > len(s.buf)-s.r {
		size := len(s.buf)
		for size < want || size-have < 4<<10 {
			size *= 2
		}
		if size != len(s.buf) || s.r > 0 {
			nb := s.buf
			if size != len(s.buf) {
				nb = make([]byte, size)
			}
			copy(nb, s.buf[s.r:s.w])
			s.buf, s.r, s.w = nb, 0, have
			s.gen++
		}
	}
	for {
		n, err := s.rd.Read(s.buf[s.w:])
		s.w += n
		if n > 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// scan goes on with the frame at s.r. It reports whether the frame is
// whole; if not, want is how many bytes from s.r the next element needs
// (at least one more than are buffered).
func (s *scanner) scan() (done bool, want int, err error) {
	for len(s.need) > 0 {
		top := len(s.need) - 1
		if s.need[top] == 0 {
			s.need = s.need[:top]
			continue
		}
		p := s.r + s.off
		in := s.buf[p:s.w]
		if top < s.maxDepth {
			// The common element first: a well-formed bulk string, skipped
			// without a line search or a general number parse. Anything
			// else (and every error) takes the general path below.
			if n, hl := bulkHeader(in); hl > 0 && n <= s.maxBulk {
				end := hl + int(n) + 2
				if end > len(in) {
					return false, s.off + end, nil
				}
				if in[end-2] == '\r' && in[end-1] == '\n' {
					s.off += end
					s.need[top]--
					continue
				}
			}
		}
		nl := bytes.IndexByte(in, '\n')
		if nl < 0 {
			if len(in) > maxLine {
				return false, 0, fmt.Errorf("%w: line longer than 64 KB", resp.ErrBadReply)
			}
			return false, s.off + len(in) + 1, nil
		}
		if nl > maxLine {
			return false, 0, fmt.Errorf("%w: line longer than 64 KB", resp.ErrBadReply)
		}
		line := in[:nl+1]
		if len(line) < 3 || line[len(line)-2] != '\r' {
			return false, 0, fmt.Errorf("%w: line %q", resp.ErrBadReply, trimmed(line))
		}
		l := line[:len(line)-2]
		if top >= s.maxDepth {
			return false, 0, fmt.Errorf("%w: nested too deep", resp.ErrBadReply)
		}
		switch l[0] {
		case '+', '-', ':', ',', '#', '_', '(':
			if l[0] == '_' && len(l) != 1 || l[0] == '#' && (len(l) != 2 || l[1] != 't' && l[1] != 'f') {
				return false, 0, fmt.Errorf("%w: %q", resp.ErrBadReply, trimmed(l))
			}
			s.off += len(line)
			s.need[top]--
		case '$', '!', '=':
			n, err := headerCount(l)
			if err != nil {
				return false, 0, err
			}
			if n == -1 && l[0] == '$' {
				s.off += len(line)
				s.need[top]--
				continue
			}
			if n < 0 {
				return false, 0, fmt.Errorf("%w: %q", resp.ErrBadReply, trimmed(l))
			}
			if n > s.maxBulk {
				return false, 0, fmt.Errorf("%w: bulk of %d bytes", resp.ErrBadReply, n)
			}
			end := len(line) + int(n) + 2
			if end > len(in) {
				return false, s.off + end, nil
			}
			if in[end-2] != '\r' || in[end-1] != '\n' {
				return false, 0, fmt.Errorf("%w: bulk not followed by CRLF", resp.ErrBadReply)
			}
			s.off += end
			s.need[top]--
		case '*', '~', '>', '%', '|':
			n, err := headerCount(l)
			if err != nil {
				return false, 0, err
			}
			if n == -1 && l[0] == '*' {
				s.off += len(line)
				s.need[top]--
				continue
			}
			if n < 0 {
				return false, 0, fmt.Errorf("%w: %q", resp.ErrBadReply, trimmed(l))
			}
			// No reply has 2^48 elements; capped, the count cannot overflow.
			n = min(n, 1<<48)
			if l[0] == '%' || l[0] == '|' {
				n *= 2
			}
			s.off += len(line)
			// An attribute precedes the reply it annotates: that reply is
			// still the element this level expects.
			if l[0] != '|' {
				s.need[top]--
			}
			if n > 0 {
				s.need = append(s.need, int(n))
			}
		default:
			return false, 0, fmt.Errorf("%w: unknown type %q", resp.ErrBadReply, l[0])
		}
	}
	return true, 0, nil
}

// bulkHeader parses a bulk string's header at the start of in, "$" and a
// length of 1 to 18 digits without a leading zero (or "0") and CRLF, as
// Redis writes them: it returns the length and the header's size, or a
// size of 0 when in does not start with such a whole header.
func bulkHeader(in []byte) (n int64, size int) {
	if len(in) < 4 || in[0] != '$' || in[1] < '0' || in[1] > '9' || in[1] == '0' && in[2] != '\r' {
		return 0, 0
	}
	for i := 1; i < len(in) && i <= 19; i++ {
		c := in[i]
		if c >= '0' && c <= '9' {
			n = n*10 + int64(c-'0')
			continue
		}
		if c == '\r' && i+1 < len(in) && in[i+1] == '\n' {
			return n, i + 2
		}
		return 0, 0
	}
	return 0, 0
}

// headerCount parses a header line's length: -1 or more.
func headerCount(l []byte) (int64, error) {
	n, ok := cstr.ParseInt(l[1:])
	if !ok || n < -1 {
		return 0, fmt.Errorf("%w: length in %q", resp.ErrBadReply, trimmed(l))
	}
	return n, nil
}

func trimmed(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}
