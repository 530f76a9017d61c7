package stream

import (
	"fmt"
	"sort"
)

// Journal receives every change to a stream, to persist it record by
// record (a group's and a consumer's record once per Stream.Flush, the
// others as they change). The values passed are the model's own: read them during the
// call, never keep or modify them.
type Journal interface {
	PutEntry(e *Entry)
	DelEntry(id ID)
	PutNode(n *Node)
	DelNode(master ID)
	PutGroup(g *Group)
	// DelGroup removes the group with its consumers and pending entries.
	DelGroup(g *Group)
	PutConsumer(g *Group, c *Consumer)
	DelConsumer(g *Group, c *Consumer)
	// PutPending writes a pending entry's record and its consumer's index
	// record.
	PutPending(g *Group, n *NACK)
	// DelPending deletes a pending entry's record and, if c is not nil,
	// consumer c's index record for it.
	DelPending(g *Group, id ID, c *Consumer)
}

// Store reads the records of a stream that does not hold them in memory
// (a cold stream: only its groups and consumers are loaded): entries,
// nodes and pending entries. It sees
// the writes the journal made. Every value it returns is a fresh copy the
// stream may keep and change (changes are written through the journal).
type Store interface {
	// Range calls fn for the entries from start to end (inclusive), in
	// reverse order if rev, until fn returns false.
	Range(start, end ID, rev bool, fn func(e *Entry) bool) error
	// Get returns the entry with that ID, or nil.
	Get(id ID) (*Entry, error)
	// Node returns the last node whose master ID is at most id, or nil.
	Node(id ID) (*Node, error)
	// EachNode calls fn for every node in ID order until fn returns false.
	EachNode(fn func(n *Node) bool) error
	// GetPending reads group g's pending entry id: its delivery time and
	// count and its consumer's name (found false if id is not pending).
	GetPending(g *Group, id ID) (deliveryTime, deliveryCount int64, consumer []byte, found bool, err error)
	// RangePending calls fn for g's pending entries from start to end
	// (inclusive), consumer c's only if c is not nil, in ID order (reverse
	// if rev), until fn returns false. consumer is valid during the call.
	RangePending(g *Group, c *Consumer, start, end ID, rev bool, fn func(id ID, deliveryTime, deliveryCount int64, consumer []byte) bool) error
}

// Entry is a stream entry: its ID, then fields and values alternating.
type Entry struct {
	ID     ID
	Fields [][]byte
}

// Node is one of the listpack nodes Redis would hold the stream in: the
// entries from Master (the first entry added to it) to Last (the last one
// added), Live of them still there and Deleted marked deleted. Fields are
// its master entry's field names; Bytes the size of its entries' listpack
// elements (the header is computed).
type Node struct {
	Master  ID
	Fields  [][]byte
	Live    int64
	Deleted int64
	Last    ID
	Bytes   int64
}

// lpBytes is the size of the node's listpack, as Redis's lpBytes.
func (n *Node) lpBytes() int64 {
	b := int64(lpHeader) + lpIntSize(n.Live) + lpIntSize(n.Deleted) + lpIntSize(int64(len(n.Fields))) + lpIntSize(0) + n.Bytes
	for _, f := range n.Fields {
		b += lpStrSize(f)
	}
	return b
}

// Stream is a stream in memory. Its exported fields mirror the meta
// record; change them only through methods (so the journal sees it),
// except Last, EntriesAdded and MaxDeleted, which XSETID sets.
//
// A stream holds its entries, nodes and pending entries in memory
// (whole), or only its groups and consumers, reading entries, nodes and
// pending entries from a Store (cold). A failure of the
// store is kept (Err) and stops nothing: the caller checks Err before
// trusting what it read or wrote.
type Stream struct {
	entries      []*Entry // whole: every entry; cold: none
	store        Store
	err          error
	length       int64
	nodes        []*Node // whole: every node; cold: none
	tail         *Node   // cold: the last node, once read (new entries go there)
	Last         ID
	First        ID
	MaxDeleted   ID
	EntriesAdded uint64
	groups       []*Group
	dirtyG       []*Group        // groups whose record Flush writes
	dirtyC       []groupConsumer // consumers whose record Flush writes
	j            Journal
	size         int64
	bytes        int64
}

// New returns an empty stream reporting to j, holding its entries.
func New(j Journal) *Stream { return &Stream{j: j} }

// Bind makes the stream report to j from now on and, if it is cold, read
// its entries from store. It clears Err.
func (s *Stream) Bind(j Journal, store Store) {
	s.j, s.err = j, nil
	if s.store != nil {
		s.store = store
	}
}

// Cold reports whether the entries are read from the store.
func (s *Stream) Cold() bool { return s.store != nil }

// Err returns the first failure of the entry store since Bind.
func (s *Stream) Err() error { return s.err }

func (s *Stream) fail(err error) {
	if err != nil && s.err == nil {
		s.err = err
	}
}

// Len is the number of entries.
func (s *Stream) Len() int64 { return s.length }

// Bytes is the total length of the entries' fields and values.
func (s *Stream) Bytes() int64 { return s.bytes }

// Size estimates the memory the stream takes.
func (s *Stream) Size() int64 {
	if s.tail != nil {
		return s.size + 128 + 96
	}
	return s.size + 128
}

// Nodes is the number of listpack nodes (XINFO's radix-tree-keys).
func (s *Stream) Nodes() int { return len(s.NodeList()) }

// NodeList returns the nodes in ID order (do not modify).
func (s *Stream) NodeList() []*Node {
	if s.store == nil {
		return s.nodes
	}
	var out []*Node
	s.fail(s.store.EachNode(func(n *Node) bool { out = append(out, s.cached(n)); return true }))
	return out
}

// lastNode returns the node new entries go to, or nil.
func (s *Stream) lastNode() *Node {
	if s.store == nil {
		if len(s.nodes) == 0 {
			return nil
		}
		return s.nodes[len(s.nodes)-1]
	}
	if s.tail == nil {
		n, err := s.store.Node(MaxID)
		s.fail(err)
		s.tail = n
	}
	return s.tail
}

// cached returns the tail node instead of n when they are the same node,
// so that the cached tail sees every change.
func (s *Stream) cached(n *Node) *Node {
	if n != nil && s.tail != nil && n.Master == s.tail.Master {
		return s.tail
	}
	return n
}

// firstNode returns the first node, or nil.
func (s *Stream) firstNode() *Node {
	if s.store == nil {
		if len(s.nodes) == 0 {
			return nil
		}
		return s.nodes[0]
	}
	var first *Node
	s.fail(s.store.EachNode(func(n *Node) bool { first = n; return false }))
	return s.cached(first)
}

// nodeFor returns the node holding id, or nil.
func (s *Stream) nodeFor(id ID) *Node {
	if s.store == nil {
		if i := s.nodeOf(id); i >= 0 {
			return s.nodes[i]
		}
		return nil
	}
	n, err := s.store.Node(id)
	s.fail(err)
	return s.cached(n)
}

// dropNode removes node n.
func (s *Stream) dropNode(n *Node) {
	s.j.DelNode(n.Master)
	if s.store != nil {
		if n == s.tail {
			s.tail = nil
		}
		return
	}
	i := s.nodeOf(n.Master)
	copy(s.nodes[i:], s.nodes[i+1:])
	s.nodes[len(s.nodes)-1] = nil
	s.nodes = s.nodes[:len(s.nodes)-1]
	s.size -= 96
}

func entrySize(e *Entry) int64 {
	n := int64(64)
	for _, f := range e.Fields {
		n += 24 + int64(len(f))
	}
	return n
}

func fieldBytes(e *Entry) int64 {
	var n int64
	for _, f := range e.Fields {
		n += int64(len(f))
	}
	return n
}

// search returns the index of the first entry with ID >= id.
func (s *Stream) search(id ID) int {
	return sort.Search(len(s.entries), func(i int) bool { return !Less(s.entries[i].ID, id) })
}

// nodeOf returns the index of the node holding id (-1: none).
func (s *Stream) nodeOf(id ID) int {
	i := sort.Search(len(s.nodes), func(i int) bool { return Less(id, s.nodes[i].Master) })
	return i - 1
}

// Get returns the entry with that ID, or nil.
func (s *Stream) Get(id ID) *Entry {
	if s.store != nil {
		e, err := s.store.Get(id)
		s.fail(err)
		return e
	}
	if i := s.search(id); i < len(s.entries) && s.entries[i].ID == id {
		return s.entries[i]
	}
	return nil
}

// Range calls fn for the entries from start to end (inclusive), in
// reverse order if rev, until fn returns false.
func (s *Stream) Range(start, end ID, rev bool, fn func(e *Entry) bool) {
	if Less(end, start) {
		return
	}
	if s.store != nil {
		s.fail(s.store.Range(start, end, rev, fn))
		return
	}
	lo := s.search(start)
	hi := lo
	for hi < len(s.entries) && !Less(end, s.entries[hi].ID) {
		if !rev && !fn(s.entries[hi]) {
			return
		}
		hi++
	}
	if rev {
		for i := hi - 1; i >= lo; i-- {
			if !fn(s.entries[i]) {
				return
			}
		}
	}
}

// FirstEntry and LastEntry return the edge entries (nil when empty).
func (s *Stream) FirstEntry() *Entry { return s.edge(false) }

// LastEntry returns the last entry (nil when empty).
func (s *Stream) LastEntry() *Entry { return s.edge(true) }

func (s *Stream) edge(last bool) *Entry {
	if s.length == 0 {
		return nil
	}
	if s.store == nil {
		if last {
			return s.entries[len(s.entries)-1]
		}
		return s.entries[0]
	}
	var e *Entry
	s.Range(ID{}, MaxID, last, func(x *Entry) bool { e = x; return false })
	return e
}

// NextID is the ID XADD * generates at time now (unix ms): ok is false
// when the stream's last ID is the greatest possible.
func (s *Stream) NextID(now int64) (ID, bool) {
	if uint64(now) > s.Last.Ms {
		return ID{Ms: uint64(now)}, true
	}
	return Incr(s.Last)
}

// Append adds an entry (fields and values alternating, copied) with the
// given ID, which must be after Last, in a node as Redis would place it
// under stream-node-max-entries maxEntries and -max-bytes maxBytes.
func (s *Stream) Append(id ID, fields [][]byte, maxEntries, maxBytes int64) {
	e := &Entry{ID: id, Fields: make([][]byte, len(fields))}
	for i, f := range fields {
		e.Fields[i] = append([]byte(nil), f...)
	}
	var tot int64
	for _, f := range fields {
		tot += int64(len(f))
	}
	if maxBytes <= 0 || maxBytes > lpMaxSize {
		maxBytes = lpMaxSize
	}
	n := s.lastNode()
	if n != nil && (n.lpBytes()+tot >= maxBytes || maxEntries > 0 && n.Live+n.Deleted >= maxEntries) {
		n = nil
	}
	same := false
	if n == nil {
		n = &Node{Master: id}
		for i := 0; i < len(e.Fields); i += 2 {
			n.Fields = append(n.Fields, e.Fields[i])
		}
		if s.store == nil {
			s.nodes = append(s.nodes, n)
			s.size += 96
		} else {
			s.tail = n
		}
		same = true
	} else if len(n.Fields)*2 == len(e.Fields) {
		same = true
		for i, f := range n.Fields {
			if string(f) != string(e.Fields[2*i]) {
				same = false
				break
			}
		}
	}
	flags := int64(0)
	if same {
		flags = 2
	}
	b := lpIntSize(flags) + lpIntSize(int64(id.Ms-n.Master.Ms)) + lpIntSize(int64(id.Seq-n.Master.Seq))
	count := int64(len(fields)/2) + 3
	if !same {
		b += lpIntSize(int64(len(fields) / 2))
		count += int64(len(fields)/2) + 1
	}
	for i, f := range e.Fields {
		if i%2 == 1 || !same {
			b += lpStrSize(f)
		}
	}
	b += lpIntSize(count)
	n.Bytes += b
	n.Live++
	n.Last = id
	if s.store == nil {
		s.entries = append(s.entries, e)
		s.size += entrySize(e)
	}
	s.length++
	s.bytes += fieldBytes(e)
	s.EntriesAdded++
	s.Last = id
	if s.length == 1 {
		s.First = id
	}
	s.j.PutEntry(e)
	s.j.PutNode(n)
}

// front returns the first k entries.
func (s *Stream) front(k int) []*Entry {
	if s.store == nil {
		return s.entries[:k]
	}
	out := make([]*Entry, 0, k)
	if k > 0 {
		s.Range(ID{}, MaxID, false, func(e *Entry) bool {
			out = append(out, e)
			return len(out) < k
		})
	}
	return out
}

// dropFront removes the first entries, es (front's), from memory and the
// journal.
func (s *Stream) dropFront(es []*Entry) {
	for _, e := range es {
		if s.store == nil {
			s.size -= entrySize(e)
		}
		s.bytes -= fieldBytes(e)
		s.j.DelEntry(e.ID)
	}
	s.length -= int64(len(es))
	if s.store == nil {
		clear(s.entries[:len(es)])
		s.entries = s.entries[len(es):]
	}
}

// Trim strategies.
const (
	TrimNone = iota
	TrimMaxLen
	TrimMinID
)

// TrimArgs are XADD's and XTRIM's trimming options.
type TrimArgs struct {
	Strategy int
	Approx   bool
	Limit    int64 // 0: none
	MaxLen   int64
	MinID    ID
}

// Trim removes entries from the head as Redis's streamTrim: with Approx
// only whole nodes, never more than Limit entries (0: no limit). It
// returns the number of entries removed.
func (s *Stream) Trim(a TrimArgs) int64 {
	if a.Strategy == TrimNone {
		return 0
	}
	var deleted int64
	for {
		if a.Strategy == TrimMaxLen && s.Len() <= a.MaxLen {
			break
		}
		n := s.firstNode()
		if n == nil {
			break
		}
		live := n.Live
		if a.Limit > 0 && deleted+live > a.Limit {
			break
		}
		var remove bool
		if a.Strategy == TrimMaxLen {
			remove = s.Len()-live >= a.MaxLen
		} else {
			remove = Less(n.Last, a.MinID)
		}
		if remove {
			s.dropFront(s.front(int(live)))
			s.dropNode(n)
			deleted += live
			if s.err != nil {
				break
			}
			continue
		}
		if a.Approx {
			break
		}
		es := s.front(int(live))
		k := 0
		for k < len(es) {
			if a.Strategy == TrimMaxLen && s.Len()-int64(k) <= a.MaxLen ||
				a.Strategy == TrimMinID && !Less(es[k].ID, a.MinID) {
				break
			}
			k++
		}
		s.dropFront(es[:k])
		n.Live -= int64(k)
		n.Deleted += int64(k)
		if k > 0 {
			s.j.PutNode(n)
		}
		deleted += int64(k)
		break
	}
	if s.Len() == 0 {
		s.First = ID{}
	} else if deleted > 0 {
		if e := s.FirstEntry(); e != nil {
			s.First = e.ID
		}
	}
	return deleted
}

// Delete removes the entry with that ID (XDEL), reporting whether it was
// there. It updates MaxDeleted and First as XDEL does.
func (s *Stream) Delete(id ID) bool {
	var e *Entry
	if s.store != nil {
		if e = s.Get(id); e == nil {
			return false
		}
	} else {
		i := s.search(id)
		if i == len(s.entries) || s.entries[i].ID != id {
			return false
		}
		e = s.entries[i]
		s.size -= entrySize(e)
		copy(s.entries[i:], s.entries[i+1:])
		s.entries[len(s.entries)-1] = nil
		s.entries = s.entries[:len(s.entries)-1]
	}
	s.length--
	s.bytes -= fieldBytes(e)
	s.j.DelEntry(id)
	n := s.nodeFor(id)
	switch {
	case n == nil:
		s.fail(fmt.Errorf("stream: entry %v has no node", id))
	case n.Live == 1:
		s.dropNode(n)
	default:
		n.Live--
		n.Deleted++
		s.j.PutNode(n)
	}
	if Less(s.MaxDeleted, id) {
		s.MaxDeleted = id
	}
	switch {
	case s.length == 0:
		s.First = ID{}
	case id == s.First:
		if f := s.FirstEntry(); f != nil {
			s.First = f.ID
		}
	}
	return true
}

// LastValid returns the ID of the last entry (ok false when empty).
func (s *Stream) LastValid() (ID, bool) {
	if e := s.LastEntry(); e != nil {
		return e.ID, true
	}
	return ID{}, false
}

// HasTombstones is Redis's streamRangeHasTombstones from start to the end.
func (s *Stream) HasTombstones(start ID) bool {
	if s.Len() == 0 || IsZero(s.MaxDeleted) {
		return false
	}
	if Less(s.MaxDeleted, s.First) {
		return false
	}
	return !Less(s.MaxDeleted, start)
}

// EstimateDistance is Redis's streamEstimateDistanceFromFirstEverEntry:
// the entries_read a group at id would have, or -1 if it cannot be known.
func (s *Stream) EstimateDistance(id ID) int64 {
	if s.EntriesAdded == 0 {
		return 0
	}
	if s.Len() == 0 && Compare(id, s.Last) < 1 {
		return int64(s.EntriesAdded)
	}
	switch c := Compare(id, s.Last); {
	case c == 0:
		return int64(s.EntriesAdded)
	case c > 0:
		return -1
	}
	if IsZero(s.MaxDeleted) || Less(s.MaxDeleted, s.First) {
		switch Compare(id, s.First) {
		case -1:
			return int64(s.EntriesAdded) - s.Len()
		case 0:
			return int64(s.EntriesAdded) - s.Len() + 1
		}
	}
	return -1
}

// Lag is a group's lag as XINFO reports it (ok false: unknown, a null).
func (s *Stream) Lag(g *Group) (int64, bool) {
	if s.EntriesAdded == 0 {
		return 0, true
	}
	if g.EntriesRead != -1 && !s.HasTombstones(g.LastID) {
		return int64(s.EntriesAdded) - g.EntriesRead, true
	}
	if r := s.EstimateDistance(g.LastID); r != -1 {
		return int64(s.EntriesAdded) - r, true
	}
	return 0, false
}

// RadixNodes is the number of nodes of the radix tree Redis keys the
// stream's listpacks by (XINFO's radix-tree-nodes): a compressed node per
// run of shared bytes, a branching node per split, a leaf per key.
func (s *Stream) RadixNodes() int64 {
	nodes := s.NodeList()
	if len(nodes) == 0 {
		return 1
	}
	keys := make([][16]byte, len(nodes))
	for i, n := range nodes {
		for b := range 8 {
			keys[i][b] = byte(n.Master.Ms >> (56 - 8*b))
			keys[i][8+b] = byte(n.Master.Seq >> (56 - 8*b))
		}
	}
	return radixCount(keys, 0)
}

// radixCount counts the nodes under the one at depth for keys, which are
// sorted and share their first depth bytes.
func radixCount(keys [][16]byte, depth int) int64 {
	if depth == 16 {
		return 1
	}
	lcp := 16 - depth
	first, last := keys[0], keys[len(keys)-1]
	for i := depth; i < 16; i++ {
		if first[i] != last[i] {
			lcp = i - depth
			break
		}
	}
	if lcp > 0 {
		return 1 + radixCount(keys, depth+lcp)
	}
	n := int64(1)
	for i := 0; i < len(keys); {
		j := i
		for j < len(keys) && keys[j][depth] == keys[i][depth] {
			j++
		}
		n += radixCount(keys[i:j], depth+1)
		i = j
	}
	return n
}

// FreeEffort is Redis 7.0's lazyfreeGetFreeEffort for a stream: its radix
// tree's nodes, plus per group one and the first group's pending count.
func (s *Stream) FreeEffort() int64 {
	n := s.RadixNodes()
	if len(s.groups) > 0 {
		n += int64(len(s.groups)) * (1 + s.groups[0].pending)
	}
	return n
}
