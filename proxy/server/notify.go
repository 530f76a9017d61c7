package server

import (
	"strconv"
	"sync"

	"github.com/spillway/spillway/proxy/pubsub"
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

// events returns the client's notifier.
func (c *Client) events() Events { return Events{s: c.s, from: c} }
