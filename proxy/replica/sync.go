package replica

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spillway/spillway/proxy/rdbfile"
	"github.com/spillway/spillway/tiering"
)

// loadBufSize is the link's read buffer: the size rdbfile's loader reads
// with, so that it reads the RDB from this very buffer and never past the
// payload's end (the stream's first commands may follow in the same read).
const loadBufSize = 256 << 10

// errStopped: the link was replaced or ended (REPLICAOF).
var errStopped = errors.New("replication link ended")

// command writes args as a RESP array and reads the reply's line.
func (r *Replica) command(nc net.Conn, br *bufio.Reader, args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	r.wmu.Lock()
	nc.SetWriteDeadline(time.Now().Add(r.timeout()))
	_, err := io.WriteString(nc, b.String())
	r.wmu.Unlock()
	if err != nil {
		return "", fmt.Errorf("send %s to master: %w", args[0], err)
	}
	return r.line(nc, br)
}

// line reads one reply line (without CRLF), skipping the empty lines a
// master sends to keep the link alive while it prepares the RDB.
func (r *Replica) line(nc net.Conn, br *bufio.Reader) (string, error) {
	for {
		nc.SetReadDeadline(time.Now().Add(r.timeout()))
		s, err := br.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("read from master: %w", err)
		}
		s = strings.TrimRight(s, "\r\n")
		if s != "" {
			return s, nil
		}
	}
}

// handshake runs Redis's syncWithMaster up to the PSYNC reply: PING, AUTH
// (masterauth, masteruser), REPLCONF listening-port / ip-address / capa,
// PSYNC <replid> <offset+1>. It reports a full resync's ID and offset, or
// that the master continues the stream (+CONTINUE).
func (r *Replica) handshake(nc net.Conn, br *bufio.Reader) (full bool, id string, off int64, err error) {
	rep, err := r.command(nc, br, "PING")
	if err != nil {
		return false, "", 0, err
	}
	if rep[0] == '-' && !strings.HasPrefix(rep, "-NOAUTH") && !strings.HasPrefix(rep, "-NOPERM") &&
		!strings.HasPrefix(rep, "-ERR operation not permitted") {
		return false, "", 0, fmt.Errorf("error reply to PING from master: %s", rep[1:])
	}
	if pass := r.h.Setting("masterauth"); pass != "" {
		args := []string{"AUTH", pass}
		if user := r.h.Setting("masteruser"); user != "" {
			args = []string{"AUTH", user, pass}
		}
		if rep, err = r.command(nc, br, args...); err != nil {
			return false, "", 0, err
		}
		if rep[0] == '-' {
			return false, "", 0, fmt.Errorf("unable to AUTH to MASTER: %s", rep[1:])
		}
	}
	port := r.h.Setting("replica-announce-port")
	if port == "" || port == "0" {
		port = r.h.Setting("port")
	}
	if _, err = r.command(nc, br, "REPLCONF", "listening-port", port); err != nil {
		return false, "", 0, err // an error reply is only logged by Redis: ignored
	}
	if ip := r.h.Setting("replica-announce-ip"); ip != "" {
		if _, err = r.command(nc, br, "REPLCONF", "ip-address", ip); err != nil {
			return false, "", 0, err
		}
	}
	if _, err = r.command(nc, br, "REPLCONF", "capa", "eof", "capa", "psync2"); err != nil {
		return false, "", 0, err
	}
	myID, myOff := r.h.Master.ID(), r.reploff.Load()
	rep, err = r.command(nc, br, "PSYNC", myID, strconv.FormatInt(myOff+1, 10))
	if err != nil {
		return false, "", 0, err
	}
	switch {
	case strings.HasPrefix(rep, "+FULLRESYNC"):
		f := strings.Fields(rep)
		if len(f) != 3 || len(f[1]) != 40 {
			return false, "", 0, fmt.Errorf("bad FULLRESYNC reply from master: %q", rep)
		}
		n, perr := strconv.ParseInt(f[2], 10, 64)
		if perr != nil {
			return false, "", 0, fmt.Errorf("bad FULLRESYNC offset from master: %q", rep)
		}
		return true, f[1], n, nil
	case strings.HasPrefix(rep, "+CONTINUE"):
		if f := strings.Fields(rep); len(f) == 2 && len(f[1]) == 40 && f[1] != myID {
			// The master's ID changed (it was promoted): ours follows,
			// the old one kept for our replicas' partial resyncs.
			r.h.Master.ShiftID(f[1])
		}
		r.readOff.Store(myOff)
		r.SyncPartial.Add(1)
		r.h.Log.Info("MASTER <-> REPLICA sync: master accepted a partial resynchronization", "offset", myOff+1)
		return false, "", 0, nil
	}
	return false, "", 0, fmt.Errorf("unexpected reply to PSYNC from master: %s", rep)
}

// fullSync receives the master's RDB ("$<len>" or diskless "$EOF:<mark>")
// and loads it in place of the dataset: the old data and functions are
// flushed first (clients get -LOADING meanwhile), then the RDB is
// streamed through rdbfile.Load in bounded steps, then the ID and offset
// of +FULLRESYNC are adopted and stored.
func (r *Replica) fullSync(nc net.Conn, br *bufio.Reader, gen uint64, id string, off int64) error {
	hdr, err := r.line(nc, br)
	if err != nil {
		return err
	}
	if len(hdr) < 2 || hdr[0] != '$' {
		return fmt.Errorf("bad RDB header from master: %q", hdr)
	}
	var mark []byte
	size := int64(-1)
	if strings.HasPrefix(hdr, "$EOF:") {
		mark = []byte(hdr[5:])
		if len(mark) != 40 {
			return fmt.Errorf("bad diskless EOF mark from master: %q", hdr)
		}
	} else if size, err = strconv.ParseInt(hdr[1:], 10, 64); err != nil || size < 0 {
		return fmt.Errorf("bad RDB size from master: %q", hdr)
	}
	if !r.current(gen) {
		return errStopped
	}
	r.state.Store(int32(StateTransfer))
	r.xferSize.Store(max(size, 0))
	r.xferRead.Store(int64(br.Buffered()))
	r.xferIO.Store(time.Now().Unix())
	r.h.Log.Info("MASTER <-> REPLICA sync: receiving the RDB", "bytes", size, "diskless", mark != nil)
	r.h.Loading(true)
	defer r.h.Loading(false)
	// The old data goes, and with it the stored state: a crash from here
	// on must not resume from an offset the data no longer matches.
	var noRec []byte // an empty Record: cleared
	if !r.noRecord() {
		noRec = []byte{}
	}
	r.h.Apply([][]byte{[]byte("FLUSHALL"), []byte("SYNC")}, nil, noRec)
	r.h.Apply([][]byte{[]byte("FUNCTION"), []byte("FLUSH"), []byte("SYNC")}, nil, nil)
	nc.SetReadDeadline(time.Time{})
	var src io.Reader = br
	var lr *io.LimitedReader
	if mark == nil {
		lr = &io.LimitedReader{R: br, N: size}
		src = lr
	}
	wd := &watchdog{nc: nc, timeout: r.timeout(), r: r}
	stopWD := wd.start()
	streamDB := streamDBOf(br)
	// Now 1: no key counts as expired, as a replica loading its master's
	// RDB keeps them all (the master's DELs remove them).
	var st rdbfile.LoadStats
	if l := r.loader.Load(); l != nil {
		st.Keys, err = l.Load(src, size, r.stopChan(gen))
	} else {
		st, err = rdbfile.Load(src, r.h.Engine, rdbfile.LoadOptions{Logger: r.h.Log, Size: max(size, 0), Now: 1})
	}
	stopWD()
	if err != nil {
		return fmt.Errorf("load the master's RDB: %w", err)
	}
	if mark != nil {
		var got [40]byte
		nc.SetReadDeadline(time.Now().Add(r.timeout()))
		if _, err := io.ReadFull(br, got[:]); err != nil {
			return fmt.Errorf("read the diskless EOF mark: %w", err)
		}
		if !bytes.Equal(got[:], mark) {
			return fmt.Errorf("the master's diskless RDB does not end with its EOF mark")
		}
	} else if n, err := io.Copy(io.Discard, lr); err != nil || n != 0 {
		return fmt.Errorf("the master's RDB has %d bytes after its end (%v)", n, err)
	}
	if st.Functions > 0 && r.h.FunctionsLoaded != nil {
		if err := r.h.FunctionsLoaded(); err != nil {
			return fmt.Errorf("load the master's functions: %w", err)
		}
	}
	if !r.current(gen) {
		return errStopped
	}
	r.h.Master.Adopt(id, off)
	r.reploff.Store(off)
	r.readOff.Store(off)
	r.h.ResetClient(streamDB)
	if !r.noRecord() {
		rec := []byte(id + " " + strconv.FormatInt(off, 10) + " " + strconv.Itoa(streamDB))
		if _, err := r.h.Engine.Update(func(tx *tiering.Tx) error { return tx.PutSystem(Record, rec) }); err != nil {
			return fmt.Errorf("store the replication state: %w", err)
		}
	}
	r.SyncFull.Add(1)
	r.h.Log.Info("MASTER <-> REPLICA sync: finished with success", "keys", st.Keys, "replid", id, "offset", off)
	return nil
}

// watchdog closes the link if the transfer stalls for repl-timeout
// (Redis's replicationCron timeout while in REPL_STATE_TRANSFER).
type watchdog struct {
	nc      net.Conn
	timeout time.Duration
	r       *Replica
}

func (w *watchdog) start() (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if time.Now().Unix()-w.r.xferIO.Load() > int64(w.timeout/time.Second) {
					w.r.h.Log.Warn("timeout receiving the RDB from master")
					w.nc.Close()
					return
				}
			}
		}
	}()
	return func() { close(done) }
}

// stream applies the master's commands until the link fails: each
// complete command runs as the master client and advances the offset by
// its length; REPLCONF GETACK is answered with the offset before it.
func (r *Replica) stream(nc net.Conn, br *bufio.Reader, gen uint64) error {
	timeout := r.timeout()
	var p parser
	for {
		nc.SetReadDeadline(time.Now().Add(timeout))
		args, raw, err := p.read(br)
		if err != nil {
			return err
		}
		n := int64(len(raw))
		r.readOff.Add(n)
		if len(args) == 0 {
			r.h.Apply(nil, raw, nil) // an empty line still counts in the offset
			r.reploff.Add(n)
			continue
		}
		if len(args) >= 2 && strings.EqualFold(string(args[0]), "replconf") &&
			strings.EqualFold(string(args[1]), "getack") {
			r.sendAck(nc)
		}
		if !r.current(gen) {
			return errStopped
		}
		next := r.reploff.Load() + n
		var rec []byte
		if !r.noRecord() {
			rec = make([]byte, 0, 64)
			rec = append(rec, r.h.Master.ID()...)
			rec = append(rec, ' ')
			rec = strconv.AppendInt(rec, next, 10)
		}
		r.h.Apply(args, raw, rec)
		r.reploff.Store(next)
	}
}

// parser reads the master's stream: RESP arrays of bulk strings (or
// inline lines), keeping each command's exact bytes.
type parser struct {
	raw []byte
}

// maxBulk bounds one argument (Redis's proto-max-bulk-len default).
const maxBulk = 512 << 20

// read returns the next command's arguments and bytes; both stay valid
// until the next read.
func (p *parser) read(br *bufio.Reader) ([][]byte, []byte, error) {
	p.raw = p.raw[:0]
	line, err := p.line(br)
	if err != nil {
		return nil, nil, err
	}
	if len(line) == 0 || line[0] != '*' {
		var args [][]byte
		for _, f := range bytes.Fields(line) {
			args = append(args, f)
		}
		return args, p.raw, nil
	}
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil || n < 0 || n > 1<<20 {
		return nil, nil, fmt.Errorf("protocol error from master: bad array header %q", line)
	}
	offs := make([][2]int, n)
	for i := 0; i < n; i++ {
		h, err := p.line(br)
		if err != nil {
			return nil, nil, err
		}
		if len(h) < 2 || h[0] != '$' {
			return nil, nil, fmt.Errorf("protocol error from master: bad bulk header %q", h)
		}
		l, err := strconv.Atoi(string(h[1:]))
		if err != nil || l < 0 || l > maxBulk {
			return nil, nil, fmt.Errorf("protocol error from master: bad bulk length %q", h)
		}
		start := len(p.raw)
		p.raw = append(p.raw, make([]byte, l+2)...)
		if _, err := io.ReadFull(br, p.raw[start:]); err != nil {
			return nil, nil, fmt.Errorf("read from master: %w", err)
		}
		offs[i] = [2]int{start, start + l}
	}
	args := make([][]byte, n)
	for i, o := range offs {
		args[i] = p.raw[o[0]:o[1]:o[1]]
	}
	return args, p.raw, nil
}

// line reads one line into p.raw and returns it without CRLF.
func (p *parser) line(br *bufio.Reader) ([]byte, error) {
	start := len(p.raw)
	for {
		frag, err := br.ReadSlice('\n')
		p.raw = append(p.raw, frag...)
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull {
			return nil, fmt.Errorf("read from master: %w", err)
		}
		if len(p.raw)-start > 64<<10 {
			return nil, fmt.Errorf("protocol error from master: line too long")
		}
	}
	return bytes.TrimRight(p.raw[start:], "\r\n"), nil
}
