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

	kick chan struct{}
	stop chan struct{}
	wg   sync.WaitGroup
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
	p := &Pool{opts: opts, kick: make(chan struct{}, 1), stop: make(chan struct{})}
	for i := range p.shared {
		p.shared[i] = make([]atomic.Pointer[Mux], opts.Shared)
	}
	msg := "not connected yet"
	p.lastErr.Store(&msg)
	if err := p.connectAll(); err != nil {
		p.startErr = err
		p.opts.Logger.Warn("upstream unreachable; retrying in the background", "upstream", opts.Target.Addr, "err", err)
	} else {
		p.up.Store(true)
	}
	p.wg.Add(1)
	go p.maintain()
	return p
}

// StartErr returns why the first connection attempt, in NewPool, failed
// (nil if it succeeded): callers stop on ErrClusterUpstream.
func (p *Pool) StartErr() error { return p.startErr }

// Target returns the upstream's address and credentials.
func (p *Pool) Target() Target { return p.opts.Target }

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

// Dial opens a dedicated connection in the given protocol, on db.
func (p *Pool) Dial(proto, db int) (*Conn, error) {
	c, err := Dial(p.opts.Target, proto, db, p.opts.DialTimeout)
	if err != nil {
		p.noteBroken(err)
		return nil, err
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
	return p.Dial(proto, db)
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
			c, err := Dial(p.opts.Target, proto, db, p.opts.DialTimeout)
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
	return fmt.Errorf("%w: %s", ErrUnavailable, *p.lastErr.Load())
}

// ErrorReply renders err as the error line a client gets.
func ErrorReply(err error) string {
	msg := err.Error()
	if errors.Is(err, ErrUnavailable) {
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
			c, err := Dial(p.opts.Target, i+2, p.opts.Target.DB, p.opts.DialTimeout)
			if err == nil {
				if err = checkStandalone(c, p.opts.Target.Addr, p.opts.AcceptCluster); err != nil {
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
					p.Reconnects.Add(1)
					p.opts.Logger.Warn("upstream reachable again", "upstream", p.opts.Target.Addr)
				}
				backoff = minBackoff
				break
			}
			if p.up.Swap(false) {
				p.opts.Logger.Error("upstream unreachable; clients get errors until it is back", "upstream", p.opts.Target.Addr, "err", err)
			}
			select {
			case <-p.stop:
				return
			case <-time.After(backoff):
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
