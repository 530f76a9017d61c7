package repl

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/proxy/cstr"
)

// A replica's states (INFO's state=).
const (
	stateWaitBgsave int32 = iota
	stateSendBulk
	stateOnline
)

var stateNames = [...]string{"wait_bgsave", "send_bulk", "online"}

// Handshake is what a connection told with REPLCONF before SYNC or PSYNC.
type Handshake struct {
	ListeningPort int
	IPAddress     string
	CapaEOF       bool
	CapaPsync2    bool
	RDBOnly       bool
	// ExcludeData and ExcludeFunctions: REPLCONF rdb-filter-only asked
	// for an RDB without keys (and without functions unless "functions"
	// was listed), as redis-cli --functions-rdb does.
	ExcludeData, ExcludeFunctions bool
}

// Conf applies REPLCONF args (args[0] is "replconf") and returns the
// error reply ("" for +OK). ACK and GETACK from a connection that is not
// a replica are ignored, as Redis (ok=false: no reply at all).
func (h *Handshake) Conf(args [][]byte) (errMsg string, reply bool) {
	if len(args)%2 == 0 {
		return "ERR syntax error", true
	}
	for i := 1; i < len(args); i += 2 {
		opt, val := strings.ToLower(string(args[i])), string(args[i+1])
		switch opt {
		case "listening-port":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return "ERR value is not an integer or out of range", true
			}
			h.ListeningPort = int(n)
		case "ip-address":
			if len(val) >= 46 {
				return "ERR REPLCONF ip-address provided by replica instance is too long: " +
					strconv.Itoa(len(val)) + " bytes", true
			}
			h.IPAddress = val
		case "capa":
			switch strings.ToLower(val) {
			case "eof":
				h.CapaEOF = true
			case "psync2":
				h.CapaPsync2 = true
			}
		case "ack", "getack":
			return "", false
		case "rdb-only":
			n, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				return "ERR value is not an integer or out of range", true
			}
			if n != 0 && n != 1 {
				return "ERR value is out of range, value must between 0 and 1", true
			}
			h.RDBOnly = n == 1
		case "rdb-filter-only":
			h.ExcludeData, h.ExcludeFunctions = true, true
			for _, f := range strings.Fields(val) {
				if !strings.EqualFold(f, "functions") {
					return "ERR Unsupported rdb-filter-only option: " + f, true
				}
				h.ExcludeFunctions = false
			}
		default:
			return "ERR Unrecognized REPLCONF option: " + string(args[i]), true
		}
	}
	return "", true
}

// Replica is an attached replica (or a SYNC client such as the test
// suite's attach_to_replication_stream).
type Replica struct {
	m  *Master
	hs Handshake
	// peer is the connection's remote IP; id is its client id.
	peer string
	// preSync: attached with SYNC (Redis's SLAVE_PRE_PSYNC): not timed
	// out, sends no ACKs.
	preSync bool
	// full: a full resynchronization (an RDB first); reply is the
	// +FULLRESYNC or +CONTINUE line ("" for SYNC).
	full  bool
	reply string
	// startID and start: the replication ID and offset the RDB of a full
	// resync stands for.
	startID string
	start   int64
	// next is the offset of the next stream byte to send (those before are
	// sent, or covered by the RDB); spill holds the bytes from next on
	// that the backlog overwrote before they were sent (a slow replica, or
	// one still loading its RDB), up to client-output-buffer-limit's hard
	// limit for replicas. Both are guarded by m.mu.
	next    int64
	spill   []byte
	state   atomic.Int32
	ackOff  atomic.Int64
	ackTime atomic.Int64 // unix ms of the last ACK (or of going online)
	once    sync.Once
	done    chan struct{}
	// conn is set by Run; connMu guards it against close from other
	// goroutines (the cron, Close), and closed records a close before Run.
	connMu sync.Mutex
	conn   net.Conn
	closed bool
}

// ip is the replica's announced or peer address.
func (r *Replica) ip() string {
	if r.hs.IPAddress != "" {
		return r.hs.IPAddress
	}
	return r.peer
}

func (r *Replica) addr() string { return r.ip() + ":" + strconv.Itoa(r.hs.ListeningPort) }

// close disconnects the replica (any goroutine).
func (r *Replica) close() {
	r.once.Do(func() {
		close(r.done)
		r.connMu.Lock()
		r.closed = true
		if r.conn != nil {
			r.conn.Close()
		}
		r.connMu.Unlock()
	})
}

// Start returns the replication ID and offset a full resync's RDB stands
// for (its aux fields repl-id and repl-offset).
func (r *Replica) Start() (string, int64) { return r.startID, r.start }

// Handshake returns what the replica told with REPLCONF.
func (r *Replica) Handshake() Handshake { return r.hs }

// Full reports whether the replica needs an RDB (a full resync).
func (r *Replica) Full() bool { return r.full }

// ParseSync reads SYNC's or PSYNC's arguments (args[0] is the command's
// name, the arity already checked): psync is false for SYNC, which asks for
// a full resynchronization. ok is false when PSYNC's offset is not an
// integer (Redis's string2ll rules); the caller answers Redis's error.
func ParseSync(args [][]byte) (psync bool, replid string, offset int64, ok bool) {
	if !cstr.EqualFold(args[0], "psync") {
		return false, "", 0, true
	}
	n, ok := cstr.ParseInt(args[2])
	if !ok {
		return true, "", 0, false
	}
	return true, string(args[1]), n, true
}

// Attach registers a replica for SYNC (psync false) or PSYNC replid offset
// (Redis's syncCommand and masterTryPartialResynchronization): a partial
// resync when replid is this master's ID (or its previous one, up to
// second_repl_offset) and the backlog still holds offset; else a full one,
// creating the backlog if it is the first replica. The caller holds the
// engine's lock, so that the RDB it then takes covers exactly the stream
// up to the replica's start. peer is the connection's remote IP.
func (m *Master) Attach(h Handshake, psync bool, replid string, offset int64, peer string) *Replica {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := &Replica{m: m, hs: h, peer: peer, preSync: !psync, done: make(chan struct{})}
	if psync && m.bl != nil && offset >= m.firstByte() && offset <= m.offset+1 &&
		(replid == m.id || replid == m.id2 && offset <= m.secondOffset) {
		r.next = offset
		r.reply = "+CONTINUE\r\n"
		if h.CapaPsync2 {
			r.reply = "+CONTINUE " + m.id + "\r\n"
		}
		m.SyncPartialOK.Add(1)
		r.state.Store(stateOnline)
		r.ackOff.Store(offset - 1)
		r.ackTime.Store(time.Now().UnixMilli())
		m.replicas = append(m.replicas, r)
		m.opts.Log.Info("partial resynchronization accepted", "replica", r.addr(), "offset", offset)
		return r
	}
	if psync && replid != "?" {
		m.SyncPartialErr.Add(1)
	}
	if m.bl == nil {
		m.createBacklog()
	}
	m.SyncFull.Add(1)
	m.seldb = -1 // the stream after the RDB starts with a SELECT
	r.full, r.next, r.startID, r.start = true, m.offset+1, m.id, m.offset
	if psync {
		r.reply = "+FULLRESYNC " + m.id + " " + strconv.FormatInt(m.offset, 10) + "\r\n"
	}
	r.ackTime.Store(time.Now().UnixMilli())
	m.replicas = append(m.replicas, r)
	m.wake()
	m.opts.Log.Info("replica asks for a full resynchronization", "replica", r.addr(), "offset", m.offset)
	return r
}

// Run serves the replica on conn until it disconnects or is dropped: the
// +FULLRESYNC/+CONTINUE line, for a full resync the RDB that rdb writes
// (the snapshot taken when it attached), then the stream from its offset;
// meanwhile it reads the replica's REPLCONF ACKs from in. It closes conn.
func (m *Master) Run(r *Replica, conn net.Conn, in io.Reader, rdb func(io.Writer) error) {
	r.connMu.Lock()
	r.conn = conn
	closed := r.closed
	r.connMu.Unlock()
	defer m.detach(r)
	if closed {
		conn.Close()
		return
	}
	conn.SetDeadline(time.Time{})
	if r.reply != "" {
		if _, err := io.WriteString(conn, r.reply); err != nil {
			return
		}
	}
	if r.full {
		r.state.Store(stateSendBulk)
		if err := m.sendRDB(r, conn, rdb); err != nil {
			m.opts.Log.Warn("full resynchronization failed", "replica", r.addr(), "err", err)
			return
		}
		if r.hs.RDBOnly {
			return // redis-cli --rdb: the RDB was all it wanted
		}
		r.ackTime.Store(time.Now().UnixMilli())
		r.state.Store(stateOnline)
		m.opts.Log.Info("replica synchronized", "replica", r.addr())
	}
	diskless := r.full && r.hs.CapaEOF && m.opts.Setting("repl-diskless-sync") == "yes"
	if diskless {
		r.ackOff.Store(-1) // waitFirstAck (replica_chain.go)
	}
	go m.readAcks(r, in)
	if diskless && !m.waitFirstAck(r) {
		return
	}
	m.stream(r, conn)
}

// Drop removes a replica Attach registered that will not Run (its
// snapshot failed).
func (m *Master) Drop(r *Replica) { m.detach(r) }

// detach removes r from the replicas.
func (m *Master) detach(r *Replica) {
	r.close()
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, x := range m.replicas {
		if x == r {
			m.replicas = append(m.replicas[:i], m.replicas[i+1:]...)
			break
		}
	}
	m.wake()
	m.opts.Log.Info("replica disconnected", "replica", r.addr())
}

// sendRDB sends the RDB rdb writes: as "$EOF:<mark>\r\n...<mark>" to a
// replica with capa eof under repl-diskless-sync yes, else as
// "$<len>\r\n<bytes>" from a temporary file in dir.
func (m *Master) sendRDB(r *Replica, conn net.Conn, rdb func(io.Writer) error) error {
	if r.hs.CapaEOF && m.opts.Setting("repl-diskless-sync") == "yes" {
		mark := eofMark()
		bw := bufio.NewWriterSize(countingWriter{conn, &m.OutputBytes}, 64<<10)
		fmt.Fprintf(bw, "$EOF:%s\r\n", mark)
		if err := rdb(bw); err != nil {
			return fmt.Errorf("write RDB: %w", err)
		}
		bw.WriteString(mark)
		return bw.Flush()
	}
	dir := m.opts.Setting("dir")
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "spillway-sync-*.rdb")
	if err != nil {
		f, err = os.CreateTemp("", "spillway-sync-*.rdb")
		if err != nil {
			return fmt.Errorf("create the sync file: %w", err)
		}
	}
	defer os.Remove(f.Name())
	defer f.Close()
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := rdb(bw); err != nil {
		return fmt.Errorf("write RDB: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write the sync file: %w", err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("sync file: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("sync file: %w", err)
	}
	if _, err := fmt.Fprintf(conn, "$%d\r\n", size); err != nil {
		return err
	}
	n, err := io.Copy(conn, f)
	m.OutputBytes.Add(n)
	return err
}

// eofMark is a diskless transfer's 40 random characters.
func eofMark() string {
	const chars = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	var b [40]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return string(b[:])
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// errBehind: the replica needs bytes the backlog no longer holds.
var errBehind = errors.New("replica fell behind the replication backlog")

// stream sends the stream to r from r.next as it grows: first what was
// spilled, then from the backlog.
func (m *Master) stream(r *Replica, conn net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		m.mu.Lock()
		var n int
		var err error
		switch {
		case len(r.spill) > 0:
			n = copy(buf, r.spill)
			r.spill = r.spill[n:]
			if len(r.spill) == 0 {
				r.spill = nil
			}
		case r.next <= m.offset && r.next < m.firstByte():
			err = errBehind // cannot happen: appendLocked spills first
		case r.next <= m.offset:
			n = m.bl.read(r.next, m.offset, buf)
		}
		r.next += int64(n)
		ch := m.changed
		m.mu.Unlock()
		if err != nil {
			m.opts.Log.Warn("dropping replica", "replica", r.addr(), "err", err)
			return
		}
		if n > 0 {
			w, err := conn.Write(buf[:n])
			m.OutputBytes.Add(int64(w))
			if err != nil {
				return
			}
			continue
		}
		select {
		case <-ch:
		case <-r.done:
			return
		}
	}
}

// readAcks reads the replica's commands: REPLCONF ACK <offset> [FACK
// <offset>] updates its acknowledged offset; anything else is ignored.
// It ends the replica when the connection fails.
func (m *Master) readAcks(r *Replica, in io.Reader) {
	defer r.close()
	br := bufio.NewReader(in)
	for {
		args, err := readCommand(br)
		if err != nil {
			return
		}
		if len(args) >= 3 && strings.EqualFold(args[0], "replconf") && strings.EqualFold(args[1], "ack") {
			if off, err := strconv.ParseInt(args[2], 10, 64); err == nil {
				r.ackOff.Store(off)
				r.ackTime.Store(time.Now().UnixMilli())
				m.mu.Lock()
				m.wake()
				m.mu.Unlock()
			}
		}
	}
}

// readCommand reads one RESP array of bulk strings, or an inline line.
func readCommand(br *bufio.Reader) ([]string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimRight(line, "\r\n")
	if !strings.HasPrefix(line, "*") {
		return strings.Fields(line), nil
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 0 || n > 1024 {
		return nil, fmt.Errorf("bad array header %q", line)
	}
	args := make([]string, 0, n)
	for i := 0; i < n; i++ {
		h, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		h = strings.TrimRight(h, "\r\n")
		if !strings.HasPrefix(h, "$") {
			return nil, fmt.Errorf("bad bulk header %q", h)
		}
		l, err := strconv.Atoi(h[1:])
		if err != nil || l < 0 || l > 1<<20 {
			return nil, fmt.Errorf("bad bulk length %q", h)
		}
		b := make([]byte, l+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, err
		}
		args = append(args, string(b[:l]))
	}
	return args, nil
}

// Close disconnects every replica (shutdown).
func (m *Master) Close() {
	m.mu.Lock()
	rs := append([]*Replica(nil), m.replicas...)
	if m.ticker != nil {
		m.ticker.Stop()
		m.ticker = nil
		close(m.stop)
	}
	m.mu.Unlock()
	for _, r := range rs {
		r.close()
	}
}

// Kill disconnects the replica r (CLIENT KILL).
func (r *Replica) Kill() { r.close() }
