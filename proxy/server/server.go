// Package server is Spillway's RESP front end: it accepts connections, parses
// requests, checks them against Redis 7.0's command table, keeps
// per-connection state, executes commands against the tiering engine, and
// writes replies in the connection's protocol (RESP2 or RESP3).
package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spillway/spillway/proxy/acl"
	"github.com/spillway/spillway/proxy/config"
	"github.com/spillway/spillway/proxy/latency"
	"github.com/spillway/spillway/proxy/pubsub"
	"github.com/spillway/spillway/proxy/rdbfile"
	"github.com/spillway/spillway/proxy/repl"
	"github.com/spillway/spillway/proxy/replica"
	"github.com/spillway/spillway/proxy/script"
	"github.com/spillway/spillway/proxy/slowlog"
	"github.com/spillway/spillway/proxy/tlsconf"
	"github.com/spillway/spillway/proxy/tracking"
	"github.com/spillway/spillway/tiering"
)

// Version is Spillway's version, reported by INFO and HELLO.
const Version = "0.1.0"

// RedisVersion is the Redis version whose behaviour Spillway reproduces.
const RedisVersion = "7.0.15"

// Server serves the RESP protocol on one or more listeners.
type Server struct {
	cfg *config.Config
	// fresh are the connections just accepted (awaitFresh).
	fresh freshClients
	// table holds every command's handler; read-only once serving.
	table *Table
	// pipelined: by command ID, the commands a pipeline's run may hold
	// (commit.go); read-only once serving.
	pipelined []bool
	engine    *tiering.Engine
	log       *slog.Logger
	blocking  *blockRegistry
	// watches are the WATCHed keys (multi.go); guarded by the engine's lock.
	watches watchRegistry
	// scripts runs Lua scripts and FUNCTION libraries (cmd_script.go);
	// luaClient is the client their redis.call commands run as; luaHost
	// the script.Host handed to the running script (both guarded by the
	// engine's lock, which a script holds).
	scripts   *script.Engine
	luaClient *Client
	luaHost   scriptHost
	// abortScript: SHUTDOWN NOSAVE killed the running script, whose writes
	// must be discarded.
	abortScript atomic.Bool

	// acl holds the ACL users and the ACL LOG (embedded mode checks
	// commands against them; the default user follows requirepass).
	acl *acl.Registry

	// fwd is the forwarding front (upstream mode); nil in embedded mode.
	fwd Forwarder
	// pubsub holds the Pub/Sub subscriptions (embedded mode; upstream
	// mode forwards Pub/Sub to the upstream).
	pubsub *pubsub.Hub
	// trk is client-side caching's table (notify.go); trkCur is the
	// client whose command holds the engine's lock (nil: none), which
	// tracking's NOLOOP and self-invalidations need; guarded by the lock.
	trk       *tracking.Table
	trkCur    *Client
	trkMaxKey atomic.Int64 // tracking-table-max-keys
	trkCron   sync.Once

	mu sync.Mutex
	// plain and secure are the port and tls-port listeners; guarded by
	// mu, like serving. tlsm builds the TLS listeners' configuration (nil:
	// no TLS, SetTLS).
	plain, secure listenerSet
	tlsm          *tlsconf.Manager
	serving       bool
	accepting     sync.WaitGroup // accept loops
	clients       map[int64]*Client
	nextID        atomic.Int64
	closing       atomic.Bool
	done          chan struct{}
	wg            sync.WaitGroup

	// CLIENT PAUSE's state: until when and what is paused, the timer
	// that ends the pause, and ended, closed when it ends. paused is the
	// one atomic load dispatch makes per command.
	pauseMu    sync.Mutex
	pauseUntil time.Time
	pauseAll   bool
	pauseTimer *time.Timer
	pauseEnded chan struct{}
	paused     atomic.Bool
	// postponed counts the clients waiting for a pause to end (INFO's
	// blocked_clients counts them, as Redis counts BLOCKED_POSTPONE).
	postponed atomic.Int64
	// monitors are the clients in MONITOR mode (monitor.go); nMonitors
	// is their count, the one atomic load the command path makes.
	monitorMu sync.Mutex
	monitors  []*Client
	nMonitors atomic.Int32

	// oom: the memory budget cannot be met (SetOutOfMemory);
	// evictPending: its eviction has not run yet (evictIfPending).
	oom          atomic.Bool
	evictPending atomic.Bool
	evictMu      sync.Mutex
	// noReplicas: min-replicas-to-write refuses writes (updateNoReplicas);
	// noReplicasHook, if set, learns of its changes (OnNoReplicasChange).
	noReplicas     atomic.Bool
	noReplicasHook atomic.Pointer[func()]
	// repl is the replication master (backlog, replicas); prop the unit
	// the lock holder propagates, guarded by the engine's lock (commit.go).
	repl *repl.Master
	prop repl.Unit
	// replica is the replica side (REPLICAOF); mc the master client that
	// applies its stream, made on first use (commit.go).
	replica *replica.Replica
	mc      masterClient

	started  time.Time
	lastSave atomic.Int64
	stats    serverStats
	// info holds the command, error, dirty and memory statistics (info.go).
	info infoState
	// slowlog and latency are SLOWLOG's log and LATENCY's monitor;
	// watchNs is the shortest command duration either records, in ns
	// (math.MaxInt64: neither), the one comparison callCounted makes
	// (cmd_server.go).
	slowlog *slowlog.Log
	latency *latency.Monitor
	watchNs atomic.Int64

	// shutdownReq is signalled by SHUTDOWN.
	shutdownReq chan struct{}
	shutdownOne sync.Once

	// rdb writes and loads RDB files: SAVE, BGSAVE, save points, shutdown,
	// the start's load (cmd_server.go).
	rdb rdbfile.Saver
}

type serverStats struct {
	connections   atomic.Int64
	commands      atomic.Int64
	rejectedConns atomic.Int64
	netIn, netOut atomic.Int64
	errorReplies  atomic.Int64
}

// NewServer returns a server executing commands on engine with the
// handlers of cmds (the command library; nil: the server's own commands
// only), to which it adds its own: connection state, transactions, Pub/Sub,
// scripting and server administration.
func NewServer(cfg *config.Config, engine *tiering.Engine, log *slog.Logger, cmds *Table) *Server {
	if cmds == nil {
		cmds = NewTable()
	}
	registerBuiltins(cmds)
	s := &Server{
		cfg:         cfg,
		table:       cmds,
		engine:      engine,
		log:         log,
		clients:     make(map[int64]*Client),
		done:        make(chan struct{}),
		started:     time.Now(),
		shutdownReq: make(chan struct{}),
		blocking:    newBlockRegistry(engine),
		pubsub:      pubsub.New(),
		trk:         tracking.NewTable(),
	}
	s.acl = acl.NewRegistry()
	s.acl.SetDefaultPassword(cfg.RequirePass())
	cfg.OnChange("requirepass", func(v string) {
		s.acl.SetDefaultPassword(v)
		s.refreshACL(nil, s.acl.Default(), nil)
	})
	cfg.SetUserLines(s.userLines)
	pubsubDefault := func(v string) { s.acl.SetPubSubDefault(v == "allchannels") }
	pubsubDefault(mustValue(cfg, "acl-pubsub-default"))
	cfg.OnChange("acl-pubsub-default", pubsubDefault)
	s.lastSave.Store(time.Now().Unix())
	s.initKeyEvents()
	s.initTracking()
	s.initInfo()
	s.initMonitors()
	s.scripts = script.New(script.Options{Logger: log})
	s.initRDB()
	s.initRepl() // commit.go
	s.initPipelineCommands()
	s.updateNoReplicas("")
	cfg.OnChange("min-replicas-to-write", s.updateNoReplicas)
	cfg.OnChange("min-replicas-max-lag", s.updateNoReplicas)
	return s
}

// LoadState loads what embedded mode keeps besides keys (the FUNCTION
// libraries) from the store, and the ACL users of the config file (user
// directives) or of its aclfile; call it before Serve.
func (s *Server) LoadState() error {
	if err := s.loadUsers(); err != nil {
		return err
	}
	return s.loadFunctions()
}

// userLines are the ACL users as CONFIG REWRITE writes them ("user name
// rules..."), or nil when an aclfile keeps them.
func (s *Server) userLines() []string {
	if mustValue(s.cfg, "aclfile") != "" {
		return nil
	}
	var lines []string
	for _, u := range s.acl.Users() {
		lines = append(lines, "user "+u.Name()+" "+u.Rules().Describe())
	}
	return lines
}

func mustValue(cfg *config.Config, name string) string {
	v, _ := cfg.Value(name)
	return v
}

// loadUsers applies the config file's user directives, or the aclfile's
// users (Redis refuses both at once). A user defined twice, or rules
// Redis would refuse, fail the start.
func (s *Server) loadUsers() error {
	file := mustValue(s.cfg, "aclfile")
	dirs := s.cfg.Users()
	if file != "" && len(dirs) > 0 {
		return errors.New("acl: Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.")
	}
	if file != "" {
		users, err := acl.LoadFile(file, s.acl.PubSubDefault())
		if err != nil {
			return fmt.Errorf("acl: %w", err)
		}
		s.acl.Replace(users)
		return nil
	}
	if len(dirs) == 0 {
		return nil
	}
	users, err := acl.ParseUsers(dirs, s.acl.PubSubDefault())
	if err != nil {
		return fmt.Errorf("acl: config file: %w", err)
	}
	s.acl.Replace(users)
	return nil
}

// SetTLS gives the server the TLS configuration of its tls-port
// listeners; call it before Listen. Without it tls-port must be 0.
func (s *Server) SetTLS(m *tlsconf.Manager) { s.tlsm = m }

// tlsPort is the tls-port setting.
func (s *Server) tlsPort() int {
	v, _ := s.cfg.Value("tls-port")
	p, _ := strconv.Atoi(v)
	return p
}

// Listen binds every configured address (bind) on the configured port
// and, when tls-port is set, on the TLS port (loading the TLS
// configuration first), and registers the CONFIG SET port/bind/tls-port
// apply hook that rebinds them. Port 0 opens no plain listener, tls-port
// 0 no TLS one, as in Redis. An address prefixed with '-' is skipped if it
// is not available, one of an address family the system lacks always is,
// as in Redis; not listening anywhere is an error.
func (s *Server) Listen() error {
	port, tport := s.cfg.Port(), s.tlsPort()
	var lns, tlns []boundListener
	var err error
	if tport != 0 {
		if s.tlsm == nil {
			return errors.New("proxy: tls-port is set but TLS is not available")
		}
		if err := s.tlsm.Load(); err != nil {
			return fmt.Errorf("proxy: Failed to configure TLS: %w", err)
		}
		if tlns, err = listenAll(s.cfg.Bind(), tport, nil, s.wrapTLS); err != nil {
			return fmt.Errorf("proxy: %w", err)
		}
	}
	if port != 0 {
		if lns, err = listenAll(s.cfg.Bind(), port, nil, nil); err != nil {
			closeAll(tlns)
			return fmt.Errorf("proxy: %w", err)
		}
	}
	if len(lns)+len(tlns) == 0 {
		return errors.New("proxy: configured to not listen anywhere")
	}
	s.mu.Lock()
	s.plain = listenerSet{lns: lns, port: port}
	s.secure = listenerSet{lns: tlns, port: tport, wrap: s.wrapTLS}
	s.mu.Unlock()
	return s.cfg.RegisterApply(s.rebind, "port", "bind", "tls-port")
}

// wrapTLS makes a TLS listener of l: each connection's handshake (run by
// its first read, in the connection's goroutine) takes the configuration
// current then.
func (s *Server) wrapTLS(l net.Listener) net.Listener {
	return tls.NewListener(l, s.tlsm.ServerConfig())
}

// listenerSet is the listeners of one port: port's or tls-port's.
type listenerSet struct {
	lns  []boundListener
	port int
	// wrap makes the set's listeners of a socket's (nil: plain TCP).
	wrap func(net.Listener) net.Listener
}

// boundListener is a listener and the bind address it was opened for.
type boundListener struct {
	net.Listener
	spec string // as in bind, '-' included
}

func closeAll(lns []boundListener) {
	for _, l := range lns {
		l.Close()
	}
}

// listenAll listens on every address of specs at port, taking a listener
// of keep already bound to the same address instead of binding it again,
// and wrapping each new listener with wrap (when not nil). On failure it
// closes what it opened (never a listener of keep) and returns the error.
func listenAll(specs []string, port int, keep []boundListener, wrap func(net.Listener) net.Listener) ([]boundListener, error) {
	var out []boundListener
	fail := func(err error) ([]boundListener, error) {
		for _, l := range out {
			if !slices.Contains(keep, l) {
				l.Close()
			}
		}
		return nil, err
	}
next:
	for _, spec := range specs {
		for _, l := range keep {
			if l.spec == spec {
				out = append(out, l)
				continue next
			}
		}
		addr, optional := strings.CutPrefix(spec, "-")
		network, host := "tcp4", addr
		switch {
		case addr == "*":
			host = "0.0.0.0"
		case addr == "::*":
			network, host = "tcp6", "::"
		case strings.Contains(addr, ":"):
			network = "tcp6"
		}
		if host == "" {
			return fail(fmt.Errorf("listen on %q: empty address", spec))
		}
		ln, err := net.Listen(network, net.JoinHostPort(host, strconv.Itoa(port)))
		switch {
		case err == nil:
			if wrap != nil {
				ln = wrap(ln)
			}
			out = append(out, boundListener{ln, spec})
		case optional && errors.Is(err, syscall.EADDRNOTAVAIL),
			errors.Is(err, syscall.EAFNOSUPPORT), errors.Is(err, syscall.EPROTONOSUPPORT):
			// skipped, as Redis skips them
		default:
			return fail(fmt.Errorf("listen on %s port %d: %w", addr, port, err))
		}
	}
	return out, nil
}

// rebind is the CONFIG SET port/bind/tls-port apply hook: it rebinds the
// plain listeners, then the TLS ones (loading the TLS configuration first
// when the TLS port opens, as Redis's applyTLSPort does when TLS was never
// configured), each as rebindSet says. If the TLS ones fail after the plain ones changed, the plain ones
// are rebound to the old port and addresses by the config's restore,
// which runs this hook again on the old values.
func (s *Server) rebind() error {
	specs := s.cfg.Bind()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		return nil
	}
	if err := s.rebindSet(&s.plain, s.cfg.Port(), specs); err != nil {
		return err
	}
	tport := s.tlsPort()
	if tport != 0 && s.tlsm == nil {
		return errors.New("Unable to update TLS configuration. Check server logs.")
	}
	// A TLS port opened now loads the files as they are (tls-* changes
	// made while no TLS port was open were not loaded); if they do not
	// load, the configuration loaded before serves, as Redis's does.
	if tport != 0 && (s.secure.port == 0 || !s.tlsm.ServerLoaded()) {
		if err := s.tlsm.Load(); err != nil && !s.tlsm.ServerLoaded() {
			return tlsconf.ErrApply
		}
	}
	return s.rebindSet(&s.secure, tport, specs)
}

// rebindSet rebinds one set of listeners: it binds the configured
// addresses first (keeping the listeners of addresses already bound on
// the same port), then closes the listeners no longer wanted; if an
// address cannot be bound the old listeners stay and the error is
// Redis's reason. A new address overlapping an old one on the same port
// (127.0.0.1 and *) is bound after closing the old listeners, which are
// bound again if that fails. Port 0 closes every listener, as in Redis.
// s.mu is held.
func (s *Server) rebindSet(set *listenerSet, port int, specs []string) error {
	var keep []boundListener
	if port == set.port {
		keep = set.lns
	}
	var next []boundListener
	var err error
	if port != 0 {
		next, err = listenAll(specs, port, keep, set.wrap)
	}
	if err != nil && keep != nil && errors.Is(err, syscall.EADDRINUSE) {
		var stay, stale []string
		for _, l := range keep {
			if slices.Contains(specs, l.spec) {
				stay = append(stay, l.spec)
			} else {
				stale = append(stale, l.spec)
			}
		}
		s.setListeners(set, keep, stay, port)
		if next, err = listenAll(specs, port, set.lns, set.wrap); err != nil {
			back, _ := listenAll(stale, port, nil, set.wrap)
			s.setListeners(set, append(set.lns, back...), append(stay, stale...), port)
		}
	}
	if err != nil {
		s.log.Warn("CONFIG SET: could not listen", "err", err)
		if port != set.port {
			return errors.New("Unable to listen on this port. Check server logs.")
		}
		return errors.New("Failed to bind to specified addresses.")
	}
	s.setListeners(set, next, specs, port)
	return nil
}

// setListeners makes the listeners of lns whose address is in specs the
// set's: it closes the set's current ones that are not among them and
// starts accept loops on the new ones. s.mu is held.
func (s *Server) setListeners(set *listenerSet, lns []boundListener, specs []string, port int) {
	var next []boundListener
	for _, l := range lns {
		if slices.Contains(specs, l.spec) && !slices.Contains(next, l) {
			next = append(next, l)
		}
	}
	for _, l := range set.lns {
		if !slices.Contains(next, l) {
			l.Close()
		}
	}
	for _, l := range next {
		if s.serving && !slices.Contains(set.lns, l) {
			s.startAccept(l)
		}
	}
	set.lns, set.port = next, port
}

// Addrs returns the bound addresses: the plain ones, then the TLS ones
// (prefixed "tls://").
func (s *Server) Addrs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, ln := range s.plain.lns {
		out = append(out, ln.Addr().String())
	}
	for _, ln := range s.secure.lns {
		out = append(out, "tls://"+ln.Addr().String())
	}
	return out
}

// Serve accepts connections until Close, on the listeners bound then and
// on those CONFIG SET port/bind binds later. It returns after Close, once
// every accept loop has stopped.
func (s *Server) Serve() {
	s.mu.Lock()
	s.serving = true
	for _, l := range slices.Concat(s.plain.lns, s.secure.lns) {
		s.startAccept(l)
	}
	s.mu.Unlock()
	<-s.done
	s.accepting.Wait()
}

// startAccept runs an accept loop on l; s.mu is held.
func (s *Server) startAccept(l net.Listener) {
	s.accepting.Add(1)
	go func() {
		defer s.accepting.Done()
		s.acceptLoop(l)
	}()
}

func (s *Server) acceptLoop(ln net.Listener) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("accept failed", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		s.mu.Lock()
		if len(s.clients) >= s.cfg.MaxClients() {
			s.mu.Unlock()
			s.stats.rejectedConns.Add(1)
			if _, ok := nc.(*tls.Conn); ok {
				// Its write runs the handshake: not in the accept loop.
				go rejectConn(nc)
			} else {
				rejectConn(nc)
			}
			continue
		}
		c := newClient(s, nc)
		s.clients[c.id] = c
		s.wg.Add(1)
		s.mu.Unlock()
		s.fresh.add(c)
		s.stats.connections.Add(1)
		go func() {
			defer s.wg.Done()
			c.serve()
			c.unwatchAll()
			c.endTracking()
			s.mu.Lock()
			delete(s.clients, c.id)
			s.mu.Unlock()
		}()
	}
}

// rejectConn tells a client over maxclients so, and closes it.
func rejectConn(nc net.Conn) {
	nc.SetDeadline(time.Now().Add(time.Second))
	nc.Write([]byte("-ERR max number of clients reached\r\n"))
	nc.Close()
}

func (s *Server) closeListeners() {
	s.mu.Lock()
	closeAll(s.plain.lns)
	closeAll(s.secure.lns)
	s.mu.Unlock()
}

// ShutdownRequested is closed when a client sends SHUTDOWN.
func (s *Server) ShutdownRequested() <-chan struct{} { return s.shutdownReq }

func (s *Server) requestShutdown() {
	s.shutdownOne.Do(func() { close(s.shutdownReq) })
}

// Close stops accepting, closes every client connection, and waits until no
// command is executing. It does not close the engine.
func (s *Server) Close() {
	if !s.closing.CompareAndSwap(false, true) {
		return
	}
	s.closeListeners()
	close(s.done)
	s.mu.Lock()
	for _, c := range s.clients {
		c.closeSocket()
	}
	s.mu.Unlock()
	s.replica.Close()
	s.repl.Close() // its replicas' connections are closed above
	s.unpause()
	s.wg.Wait()
}

// clientList returns a snapshot of connected clients.
func (s *Server) clientList() []*Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Client, 0, len(s.clients))
	for _, c := range s.clients {
		out = append(out, c)
	}
	return out
}

// pausedFor reports whether the current pause holds a command: any
// command under PAUSE ALL, one that may write or replicate (mayWrite)
// under PAUSE WRITE. It returns the channel closed when the pause ends.
func (s *Server) pausedFor(mayWrite bool) (chan struct{}, bool) {
	s.pauseMu.Lock()
	defer s.pauseMu.Unlock()
	if s.pauseEnded == nil || !(s.pauseAll || mayWrite) {
		return nil, false
	}
	return s.pauseEnded, true
}

// Paused reports whether a CLIENT PAUSE is in effect (one atomic load).
func (s *Server) Paused() bool { return s.paused.Load() }

// PostponedClients returns how many clients wait for a CLIENT PAUSE to end
// (upstream mode adds them to the upstream's blocked_clients).
func (s *Server) PostponedClients() int { return int(s.postponed.Load()) }

// ConnectedClients is the number of client connections (INFO's
// connected_clients): a front reports it for the server it fronts.
func (s *Server) ConnectedClients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

// pause pauses clients for d: all commands, or only those that may write.
// As Redis's pauseClients, a pause in progress is extended, never
// shortened, and ALL wins over WRITE.
func (s *Server) pause(d time.Duration, all bool) {
	s.pauseMu.Lock()
	defer s.pauseMu.Unlock()
	until := time.Now().Add(d)
	if s.pauseEnded == nil {
		s.pauseEnded = make(chan struct{})
		s.pauseUntil = until
		s.pauseAll = all
		s.pauseTimer = time.AfterFunc(d, s.endPauseIfDue)
		s.paused.Store(true)
		if s.engine != nil {
			s.engine.SetExpiryPaused(true)
		}
		return
	}
	s.pauseAll = s.pauseAll || all
	if until.After(s.pauseUntil) {
		s.pauseUntil = until
		s.pauseTimer.Reset(d)
	}
}

// endPauseIfDue ends the pause once its time has come (the pause timer
// calls it; an extended pause resets the timer).
func (s *Server) endPauseIfDue() {
	s.pauseMu.Lock()
	defer s.pauseMu.Unlock()
	if s.pauseEnded == nil {
		return
	}
	if d := time.Until(s.pauseUntil); d > 0 {
		s.pauseTimer.Reset(d)
		return
	}
	s.endPauseLocked()
}

// unpause ends the pause now (CLIENT UNPAUSE, Close).
func (s *Server) unpause() {
	s.pauseMu.Lock()
	defer s.pauseMu.Unlock()
	if s.pauseEnded != nil {
		s.pauseTimer.Stop()
		s.endPauseLocked()
	}
}

func (s *Server) endPauseLocked() {
	close(s.pauseEnded)
	s.pauseEnded, s.pauseTimer = nil, nil
	s.pauseUntil, s.pauseAll = time.Time{}, false
	s.paused.Store(false)
	if s.engine != nil {
		s.engine.SetExpiryPaused(s.replica.Active()) // a replica expires nothing itself
	}
}

// SetOutOfMemory tells the server whether its memory budget (maxmemory)
// can be met. While it cannot, commands are refused as Redis refuses them
// when used memory stays over maxmemory with nothing left to evict: those
// that may grow memory (denyoom, scripts declaring neither allow-oom nor
// no-writes, EXEC of a transaction holding one), and every command but
// EXEC, DISCARD, QUIT and RESET inside MULTI; a script's first write
// fails likewise. And as Redis would, it evicts what maxmemory-policy
// allows (every key for allkeys-*, those with an expiry for volatile-*;
// "evicted" events, INFO evicted_keys), in the background. Spillway
// demotes to disk instead of evicting, so this happens only when the
// budget is below what the process needs even with an empty hot tier.
// Call it again when maxmemory-policy changes.
func (s *Server) SetOutOfMemory(oom bool) {
	s.oom.Store(oom)
	if oom && s.fwd == nil && s.engine != nil {
		if policy, _ := s.cfg.Value("maxmemory-policy"); policy != "noeviction" {
			// The next command evicts first, as Redis's processCommand
			// does; the goroutine covers a server with no next command.
			// (SetOutOfMemory may run under the engine's lock: CONFIG SET
			// inside EXEC.)
			s.evictPending.Store(true)
			go s.evictIfPending()
		}
	}
}

// evictIfPending runs the eviction SetOutOfMemory asked for, if it is
// still pending, and returns once it is done (by this call or another).
func (s *Server) evictIfPending() {
	s.evictMu.Lock()
	defer s.evictMu.Unlock()
	if !s.evictPending.Load() {
		return
	}
	policy, _ := s.cfg.Value("maxmemory-policy")
	if policy != "noeviction" {
		s.evictAll(strings.HasPrefix(policy, "volatile-"))
	}
	s.evictPending.Store(false)
}

// evictAll evicts every key (volatile: every key with an expiry) of every
// database, a batch per engine transaction, while the server stays out of
// memory.
func (s *Server) evictAll(volatile bool) {
	const batch = 256
	for db := 0; db < s.engine.Databases(); db++ {
		var cursor uint64
		for s.oom.Load() {
			_, err := s.engine.Update(func(tx *tiering.Tx) error {
				keys, next, err := tx.Scan(db, cursor, tiering.ScanOptions{Count: batch}, nil)
				if err != nil {
					return err
				}
				cursor = next
				for _, k := range keys {
					if volatile {
						e, err := tx.PeekNoTouch(db, k)
						if err != nil {
							return err
						}
						if e == nil || e.ExpireAt == 0 {
							continue
						}
					}
					if _, err := tx.Evict(db, k); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				s.log.Error("eviction failed", "db", db, "err", err)
				return
			}
			if cursor == 0 {
				break
			}
		}
	}
}
