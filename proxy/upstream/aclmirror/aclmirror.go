// Package aclmirror runs upstream mode's scripts as the client's ACL user:
// Spillway's users live in Spillway (proxy/acl), but a script's
// redis.call runs on the upstream, which knows only its own users. For a
// restricted Spillway user, a mirror user with the same permissions
// (named MirrorName) is created on the upstream with a password only
// Spillway knows, and the script runs on a connection logged in as it, so
// the upstream checks every redis.call (and answers redis.acl_check_cmd)
// for the client's rules.
//
// A mirror follows its user lazily: the rules it was made from are kept,
// and a script of a user whose rules changed since (ACL SETUSER, ACL
// LOAD) sets the mirror again first. Sweep deletes the mirrors of users
// gone (ACL DELUSER, ACL LOAD). Creating a mirror needs ACL SETUSER on the
// upstream for Spillway's own upstream user; a refusal fails the script,
// which never runs with Spillway's rights instead.
package aclmirror

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spillway/spillway/proxy/acl"
	"github.com/spillway/spillway/proxy/upstream/link"
)

// Prefix starts every mirror user's name on the upstream.
const Prefix = "spillway:"

// MirrorName is the upstream name of the mirror of the Spillway user name.
func MirrorName(name string) string { return Prefix + name }

// maxIdle bounds the idle connections kept per mirror, protocol and
// database.
const maxIdle = 4

// Needed reports whether u's scripts need a mirror: its rules do not
// allow everything (an unrestricted user's scripts run on Spillway's own
// connections, with the same result).
func Needed(u *acl.User) bool { return u != nil && !u.Rules().Unrestricted() }

// Mirrors is the set of mirror users one front keeps on its upstream. It
// is safe for concurrent use.
type Mirrors struct {
	pool    *link.Pool
	timeout time.Duration

	mu      sync.Mutex
	mirrors map[string]*mirror // by Spillway user name
}

// mirror is one Spillway user's mirror on the upstream.
type mirror struct {
	user *acl.User
	// rules are the user's rules the mirror was last set from, on addr
	// (a Sentinel failover moves the upstream: the new master needs it
	// too); nil until set.
	rules  *acl.Rules
	addr   string
	secret string
	idle   map[[2]int][]*link.Conn // by protocol and database
}

// New returns the mirrors of the upstream pool reaches: mirrors are set
// through its connections (logged in as Spillway's upstream user), and
// scripts' connections dialed with timeout.
func New(pool *link.Pool, timeout time.Duration) *Mirrors {
	return &Mirrors{pool: pool, timeout: timeout, mirrors: map[string]*mirror{}}
}

// Get returns a connection on db in proto logged in as u's mirror, set
// (or set again) on the upstream first when u's rules changed since. Give
// it back with Put, or Close it. The error is a reply text ("ERR ..."):
// the upstream refused the mirror (Spillway's upstream user lacks ACL
// SETUSER), or the upstream is unreachable.
func (m *Mirrors) Get(u *acl.User, proto, db int) (*link.Conn, error) {
	target := m.pool.Target()
	mi, rules, secret, stale := m.lookup(u, target)
	for attempt := 0; ; attempt++ {
		if stale || attempt > 0 {
			if err := m.setMirror(mi, u, rules, secret, target); err != nil {
				return nil, err
			}
		}
		if attempt == 0 {
			// An idle connection follows the mirror's new rules: the
			// upstream applies ACL SETUSER to its logged-in clients.
			if c := m.takeIdle(mi, proto, db); c != nil {
				return c, nil
			}
		}
		mt := target
		mt.Username, mt.Password = MirrorName(u.Name()), secret
		c, err := link.Dial(mt, proto, db, m.timeout)
		if err == nil {
			c.DB = db
			return c, nil
		}
		if errors.Is(err, link.ErrUnavailable) || attempt > 0 {
			return nil, fmt.Errorf("ERR spillway: the script's connection as ACL user '%s' failed: %v", u.Name(), err)
		}
		// The upstream lost the mirror (restarted, or an operator removed
		// it): set it again once.
	}
}

// lookup returns u's mirror (made if u has none yet), the rules it must
// have, its password, and whether the upstream's copy may differ (u's
// rules changed since it was set, or the upstream moved).
func (m *Mirrors) lookup(u *acl.User, target link.Target) (mi *mirror, rules *acl.Rules, secret string, stale bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mi = m.mirrors[u.Name()]
	if mi == nil || mi.user != u {
		if mi != nil {
			mi.closeIdle()
		}
		mi = &mirror{user: u, secret: newSecret(), idle: map[[2]int][]*link.Conn{}}
		m.mirrors[u.Name()] = mi
	}
	rules = u.Rules()
	if mi.addr != target.Addr {
		mi.closeIdle() // connected to the upstream before a failover
	}
	return mi, rules, mi.secret, mi.rules != rules || mi.addr != target.Addr
}

// setMirror sets mi (u's mirror) on the upstream with rules and secret,
// and records it.
func (m *Mirrors) setMirror(mi *mirror, u *acl.User, rules *acl.Rules, secret string, target link.Target) error {
	if err := m.set(u, rules, secret); err != nil {
		return err
	}
	m.mu.Lock()
	if m.mirrors[u.Name()] == mi {
		mi.rules, mi.addr = rules, target.Addr
	}
	m.mu.Unlock()
	return nil
}

// Login returns the upstream user name and password of u's mirror, set
// (or set again) on the upstream first when u's rules changed since: for
// a connection of the client's own (a transaction's, a subscriber's) to
// log in as it, or to follow u's current rules before it runs a script
// (the upstream applies ACL SETUSER to its logged-in clients). The error
// is a reply text, as Get's.
func (m *Mirrors) Login(u *acl.User) (user, password string, err error) {
	target := m.pool.Target()
	mi, rules, secret, stale := m.lookup(u, target)
	if stale {
		if err := m.setMirror(mi, u, rules, secret, target); err != nil {
			return "", "", err
		}
	}
	return MirrorName(u.Name()), secret, nil
}

// takeIdle returns an idle connection of mi on db in proto, or nil.
func (m *Mirrors) takeIdle(mi *mirror, proto, db int) *link.Conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := [2]int{proto, db}
	list := mi.idle[key]
	if len(list) == 0 {
		return nil
	}
	c := list[len(list)-1]
	mi.idle[key] = list[:len(list)-1]
	return c
}

// set makes the upstream's mirror of u have rules and the password secret.
func (m *Mirrors) set(u *acl.User, rules *acl.Rules, secret string) error {
	args := append([]string{"ACL", "SETUSER", MirrorName(u.Name()), "reset", "on", ">" + secret}, rules.SetUserOps()...)
	r, err := m.do(args)
	if err != nil {
		return fmt.Errorf("ERR spillway: cannot set the upstream's mirror of ACL user '%s' to run its script: %v", u.Name(), err)
	}
	if len(r) > 0 && (r[0] == '-' || r[0] == '!') {
		return fmt.Errorf("ERR spillway: the upstream refused the mirror of ACL user '%s' its script runs as "+
			"(Spillway's upstream user needs ACL SETUSER): %s", u.Name(), link.ReplyText(r))
	}
	return nil
}

// do runs one command on a connection of Spillway's own and returns its
// reply.
func (m *Mirrors) do(args []string) ([]byte, error) {
	c, err := m.pool.Get(2, 0)
	if err != nil {
		return nil, err
	}
	r, err := c.Do(args...)
	if err != nil {
		c.Close()
		return nil, err
	}
	r = append([]byte(nil), r...)
	m.pool.Put(c)
	return r, nil
}

// Put gives back a connection Get returned for u, idle for u's next
// script; a connection in excess, or of a mirror since replaced, is
// closed.
func (m *Mirrors) Put(u *acl.User, c *link.Conn) {
	m.mu.Lock()
	mi := m.mirrors[u.Name()]
	if mi != nil && mi.user == u {
		key := [2]int{c.Proto, c.DB}
		if list := mi.idle[key]; len(list) < maxIdle {
			mi.idle[key] = append(list, c)
			m.mu.Unlock()
			return
		}
	}
	m.mu.Unlock()
	c.Close()
}

// Sweep deletes the mirrors of the users reg no longer has (ACL DELUSER,
// or replaced by ACL LOAD) from the upstream, and closes their idle
// connections. The upstream's refusal is returned; the mirrors are
// forgotten anyway.
func (m *Mirrors) Sweep(reg *acl.Registry) error {
	m.mu.Lock()
	var gone []string
	for name, mi := range m.mirrors {
		if reg.Get(name) != mi.user {
			mi.closeIdle()
			delete(m.mirrors, name)
			gone = append(gone, MirrorName(name))
		}
	}
	m.mu.Unlock()
	if len(gone) == 0 {
		return nil
	}
	r, err := m.do(append([]string{"ACL", "DELUSER"}, gone...))
	if err == nil && len(r) > 0 && (r[0] == '-' || r[0] == '!') {
		err = errors.New(link.ReplyText(r))
	}
	if err != nil {
		return fmt.Errorf("deleting the upstream's ACL mirror users %v: %w", gone, err)
	}
	return nil
}

// Close closes every idle connection.
func (m *Mirrors) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mi := range m.mirrors {
		mi.closeIdle()
	}
}

func (mi *mirror) closeIdle() {
	for key, list := range mi.idle {
		for _, c := range list {
			c.Close()
		}
		delete(mi.idle, key)
	}
}

// newSecret is a mirror's password: 32 random bytes in hex.
func newSecret() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
