package repl

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Master.
type Options struct {
	// Log receives replicas' comings and goings.
	Log *slog.Logger
	// Setting returns a setting's current value (repl-backlog-size,
	// repl-ping-replica-period, repl-timeout, repl-diskless-sync, dir).
	Setting func(name string) string
	// OnTick is called once a second while the backlog exists (the server
	// recomputes min-replicas-to-write's refusal with GoodReplicas).
	OnTick func()
}

// Master is the replication master's state. Its methods are safe for
// concurrent use; Feed must be called with the engine's lock held, so
// that the stream's order is the order of the changes.
type Master struct {
	opts Options
	// active: the backlog exists (a replica has attached once); until
	// then the server records no propagation. One atomic load.
	active atomic.Bool

	mu sync.Mutex
	// changed is closed (and replaced) when the stream grows, an ACK
	// arrives or a replica leaves: feeders and WAIT wait on it.
	changed chan struct{}
	id, id2 string
	// offset is master_repl_offset: the offset of the stream's last byte.
	offset       int64
	secondOffset int64
	bl           *backlog
	// seldb is the database the stream last selected (-1: none, a SELECT
	// is due before the next command).
	seldb    int
	replicas []*Replica
	scratch  []byte
	ticker   *time.Ticker
	stop     chan struct{} // closed by Close: cron ends
	loops    int64
	// getAck: a WAIT asked the replicas for their offsets since the last
	// REPLCONF GETACK was fed.
	getAck bool
	// proxy: the server is a replica relaying its master's stream
	// (replica_chain.go): Feed, PINGs and GETACKs are dropped.
	proxy bool
	// roleInfo, if set, writes INFO's role fields (a replica's).
	roleInfo func(sb *strings.Builder)
	// sink, if set, receives what Feed is given while the master relays
	// (SetLocalSink).
	sink func(db int, cmd []byte)

	// SyncFull, SyncPartialOK and SyncPartialErr are INFO stats'
	// sync_full, sync_partial_ok and sync_partial_err.
	SyncFull, SyncPartialOK, SyncPartialErr atomic.Int64
	// OutputBytes counts the bytes sent to replicas
	// (total_net_repl_output_bytes).
	OutputBytes atomic.Int64
}

// New returns a master with a random replication ID and no backlog.
func New(opts Options) *Master {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Setting == nil {
		opts.Setting = func(string) string { return "" }
	}
	return &Master{opts: opts, changed: make(chan struct{}), id: randomID(), id2: zeroID,
		secondOffset: -1, seldb: -1, stop: make(chan struct{})}
}

// zeroID is master_replid2 when there is no previous replication ID.
const zeroID = "0000000000000000000000000000000000000000"

func randomID() string {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("repl: no randomness: " + err.Error()) // the OS is broken
	}
	return hex.EncodeToString(b[:])
}

// Active reports whether the backlog exists: whether the server must
// record what it propagates. It is one atomic load.
func (m *Master) Active() bool { return m.active.Load() }

// ID returns the replication ID (master_replid).
func (m *Master) ID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.id
}

// Offset returns master_repl_offset.
func (m *Master) Offset() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.offset
}

// wake tells the waiters that something changed (m.mu held).
func (m *Master) wake() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// Feed appends u's commands to the stream (and empties u), each preceded
// by a SELECT when its database is not the stream's current one, and
// wrapped in MULTI ... EXEC when wrap is set and u holds more than one
// command (Redis's propagatePendingCommands). The caller holds the engine's
// lock. Without a backlog it only empties u. It returns the stream's
// offset after u.
func (m *Master) Feed(u *Unit, wrap bool) int64 {
	if len(u.ops) == 0 {
		return 0
	}
	defer u.Reset()
	if !m.active.Load() {
		return 0
	}
	wrap = wrap && len(u.ops) > 1
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proxy {
		if m.sink != nil {
			for _, op := range u.ops {
				m.sink(op.db, u.buf[op.start:op.end])
			}
		}
		return m.offset
	}
	b := m.scratch[:0]
	if wrap {
		b = m.selectDB(b, u.ops[0].db)
		b = append(b, "*1\r\n$5\r\nMULTI\r\n"...)
	}
	for _, op := range u.ops {
		b = m.selectDB(b, op.db)
		b = append(b, u.buf[op.start:op.end]...)
	}
	if wrap {
		b = append(b, "*1\r\n$4\r\nEXEC\r\n"...)
	}
	m.appendLocked(b)
	if cap(b) <= 1<<20 {
		m.scratch = b
	}
	return m.offset
}

// selectDB appends a SELECT of db to b if the stream is in another
// database (m.mu held).
func (m *Master) selectDB(b []byte, db int) []byte {
	if db == m.seldb {
		return b
	}
	m.seldb = db
	n := strconv.Itoa(db)
	b = append(b, "*2\r\n$6\r\nSELECT\r\n"...)
	return appendBulk(b, n)
}

// appendLocked writes p to the backlog and advances the offset (m.mu
// held). The bytes it overwrites that a replica has not been sent yet are
// copied to the replica's spill first; a replica whose spill passes
// client-output-buffer-limit's hard limit for replicas is dropped, as
// Redis drops it.
func (m *Master) appendLocked(p []byte) {
	if len(p) == 0 || m.bl == nil {
		return
	}
	if gone := m.offset + int64(len(p)) - int64(len(m.bl.buf)) + 1; gone > m.firstByte() && len(m.replicas) > 0 {
		limit := m.replicaBufferLimit()
		for _, r := range m.replicas {
			from := r.next + int64(len(r.spill))
			if from >= gone {
				continue
			}
			// Bytes from..gone-1 are lost: those still in the backlog,
			// then those of p beyond what the ring keeps of it.
			if from <= m.offset {
				to := min(gone-1, m.offset)
				at := len(r.spill)
				r.spill = append(r.spill, make([]byte, to-from+1)...)
				m.bl.read(from, to, r.spill[at:])
			}
			if gone-1 > m.offset {
				lo := max(from, m.offset+1) - (m.offset + 1)
				r.spill = append(r.spill, p[lo:gone-1-m.offset]...)
			}
			if limit > 0 && int64(len(r.spill)) > limit {
				m.opts.Log.Warn("dropping replica: output buffer over client-output-buffer-limit",
					"replica", r.addr(), "bytes", len(r.spill))
				r.spill = nil
				r.close()
			}
		}
	}
	m.bl.write(m.offset+1, p)
	m.offset += int64(len(p))
	m.wake()
}

// createBacklog creates the backlog when the first replica attaches, with
// a new replication ID, as Redis (m.mu held; the caller holds the engine's
// lock, so no command is half recorded).
func (m *Master) createBacklog() {
	m.id, m.id2, m.secondOffset = randomID(), zeroID, -1
	m.bl = &backlog{buf: make([]byte, m.backlogSize())}
	m.active.Store(true)
	m.loops = 1 // the first PING comes a period after the first replica
	m.ticker = time.NewTicker(time.Second)
	go m.cron(m.ticker)
}

// replicaBufferLimit is client-output-buffer-limit's hard limit for
// replicas in bytes (0: none; 256 MB if the setting cannot be read).
func (m *Master) replicaBufferLimit() int64 {
	f := strings.Fields(m.opts.Setting("client-output-buffer-limit"))
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "replica" || f[i] == "slave" {
			return parseBytes(f[i+1])
		}
	}
	return 256 << 20
}

// backlogSize is repl-backlog-size in bytes (at least 16 KB).
func (m *Master) backlogSize() int64 {
	n := parseBytes(m.opts.Setting("repl-backlog-size"))
	return max(n, 16<<10)
}

// Resize applies a new repl-backlog-size: the stream's most recent bytes
// that fit are kept.
func (m *Master) Resize() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bl == nil {
		return
	}
	size := m.backlogSize()
	if size == int64(len(m.bl.buf)) {
		return
	}
	keep := min(m.bl.histlen, size)
	nb := &backlog{buf: make([]byte, size)}
	tmp := make([]byte, keep)
	m.bl.read(m.offset-keep+1, m.offset, tmp)
	nb.write(m.offset-keep+1, tmp)
	m.bl = nb
}

// firstByte is repl_backlog_first_byte_offset (m.mu held, backlog set).
func (m *Master) firstByte() int64 { return m.offset - m.bl.histlen + 1 }

// parseBytes reads a memory setting ("1mb", "16384"); 0 if it is not one.
func parseBytes(s string) int64 {
	s = strings.ToLower(strings.TrimSpace(s))
	mul := int64(1)
	for _, u := range []struct {
		suf string
		n   int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}} {
		if strings.HasSuffix(s, u.suf) {
			s, mul = strings.TrimSuffix(s, u.suf), u.n
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n * mul
}

// settingInt reads an integer setting (def if unset or bad).
func (m *Master) settingInt(name string, def int64) int64 {
	n, err := strconv.ParseInt(m.opts.Setting(name), 10, 64)
	if err != nil {
		return def
	}
	return n
}

// cron runs once a second while the backlog exists: it PINGs the
// replicas every repl-ping-replica-period seconds (through the stream, as
// Redis, so the PING counts in the offsets), drops the replicas silent
// for longer than repl-timeout, and calls OnTick.
func (m *Master) cron(t *time.Ticker) {
	for {
		select {
		case <-t.C:
		case <-m.stop:
			return
		}
		m.tick(time.Now())
		if m.opts.OnTick != nil {
			m.opts.OnTick()
		}
	}
}

// tick is one run of cron at now.
func (m *Master) tick(now time.Time) {
	period := max(m.settingInt("repl-ping-replica-period", 10), 1)
	timeout := m.settingInt("repl-timeout", 60)
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.replicas) > 0 && m.loops%period == 0 && !m.proxy {
		m.appendLocked([]byte("*1\r\n$4\r\nPING\r\n"))
	}
	m.loops++
	for _, r := range m.replicas {
		if r.state.Load() != stateOnline || r.preSync {
			continue
		}
		if now.UnixMilli()-r.ackTime.Load() > timeout*1000 {
			m.opts.Log.Warn("disconnecting timed-out replica", "replica", r.addr())
			r.close()
		}
	}
}

// GoodReplicas returns the number of online replicas whose last ACK is at
// most maxLag seconds old (min-replicas-to-write's good replicas).
func (m *Master) GoodReplicas(maxLag int64) int {
	now := time.Now().Unix()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.replicas {
		if r.state.Load() == stateOnline && now-r.ackTime.Load()/1000 <= maxLag {
			n++
		}
	}
	return n
}

// Wait is WAIT numreplicas timeout for a client whose last write ends at
// stream offset target: it returns the number of replicas that
// acknowledged target, once numreplicas did or when timeout passes (0:
// no limit) or done is closed. noBlock (inside MULTI or a script) answers
// at once.
func (m *Master) Wait(target int64, numreplicas int, timeout time.Duration, noBlock bool, done <-chan struct{}) int {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	asked := false
	for {
		m.mu.Lock()
		n := 0
		for _, r := range m.replicas {
			if r.ackOff.Load() >= target {
				n++
			}
		}
		ch := m.changed
		if n >= numreplicas || noBlock {
			m.mu.Unlock()
			return n
		}
		if !asked && len(m.replicas) > 0 && m.bl != nil && !m.proxy {
			// Redis asks once per event-loop run, before sleeping.
			m.appendLocked([]byte("*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n"))
			asked = true
		}
		m.mu.Unlock()
		select {
		case <-ch:
		case <-expired:
			return m.acked(target)
		case <-done:
			return m.acked(target)
		}
	}
}

// acked counts the replicas that acknowledged offset target.
func (m *Master) acked(target int64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.replicas {
		if r.ackOff.Load() >= target {
			n++
		}
	}
	return n
}

// InfoReplication writes INFO replication's fields for a master, in
// Redis 7.0's order (after the "# Replication" header).
func (m *Master) InfoReplication(sb *strings.Builder) {
	now := time.Now().Unix()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.roleInfo != nil {
		m.roleInfo(sb)
	} else {
		sb.WriteString("role:master\r\n")
	}
	fmt.Fprintf(sb, "connected_slaves:%d\r\n", len(m.replicas))
	for i, r := range m.replicas {
		fmt.Fprintf(sb, "slave%d:ip=%s,port=%d,state=%s,offset=%d,lag=%d\r\n", i, r.ip(), r.hs.ListeningPort,
			stateNames[r.state.Load()], r.ackOff.Load(), now-r.ackTime.Load()/1000)
	}
	sb.WriteString("master_failover_state:no-failover\r\n")
	fmt.Fprintf(sb, "master_replid:%s\r\nmaster_replid2:%s\r\n", m.id, m.id2)
	fmt.Fprintf(sb, "master_repl_offset:%d\r\nsecond_repl_offset:%d\r\n", m.offset, m.secondOffset)
	size, first, hist, on := m.backlogSize(), int64(0), int64(0), 0
	if m.bl != nil {
		size, first, hist, on = int64(len(m.bl.buf)), m.firstByte(), m.bl.histlen, 1
	}
	fmt.Fprintf(sb, "repl_backlog_active:%d\r\nrepl_backlog_size:%d\r\n", on, size)
	fmt.Fprintf(sb, "repl_backlog_first_byte_offset:%d\r\nrepl_backlog_histlen:%d\r\n", first, hist)
}

// BacklogMemory is mem_replication_backlog: the backlog's bytes.
func (m *Master) BacklogMemory() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bl == nil {
		return 0
	}
	return int64(len(m.bl.buf))
}

// RoleEntry is one replica in ROLE's reply.
type RoleEntry struct {
	IP   string
	Port int
	Ack  int64
}

// Role returns what ROLE shows of a master: the offset and the online
// replicas.
func (m *Master) Role() (int64, []RoleEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []RoleEntry
	for _, r := range m.replicas {
		if r.state.Load() == stateOnline {
			out = append(out, RoleEntry{r.ip(), r.hs.ListeningPort, r.ackOff.Load()})
		}
	}
	return m.offset, out
}
