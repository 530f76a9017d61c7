package stream

import "sort"

// Group is a consumer group. EntriesRead is -1 when unknown.
type Group struct {
	Name        []byte
	LastID      ID
	EntriesRead int64
	pel         []*NACK     // by ID
	consumers   []*Consumer // by name
}

// Consumer is a consumer of a group, with its own pending entries.
type Consumer struct {
	Name     []byte
	SeenTime int64
	pel      []*NACK // by ID
}

// NACK is a pending (delivered, not acknowledged) entry.
type NACK struct {
	ID            ID
	DeliveryTime  int64
	DeliveryCount int64
	Consumer      *Consumer
}

// PEL returns the group's pending entries in ID order (do not modify).
func (g *Group) PEL() []*NACK { return g.pel }

// Consumers returns the group's consumers by name (do not modify).
func (g *Group) Consumers() []*Consumer { return g.consumers }

// PEL returns the consumer's pending entries in ID order (do not modify).
func (c *Consumer) PEL() []*NACK { return c.pel }

func searchPEL(pel []*NACK, id ID) int {
	return sort.Search(len(pel), func(i int) bool { return !Less(pel[i].ID, id) })
}

// SeekPEL returns the position of the first entry of pel at or after id.
func SeekPEL(pel []*NACK, id ID) int { return searchPEL(pel, id) }

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

// Pending returns the group's pending entry for id, or nil.
func (g *Group) Pending(id ID) *NACK {
	if i := searchPEL(g.pel, id); i < len(g.pel) && g.pel[i].ID == id {
		return g.pel[i]
	}
	return nil
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
	s.j.PutGroup(g)
}

const nackSize = 96

func consumerSize(c *Consumer) int64 { return 96 + int64(len(c.Name)) }

func (g *Group) searchConsumer(name []byte) int {
	return sort.Search(len(g.consumers), func(i int) bool { return string(g.consumers[i].Name) >= string(name) })
}

// Consumer returns the consumer named name, or nil. With touch its seen
// time becomes now (Redis's lookups without SLC_NO_REFRESH).
func (s *Stream) Consumer(g *Group, name []byte, touch bool, now int64) *Consumer {
	i := g.searchConsumer(name)
	if i == len(g.consumers) || string(g.consumers[i].Name) != string(name) {
		return nil
	}
	c := g.consumers[i]
	if touch && c.SeenTime != now {
		c.SeenTime = now
		s.j.PutConsumer(g, c)
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
// group; it returns how many entries it had pending.
func (s *Stream) DeleteConsumer(g *Group, c *Consumer) int64 {
	n := int64(len(c.pel))
	for _, p := range c.pel {
		g.pel = removePEL(g.pel, p.ID)
		s.j.DelPending(g, p.ID)
	}
	s.size -= n*nackSize + consumerSize(c)
	i := g.searchConsumer(c.Name)
	copy(g.consumers[i:], g.consumers[i+1:])
	g.consumers[len(g.consumers)-1] = nil
	g.consumers = g.consumers[:len(g.consumers)-1]
	s.j.DelConsumer(g, c)
	return n
}

// Ack removes id from the group's pending entries, reporting whether it
// was pending.
func (s *Stream) Ack(g *Group, id ID) bool {
	n := g.Pending(id)
	if n == nil {
		return false
	}
	g.pel = removePEL(g.pel, id)
	if n.Consumer != nil {
		n.Consumer.pel = removePEL(n.Consumer.pel, id)
	}
	s.size -= nackSize
	s.j.DelPending(g, id)
	return true
}

// Deliver records that entry id was delivered to consumer c of g at now,
// as XREADGROUP with ">" does: the group's last ID and entries read
// advance, and unless noack the entry becomes pending for c (taken from
// another consumer if it was pending there).
func (s *Stream) Deliver(g *Group, c *Consumer, id ID, now int64, noack bool) {
	if Less(g.LastID, id) {
		if g.EntriesRead != -1 && !s.HasTombstones(id) {
			g.EntriesRead++
		} else if s.EntriesAdded != 0 {
			g.EntriesRead = s.EstimateDistance(id)
		}
		g.LastID = id
		s.j.PutGroup(g)
	}
	if noack {
		return
	}
	if n := g.Pending(id); n != nil {
		if n.Consumer != nil {
			n.Consumer.pel = removePEL(n.Consumer.pel, id)
		}
		n.Consumer, n.DeliveryTime, n.DeliveryCount = c, now, 1
		c.pel = insertPEL(c.pel, n)
		s.j.PutPending(g, n)
		return
	}
	n := &NACK{ID: id, DeliveryTime: now, DeliveryCount: 1, Consumer: c}
	g.pel = insertPEL(g.pel, n)
	c.pel = insertPEL(c.pel, n)
	s.size += nackSize
	s.j.PutPending(g, n)
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
	g.pel = insertPEL(g.pel, n)
	s.size += nackSize
	return n
}

// Claim gives pending entry n to consumer c with the given delivery time
// and count.
func (s *Stream) Claim(g *Group, n *NACK, c *Consumer, deliveryTime, deliveryCount int64) {
	if n.Consumer != c {
		if n.Consumer != nil {
			n.Consumer.pel = removePEL(n.Consumer.pel, n.ID)
		}
		c.pel = insertPEL(c.pel, n)
		n.Consumer = c
	}
	n.DeliveryTime, n.DeliveryCount = deliveryTime, deliveryCount
	s.j.PutPending(g, n)
}

// SetGroupLastID raises a group's last ID (XCLAIM LASTID).
func (s *Stream) SetGroupLastID(g *Group, id ID) {
	g.LastID = id
	s.j.PutGroup(g)
}
