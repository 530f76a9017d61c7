package stream

import (
	"fmt"
	"sort"
)

// Consumer groups and their pending entries lists (PELs).
//
// A stream held whole keeps every PEL in memory (the group's and each
// consumer's, in ID order). A cold stream keeps only its groups and
// consumers with their counters: a pending entry is read from the Store
// when a command needs it (Pending: a point read; EachPending: a seek in
// ID order from the lowest ID still pending), so XACK costs a point read
// and the deletes, whatever the PEL's size. Both keep the counters the
// records persist (the group's count, lowest and highest ID; each
// consumer's count and lowest ID), written with every change.

// Group is a consumer group. EntriesRead is -1 when unknown.
type Group struct {
	Name        []byte
	LastID      ID
	EntriesRead int64
	pel         []*NACK     // by ID; nil when the stream is cold
	consumers   []*Consumer // by name
	pending     int64
	pelMin      ID // lowest pending ID (zero when none)
	pelMax      ID // highest pending ID (zero when none)
	dirty, gone bool
}

// Consumer is a consumer of a group, with its own pending entries.
type Consumer struct {
	Name     []byte
	SeenTime int64
	pel      []*NACK // by ID; nil when the stream is cold
	pending  int64
	pelMin   ID // lowest pending ID (zero when none)
	dirty    bool
	gone     bool
}

// NACK is a pending (delivered, not acknowledged) entry. Of a cold stream
// it is a copy read from the store: change it only through the Stream's
// methods, which write it back.
type NACK struct {
	ID            ID
	DeliveryTime  int64
	DeliveryCount int64
	Consumer      *Consumer
}

// PendingCount is the number of the group's pending entries.
func (g *Group) PendingCount() int64 { return g.pending }

// PendingBounds returns the lowest and highest pending IDs (zero when
// there are none).
func (g *Group) PendingBounds() (lo, hi ID) { return g.pelMin, g.pelMax }

// Consumers returns the group's consumers by name (do not modify).
func (g *Group) Consumers() []*Consumer { return g.consumers }

// PendingCount is the number of the consumer's pending entries.
func (c *Consumer) PendingCount() int64 { return c.pending }

// PendingMin is the consumer's lowest pending ID (zero when none).
func (c *Consumer) PendingMin() ID { return c.pelMin }

func searchPEL(pel []*NACK, id ID) int {
	return sort.Search(len(pel), func(i int) bool { return !Less(pel[i].ID, id) })
}

func insertPEL(pel []*NACK, n *NACK) []*NACK {
	i := searchPEL(pel, n.ID)
	pel = append(pel, nil)
	copy(pel[i+1:], pel[i:])
	pel[i] = n
	return pel
}

func removePEL(pel []*NACK, id ID) []*NACK {
	i := searchPEL(pel, id)
	if i < len(pel) && pel[i].ID == id {
		copy(pel[i:], pel[i+1:])
		pel[len(pel)-1] = nil
		pel = pel[:len(pel)-1]
	}
	return pel
}

// consumerByName returns g's consumer named name, or nil.
func (g *Group) consumerByName(name []byte) *Consumer {
	if i := g.searchConsumer(name); i < len(g.consumers) && string(g.consumers[i].Name) == string(name) {
		return g.consumers[i]
	}
	return nil
}

// Pending returns g's pending entry for id, or nil. Of a cold stream it
// is one point read of the store (none when id is outside the PEL's
// bounds).
func (s *Stream) Pending(g *Group, id ID) *NACK {
	if g.pending == 0 || Less(id, g.pelMin) || Less(g.pelMax, id) {
		return nil
	}
	if s.store == nil {
		if i := searchPEL(g.pel, id); i < len(g.pel) && g.pel[i].ID == id {
			return g.pel[i]
		}
		return nil
	}
	dt, dc, name, found, err := s.store.GetPending(g, id)
	if err != nil || !found {
		s.fail(err)
		return nil
	}
	c := g.consumerByName(name)
	if c == nil {
		s.fail(fmt.Errorf("stream: pending entry %v of group %q has no consumer %q", id, g.Name, name))
		return nil
	}
	return &NACK{ID: id, DeliveryTime: dt, DeliveryCount: dc, Consumer: c}
}

// EachPending calls fn for g's pending entries from start to end
// (inclusive) in ID order, or only consumer c's if c is not nil, until fn
// returns false. fn must not change the group: collect, then change. Of a
// cold stream it is a seek from the lowest ID still pending (start, if
// above it), then one step per entry (and, for a consumer's, one point
// read per entry).
func (s *Stream) EachPending(g *Group, c *Consumer, start, end ID, fn func(n *NACK) bool) {
	if g.pending == 0 || c != nil && c.pending == 0 {
		return
	}
	if s.store == nil {
		pel := g.pel
		if c != nil {
			pel = c.pel
		}
		for i := searchPEL(pel, start); i < len(pel) && !Less(end, pel[i].ID); i++ {
			if !fn(pel[i]) {
				return
			}
		}
		return
	}
	lo := g.pelMin
	if c != nil {
		lo = c.pelMin
	}
	if Less(lo, start) {
		lo = start
	}
	if Less(g.pelMax, end) {
		end = g.pelMax
	}
	if Less(end, lo) {
		return
	}
	s.fail(s.store.RangePending(g, c, lo, end, false, func(id ID, dt, dc int64, name []byte) bool {
		owner := c
		if owner == nil {
			if owner = g.consumerByName(name); owner == nil {
				s.fail(fmt.Errorf("stream: pending entry %v of group %q has no consumer %q", id, g.Name, name))
				return false
			}
		}
		return fn(&NACK{ID: id, DeliveryTime: dt, DeliveryCount: dc, Consumer: owner})
	}))
}

// pelEdge returns the first pending ID of g (c's if c is not nil) from
// 'from' onwards (rev: downwards), reading the store; ok false if none.
func (s *Stream) pelEdge(g *Group, c *Consumer, from ID, rev bool) (id ID, ok bool) {
	start, end := from, MaxID
	if rev {
		start, end = ID{}, from
	}
	s.fail(s.store.RangePending(g, c, start, end, rev, func(x ID, _, _ int64, _ []byte) bool {
		id, ok = x, true
		return false
	}))
	return id, ok
}

// addPending counts n in g's PEL.
func (s *Stream) addPending(g *Group, n *NACK) {
	if g.pending == 0 {
		g.pelMin, g.pelMax = n.ID, n.ID
	} else if Less(n.ID, g.pelMin) {
		g.pelMin = n.ID
	} else if Less(g.pelMax, n.ID) {
		g.pelMax = n.ID
	}
	g.pending++
	if s.store == nil {
		g.pel = insertPEL(g.pel, n)
		s.size += nackSize
	}
}

// removePending takes id out of g's PEL counters (and memory), finding
// the new lowest or highest ID when it was one of them.
func (s *Stream) removePending(g *Group, id ID) {
	g.pending--
	if s.store == nil {
		g.pel = removePEL(g.pel, id)
		s.size -= nackSize
	}
	switch {
	case g.pending <= 0:
		g.pending, g.pelMin, g.pelMax = 0, ID{}, ID{}
	case s.store == nil:
		g.pelMin, g.pelMax = g.pel[0].ID, g.pel[len(g.pel)-1].ID
	case id == g.pelMin:
		next, _ := Incr(id)
		if m, ok := s.pelEdge(g, nil, next, false); ok {
			g.pelMin = m
		}
	case id == g.pelMax:
		prev, _ := Decr(id)
		if m, ok := s.pelEdge(g, nil, prev, true); ok {
			g.pelMax = m
		}
	}
}

// addOwned counts n in c's PEL.
func (s *Stream) addOwned(c *Consumer, n *NACK) {
	if c.pending == 0 || Less(n.ID, c.pelMin) {
		c.pelMin = n.ID
	}
	c.pending++
	if s.store == nil {
		c.pel = insertPEL(c.pel, n)
	}
}

// removeOwned takes id out of c's PEL counters (and memory).
func (s *Stream) removeOwned(g *Group, c *Consumer, id ID) {
	c.pending--
	if s.store == nil {
		c.pel = removePEL(c.pel, id)
	}
	switch {
	case c.pending <= 0:
		c.pending, c.pelMin = 0, ID{}
	case s.store == nil:
		c.pelMin = c.pel[0].ID
	case id == c.pelMin:
		next, _ := Incr(id)
		if m, ok := s.pelEdge(g, c, next, false); ok {
			c.pelMin = m
		}
	}
}

// touchGroup notes that g's record must be written (Flush).
func (s *Stream) touchGroup(g *Group) {
	if !g.dirty {
		g.dirty = true
		s.dirtyG = append(s.dirtyG, g)
	}
}

// touchConsumer notes that c's record must be written (Flush).
func (s *Stream) touchConsumer(g *Group, c *Consumer) {
	if !c.dirty {
		c.dirty = true
		s.dirtyC = append(s.dirtyC, groupConsumer{g, c})
	}
}

type groupConsumer struct {
	g *Group
	c *Consumer
}

// Flush writes through the journal the group and consumer records the
// changes since the last Flush touched (last IDs, counters, seen times):
// once per command, however many entries it delivered or acknowledged.
// The engine calls it when the command closes the stream.
func (s *Stream) Flush() {
	for i, g := range s.dirtyG {
		if !g.gone {
			s.j.PutGroup(g)
		}
		g.dirty = false
		s.dirtyG[i] = nil
	}
	for i, gc := range s.dirtyC {
		if !gc.g.gone && !gc.c.gone {
			s.j.PutConsumer(gc.g, gc.c)
		}
		gc.c.dirty = false
		s.dirtyC[i] = groupConsumer{}
	}
	s.dirtyG, s.dirtyC = s.dirtyG[:0], s.dirtyC[:0]
}

// Groups returns the groups by name (do not modify).
func (s *Stream) Groups() []*Group { return s.groups }

func (s *Stream) searchGroup(name []byte) int {
	return sort.Search(len(s.groups), func(i int) bool { return string(s.groups[i].Name) >= string(name) })
}

// Group returns the group named name, or nil.
func (s *Stream) Group(name []byte) *Group {
	if i := s.searchGroup(name); i < len(s.groups) && string(s.groups[i].Name) == string(name) {
		return s.groups[i]
	}
	return nil
}

// CreateGroup adds a group; it returns nil if the name is taken.
func (s *Stream) CreateGroup(name []byte, last ID, entriesRead int64) *Group {
	i := s.searchGroup(name)
	if i < len(s.groups) && string(s.groups[i].Name) == string(name) {
		return nil
	}
	g := &Group{Name: append([]byte(nil), name...), LastID: last, EntriesRead: entriesRead}
	s.groups = append(s.groups, nil)
	copy(s.groups[i+1:], s.groups[i:])
	s.groups[i] = g
	s.size += 128 + int64(len(name))
	s.j.PutGroup(g)
	return g
}

// DestroyGroup removes a group, reporting whether it existed.
func (s *Stream) DestroyGroup(name []byte) bool {
	i := s.searchGroup(name)
	if i == len(s.groups) || string(s.groups[i].Name) != string(name) {
		return false
	}
	g := s.groups[i]
	g.gone = true
	s.j.DelGroup(g)
	s.size -= 128 + int64(len(name)) + int64(len(g.pel))*nackSize
	for _, c := range g.consumers {
		s.size -= consumerSize(c)
	}
	copy(s.groups[i:], s.groups[i+1:])
	s.groups[len(s.groups)-1] = nil
	s.groups = s.groups[:len(s.groups)-1]
	return true
}

// SetGroupID sets a group's last delivered ID and entries read (SETID).
func (s *Stream) SetGroupID(g *Group, last ID, entriesRead int64) {
	g.LastID, g.EntriesRead = last, entriesRead
	s.touchGroup(g)
}

const nackSize = 96

func consumerSize(c *Consumer) int64 { return 96 + int64(len(c.Name)) }

func (g *Group) searchConsumer(name []byte) int {
	return sort.Search(len(g.consumers), func(i int) bool { return string(g.consumers[i].Name) >= string(name) })
}

// Consumer returns the consumer named name, or nil. With touch its seen
// time becomes now (Redis's lookups without SLC_NO_REFRESH).
func (s *Stream) Consumer(g *Group, name []byte, touch bool, now int64) *Consumer {
	c := g.consumerByName(name)
	if c != nil && touch && c.SeenTime != now {
		c.SeenTime = now
		s.touchConsumer(g, c)
	}
	return c
}

// CreateConsumer adds a consumer seen now; it returns nil if it exists.
func (s *Stream) CreateConsumer(g *Group, name []byte, now int64) *Consumer {
	i := g.searchConsumer(name)
	if i < len(g.consumers) && string(g.consumers[i].Name) == string(name) {
		return nil
	}
	c := &Consumer{Name: append([]byte(nil), name...), SeenTime: now}
	g.consumers = append(g.consumers, nil)
	copy(g.consumers[i+1:], g.consumers[i:])
	g.consumers[i] = c
	s.size += consumerSize(c)
	s.j.PutConsumer(g, c)
	return c
}

// DeleteConsumer removes a consumer and its pending entries from the
// group; it returns how many entries it had pending. Of a cold stream it
// reads the consumer's pending index (one step per entry).
func (s *Stream) DeleteConsumer(g *Group, c *Consumer) int64 {
	n := c.pending
	var ids []ID
	s.EachPending(g, c, ID{}, MaxID, func(p *NACK) bool {
		ids = append(ids, p.ID)
		return true
	})
	for _, id := range ids {
		s.j.DelPending(g, id, nil) // the consumer's index goes with it below
		s.removePending(g, id)
	}
	s.size -= consumerSize(c)
	c.gone = true
	i := g.searchConsumer(c.Name)
	copy(g.consumers[i:], g.consumers[i+1:])
	g.consumers[len(g.consumers)-1] = nil
	g.consumers = g.consumers[:len(g.consumers)-1]
	s.j.DelConsumer(g, c)
	if n > 0 {
		s.touchGroup(g)
	}
	return n
}

// Ack removes id from the group's pending entries, reporting whether it
// was pending.
func (s *Stream) Ack(g *Group, id ID) bool {
	n := s.Pending(g, id)
	if n == nil {
		return false
	}
	s.j.DelPending(g, id, n.Consumer)
	s.removePending(g, id)
	if c := n.Consumer; c != nil {
		s.removeOwned(g, c, id)
		s.touchConsumer(g, c)
	}
	s.touchGroup(g)
	return true
}

// Deliver records that entry id was delivered to consumer c of g at now,
// as XREADGROUP with ">" does: the group's last ID and entries read
// advance, and unless noack the entry becomes pending for c (taken from
// another consumer if it was pending there). It returns the pending
// entry (nil under noack).
func (s *Stream) Deliver(g *Group, c *Consumer, id ID, now int64, noack bool) *NACK {
	putGroup := false
	if Less(g.LastID, id) {
		if g.EntriesRead != -1 && !s.HasTombstones(id) {
			g.EntriesRead++
		} else if s.EntriesAdded != 0 {
			g.EntriesRead = s.EstimateDistance(id)
		}
		g.LastID = id
		putGroup = true
	}
	if noack {
		if putGroup {
			s.touchGroup(g)
		}
		return nil
	}
	n := s.Pending(g, id)
	if n == nil {
		n = &NACK{ID: id, Consumer: c}
		s.addPending(g, n)
		s.addOwned(c, n)
		s.touchConsumer(g, c)
		putGroup = true
	} else if n.Consumer != c {
		s.move(g, n, c)
	}
	n.DeliveryTime, n.DeliveryCount = now, 1
	s.j.PutPending(g, n)
	if putGroup {
		s.touchGroup(g)
	}
	return n
}

// move gives pending entry n to consumer c (its record is written by the
// caller).
func (s *Stream) move(g *Group, n *NACK, c *Consumer) {
	if old := n.Consumer; old != nil {
		s.j.DelPending(g, n.ID, old)
		s.removeOwned(g, old, n.ID)
		s.touchConsumer(g, old)
	}
	n.Consumer = c
	s.addOwned(c, n)
	s.touchConsumer(g, c)
}

// Redelivered records that a consumer read pending entry n again from its
// history (XREADGROUP with an ID): delivery time now, one more delivery.
func (s *Stream) Redelivered(g *Group, n *NACK, now int64) {
	n.DeliveryTime = now
	n.DeliveryCount++
	s.j.PutPending(g, n)
}

// ForcePending creates a pending entry for id owned by nobody yet (XCLAIM
// FORCE); Claim must give it an owner in the same command.
func (s *Stream) ForcePending(g *Group, id ID) *NACK {
	n := &NACK{ID: id, DeliveryCount: 1}
	s.addPending(g, n)
	s.touchGroup(g)
	return n
}

// Claim gives pending entry n to consumer c with the given delivery time
// and count.
func (s *Stream) Claim(g *Group, n *NACK, c *Consumer, deliveryTime, deliveryCount int64) {
	if n.Consumer != c {
		s.move(g, n, c)
	}
	n.DeliveryTime, n.DeliveryCount = deliveryTime, deliveryCount
	s.j.PutPending(g, n)
}

// SetGroupLastID raises a group's last ID (XCLAIM LASTID).
func (s *Stream) SetGroupLastID(g *Group, id ID) {
	g.LastID = id
	s.touchGroup(g)
}

// countPEL sets every group's and consumer's counters from the PELs held
// in memory.
func (s *Stream) countPEL() {
	for _, g := range s.groups {
		g.pending, g.pelMin, g.pelMax = int64(len(g.pel)), ID{}, ID{}
		if len(g.pel) > 0 {
			g.pelMin, g.pelMax = g.pel[0].ID, g.pel[len(g.pel)-1].ID
		}
		for _, c := range g.consumers {
			c.pending, c.pelMin = int64(len(c.pel)), ID{}
			if len(c.pel) > 0 {
				c.pelMin = c.pel[0].ID
			}
		}
	}
}

// dropPEL forgets the PELs held in memory (the stream went cold: the
// store holds them).
func (s *Stream) dropPEL() {
	for _, g := range s.groups {
		s.size -= int64(len(g.pel)) * nackSize
		g.pel = nil
		for _, c := range g.consumers {
			c.pel = nil
		}
	}
}

// RewritePEL writes every group, consumer and pending entry record again
// through the journal (an old store's stream, whose records lack the PEL
// counters and the consumers' pending index, in the current form). A cold
// stream then forgets its PELs: they are read from the store.
func (s *Stream) RewritePEL() {
	for _, g := range s.groups {
		s.j.PutGroup(g)
		for _, c := range g.consumers {
			s.j.PutConsumer(g, c)
		}
		for _, n := range g.pel {
			s.j.PutPending(g, n)
		}
	}
	if s.store != nil {
		s.dropPEL()
	}
}
