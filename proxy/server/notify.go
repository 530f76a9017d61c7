package server

import (
	"bytes"
	"strconv"
	"sync"
	"time"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/pubsub"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/tracking"
	"github.com/spillway/spillway/tiering"
)

// Keyspace notifications (notify-keyspace-events), embedded mode, as Redis
// 7.0's notify.c: a command that changes a key publishes
// "__keyspace@<db>__:<key>" with the event name as the message (class K)
// and "__keyevent@<db>__:<event>" with the key as the message (class E),
// in that order, if the event's class is enabled. Handlers call notify
// where Redis calls notifyKeyspaceEvent, in the same order; expired keys
// and evicted keys are reported by the tiering engine's observer
// (keyEvent). Demoting a key to disk is not an eviction: "evicted" is sent
// only when the memory budget cannot be met and maxmemory-policy evicts
// (Server.SetOutOfMemory).
//
// Cost: with notifications off a call is one atomic load (the setting)
// and returns; with them on but nobody subscribed, one more atomic load
// (pubsub.Hub.Active). Neither allocates. A call for a change also adds
// one to the dirty counter (INFO rdb_changes_since_last_save, info.go):
// Redis increments it where it notifies.

// NotifyClass is a set of notification classes: Redis's NOTIFY_* flags,
// bit for bit (config.Config.NotifyKeyspaceClasses).
type NotifyClass uint16

const (
	NotifyKeyspace NotifyClass = 1 << iota // K
	NotifyKeyevent                         // E
	NotifyGeneric                          // g
	NotifyString                           // $
	NotifyList                             // l
	NotifySet                              // s
	NotifyHash                             // h
	NotifyZSet                             // z
	NotifyExpired                          // x
	NotifyEvicted                          // e
	NotifyStream                           // t
	NotifyKeyMiss                          // m
	_                                      // (Redis's NOTIFY_LOADED: modules only)
	NotifyModule                           // d
	NotifyNew                              // n
)

// notifyFlags returns the enabled classes (one atomic load: the setting
// is parsed when it is set); 0 when notifications are off.
func (s *Server) notifyFlags() NotifyClass {
	return NotifyClass(s.cfg.NotifyKeyspaceClasses())
}

// notifyEnabled reports whether an event of class would be published now:
// the class is enabled with K or E, in embedded mode, and someone
// subscribes to something. Handlers use it to skip work only an event
// needs (whether a key is new, ...).
func (s *Server) notifyEnabled(class NotifyClass) bool {
	f := s.notifyFlags()
	return f&class != 0 && f&(NotifyKeyspace|NotifyKeyevent) != 0 && s.fwd == nil &&
		s.pubsub != nil && s.pubsub.Active()
}

// notify publishes event (of class) on key in the client's current
// database, as Redis's notifyKeyspaceEvent. A subscribed client gets its
// own events where Redis puts them among its replies.
func (c *Client) notify(class NotifyClass, event string, key []byte) {
	c.s.countChange(c, class, key)
	if c.s.notifyFlags() == 0 {
		return
	}
	c.s.publishKeyEvent(c, c.db, class, event, key)
}

// notifyIn is notify for a key in database db (MOVE, COPY ... DB).
func (c *Client) notifyIn(db int, class NotifyClass, event string, key []byte) {
	c.s.countChange(c, class, key)
	if c.s.notifyFlags() == 0 {
		return
	}
	c.s.publishKeyEvent(c, db, class, event, key)
}

// NotifyKeyMiss publishes "keymiss" (class m) for a read of a missing key.
func (c *Client) notifyKeyMiss(key []byte) { c.notify(NotifyKeyMiss, "keymiss", key) }

// notifyNewKey publishes "new" (class n) when created is set.
func (c *Client) notifyNewKey(created bool, key []byte) {
	if created {
		c.notify(NotifyNew, "new", key)
	}
}

// NotifyExpired publishes "expired" (class x) for key, which the engine
// deleted because its time to live passed (hot or cold, by a lookup or
// the sweeper). It is called by the engine's observer, under the engine's
// lock, on no client's behalf.
func (s *Server) notifyExpired(db int, key []byte) {
	if s.notifyFlags() == 0 {
		return
	}
	s.publishKeyEvent(nil, db, NotifyExpired, "expired", key)
}

// notifyWantsExpired reports whether expired events are enabled, so the
// engine's key events must be observed (see updateObserving).
func (s *Server) notifyWantsExpired() bool {
	f := s.notifyFlags()
	return f&(NotifyExpired|NotifyEvicted) != 0 && f&(NotifyKeyspace|NotifyKeyevent) != 0 && s.fwd == nil
}

// initNotify hooks notifications to the configuration: after CONFIG SET
// notify-keyspace-events the engine's observer is switched on if expired
// events are now wanted, and updateObserving is re-run (it turns it off
// again when nothing needs it). Call it once, before serving.
func (s *Server) initNotify() {
	if s.engine == nil {
		return
	}
	if s.notifyWantsExpired() {
		s.engine.SetObserving(true)
	}
	s.cfg.OnChange("notify-keyspace-events", func(string) {
		// On at once if wanted, so that the commands after CONFIG SET
		// are observed. CONFIG SET may run inside EXEC, holding the
		// engine's lock, so updateObserving (which turns the observer
		// off when nothing needs it) runs from another goroutine.
		if s.notifyWantsExpired() {
			s.engine.SetObserving(true)
		}
		go s.refreshObserving()
	})
}

// refreshObserving runs updateObserving under the engine's lock.
func (s *Server) refreshObserving() {
	s.engine.View(func(*tiering.Tx) error {
		s.updateObserving()
		return nil
	})
}

// notifyBufs recycles the buffers messages are built in: the Hub does not
// keep a message past Publish.
var notifyBufs = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledNotifyBuf bounds the buffers kept for reuse.
const maxPooledNotifyBuf = 64 << 10

// publishKeyEvent publishes event on key in database db, if its class is
// enabled, on behalf of from (nil: no client, or a client whose reply
// buffer is not this goroutine's to write).
func (s *Server) publishKeyEvent(from *Client, db int, class NotifyClass, event string, key []byte) {
	f := s.notifyFlags()
	if f&class == 0 || f&(NotifyKeyspace|NotifyKeyevent) == 0 || s.fwd != nil {
		return
	}
	h := s.pubsub
	if h == nil || !h.Active() {
		return
	}
	var sender pubsub.Subscriber
	if from != nil && from.out != nil {
		sender = from.out
	}
	bp := notifyBufs.Get().(*[]byte)
	b := (*bp)[:0]
	if f&NotifyKeyspace != 0 {
		b = appendNotifyChannel(b, "__keyspace@", db, key)
		n := len(b)
		b = append(b, event...)
		publish(h, sender, b[:n], b[n:])
	}
	if f&NotifyKeyevent != 0 {
		b = appendNotifyChannel(b[:0], "__keyevent@", db, bytesOfString(event))
		n := len(b)
		b = append(b, key...)
		publish(h, sender, b[:n], b[n:])
	}
	if cap(b) <= maxPooledNotifyBuf {
		*bp = b
		notifyBufs.Put(bp)
	}
}

// appendNotifyChannel appends "<prefix><db>__:<name>".
func appendNotifyChannel(b []byte, prefix string, db int, name []byte) []byte {
	b = append(b, prefix...)
	b = strconv.AppendInt(b, int64(db), 10)
	b = append(b, "__:"...)
	return append(b, name...)
}

func publish(h *pubsub.Hub, sender pubsub.Subscriber, channel, message []byte) {
	if sender != nil {
		h.PublishFrom(sender, channel, message)
	} else {
		h.Publish(channel, message)
	}
}

// Events publishes keyspace events on behalf of from (nil: no client's
// reply buffer may be written, see publishKeyEvent): pops run by a pushing
// client for the clients it serves use it.
type Events struct {
	s    *Server
	from *Client
}

// Notify publishes event (of class) on key in database db.
func (k Events) Notify(db int, class NotifyClass, event string, key []byte) {
	k.s.countChange(k.from, class, key)
	if k.s.notifyFlags() == 0 {
		return
	}
	k.s.publishKeyEvent(k.from, db, class, event, key)
}

// Propagate records args (in database db) for the replication stream, as
// what a blocked client's pop propagates (BLPOP served as LPOP...); call it
// under the lock, as Run is.
func (k Events) Propagate(db int, args ...[]byte) {
	if k.s.repl.Active() {
		k.s.prop.Add(db, args...)
	}
}

// Replicating reports whether Propagate records anything (a replica
// attached once); check it before building arguments.
func (k Events) Replicating() bool { return k.s.repl.Active() }

// events returns the client's notifier.
func (c *Client) events() Events { return Events{s: c.s, from: c} }

// Client-side caching (CLIENT TRACKING), embedded mode, as Redis 7.0's
// tracking.c; the table is proxy/tracking's. The engine's observer
// (keyEvent) invalidates each key a transaction modifies, deletes or
// expires; FLUSHDB and FLUSHALL invalidate everything (trackFlush);
// SWAPDB, as in Redis 7.0, nothing. A read command of a tracking client
// remembers its keys under the lock it read them with (withLock), so no
// write slips between the read and the remembering. Invalidations for the
// client whose command makes them (trkCur) wait until its reply
// (trkPending, trackAfter); others are pushed at once (pushAsync), and a
// tracking client's queue holds them while it runs a command, so they
// never overtake the reply of a read. BCAST keys are broadcast after each
// command and by the tracking cron, which also enforces
// tracking-table-max-keys, as Redis's serverCron, every 100 ms.
//
// Cost without tracking clients: one atomic load per command (execute).

// initTracking follows tracking-table-max-keys.
func (s *Server) initTracking() {
	set := func(v string) {
		n, _ := strconv.ParseInt(v, 10, 64)
		s.trkMaxKey.Store(n)
	}
	v, _ := s.cfg.Value("tracking-table-max-keys")
	set(v)
	s.cfg.OnChange("tracking-table-max-keys", set)
}

// startTrackingCron starts, once, the goroutine doing serverCron's share
// of tracking every 100 ms: the table's limit, and BCAST keys modified on
// no client's command (the expiry sweeper's).
func (s *Server) startTrackingCron() {
	s.trkCron.Do(func() {
		go func() {
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-s.done:
					return
				case <-t.C:
				}
				if !s.trk.Active() {
					continue
				}
				s.trk.Limit(s.trkMaxKey.Load(), nil, func(tc *tracking.Client, key []byte) {
					s.sendTracking(nil, nil, tc, [][]byte{key}, false)
				})
				s.trk.Broadcast(func(tc *tracking.Client, keys [][]byte) { s.sendTracking(nil, nil, tc, keys, false) })
			}
		}()
	})
}

// trackModified invalidates key, which the transaction holding the lock
// modified (ev): the engine's observer calls it (under the lock).
func (s *Server) trackModified(key []byte, ev tiering.KeyEvent) {
	cur := s.trkCur
	var current, modifier *tracking.Client
	if cur != nil {
		current = cur.trk
		if ev != tiering.KeyExpired {
			modifier = cur.trk // an expiry is on no client's behalf
		}
	}
	s.trk.Invalidate(key, modifier, current, func(tc *tracking.Client) {
		if cur != nil && tc == cur.trk {
			cur.trkPending = append(cur.trkPending, bytes.Clone(key))
			return
		}
		s.sendTracking(nil, nil, tc, [][]byte{key}, false)
	})
}

// trackFlush tells every tracking client that all its keys are invalid
// (FLUSHDB, FLUSHALL; under the lock) and empties the table.
func (s *Server) trackFlush() {
	cur := s.trkCur
	s.trk.FlushAll(func(tc *tracking.Client) {
		if cur != nil && tc == cur.trk {
			cur.trkPending = append(cur.trkPending, nil)
			return
		}
		s.sendTracking(nil, nil, tc, nil, true)
	})
}

// trackBefore runs before each command while a client tracks: the table's
// limit (its invalidations for c come before the reply, as in Redis) and,
// for a tracking client, holding what others push until its reply.
func (c *Client) trackBefore() {
	s := c.s
	s.trk.Limit(s.trkMaxKey.Load(), c.trk, func(tc *tracking.Client, key []byte) {
		s.sendTracking(c, &c.w, tc, [][]byte{key}, false)
	})
	if c.trk.On() && c.out != nil {
		c.out.holdDeliveries()
	}
}

// trackAfter runs after each command while a client tracks, after its
// reply: the invalidations the command made for c, the BCAST broadcast,
// and the end of CLIENT CACHING's effect.
func (c *Client) trackAfter() {
	s := c.s
	if p := c.trkPending; p != nil {
		c.trkPending = nil
		for _, k := range p {
			s.sendTracking(c, &c.w, c.trk, [][]byte{k}, k == nil)
		}
	}
	s.trk.Broadcast(func(tc *tracking.Client, keys [][]byte) { s.sendTracking(c, &c.w, tc, keys, false) })
	if c.trk.Caching() {
		cmd := c.lastCmd.Load()
		s.trk.EndCommand(c.trk, c.multi.active || cmd != nil && (cmd.Name == "client" || cmd.Parent() != nil && cmd.Parent().Name == "client"))
	}
}

// rememberRead remembers the keys of the client's running command (a
// tracking client's, trkCmd) if it is a read; under the engine's lock.
func (c *Client) rememberRead() {
	cmd := c.trkCmd
	switch {
	case !cmd.Is(cmdtable.FlagReadonly), cmd.Is(cmdtable.FlagPubSub):
	case cmd.Name == "eval_ro", cmd.Name == "evalsha_ro", cmd.Name == "fcall_ro":
		// They remember their keys when their script reads (Call).
	default:
		c.rememberKeys(cmd, c.trkArgs)
	}
}

// rememberKeys remembers the key arguments of cmd (args) for c.
func (c *Client) rememberKeys(cmd *cmdtable.Command, args [][]byte) {
	if !c.trk.RemembersReads() {
		return
	}
	var buf [8]int
	pos, _ := cmd.KeyPositions(args, buf[:0])
	keys := make([][]byte, len(pos))
	for i, p := range pos {
		keys[i] = args[p]
	}
	c.s.trk.Remember(c.trk, keys)
}

// sendTracking is sendTrackingMessage: it tells tc's client that keys
// (all keys, if null) are invalid, or sends it "tracking-redir-broken" if
// its redirection client is gone. A push to self (the client whose
// replies the caller writes, or nil) goes to selfW; others are pushed to.
func (s *Server) sendTracking(self *Client, selfW *resp.Writer, tc *tracking.Client, keys [][]byte, null bool) {
	c := s.clientByID(tc.ID())
	if c == nil {
		return
	}
	dst, redirected := c, false
	if id := tc.Redirect(); id != 0 {
		if dst = s.clientByID(id); dst == nil || !dst.pushable() {
			tc.MarkBroken()
			if c.protoVer.Load() > 2 {
				w := resp.Writer{Proto: 3}
				w.Push(2)
				w.BulkString("tracking-redir-broken")
				w.Int(id)
				s.pushTo(self, selfW, c, w.Buf)
			}
			return
		}
		redirected = true
	}
	w := resp.Writer{Proto: int(dst.protoVer.Load())}
	switch {
	case w.Proto > 2:
		w.Push(2)
		w.BulkString("invalidate")
	case redirected && dst.nSub.Load()+dst.nPSub.Load()+dst.nSSub.Load() > 0:
		w.Push(3)
		w.BulkString("message")
		w.BulkString("__redis__:invalidate")
	default:
		return // RESP2 has no pushes
	}
	if null {
		nw := resp.Writer{Proto: int(c.protoVer.Load())} // as Redis: the tracker's null
		nw.Null()
		w.Raw(nw.Buf)
	} else {
		w.Array(len(keys))
		for _, k := range keys {
			w.Bulk(k)
		}
	}
	s.pushTo(self, selfW, dst, w.Buf)
}

// pushTo appends b to selfW if dst is self, else pushes it to dst.
func (s *Server) pushTo(self *Client, selfW *resp.Writer, dst *Client, b []byte) {
	if dst == self {
		selfW.Raw(b)
		return
	}
	dst.pushAsync(b)
}

// pushable reports whether the client takes pushes (it is not closing).
func (c *Client) pushable() bool {
	c.pushMu.Lock()
	defer c.pushMu.Unlock()
	return !c.gone
}

// clientByID returns the connected client id, or nil.
func (s *Server) clientByID(id int64) *Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients[id]
}

// endTracking turns tracking off for a client that is gone (its
// goroutine has ended; no lock is held).
func (c *Client) endTracking() {
	if c.trk.On() {
		c.s.trk.Disable(c.trk)
		c.s.refreshObserving()
	}
}
