package replica

import (
	"bufio"
	"encoding/binary"
	"strconv"
)

// streamDBOf peeks at the start of an RDB in br, without consuming it,
// for its repl-stream-db auxiliary field: the database the master's
// stream goes on in after the RDB (a master sends a SELECT first, but a
// replica relaying its own master's stream does not). 0 if absent. It
// reads no further than the auxiliary fields, which open the file.
func streamDBOf(br *bufio.Reader) int {
	p := &peeker{br: br, pos: 9}
	if magic, err := br.Peek(9); err != nil || string(magic[:5]) != "REDIS" {
		return 0
	}
	for range 64 {
		op, ok := p.take(1)
		if !ok || op[0] != 0xFA {
			return 0 // the auxiliary fields ended
		}
		key, ok := p.str()
		if !ok {
			return 0
		}
		val, ok := p.str()
		if !ok {
			return 0
		}
		if key == "repl-stream-db" {
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return 0
			}
			return n
		}
	}
	return 0
}

// peeker reads an RDB's opening bytes with Peek.
type peeker struct {
	br  *bufio.Reader
	pos int
}

// peek returns the n bytes at the position, waiting for them.
func (p *peeker) peek(n int) ([]byte, bool) {
	b, err := p.br.Peek(p.pos + n)
	if err != nil {
		return nil, false
	}
	return b[p.pos:], true
}

// take is peek, advancing past the bytes.
func (p *peeker) take(n int) ([]byte, bool) {
	b, ok := p.peek(n)
	p.pos += n
	return b, ok
}

// length reads an RDB length; enc reports a special string encoding.
func (p *peeker) length() (n uint64, enc bool, ok bool) {
	b, ok := p.take(1)
	if !ok {
		return 0, false, false
	}
	switch b[0] >> 6 {
	case 0:
		return uint64(b[0] & 0x3f), false, true
	case 1:
		c, ok := p.take(1)
		return uint64(b[0]&0x3f)<<8 | uint64(c[0]), false, ok
	case 3:
		return uint64(b[0] & 0x3f), true, true
	}
	switch b[0] {
	case 0x80:
		c, ok := p.take(4)
		if !ok {
			return 0, false, false
		}
		return uint64(binary.BigEndian.Uint32(c)), false, true
	case 0x81:
		c, ok := p.take(8)
		if !ok {
			return 0, false, false
		}
		return binary.BigEndian.Uint64(c), false, true
	}
	return 0, false, false
}

// str reads an RDB string: raw, an integer, or LZF (returned empty: the
// fields looked for are never compressed).
func (p *peeker) str() (string, bool) {
	n, enc, ok := p.length()
	if !ok {
		return "", false
	}
	if !enc {
		if n > 1<<16 {
			return "", false
		}
		b, ok := p.take(int(n))
		return string(b), ok
	}
	switch n {
	case 0:
		b, ok := p.take(1)
		if !ok {
			return "", false
		}
		return strconv.Itoa(int(int8(b[0]))), true
	case 1:
		b, ok := p.take(2)
		if !ok {
			return "", false
		}
		return strconv.Itoa(int(int16(binary.LittleEndian.Uint16(b)))), true
	case 2:
		b, ok := p.take(4)
		if !ok {
			return "", false
		}
		return strconv.Itoa(int(int32(binary.LittleEndian.Uint32(b)))), true
	case 3:
		clen, _, ok := p.length()
		if !ok {
			return "", false
		}
		if _, _, ok := p.length(); !ok || clen > 1<<16 {
			return "", false
		}
		_, ok = p.take(int(clen))
		return "", ok
	}
	return "", false
}
