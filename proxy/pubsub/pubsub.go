// Package pubsub is the registry of Spillway's Pub/Sub subscriptions:
// channels (SUBSCRIBE), glob patterns (PSUBSCRIBE) and shard channels
// (SSUBSCRIBE), with Redis 7.0's semantics for a server not in cluster
// mode. A Hub routes published messages to its subscribers and answers the
// PUBSUB introspection subcommands.
//
// The Hub does no I/O: a Subscriber's Deliver queues the message for its
// connection. Publish holds the Hub's read lock while it delivers, so once
// an Unsubscribe returns, no message for what it removed is delivered any
// more. Lock order: a caller's own locks (the server's engine lock
// included), then the Hub's lock, then whatever Deliver takes; the Hub
// never calls out while holding its lock except to Deliver and to the
// callbacks of UnsubscribeAll.
package pubsub

import (
	"sync"
	"sync/atomic"

	"github.com/spillway/spillway/proxy/cstr"
)

// Kind says which command delivered a Message.
type Kind uint8

const (
	// KindMessage is a PUBLISH to a channel the subscriber subscribed to:
	// pushed as ["message", channel, payload].
	KindMessage Kind = iota
	// KindPMessage is a PUBLISH to a channel matching a subscribed pattern:
	// pushed as ["pmessage", pattern, channel, payload].
	KindPMessage
	// KindSMessage is an SPUBLISH to a subscribed shard channel: pushed as
	// ["smessage", channel, payload].
	KindSMessage
)

// Message is one delivery. Its slices belong to the publisher and are only
// valid during the Deliver call.
type Message struct {
	Kind    Kind
	Pattern []byte // the matching pattern (KindPMessage only)
	Channel []byte
	Payload []byte
	// Sender is the subscriber that published the message through
	// PublishFrom or SPublishFrom, nil otherwise. When it is the
	// subscriber Deliver is called on, Deliver runs on the goroutine that
	// called PublishFrom: the sender's own.
	Sender Subscriber
}

// Subscriber receives messages. Deliver must not block (it runs while the
// publisher may hold the server's engine lock and holds the Hub's read
// lock), must not call back into the Hub, and must not keep m or its
// slices. It may be called from several goroutines at once.
type Subscriber interface {
	Deliver(m *Message)
}

// Space is one of the three subscription namespaces.
type Space uint8

const (
	// Channels are SUBSCRIBE's channels.
	Channels Space = iota
	// Patterns are PSUBSCRIBE's glob patterns.
	Patterns
	// Shard are SSUBSCRIBE's shard channels.
	Shard
)

// Hub holds every subscription of a server. It is safe for concurrent use.
type Hub struct {
	mu       sync.RWMutex
	channels map[string]*group
	shard    map[string]*group
	patterns map[string]*group
	// patList holds the patterns' groups for Publish to scan (a slice
	// scans faster than a map); each group knows its index.
	patList []*group
	subs    map[Subscriber]*subscriptions
	active  atomic.Bool
}

// New returns an empty Hub.
func New() *Hub {
	return &Hub{
		channels: map[string]*group{},
		shard:    map[string]*group{},
		patterns: map[string]*group{},
		subs:     map[Subscriber]*subscriptions{},
	}
}

// group is the subscribers of one channel, pattern or shard channel.
type group struct {
	name    []byte
	members []Subscriber
	// pos indexes members once the group is large (removal in O(1)).
	pos map[Subscriber]int
	idx int // position in Hub.patList (patterns only)
}

// groupIndexAt is the size from which a group keeps an index of members.
const groupIndexAt = 32

func (g *group) add(s Subscriber) {
	g.members = append(g.members, s)
	if g.pos != nil {
		g.pos[s] = len(g.members) - 1
	} else if len(g.members) >= groupIndexAt {
		g.pos = make(map[Subscriber]int, len(g.members)*2)
		for i, m := range g.members {
			g.pos[m] = i
		}
	}
}

// remove takes s out of g (order is not kept: Redis's own order among
// the subscribers of a channel is not observable).
func (g *group) remove(s Subscriber) {
	i := -1
	if g.pos != nil {
		if j, ok := g.pos[s]; ok {
			i = j
			delete(g.pos, s)
		}
	} else {
		for j, m := range g.members {
			if m == s {
				i = j
				break
			}
		}
	}
	if i < 0 {
		return
	}
	last := len(g.members) - 1
	if i != last {
		g.members[i] = g.members[last]
		if g.pos != nil {
			g.pos[g.members[i]] = i
		}
	}
	g.members[last] = nil
	g.members = g.members[:last]
}

// subscriptions are one subscriber's, as Redis keeps them per client: a
// dict of channels, a list of patterns (in subscription order) and a dict
// of shard channels.
type subscriptions struct {
	channels map[string]struct{}
	patterns []string
	shard    map[string]struct{}
}

func (ss *subscriptions) empty() bool {
	return len(ss.channels) == 0 && len(ss.patterns) == 0 && len(ss.shard) == 0
}

// count is the number Redis reports in a confirmation in space sp:
// channels plus patterns for SUBSCRIBE and PSUBSCRIBE, shard channels for
// SSUBSCRIBE.
func (ss *subscriptions) count(sp Space) int {
	if ss == nil {
		return 0
	}
	if sp == Shard {
		return len(ss.shard)
	}
	return len(ss.channels) + len(ss.patterns)
}

func (ss *subscriptions) hasPattern(p string) int {
	for i, x := range ss.patterns {
		if x == p {
			return i
		}
	}
	return -1
}

// table returns the Hub's map of space sp.
func (h *Hub) table(sp Space) map[string]*group {
	switch sp {
	case Patterns:
		return h.patterns
	case Shard:
		return h.shard
	}
	return h.channels
}

// updateActive refreshes Active. The caller holds h.mu for writing.
func (h *Hub) updateActive() {
	h.active.Store(len(h.channels) > 0 || len(h.patList) > 0)
}

// Active reports, without locking, whether Publish could reach anyone:
// some client subscribes to a channel or a pattern. Keyspace notifications
// use it to skip building messages nobody receives.
func (h *Hub) Active() bool { return h.active.Load() }

// Subscribe subscribes s to name in space sp. It reports whether s was
// not subscribed to it yet, and returns the count Redis puts in the
// confirmation: s's channels plus patterns, or for Shard its shard
// channels.
func (h *Hub) Subscribe(s Subscriber, sp Space, name []byte) (added bool, count int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ss := h.subs[s]
	if ss == nil {
		ss = &subscriptions{channels: map[string]struct{}{}, shard: map[string]struct{}{}}
		h.subs[s] = ss
	}
	key := string(name)
	switch sp {
	case Patterns:
		if ss.hasPattern(key) >= 0 {
			return false, ss.count(sp)
		}
		ss.patterns = append(ss.patterns, key)
	case Shard:
		if _, ok := ss.shard[key]; ok {
			return false, ss.count(sp)
		}
		ss.shard[key] = struct{}{}
	default:
		if _, ok := ss.channels[key]; ok {
			return false, ss.count(sp)
		}
		ss.channels[key] = struct{}{}
	}
	tab := h.table(sp)
	g := tab[key]
	if g == nil {
		g = &group{name: []byte(key)}
		tab[key] = g
		if sp == Patterns {
			g.idx = len(h.patList)
			h.patList = append(h.patList, g)
		}
	}
	g.add(s)
	h.updateActive()
	return true, ss.count(sp)
}

// Unsubscribe unsubscribes s from name in space sp. It reports whether s
// was subscribed to it, and returns the count after, as Subscribe does.
func (h *Hub) Unsubscribe(s Subscriber, sp Space, name []byte) (removed bool, count int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ss := h.subs[s]
	if ss == nil {
		return false, 0
	}
	removed = h.unsubscribeLocked(s, ss, sp, string(name))
	count = ss.count(sp)
	if ss.empty() {
		delete(h.subs, s)
	}
	return removed, count
}

// unsubscribeLocked removes s's subscription to key in sp from both
// sides. The caller holds h.mu for writing.
func (h *Hub) unsubscribeLocked(s Subscriber, ss *subscriptions, sp Space, key string) bool {
	switch sp {
	case Patterns:
		i := ss.hasPattern(key)
		if i < 0 {
			return false
		}
		copy(ss.patterns[i:], ss.patterns[i+1:])
		ss.patterns[len(ss.patterns)-1] = ""
		ss.patterns = ss.patterns[:len(ss.patterns)-1]
	case Shard:
		if _, ok := ss.shard[key]; !ok {
			return false
		}
		delete(ss.shard, key)
	default:
		if _, ok := ss.channels[key]; !ok {
			return false
		}
		delete(ss.channels, key)
	}
	tab := h.table(sp)
	g := tab[key]
	if g == nil {
		return true
	}
	g.remove(s)
	if len(g.members) == 0 {
		delete(tab, key)
		if sp == Patterns {
			last := len(h.patList) - 1
			moved := h.patList[last]
			h.patList[g.idx] = moved
			moved.idx = g.idx
			h.patList[last] = nil
			h.patList = h.patList[:last]
		}
	}
	h.updateActive()
	return true
}

// UnsubscribeAll unsubscribes s from everything in space sp, calling fn
// (if not nil) after each removal with the name and the count after it,
// in Redis's order: patterns in subscription order, channels and shard
// channels in no particular order (Redis's is a hash table's). fn runs
// under the Hub's lock and must not call into the Hub. It returns the
// number removed.
func (h *Hub) UnsubscribeAll(s Subscriber, sp Space, fn func(name []byte, count int)) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	ss := h.subs[s]
	if ss == nil {
		return 0
	}
	var names []string
	switch sp {
	case Patterns:
		names = append(names, ss.patterns...)
	case Shard:
		for k := range ss.shard {
			names = append(names, k)
		}
	default:
		for k := range ss.channels {
			names = append(names, k)
		}
	}
	for _, k := range names {
		h.unsubscribeLocked(s, ss, sp, k)
		if fn != nil {
			fn([]byte(k), ss.count(sp))
		}
	}
	if ss.empty() {
		delete(h.subs, s)
	}
	return len(names)
}

// Drop removes every subscription of s (a disconnect, RESET) without
// notifications.
func (h *Hub) Drop(s Subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ss := h.subs[s]
	if ss == nil {
		return
	}
	for k := range ss.channels {
		h.unsubscribeLocked(s, ss, Channels, k)
	}
	for len(ss.patterns) > 0 {
		h.unsubscribeLocked(s, ss, Patterns, ss.patterns[len(ss.patterns)-1])
	}
	for k := range ss.shard {
		h.unsubscribeLocked(s, ss, Shard, k)
	}
	delete(h.subs, s)
}

// AnyOf reports whether fn is true of one of s's subscriptions: a channel
// or shard channel (isPattern false) or a pattern (true). fn must not call
// back into the Hub.
func (h *Hub) AnyOf(s Subscriber, fn func(name []byte, isPattern bool) bool) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	ss := h.subs[s]
	if ss == nil {
		return false
	}
	for _, p := range ss.patterns {
		if fn([]byte(p), true) {
			return true
		}
	}
	for _, m := range []map[string]struct{}{ss.channels, ss.shard} {
		for k := range m {
			if fn([]byte(k), false) {
				return true
			}
		}
	}
	return false
}

// Counts returns how many channels, patterns and shard channels s
// subscribes to (CLIENT LIST's sub=, psub=, ssub=).
func (h *Hub) Counts(s Subscriber) (channels, patterns, shard int) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	ss := h.subs[s]
	if ss == nil {
		return 0, 0, 0
	}
	return len(ss.channels), len(ss.patterns), len(ss.shard)
}

// Publish delivers message to the subscribers of channel, then to the
// subscribers of every pattern matching it (one delivery per matching
// pattern), and returns the number of deliveries: PUBLISH's reply. It
// never blocks on a subscriber and takes no lock of the caller's; it may
// be called from any goroutine, the engine's lock held or not.
func (h *Hub) Publish(channel, message []byte) int {
	return h.publish(nil, channel, message)
}

// PublishFrom is Publish on behalf of a subscriber, called from that
// subscriber's own goroutine (its connection's command loop): every
// delivery carries Message.Sender, so the delivery to sender itself can
// go among its own replies, where Redis puts it (before the command's
// reply, inside EXEC's array).
func (h *Hub) PublishFrom(sender Subscriber, channel, message []byte) int {
	return h.publish(sender, channel, message)
}

// msgPool recycles the Message a publish hands to Deliver (it would
// otherwise escape to the heap on every publish).
var msgPool = sync.Pool{New: func() any { return new(Message) }}

func (h *Hub) publish(sender Subscriber, channel, message []byte) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	g := h.channels[string(channel)]
	if g == nil && len(h.patList) == 0 {
		return 0
	}
	m := msgPool.Get().(*Message)
	*m = Message{Kind: KindMessage, Channel: channel, Payload: message, Sender: sender}
	n := 0
	if g != nil {
		for _, s := range g.members {
			s.Deliver(m)
		}
		n += len(g.members)
	}
	if len(h.patList) > 0 {
		m.Kind = KindPMessage
		for _, g := range h.patList {
			if !cstr.Match(g.name, channel, false) {
				continue
			}
			m.Pattern = g.name
			for _, s := range g.members {
				s.Deliver(m)
			}
			n += len(g.members)
		}
	}
	*m = Message{}
	msgPool.Put(m)
	return n
}

// Recipients calls fn with each subscriber that a Publish of channel (sp
// Channels: the channel's subscribers, then those of every matching
// pattern) or an SPublish (sp Shard) would deliver to now, once per
// delivery, and stops when fn returns false. fn runs under the Hub's read
// lock: it must not block or call into the Hub.
func (h *Hub) Recipients(sp Space, channel []byte, fn func(Subscriber) bool) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if g := h.table(sp)[string(channel)]; g != nil {
		for _, s := range g.members {
			if !fn(s) {
				return
			}
		}
	}
	if sp != Channels {
		return
	}
	for _, g := range h.patList {
		if !cstr.Match(g.name, channel, false) {
			continue
		}
		for _, s := range g.members {
			if !fn(s) {
				return
			}
		}
	}
}

// SPublish delivers message to the subscribers of shard channel channel
// and returns their number: SPUBLISH's reply. Like Publish, it never
// blocks.
func (h *Hub) SPublish(channel, message []byte) int {
	return h.spublish(nil, channel, message)
}

// SPublishFrom is SPublish by a subscriber (see PublishFrom).
func (h *Hub) SPublishFrom(sender Subscriber, channel, message []byte) int {
	return h.spublish(sender, channel, message)
}

func (h *Hub) spublish(sender Subscriber, channel, message []byte) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	g := h.shard[string(channel)]
	if g == nil {
		return 0
	}
	m := msgPool.Get().(*Message)
	*m = Message{Kind: KindSMessage, Channel: channel, Payload: message, Sender: sender}
	for _, s := range g.members {
		s.Deliver(m)
	}
	*m = Message{}
	msgPool.Put(m)
	return len(g.members)
}

// Names returns the channels (sp Channels) or shard channels (sp Shard)
// that have subscribers, those matching pattern when hasPattern (Redis's
// stringmatchlen, case-sensitive): PUBSUB CHANNELS and SHARDCHANNELS. The
// order is unspecified, as in Redis. For sp Patterns it returns the
// subscribed patterns.
func (h *Hub) Names(sp Space, pattern []byte, hasPattern bool) [][]byte {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out [][]byte
	for _, g := range h.table(sp) {
		if hasPattern && !cstr.Match(pattern, g.name, false) {
			continue
		}
		out = append(out, g.name) // never modified once created
	}
	return out
}

// NumSub returns the number of subscribers of channel name in space sp
// (PUBSUB NUMSUB with Channels, SHARDNUMSUB with Shard).
func (h *Hub) NumSub(sp Space, name []byte) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if g := h.table(sp)[string(name)]; g != nil {
		return len(g.members)
	}
	return 0
}

// Len returns the number of distinct channels, patterns or shard channels
// with at least one subscriber (INFO's pubsub_channels, pubsub_patterns,
// pubsubshard_channels; PUBSUB NUMPAT for Patterns).
func (h *Hub) Len(sp Space) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.table(sp))
}
