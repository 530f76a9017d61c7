package upstream

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/rdbfile"
	"github.com/spillway/spillway/proxy/repl"
	"github.com/spillway/spillway/proxy/upstream/link"
	"github.com/spillway/spillway/tiering"
)

// replTimeout bounds each step of a replication handshake with the
// upstream (its BGSAVE included).
const replTimeout = 120 * time.Second

// replLink is a replication connection to the upstream, after REPLCONF.
type replLink struct {
	c  *link.Conn
	br *bufio.Reader
}

// dialRepl opens a replication connection: REPLCONF listening-port (the
// stream link only, so that the upstream lists it) and capa psync2; no
// capa eof, so that the upstream sends its RDB with its length.
func (f *Front) dialRepl(stream bool) (*replLink, error) {
	c, err := f.pool.DialInternal(2, 0)
	if err != nil {
		return nil, err
	}
	l := &replLink{c: c, br: bufio.NewReaderSize(c.NetConn(), 64<<10)}
	reqs := [][]string{{"REPLCONF", "capa", "psync2"}}
	if stream {
		port := strconv.Itoa(f.cfg.Port())
		reqs = append([][]string{{"REPLCONF", "listening-port", port}}, reqs...)
	}
	for _, args := range reqs {
		if err := l.send(args...); err != nil {
			c.Close()
			return nil, err
		}
		line, err := readLine(l.br)
		if err != nil || !strings.HasPrefix(line, "+OK") {
			c.Close()
			return nil, fmt.Errorf("relay: %s: %q %v", args[0], line, err)
		}
	}
	return l, nil
}

func (l *replLink) send(args ...string) error {
	nc := l.c.NetConn()
	nc.SetDeadline(time.Now().Add(replTimeout))
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	_, err := nc.Write(b)
	return err
}

// psync sends PSYNC ? -1 and reads +FULLRESYNC's replication ID and offset.
func (l *replLink) psync() (string, int64, error) {
	if err := l.send("PSYNC", "?", "-1"); err != nil {
		return "", 0, err
	}
	line, err := readLine(l.br)
	if err != nil {
		return "", 0, err
	}
	fs := strings.Fields(line)
	if len(fs) != 3 || fs[0] != "+FULLRESYNC" {
		return "", 0, fmt.Errorf("relay: PSYNC answered %q", line)
	}
	off, err := strconv.ParseInt(fs[2], 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("relay: PSYNC answered %q", line)
	}
	return fs[1], off, nil
}

// rdbSize reads the RDB's "$<length>" line.
func (l *replLink) rdbSize() (int64, error) {
	line, err := readLine(l.br)
	if err != nil {
		return 0, err
	}
	if !strings.HasPrefix(line, "$") || strings.HasPrefix(line, "$EOF:") {
		return 0, fmt.Errorf("relay: unexpected RDB header %q", line)
	}
	n, err := strconv.ParseInt(line[1:], 10, 64)
	if err != nil || n < 9 {
		return 0, fmt.Errorf("relay: bad RDB length %q", line)
	}
	return n, nil
}

// dialReplication opens the stream link: a full resynchronization whose
// RDB is read for its repl-stream-db and dropped (the replicas' RDBs are
// fetched apart, at their own points in time).
func (f *Front) dialReplication() (*replLink, string, int64, int, error) {
	l, err := f.dialRepl(true)
	if err != nil {
		return nil, "", 0, 0, err
	}
	id, off, db, err := l.skipRDB()
	if err != nil {
		l.c.Close()
		return nil, "", 0, 0, err
	}
	l.c.NetConn().SetDeadline(time.Time{})
	return l, id, off, db, nil
}

func (l *replLink) skipRDB() (string, int64, int, error) {
	id, off, err := l.psync()
	if err != nil {
		return "", 0, 0, err
	}
	size, err := l.rdbSize()
	if err != nil {
		return "", 0, 0, err
	}
	lr := &io.LimitedReader{R: l.br, N: size}
	aux, err := rdbfile.ReadAux(lr)
	if err != nil {
		return "", 0, 0, err
	}
	if _, err := io.Copy(io.Discard, lr); err != nil {
		return "", 0, 0, err
	}
	db, _ := strconv.Atoi(aux["repl-stream-db"])
	return id, off, db, nil
}

// fetched is an RDB of the upstream being received for one replica, with
// the cold keys' snapshot and the Master offset its stream starts after.
type fetched struct {
	l    *replLink
	size int64
	snap *tiering.Snapshot
	off  int64
	db   int
}

// close releases the link and the snapshot (once: later calls do nothing).
func (x *fetched) close() {
	if x.l == nil {
		return
	}
	x.l.c.Close()
	x.l = nil
	if x.snap != nil {
		x.snap.Close()
	}
}

// fetch gets a fresh RDB of the upstream and the cold keys at the same
// point: the census is held (no key in both tiers, no demotion or reload
// moving one) from the PSYNC until the upstream's +FULLRESYNC, which it
// sends when it forks its snapshot, and the store's snapshot is taken
// then. The Master offset is the one the relay reached at that upstream
// offset.
func (r *relay) fetch() (*fetched, error) {
	l, err := r.f.dialRepl(false)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if !r.running {
		r.mu.Unlock()
		l.c.Close()
		return nil, errors.New("relay: not running")
	}
	gen, upID := r.gen, r.upID
	if r.armed++; r.armed == 1 {
		r.marks = append(r.marks[:0], r.last)
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		if r.gen == gen {
			if r.armed--; r.armed == 0 {
				r.marks = r.marks[:0]
			}
		}
		r.mu.Unlock()
	}()
	x := &fetched{l: l}
	var id string
	var up int64
	func() {
		r.f.census.Lock()
		defer r.f.census.Unlock()
		if id, up, err = l.psync(); err != nil {
			return
		}
		err = r.f.engine.View(func(tx *tiering.Tx) error {
			var err error
			x.snap, err = tx.Snapshot()
			return err
		})
	}()
	if err == nil && id != upID {
		err = fmt.Errorf("relay: the upstream's replication ID changed (%s, was %s)", id, upID)
		r.stop(gen, err)
	}
	if err == nil {
		x.off, x.db, err = r.mapOffset(gen, up)
	}
	if err == nil {
		x.size, err = l.rdbSize()
	}
	if err != nil {
		x.close()
		return nil, err
	}
	return x, nil
}

// mapOffset waits until the relay processed the upstream's stream up to
// up and returns the Master offset and stream database there.
func (r *relay) mapOffset(gen, up int64) (int64, int, error) {
	deadline := time.Now().Add(replTimeout)
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.running && r.gen == gen && r.upOff < up {
		if time.Now().After(deadline) {
			return 0, 0, errors.New("relay: the stream did not reach the RDB's offset in time")
		}
		waitCond(r.cond, 100*time.Millisecond)
	}
	if !r.running || r.gen != gen {
		return 0, 0, errors.New("relay: stopped")
	}
	for _, mk := range r.marks {
		if mk.up == up {
			return mk.off, mk.db, nil
		}
	}
	return 0, 0, fmt.Errorf("relay: upstream offset %d is not a command boundary the relay saw", up)
}

// upSync is SYNC and PSYNC: the client becomes a replica of Spillway. A
// partial resynchronization continues from the backlog; a full one gets an
// RDB of the whole dataset (relay.fetch, rdbfile.Splice).
func upSync(c *client, args [][]byte) {
	if c.f.cluster.Load() && !c.inMulti {
		c.clusterReplicaCmd(args) // a cluster replica behind its sidecar (cluster_repl.go)
		return
	}
	if c.inMulti {
		c.forwardNow(args) // refused in a transaction: the upstream answers so
		return
	}
	hs, already := c.ReplHandshake()
	if already {
		return // already a replica: ignored, as Redis
	}
	psync, replid, off, ok := repl.ParseSync(args)
	if !ok {
		c.Err("ERR value is not an integer or out of range")
		return
	}
	f := c.f
	if f.srv.Replica().Active() {
		c.Err(errReplicaSync)
		return
	}
	if err := f.relay.start(); err != nil {
		c.Err("ERR Spillway could not open its replication link to the upstream: " + err.Error())
		return
	}
	m := f.srv.Replication()
	c.BecomeReplica(func(nc net.Conn) {
		peer, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
		f.serveReplica(nc, m, m.Attach(hs, psync, replid, off, peer))
	})
}

// serveReplica runs a replica's connection (its goroutine).
func (f *Front) serveReplica(nc net.Conn, m *repl.Master, rep *repl.Replica) {
	if !rep.Full() {
		m.Run(rep, nc, nc, nil)
		return
	}
	x, err := f.relay.fetch()
	if err == nil {
		defer x.close()
		if err = m.Restart(rep, x.off); err == nil {
			f.relay.reselect.Store(true)
		}
	}
	if err != nil {
		f.log.Warn("full resynchronization of a replica failed", "err", err)
		m.Drop(rep)
		nc.Close()
		return
	}
	m.Run(rep, nc, nc, func(w io.Writer) error {
		id, at := rep.Start()
		opts := rdbfile.DefaultOptions()
		opts.Repl = &rdbfile.ReplInfo{ID: id, Offset: at, StreamDB: max(x.db, 0)}
		x.l.c.NetConn().SetDeadline(time.Now().Add(replTimeout))
		st, err := rdbfile.Splice(w, &io.LimitedReader{R: x.l.br, N: x.size}, x.snap, opts)
		x.close() // the upstream's RDB is read: this link's job is done
		if err == nil {
			f.log.Info("replica's RDB sent", "upstream_keys", st.Upstream, "cold_keys", st.Cold, "shadowed", st.Shadowed)
		}
		return err
	})
}

// upReplconf is REPLCONF: the server's handler (what a replica of
// Spillway tells before its PSYNC); inside MULTI it is queued upstream.
func upReplconf(h func(c *client, args [][]byte)) func(c *client, args [][]byte) {
	return func(c *client, args [][]byte) {
		if c.f.cluster.Load() && !c.inMulti {
			c.clusterReplicaCmd(args) // cluster_repl.go
			return
		}
		if c.inMulti {
			c.forwardNow(args)
			return
		}
		h(c, args)
	}
}

// upWait is WAIT numreplicas timeout: how many of Spillway's replicas
// acknowledged the client's writes. The client's writes went to the
// upstream (their replies are in); the relay's stream holds them once it
// reached the upstream's replication offset read now, and the target is
// the Master's offset there. The replicas are asked to acknowledge
// (REPLCONF GETACK). Inside MULTI it is queued upstream (EXEC answers
// without waiting, as Redis's).
func upWait(c *client, args [][]byte) {
	if c.inMulti {
		c.forwardNow(args)
		return
	}
	n, ok := cstr.ParseInt(args[1])
	if !ok {
		c.Err("ERR value is not an integer or out of range")
		return
	}
	ms, ok := cstr.ParseInt(args[2])
	if !ok {
		c.Err("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		c.Err("ERR timeout is negative")
		return
	}
	f := c.f
	m := f.srv.Replication()
	timeout := time.Duration(ms) * time.Millisecond
	start := time.Now()
	target := m.Offset()
	if f.relay.active.Load() {
		off, err := f.relay.offsetAfterUpstream(c)
		if err != nil {
			c.Err(link.ErrorReply(err))
			return
		}
		target = off
	}
	f.relay.getAck()
	rest := time.Duration(0)
	if timeout > 0 {
		if rest = timeout - time.Since(start); rest <= 0 {
			rest = time.Nanosecond
		}
	}
	gone, unblock := c.Block()
	acked := m.Wait(target, int(n), rest, false, gone)
	select {
	case <-gone:
		unblock(true)
		c.Quit()
		return
	default:
		unblock(false)
	}
	c.w.Int(int64(acked))
}

// offsetAfterUpstream returns the Master offset by which the relay's
// stream holds everything the upstream had done when it is asked now
// (its master_repl_offset), waiting (up to replTimeout) for the relay to
// get there.
func (r *relay) offsetAfterUpstream(c *client) (int64, error) {
	rep, err := c.ctlDo(c.DB(), [][]byte{[]byte("INFO"), []byte("replication")})
	if err != nil {
		return 0, err
	}
	if link.IsError(rep) {
		return 0, errors.New(link.ReplyText(rep))
	}
	var up int64 = -1
	for _, line := range strings.Split(string(link.BulkPayload(rep)), "\r\n") {
		if v, ok := strings.CutPrefix(line, "master_repl_offset:"); ok {
			up, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	if up < 0 {
		return 0, errors.New("relay: the upstream's INFO replication has no master_repl_offset")
	}
	deadline := time.Now().Add(replTimeout)
	r.mu.Lock()
	defer r.mu.Unlock()
	gen := r.gen
	for r.running && r.gen == gen && r.upOff < up {
		if time.Now().After(deadline) {
			return 0, errors.New("relay: the stream did not reach the upstream's offset in time")
		}
		waitCond(r.cond, 100*time.Millisecond)
	}
	return r.last.off, nil
}

// getAck asks Spillway's replicas for their offsets (REPLCONF GETACK *),
// as a master does for WAIT.
func (r *relay) getAck() {
	if !r.active.Load() {
		return
	}
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	r.master().FeedRaw([]byte("*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n"))
}
