package upstream

import (
	"bufio"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/proxy/repl"
	"github.com/spillway/spillway/proxy/upstream/link"
	"github.com/spillway/spillway/tiering/uptier"
)

// Replication in upstream mode: Spillway is the master its replicas see
// (its own replication ID, offsets and backlog: the server's repl.Master,
// in relay mode), and the dataset they get is the whole one, the upstream's
// keys and the cold ones. The relay (this file and relay_sync.go):
//
//   - holds one replication link of its own to the upstream (PSYNC on a
//     dedicated connection, never a shared one) and passes the upstream's
//     stream to the Master, minus Spillway's own tiering traffic: the
//     demoter's UNLINKs carry relayMarker as an extra key, and a reload's
//     RESTORE is announced to the relay before it is sent (expectRestore);
//     the upstream's own replicas still see both, as deletions and
//     restores;
//   - merges the changes Spillway makes to cold keys itself (a cold key's
//     expiry, DEL of a cold key, EXPIRE of one): the server hands them to
//     the Master, which passes them to localEvent; they are queued and put
//     in the stream where a PUBLISH on relayChannel, sent by the relay
//     after them, comes back in the upstream's stream, so that everything
//     the upstream did before them precedes them; a client about to touch
//     a key such a change concerns first waits for it to be in the stream
//     (Front.relayBarrier);
//   - gives each replica that needs a full resynchronization an RDB made of
//     a fresh RDB of the upstream (a second, short-lived link) and the cold
//     keys of a store snapshot taken while no key is in both tiers (the
//     census held from the PSYNC to the upstream's +FULLRESYNC), spliced by
//     rdbfile.Splice, which leaves out a cold key the upstream also holds;
//     its stream starts at the Master offset the relay reached at the
//     upstream offset of that RDB (marks).
//
// If the relay's link is lost, Spillway's replicas are disconnected and the
// next SYNC starts a new relay with a new replication ID (a full resync).

// relayMarker is the extra key of the demoter's UNLINKs (never a key of the
// dataset: UNLINK ignores it), by which the relay leaves them out.
const relayMarker = uptier.DemotionMarker

// relayChannel is the channel of the relay's ordering PUBLISHes.
const relayChannel = "__spillway:relay__"

// relayBarrierWait bounds how long a client waits for a local change to
// be in the stream; past it the relay is stopped (its replicas then
// resynchronize) rather than let them miss the change.
const relayBarrierWait = 10 * time.Second

// relay is the replication relay. Its zero value is stopped.
type relay struct {
	f      *Front
	active atomic.Bool // running: local events are queued, barriers wait

	startMu sync.Mutex // serializes start
	ackMu   sync.Mutex // serializes ACK writes
	// emitMu is held while something is fed to the Master: by readStream
	// for each command it handles, by acks for the relay's PINGs, which
	// must not land inside a MULTI block.
	emitMu sync.Mutex
	// reselect makes the stream's next command start with a SELECT, as a
	// Redis master's does after a replica's full resynchronization.
	reselect atomic.Bool

	mu       sync.Mutex
	cond     *sync.Cond
	running  bool
	gen      int64
	conn     *replLink // the stream link
	last     relayMark // the last command boundary processed
	upID     string
	upOff    int64 // the upstream offset of the last stream byte processed
	armed    int
	marks    []relayMark
	restores map[restoreKey]int
	stopped  chan struct{}

	// lmu guards the local events; it is taken by the Master's sink with
	// the engine's and the Master's locks held, so nothing holding lmu
	// calls the Master.
	lmu      sync.Mutex
	local    []localEvent
	base     int64 // the sequence number of local[0]
	queued   int64 // local events queued so far
	injected atomic.Int64
	sent     int64
	kick     chan struct{}
}

// relayMark maps a command boundary of the upstream's stream to the
// Master's offset and stream database there.
type relayMark struct {
	up, off int64
	db      int
}

type restoreKey struct {
	db  int
	key string
}

type localEvent struct {
	db  int
	cmd []byte
}

func (f *Front) newRelay() *relay {
	r := &relay{f: f, restores: map[restoreKey]int{}, kick: make(chan struct{}, 1)}
	r.cond = sync.NewCond(&r.mu)
	return r
}

// master is the server's replication master.
func (r *relay) master() *repl.Master { return r.f.srv.Replication() }

// start runs the relay if it is not running: the stream link, the Master
// in relay mode with a new replication ID.
func (r *relay) start() error {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	if r.f.srv.Replica().Active() {
		return errors.New("Spillway is a replica (REPLICAOF)")
	}
	r.mu.Lock()
	if r.running {
		r.mu.Unlock()
		return nil
	}
	r.mu.Unlock()
	c, id, off, db, err := r.f.dialReplication()
	if err != nil {
		return err
	}
	m := r.master()
	m.SetProxy(true)
	m.Adopt("", 0)
	r.lmu.Lock()
	r.local, r.base, r.queued, r.sent = nil, 0, 0, 0
	r.injected.Store(0)
	r.lmu.Unlock()
	m.SetLocalSink(r.localEvent)
	if err := r.f.srv.ReplicationActivated(); err != nil {
		c.c.Close()
		return err
	}
	r.mu.Lock()
	r.gen++
	r.running, r.conn, r.upID, r.upOff = true, c, id, off
	r.marks, r.armed = nil, 0
	r.last = relayMark{up: off, off: m.Offset(), db: -1}
	clear(r.restores)
	r.stopped = make(chan struct{})
	gen, stopped := r.gen, r.stopped
	r.mu.Unlock()
	r.active.Store(true)
	r.f.log.Info("replication relay started", "upstream_replid", id, "upstream_offset", off)
	go r.readStream(gen, c, db)
	go r.acks(gen, c, stopped)
	go r.publisher(gen, stopped)
	return nil
}

// stop ends the relay of generation gen (a later one is left alone) and
// disconnects Spillway's replicas: the stream they follow cannot go on.
func (r *relay) stop(gen int64, why error) {
	r.mu.Lock()
	if !r.running || r.gen != gen {
		r.mu.Unlock()
		return
	}
	r.running = false
	r.active.Store(false)
	c := r.conn
	close(r.stopped)
	r.cond.Broadcast()
	r.mu.Unlock()
	c.c.Close()
	m := r.master()
	m.SetLocalSink(nil)
	m.DisconnectReplicas()
	r.f.log.Warn("replication relay stopped; replicas will resynchronize", "err", why)
}

// acks sends REPLCONF ACK with the processed offset every second (and
// when readStream asks, answering GETACK), and PINGs Spillway's replicas
// every repl-ping-replica-period seconds (Spillway's setting: the
// upstream's own PINGs are not relayed, its period is not the one
// Spillway's clients set).
func (r *relay) acks(gen int64, c *replLink, stopped chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	lastPing := time.Now()
	for {
		select {
		case <-stopped:
			return
		case <-t.C:
		}
		if err := r.sendAck(c); err != nil {
			r.stop(gen, err)
			return
		}
		period := int64(10)
		if v, ok := r.f.cfg.Value("repl-ping-replica-period"); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
				period = n
			}
		}
		if time.Since(lastPing) >= time.Duration(period)*time.Second {
			lastPing = time.Now()
			r.emitMu.Lock()
			r.master().FeedRaw([]byte("*1\r\n$4\r\nPING\r\n"))
			r.emitMu.Unlock()
		}
	}
}

func (r *relay) sendAck(c *replLink) error {
	r.mu.Lock()
	off := r.upOff
	r.mu.Unlock()
	s := strconv.FormatInt(off, 10)
	r.ackMu.Lock()
	defer r.ackMu.Unlock()
	nc := c.c.NetConn()
	nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := fmt.Fprintf(nc, "*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$%d\r\n%s\r\n", len(s), s)
	return err
}

// localEvent is the Master's sink: a change Spillway made itself (with
// the engine's lock held). It is queued for the next ordering PUBLISH.
func (r *relay) localEvent(db int, cmd []byte) {
	if !r.active.Load() {
		return
	}
	r.lmu.Lock()
	r.local = append(r.local, localEvent{db, append([]byte(nil), cmd...)})
	r.queued++
	r.lmu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// addLocal queues a change of a cold key Spillway made outside the engine's
// propagation (a DEL of cold keys).
func (r *relay) addLocal(db int, args ...[]byte) {
	if !r.active.Load() {
		return
	}
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n", len(a))
		b = append(append(b, a...), "\r\n"...)
	}
	r.localEvent(db, b)
}

// publisher sends the ordering PUBLISHes: one whenever local events were
// queued since the last, naming how many were queued in all.
func (r *relay) publisher(gen int64, stopped chan struct{}) {
	var c *link.Conn
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for {
		select {
		case <-stopped:
			return
		case <-r.kick:
		}
		r.lmu.Lock()
		n := r.queued
		due := n > r.sent
		r.lmu.Unlock()
		if !due {
			continue
		}
		if c == nil {
			var err error
			if c, err = r.f.pool.DialInternal(2, 0); err != nil {
				r.stop(gen, fmt.Errorf("relay: ordering connection: %w", err))
				return
			}
		}
		c.SetDeadline(time.Now().Add(relayBarrierWait))
		rep, err := c.Do("PUBLISH", relayChannel, strconv.FormatInt(n, 10))
		if err == nil && link.IsError(rep) {
			err = errors.New(link.ReplyText(rep))
		}
		if err != nil {
			r.stop(gen, fmt.Errorf("relay: ordering PUBLISH: %w", err))
			return
		}
		r.lmu.Lock()
		r.sent = n
		r.lmu.Unlock()
	}
}

// barrier waits until every local event queued so far is in the stream.
func (r *relay) barrier() {
	if !r.active.Load() {
		return
	}
	r.lmu.Lock()
	target := r.queued
	r.lmu.Unlock()
	if r.injected.Load() >= target {
		return
	}
	select {
	case r.kick <- struct{}{}:
	default:
	}
	deadline := time.Now().Add(relayBarrierWait)
	r.mu.Lock()
	gen := r.gen
	for r.running && r.gen == gen && r.injected.Load() < target {
		if time.Now().After(deadline) {
			r.mu.Unlock()
			r.stop(gen, errors.New("relay: a local change did not reach the stream in time"))
			return
		}
		waitCond(r.cond, 100*time.Millisecond)
	}
	r.mu.Unlock()
}

// waitCond waits on c (its lock held) at most d.
func waitCond(c *sync.Cond, d time.Duration) {
	t := time.AfterFunc(d, func() {
		c.L.Lock()
		c.Broadcast()
		c.L.Unlock()
	})
	c.Wait()
	t.Stop()
}

// takeLocal removes and returns the local events numbered up to n.
func (r *relay) takeLocal(n int64) []localEvent {
	r.lmu.Lock()
	defer r.lmu.Unlock()
	k := int(min(n-r.base, int64(len(r.local))))
	if k <= 0 {
		return nil
	}
	ev := r.local[:k:k]
	r.local = r.local[k:]
	r.base += int64(k)
	return ev
}

// expectRestore announces a reload's RESTORE of key in db: the relay
// leaves the next one out of the stream. The returned function withdraws
// it (the upstream refused the RESTORE: nothing was propagated).
func (r *relay) expectRestore(db int, key []byte) (cancel func()) {
	if !r.active.Load() {
		return func() {}
	}
	k := restoreKey{db, string(key)}
	r.mu.Lock()
	r.restores[k]++
	gen := r.gen
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.gen == gen && r.restores[k] > 0 {
			if r.restores[k]--; r.restores[k] == 0 {
				delete(r.restores, k)
			}
		}
	}
}

// readStream reads the upstream's stream until the link fails.
func (r *relay) readStream(gen int64, c *replLink, db int) {
	s := &relayStream{r: r, gen: gen, br: c.br, udb: db, edb: -1, m: r.master(), conn: c}
	err := s.run()
	r.stop(gen, err)
}

// readLine reads one line of a replication handshake (the master may send
// newlines to keep the link alive while it prepares the RDB).
func readLine(br *bufio.Reader) (string, error) {
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return "", err
		}
		if len(line) >= 2 && line[len(line)-2] == '\r' {
			line = line[:len(line)-2]
		} else {
			line = line[:len(line)-1]
		}
		if line != "" {
			return line, nil
		}
	}
}

// close stops the relay for good (Front.Close).
func (r *relay) close() {
	r.mu.Lock()
	gen := r.gen
	r.mu.Unlock()
	r.stop(gen, errors.New("shutting down"))
}

// replicationSection replaces an INFO body's replication section (the
// upstream's, whose replicas include Spillway's relay) with Spillway's own:
// its replicas, replication ID and offsets.
func (f *Front) replicationSection(body string) string {
	if f.cluster.Load() {
		// A sidecar's cluster replicas are spliced to its node
		// (cluster_repl.go): the node's section is the one that lists them.
		return body
	}
	const head = "# Replication\r\n"
	i := strings.Index(body, head)
	if i < 0 {
		return body
	}
	end := len(body)
	if j := strings.Index(body[i+len(head):], "\r\n# "); j >= 0 {
		end = i + len(head) + j + 2
	}
	var sb strings.Builder
	sb.WriteString(head)
	f.srv.Replication().InfoReplication(&sb)
	if end < len(body) {
		sb.WriteString("\r\n")
	}
	return body[:i] + sb.String() + body[end:]
}
