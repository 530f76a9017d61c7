package upstream

import (
	"errors"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/upstream/link"
)

// SLOWLOG in upstream mode. The upstream logs the commands it runs; the
// commands Spillway alone answers (AUTH, HELLO, ACL SETUSER, CLIENT ...:
// localOnly) are logged in Spillway's own slow log (server.Conn.CountLocal),
// and SLOWLOG GET and LEN show both, newest first, as one redis-server
// would. The upstream's entries made by Spillway's internal connections
// (the demoter's reads, control requests) are left out, found by their
// client address (link.Pool.IsInternal).
//
// The upstream's log holds slowlogHeadroom more entries than
// slowlog-max-len (applySlowlogLen), so that Spillway's own entries, left
// out, never push a client's out of the last slowlog-max-len; CONFIG GET
// slowlog-max-len reads Spillway's value.
//
// Both logs stamp seconds, too coarse to interleave them, so each local
// entry is anchored when it is logged: Spillway asks the upstream for its
// newest entry's ID on its control connection (SLOWLOG GET 1, itself an
// internal entry, left out), and the local entry is newer than every
// upstream entry up to that ID. Entries keep the ID their log gave them.

// slowAnchors maps a local slow log entry's ID to its anchor: the newest
// upstream entry ID when it was logged (-1: the upstream's log was empty).
type slowAnchors struct {
	mu sync.Mutex
	m  map[int64]int64
}

// ownConn is a connection of Spillway's own for requests no client made
// (slow log anchors, MONITOR markers): an internal one but not a control
// connection, so that its commands stay out of the slow log (ownEntry)
// and out of MONITOR.
type ownConn struct {
	mu   sync.Mutex
	conn *link.Conn
}

// do sends args and hands the reply to read (valid during the call).
func (o *ownConn) do(f *Front, args []string, read func(r []byte)) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.conn == nil {
		c, err := f.pool.DialInternal(2, f.defaultDB)
		if err != nil {
			return err
		}
		o.conn = c
	}
	o.conn.SetDeadline(time.Now().Add(10 * time.Second))
	r, err := o.conn.Do(args...)
	if err != nil {
		o.conn.Close()
		o.conn = nil
		return err
	}
	read(r)
	return nil
}

// maxAnchors bounds the anchors kept (the oldest local entries' go first;
// slowlog-max-len is at most what a log holds in practice).
const maxAnchors = 4096

func (a *slowAnchors) put(id, anchor int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[int64]int64{}
	}
	a.m[id] = anchor
	for old := id - maxAnchors; len(a.m) > maxAnchors; old-- {
		delete(a.m, old)
	}
}

func (a *slowAnchors) get(id int64) (int64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.m[id]
	return v, ok
}

func (a *slowAnchors) reset() {
	a.mu.Lock()
	a.m = nil
	a.mu.Unlock()
}

// slowlogHeadroom is how many more entries the upstream's slow log holds
// than slowlog-max-len: room for the entries of Spillway's own requests
// (the demoter's reads, slow log anchors), which SLOWLOG leaves out. With
// slowlog-log-slower-than 0 every one of them is logged; without the room
// one landing between a client's commands pushed the oldest of them out
// of a log of slowlog-max-len, and SLOWLOG GET showed one entry less than
// redis-server would.
const slowlogHeadroom = 128

// applySlowlogLen sets the upstream's slowlog-max-len to Spillway's plus
// slowlogHeadroom, on Spillway's own connection (its slow log entry is
// left out). At start and after each CONFIG SET of it; an upstream that
// cannot be asked keeps its value until then.
func (f *Front) applySlowlogLen() {
	v, _ := f.cfg.Value("slowlog-max-len")
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return
	}
	n = min(n, math.MaxInt64-slowlogHeadroom) + slowlogHeadroom
	var rerr error
	err = f.own.do(f, []string{"CONFIG", "SET", "slowlog-max-len", strconv.FormatInt(n, 10)}, func(r []byte) {
		if link.IsError(r) {
			rerr = errors.New(link.ReplyText(r))
		}
	})
	if err = errors.Join(err, rerr); err != nil {
		f.log.Warn("cannot set the upstream's slowlog-max-len: Spillway's own slow log entries may push clients' out", "err", err)
	}
}

// anchorLocal anchors local slow log entry id (slowAnchors).
func (f *Front) anchorLocal(id int64) {
	var entries []slowEntry
	var perr error
	err := f.own.do(f, []string{"SLOWLOG", "GET", "1"}, func(r []byte) {
		if link.IsError(r) {
			perr = errors.New(link.ReplyText(r))
			return
		}
		entries, perr = parseSlowEntries(r)
	})
	if err != nil || perr != nil {
		return // unanchored: shown after the upstream's entries
	}
	anchor := int64(-1)
	if len(entries) > 0 {
		anchor = entries[0].id
	}
	f.slowAnchors.put(id, anchor)
}

// slowEntry is a SLOWLOG GET entry: its ID, and its reply bytes.
type slowEntry struct {
	id  int64
	raw []byte
}

// parseSlowEntries reads a SLOWLOG GET reply (RESP2 or RESP3: arrays).
func parseSlowEntries(b []byte) ([]slowEntry, error) {
	p := respParser{b: b}
	n := p.array()
	var out []slowEntry
	for i := 0; i < n && p.err == nil; i++ {
		start := p.b
		if p.array() != 6 {
			p.err = errors.New("not a slow log entry")
			break
		}
		e := slowEntry{id: p.integer()}
		p.integer()
		p.integer()
		for k := p.array(); k > 0 && p.err == nil; k-- {
			p.bulk()
		}
		p.bulk()
		p.bulk()
		e.raw = start[:len(start)-len(p.b)]
		out = append(out, e)
	}
	return out, p.err
}

// entryAddr returns the client address field of an entry's reply bytes.
func entryAddr(raw []byte) string {
	p := respParser{b: raw}
	p.array()
	p.integer()
	p.integer()
	p.integer()
	for k := p.array(); k > 0 && p.err == nil; k-- {
		p.bulk()
	}
	return p.bulk()
}

// ownEntry reports whether an upstream entry of client address addr is a
// request Spillway made for itself: an internal connection's, but for the
// control connections, which carry clients' requests (CONFIG SET, INFO...).
func (f *Front) ownEntry(addr string) bool {
	if !f.pool.IsInternal([]byte(addr)) {
		return false
	}
	_, ctl := f.ctlAddrs.Load(addr)
	return !ctl
}

// mergedSlowlog returns the merged log, newest first, at most max entries
// (-1: all), or the reply to send instead (an error).
func (c *client) mergedSlowlog(max int64) ([]slowEntry, bool) {
	r, err := c.ctlDo(c.DB(), [][]byte{[]byte("SLOWLOG"), []byte("GET"), []byte("-1")})
	if err != nil {
		c.Err(link.ErrorReply(err))
		return nil, false
	}
	if link.IsError(r) {
		c.CountErrorReply()
		c.w.Raw(r)
		return nil, false
	}
	up, err := parseSlowEntries(r)
	if err != nil {
		c.Err("ERR spillway: the upstream's SLOWLOG GET reply: " + err.Error())
		return nil, false
	}
	mark := c.w.Len()
	c.Call(c.f.slowlogGet, [][]byte{[]byte("SLOWLOG"), []byte("GET"), []byte("-1")})
	local, err := parseSlowEntries(c.w.Buf[mark:])
	for i := range local {
		local[i].raw = append([]byte(nil), local[i].raw...)
	}
	c.w.Truncate(mark)
	if err != nil {
		c.Err("ERR spillway: SLOWLOG GET: " + err.Error())
		return nil, false
	}
	v, _ := c.f.cfg.Value("slowlog-max-len")
	limit, _ := strconv.ParseInt(v, 10, 64)
	if max < 0 || max > limit {
		max = limit
	}
	return mergeSlow(up, local, c.f.slowAnchors.get, c.f.ownEntry, max), true
}

// mergeSlow merges the upstream's entries up and Spillway's local ones
// (each newest first) into at most max entries, newest first: the
// upstream's made by Spillway itself (own, by client address) are left
// out, and a local entry comes before every upstream entry whose ID is at
// most its anchor (an unanchored one after all of them).
func mergeSlow(up, local []slowEntry, anchor func(id int64) (int64, bool), own func(addr string) bool, max int64) []slowEntry {
	var out []slowEntry
	i, j := 0, 0
	for int64(len(out)) < max && (i < len(up) || j < len(local)) {
		if i < len(up) && own(entryAddr(up[i].raw)) {
			i++ // Spillway's own request, not a client's
			continue
		}
		takeLocal := i == len(up)
		if !takeLocal && j < len(local) {
			a, ok := anchor(local[j].id)
			takeLocal = ok && a >= up[i].id
		}
		if takeLocal {
			out = append(out, local[j])
			j++
		} else {
			out = append(out, up[i])
			i++
		}
	}
	return out
}

// upSlowlogGet is SLOWLOG GET [count]: the merged log.
func upSlowlogGet(c *client, args [][]byte) {
	count := int64(10)
	if len(args) > 3 {
		c.Call(c.f.slowlogGet, args) // Redis's error
		return
	}
	if len(args) == 3 {
		n, ok := cstr.ParseInt(args[2])
		if !ok || n < -1 {
			c.Call(c.f.slowlogGet, args) // Redis's error
			return
		}
		count = n
	}
	entries, ok := c.mergedSlowlog(count)
	if !ok {
		return
	}
	c.w.Array(len(entries))
	for _, e := range entries {
		c.w.Raw(e.raw)
	}
}

// upSlowlogLen is SLOWLOG LEN: the merged log's length.
func upSlowlogLen(c *client, _ [][]byte) {
	if entries, ok := c.mergedSlowlog(-1); ok {
		c.w.Int(int64(len(entries)))
	}
}

// upSlowlogReset is SLOWLOG RESET: both logs.
func upSlowlogReset(c *client, args [][]byte) {
	mark := c.w.Len()
	c.Call(c.f.slowlogReset, args)
	c.f.slowAnchors.reset()
	if c.replyOK(mark) {
		r, err := c.ctlDo(c.DB(), args)
		c.upstreamVerdict(mark, r, err)
	}
}

// slowlogTable registers the SLOWLOG subcommands the front answers.
func (f *Front) slowlogTable(lookup func(string) *cmdtable.Command, local func(string, localHandler)) {
	f.slowlogGet = f.srv.Handler(lookup("slowlog|get"))
	f.slowlogReset = f.srv.Handler(lookup("slowlog|reset"))
	local("slowlog|get", upSlowlogGet)
	local("slowlog|len", upSlowlogLen)
	local("slowlog|reset", upSlowlogReset)
}
