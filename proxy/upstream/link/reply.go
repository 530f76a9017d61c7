package link

import (
	"bytes"
	"fmt"
	"strconv"
)

// replyParser reads values out of a raw RESP2 reply frame, for the few
// replies Spillway itself inspects (the demoter's reads, INFO, SCAN).
type replyParser struct {
	b   []byte
	err error
}

func (p *replyParser) fail(what string) {
	if p.err == nil {
		p.err = fmt.Errorf("upstream: unexpected reply (%s): %.80q", what, p.b)
	}
}

// header reads a "<prefix><n>\r\n" line and returns n.
func (p *replyParser) header(prefix byte) int {
	if p.err != nil {
		return 0
	}
	if len(p.b) == 0 || p.b[0] != prefix {
		p.fail("want " + string(prefix))
		return 0
	}
	i := bytes.IndexByte(p.b, '\r')
	if i < 0 || i+1 >= len(p.b) {
		p.fail("short header")
		return 0
	}
	n, err := strconv.Atoi(string(p.b[1:i]))
	if err != nil {
		p.fail("bad length")
		return 0
	}
	p.b = p.b[i+2:]
	return n
}

// bulk reads one bulk string (copied; nil for a null bulk).
func (p *replyParser) bulk() []byte {
	n := p.header('$')
	if p.err != nil || n < 0 {
		return nil
	}
	if n > len(p.b)-2 {
		p.fail("short bulk")
		return nil
	}
	v := append([]byte{}, p.b[:n]...)
	p.b = p.b[n+2:]
	return v
}

// bulks reads an array of bulk strings (nil elements for nulls).
func (p *replyParser) bulks() [][]byte {
	n := p.header('*')
	if p.err != nil || n < 0 {
		return nil
	}
	// Every element takes at least 5 bytes: a hostile count cannot make
	// the parser allocate more than the reply's size.
	out := make([][]byte, 0, min(n, len(p.b)/5))
	for i := 0; i < n && p.err == nil; i++ {
		out = append(out, p.bulk())
	}
	return out
}

// ParseBulks parses a RESP2 array of bulk strings.
func ParseBulks(r []byte) ([][]byte, error) {
	p := replyParser{b: r}
	v := p.bulks()
	return v, p.err
}

// ParseScan parses a SCAN-family reply: the next cursor and the items.
func ParseScan(r []byte) (cursor uint64, items [][]byte, err error) {
	p := replyParser{b: r}
	if p.header('*') != 2 && p.err == nil {
		p.fail("scan reply")
	}
	c := p.bulk()
	items = p.bulks()
	if p.err != nil {
		return 0, nil, p.err
	}
	cursor, err = strconv.ParseUint(string(c), 10, 64)
	return cursor, items, err
}

// InfoField returns field's value in an INFO reply body.
func InfoField(info []byte, field string) (string, bool) {
	for len(info) > 0 {
		line := info
		if i := bytes.IndexByte(info, '\n'); i >= 0 {
			line, info = info[:i], info[i+1:]
		} else {
			info = nil
		}
		line = bytes.TrimRight(line, "\r")
		if len(line) > len(field) && line[len(field)] == ':' && string(line[:len(field)]) == field {
			return string(line[len(field)+1:]), true
		}
	}
	return "", false
}
