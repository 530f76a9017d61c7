package upstream

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/repl"
)

// relayStream reads the upstream's replication stream and feeds the Master
// what Spillway's replicas must apply (see relay.go): the upstream's
// commands minus the demoter's UNLINKs and the reloads' RESTOREs (and its
// PINGs: the relay sends its own), and, where an ordering PUBLISH comes back, Spillway's own changes
// of cold keys. SELECTs are the relay's own: it tracks the database of the
// upstream's stream (udb) and of the Master's (edb) and selects before a
// command whose database is not the Master stream's. A MULTI block is held
// until its EXEC, and dropped whole if nothing in it is kept.
type relayStream struct {
	r    *relay
	gen  int64
	br   *bufio.Reader
	m    *repl.Master
	conn *replLink

	udb, edb int
	off      int64 // the Master's offset after the last feed
	raw      []byte
	spans    [][2]int
	args     [][]byte
	multi    bool
	block    []localEvent
	sel      []byte
}

func (s *relayStream) run() error {
	s.off = s.m.Offset()
	for {
		if err := s.read(); err != nil {
			return err
		}
		n := int64(len(s.raw))
		s.r.emitMu.Lock()
		err := s.handle()
		s.r.emitMu.Unlock()
		if err != nil {
			return err
		}
		r := s.r
		r.mu.Lock()
		if r.gen != s.gen {
			r.mu.Unlock()
			return nil
		}
		r.upOff += n
		if !s.multi {
			r.last = relayMark{up: r.upOff, off: s.off, db: s.edb}
			if r.armed > 0 {
				if len(r.marks) >= maxMarks {
					// A fetch this slow fails (its offset is gone) and the
					// replica retries, rather than let the marks grow.
					r.marks = append(r.marks[:0], r.marks[len(r.marks)/2:]...)
				}
				r.marks = append(r.marks, r.last)
			}
		}
		r.cond.Broadcast()
		r.mu.Unlock()
	}
}

// handle passes, holds or drops the command just read.
func (s *relayStream) handle() error {
	args := s.args
	if len(args) == 0 {
		return nil
	}
	name := args[0]
	switch {
	case cstr.EqualFold(name, "select") && len(args) == 2:
		db, ok := cstr.ParseInt(args[1])
		if !ok || db < 0 {
			return fmt.Errorf("relay: bad SELECT in the stream: %q", args[1])
		}
		s.udb = int(db)
	case cstr.EqualFold(name, "ping"):
		// The upstream's keepalive: the relay PINGs on Spillway's period.
	case cstr.EqualFold(name, "replconf"):
		if len(args) > 1 && cstr.EqualFold(args[1], "getack") {
			return s.r.sendAck(s.conn)
		}
	case cstr.EqualFold(name, "multi"):
		s.multi, s.block = true, s.block[:0]
	case cstr.EqualFold(name, "exec") && s.multi:
		s.multi = false
		if len(s.block) == 0 {
			return nil
		}
		s.emit(s.block[0].db, []byte("*1\r\n$5\r\nMULTI\r\n"))
		for _, b := range s.block {
			s.emit(b.db, b.cmd)
		}
		s.off = s.m.FeedRaw([]byte("*1\r\n$4\r\nEXEC\r\n"))
	case cstr.EqualFold(name, "unlink") && len(args) > 2 && string(args[len(args)-1]) == relayMarker:
		// The demoter's: the keys are cold now, the replicas keep them.
	case cstr.EqualFold(name, "restore") && len(args) > 1 && s.expectedRestore(args[1]):
		// A reload's: the replicas hold the key already.
	case cstr.EqualFold(name, "publish") && len(args) == 3 && string(args[1]) == relayChannel:
		n, ok := cstr.ParseInt(args[2])
		if !ok {
			return fmt.Errorf("relay: bad ordering PUBLISH %q", args[2])
		}
		for _, ev := range s.r.takeLocal(n) {
			s.emit(ev.db, ev.cmd)
		}
		if n > s.r.injected.Load() {
			s.r.injected.Store(n)
		}
	default:
		if s.multi {
			s.block = append(s.block, localEvent{s.udb, append([]byte(nil), s.raw...)})
		} else {
			s.emit(s.udb, s.raw)
		}
	}
	return nil
}

// expectedRestore reports (and consumes) a reload's announced RESTORE of
// key in the stream's database.
func (s *relayStream) expectedRestore(key []byte) bool {
	r := s.r
	k := restoreKey{s.udb, string(key)}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.restores[k] == 0 {
		return false
	}
	if r.restores[k]--; r.restores[k] == 0 {
		delete(r.restores, k)
	}
	return true
}

// emit feeds cmd, selecting db first if the Master's stream is elsewhere.
func (s *relayStream) emit(db int, cmd []byte) {
	if s.r.reselect.Load() && s.r.reselect.Swap(false) {
		s.edb = -1
	}
	if db != s.edb {
		n := strconv.Itoa(db)
		s.sel = fmt.Appendf(s.sel[:0], "*2\r\n$6\r\nSELECT\r\n$%d\r\n%s\r\n", len(n), n)
		s.m.FeedRaw(s.sel)
		s.edb = db
	}
	s.off = s.m.FeedRaw(cmd)
}

// maxMarks bounds the command boundaries kept while a replica's RDB is
// being fetched.
const maxMarks = 1 << 20

// maxBulk bounds one argument of the stream (Redis's proto-max-bulk-len
// default).
const maxBulk = 512 << 20

// read reads one command of the stream into raw (its exact bytes) and
// args.
func (s *relayStream) read() error {
	s.raw, s.spans, s.args = s.raw[:0], s.spans[:0], s.args[:0]
	line, err := s.line()
	if err != nil {
		return err
	}
	if len(line) < 3 || line[0] != '*' {
		return fmt.Errorf("relay: unexpected %q in the upstream's stream", line)
	}
	n, ok := cstr.ParseInt(line[1 : len(line)-2])
	if !ok || n < 0 || n > 1<<20 {
		return fmt.Errorf("relay: bad array header %q", line)
	}
	for range n {
		h, err := s.line()
		if err != nil {
			return err
		}
		if len(h) < 3 || h[0] != '$' {
			return fmt.Errorf("relay: bad bulk header %q", h)
		}
		l, ok := cstr.ParseInt(h[1 : len(h)-2])
		if !ok || l < 0 || l > maxBulk {
			return fmt.Errorf("relay: bad bulk length %q", h)
		}
		at := len(s.raw)
		s.raw = append(s.raw, make([]byte, l+2)...)
		if _, err := io.ReadFull(s.br, s.raw[at:]); err != nil {
			return err
		}
		if !bytes.HasSuffix(s.raw, []byte("\r\n")) {
			return fmt.Errorf("relay: bulk not ended by CRLF")
		}
		s.spans = append(s.spans, [2]int{at, at + int(l)})
	}
	for _, sp := range s.spans {
		s.args = append(s.args, s.raw[sp[0]:sp[1]])
	}
	return nil
}

// line appends one CRLF-ended line to raw and returns it.
func (s *relayStream) line() ([]byte, error) {
	at := len(s.raw)
	for {
		b, err := s.br.ReadSlice('\n')
		s.raw = append(s.raw, b...)
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull || len(s.raw)-at > 1<<16 {
			return nil, err
		}
	}
	line := s.raw[at:]
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("relay: line not ended by CRLF: %q", line)
	}
	return line, nil
}
