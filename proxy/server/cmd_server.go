package server

import (
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/latency"
	"github.com/spillway/spillway/proxy/rdbfile"
	"github.com/spillway/spillway/proxy/replica"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/slowlog"
	"github.com/spillway/spillway/tiering"
)

func registerAdmin(t *Table) {
	t.Register("dbsize", cmdDBSize)
	t.Register("flushdb", cmdFlushDB)
	t.Register("flushall", cmdFlushAll)
	t.Register("swapdb", cmdSwapDB)
	t.Register("time", cmdTime)
	t.Register("lastsave", func(x *Ctx, _ [][]byte) error { x.W.Int(x.c.s.lastSave.Load()); return nil })
	t.Register("save", cmdSave)
	t.Register("bgsave", cmdBgsave)
	t.Register("shutdown", cmdShutdown)
	t.Register("config|get", cmdConfigGet)
	t.Register("config|set", cmdConfigSet)
	t.Register("config|resetstat", cmdConfigResetStat)
	t.Register("config|rewrite", cmdConfigRewrite)
	t.Register("config|help", HelpHandler(configHelp))
	registerClusterDisabled(t)
	registerMonitors(t)
	registerReplication(t) // commit.go
}

// forcePropagation propagates a command that takes no lock (PUBLISH,
// which Redis forces to the replicas) in its place in the stream.
func forcePropagation(x *Ctx) {
	if x.Replicating() {
		x.Update(func(*tiering.Tx) error { x.ForcePropagation(); return nil })
	}
}

// cmdReplicaOf is REPLICAOF (SLAVEOF) host port: the server becomes a
// replica of host:port (proxy/replica); NO ONE promotes it back to a
// master, keeping its data, and clears the stored replication state in
// the command's transaction (REPLICAOF may run inside MULTI).
func cmdReplicaOf(x *Ctx, args [][]byte) error {
	s := x.c.s
	if cstr.EqualFold(args[1], "no") && cstr.EqualFold(args[2], "one") {
		if s.replica.Stop() {
			if err := x.Update(func(tx *tiering.Tx) error { return tx.PutSystem(replica.Record, nil) }); err != nil {
				return err
			}
		}
		x.W.OK()
		return nil
	}
	if x.c.replica.Load() {
		return resp.Err("ERR Command is not valid when client is a replica.")
	}
	p, ok := cstr.ParseInt(args[2])
	if !ok || p < 0 || p > 65535 {
		return resp.Err("ERR Invalid master port")
	}
	if s.fwd != nil {
		return resp.Err("ERR REPLICAOF is not supported in upstream mode")
	}
	if !s.replica.Start(string(args[1]), int(p)) {
		x.W.Simple("OK Already connected to specified master")
		return nil
	}
	x.W.OK()
	return nil
}

// registerClusterDisabled answers CLUSTER (every subcommand, HELP
// included), READONLY, READWRITE and ASKING as a redis-server 7.0 started
// without cluster-enabled does, so that clients and tools probing for a
// cluster learn that this is not one.
func registerClusterDisabled(t *Table) {
	disabled := func(*Ctx, [][]byte) error {
		return resp.Err("ERR This instance has cluster support disabled")
	}
	for _, sub := range cmdtable.Lookup([]byte("cluster")).Subcommands {
		t.Register(sub.Name, disabled)
	}
	for _, name := range []string{"readonly", "readwrite", "asking"} {
		t.Register(name, disabled)
	}
}

// replyError writes the reply for a failed engine operation.
func (c *Client) replyError(err error) {
	c.w.Truncate(c.mark)
	c.s.log.Error("command failed", "client", c.id, "err", err)
	c.err("ERR " + err.Error())
}

func cmdDBSize(x *Ctx, _ [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		x.W.Int(tx.DBSize(x.DB()))
		return nil
	})
}

// ParseFlushMode parses FLUSHDB/FLUSHALL's optional SYNC|ASYNC, with
// Redis's error (upstream mode checks them too before it forwards). Both
// are O(1) here: the store drops a database with range deletions.
func ParseFlushMode(args [][]byte) error {
	if len(args) == 1 {
		return nil
	}
	if len(args) == 2 && (cstr.EqualFold(args[1], "sync") || cstr.EqualFold(args[1], "async")) {
		return nil
	}
	return resp.Err("ERR syntax error")
}

func cmdFlushDB(x *Ctx, args [][]byte) error {
	if err := ParseFlushMode(args); err != nil {
		return err
	}
	return x.Update(func(tx *tiering.Tx) error {
		if err := x.c.s.touchWatchedInDB(tx, x.DB(), -1); err != nil {
			return err
		}
		x.c.s.trackFlush()
		n := tx.DBSize(x.DB())
		if err := tx.FlushDB(x.DB()); err != nil {
			return err
		}
		x.c.s.blocking.noteBlockedKeys(tx, x.DB()) // blocked XREADGROUPs learn their stream is gone
		x.c.s.noteFlush(n, args, false)
		x.ForcePropagation() // even of an empty database, as Redis
		x.W.OK()
		return nil
	})
}

func cmdFlushAll(x *Ctx, args [][]byte) error {
	if err := ParseFlushMode(args); err != nil {
		return err
	}
	err := x.Update(func(tx *tiering.Tx) error {
		for db := range x.c.s.engine.Databases() {
			if err := x.c.s.touchWatchedInDB(tx, db, -1); err != nil {
				return err
			}
		}
		x.c.s.trackFlush()
		var n int64
		for db := range x.c.s.engine.Databases() {
			n += tx.DBSize(db)
		}
		if err := tx.FlushAll(); err != nil {
			return err
		}
		for db := range x.c.s.engine.Databases() {
			x.c.s.blocking.noteBlockedKeys(tx, db) // blocked XREADGROUPs learn their stream is gone
		}
		x.c.s.noteFlush(n, args, true)
		x.ForcePropagation()
		x.W.OK()
		return nil
	})
	if err == nil && x.c.fwd == nil {
		x.c.s.rdb.AfterFlushAll(x.View, x.InGroup())
	}
	return err
}

func cmdSwapDB(x *Ctx, args [][]byte) error {
	a, ok := cstr.ParseInt(args[1])
	if !ok {
		return resp.Err("ERR invalid first DB index")
	}
	b, ok := cstr.ParseInt(args[2])
	if !ok {
		return resp.Err("ERR invalid second DB index")
	}
	n := int64(x.c.s.engine.Databases())
	if a < 0 || a >= n || b < 0 || b >= n {
		return resp.Err("ERR DB index is out of range")
	}
	return x.Update(func(tx *tiering.Tx) error {
		if a != b {
			for _, p := range [][2]int{{int(a), int(b)}, {int(b), int(a)}} {
				if err := x.c.s.touchWatchedInDB(tx, p[0], p[1]); err != nil {
					return err
				}
			}
		}
		if err := tx.SwapDB(int(a), int(b)); err != nil {
			return err
		}
		x.c.s.blocking.noteBlockedKeys(tx, int(a), int(b))
		x.ForcePropagation()
		x.W.OK()
		return nil
	})
}

func cmdTime(x *Ctx, _ [][]byte) error {
	now := time.Now()
	x.W.Array(2)
	x.W.BulkInt(now.Unix())
	x.W.BulkInt(int64(now.Nanosecond() / 1000))
	return nil
}

// syncStore makes everything durable now: the WAL is synced and the
// memtable flushed, so a restart needs no log replay. Upstream mode's SAVE
// and BGSAVE do only this (its store is not the whole dataset).
func (c *Client) syncStore() error {
	dirty := c.s.dirtyCount()
	if err := c.s.engine.Cold().SyncWAL(); err != nil {
		return err
	}
	if err := c.s.engine.Cold().Flush(); err != nil {
		return err
	}
	c.s.lastSave.Store(time.Now().Unix())
	c.s.noteSaved(dirty)
	return nil
}

// initRDB binds the RDB saver to the server (embedded mode uses it).
func (s *Server) initRDB() {
	s.rdb.Log = s.log
	s.rdb.SetHost(rdbfile.Host{
		Engine:    s.engine,
		Setting:   s.configValue,
		Functions: s.scripts.Libraries,
		Dirty:     s.dirtyCount,
		Saved: func(dirty int64) {
			s.lastSave.Store(time.Now().Unix())
			s.noteSaved(dirty)
		},
		LastSave:        func() time.Time { return time.Unix(s.lastSave.Load(), 0) },
		FunctionsLoaded: s.loadFunctions,
	})
}

// saveReplyError is the reply of a save refused or failed.
func saveReplyError(err error) error {
	if errors.Is(err, rdbfile.ErrInProgress) {
		return resp.Err("ERR Background save already in progress")
	}
	return err
}

// cmdSave writes the RDB file now (the client waits; others go on); a
// failure is replied "ERR <err>".
func cmdSave(x *Ctx, _ [][]byte) error {
	if x.c.fwd != nil {
		if err := x.c.syncStore(); err != nil {
			return err
		}
		x.W.OK()
		return nil
	}
	if err := x.c.s.rdb.SaveNow(x.View); err != nil {
		return saveReplyError(err)
	}
	x.W.OK()
	return nil
}

// cmdBgsave starts writing the RDB file in the background. In MULTI it is
// scheduled (the save's snapshot waits for EXEC to release the lock), as
// Redis schedules it after EXEC.
func cmdBgsave(x *Ctx, args [][]byte) error {
	c := x.c
	if len(args) > 2 || (len(args) == 2 && !cstr.EqualFold(args[1], "schedule")) {
		return resp.Err("ERR syntax error")
	}
	if c.fwd != nil {
		go func() {
			if err := c.syncStore(); err != nil {
				c.s.log.Error("background save failed", "err", err)
			}
		}()
		c.w.Simple("Background saving started")
		return nil
	}
	if err := c.s.rdb.BackgroundSave(); err != nil {
		return saveReplyError(err)
	}
	if x.InGroup() {
		c.w.Simple("Background saving scheduled")
		return nil
	}
	c.w.Simple("Background saving started")
	return nil
}

// RunSavePoints starts BGSAVE whenever a `save` point is reached, until
// stop is closed (embedded mode).
func (s *Server) RunSavePoints(stop <-chan struct{}) { s.rdb.RunSavePoints(stop) }

// loadingRule: an RDB file is loading: every command without the loading
// flag is refused, as Redis refuses them.
var loadingRule = refusalRule{msg: "LOADING Redis is loading the dataset in memory",
	applies: func(_ *Server, cmd *cmdtable.Command, _ [][]byte) bool { return !cmd.Is(cmdtable.FlagLoading) }}

// SetLoading marks the server as loading (true) before it listens, so that
// no client sees the dataset before LoadRDB has filled it.
func (s *Server) SetLoading(on bool) { s.rdb.SetLoading(on) }

// LoadRDB loads the RDB file at path into the engine (whose store must be
// empty), then the function libraries it held, answering -LOADING
// meanwhile; closing stop cancels it (rdbfile.Saver.LoadFile). On error
// nothing of it is kept.
func (s *Server) LoadRDB(path string, stop <-chan struct{}) (rdbfile.LoadStats, error) {
	return s.rdb.LoadFile(path, stop)
}

// StopSaves cancels a running background save and waits for it to end:
// the store must not close under its snapshot.
func (s *Server) StopSaves() { s.rdb.Cancel() }

// SaveOnSignal is the shutdown on SIGTERM or SIGINT: as Redis, it writes
// the RDB file when save points are configured (embedded mode). A failure
// is logged and returned.
func (s *Server) SaveOnSignal() error {
	if s.fwd != nil || !s.rdb.SavePoints() {
		s.rdb.Cancel()
		return nil
	}
	return s.rdb.ShutdownSave(s.engine.View)
}

// cmdShutdown replies nothing when it shuts the server down: the
// connection closes (c.quit).
func cmdShutdown(x *Ctx, args [][]byte) error {
	c := x.c
	for _, a := range args[1:] {
		switch {
		case cstr.EqualFold(a, "nosave"), cstr.EqualFold(a, "save"), cstr.EqualFold(a, "now"), cstr.EqualFold(a, "force"):
		case cstr.EqualFold(a, "abort"):
			return resp.Err("ERR No shutdown in progress.")
		default:
			return resp.Err("ERR syntax error")
		}
	}
	if c.fwd == nil {
		if _, function, busy := c.s.scripts.Busy(); busy {
			// As Redis: only NOSAVE ends a busy script, and then what the
			// script wrote is discarded (its transaction is aborted).
			if !hasArg(args[1:], "nosave") {
				if function {
					return resp.Err("BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.")
				}
				return resp.Err("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
			}
			c.s.abortScript.Store(true)
			if !c.s.scripts.ForceKill() {
				c.s.abortScript.Store(false) // it ended meanwhile
			}
		}
	}
	// Every acknowledged write is already in the store's log; the shutdown
	// path syncs and closes it, so SAVE and NOSAVE both lose nothing of the
	// dataset. The RDB file is written as Redis writes it: with SAVE, or
	// when save points are configured, unless NOSAVE; a failed save keeps
	// the server running unless FORCE.
	if c.fwd == nil {
		save := hasArg(args[1:], "save") || c.s.rdb.SavePoints()
		if hasArg(args[1:], "nosave") || c.s.rdb.Loading() {
			save = false // as Redis: never over the file being loaded
		}
		if save {
			if err := c.s.rdb.ShutdownSave(x.View); err != nil && !hasArg(args[1:], "force") {
				return resp.Err("ERR Errors trying to SHUTDOWN. Check logs.")
			}
		} else {
			c.s.rdb.Cancel()
		}
	}
	c.s.log.Info("shutdown requested by client", "client", c.id)
	c.s.requestShutdown()
	c.quit = true
	return nil
}

// hasArg reports whether args hold word (any case).
func hasArg(args [][]byte, word string) bool {
	for _, a := range args {
		if cstr.EqualFold(a, word) {
			return true
		}
	}
	return false
}

func cmdConfigGet(x *Ctx, args [][]byte) error {
	pairs := x.Config().Get(args[2:]...)
	x.W.Map(len(pairs))
	for _, p := range pairs {
		x.W.BulkString(p[0])
		x.W.BulkString(p[1])
	}
	return nil
}

// cmdConfigSet sets the parameters; config.Set's error text is Redis's
// reply, prefix included.
func cmdConfigSet(x *Ctx, args [][]byte) error {
	if len(args)%2 != 0 {
		return resp.Err("ERR wrong number of arguments for 'config|set' command")
	}
	pairs := make([][2]string, 0, (len(args)-2)/2)
	for i := 2; i < len(args); i += 2 {
		pairs = append(pairs, [2]string{string(args[i]), string(args[i+1])})
	}
	notify, err := x.Config().SetDeferred(pairs)
	if err != nil {
		return resp.Err(err.Error())
	}
	// The callbacks may take the engine's lock (a new maxmemory demotes),
	// which MULTI/EXEC holds: they run when it ends, as Redis evicts for a
	// new maxmemory before the next command, not inside EXEC.
	x.AfterUnlock(notify)
	x.W.OK()
	return nil
}

func cmdConfigResetStat(x *Ctx, _ [][]byte) error {
	c := x.c
	c.s.engine.Stats.ResetStats()
	st := &c.s.stats
	st.commands.Store(0)
	st.connections.Store(0)
	st.rejectedConns.Store(0)
	st.netIn.Store(0)
	st.netOut.Store(0)
	st.errorReplies.Store(0)
	c.s.resetInfoStats()
	c.w.OK()
	return nil
}

func cmdConfigRewrite(x *Ctx, _ [][]byte) error {
	if err := x.Config().Rewrite(); err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "ERR ") {
			msg = "ERR " + msg
		}
		return resp.Err(msg)
	}
	x.W.OK()
	return nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// registerMonitors adds SLOWLOG and LATENCY (their state: initMonitors).
func registerMonitors(t *Table) {
	t.Register("slowlog|get", cmdSlowlogGet)
	t.Register("slowlog|len", func(x *Ctx, _ [][]byte) error { x.W.Int(int64(x.c.s.slowlog.Len())); return nil })
	t.Register("slowlog|reset", func(x *Ctx, _ [][]byte) error { x.c.s.slowlog.Reset(); x.W.OK(); return nil })
	t.Register("slowlog|help", HelpHandler(slowlogHelp))
	t.Register("latency|latest", cmdLatencyLatest)
	t.Register("latency|history", cmdLatencyHistory)
	t.Register("latency|reset", cmdLatencyReset)
	t.Register("latency|graph", cmdLatencyGraph)
	t.Register("latency|doctor", cmdLatencyDoctor)
	t.Register("latency|histogram", cmdLatencyHistogram)
	t.Register("latency|help", HelpHandler(latencyHelp))
}

// initMonitors readies the slow log and the latency monitor, following
// slowlog-log-slower-than, slowlog-max-len and latency-monitor-threshold
// as they are set, and feeds the expiry sweeper's cycles to the monitor
// as Redis's "expire-cycle" event.
func (s *Server) initMonitors() {
	s.slowlog, s.latency = slowlog.New(), latency.New()
	setting := func(name string) int64 {
		v, _ := strconv.ParseInt(s.configValue(name), 10, 64)
		return v
	}
	apply := func(string) {
		s.slowlog.SetMaxLen(setting("slowlog-max-len"))
		s.slowlog.SetThreshold(setting("slowlog-log-slower-than"))
		s.latency.SetThreshold(setting("latency-monitor-threshold"))
		watch := int64(math.MaxInt64)
		if us := s.slowlog.Threshold(); us >= 0 && us < math.MaxInt64/1000 {
			watch = us * 1000
		}
		if ms := s.latency.Threshold(); ms > 0 && ms < math.MaxInt64/1_000_000 {
			watch = min(watch, ms*1_000_000)
		}
		s.watchNs.Store(watch)
	}
	apply("")
	for _, name := range []string{"slowlog-max-len", "slowlog-log-slower-than", "latency-monitor-threshold"} {
		s.cfg.OnChange(name, apply)
	}
	s.engine.ObserveSweeps(func(d time.Duration) {
		if ms := d.Milliseconds(); s.latency.Over(ms) {
			s.latency.Add("expire-cycle", ms, time.Now().Unix())
		}
	})
}

// noteSlow records a command that ran for d, at least s.watchNs: in the
// latency monitor ("fast-command" for a command flagged fast, else
// "command") and in the slow log (not EXEC, whose commands are logged
// each, nor the other skip_slowlog commands), its arguments redacted as
// Redis redacts them. It returns the slow log entry's ID, or -1 if the
// command was not logged there.
func (c *Client) noteSlow(cmd *cmdtable.Command, args [][]byte, d time.Duration) int64 {
	s := c.s
	us := int64(d / time.Microsecond)
	now := time.Now().Unix()
	if ms := us / 1000; s.latency.Over(ms) {
		event := "command"
		if cmd.Is(cmdtable.FlagFast) {
			event = "fast-command"
		}
		s.latency.Add(event, ms, now)
	}
	if s.slowlog.Slow(us) && !cmd.Is(cmdtable.FlagSkipSlowlog) {
		addr := "?:0" // a script's calls, as Redis's Lua client shows
		if c != s.luaClient {
			addr = c.nc.RemoteAddr().String()
		}
		c.mu.Lock()
		name := c.name
		c.mu.Unlock()
		return s.slowlog.Add(args, redactedArgs(args), us, now, addr, name)
	}
	return -1
}

func cmdSlowlogGet(x *Ctx, args [][]byte) error {
	count := int64(10)
	if len(args) > 3 {
		return resp.Err("ERR unknown subcommand or wrong number of arguments for '" + cstr.ErrArg(args[1]) + "'. Try SLOWLOG HELP.")
	}
	if len(args) == 3 {
		n, ok := cstr.ParseInt(args[2])
		if !ok || n < -1 {
			return resp.Err("ERR count should be greater than or equal to -1")
		}
		count = n
	}
	entries := x.c.s.slowlog.Get(count)
	x.W.Array(len(entries))
	for _, e := range entries {
		x.W.Array(6)
		x.W.Int(e.ID)
		x.W.Int(e.Time)
		x.W.Int(e.Duration)
		x.W.Array(len(e.Args))
		for _, a := range e.Args {
			x.W.Bulk(a)
		}
		x.W.BulkString(e.Addr)
		x.W.BulkString(e.Name)
	}
	return nil
}

func cmdLatencyLatest(x *Ctx, _ [][]byte) error {
	latest := x.c.s.latency.Latest()
	x.W.Array(len(latest))
	for _, l := range latest {
		x.W.Array(4)
		x.W.BulkString(l.Event)
		x.W.Int(l.Time)
		x.W.Int(l.Latency)
		x.W.Int(l.Max)
	}
	return nil
}

func cmdLatencyHistory(x *Ctx, args [][]byte) error {
	samples := x.c.s.latency.History(string(args[2]))
	x.W.Array(len(samples))
	for _, s := range samples {
		x.W.Array(2)
		x.W.Int(s.Time)
		x.W.Int(s.Latency)
	}
	return nil
}

func cmdLatencyReset(x *Ctx, args [][]byte) error {
	events := make([]string, 0, len(args)-2)
	for _, a := range args[2:] {
		events = append(events, string(a))
	}
	x.W.Int(int64(x.c.s.latency.Reset(events...))) // none named: all
	return nil
}

func cmdLatencyGraph(x *Ctx, args [][]byte) error {
	g, ok := x.c.s.latency.Graph(string(args[2]), time.Now().Unix())
	if !ok {
		return resp.Err("ERR No samples available for event '" + string(args[2]) + "'")
	}
	x.W.Verbatim("txt", []byte(g))
	return nil
}

func cmdLatencyDoctor(x *Ctx, _ [][]byte) error {
	s := x.c.s
	report := s.latency.Doctor(latency.DoctorInput{
		Now:               time.Now().Unix(),
		SlowlogSlowerThan: s.slowlog.Threshold(),
		Hz:                10, // INFO's hz
		FsyncAlways:       s.configValue("appendfsync") == "always",
		AnonHugePages:     anonHugePages(),
	})
	x.W.Verbatim("txt", []byte(report))
	return nil
}

// anonHugePages reports whether the process uses transparent huge pages
// (AnonHugePages in /proc/self/smaps_rollup), as Redis's
// THPGetAnonHugePagesSize.
func anonHugePages() bool {
	b, err := os.ReadFile("/proc/self/smaps_rollup")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "AnonHugePages:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb > 0
		}
	}
	return false
}

// cmdLatencyHistogram replies each command's (and subcommand's) latency
// distribution from INFO latencystats' histograms, those named (a
// container names its subcommands; unknown names are skipped) or all:
// a map of full names to {calls, histogram_usec}.
func cmdLatencyHistogram(x *Ctx, args [][]byte) error {
	s := x.c.s
	var cmds []*cmdtable.Command
	var all func([]*cmdtable.Command)
	all = func(list []*cmdtable.Command) {
		for _, cmd := range list {
			cmds = append(cmds, cmd)
			all(cmd.Subcommands)
		}
	}
	if len(args) == 2 {
		all(cmdtable.All())
	}
	for _, a := range args[2:] {
		if cmd := cmdtable.LookupFullName(a); cmd != nil {
			cmds = append(cmds, cmd)
			cmds = append(cmds, cmd.Subcommands...)
		}
	}
	type row struct {
		name  string
		calls int64
		pairs [][2]int64
	}
	var rows []row
	for _, cmd := range cmds {
		if h := s.info.cmds[cmd.ID()].hist.Load(); h != nil {
			calls, pairs := h.CDF()
			rows = append(rows, row{cmd.Name, calls, pairs})
		}
	}
	x.W.Map(len(rows))
	for _, r := range rows {
		x.W.BulkString(r.name)
		x.W.Map(2)
		x.W.BulkString("calls")
		x.W.Int(r.calls)
		x.W.BulkString("histogram_usec")
		x.W.Map(len(r.pairs))
		for _, p := range r.pairs {
			x.W.Int(p[0])
			x.W.Int(p[1])
		}
	}
	return nil
}
