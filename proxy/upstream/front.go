// Package upstream is upstream mode's front: Spillway in front of a real
// Redis (the upstream), which stays the hot tier, while cold keys are
// demoted into Spillway's store. It is a peer of the embedded server
// (proxy/server): the server keeps the connections, their checks and
// their replies, and hands each command to this front through its
// forwarding extension point (server.Forwarder, server.ForwardConn,
// server.Conn). The front forwards commands pipelined, pins clients that
// need connection state upstream (SELECT, MULTI, WATCH, blocking
// commands, Pub/Sub, MONITOR, CLIENT TRACKING) and answers itself the
// commands that concern Spillway or must see both tiers. Which keys are
// cold and which to demote is tiering/uptier's; the bytes on the wire are
// proxy/upstream/link's.
package upstream

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/config"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/upstream/aclmirror"
	"github.com/spillway/spillway/proxy/upstream/link"
	"github.com/spillway/spillway/tiering"
	"github.com/spillway/spillway/tiering/uptier"
)

// Front is upstream mode's state: the upstream Redis is the hot tier, the
// engine (with no hot tier of its own) holds the cold copies, and the
// index says which keys have one. It implements server.Forwarder.
type Front struct {
	srv    *server.Server
	engine *tiering.Engine
	cfg    *config.Config
	log    *slog.Logger

	pool      *link.Pool
	demoter   *uptier.Demoter
	locks     uptier.KeyLocks
	gate      uptier.Gate
	defaultDB int
	// indexes holds one cold index per database; SWAPDB swaps them.
	indexes []atomic.Pointer[uptier.ColdIndex]

	// admission is the promotion policy for reads of cold keys.
	admission *tiering.Admission

	// ctl holds one control connection per database, for the requests
	// Spillway makes on its own behalf (reloads, INFO...).
	ctlMu sync.Mutex
	ctl   map[int]*link.Conn

	// census is held shared by whatever briefly has a key in both tiers
	// (a demotion between its store write and its UNLINK, a reload between
	// RESTORE and the drop) and exclusively by the commands that count or
	// list both tiers, which then see every key once.
	census sync.RWMutex

	reloads, reloadConflicts, coldReads atomic.Int64

	// cluster is set once the upstream is known to be a Redis Cluster
	// node deployed behind this Spillway (acceptCluster).
	cluster atomic.Bool
	// slots lists cold keys by hash slot (CLUSTER COUNTKEYSINSLOT...).
	slots *uptier.SlotDirectory
	// follow is the cold feed between a shard's sidecars (cluster_follow.go).
	follow *clusterFollow

	// passAddrs maps the id of each client in passthrough (subscribed,
	// MONITOR, tracking) to its pinned connection's address, by which the
	// upstream knows it (CLIENT TRACKING ... REDIRECT).
	passAddrs sync.Map
	// clients maps every client's id to its *client (a REDIRECT target's
	// sink: tracking.go).
	clients sync.Map

	// fence orders writes after the blocking commands that reached the
	// front before them; orderWrites are the writes that also wait for
	// the other clients' input while blocking commands are in use
	// (fence.go).
	fence       blockFence
	orderWrites map[*cmdtable.Command]bool
	// order is the forwarding order; orderFirst are the commands not on a
	// pinned connection that take a ticket (fence.go).
	order      fwdOrder
	orderFirst map[*cmdtable.Command]bool

	// blocked maps the id of each client blocked upstream (upBlocking)
	// to the connection it waits on, for CLIENT UNBLOCK.
	blockedMu sync.Mutex
	blocked   map[int64]*link.Conn

	// scripts are the commands that run a script upstream. They go on a
	// dedicated connection, as blocking commands do: a script runs as
	// long as it likes, and on a shared connection every client behind
	// it would wait with it, SCRIPT KILL included (Redis reads nothing
	// from a connection whose script is running), instead of getting
	// BUSY as Redis's other clients do.
	scripts map[*cmdtable.Command]bool
	// mirrors are the upstream users restricted clients' scripts run as
	// (proxy/upstream/aclmirror).
	mirrors *aclmirror.Mirrors

	// local holds the commands Spillway answers itself (localTable).
	local map[*cmdtable.Command]localHandler
	// special is indexed by command ID: set for the commands in local,
	// scripts or orderWrites, so that the rest (nearly every forwarded
	// command) are told apart with one slice load instead of map lookups.
	special []bool
	// monitorLocal are the local commands that never reach the upstream:
	// Spillway shows them to the monitors itself (feedLocal).
	monitorLocal map[*cmdtable.Command]bool
	monitors     monitors
	marks        monitorMarks // local lines awaiting their place (monitor.go)
	// guard serializes the upstream settings' overrides (oom.go).
	guard sync.Mutex
	replicasState
	// The server's handlers the front's own commands run.
	hello, reset, sel, randomKey, clientUnblock server.Handler
	configSet, configResetStat                  server.Handler
	// relay serves Spillway's own replicas (relay.go).
	relay                                      *relay
	latencyHistogram, slowlogGet, slowlogReset server.Handler
	// slowAnchors place Spillway's slow log entries among the upstream's.
	slowAnchors slowAnchors
	own         ownConn // Spillway's own requests (slowlog.go)
	// ctlAddrs are the control connections' addresses: their upstream
	// slow log entries are clients' requests (CONFIG SET...).
	ctlAddrs sync.Map
	// ownRun: the upstream process its own lookups were counted on (localstats.go)
	ownRun ownStatsRun
}

// Options configure upstream mode.
type Options struct {
	Target     link.Target
	SharedConn int
	// Sentinel, if set, names the Sentinel-monitored master the upstream
	// is (Target.Addr is then unused).
	Sentinel *link.Sentinel
	// Engine, Config and Logger are the ones the server was built with.
	// The engine must have been opened with no hot budget.
	Engine *tiering.Engine
	Config *config.Config
	Logger *slog.Logger
}

// Enable switches srv to upstream mode (srv.SetForwarder): connects the
// pool, builds the cold index from the store (logging progress),
// reconciles keys found in both tiers when the last shutdown was not
// clean, and starts the demoter. Call it before srv serves; Close the
// front after the server.
func Enable(srv *server.Server, opts Options, cleanShutdown bool) (*Front, error) {
	f := &Front{srv: srv, engine: opts.Engine, cfg: opts.Config, log: opts.Logger,
		defaultDB: opts.Target.DB, ctl: map[int]*link.Conn{}, blocked: map[int64]*link.Conn{}}
	f.relay = f.newRelay()
	f.local = f.localTable()
	f.slots = uptier.NewSlotDirectory(opts.Engine)
	f.follow = newClusterFollow(f)
	f.scripts = map[*cmdtable.Command]bool{}
	for _, name := range []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"} {
		f.scripts[cmdtable.LookupFullName([]byte(name))] = true
	}
	f.orderWrites = map[*cmdtable.Command]bool{}
	for _, name := range orderWriteNames {
		f.orderWrites[cmdtable.LookupFullName([]byte(name))] = true
	}
	f.orderFirst = map[*cmdtable.Command]bool{}
	for _, name := range orderFirstNames {
		f.orderFirst[cmdtable.LookupFullName([]byte(name))] = true
	}
	f.special = make([]bool, cmdtable.NumIDs())
	for _, set := range []map[*cmdtable.Command]bool{f.scripts, f.orderWrites, f.orderFirst} {
		for cmd := range set {
			f.special[cmd.ID()] = true
		}
	}
	for cmd := range f.local {
		f.special[cmd.ID()] = true
	}
	n := f.engine.Databases()
	if opts.Target.DB >= n {
		return nil, fmt.Errorf("upstream db %d is out of range (databases %d)", opts.Target.DB, n)
	}
	f.indexes = make([]atomic.Pointer[uptier.ColdIndex], n)
	for i := range f.indexes {
		f.indexes[i].Store(uptier.NewColdIndex())
	}
	f.admission = tiering.NewAdmission(f.reloadSettings)
	f.pool = link.NewPool(link.Options{Target: opts.Target, Shared: opts.SharedConn, Logger: f.log,
		Sentinel:      opts.Sentinel,
		AcceptCluster: func(c *link.Conn) error { return f.acceptCluster(c, opts.Target.Addr) }})
	f.mirrors = aclmirror.New(f.pool, 2*time.Second)
	if err := f.pool.StartErr(); errors.Is(err, link.ErrClusterUpstream) {
		f.pool.Close()
		return nil, err
	}
	if err := f.buildIndex(); err != nil {
		f.pool.Close()
		return nil, err
	}
	if !cleanShutdown {
		if err := f.reconcile(); err != nil {
			f.log.Warn("could not reconcile the tiers after an unclean shutdown; keys in both are resolved when touched", "err", err)
		}
	}
	f.demoter = uptier.NewDemoter(uptier.DemoterOptions{
		Budget:    func() int64 { return f.cfg.MaxMemory() },
		Databases: n,
		Census:    &f.census,
		Logger:    f.log,
		Cluster:   f.cluster.Load,
		Demoted:   f.slots.Demoted,
		// Spillway's replicas must not see demotions (relay.go).
		UnlinkMarker: []byte(relayMarker),
		BeforeUnlink: f.follow.beforeUnlink,
		Dropped:      f.follow.dropped,
		Paused:       f.demotionHeld,
	}, f.pool.ForPolicy(), f.engine, f.index, &f.locks, &f.gate)
	f.demoter.Start()
	f.follow.ready()
	f.watchBudget()
	f.applySlowlogLen()
	f.useReplicaLoader()
	srv.SetForwarder(f)
	return f, nil
}

// DefaultDB is the database clients start in: the upstream URL's
// (server.Forwarder).
func (f *Front) DefaultDB() int { return f.defaultDB }

// index returns db's cold index.
func (f *Front) index(db int) *uptier.ColdIndex { return f.indexes[db].Load() }

// Close stops the demoter and closes the upstream connections.
func (f *Front) Close() {
	f.relay.close()
	f.follow.close()
	f.demoter.Stop()
	f.mirrors.Close()
	f.pool.Close()
	f.ctlMu.Lock()
	for _, c := range f.ctl {
		c.Close()
	}
	f.ctl = map[int]*link.Conn{}
	f.ctlMu.Unlock()
}

// buildIndex adds every key of the cold store to the index.
func (f *Front) buildIndex() error {
	start := time.Now()
	var total int64
	for db := range f.indexes {
		idx := f.index(db)
		err := f.engine.View(func(tx *tiering.Tx) error {
			_, err := tx.Keys(db, func(k []byte) bool {
				idx.Add(codec.KeyHash(k))
				total++
				if total%1_000_000 == 0 {
					f.log.Info("building the cold index", "keys", total, "elapsed", time.Since(start).Round(time.Millisecond))
				}
				return false
			})
			return err
		})
		if err != nil {
			return fmt.Errorf("cold index: %w", err)
		}
	}
	f.log.Info("cold index built", "cold_keys", total, "elapsed", time.Since(start).Round(time.Millisecond))
	return nil
}

// reconcile drops the cold copies of keys the upstream also holds: after a
// crash between a demotion's store write and its UNLINK (or a reload's
// RESTORE and its drop), the upstream's copy is the current one. It may run
// while the demoter and reloads run (a cluster replica's sidecar promoted
// with its node): each step of 1,000 keys holds the census exclusively, so
// no key it looks at is between a demotion's store write and its UNLINK
// (which would be in both tiers for a moment, the cold copy about to be
// the only one) or between a reload's RESTORE and its drop. It takes the
// census and then ctlMu, as every holder of both does.
func (f *Front) reconcile() error {
	start := time.Now()
	var checked, dropped int64
	for db := range f.indexes {
		var cursor uint64
		for {
			next, n, d, err := f.reconcileStep(db, cursor)
			if err != nil {
				return err
			}
			before := checked
			checked, dropped = checked+n, dropped+d
			if n > 0 && checked/100_000 != before/100_000 {
				f.log.Info("reconciling tiers after an unclean shutdown", "checked", checked, "dropped", dropped)
			}
			if next == 0 {
				break
			}
			cursor = next
		}
	}
	f.log.Info("tiers reconciled after an unclean shutdown", "cold_keys_checked", checked,
		"cold_copies_dropped", dropped, "elapsed", time.Since(start).Round(time.Millisecond))
	return nil
}

// reconcileStep is one step of reconcile: up to 1,000 cold keys of db from
// cursor, each looked up upstream and its cold copy dropped if the
// upstream holds it. It returns the next cursor (0 at the end) and how
// many keys it checked and dropped.
func (f *Front) reconcileStep(db int, cursor uint64) (next uint64, checked, dropped int64, err error) {
	f.census.Lock()
	defer f.census.Unlock()
	var keys [][]byte
	err = f.engine.View(func(tx *tiering.Tx) error {
		var err error
		keys, next, err = tx.Scan(db, cursor, tiering.ScanOptions{Count: 1000}, nil)
		return err
	})
	if err != nil || len(keys) == 0 {
		return next, 0, 0, err
	}
	f.ctlMu.Lock()
	defer f.ctlMu.Unlock()
	c, err := f.ctlConn(db)
	if err != nil {
		return 0, 0, 0, err
	}
	for _, k := range keys {
		c.SendArgs([][]byte{[]byte("EXISTS"), k})
	}
	if err := c.Flush(); err != nil {
		f.dropCtl(db)
		return 0, 0, 0, err
	}
	for _, k := range keys {
		r, err := c.Read()
		if err != nil {
			f.dropCtl(db)
			return 0, 0, 0, err
		}
		n, _ := link.IntReply(r)
		f.pool.OwnLookups().Count(n == 1) // EXISTS looks the key up
		if n == 1 {
			if err := uptier.DropKey(f.engine, db, k); err != nil {
				return 0, 0, 0, err
			}
			f.index(db).Remove(codec.KeyHash(k))
			f.follow.changed(db, k, true)
			dropped++
		}
	}
	return next, int64(len(keys)), dropped, nil
}

// ctlConn returns the control connection on db (RESP2), dialing it if
// needed. Callers serialize on ctlMu through ctlDo, or own the connection
// during startup.
func (f *Front) ctlConn(db int) (*link.Conn, error) {
	if c := f.ctl[db]; c != nil {
		return c, nil
	}
	c, err := f.pool.DialInternal(2, db)
	if err != nil {
		return nil, err
	}
	f.ctl[db] = c
	f.ctlAddrs.Store(c.LocalAddr(), true) // requests for clients (slowlog.go)
	return c, nil
}

func (f *Front) dropCtl(db int) {
	if c := f.ctl[db]; c != nil {
		f.ctlAddrs.Delete(c.LocalAddr())
		c.Close()
		delete(f.ctl, db)
	}
}

// ctlDo sends one command on db's control connection and returns a copy of
// the reply.
func (f *Front) ctlDo(db int, args [][]byte) ([]byte, error) {
	f.ctlMu.Lock()
	defer f.ctlMu.Unlock()
	c, err := f.ctlConn(db)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	c.SendArgs(args)
	if err := c.Flush(); err != nil {
		f.dropCtl(db)
		return nil, fmt.Errorf("%w: %v", link.ErrUnavailable, err)
	}
	r, err := c.Read()
	if err != nil {
		f.dropCtl(db)
		return nil, fmt.Errorf("%w: %v", link.ErrUnavailable, err)
	}
	return append([]byte(nil), r...), nil
}

// admitReload is the promotion policy for reads of cold keys, as in
// embedded mode (tiering.Admission): values over cold-read-max-bytes or an
// eighth of the budget are always served from disk; others are reloaded on
// their promote-min-hits-th read within the admission window.
func (f *Front) admitReload(h uint64, size int64) bool {
	return f.admission.Admit(h, size)
}

// reloadSettings are the reload policy's settings, read from the
// configuration on every decision. A maxmemory of 0 (no budget) sets no
// size limit but cold-read-max-bytes.
func (f *Front) reloadSettings() tiering.AdmissionSettings {
	b := f.cfg.MaxMemory()
	if b <= 0 {
		b = math.MaxInt64
	}
	return tiering.AdmissionSettings{MinHits: f.cfg.PromoteMinHits(), ColdReadMax: f.cfg.ColdReadMaxBytes(), HotBudget: b}
}

// infoValue makes s fit an INFO line: line breaks become spaces.
func infoValue(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}
