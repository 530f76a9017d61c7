package server

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/coldstore"
	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/rdbfile"
	"github.com/spillway/spillway/proxy/repl"
	"github.com/spillway/spillway/proxy/replica"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/tiering"
)

// The engine lock, as the server takes it. Handlers reach it through
// Ctx.Update and Ctx.View; the server's own code (EXEC, scripts, WATCH
// bookkeeping, INFO) through withLock and runGroup. Both open their
// transaction with tiering.Engine.Update, which always releases the lock.

// withLock runs fn in a transaction: the group's, if the client runs a
// group (fn's non-reply error then fails the group), else its own, which
// is committed when fn returns nil or a Redis error and aborted otherwise
// (or when fn panics). A commit serves the clients blocked on keys fn
// filled and, under appendfsync always, makes the client's replies wait
// for the write to be durable. It returns fn's error, or the commit's.
func (c *Client) withLock(fn func(tx *tiering.Tx) error) error {
	if tx := c.group; tx != nil {
		tx.CountLookups(!c.writeLookups)
		err := fn(tx)
		c.failGroup(err)
		if c.trk.On() && c.trkCmd != nil {
			c.rememberRead() // notify.go
		}
		return err
	}
	var ferr error
	var served []*waiter
	step := func(tx *tiering.Tx) error {
		c.txID = tx.TxID()
		c.s.trkCur = c // tracking's current client (notify.go)
		defer func() { c.s.trkCur = nil }()
		if c.s.paused.Load() || c.s.replica.Active() {
			c.expiryOnReplica(tx)
		}
		tx.CountLookups(!c.writeLookups)
		ferr = fn(tx)
		if ferr != nil && !isReplyError(ferr) {
			c.s.prop.Reset()
			return ferr // aborted
		}
		if c.trk.On() && c.trkCmd != nil {
			c.rememberRead() // under the lock the read held
		}
		if c.ml != nil {
			if err := c.ml.commit(c, tx); err != nil {
				return err
			}
		}
		if c.s.repl.Active() {
			c.propEnd()
			c.s.propFlush(c)
		}
		served = c.s.blocking.serveReadyFrom(c, tx)
		return nil
	}
	var p coldstore.Pending
	var err error
	now := c.ctx.nowMs // the command's time: its first transaction only
	c.ctx.nowMs = 0
	if c.inRun {
		if held, _ := c.run.Held(); !held {
			c.runMark = c.mark
		}
		p, err = c.run.UpdateAt(c.s.engine, now, step)
	} else {
		p, err = c.s.engine.UpdateAt(now, step)
	}
	return c.committed(served, p, err, ferr)
}

// Pipeline runs. A client whose input already holds its next command (a
// pipeline) runs its consecutive ordinary commands under one hold of the
// engine's lock (tiering.Run): each command is still its own transaction,
// committed in order with everything Redis observes after a command
// (keyspace events, blocked clients served, propagation, tracking,
// statistics), but the lock is taken once and the batches are applied to
// the store once, when the run ends. dispatch decides per command whether
// it joins the run (runsInPipeline); serve ends the run before it flushes
// the replies (so under appendfsync always the sync covers the run), after
// maxRun commands (so one pipeline cannot starve the other clients), and
// before anything that may wait for another client or take the lock
// otherwise (a command that is not ordinary, a pause, an out-of-memory
// eviction, fresh or blocked clients).

// maxRun bounds the commands of one run: then the lock is released, and
// the other clients get their turn.
const maxRun = 32

// pipelineCommands are the commands a run may hold: their handlers only
// read and write keys through Ctx.Update/View and never wait (no blocking
// variant, no lock-free cold read, no staging), so running them under a
// held lock cannot deadlock or stall. Reads are left out: a cold GET or
// HGET reads the store without the lock, which a run would hold.
var pipelineCommands = []string{
	"set", "setnx", "setex", "psetex", "getset", "append", "mset", "msetnx",
	"incr", "decr", "incrby", "decrby", "incrbyfloat",
	"hset", "hmset", "hsetnx", "hincrby", "hincrbyfloat", "hdel",
	"lpush", "rpush", "lpushx", "rpushx", "lpop", "rpop",
	"sadd", "srem", "spop",
	"zadd", "zincrby", "zrem", "zpopmin", "zpopmax",
	// A script or function is one group transaction (runGroup): its
	// commands read under the lock (cold reads too) and never wait.
	"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro",
}

// initPipelineCommands fills s.pipelined, indexed by command ID.
func (s *Server) initPipelineCommands() {
	s.pipelined = make([]bool, cmdtable.NumIDs())
	for _, name := range pipelineCommands {
		if cmd := cmdtable.LookupFullName([]byte(name)); cmd != nil {
			s.pipelined[cmd.ID()] = true
		}
	}
}

// runsInPipeline reports whether cmd, about to be called, joins the
// client's run: the client's input held it already (pipelined), it is a
// pipeline command, and nothing asks for the lock to be free between
// commands (a group, the master client, upstream mode, tracking, clients
// blocked or fresh: their waits need the other clients to run).
func (c *Client) runsInPipeline(cmd *cmdtable.Command) bool {
	s := c.s
	return c.pipelined && s.pipelined[cmd.ID()] && c.group == nil && c.ml == nil && c.fwd == nil &&
		!s.trk.Active() && (s.blocking == nil || s.blocking.n.Load() == 0) && s.fresh.n.Load() == 0
}

// endRun ends the client's run, if it holds one: the lock is released and
// the run's batches are applied. If they cannot be, the run's replies are
// dropped and the connection is to be closed (endRun reports false), as
// flush does when a sync fails: nothing the store refused is acknowledged.
func (c *Client) endRun() bool {
	c.inRun = false
	if held, _ := c.run.Held(); !held {
		return true
	}
	defer c.unlocked()
	if err := c.run.End(); err != nil {
		c.s.log.Error("a pipeline's writes were not applied; closing client", "client", c.id, "err", err)
		c.w.Truncate(min(c.runMark, c.w.Len()))
		c.quit = true
		return false
	}
	return true
}

// failGroup records err as the failure of the client's group if it is a
// failure of the store (not a Redis error reply) and the first: the group
// is then aborted as a whole when it ends.
func (c *Client) failGroup(err error) {
	if err != nil && !isReplyError(err) && c.groupErr == nil {
		c.groupErr = err
	}
}

// committed finishes a transaction the client ran: it hands the clients
// it served their replies (or the commit's error) and keeps what the
// client must wait for before its replies go out. It returns err (the
// transaction's) or else ferr (a Redis error its function returned).
func (c *Client) committed(served []*waiter, p coldstore.Pending, err, ferr error) error {
	if served != nil {
		deliver(served, err)
	}
	if err != nil {
		return err
	}
	if !p.IsZero() {
		c.pending = p
	}
	return ferr
}

// runGroup runs fn as a group (EXEC, a script): every command the client
// runs until fn returns shares one transaction, under one hold of the
// engine's lock. The group is committed when fn returns, or aborted as a
// whole if fn or one of its commands failed on a storage error; runGroup
// then returns that error, and the caller replaces the group's replies
// with it. A group inside a group (a script run by EXEC) runs in the outer
// one, which ends it. If fn panics, the transaction is aborted and the
// client is left in the group, so that the panic recovery drops the
// group's whole reply.
func (c *Client) runGroup(fn func(tx *tiering.Tx) error) error {
	if tx := c.group; tx != nil {
		c.failGroup(fn(tx))
		return nil
	}
	var served []*waiter
	step := func(tx *tiering.Tx) error {
		c.txID = tx.TxID()
		c.s.trkCur = c
		defer func() { c.s.trkCur = nil }()
		if c.ml != nil {
			tx.LiveExpired()
		}
		c.group, c.groupErr, c.groupMark = tx, nil, c.w.Len()
		c.failGroup(fn(tx))
		c.group = nil
		if gerr := c.groupErr; gerr != nil {
			c.groupErr = nil
			c.s.prop.Reset()
			return gerr // aborted
		}
		if c.ml != nil {
			if err := c.ml.commit(c, tx); err != nil {
				return err
			}
		}
		if c.s.repl.Active() {
			c.s.propFlush(c)
		}
		served = c.s.blocking.serveReadyFrom(c, tx)
		return nil
	}
	var p coldstore.Pending
	var err error
	if c.inRun { // a pipelined script joins the pipeline's run
		if held, _ := c.run.Held(); !held {
			c.runMark = c.mark
		}
		p, err = c.run.Update(c.s.engine, step)
	} else {
		p, err = c.s.engine.Update(step)
	}
	if held, _ := c.run.Held(); !held {
		c.unlocked()
	}
	return c.committed(served, p, err, nil)
}

// unlocked runs what the client's commands deferred to the end of its
// hold of the engine's lock (Ctx.AfterUnlock), in order.
func (c *Client) unlocked() {
	for len(c.afterUnlock) > 0 {
		fns := c.afterUnlock
		c.afterUnlock = nil
		for _, fn := range fns {
			fn()
		}
	}
}

// Propagation to replicas, as Redis 7.0's call()/alsoPropagate/
// propagatePendingCommands. While the replication backlog exists
// (repl.Master.Active: a replica attached once), every lock hold collects
// what it propagates in s.prop (guarded by the engine's lock): DELs of the
// keys it found expired (keyEvent), what handlers add (Ctx.Propagate), and
// the command itself, as received or as rewritten (Ctx.RewriteArgs), if
// it changed the dataset (the client's change count moved: countChange)
// or forced it (Ctx.ForcePropagation) and did not prevent it. The unit is
// fed to the stream before the lock is released, so the stream's order is
// the order of the changes; a unit of more than one command is wrapped in
// MULTI/EXEC. With no backlog, each lock hold pays one atomic load.

// propCmd is the running command's propagation state (reset by call).
type propCmd struct {
	args    [][]byte
	rewrite [][]byte
	changes int64 // the client's change count when the command began
	prevent bool
	force   bool
	done    bool // its own form was recorded
}

// propEnd records the client's running command in s.prop if it changed
// the dataset or forced its propagation (the caller holds the lock).
func (c *Client) propEnd() {
	p := &c.prop
	if p.done || p.prevent || p.args == nil || !p.force && c.stat.changes == p.changes {
		return
	}
	p.done = true
	if cmd := c.lastCmd.Load(); cmd != nil && cmd.Name == "exec" {
		return // EXEC is never propagated itself: its commands are
	}
	args := p.args
	if p.rewrite != nil {
		args = p.rewrite
	}
	c.s.prop.Add(c.db, args...)
}

// propFlush feeds s.prop to the stream as one unit (the caller holds the
// lock); c's last write offset (WAIT's target) becomes the stream's end.
func (s *Server) propFlush(c *Client) {
	if s.prop.Len() == 0 {
		return
	}
	wrap := true
	if c != nil {
		if cmd := c.lastCmd.Load(); cmd != nil && (cmd.Name == "scan" || cmd.Name == "randomkey") {
			wrap = false // Redis's CMD_TOUCHES_ARBITRARY_KEYS
		}
	}
	off := s.repl.Feed(&s.prop, wrap)
	if c != nil {
		c.woff = off
	}
}

// Replication, master side (the state is proxy/repl's).

func registerReplication(t *Table) {
	t.Register("sync", cmdSync)
	t.Register("psync", cmdSync)
	t.Register("replconf", cmdReplconf)
	t.Register("wait", cmdWait)
	t.Register("role", cmdRole)
	t.Register("replicaof", cmdReplicaOf)
	t.Register("slaveof", cmdReplicaOf)
}

// initRepl creates the replication master (no backlog until a replica
// attaches) and follows its settings.
func (s *Server) initRepl() {
	s.repl = repl.New(repl.Options{Log: s.log, Setting: s.configValue,
		OnTick: func() { s.updateNoReplicas("") }})
	s.cfg.OnChange("repl-backlog-size", func(string) { s.repl.Resize() })
	s.replica = replica.New(replica.Host{Engine: s.engine, Master: s.repl, Setting: s.configValue,
		Log: s.log, Apply: s.applyFromMaster, ResetClient: s.mc.reset,
		Loading: s.rdb.SetLoading, FunctionsLoaded: s.loadFunctions,
		ActiveExpire: func(on bool) { s.engine.SetExpiryPaused(!on || s.paused.Load()) },
		Linked:       s.masterLinked})
}

// Replica returns the replica side (REPLICAOF).
func (s *Server) Replica() *replica.Replica { return s.replica }

// Replication, replica side: the master client. The replica's link
// (proxy/replica) hands each command of the master's stream to
// applyFromMaster, which runs it through execute as a client like any
// other, except that it is the master client (Client.ml set): no refusal
// applies to it (authentication, ACL, OOM, NOREPLICAS, READONLY,
// MASTERDOWN, LOADING), its replies are dropped, and each of its lock
// holds stores the replication state (the Record) in the batch of the
// command's effects and relays the command's bytes to this server's own
// replicas (repl.Master.FeedRaw) before the lock is released, so that a
// replica's snapshot never holds a change its stream then repeats.

// masterClient is the master client, made on first use; pendingDB is a
// reset asked for by ResetClient (applied before its next command, on the
// link's goroutine: a reset may be asked from inside a MULTI holding the
// engine's lock, where waiting for the link would deadlock).
type masterClient struct {
	conn masterConn
	// mu serializes applyFromMaster: a replaced link's goroutine may
	// still be finishing its last command when the new one starts.
	mu        sync.Mutex
	once      sync.Once
	c         atomic.Pointer[Client]
	resetAsk  atomic.Bool
	pendingDB atomic.Int64
}

// streamDB is the master client's database (0 without one): where the
// relayed stream goes on, the repl-stream-db of a full resync's RDB.
func (m *masterClient) streamDB() int {
	if c := m.c.Load(); c != nil && c.s.repl.Proxying() {
		return int(c.dbShown.Load())
	}
	return 0
}

// masterLink is the master client's running command.
type masterLink struct {
	raw []byte // the command's bytes, relayed once (nil: not relayed)
	rec []byte // the Record to store with its effects (nil: none)
	fed bool
}

// client returns the master client, making it on first use.
func (m *masterClient) client(s *Server) *Client {
	m.once.Do(func() {
		c := newClient(s, &m.conn)
		c.noBlock = true
		c.authed = true
		c.aclOn.Store(false)
		c.ml = &masterLink{}
		m.c.Store(c)
	})
	return m.c.Load()
}

// masterLinked lists the master client with the link's connection nc, or
// unlists it (nil) (replica.Host.Linked).
func (s *Server) masterLinked(nc net.Conn) {
	m := &s.mc
	c := m.client(s)
	if nc == nil {
		m.conn.nc.Store(nil)
		s.mu.Lock()
		delete(s.clients, c.id)
		s.mu.Unlock()
		return
	}
	m.conn.nc.Store(&nc)
	c.killed.Store(false)
	s.mu.Lock()
	s.clients[c.id] = c
	s.mu.Unlock()
}

// masterConn is the master client's connection: the link's (its addresses
// for CLIENT LIST; Close, for CLIENT KILL, ends the link). Nothing is read
// from it or written to it: the link reads the master's stream, the
// master client's replies are dropped.
type masterConn struct {
	nc atomic.Pointer[net.Conn]
}

func (mc *masterConn) cur() net.Conn {
	if p := mc.nc.Load(); p != nil {
		return *p
	}
	return nil
}

func (mc *masterConn) Read([]byte) (int, error)    { return 0, io.EOF }
func (mc *masterConn) Write(b []byte) (int, error) { return len(b), nil }

func (mc *masterConn) Close() error {
	if nc := mc.cur(); nc != nil {
		return nc.Close()
	}
	return nil
}

func (mc *masterConn) LocalAddr() net.Addr {
	if nc := mc.cur(); nc != nil {
		return nc.LocalAddr()
	}
	return localAddr
}

func (mc *masterConn) RemoteAddr() net.Addr {
	if nc := mc.cur(); nc != nil {
		return nc.RemoteAddr()
	}
	return localAddr
}

func (mc *masterConn) SetDeadline(time.Time) error      { return nil }
func (mc *masterConn) SetReadDeadline(time.Time) error  { return nil }
func (mc *masterConn) SetWriteDeadline(time.Time) error { return nil }

// reset asks for the master client's MULTI state to be discarded and db
// selected (db < 0: kept) before its next command.
func (m *masterClient) reset(db int) {
	m.pendingDB.Store(int64(db))
	m.resetAsk.Store(true)
}

// applyFromMaster runs one command of the master's stream as the master
// client (replica.Host.Apply).
func (s *Server) applyFromMaster(args [][]byte, raw, rec []byte) {
	s.mc.mu.Lock()
	defer s.mc.mu.Unlock()
	c := s.mc.client(s)
	if s.mc.resetAsk.CompareAndSwap(true, false) {
		if c.fwd != nil {
			// Upstream mode: the front holds the transaction and the
			// database, reset with the commands that change them.
			if c.fwd.InTransaction() {
				c.execute([][]byte{[]byte("DISCARD")})
			}
			if db := s.mc.pendingDB.Load(); db >= 0 && int(db) < s.engine.Databases() {
				c.execute([][]byte{[]byte("SELECT"), strconv.AppendInt(nil, db, 10)})
			}
			c.fwd.Flush(false)
			c.w.Reset()
		} else {
			c.discardMulti()
			c.unwatchAll()
			if db := int(s.mc.pendingDB.Load()); db >= 0 && db < s.engine.Databases() {
				c.db = db
				c.dbShown.Store(int32(db))
			}
		}
	}
	ml := c.ml
	ml.raw, ml.rec, ml.fed = raw, rec, raw == nil
	if len(args) > 0 {
		c.execute(args)
		if c.fwd != nil {
			c.fwd.Flush(false) // upstream mode: applied before the next
		}
		if err := c.waitPending(); err != nil {
			s.log.Error("a command from the master is not durable", "err", err)
		}
		c.w.Reset()
		c.quit = false
	}
	if !ml.fed {
		s.repl.FeedRaw(raw)
	}
	ml.raw, ml.rec = nil, nil
}

// expiryOnReplica applies Redis's expiry rules on a replica (and while
// clients are paused): the master client's commands find expired keys
// live (the master's DEL removes them), other clients' reads find them
// absent without removing them.
func (c *Client) expiryOnReplica(tx *tiering.Tx) {
	if c.ml != nil {
		tx.LiveExpired()
		return
	}
	c.keepExpiredIfReading(tx) // client.go
}

// commit stores the Record and relays the command (under the lock, at the
// end of one of the master client's lock holds).
func (ml *masterLink) commit(c *Client, tx *tiering.Tx) error {
	if ml.rec != nil {
		rec := ml.rec
		if len(rec) > 0 {
			rec = strconv.AppendInt(append(rec[:len(rec):len(rec)], ' '), int64(c.db), 10)
		}
		if err := tx.PutSystem(replica.Record, rec); err != nil {
			return fmt.Errorf("store the replication state: %w", err)
		}
	}
	if !ml.fed && c.s.repl.Proxying() {
		c.s.prop.Reset() // the master's bytes are relayed, not our re-encoding
		ml.fed = true
		c.s.repl.FeedRaw(ml.raw)
	}
	return nil
}

// ReplicaOfAtStart applies the replicaof setting at startup: "host port"
// starts replicating (resuming from the stored state), anything else
// ("no one") clears a stored state, which a master's writes would make
// stale.
func (s *Server) ReplicaOfAtStart(hostPort string) error {
	f := strings.Fields(hostPort)
	if len(f) == 2 {
		port, err := strconv.Atoi(f[1])
		if err != nil {
			return fmt.Errorf("replicaof: bad port %q", f[1])
		}
		s.replica.Start(f[0], port)
		return nil
	}
	if _, ok, err := s.engine.SystemRecord(replica.Record); err != nil || !ok {
		return err
	}
	_, err := s.engine.Update(func(tx *tiering.Tx) error { return tx.PutSystem(replica.Record, nil) })
	return err
}

// Replication returns the replication master.
func (s *Server) Replication() *repl.Master { return s.repl }

// ReplicationActivated is called by a front that activated the replication
// master itself (repl.Master.Adopt: upstream mode's relay): the engine's
// key events are turned on, so that expiries and evictions propagate.
func (s *Server) ReplicationActivated() error {
	_, err := s.engine.Update(func(*tiering.Tx) error {
		s.updateObserving()
		return nil
	})
	return err
}

// propagateDeletion records the DEL (UNLINK under lazyfree-lazy-expire or
// lazyfree-lazy-eviction) of a key that expired or was evicted (keyEvent,
// under the lock). One a command's lookup found joins the command's unit;
// one the sweeper or an eviction removed is a unit of its own.
func (s *Server) propagateDeletion(db int, key []byte, ev tiering.KeyEvent) {
	lazy := "lazyfree-lazy-expire"
	if ev == tiering.KeyEvicted {
		lazy = "lazyfree-lazy-eviction"
	}
	name := "DEL"
	if s.configValue(lazy) == "yes" {
		name = "UNLINK"
	}
	s.prop.Add(db, []byte(name), key)
	if s.trkCur == nil {
		s.propFlush(nil)
	}
}

// cmdSync is SYNC and PSYNC replid offset: the connection becomes a
// replica. The replica is registered and its RDB's point in time fixed
// under the engine's lock, so that the stream it gets next starts exactly
// after the RDB; once the reply is flushed the connection is handed to
// repl.Master.Run (Client.takeover).
func cmdSync(x *Ctx, args [][]byte) error {
	c, s := x.c, x.c.s
	if c.replica.Load() {
		return nil // already a replica: ignored, as Redis
	}
	if c.nc == nil {
		return resp.Err("ERR SYNC and PSYNC need a network connection")
	}
	psync, replid, off, ok := repl.ParseSync(args)
	if !ok {
		return resp.Err("ERR value is not an integer or out of range")
	}
	hs := repl.Handshake{}
	if c.replHS != nil {
		hs = *c.replHS
	}
	peer, _, _ := net.SplitHostPort(c.nc.RemoteAddr().String())
	var r *repl.Replica
	var snap *tiering.Snapshot
	opts := s.rdb.Options()
	streamDB := 0
	if err := x.Update(func(tx *tiering.Tx) error {
		if s.replica.Active() && !s.replica.LinkUp() {
			return resp.Err("NOMASTERLINK Can't SYNC while not connected with my master")
		}
		r = s.repl.Attach(hs, psync, replid, off, peer)
		streamDB = s.mc.streamDB() // a relayed stream goes on in the master client's database
		s.updateObserving()
		if !r.Full() || hs.ExcludeData {
			return nil // a keyless RDB needs no snapshot
		}
		var err error
		opts.UsedMem = tx.Engine().Hot().UsedBytes()
		if snap, err = tx.Snapshot(); err != nil {
			s.repl.Drop(r)
			return fmt.Errorf("replica's snapshot: %w", err)
		}
		return nil
	}); err != nil {
		return err
	}
	c.replica.Store(true)
	c.quit = true
	c.takeover = func() {
		if snap != nil {
			defer snap.Close()
		}
		s.repl.Run(r, c.nc, c.nc, func(w io.Writer) error {
			id, at := r.Start()
			if hs.ExcludeData {
				var libs []byte
				if !hs.ExcludeFunctions {
					libs = opts.Functions
				}
				return repl.WriteKeylessRDB(w, id, at, libs)
			}
			opts.Repl = &rdbfile.ReplInfo{ID: id, Offset: at, StreamDB: streamDB}
			return rdbfile.Write(w, snap, opts)
		})
	}
	return nil
}

// cmdReplconf is REPLCONF option value...: what a replica tells before
// SYNC/PSYNC. ACK and GETACK from a connection that is not a replica get
// no reply, as in Redis.
func cmdReplconf(x *Ctx, args [][]byte) error {
	if x.c.replHS == nil {
		x.c.replHS = &repl.Handshake{}
	}
	msg, reply := x.c.replHS.Conf(args)
	switch {
	case !reply:
	case msg != "":
		return resp.Err(msg)
	default:
		x.W.OK()
	}
	return nil
}

// cmdWait is WAIT numreplicas timeout: the number of replicas that
// acknowledged the client's last write, once numreplicas did or the
// timeout (ms, 0: none) passed; inside MULTI or a script at once.
func cmdWait(x *Ctx, args [][]byte) error {
	if x.c.s.replica.Active() {
		return resp.Err("ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 " +
			"if a replica is configured to be writable (which is not the default) writes to replicas are just local " +
			"and are not propagated.")
	}
	n, ok := cstr.ParseInt(args[1])
	if !ok {
		return resp.Err("ERR value is not an integer or out of range")
	}
	ms, ok := cstr.ParseInt(args[2])
	if !ok {
		return resp.Err("ERR timeout is not an integer or out of range")
	}
	if ms < 0 {
		return resp.Err("ERR timeout is negative")
	}
	c := x.c
	m := c.s.repl
	acked := m.Wait(c.woff, int(n), 0, true, nil)
	if acked >= int(n) || x.InGroup() || c.noBlock || c.nc == nil {
		x.W.Int(int64(acked))
		return nil
	}
	// Blocked, as a blocking pop is (block): earlier replies go out, a
	// disconnection ends the wait.
	if !c.flush() {
		c.quit = true
		return nil
	}
	c.mark = c.w.Len()
	gone, exited := make(chan struct{}), make(chan struct{})
	c.startWatch(gone, exited)
	c.blocked.Store(true)
	start := time.Now()
	acked = m.Wait(c.woff, int(n), time.Duration(ms)*time.Millisecond, false, gone)
	c.blocked.Store(false)
	c.nc.SetReadDeadline(time.Now()) // stops the watcher
	<-exited
	c.nc.SetReadDeadline(time.Time{})
	c.in.armed = false
	c.stat.blocked += time.Since(start)
	select {
	case <-gone:
		c.quit = true
	default:
	}
	x.W.Int(int64(acked))
	return nil
}

// cmdRole is ROLE for a master: "master", the replication offset, and
// each online replica's address, port and acknowledged offset.
func cmdRole(x *Ctx, _ [][]byte) error {
	if rp := x.c.s.replica; rp.Active() {
		ri := rp.Role()
		x.W.Array(5)
		x.W.BulkString("slave")
		x.W.BulkString(ri.Host)
		x.W.Int(int64(ri.Port))
		x.W.BulkString(ri.State)
		x.W.Int(ri.Offset)
		return nil
	}
	off, rs := x.c.s.repl.Role()
	x.W.Array(3)
	x.W.BulkString("master")
	x.W.Int(off)
	x.W.Array(len(rs))
	for _, r := range rs {
		x.W.Array(3)
		x.W.BulkString(r.IP)
		x.W.BulkString(strconv.Itoa(r.Port))
		x.W.BulkString(strconv.FormatInt(r.Ack, 10))
	}
	return nil
}
