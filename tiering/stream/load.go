package stream

import (
	"fmt"

	"github.com/spillway/spillway/codec"
)

// Building a stream from its records (the engine's loader) and copying one.

// nop is the journal of a stream being loaded: loading writes nothing.
type nop struct{}

func (nop) PutEntry(*Entry)                  {}
func (nop) DelEntry(ID)                      {}
func (nop) PutNode(*Node)                    {}
func (nop) DelNode(ID)                       {}
func (nop) PutGroup(*Group)                  {}
func (nop) DelGroup(*Group)                  {}
func (nop) PutConsumer(*Group, *Consumer)    {}
func (nop) DelConsumer(*Group, *Consumer)    {}
func (nop) PutPending(*Group, *NACK)         {}
func (nop) DelPending(*Group, ID, *Consumer) {}

// Loader fills a stream from its records. Call LoadNode and LoadEntry in
// ID order, LoadGroup (or LoadGroupPEL) in name order, then LoadConsumer
// (or LoadConsumerPEL), then LoadPending; Done returns the stream,
// reporting to j.
type Loader struct {
	s      *Stream
	legacy bool
}

// NewLoader starts loading a stream whose meta record holds m and
// count, bytes. With store set, the stream is cold: its entries and nodes
// are not loaded (LoadEntry and LoadNode must not be called) but read
// from store, and so are its pending entries if its groups come with
// their counters (LoadGroupPEL, LoadConsumerPEL: then LoadPending must
// not be called).
func NewLoader(m codec.StreamMeta, count, bytes int64, store Store) *Loader {
	return &Loader{s: &Stream{Last: m.Last, First: m.First, MaxDeleted: m.MaxDeleted, EntriesAdded: m.EntriesAdded,
		j: nop{}, store: store, length: count, bytes: bytes}}
}

// LoadNode adds a node record.
func (l *Loader) LoadNode(master ID, v codec.StreamNodeValue) {
	l.s.nodes = append(l.s.nodes, &Node{Master: master, Fields: v.Fields, Live: v.Live, Deleted: v.Deleted, Last: v.Last, Bytes: v.LPBytes})
	l.s.size += 96
}

// LoadEntry adds an entry record.
func (l *Loader) LoadEntry(id ID, fields [][]byte) {
	e := &Entry{ID: id, Fields: fields}
	l.s.entries = append(l.s.entries, e)
	l.s.size += entrySize(e)
}

// LoadGroup adds a group without its PEL counters: its pending entries
// must all be loaded (LoadPending), which Done counts.
func (l *Loader) LoadGroup(name []byte, last ID, entriesRead int64) {
	l.s.CreateGroup(name, last, entriesRead)
	l.legacy = true
}

// LoadGroupPEL adds a group with its PEL counters (a record of the
// current format).
func (l *Loader) LoadGroupPEL(name []byte, last ID, entriesRead int64, p codec.StreamGroupPEL) {
	if g := l.s.CreateGroup(name, last, entriesRead); g != nil {
		g.pending, g.pelMin, g.pelMax = p.Pending, p.Min, p.Max
	}
}

// Legacy reports whether a group came without its PEL counters (a store
// written before them): the engine then rewrites the stream's groups
// (Stream.RewritePEL).
func (l *Loader) Legacy() bool { return l.legacy }

// LoadConsumer adds a consumer record.
func (l *Loader) LoadConsumer(group, name []byte, seen int64) error {
	return l.LoadConsumerPEL(group, name, seen, 0, ID{})
}

// LoadConsumerPEL adds a consumer record with its PEL counters.
func (l *Loader) LoadConsumerPEL(group, name []byte, seen, pending int64, pelMin ID) error {
	g := l.s.Group(group)
	if g == nil {
		return fmt.Errorf("consumer %q of missing group %q", name, group)
	}
	if c := l.s.CreateConsumer(g, name, seen); c != nil {
		c.pending, c.pelMin = pending, pelMin
	}
	return nil
}

// LoadPending adds a pending entry record.
func (l *Loader) LoadPending(group []byte, id ID, deliveryTime, deliveryCount int64, consumer []byte) error {
	g := l.s.Group(group)
	if g == nil {
		return fmt.Errorf("pending entry of missing group %q", group)
	}
	c := g.consumerByName(consumer)
	if c == nil {
		return fmt.Errorf("pending entry of missing consumer %q", consumer)
	}
	n := &NACK{ID: id, DeliveryTime: deliveryTime, DeliveryCount: deliveryCount, Consumer: c}
	if k := len(g.pel); k > 0 && Less(g.pel[k-1].ID, id) {
		g.pel = append(g.pel, n) // records come in ID order
	} else {
		g.pel = insertPEL(g.pel, n)
	}
	if k := len(c.pel); k > 0 && Less(c.pel[k-1].ID, id) {
		c.pel = append(c.pel, n)
	} else {
		c.pel = insertPEL(c.pel, n)
	}
	l.s.size += nackSize
	return nil
}

// Done checks the stream against its meta record's count and returns it,
// reporting to j from now on. The PEL counters of a stream whose pending
// entries were loaded are counted from them.
func (l *Loader) Done(count int64, j Journal) (*Stream, error) {
	s := l.s
	if s.store == nil || l.legacy {
		s.countPEL()
	}
	var live int64
	for _, n := range s.nodes {
		live += n.Live
	}
	if s.store == nil && (int64(len(s.entries)) != count || live != count) {
		return nil, fmt.Errorf("stream counts %d entries, %d loaded, nodes hold %d", count, len(s.entries), live)
	}
	if s.store == nil {
		var b int64
		for _, e := range s.entries {
			b += fieldBytes(e)
		}
		s.bytes = b
	}
	s.Flush() // to the loader's journal: the records are what was read
	s.j = j
	return s, nil
}

// Copy returns a deep copy of s reporting to j, having written every one
// of its records to j (COPY, RENAME). A cold stream's copy is cold, its
// entries read from store.
func (s *Stream) Copy(j Journal, store Store) *Stream {
	c := &Stream{Last: s.Last, First: s.First, MaxDeleted: s.MaxDeleted, EntriesAdded: s.EntriesAdded, j: j,
		size: s.size, bytes: s.bytes, length: s.length}
	if s.store != nil {
		c.store = store
		s.Range(ID{}, MaxID, false, func(e *Entry) bool {
			j.PutEntry(e)
			return true
		})
	} else {
		c.entries = make([]*Entry, len(s.entries))
		for i, e := range s.entries {
			c.entries[i] = &Entry{ID: e.ID, Fields: e.Fields} // entries are never modified in place
			j.PutEntry(c.entries[i])
		}
	}
	for _, n := range s.NodeList() {
		cn := *n
		if c.store == nil {
			c.nodes = append(c.nodes, &cn)
		}
		j.PutNode(&cn)
	}
	for _, g := range s.groups {
		cg := &Group{Name: g.Name, LastID: g.LastID, EntriesRead: g.EntriesRead,
			pending: g.pending, pelMin: g.pelMin, pelMax: g.pelMax}
		c.groups = append(c.groups, cg)
		byName := map[*Consumer]*Consumer{}
		for _, con := range g.consumers {
			cc := &Consumer{Name: con.Name, SeenTime: con.SeenTime, pending: con.pending, pelMin: con.pelMin}
			byName[con] = cc
			cg.consumers = append(cg.consumers, cc)
			j.PutConsumer(cg, cc)
		}
		s.EachPending(g, nil, ID{}, MaxID, func(n *NACK) bool {
			cn := &NACK{ID: n.ID, DeliveryTime: n.DeliveryTime, DeliveryCount: n.DeliveryCount, Consumer: byName[n.Consumer]}
			if c.store == nil {
				cg.pel = append(cg.pel, cn)
				cn.Consumer.pel = append(cn.Consumer.pel, cn)
			}
			j.PutPending(cg, cn)
			return true
		})
		j.PutGroup(cg)
	}
	return c
}

// LoadNodeLP adds a node restored from a DUMP payload, whose listpack
// (deleted entries included) was lpBytes long.
func (l *Loader) LoadNodeLP(master ID, fields [][]byte, live, deleted int64, last ID, lpBytes int64) {
	n := &Node{Master: master, Fields: fields, Live: live, Deleted: deleted, Last: last}
	n.Bytes = max(lpBytes-n.lpBytes(), 0)
	l.s.nodes = append(l.s.nodes, n)
	l.s.size += 96
}

// MakeCold turns a stream held whole into a cold one reading its
// entries, nodes and pending entries from store (which must hold them
// all: the journal wrote them): only its groups and consumers stay in
// memory.
func (s *Stream) MakeCold(store Store) {
	if s.store != nil {
		return
	}
	for _, e := range s.entries {
		s.size -= entrySize(e)
	}
	s.size -= int64(len(s.nodes)) * 96
	s.dropPEL()
	s.size = max(s.size, 0)
	s.entries, s.nodes, s.store = nil, nil, store
}
