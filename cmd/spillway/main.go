// Command spillway is a Redis-compatible server that keeps hot keys in
// memory and spills cold ones to an on-disk Pebble store.
//
// Usage, as redis-server: spillway [configfile] [--name value ...]
package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spillway/spillway/coldstore"
	"github.com/spillway/spillway/proxy/commands"
	"github.com/spillway/spillway/proxy/config"
	"github.com/spillway/spillway/proxy/metrics"
	"github.com/spillway/spillway/proxy/rdbfile"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/tlsconf"
	"github.com/spillway/spillway/proxy/upstream"
	"github.com/spillway/spillway/proxy/upstream/link"
	"github.com/spillway/spillway/tiering"
)

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "--version" || os.Args[1] == "-v") {
		fmt.Printf("Spillway v=%s (Redis %s compatible)\n", server.Version, server.RedisVersion)
		return
	}
	if path := os.Getenv("SPILLWAY_CPUPROFILE"); path != "" {
		// A CPU profile of the whole run, for performance work.
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if path := os.Getenv("SPILLWAY_TRACE"); path != "" {
		// An execution trace of the whole run (go tool trace): goroutine
		// blocking and scheduler latency, for tail-latency work.
		if f, err := os.Create(path); err == nil && trace.Start(f) == nil {
			defer trace.Stop()
		}
	}
	if path := os.Getenv("SPILLWAY_MEMPROFILE"); path != "" {
		// Heap profiles while it runs (every 10 s, the last one kept), for
		// memory work: a peak is caught where a profile at exit would miss it.
		go writeHeapProfiles(path, 10*time.Second)
	}
	if err := run(os.Args[1:]); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "spillway:", err)
		os.Exit(1)
	}
}

// writeHeapProfiles rewrites path with a heap profile every period, through
// a temporary file so a reader never sees half of one.
func writeHeapProfiles(path string, period time.Duration) {
	for range time.Tick(period) {
		f, err := os.Create(path + ".tmp")
		if err != nil {
			return
		}
		err = pprof.Lookup("heap").WriteTo(f, 0)
		if cerr := f.Close(); err == nil && cerr == nil {
			os.Rename(path+".tmp", path)
		}
	}
}

// budget splits maxmemory between Pebble's block cache, its memtables and
// the hot tier, so that the whole process stays near maxmemory plus a fixed
// overhead.
type budget struct {
	cache, memtable, hot int64
}

func splitBudget(maxmemory, blockCache int64) budget {
	const mb = 1 << 20
	if maxmemory <= 0 {
		// No limit, as Redis's maxmemory 0: nothing is ever demoted.
		c := blockCache
		if c <= 0 {
			c = 64 * mb
		}
		return budget{cache: c, memtable: 64 * mb, hot: 1 << 62}
	}
	b := budget{cache: blockCache}
	if b.cache <= 0 {
		b.cache = max(maxmemory/8, 256<<10)
	}
	b.memtable = min(max(maxmemory/16, 256<<10), 64*mb)
	// The hot tier gets the rest; tiny budgets (tests) still get a few
	// entries' worth so that demotion and promotion are exercised.
	b.hot = max(maxmemory-b.cache-2*b.memtable, 4<<10)
	return b
}

// budgetUnreachable reports whether maxmemory is below what the process
// needs with an empty hot tier: the cold store's block cache and its two
// memtables (768 KB at the smallest). Spillway then answers OOM as Redis
// does over maxmemory with nothing left to evict (server.SetOutOfMemory);
// any larger budget is met by demoting to disk.
func budgetUnreachable(maxmemory, blockCache int64) bool {
	if maxmemory <= 0 {
		return false
	}
	b := splitBudget(maxmemory, blockCache)
	return maxmemory < b.cache+2*b.memtable
}

// setMemoryLimit keeps the Go heap near the budget (the hot tier, buffers
// and Pebble's Go-side structures all live there; the block cache and the
// memtables are C memory, outside it); maxmemory 0 lifts it. The hot tier's
// accounting is the heap its entries really take (tiering's entrySize), so
// the live heap is about the hot budget plus buffers: 1.5 x maxmemory + 32
// MB leaves the garbage collector its usual room above that and keeps the
// process under 1.2 x maxmemory + 100 MB (issue 19's bound).
func setMemoryLimit(maxmemory int64) {
	if maxmemory <= 0 {
		debug.SetMemoryLimit(math.MaxInt64)
		return
	}
	debug.SetMemoryLimit(maxmemory + maxmemory/2 + 32<<20)
}

func newLogger(cfg *config.Config) (*slog.Logger, io.Closer, error) {
	var out io.Writer = os.Stderr
	var closer io.Closer = io.NopCloser(nil)
	if f := cfg.LogFile(); f != "" {
		fh, err := os.OpenFile(f, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("logfile %s: %w", f, err)
		}
		out, closer = fh, fh
	}
	return slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: cfg.LogLevel()})), closer, nil
}

func run(args []string) error {
	importFile, args, err := takeImportFlag(args)
	if err != nil {
		return err
	}
	cfg, err := config.Parse(args)
	if err != nil {
		return err
	}
	log, logCloser, err := newLogger(cfg)
	if err != nil {
		return err
	}
	defer logCloser.Close()
	slog.SetDefault(log)
	if inert := cfg.Inert(); len(inert) > 0 {
		log.Info("settings stored without effect", "settings", strings.Join(inert, " "))
	}
	target, upstreamMode := cfg.UpstreamTarget()

	maxmem := cfg.MaxMemory()
	b := splitBudget(maxmem, cfg.BlockCache())
	setMemoryLimit(maxmem)
	if upstreamMode {
		// maxmemory budgets the upstream; Spillway itself holds no hot tier.
		b = upstreamBudget(cfg.BlockCache())
		setMemoryLimit(0)
		upstreamProcs()
	}

	dir := cfg.Dir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("dir %s: %w", dir, err)
	}
	fsync, err := coldstore.ParseFsync(cfg.AppendFsync().String())
	if err != nil {
		return err
	}
	compression, err := coldstore.ParseCompression(cfg.ColdCompression())
	if err != nil {
		return err
	}
	start := time.Now()
	cold, err := coldstore.Open(coldstore.Options{
		Dir:           dir,
		CacheBytes:    b.cache,
		MemTableBytes: b.memtable,
		Fsync:         fsync,
		Compression:   compression,
		Logger:        log,
	})
	if err != nil {
		return err
	}
	engine, err := tiering.Open(cold, tiering.Options{
		Databases:        cfg.Databases(),
		HotBudget:        b.hot,
		PromoteMinHits:   cfg.PromoteMinHits(),
		ColdReadMaxBytes: cfg.ColdReadMaxBytes(),
		SweepPerTick:     cfg.ExpireSweepKeysPerTick(),
		WriteThrough:     !cfg.WriteBack(),
		Logger:           log,
	})
	if err != nil {
		cold.Close()
		return err
	}
	if !upstreamMode {
		if err := undoInterruptedLoad(engine, log); err != nil {
			engine.Close()
			cold.Close()
			return err
		}
	}
	if importFile != "" {
		err := importRDB(importFile, engine, log, upstreamMode)
		engine.Close()
		if cerr := cold.Close(); err == nil {
			err = cerr
		}
		return err
	}
	watchConfig(cfg, engine, cold, log, upstreamMode)

	srv := server.NewServer(cfg, engine, log, commands.Table())
	tlsm, err := newTLS(cfg, log, target, upstreamMode)
	if err != nil {
		engine.Close()
		cold.Close()
		return err
	}
	srv.SetTLS(tlsm)
	if !upstreamMode {
		oom := func(string) { srv.SetOutOfMemory(budgetUnreachable(cfg.MaxMemory(), cfg.BlockCache())) }
		oom("")
		cfg.OnChange("maxmemory", oom)
		cfg.OnChange("block-cache", oom)
		cfg.OnChange("maxmemory-policy", oom)
	}
	mode := "embedded"
	// front is upstream mode's front (nil in embedded mode): the server
	// forwards its clients' commands through it.
	var front *upstream.Front
	if upstreamMode {
		mode = "upstream"
		clean := takeCleanMarker(dir)
		lt := link.Target{Addr: target.Addr, Username: target.Username, Password: target.Password, DB: target.DB}
		if target.TLS {
			lt.TLS = func() *tls.Config { return tlsm.ClientConfig(target.Host) }
		}
		var sentinel *link.Sentinel
		if s := target.Sentinel; s != nil {
			sentinel = &link.Sentinel{Addrs: s.Addrs, Master: s.Master, Username: s.Username, Password: s.Password}
		}
		front, err = upstream.Enable(srv, upstream.Options{Target: lt, Sentinel: sentinel, SharedConn: cfg.UpstreamConnections(), Engine: engine, Config: cfg, Logger: log}, clean)
		if err != nil {
			engine.Close()
			cold.Close()
			return err
		}
	}
	if !upstreamMode {
		if err := srv.LoadState(); err != nil {
			engine.Close()
			cold.Close()
			return err
		}
	}
	// As Redis at start: the RDB file in dir is loaded, here only into an
	// empty store (the store is otherwise the dataset). Clients are
	// answered -LOADING until it is done.
	rdbPath := ""
	if name, _ := cfg.Value("dbfilename"); !upstreamMode {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			// (A key count still running means the start found keys.)
			if !engine.Counting() && engine.KeysOnDisk() == 0 {
				rdbPath = filepath.Join(dir, name)
				srv.SetLoading(true)
			} else {
				log.Info("RDB file not loaded: the store holds the dataset", "file", filepath.Join(dir, name))
			}
		}
	}
	if err := srv.Listen(); err != nil {
		engine.Close()
		cold.Close()
		return err
	}
	// Not waiting for a key count running in the background (its own
	// line reports it).
	var keysOnDisk any = "counting"
	if !engine.Counting() {
		keysOnDisk = engine.KeysOnDisk()
	}
	log.Info("spillway ready",
		"version", server.Version,
		"mode", mode,
		"addr", strings.Join(srv.Addrs(), ","),
		"dir", dir,
		"maxmemory", maxmem,
		"hot_budget", b.hot,
		"block_cache", b.cache,
		"memtable", b.memtable,
		"appendfsync", fsync.String(),
		"keys_on_disk", keysOnDisk,
		"gomaxprocs", runtime.GOMAXPROCS(0),
		"startup", time.Since(start).Round(time.Millisecond))

	info := srv.InfoText
	if front != nil {
		info = front.InfoText
	}
	ep, err := startMetrics(cfg, log, metrics.Options{Info: info, Store: cold, Logger: log})
	if err != nil {
		srv.Close()
		if front != nil {
			front.Close()
		}
		engine.Close()
		cold.Close()
		return err
	}
	defer ep.close()

	serveDone := make(chan struct{})
	go func() {
		srv.Serve()
		close(serveDone)
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	stopped := false // a shutdown came during the load
	if rdbPath != "" {
		if stopped, err = loadAtStart(srv, rdbPath, sigs, log); err != nil {
			srv.Close()
			<-serveDone
			engine.Close()
			cold.Close()
			if errors.Is(err, rdbfile.ErrLoadCanceled) {
				log.Info("shutdown during the RDB load: what it had loaded is removed")
				return nil
			}
			log.Error("loading the RDB file failed; stopping", "err", err)
			return err
		}
	}
	if !upstreamMode {
		// replicaof host port: replicate from the start, resuming from the
		// stored replication state (a partial resync after a restart).
		ro, _ := cfg.Value("replicaof")
		if err := srv.ReplicaOfAtStart(ro); err != nil {
			log.Error("replicaof", "err", err)
		}
	}
	stopSaves := make(chan struct{})
	if !upstreamMode {
		go srv.RunSavePoints(stopSaves)
	}
	if !stopped {
		select {
		case s := <-sigs:
			log.Info("signal received, shutting down", "signal", s.String())
			close(stopSaves)
			if err := srv.SaveOnSignal(); err != nil {
				log.Error("the final RDB save failed", "err", err)
			}
		case <-srv.ShutdownRequested():
			close(stopSaves)
		}
	} else {
		close(stopSaves)
	}
	srv.Close()
	<-serveDone
	srv.StopSaves()
	if front != nil {
		front.Close()
	}
	engine.Close()
	if err := cold.Close(); err != nil {
		log.Error("closing the store failed", "err", err)
		return err
	}
	if upstreamMode {
		writeCleanMarker(dir, log)
	}
	log.Info("spillway stopped; every write is on disk")
	return nil
}

// loadAtStart loads the RDB file at path while clients get -LOADING. A
// signal or SHUTDOWN meanwhile cancels the load (rdbfile.ErrLoadCanceled);
// one arriving as the load ends reports stopped, for the caller to shut
// down.
func loadAtStart(srv *server.Server, path string, sigs <-chan os.Signal, log *slog.Logger) (stopped bool, err error) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			log.Info("signal received during the RDB load, canceling it", "signal", s.String())
			close(stop)
		case <-srv.ShutdownRequested():
			close(stop)
		case <-done:
		}
	}()
	_, err = srv.LoadRDB(path, stop)
	close(done)
	select {
	case <-stop:
		stopped = true
	default:
	}
	return stopped, err
}

// undoInterruptedLoad removes what an RDB load that the process's death
// cut short had written (the store was empty before it), so that a
// partial dataset is never served; the file is then loaded again.
func undoInterruptedLoad(engine *tiering.Engine, log *slog.Logger) error {
	cut, err := rdbfile.Interrupted(engine)
	if err != nil || !cut {
		return err
	}
	log.Warn("the last RDB load did not finish: removing the keys it loaded")
	return rdbfile.ClearInterrupted(engine)
}

// takeImportFlag removes "--import-rdb FILE" from args and returns FILE.
func takeImportFlag(args []string) (string, []string, error) {
	for i, a := range args {
		if a != "--import-rdb" {
			continue
		}
		if i+1 >= len(args) {
			return "", nil, fmt.Errorf("--import-rdb needs a file")
		}
		rest := append(append([]string(nil), args[:i]...), args[i+2:]...)
		return args[i+1], rest, nil
	}
	return "", args, nil
}

// importRDB is --import-rdb FILE: it loads an RDB file into the dataset
// directory's empty store, offline.
func importRDB(path string, engine *tiering.Engine, log *slog.Logger, upstreamMode bool) error {
	if upstreamMode {
		return fmt.Errorf("--import-rdb: embedded mode only (upstream is set)")
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--import-rdb: %w", err)
	}
	defer f.Close()
	var size int64
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	log.Info("importing RDB file", "path", path, "bytes", size)
	st, err := rdbfile.Load(f, engine, rdbfile.LoadOptions{Logger: log, Size: size})
	if err != nil {
		return fmt.Errorf("--import-rdb %s: %w", path, err)
	}
	log.Info("RDB file imported", "keys", st.Keys, "expired_skipped", st.Expired, "functions", st.Functions)
	return nil
}

// watchConfig applies CONFIG SET changes that take effect at run time.
func watchConfig(cfg *config.Config, engine *tiering.Engine, cold *coldstore.Store, log *slog.Logger, upstreamMode bool) {
	cfg.OnChange("maxmemory", func(string) {
		if upstreamMode {
			log.Info("maxmemory changed", "upstream_budget", cfg.MaxMemory())
			return // the demoter reads it on every round
		}
		b := splitBudget(cfg.MaxMemory(), cfg.BlockCache())
		engine.SetHotBudget(b.hot)
		setMemoryLimit(cfg.MaxMemory())
		log.Info("maxmemory changed", "maxmemory", cfg.MaxMemory(), "hot_budget", b.hot)
	})
	cfg.OnChange("appendfsync", func(v string) {
		if f, err := coldstore.ParseFsync(v); err == nil {
			cold.SetFsync(f)
		}
	})
	lfu := func(string) {
		engine.SetLFU(configInt(cfg, "lfu-log-factor", 10), configInt(cfg, "lfu-decay-time", 1))
	}
	lfu("")
	cfg.OnChange("lfu-log-factor", lfu)
	cfg.OnChange("lfu-decay-time", lfu)
	lfuDemotion := func(policy string) { engine.SetLFUDemotion(strings.HasSuffix(policy, "-lfu")) }
	for _, kv := range cfg.Get([]byte("maxmemory-policy")) {
		lfuDemotion(kv[1])
	}
	cfg.OnChange("maxmemory-policy", lfuDemotion)
	policy := func(string) { engine.SetPolicy(cfg.PromoteMinHits(), cfg.ColdReadMaxBytes()) }
	cfg.OnChange("promote-min-hits", policy)
	cfg.OnChange("cold-read-max-bytes", policy)
}

// configInt returns an integer setting read through CONFIG GET's lookup
// (def if it does not parse, which the setting's validation prevents).
func configInt(cfg *config.Config, name string, def int64) int64 {
	for _, kv := range cfg.Get([]byte(name)) {
		if n, err := strconv.ParseInt(kv[1], 10, 64); err == nil {
			return n
		}
	}
	return def
}

// newTLS returns the TLS configuration's manager, loaded now when the
// upstream is rediss:// (the server loads it for tls-port).
func newTLS(cfg *config.Config, log *slog.Logger, target config.Upstream, upstreamMode bool) (*tlsconf.Manager, error) {
	upTLS := upstreamMode && target.TLS
	m, err := tlsconf.New(cfg, log, upTLS)
	if err != nil {
		return nil, err
	}
	if upTLS {
		if err := m.Load(); err != nil {
			return nil, fmt.Errorf("upstream %s is rediss://: %w", target.Addr, err)
		}
	}
	return m, nil
}

// metricsEndpoint is the Prometheus endpoint as metrics-port and
// metrics-bind say: started, moved or stopped by CONFIG SET.
type metricsEndpoint struct {
	mu   sync.Mutex
	ep   *metrics.Endpoint // nil: metrics-port 0
	opts metrics.Options
	log  *slog.Logger
}

// startMetrics starts the endpoint if metrics-port is set and registers
// the CONFIG SET apply step of metrics-port and metrics-bind.
func startMetrics(cfg *config.Config, log *slog.Logger, o metrics.Options) (*metricsEndpoint, error) {
	m := &metricsEndpoint{opts: o, log: log}
	if err := m.apply(cfg.MetricsAddr()); err != nil {
		return nil, err
	}
	err := cfg.RegisterApply(func() error {
		if err := m.apply(cfg.MetricsAddr()); err != nil {
			log.Warn("CONFIG SET: could not listen", "err", err)
			return errors.New("Unable to listen on this port. Check server logs.")
		}
		return nil
	}, "metrics-port", "metrics-bind")
	return m, err
}

// apply serves the endpoint on addr ("": stops it).
func (m *metricsEndpoint) apply(addr string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case addr == "" && m.ep != nil:
		m.ep.Close()
		m.ep = nil
		m.log.Info("metrics endpoint stopped")
		return nil
	case addr == "":
		return nil
	case m.ep == nil:
		o := m.opts
		o.Addr = addr
		ep, err := metrics.Start(o)
		if err != nil {
			return err
		}
		m.ep = ep
	default:
		if err := m.ep.Rebind(addr); err != nil {
			return err
		}
	}
	m.log.Info("metrics endpoint ready", "addr", "http://"+m.ep.Addr()+"/metrics")
	return nil
}

func (m *metricsEndpoint) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ep != nil {
		m.ep.Close()
	}
}

// upstreamBudget sizes the store for upstream mode: a block cache (64 MB
// unless block-cache says otherwise) and memtables; no hot tier.
func upstreamBudget(blockCache int64) budget {
	if blockCache <= 0 {
		blockCache = 64 << 20
	}
	return budget{cache: blockCache, memtable: 32 << 20, hot: 0}
}

// cleanMarker is the file a graceful shutdown in upstream mode leaves, so
// that the next start can skip reconciling keys found in both tiers.
const cleanMarker = "upstream-clean-shutdown"

// takeCleanMarker reports whether the last shutdown was graceful, and
// removes the marker: a crash from now on must not find it.
func takeCleanMarker(dir string) bool {
	p := filepath.Join(dir, cleanMarker)
	if _, err := os.Stat(p); err != nil {
		return false
	}
	return os.Remove(p) == nil
}

func writeCleanMarker(dir string, log *slog.Logger) {
	if err := os.WriteFile(filepath.Join(dir, cleanMarker), nil, 0o644); err != nil {
		log.Warn("could not record the clean shutdown; the next start reconciles the tiers", "err", err)
	}
}

// upstreamProcs gives a proxy in front of Redis half the machine's cores
// (at least one) unless GOMAXPROCS says otherwise: the rest is left to the
// upstream and the clients, and a forwarding path on fewer threads hands
// goroutines between threads less often (measured on 2 cores: the same
// CPU per command as twemproxy with one, 20-30% more with two).
func upstreamProcs() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(max(1, runtime.NumCPU()/2))
	}
}
