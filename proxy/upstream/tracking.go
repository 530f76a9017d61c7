package upstream

import (
	"bytes"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/upstream/link"
)

// Client-side caching in upstream mode: the upstream tracks the keys a
// client reads on its pinned connection and sends the invalidations there,
// where the passthrough relay copies them to the client. What differs is
// client ids: the client names Spillway ids, the upstream knows its own.

// relayFix is a change the passthrough relay makes to the next frame
// whose first byte is first: with from nil it drops the frame, otherwise
// it replaces the first occurrence of from by to.
type relayFix struct {
	first    byte
	from, to []byte
}

// relayFixes is the queue of relayFix a passthrough client's commands
// left for the relay goroutine, applied in order: each to the first frame
// of its type that comes after the previous fix's. Commands add to it
// before they are sent, so their replies always find their fix. Frames
// pass without a lock while the queue is empty.
type relayFixes struct {
	n     atomic.Int32
	mu    sync.Mutex
	fixes []relayFix
}

// add queues fix.
func (q *relayFixes) add(fix relayFix) {
	q.mu.Lock()
	q.fixes = append(q.fixes, fix)
	q.n.Store(int32(len(q.fixes)))
	q.mu.Unlock()
}

// apply returns frame r as the queue's head fix changes it, and whether
// the fix drops it.
func (q *relayFixes) apply(r []byte) ([]byte, bool) {
	if q.n.Load() == 0 || len(r) == 0 {
		return r, false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.fixes) == 0 || r[0] != q.fixes[0].first {
		return r, false
	}
	fix := q.fixes[0]
	q.fixes = q.fixes[1:]
	q.n.Store(int32(len(q.fixes)))
	if fix.from == nil {
		return r, true
	}
	return bytes.Replace(r, fix.from, fix.to, 1), false
}

// redirIDs is one REDIRECT translation: the Spillway client id the client
// named and the upstream's id of that client's connection.
type redirIDs struct {
	sp, up string
}

// upClientTracking is CLIENT TRACKING, passed through on the client's
// pinned connection (the upstream tracks what it reads there). REDIRECT
// names a Spillway client; the upstream knows that client by its own id
// for the pinned connection the client is subscribed on, so the id is
// translated (and translated back in CLIENT GETREDIR and TRACKINGINFO
// replies). A client that is not in passthrough has no such connection:
// its id goes as it is, and the upstream refuses it as Redis refuses an
// unknown client.
func upClientTracking(c *client, args [][]byte) {
	for i := 2; i+1 < len(args); i++ {
		if !cstr.EqualFold(args[i], "redirect") {
			continue
		}
		id, ok := cstr.ParseInt(args[i+1])
		if !ok {
			break
		}
		var upID string
		var err error
		if addr, ok := c.f.passAddrs.Load(id); ok {
			upID, err = c.f.upstreamClientID(addr.(string))
		} else if t, ok := c.f.clients.Load(id); ok && t.(*client) != c {
			upID, err = c.f.redirectSink(t.(*client))
		} else {
			break
		}
		if err != nil {
			c.Err(link.ErrorReply(err))
			return
		}
		if upID != "" {
			c.redir = &redirIDs{sp: strconv.FormatInt(id, 10), up: upID}
			args = append([][]byte(nil), args...)
			args[i+1] = []byte(upID)
		}
		break
	}
	upPassthroughCommand(c, args)
}

// redirSink is the upstream connection of a client named by another's
// CLIENT TRACKING ... REDIRECT while it has no connection of its own
// upstream (it is not subscribed, nor in MONITOR or tracking itself): the
// upstream sends the redirected invalidations there, in the client's
// protocol, and a goroutine copies them to the client's socket, as Redis
// writes them to the redirect target.
type redirSink struct {
	conn *link.Conn
	upID string // the upstream's id of conn
}

// redirectSink returns the upstream id of target's sink, opening it on the
// first redirect to target ("" once target is closing: the upstream then
// refuses the id, as Redis refuses a client that is gone).
func (f *Front) redirectSink(target *client) (string, error) {
	target.sinkMu.Lock()
	defer target.sinkMu.Unlock()
	if s := target.sink; s != nil || target.sinkClosed {
		if s == nil {
			return "", nil
		}
		return s.upID, nil
	}
	conn, err := f.pool.Dial(target.w.Proto, f.defaultDB)
	if err != nil {
		return "", err
	}
	r, err := conn.Do("CLIENT", "ID")
	id, ok := link.IntReply(r)
	if err != nil || !ok {
		conn.Close()
		if err == nil {
			err = errors.New("upstream: CLIENT ID: " + link.ReplyText(r))
		}
		return "", err
	}
	s := &redirSink{conn: conn, upID: strconv.FormatInt(id, 10)}
	target.sink = s
	target.sinkOn.Store(true) // its socket writes now take wmu (WriteLock)
	go target.relaySink(conn)
	return s.upID, nil
}

// relaySink copies what the upstream sends on the sink to c's socket
// until either closes.
func (c *client) relaySink(conn *link.Conn) {
	for {
		r, err := conn.Read()
		if err != nil {
			return
		}
		c.wmu.Lock()
		n, werr := c.WriteSocket(r)
		c.wmu.Unlock()
		c.AddNetOut(int64(n))
		if werr != nil {
			conn.Close()
			return
		}
	}
}

// closeSink closes c's sink, if any, as c closes: the upstream then tells
// the redirecting clients their target is gone (tracking-redir-broken).
func (c *client) closeSink() {
	c.sinkMu.Lock()
	defer c.sinkMu.Unlock()
	c.sinkClosed = true
	if c.sink != nil {
		c.sink.conn.Close()
		c.sink = nil
	}
}

// upTrackingQuery is CLIENT GETREDIR and CLIENT TRACKINGINFO. On the
// connection tracking was enabled on, after a translated REDIRECT, the
// upstream's reply names the upstream id: the relay puts the Spillway id
// back (the reply's only integer of that value: GETREDIR's integer, or
// TRACKINGINFO's redirect field). Anywhere else it is forwarded as any
// command.
func upTrackingQuery(c *client, cmd *cmdtable.Command, args [][]byte) {
	switch {
	case c.passthrough && c.redir != nil:
		first := byte(':')
		if cmd.Name != "client|getredir" {
			first = '*'
			if c.w.Proto == 3 {
				first = '%'
			}
		}
		c.ptFixes.add(relayFix{
			first: first,
			from:  []byte(":" + c.redir.up + "\r\n"),
			to:    []byte(":" + c.redir.sp + "\r\n"),
		})
		c.upPassthroughCmd(cmd, args)
	case c.passthrough:
		c.upPassthroughCmd(cmd, args)
	case c.inMulti:
		c.upQueue(cmd, args)
	default:
		c.upForward(cmd, args)
	}
}
