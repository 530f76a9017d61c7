package tlsconf

import (
	"container/list"
	"crypto/rand"
	"crypto/tls"
	"sync"
	"time"
)

// The server's TLS session cache: Redis's tls-session-caching,
// tls-session-cache-size and tls-session-cache-timeout, which configure
// OpenSSL's server-side session cache (SSL_SESS_CACHE_SERVER, at most
// size sessions, each resumable for timeout seconds).
//
// Go's crypto/tls resumes sessions through tickets only (TLS 1.2 session
// tickets, TLS 1.3 PSK identities). With Config.WrapSession and
// UnwrapSession the ticket a client gets is not the encrypted session but
// a random 16-byte identifier of a session kept here: the server side is
// stateful, as OpenSSL's cache, so the size and the timeout bound what a
// client can resume. An unknown, evicted or expired identifier makes a
// full handshake.

// sessionIDLen is the length of the identifiers handed out as tickets.
const sessionIDLen = 16

// sessionCache holds the sessions of one configuration (a reload starts
// an empty cache, as Redis's reload makes a new SSL_CTX). Safe for
// concurrent use.
type sessionCache struct {
	size    int           // at most this many sessions; 0: no limit (OpenSSL's 0)
	timeout time.Duration // a session is resumable this long after it was stored
	now     func() time.Time

	mu    sync.Mutex
	byID  map[[sessionIDLen]byte]*list.Element
	order *list.List // of *cachedSession, oldest first
}

// cachedSession is one stored session: its identifier, its serialized
// state (tls.SessionState.Bytes) and when it was stored.
type cachedSession struct {
	id    [sessionIDLen]byte
	state []byte
	added time.Time
}

// newSessionCache returns an empty cache of size sessions (0: unbounded)
// resumable for timeoutSec seconds.
func newSessionCache(size, timeoutSec int) *sessionCache {
	return &sessionCache{
		size: size, timeout: time.Duration(timeoutSec) * time.Second, now: time.Now,
		byID: map[[sessionIDLen]byte]*list.Element{}, order: list.New(),
	}
}

// install makes c the session store of cfg (a server configuration).
func (c *sessionCache) install(cfg *tls.Config) {
	cfg.WrapSession = c.wrap
	cfg.UnwrapSession = c.unwrap
}

// wrap stores ss and returns its identifier, the ticket the client gets.
// The oldest sessions make room when the cache is full.
func (c *sessionCache) wrap(_ tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
	state, err := ss.Bytes()
	if err != nil {
		return nil, err
	}
	s := &cachedSession{state: state}
	if _, err := rand.Read(s.id[:]); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s.added = c.now()
	c.expireLocked(s.added)
	for c.size > 0 && c.order.Len() >= c.size {
		c.removeLocked(c.order.Front())
	}
	c.byID[s.id] = c.order.PushBack(s)
	return append([]byte(nil), s.id[:]...), nil
}

// unwrap returns the session a ticket names: nil (a full handshake) when
// the ticket is not one of the cache's identifiers, or its session was
// evicted or has expired.
func (c *sessionCache) unwrap(ticket []byte, _ tls.ConnectionState) (*tls.SessionState, error) {
	if len(ticket) != sessionIDLen {
		return nil, nil
	}
	id := [sessionIDLen]byte(ticket)
	c.mu.Lock()
	el, ok := c.byID[id]
	if !ok {
		c.mu.Unlock()
		return nil, nil
	}
	s := el.Value.(*cachedSession)
	if c.now().Sub(s.added) >= c.timeout {
		c.removeLocked(el)
		c.mu.Unlock()
		return nil, nil
	}
	state := s.state
	c.mu.Unlock()
	ss, err := tls.ParseSessionState(state)
	if err != nil {
		return nil, nil // not resumable: a full handshake
	}
	return ss, nil
}

// expireLocked drops the sessions stored more than the timeout before now
// (they are in the order stored, so from the front).
func (c *sessionCache) expireLocked(now time.Time) {
	for el := c.order.Front(); el != nil; el = c.order.Front() {
		if now.Sub(el.Value.(*cachedSession).added) < c.timeout {
			return
		}
		c.removeLocked(el)
	}
}

func (c *sessionCache) removeLocked(el *list.Element) {
	delete(c.byID, el.Value.(*cachedSession).id)
	c.order.Remove(el)
}

// Len returns the number of sessions held (expired ones not yet dropped
// included).
func (c *sessionCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
