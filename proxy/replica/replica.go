// Package replica is the replica side of replication (embedded mode), as
// Redis 7.0's replication.c: REPLICAOF's link to a master (connect, the
// handshake PING / AUTH / REPLCONF / PSYNC), the full resynchronization
// (the master's RDB, on disk or diskless, streamed into the engine by
// proxy/rdbfile's loader in bounded memory), the partial one (+CONTINUE,
// from the ID and offset the replica holds), the command stream applied
// through the server's own command path as the master client, REPLCONF ACK
// every second and on GETACK, and what INFO replication and ROLE show of a
// replica.
//
// The replica's replication ID and offset are its proxy/repl Master's: the
// stream it applies is relayed to its own replicas verbatim
// (repl.Master.FeedRaw), with the master's IDs and offsets, as Redis
// proxies its master's stream. The ID and offset are durable with the data:
// the server stores them (the Record system record) in the same batch as
// each applied command's effects, so a restart resumes with a partial
// resynchronization and never claims an offset whose data it lacks.
//
// Upstream mode uses the same link with a Loader (UseLoader): the full
// resynchronization loads into the upstream Redis, and no durable state
// is kept.
package replica

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/proxy/repl"
	"github.com/spillway/spillway/tiering"
)

// Record is the system record holding the replica's durable replication
// state: "<replid> <offset> <db>", the master's replication ID, the offset
// of the last byte of its stream whose effects are stored, and the
// database the stream had selected. Empty: none.
const Record = "replication"

// State is the link's state (Redis's repl_state).
type State int32

// The link's states.
const (
	StateNone       State = iota // not a replica
	StateConnect                 // to connect (after a failure: retried every second)
	StateConnecting              // the TCP connection is being made
	StateHandshake               // PING, AUTH, REPLCONF, PSYNC
	StateTransfer                // receiving and loading the master's RDB
	StateConnected               // applying the master's stream
)

// Host is what a Replica needs from the server (embedded mode).
type Host struct {
	Engine *tiering.Engine
	// Master is the server's replication state, whose ID and offset the
	// replica adopts and whose replicas it feeds.
	Master *repl.Master
	// Setting returns a setting's current value.
	Setting func(name string) string
	Log     *slog.Logger
	// Apply runs one command of the master's stream as the master client
	// (no reply is sent, no refusal applies). raw is its bytes, relayed to
	// the server's replicas once the command's effects are committed (nil:
	// a command of the replica's own, relayed to no one); rec, when not
	// nil, is stored as the Record (the server appends the master client's
	// database) in the same batch as the command's effects.
	Apply func(args [][]byte, raw []byte, rec []byte)
	// ResetClient discards the master client's MULTI state and selects db
	// (db < 0: keeps its database), as a new link to a master needs.
	ResetClient func(db int)
	// Loading turns the server's loading state on or off.
	Loading func(on bool)
	// Linked is called with the connection to the master when the
	// stream starts and with nil when the link ends: the master client
	// is listed (CLIENT LIST flags=M) while linked, and CLIENT KILL of it
	// closes the connection (the link is then retried).
	Linked func(nc net.Conn)
	// ActiveExpire turns the server's expiry sweeper on or off: a replica
	// expires nothing itself, its master's DELs do.
	ActiveExpire func(on bool)
	// FunctionsLoaded loads the function libraries a full sync stored.
	FunctionsLoaded func() error
}

// Loader replaces the engine as the place a full resynchronization loads
// the master's RDB into (upstream mode: the upstream Redis and the cold
// store). Set it with UseLoader before the first REPLICAOF.
type Loader struct {
	// Load reads the RDB from r into the dataset, which Apply(FLUSHALL
	// SYNC) and Apply(FUNCTION FLUSH SYNC) emptied first. r holds size
	// bytes; a diskless RDB (size < 0) is followed on r by the master's
	// EOF mark and stream, and r is then the link's 256 KB
	// *bufio.Reader: read it through proxy/rdbfile (whose reader reads
	// from that very buffer) and no further than the RDB's checksum. stop is closed when the link ends (REPLICAOF changed): a
	// load still running should end. It reports the number of keys
	// loaded.
	Load func(r io.Reader, size int64, stop <-chan struct{}) (keys int64, err error)
	// NoRecord: the replica's replication state is not stored in the
	// engine (no Record is written, none is resumed from): the dataset
	// does not live in the engine's batches, so a stored offset could
	// claim data the dataset lacks after a restart.
	NoRecord bool
}

// Replica is the replica side's state. Its methods are safe for
// concurrent use.
type Replica struct {
	h      Host
	loader atomic.Pointer[Loader]

	mu   sync.Mutex
	host string
	port int
	stop chan struct{} // closed when the current link must end
	gen  uint64        // the link's generation (REPLICAOF changes it)

	// target is host and port, readable without mu (writeInfo runs under
	// the repl.Master's lock, which Start and Stop take under mu).
	target  atomic.Pointer[hostPort]
	active  atomic.Bool // REPLICAOF host port is in effect
	state   atomic.Int32
	linked  atomic.Bool  // a master client exists (Redis's server.master)
	reploff atomic.Int64 // slave_repl_offset: the last byte applied
	readOff atomic.Int64 // slave_read_repl_offset: the last byte read
	lastIO  atomic.Int64 // unix s of the last byte from the master
	down    atomic.Int64 // unix s the link went down (0: never)

	xferSize, xferRead, xferIO atomic.Int64

	wmu  sync.Mutex // writes to the master's connection
	conn net.Conn

	// SyncFull and SyncPartial count the resynchronizations done.
	SyncFull, SyncPartial atomic.Int64
}

type hostPort struct {
	host string
	port int
}

// New returns a replica side that is not a replica (REPLICAOF NO ONE).
func New(h Host) *Replica {
	if h.Log == nil {
		h.Log = slog.Default()
	}
	return &Replica{h: h}
}

// UseLoader makes full resynchronizations load through l instead of
// into the engine (nil: the engine again).
func (r *Replica) UseLoader(l *Loader) { r.loader.Store(l) }

// noRecord reports whether the Record is neither stored nor resumed from.
func (r *Replica) noRecord() bool {
	l := r.loader.Load()
	return l != nil && l.NoRecord
}

// Active reports whether the server is a replica (one atomic load).
func (r *Replica) Active() bool { return r.active.Load() }

// LinkUp reports whether the link is up (master_link_status:up).
func (r *Replica) LinkUp() bool { return State(r.state.Load()) == StateConnected }

// Master returns the master's address ("" when not a replica).
func (r *Replica) Master() (string, int) {
	if t := r.target.Load(); t != nil {
		return t.host, t.port
	}
	return "", 0
}

// Start is REPLICAOF host port: the server becomes a replica of host:port
// (its replicas are disconnected, its own propagation stops) and a link
// is started in the background, retried every second until it is up. It
// reports false if the server already replicates that master (Redis's
// "+OK Already connected to specified master"). A server that was a
// master first takes the durable state of the Record, if it holds one, as
// the point to resume from; otherwise it resumes from its own replication
// ID and offset (Redis's replicationCacheMasterUsingMyself).
func (r *Replica) Start(host string, port int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active.Load() && strings.EqualFold(r.host, host) && r.port == port {
		return false
	}
	wasMaster := !r.active.Load()
	r.endLinkLocked()
	r.host, r.port = host, port
	r.target.Store(&hostPort{host, port})
	r.h.Master.SetProxy(true)
	r.h.ActiveExpire(false)
	if wasMaster {
		r.down.Store(0)
		r.reploff.Store(r.h.Master.Offset())
		if id, off, db, ok := r.durableState(); ok && !r.noRecord() {
			r.h.Master.Adopt(id, off)
			r.reploff.Store(off)
			r.h.ResetClient(db)
			r.h.Log.Info("resuming replication from the stored state", "replid", id, "offset", off)
		}
		r.h.Master.SetRoleInfo(r.writeInfo)
	}
	r.active.Store(true)
	r.state.Store(int32(StateConnect))
	r.gen++
	r.stop = make(chan struct{})
	go r.run(r.stop, r.gen, host, port)
	r.h.Log.Info("connecting to master", "host", host, "port", port)
	return true
}

// Stop is REPLICAOF NO ONE: the link ends and the server is a master
// again, keeping its data, with a new replication ID (the master's is
// kept as the previous one, for its replicas' partial resyncs). The
// caller clears the Record (in the transaction it runs in: Stop may run
// inside a MULTI that holds the engine's lock, so it takes no lock of
// the engine). It reports whether the server was a replica.
func (r *Replica) Stop() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.active.Load() {
		return false
	}
	r.endLinkLocked()
	r.active.Store(false)
	r.linked.Store(false)
	r.state.Store(int32(StateNone))
	r.host, r.port = "", 0
	r.target.Store(nil)
	r.h.Master.ShiftID("")
	r.h.Master.SetProxy(false)
	r.h.Master.SetRoleInfo(nil)
	r.h.ActiveExpire(true)
	r.h.ResetClient(-1)
	r.h.Log.Info("MASTER MODE enabled (REPLICAOF NO ONE)")
	return true
}

// Close ends the link (shutdown).
func (r *Replica) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endLinkLocked()
}

// endLinkLocked ends the current link (r.mu held).
func (r *Replica) endLinkLocked() {
	if r.stop != nil {
		close(r.stop)
		r.stop = nil
	}
	r.gen++
	r.wmu.Lock()
	if r.conn != nil {
		r.conn.Close()
		r.conn = nil
	}
	r.wmu.Unlock()
}

// current reports whether gen is still the link's generation.
func (r *Replica) current(gen uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen == gen && r.active.Load()
}

// durableState reads the Record.
func (r *Replica) durableState() (id string, off int64, db int, ok bool) {
	v, found, err := r.h.Engine.SystemRecord(Record)
	if err != nil {
		r.h.Log.Error("reading the replication record failed", "err", err)
		return "", 0, 0, false
	}
	if !found {
		return "", 0, 0, false
	}
	f := strings.Fields(string(v))
	if len(f) != 3 || len(f[0]) != 40 {
		return "", 0, 0, false
	}
	off, err1 := strconv.ParseInt(f[1], 10, 64)
	db, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil || off < 0 || db < 0 {
		return "", 0, 0, false
	}
	return f[0], off, db, true
}

// run keeps a link to host:port up until stop is closed: a failed or lost
// link is retried a second later (Redis's replicationCron).
func (r *Replica) run(stop chan struct{}, gen uint64, host string, port int) {
	for {
		err := r.link(stop, gen, host, port)
		r.linked.Store(false)
		select {
		case <-stop:
			return
		default:
		}
		r.state.Store(int32(StateConnect))
		r.h.ResetClient(-1) // a half-received MULTI is discarded
		r.h.Log.Warn("replication link to master failed; retrying in a second",
			"host", host, "port", port, "err", err)
		select {
		case <-stop:
			return
		case <-time.After(time.Second):
		}
	}
}

// timeout is repl-timeout.
func (r *Replica) timeout() time.Duration {
	n, err := strconv.Atoi(r.h.Setting("repl-timeout"))
	if err != nil || n <= 0 {
		n = 60
	}
	return time.Duration(n) * time.Second
}

// link runs one connection to the master: handshake, resync, stream.
func (r *Replica) link(stop chan struct{}, gen uint64, host string, port int) error {
	r.state.Store(int32(StateConnecting))
	d := net.Dialer{Timeout: r.timeout()}
	nc, err := d.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("connect to master: %w", err)
	}
	r.mu.Lock()
	if r.gen != gen {
		r.mu.Unlock()
		nc.Close()
		return fmt.Errorf("replication target changed")
	}
	r.wmu.Lock()
	r.conn = nc
	r.wmu.Unlock()
	r.mu.Unlock()
	defer func() {
		r.wmu.Lock()
		if r.conn == nc {
			r.conn = nil
		}
		r.wmu.Unlock()
		nc.Close()
	}()
	r.lastIO.Store(time.Now().Unix())
	in := &countingConn{Conn: nc, r: r}
	br := bufio.NewReaderSize(in, loadBufSize)
	r.state.Store(int32(StateHandshake))
	full, id, off, err := r.handshake(nc, br)
	if err != nil {
		return err
	}
	if full {
		if err := r.fullSync(nc, br, gen, id, off); err != nil {
			return err
		}
	}
	r.state.Store(int32(StateConnected))
	r.linked.Store(true)
	// master_link_down_since_seconds counts from the loss of a link that
	// was up (-1 until then), as Redis's repl_down_since.
	defer func() { r.down.Store(time.Now().Unix()) }()
	r.h.Log.Info("MASTER <-> REPLICA sync: the link is up", "full", full, "offset", r.reploff.Load())
	r.h.Linked(nc)
	defer r.h.Linked(nil)
	ackStop := make(chan struct{})
	defer close(ackStop)
	go r.acks(nc, ackStop)
	r.sendAck(nc)
	return r.stream(nc, br, gen)
}

// acks sends REPLCONF ACK every second (Redis's replicationCron).
func (r *Replica) acks(nc net.Conn, stop chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			r.sendAck(nc)
		}
	}
}

// sendAck writes REPLCONF ACK <offset> (errors surface on the next read).
func (r *Replica) sendAck(nc net.Conn) {
	off := strconv.FormatInt(r.reploff.Load(), 10)
	msg := "*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$" + strconv.Itoa(len(off)) + "\r\n" + off + "\r\n"
	r.wmu.Lock()
	defer r.wmu.Unlock()
	nc.SetWriteDeadline(time.Now().Add(r.timeout()))
	nc.Write([]byte(msg))
}

// countingConn counts the bytes read from the master (INFO's transfer
// progress, master_last_io_seconds_ago).
type countingConn struct {
	net.Conn
	r *Replica
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		now := time.Now().Unix()
		c.r.lastIO.Store(now)
		c.r.xferRead.Add(int64(n))
		c.r.xferIO.Store(now)
	}
	return n, err
}

// stopChan returns the stop channel of the link of generation gen (a
// closed one if the link was replaced).
func (r *Replica) stopChan(gen uint64) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gen != gen || r.stop == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return r.stop
}
