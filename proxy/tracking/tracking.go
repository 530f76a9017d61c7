// Package tracking is the server side of client-side caching, as Redis
// 7.0's tracking.c: the table of keys to the clients that may hold them in
// a local cache, the BCAST prefixes with the keys modified under each
// since the last broadcast, and each client's tracking state (CLIENT
// TRACKING's options, CLIENT CACHING, the redirection).
//
// The package decides who must be told what; it sends nothing. Its
// callers (the server) deliver the invalidation messages: a RESP3 push to
// the client, or to the client it redirects to, or a Pub/Sub message on
// "__redis__:invalidate" to a RESP2 redirection client.
//
// Like Redis's table, keys are global (not per database), a client is
// stored by id, and the ids of clients that stopped tracking or went away
// are dropped lazily, when their keys are invalidated.
//
// A Table is safe for concurrent use: every method takes its mutex. The
// callbacks a method is given run under that mutex and must not call back
// into the Table. A Client's fields are written only by the goroutine of
// the connection it describes, under the Table's mutex (Enable, Disable,
// SetCaching), so that goroutine reads them without the mutex and others
// read them in callbacks; Broken is the one exception (atomic).
package tracking

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/spillway/spillway/proxy/cstr"
)

// Flags are CLIENT TRACKING's options a client holds.
type Flags uint8

const (
	BCast  Flags = 1 << iota // BCAST: told of every key under its prefixes
	OptIn                    // OPTIN: keys are remembered after CLIENT CACHING yes
	OptOut                   // OPTOUT: keys are remembered unless CLIENT CACHING no
	NoLoop                   // NOLOOP: not told of its own modifications
)

// Client is one connection's tracking state.
type Client struct {
	id       int64
	on       bool
	flags    Flags
	caching  bool  // CLIENT CACHING yes|no given for the next command
	redirect int64 // client id invalidations go to (0: the client itself)
	prefixes map[string]struct{}
	broken   atomic.Bool // the redirection client has gone away
}

// NewClient returns the (off) tracking state of connection id.
func NewClient(id int64) *Client { return &Client{id: id} }

// ID returns the connection's id.
func (c *Client) ID() int64 { return c.id }

// On reports whether tracking is on (false for a nil Client).
func (c *Client) On() bool { return c != nil && c.on }

// Has reports whether tracking is on with all of flags.
func (c *Client) Has(f Flags) bool { return c.on && c.flags&f == f }

// Redirect returns the client id invalidations go to: 0 for the client
// itself (Redis's client_tracking_redirection).
func (c *Client) Redirect() int64 { return c.redirect }

// MarkBroken records that the redirection client is gone (the
// broken_redirect flag); any goroutine may call it.
func (c *Client) MarkBroken() { c.broken.Store(true) }

// RemembersReads reports whether the keys of the client's next read
// command are remembered: tracking on, not BCAST, and OPTIN with CLIENT
// CACHING yes, OPTOUT without CLIENT CACHING no, or neither mode.
func (c *Client) RemembersReads() bool {
	if !c.on || c.flags&BCast != 0 {
		return false
	}
	return !(c.flags&OptIn != 0 && !c.caching || c.flags&OptOut != 0 && c.caching)
}

// Caching reports whether CLIENT CACHING was given for the next command.
func (c *Client) Caching() bool { return c.caching }

// Info returns CLIENT TRACKINGINFO's values for c: the flags, the
// redirection (-1 when off) and the BCAST prefixes, sorted.
func (t *Table) Info(c *Client) (flags []string, redirect int64, prefixes []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	flags = []string{"off"}
	redirect = -1
	if c.on {
		flags[0], redirect = "on", c.redirect
	}
	if c.flags&BCast != 0 {
		flags = append(flags, "bcast")
	}
	if c.flags&OptIn != 0 {
		flags = append(flags, "optin")
		if c.caching {
			flags = append(flags, "caching-yes")
		}
	}
	if c.flags&OptOut != 0 {
		flags = append(flags, "optout")
		if c.caching {
			flags = append(flags, "caching-no")
		}
	}
	if c.flags&NoLoop != 0 {
		flags = append(flags, "noloop")
	}
	if c.on && c.broken.Load() {
		flags = append(flags, "broken_redirect")
	}
	for p := range c.prefixes {
		prefixes = append(prefixes, p)
	}
	slices.Sort(prefixes)
	return flags, redirect, prefixes
}

// Redirection returns CLIENT GETREDIR's and CLIENT LIST's redir: the
// redirection (0: none), -1 when tracking is off.
func (t *Table) Redirection(c *Client) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !c.On() {
		return -1
	}
	return c.redirect
}

// ListFlags returns CLIENT LIST's tracking flags for c: t (tracking), R
// (broken redirection), B (BCAST), in Redis's order.
func (t *Table) ListFlags(c *Client) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !c.On() {
		return ""
	}
	f := "t"
	if c.broken.Load() {
		f += "R"
	}
	if c.flags&BCast != 0 {
		f += "B"
	}
	return f
}

// Error is a Redis error reply (without the leading '-').
type Error string

func (e Error) Error() string { return string(e) }

const errSyntax = Error("ERR syntax error")

// Options is a parsed CLIENT TRACKING.
type Options struct {
	On       bool
	Redirect int64
	Flags    Flags
	Prefixes []string
}

// Parse parses CLIENT TRACKING's arguments (args[0] is "client", args[1]
// "tracking", args[2] on|off) with Redis's checks in Redis's order: the
// options first (exists tells whether REDIRECT's client id is connected),
// then on|off.
func Parse(args [][]byte, exists func(id int64) bool) (Options, error) {
	var o Options
	if len(args) < 3 {
		return o, Error("ERR wrong number of arguments for 'client|tracking' command")
	}
	for j := 3; j < len(args); j++ {
		more := j < len(args)-1
		switch a := args[j]; {
		case more && cstr.EqualFold(a, "redirect"):
			j++
			if o.Redirect != 0 {
				return o, Error("ERR A client can only redirect to a single other client")
			}
			id, ok := cstr.ParseInt(args[j])
			if !ok {
				return o, Error("ERR value is not an integer or out of range")
			}
			o.Redirect = id
			if !exists(id) {
				return o, Error("ERR The client ID you want redirect to does not exist")
			}
		case cstr.EqualFold(a, "bcast"):
			o.Flags |= BCast
		case cstr.EqualFold(a, "optin"):
			o.Flags |= OptIn
		case cstr.EqualFold(a, "optout"):
			o.Flags |= OptOut
		case cstr.EqualFold(a, "noloop"):
			o.Flags |= NoLoop
		case more && cstr.EqualFold(a, "prefix"):
			j++
			o.Prefixes = append(o.Prefixes, string(args[j]))
		default:
			return o, errSyntax
		}
	}
	switch {
	case cstr.EqualFold(args[2], "on"):
		o.On = true
	case cstr.EqualFold(args[2], "off"):
	default:
		return o, errSyntax
	}
	return o, nil
}

// Table is the tracking table (see the package comment).
type Table struct {
	mu sync.Mutex
	// keys maps a key to the ids of the clients that may cache it.
	keys map[string]map[int64]struct{}
	// items is the number of ids across keys (tracking_total_items).
	items int
	// prefixes are the BCAST prefixes in use.
	prefixes map[string]*bcastState
	// clients are the clients with tracking on, by id.
	clients map[int64]*Client
	// active is len(clients), size len(keys), read without the mutex.
	active atomic.Int32
	size   atomic.Int64
	// pending: a BCAST prefix has modified keys to broadcast.
	pending atomic.Bool
	// effortRuns counts Limit's consecutive runs that stayed over the
	// limit (Redis's timeout_counter): each run tries 100 more keys.
	effortRuns atomic.Int64
}

// bcastState is a prefix's clients and the keys modified under it since
// the last broadcast, each with the client that modified it last (nil: a
// deletion on no client's behalf, an expiry).
type bcastState struct {
	keys    map[string]*Client
	clients map[*Client]struct{}
}

// NewTable returns an empty table.
func NewTable() *Table {
	return &Table{
		keys:     map[string]map[int64]struct{}{},
		prefixes: map[string]*bcastState{},
		clients:  map[int64]*Client{},
	}
}

// Active reports whether any client has tracking on: one atomic load, the
// cost of tracking on a server where nobody uses it.
func (t *Table) Active() bool { return t.active.Load() > 0 }

// Enable turns tracking on for c with o (o.On), after Redis's checks of
// the options against each other and against c's current state; it
// changes nothing if one fails. overlap is the error of a BCAST prefix
// overlapping another given after it, other than the first: Redis
// 7.0.15 then replies that error and still enables tracking (and replies
// OK), and so does the caller.
func (t *Table) Enable(c *Client, o Options) (overlap, err error) {
	bcast := o.Flags&BCast != 0
	switch {
	case !bcast && len(o.Prefixes) > 0:
		return nil, Error("ERR PREFIX option requires BCAST mode to be enabled")
	case c.on && (c.flags&BCast != 0) != bcast:
		return nil, Error("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
	case bcast && o.Flags&(OptIn|OptOut) != 0:
		return nil, Error("ERR OPTIN and OPTOUT are not compatible with BCAST")
	case o.Flags&OptIn != 0 && o.Flags&OptOut != 0:
		return nil, Error("ERR You can't specify both OPTIN mode and OPTOUT mode")
	case o.Flags&OptIn != 0 && c.flags&OptOut != 0 || o.Flags&OptOut != 0 && c.flags&OptIn != 0:
		return nil, Error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
	}
	if bcast {
		if overlap, err = c.checkPrefixes(o.Prefixes); err != nil {
			return nil, err
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !c.on {
		c.on = true
		t.clients[c.id] = c
		t.active.Add(1)
	}
	c.broken.Store(false)
	c.flags = o.Flags & (OptIn | OptOut | NoLoop)
	c.redirect = o.Redirect
	if bcast {
		c.flags |= BCast
		if len(o.Prefixes) == 0 {
			t.addPrefixLocked(c, "")
		}
		for _, p := range o.Prefixes {
			t.addPrefixLocked(c, p)
		}
	}
	return overlap, nil
}

// checkPrefixes is Redis's checkPrefixCollisionsOrReply: a new prefix
// must not be a prefix of, nor start with, one the client has or one
// given after it. A new prefix overlapping a later one, other than the
// first, is Redis's quirk: reported, not refused (see Enable).
func (c *Client) checkPrefixes(ps []string) (overlap, err error) {
	for i, p := range ps {
		for q := range c.prefixes {
			if overlaps(q, p) {
				return nil, Error("ERR Prefix '" + cstr.CString(p) + "' overlaps with an existing prefix '" +
					cstr.CString(q) + "'. Prefixes for a single client must not overlap.")
			}
		}
		for _, q := range ps[i+1:] {
			if overlaps(p, q) {
				e := Error("ERR Prefix '" + cstr.CString(p) + "' overlaps with another provided prefix '" +
					cstr.CString(q) + "'. Prefixes for a single client must not overlap.")
				if i == 0 {
					return nil, e
				}
				return e, nil
			}
		}
	}
	return nil, nil
}

// bytesOf returns s's bytes, not copied (read only).
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// overlaps reports whether one of a and b starts with the other.
func overlaps(a, b string) bool {
	n := min(len(a), len(b))
	return a[:n] == b[:n]
}

func (t *Table) addPrefixLocked(c *Client, p string) {
	bs := t.prefixes[p]
	if bs == nil {
		bs = &bcastState{keys: map[string]*Client{}, clients: map[*Client]struct{}{}}
		t.prefixes[p] = bs
	}
	if _, ok := bs.clients[c]; ok {
		return
	}
	bs.clients[c] = struct{}{}
	if c.prefixes == nil {
		c.prefixes = map[string]struct{}{}
	}
	c.prefixes[p] = struct{}{}
}

// Disable turns tracking off for c (CLIENT TRACKING off, RESET, a closed
// connection): it leaves its BCAST prefixes and clears every option. The
// keys it read stay in the table until they are invalidated.
func (t *Table) Disable(c *Client) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for p := range c.prefixes {
		bs := t.prefixes[p]
		delete(bs.clients, c)
		if len(bs.clients) == 0 {
			delete(t.prefixes, p)
		}
	}
	c.prefixes = nil
	if c.on {
		delete(t.clients, c.id)
		t.active.Add(-1)
	}
	c.on, c.flags, c.caching, c.redirect = false, 0, false, 0
	c.broken.Store(false)
}

// SetCaching is CLIENT CACHING yes (yes) or no: it returns Redis's error
// when the client's mode does not allow it.
func (t *Table) SetCaching(c *Client, yes bool) error {
	switch {
	case !c.on:
		return Error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
	case yes && c.flags&OptIn == 0:
		return Error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
	case !yes && c.flags&OptOut == 0:
		return Error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
	}
	t.mu.Lock()
	c.caching = true
	t.mu.Unlock()
	return nil
}

// EndCommand forgets CLIENT CACHING after the command that follows it
// (or after that transaction), as Redis's resetClient: keep is set for
// CLIENT commands and inside MULTI.
func (t *Table) EndCommand(c *Client, keep bool) {
	if c.caching && !keep {
		t.mu.Lock()
		c.caching = false
		t.mu.Unlock()
	}
}

// Remember records that c may cache keys (it read them), if
// c.RemembersReads.
func (t *Table) Remember(c *Client, keys [][]byte) {
	if !c.RemembersReads() || len(keys) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, k := range keys {
		ids := t.keys[string(k)]
		if ids == nil {
			ids = map[int64]struct{}{}
			t.keys[string(k)] = ids
			t.size.Add(1)
		}
		if _, ok := ids[c.id]; !ok {
			ids[c.id] = struct{}{}
			t.items++
		}
	}
}

// Invalidate is trackingInvalidateKey for key, modified by modifier (nil:
// on no client's behalf, as an expiry) while current runs a command (nil:
// none; a NOLOOP client is not told of keys modified while it runs its
// own command). It calls send for each client to tell, forgets the key,
// and, when any client uses BCAST, notes the key under each matching
// prefix for the next Broadcast.
func (t *Table) Invalidate(key []byte, modifier, current *Client, send func(target *Client)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.prefixes) > 0 {
		for p, bs := range t.prefixes {
			if bytes.HasPrefix(key, bytesOf(p)) {
				bs.keys[string(key)] = modifier
				t.pending.Store(true)
			}
		}
	}
	t.invalidateLocked(string(key), current, send)
}

func (t *Table) invalidateLocked(key string, current *Client, send func(target *Client)) {
	ids, ok := t.keys[key]
	if !ok {
		return
	}
	for _, id := range sortedIDs(ids) {
		target := t.clients[id]
		if target == nil || target.flags&BCast != 0 {
			continue // gone, off, or switched to BCAST since
		}
		if target.flags&NoLoop != 0 && target == current {
			continue
		}
		send(target)
	}
	t.items -= len(ids)
	delete(t.keys, key)
	t.size.Add(-1)
}

func sortedIDs(ids map[int64]struct{}) []int64 {
	out := make([]int64, 0, len(ids))
	for id := range ids {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// FlushAll is trackingInvalidateKeysOnFlush (FLUSHDB, FLUSHALL): it calls
// send for every client with tracking on, in id order (each is told that
// all its keys are invalid), and empties the key table.
func (t *Table) FlushAll(send func(target *Client)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := make([]int64, 0, len(t.clients))
	for id := range t.clients {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		send(t.clients[id])
	}
	t.keys = map[string]map[int64]struct{}{}
	t.items = 0
	t.size.Store(0)
}

// Broadcast is trackingBroadcastInvalidationMessages: for each prefix
// with modified keys, it calls send with each of its clients and the
// keys, sorted (for a NOLOOP client, without those it modified last; not
// called if none remain), then forgets the keys.
func (t *Table) Broadcast(send func(target *Client, keys [][]byte)) {
	if !t.pending.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending.Store(false)
	names := make([]string, 0, len(t.prefixes))
	for p := range t.prefixes {
		names = append(names, p)
	}
	slices.Sort(names)
	for _, p := range names {
		bs := t.prefixes[p]
		if len(bs.keys) == 0 {
			continue
		}
		keys := make([]string, 0, len(bs.keys))
		for k := range bs.keys {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		clients := make([]*Client, 0, len(bs.clients))
		for c := range bs.clients {
			clients = append(clients, c)
		}
		slices.SortFunc(clients, func(a, b *Client) int { return int(a.id - b.id) })
		for _, c := range clients {
			var list [][]byte
			for _, k := range keys {
				if c.flags&NoLoop == 0 || bs.keys[k] != c {
					list = append(list, []byte(k))
				}
			}
			if len(list) > 0 {
				send(c, list)
			}
		}
		bs.keys = map[string]*Client{}
	}
}

// Limit is trackingLimitUsedSlots: while the table holds more than max
// keys (0: no limit), it invalidates keys picked at random, as if they
// were modified on no client's behalf (no BCAST), calling send(target,
// key) for each client to tell. A run gives up after 100 keys times the
// number of consecutive runs that could not get under the limit. current
// is the client whose command is about to run (nil: none), for NOLOOP.
func (t *Table) Limit(max int64, current *Client, send func(target *Client, key []byte)) {
	if max <= 0 {
		return
	}
	if t.size.Load() <= max {
		if t.effortRuns.Load() != 0 {
			t.effortRuns.Store(0)
		}
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if int64(len(t.keys)) <= max {
		t.effortRuns.Store(0)
		return
	}
	effort := 100 * (t.effortRuns.Load() + 1)
	for ; effort > 0 && len(t.keys) > 0; effort-- {
		key := t.randomKeyLocked()
		t.invalidateLocked(key, current, func(target *Client) { send(target, []byte(key)) })
		if int64(len(t.keys)) <= max {
			t.effortRuns.Store(0)
			return
		}
	}
	t.effortRuns.Add(1)
}

// randomKeyLocked returns one of the table's keys (Go's map order is
// randomized; the skip makes the pick independent of it).
func (t *Table) randomKeyLocked() string {
	skip := rand.IntN(min(len(t.keys), 16))
	for k := range t.keys {
		if skip == 0 {
			return k
		}
		skip--
	}
	return ""
}

// Stats are INFO's tracking figures.
type Stats struct {
	Clients, Keys, Items, Prefixes int
}

// Stats returns INFO's tracking figures.
func (t *Table) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return Stats{Clients: len(t.clients), Keys: len(t.keys), Items: t.items, Prefixes: len(t.prefixes)}
}

// WriteInfoStats writes INFO stats' tracking_total_keys,
// tracking_total_items and tracking_total_prefixes lines.
func (t *Table) WriteInfoStats(sb *strings.Builder) {
	st := t.Stats()
	for _, f := range []struct {
		name string
		v    int
	}{{"tracking_total_keys", st.Keys}, {"tracking_total_items", st.Items}, {"tracking_total_prefixes", st.Prefixes}} {
		sb.WriteString(f.name)
		sb.WriteByte(':')
		sb.WriteString(strconv.Itoa(f.v))
		sb.WriteString("\r\n")
	}
}
