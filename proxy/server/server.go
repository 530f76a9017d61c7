// Package server is Spillway's RESP front end: it accepts connections, parses
// requests, checks them against Redis 7.0's command table, keeps
// per-connection state, executes commands against the tiering engine, and
// writes replies in the connection's protocol (RESP2 or RESP3).
package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/proxy/config"
	"github.com/spillway/spillway/proxy/pubsub"
	"github.com/spillway/spillway/proxy/script"
	"github.com/spillway/spillway/tiering"
)

// Version is Spillway's version, reported by INFO and HELLO.
const Version = "0.1.0"

// RedisVersion is the Redis version whose behaviour Spillway reproduces.
const RedisVersion = "7.0.15"

// Server serves the RESP protocol on one or more listeners.
type Server struct {
	cfg *config.Config
	// table holds every command's handler; read-only once serving.
	table    *Table
	engine   *tiering.Engine
	log      *slog.Logger
	blocking *blockRegistry
	// watches are the WATCHed keys (multi.go); guarded by the engine's lock.
	watches watchRegistry
	// scripts runs Lua scripts and FUNCTION libraries (cmd_script.go);
	// luaClient is the client their redis.call commands run as.
	scripts   *script.Engine
	luaClient *Client
	// abortScript: SHUTDOWN NOSAVE killed the running script, whose writes
	// must be discarded.
	abortScript atomic.Bool

	// fwd is the forwarding front (upstream mode); nil in embedded mode.
	fwd Forwarder
	// pubsub holds the Pub/Sub subscriptions (embedded mode; upstream
	// mode forwards Pub/Sub to the upstream).
	pubsub *pubsub.Hub

	mu        sync.Mutex
	listeners []net.Listener
	clients   map[int64]*Client
	nextID    atomic.Int64
	closing   atomic.Bool
	done      chan struct{}
	wg        sync.WaitGroup

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

	started  time.Time
	lastSave atomic.Int64
	stats    serverStats

	// shutdownReq is signalled by SHUTDOWN.
	shutdownReq chan struct{}
	shutdownOne sync.Once
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
	}
	s.lastSave.Store(time.Now().Unix())
	s.initKeyEvents()
	s.scripts = script.New(script.Options{Logger: log})
	return s
}

// LoadState loads what embedded mode keeps besides keys (the FUNCTION
// libraries) from the store; call it before Serve.
func (s *Server) LoadState() error { return s.loadFunctions() }

// Listen binds every configured address on the configured port.
func (s *Server) Listen() error {
	port := s.cfg.Port()
	for _, addr := range s.cfg.Bind() {
		ln, err := net.Listen("tcp", net.JoinHostPort(addr, fmt.Sprint(port)))
		if err != nil {
			s.closeListeners()
			return fmt.Errorf("proxy: listen on %s:%d: %w", addr, port, err)
		}
		s.listeners = append(s.listeners, ln)
	}
	return nil
}

// Addrs returns the bound addresses.
func (s *Server) Addrs() []string {
	var out []string
	for _, ln := range s.listeners {
		out = append(out, ln.Addr().String())
	}
	return out
}

// Serve accepts connections until Close. It returns after all listeners stop.
func (s *Server) Serve() {
	var wg sync.WaitGroup
	for _, ln := range s.listeners {
		wg.Add(1)
		go func(ln net.Listener) {
			defer wg.Done()
			s.acceptLoop(ln)
		}(ln)
	}
	wg.Wait()
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
			nc.Write([]byte("-ERR max number of clients reached\r\n"))
			nc.Close()
			continue
		}
		c := newClient(s, nc)
		s.clients[c.id] = c
		s.wg.Add(1)
		s.mu.Unlock()
		s.stats.connections.Add(1)
		go func() {
			defer s.wg.Done()
			c.serve()
			c.unwatchAll()
			s.mu.Lock()
			delete(s.clients, c.id)
			s.mu.Unlock()
		}()
	}
}

func (s *Server) closeListeners() {
	for _, ln := range s.listeners {
		ln.Close()
	}
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
	s.mu.Lock()
	for _, c := range s.clients {
		c.nc.Close()
	}
	s.mu.Unlock()
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

// PostponedClients returns how many clients wait for a CLIENT PAUSE to end
// (upstream mode adds them to the upstream's blocked_clients).
func (s *Server) PostponedClients() int { return int(s.postponed.Load()) }

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
		s.engine.SetExpiryPaused(false)
	}
}
