package rdbfile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spillway/spillway/proxy/rdb"
)

// ErrCorrupt wraps every error about the file's content: truncated,
// malformed, failed checksum, values Redis would refuse.
var ErrCorrupt = errors.New("rdbfile: corrupt or unsupported RDB file")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// reader reads an RDB file, hashing every byte it consumes (Redis's
// CRC-64) and counting them.
type reader struct {
	br  *bufio.Reader
	crc uint64
	n   int64
	tmp [9]byte
	// rec, when set, receives a copy of every byte consumed (Splice
	// re-emits the records it keeps).
	rec *[]byte
}

func newReader(r io.Reader) *reader { return &reader{br: bufio.NewReaderSize(r, 256<<10)} }

// full fills p.
func (r *reader) full(p []byte) error {
	if _, err := io.ReadFull(r.br, p); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return corrupt("unexpected end of file at byte %d", r.n)
		}
		return fmt.Errorf("rdbfile: read: %w", err)
	}
	r.crc = rdb.CRC64(r.crc, p)
	r.n += int64(len(p))
	if r.rec != nil {
		*r.rec = append(*r.rec, p...)
	}
	return nil
}

func (r *reader) byte() (byte, error) {
	err := r.full(r.tmp[:1])
	return r.tmp[0], err
}

// length is rdbLoadLenByRef: a length, or (encoded) a string encoding.
func (r *reader) length() (n uint64, encoded bool, err error) {
	b, err := r.byte()
	if err != nil {
		return 0, false, err
	}
	switch b >> 6 {
	case 0:
		return uint64(b & 0x3f), false, nil
	case 1:
		c, err := r.byte()
		return uint64(b&0x3f)<<8 | uint64(c), false, err
	case 3:
		return uint64(b & 0x3f), true, nil
	}
	switch b {
	case 0x80:
		err = r.full(r.tmp[:4])
		return uint64(binary.BigEndian.Uint32(r.tmp[:4])), false, err
	case 0x81:
		err = r.full(r.tmp[:8])
		return binary.BigEndian.Uint64(r.tmp[:8]), false, err
	}
	return 0, false, corrupt("unknown length encoding 0x%02x at byte %d", b, r.n-1)
}

// count reads a plain length (an element count, a database number).
func (r *reader) count() (uint64, error) {
	n, enc, err := r.length()
	if err == nil && enc {
		err = corrupt("encoded string where a length was expected at byte %d", r.n)
	}
	return n, err
}

// maxString bounds one string of the file (Redis's largest value).
const maxString = rdb.MaxStringLen

// str reads a string (plain, integer-encoded or LZF-compressed) into a new
// slice.
func (r *reader) str() ([]byte, error) {
	n, enc, err := r.length()
	if err != nil {
		return nil, err
	}
	if !enc {
		if n > maxString {
			return nil, corrupt("string of %d bytes at byte %d", n, r.n)
		}
		b := make([]byte, n)
		return b, r.full(b)
	}
	switch n {
	case 0:
		b, err := r.byte()
		return strconv.AppendInt(nil, int64(int8(b)), 10), err
	case 1:
		err := r.full(r.tmp[:2])
		return strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(r.tmp[:2]))), 10), err
	case 2:
		err := r.full(r.tmp[:4])
		return strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(r.tmp[:4]))), 10), err
	case 3:
		clen, err := r.count()
		if err != nil {
			return nil, err
		}
		ulen, err := r.count()
		if err != nil {
			return nil, err
		}
		if clen > maxString || ulen > maxString {
			return nil, corrupt("compressed string of %d/%d bytes at byte %d", clen, ulen, r.n)
		}
		c := make([]byte, clen)
		if err := r.full(c); err != nil {
			return nil, err
		}
		s, err := rdb.LZFDecompress(c, int(ulen))
		if err != nil || len(s) != int(ulen) {
			return nil, corrupt("bad LZF string at byte %d", r.n)
		}
		return s, nil
	}
	return nil, corrupt("unknown string encoding %d at byte %d", n, r.n)
}
