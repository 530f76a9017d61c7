package link

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"time"
)

// Sentinel names a master monitored by Redis Sentinel: the pool asks the
// sentinels where it is and follows it when they fail it over.
type Sentinel struct {
	// Addrs are the sentinels' host:port, tried in turn.
	Addrs []string
	// Master is the name the sentinels monitor the master under.
	Master string
	// Username and Password log in to the sentinels (their requirepass or
	// ACL user); the master's own credentials are the Target's.
	Username, Password string
}

// sentinelCheckEvery is how often the sentinels are asked where the master
// is even without a +switch-master message or a connection error (a missed
// message, a master restarted as a replica).
const sentinelCheckEvery = 2 * time.Second

// sentinelWatch follows a Sentinel-monitored master for a Pool: one
// goroutine keeps a subscription to +switch-master on one sentinel at a
// time, another asks the sentinels for the master's address when kicked
// (that message, a lost or -READONLY shared connection) and periodically,
// and re-targets the pool when the address changes.
type sentinelWatch struct {
	p    *Pool
	cfg  Sentinel
	kick chan struct{}
	next int // the sentinel to ask first: the last that answered (run's)

	sub atomic.Pointer[Conn] // the subscription's connection, closed by Close

	// Failovers counts the master changes the pool followed.
	failovers atomic.Int64
	lastErr   atomic.Pointer[string]
}

// Kick asks for a check of the master's address soon (never blocks).
func (w *sentinelWatch) Kick() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// sentinelTarget is how a sentinel is dialed.
func (w *sentinelWatch) sentinelTarget(addr string) Target {
	return Target{Addr: addr, Username: w.cfg.Username, Password: w.cfg.Password}
}

// ask returns the master's address according to the sentinel at addr.
func (w *sentinelWatch) ask(addr string) (string, error) {
	c, err := Dial(w.sentinelTarget(addr), 2, 0, w.p.opts.DialTimeout)
	if err != nil {
		return "", fmt.Errorf("sentinel %s: %v", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(w.p.opts.DialTimeout))
	r, err := c.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", w.cfg.Master)
	if err != nil {
		return "", fmt.Errorf("sentinel %s: %v", addr, err)
	}
	if IsError(r) {
		return "", fmt.Errorf("sentinel %s: %s", addr, ReplyText(r))
	}
	f, err := ParseBulks(r)
	if err != nil || len(f) != 2 {
		return "", fmt.Errorf("sentinel %s does not know master %q", addr, w.cfg.Master)
	}
	return net.JoinHostPort(string(f[0]), string(f[1])), nil
}

// isMasterRole reports whether r, a reply to ROLE, is a master's.
func isMasterRole(r []byte) bool {
	i := bytes.Index(r, []byte("\r\n"))
	return len(r) > 0 && r[0] == '*' && i > 0 && bytes.HasPrefix(r[i+2:], []byte("$6\r\nmaster\r\n"))
}

// verify checks that addr's ROLE is master.
func (w *sentinelWatch) verify(addr string) error {
	t := w.p.opts.Target
	t.Addr = addr
	c, err := Dial(t, 2, 0, w.p.opts.DialTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(w.p.opts.DialTimeout))
	return checkMaster(c, addr)
}

// checkMaster returns an error unless c's server says ROLE master.
func checkMaster(c *Conn, addr string) error {
	r, err := c.Do("ROLE")
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnavailable, addr, err)
	}
	if !isMasterRole(r) {
		return fmt.Errorf("%w: %s is not a master (ROLE: %s)", errNotMaster, addr, FirstLine(ReplyText(r)))
	}
	return nil
}

// errNotMaster is the error of a connection to a server the sentinels name
// but whose ROLE is not master (yet, or any more).
var errNotMaster = errors.New("not the master")

// resolve asks the sentinels in turn for the master's address; with check
// (or when it differs from current) it verifies that the server there is a
// master.
func (w *sentinelWatch) resolve(current string, check bool) (string, error) {
	n := len(w.cfg.Addrs)
	var errs []string
	for i := 0; i < n; i++ {
		j := (w.next + i) % n
		addr, err := w.ask(w.cfg.Addrs[j])
		if err == nil && (check || addr != current) {
			err = w.verify(addr)
		}
		if err == nil {
			w.next = j
			return addr, nil
		}
		errs = append(errs, err.Error())
	}
	return "", fmt.Errorf("%w: no sentinel named a reachable master %q: %s",
		ErrUnavailable, w.cfg.Master, strings.Join(errs, "; "))
}

// run checks the master's address when kicked and every
// sentinelCheckEvery, and re-targets the pool when it moved.
func (w *sentinelWatch) run() {
	defer w.p.wg.Done()
	tick := time.NewTicker(sentinelCheckEvery)
	defer tick.Stop()
	for {
		select {
		case <-w.p.stop:
			return
		case <-w.kick:
		case <-tick.C:
		}
		cur := *w.p.addr.Load()
		addr, err := w.resolve(cur, !w.p.Up())
		if err != nil {
			msg := err.Error()
			w.lastErr.Store(&msg)
			continue
		}
		if cur == "" { // the sentinels answer for the first time
			w.p.addr.Store(&addr)
			w.p.opts.Logger.Info("sentinels named the upstream master", "master", w.cfg.Master, "addr", addr)
			w.p.signalMoved()
		} else if addr != cur {
			w.p.retarget(addr, w.cfg.Master)
			w.failovers.Add(1)
		} else if !w.p.Up() {
			w.p.noteBroken(nil)
		}
	}
}

// subscribe keeps a subscription to +switch-master on one sentinel after
// another, kicking run when the message names our master.
func (w *sentinelWatch) subscribe() {
	defer w.p.wg.Done()
	const minBackoff, maxBackoff = 100 * time.Millisecond, 2 * time.Second
	backoff := minBackoff
	for i := 0; ; i++ {
		addr := w.cfg.Addrs[i%len(w.cfg.Addrs)]
		c, err := Dial(w.sentinelTarget(addr), 2, 0, w.p.opts.DialTimeout)
		if err == nil {
			w.sub.Store(c)
			select {
			case <-w.p.stop: // Close ran before the Store: it missed c
				c.Close()
				return
			default:
			}
			if _, err = c.Do("SUBSCRIBE", "+switch-master"); err == nil {
				backoff = minBackoff
				w.Kick() // a switch may have happened while unsubscribed
				for {
					r, err := c.Read()
					if err != nil {
						break
					}
					if f, err := ParseBulks(r); err == nil && len(f) == 3 {
						if name, _, _ := strings.Cut(string(f[2]), " "); name == w.cfg.Master {
							w.p.opts.Logger.Info("sentinel announced a new master", "sentinel", addr, "switch", string(f[2]))
							w.Kick()
						}
					}
				}
			}
			c.Close()
		}
		select {
		case <-w.p.stop:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// close ends the subscription (Pool.Close).
func (w *sentinelWatch) close() {
	if c := w.sub.Load(); c != nil {
		c.nc.Close()
	}
}

// retarget points the pool at the master's new address: the shared
// connections, the idle dedicated ones and those in use (pinned clients,
// the demoter's, control connections) to the old one are closed, so that
// every request in flight there fails with ErrUnavailable and every new
// one goes to addr.
func (p *Pool) retarget(addr, master string) {
	old := *p.addr.Load()
	p.fenced.Store(true)
	p.addr.Store(&addr)
	p.gen.Add(1)
	p.opts.Logger.Warn("upstream master moved (Sentinel failover): following it", "master", master, "from", old, "to", addr)
	err := errMoving
	msg := strings.Replace(err.Error(), ErrUnavailable.Error()+": ", "", 1)
	p.lastErr.Store(&msg)
	if p.up.Swap(false) {
		p.downSince.CompareAndSwap(0, time.Now().UnixNano())
	}
	p.idleMu.Lock()
	idle := p.idle
	p.idle = nil
	p.idleMu.Unlock()
	for _, c := range idle {
		c.Close()
	}
	p.live.Range(func(k, _ any) bool {
		k.(*Conn).nc.Close() // its owner sees an I/O error and closes it
		return true
	})
	for _, list := range p.shared {
		for i := range list {
			if m := list[i].Load(); m != nil {
				m.closeWith(err)
			}
		}
	}
	start := time.Now()
	n, uerr := p.unlinkRecent()
	if uerr != nil {
		p.opts.Logger.Error("after the failover, could not remove from the new master the keys demoted just before it; "+
			"a key demoted then, still held by the new master, may show its older value", "err", uerr, "removed", n)
	} else {
		p.opts.Logger.Info("after the failover, removed from the new master the keys demoted before it that replication had not removed",
			"keys", n, "elapsed", time.Since(start).Round(time.Millisecond))
	}
	p.fenced.Store(false)
	p.signalMoved()
}

// errMoving is the error of requests made while the pool follows a
// failover.
var errMoving = fmt.Errorf("%w: the master moved (Sentinel failover); reconnecting", ErrUnavailable)

// signalMoved wakes the reconnect loop, even from its backoff: the
// upstream has a new address.
func (p *Pool) signalMoved() {
	select {
	case p.moved <- struct{}{}:
	default:
	}
	p.noteBroken(nil)
}

// SentinelState is the Sentinel side of the link, for INFO.
type SentinelState struct {
	Master    string
	Sentinels int
	Failovers int64
	LastError string // the last failed attempt to find the master, if any
}

// SentinelInfo returns the Sentinel state; ok is false when the upstream
// is not given through Sentinel.
func (p *Pool) SentinelInfo() (s SentinelState, ok bool) {
	w := p.watch
	if w == nil {
		return s, false
	}
	s = SentinelState{Master: w.cfg.Master, Sentinels: len(w.cfg.Addrs), Failovers: w.failovers.Load()}
	if e := w.lastErr.Load(); e != nil {
		s.LastError = *e
	}
	return s, true
}
