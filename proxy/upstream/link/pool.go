package link

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Pool.
type Options struct {
	Target Target
	// Shared is the number of shared connections per protocol (RESP2 and
	// RESP3 each get their own).
	Shared int
	// DialTimeout bounds connecting and logging in.
	DialTimeout time.Duration
	Logger      *slog.Logger
	// Sentinel, if set, names a Sentinel-monitored master: Target.Addr is
	// then ignored (the sentinels give the address) and the pool follows
	// failovers (see sentinel.go).
	Sentinel *Sentinel
	// AcceptCluster, when set, decides whether a Redis Cluster node may
	// be the upstream (nil: yes); an error wrapping ErrClusterUpstream
	// refuses it. Unset, cluster nodes are refused.
	AcceptCluster func(*Conn) error
}

// Pool owns the shared connections and dials dedicated ones. When the
// upstream is unreachable, every request fails at once with an error
// wrapping ErrUnavailable, and a background loop reconnects with
// exponential backoff, logging when the upstream goes away and comes back.
type Pool struct {
	opts Options
	// own counts Spillway's own key lookups on the upstream (ownlookups.go).
	own OwnLookups

	// shared holds the shared connections by protocol ([0] RESP2, [1]
	// RESP3); a broken one is replaced in place by the reconnect loop.
	shared [2][]atomic.Pointer[Mux]

	up      atomic.Bool
	lastErr atomic.Pointer[string]
	// Reconnects counts successful reconnections after an outage.
	Reconnects atomic.Int64
	// ColdGets counts the Get calls that found no idle connection and
	// had to dial while the caller waited.
	ColdGets atomic.Int64

	idleMu  sync.Mutex
	idle    []*Conn
	dialing map[[2]int]int // spares being dialed, by protocol and database
	closed  bool           // Close ran: no more idle connections kept

	startErr error    // connectAll's in NewPool; read-only after
	internal sync.Map // local addresses of DialInternal's connections

	// addr is the upstream's current address: Target.Addr, or the
	// master's that the sentinels gave. gen counts its changes, so that a
	// connection dialed to the old address while it changed is dropped.
	addr atomic.Pointer[string]
	gen  atomic.Int64
	// watch follows the master with Sentinel (nil without); live holds
	// every dedicated connection then open, which a failover closes.
	watch *sentinelWatch
	live  sync.Map
	// fenced is set while a failover is cleaned up: no connection to the
	// new master is made but the cleanup's (see failover.go).
	fenced atomic.Bool
	recent recentUnlinks

	// downSince is when the current outage began (Unix ns, 0 while up);
	// downTotal adds up the outages that ended (ns).
	downSince, downTotal atomic.Int64

	kick chan struct{}
	// moved is signalled when the upstream's address changed (Sentinel):
	// the reconnect loop then stops backing off.
	moved chan struct{}
	stop  chan struct{}
	wg    sync.WaitGroup
}

// maxIdle bounds the dedicated connections kept for reuse.
const maxIdle = 32

// NewPool connects the shared connections. An unreachable upstream is not
// an error: the pool starts down and keeps trying.
func NewPool(opts Options) *Pool {
	if opts.Shared <= 0 {
		opts.Shared = 1
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 2 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	p := &Pool{opts: opts, kick: make(chan struct{}, 1), moved: make(chan struct{}, 1), stop: make(chan struct{})}
	for i := range p.shared {
		p.shared[i] = make([]atomic.Pointer[Mux], opts.Shared)
	}
	msg := "not connected yet"
	p.lastErr.Store(&msg)
	addr := opts.Target.Addr
	p.addr.Store(&addr)
	var err error
	if s := opts.Sentinel; s != nil {
		p.watch = &sentinelWatch{p: p, cfg: *s, kick: make(chan struct{}, 1)}
		if addr, err = p.watch.resolve("", true); err == nil {
			p.addr.Store(&addr)
			p.opts.Logger.Info("sentinels named the upstream master", "master", s.Master, "addr", addr)
		} else {
			msg := strings.Replace(err.Error(), ErrUnavailable.Error()+": ", "", 1)
			p.lastErr.Store(&msg)
			p.watch.lastErr.Store(&msg)
		}
	}
	if err == nil {
		err = p.connectAll()
	}
	if err != nil {
		p.startErr = err
		p.downSince.Store(time.Now().UnixNano())
		p.opts.Logger.Warn("upstream unreachable; retrying in the background", "upstream", p.target().Addr, "err", err)
	} else {
		p.up.Store(true)
		none := ""
		p.lastErr.Store(&none)
	}
	p.wg.Add(1)
	go p.maintain()
	if p.watch != nil {
		p.wg.Add(2)
		go p.watch.run()
		go p.watch.subscribe()
	}
	return p
}

// target is the upstream's address (as it is now) and credentials.
func (p *Pool) target() Target {
	t := p.opts.Target
	t.Addr = *p.addr.Load()
	return t
}

// LinkState is the state of the link to the upstream, for INFO.
type LinkState struct {
	Up         bool
	Addr       string
	LastError  string
	DownFor    time.Duration // the current outage so far (0 while up)
	DownTotal  time.Duration // every outage since start, the current one included
	Reconnects int64
}

// State returns the link's state.
func (p *Pool) State() LinkState {
	s := LinkState{Up: p.up.Load(), Addr: p.target().Addr, LastError: *p.lastErr.Load(),
		Reconnects: p.Reconnects.Load(), DownTotal: time.Duration(p.downTotal.Load())}
	if since := p.downSince.Load(); since != 0 {
		s.DownFor = time.Since(time.Unix(0, since))
		s.DownTotal += s.DownFor
	}
	return s
}

// StartErr returns why the first connection attempt, in NewPool, failed
// (nil if it succeeded): callers stop on ErrClusterUpstream.
func (p *Pool) StartErr() error { return p.startErr }

// Target returns the upstream's address (the current master's, with
// Sentinel) and credentials.
func (p *Pool) Target() Target { return p.target() }

// Up reports whether every shared connection is connected.
func (p *Pool) Up() bool { return p.up.Load() }

// Close closes the shared connections and stops reconnecting.
func (p *Pool) Close() {
	select {
	case <-p.stop:
		return
	default:
	}
	close(p.stop)
	if p.watch != nil {
		p.watch.close()
	}
	p.wg.Wait()
	p.idleMu.Lock()
	for _, c := range p.idle {
		c.Close()
	}
	p.idle, p.closed = nil, true
	p.idleMu.Unlock()
	for _, list := range p.shared {
		for i := range list {
			if m := list[i].Load(); m != nil {
				m.Close()
			}
		}
	}
}

// Shared returns the shared connection for a client of the given protocol
// (2 or 3), spreading clients by id. It fails at once when that connection
// is down.
func (p *Pool) Shared(proto int, id int64) (*Mux, error) {
	i := 0
	if proto == 3 {
		i = 1
	}
	list := p.shared[i]
	m := list[int(uint64(id)%uint64(len(list)))].Load()
	if m == nil || m.broken.Load() {
		p.noteBroken(nil)
		return nil, p.unavailable()
	}
	return m, nil
}

// InFlight is the pipeline depth of the shared connections: the requests
// of the batches written or queued whose replies have not all arrived,
// summed over all of them (INFO tiering's upstream_pipeline_depth; it
// takes each one's lock briefly, never on the command path).
func (p *Pool) InFlight() int {
	n := 0
	for i := range p.shared {
		for j := range p.shared[i] {
			if m := p.shared[i][j].Load(); m != nil {
				n += m.inFlight()
			}
		}
	}
	return n
}

// Dial opens a dedicated connection in the given protocol, on db.
func (p *Pool) Dial(proto, db int) (*Conn, error) {
	c, err := p.dial(proto, db)
	if err != nil {
		p.noteBroken(err)
		return nil, err
	}
	return c, nil
}

// dial dials the current address; with Sentinel, the connection is
// tracked (a failover closes it) and dropped if the master moved while it
// was dialed.
func (p *Pool) dial(proto, db int) (*Conn, error) {
	if p.watch == nil {
		return Dial(p.opts.Target, proto, db, p.opts.DialTimeout)
	}
	gen := p.gen.Load()
	if p.fenced.Load() {
		return nil, errMoving
	}
	c, err := Dial(p.target(), proto, db, p.opts.DialTimeout)
	if err != nil {
		return nil, err
	}
	c.live = &p.live
	p.live.Store(c, struct{}{})
	if p.gen.Load() != gen {
		c.Close()
		return nil, errMoving
	}
	return c, nil
}

// DialInternal is Dial for a connection that carries Spillway's own
// commands (the demoter's, control reads), not a client's: until it is
// closed, IsInternal knows its address, so that a client's MONITOR of the
// upstream can leave its commands out.
func (p *Pool) DialInternal(proto, db int) (*Conn, error) {
	c, err := p.Dial(proto, db)
	if err != nil {
		return nil, err
	}
	addr := c.LocalAddr()
	p.internal.Store(addr, struct{}{})
	c.onClose = func() { p.internal.Delete(addr) }
	return c, nil
}

// IsInternal reports whether addr (host:port as the upstream's MONITOR and
// CLIENT LIST show it) is one of Spillway's own connections (DialInternal).
func (p *Pool) IsInternal(addr []byte) bool {
	_, ok := p.internal.Load(string(addr))
	return ok
}

// Get returns a dedicated connection in proto on db: an idle one put back
// by Put, or a new one. It then has spares dialed in the background
// (replenish).
func (p *Pool) Get(proto, db int) (*Conn, error) {
	defer p.replenish(proto, db)
	p.idleMu.Lock()
	for i := len(p.idle) - 1; i >= 0; i-- {
		c := p.idle[i]
		if c.Proto == proto && c.DB == db {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			p.idleMu.Unlock()
			return c, nil
		}
	}
	p.idleMu.Unlock()
	p.ColdGets.Add(1)
	return p.dialDedicated(proto, db)
}

// dialDedicated is Dial for a client's dedicated connection (Get, and the
// spares replenish keeps): the upstream has accepted it before it is
// returned (Conn.awaitAccepted), so that what it carries is read in the
// order it was sent against the other connections.
func (p *Pool) dialDedicated(proto, db int) (*Conn, error) {
	c, err := p.Dial(proto, db)
	if err != nil {
		return nil, err
	}
	if err := c.awaitAccepted(p.target(), p.opts.DialTimeout); err != nil {
		c.Close()
		p.noteBroken(err)
		return nil, err
	}
	return c, nil
}

// minSpare is how many idle dedicated connections the pool keeps ready
// for a protocol and database Get has served. A blocking command or a
// MULTI then reaches the upstream without waiting for a dial (three round
// trips), so it runs before the commands other clients send after it, as
// on a Redis that receives them all: clients and Redis's test suite rely
// on that order (a BRPOPLPUSH sent before another client's LPUSH is the
// one served).
const minSpare = 2

// replenish dials, in the background, the spare connections proto and db
// lack.
func (p *Pool) replenish(proto, db int) {
	key := [2]int{proto, db}
	n := p.idleCount(proto, db)
	p.idleMu.Lock()
	need := minSpare - n - p.dialing[key]
	if need <= 0 || !p.up.Load() || p.closed {
		p.idleMu.Unlock()
		return
	}
	if p.dialing == nil {
		p.dialing = map[[2]int]int{}
	}
	p.dialing[key] += need
	p.idleMu.Unlock()
	go func() {
		for range need {
			c, err := p.dialDedicated(proto, db)
			p.idleMu.Lock()
			p.dialing[key]--
			p.idleMu.Unlock()
			if err != nil {
				return // the shared connections' loop notices an outage
			}
			p.Put(c)
		}
	}()
}

// Put keeps a dedicated connection whose upstream state is clean (no
// transaction, watch or subscription; still on the database it was
// dialed on) for reuse.
func (p *Pool) Put(c *Conn) {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	if len(p.idle) >= maxIdle || !p.up.Load() || p.closed {
		c.Close()
		return
	}
	p.idle = append(p.idle, c)
}

// unavailable is the error requests get while the upstream is down.
func (p *Pool) unavailable() error {
	msg := *p.lastErr.Load()
	if msg == "" {
		msg = "connection lost; reconnecting"
	}
	return fmt.Errorf("%w: %s", ErrUnavailable, msg)
}

// ErrorReply renders err as the error line a client gets.
func ErrorReply(err error) string {
	msg := err.Error()
	if errors.Is(err, ErrUnavailable) || errors.Is(err, errNotMaster) {
		msg = strings.Replace(msg, ErrUnavailable.Error()+": ", "", 1)
		return "ERR upstream unavailable: " + FirstLine(msg)
	}
	return "ERR upstream: " + FirstLine(msg)
}

// FirstLine returns s up to its first line break (for one-line error
// replies).
func FirstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}

// noteBroken records a failure and wakes the reconnect loop.
func (p *Pool) noteBroken(err error) {
	if err != nil {
		msg := err.Error()
		msg = strings.Replace(msg, ErrUnavailable.Error()+": ", "", 1)
		p.lastErr.Store(&msg)
	}
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// connectAll dials every missing or broken shared connection.
func (p *Pool) connectAll() error {
	for i, list := range p.shared {
		for j := range list {
			if m := list[j].Load(); m != nil && !m.Broken() {
				continue
			}
			gen := p.gen.Load()
			if p.fenced.Load() {
				return errMoving
			}
			t := p.target()
			c, err := Dial(t, i+2, t.DB, p.opts.DialTimeout)
			if err == nil {
				if err = checkStandalone(c, t.Addr, p.opts.AcceptCluster); err == nil && p.watch != nil {
					// The sentinels' word is checked: a master restarted
					// as a replica is no upstream.
					if err = checkMaster(c, t.Addr); err == nil && p.gen.Load() != gen {
						err = errMoving
					}
				}
				if err != nil {
					c.Close()
				}
			}
			if err != nil {
				msg := strings.Replace(err.Error(), ErrUnavailable.Error()+": ", "", 1)
				p.lastErr.Store(&msg)
				return err
			}
			list[j].Store(newMux(c, p))
		}
	}
	return nil
}

// maintain reconnects broken shared connections with exponential backoff
// (100 ms doubling to 5 s) and logs outages once, and their end.
func (p *Pool) maintain() {
	defer p.wg.Done()
	const minBackoff, maxBackoff = 100 * time.Millisecond, 5 * time.Second
	backoff := minBackoff
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-p.kick:
		case <-tick.C:
		}
		for {
			err := p.connectAll()
			if err == nil {
				if !p.up.Swap(true) {
					if since := p.downSince.Swap(0); since != 0 {
						p.downTotal.Add(time.Now().UnixNano() - since)
					}
					p.Reconnects.Add(1)
					p.opts.Logger.Warn("upstream reachable again", "upstream", p.target().Addr)
				}
				backoff = minBackoff
				break
			}
			if p.up.Swap(false) {
				p.downSince.CompareAndSwap(0, time.Now().UnixNano())
				p.opts.Logger.Error("upstream unreachable; clients get errors until it is back", "upstream", p.target().Addr, "err", err)
			}
			if p.watch != nil {
				p.watch.Kick() // the master may have moved
			}
			select {
			case <-p.stop:
				return
			case <-time.After(backoff):
			case <-p.moved:
				backoff = minBackoff / 2 // a new address: try it now
			}
			backoff = min(2*backoff, maxBackoff)
		}
	}
}

// idleCount returns the idle connections of proto and db.
func (p *Pool) idleCount(proto, db int) int {
	p.idleMu.Lock()
	defer p.idleMu.Unlock()
	n := 0
	for _, c := range p.idle {
		if c.Proto == proto && c.DB == db {
			n++
		}
	}
	return n
}
