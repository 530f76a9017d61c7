package rdb

import (
	"encoding/binary"
	"strconv"
)

// Streams in DUMP payloads: RDB_TYPE_STREAM_LISTPACKS (15, Redis 5 to 6.2)
// read, RDB_TYPE_STREAM_LISTPACKS_2 (19, Redis 7.0) read and written. The
// entries live in listpacks, each with a master entry (counts and field
// names) and entries whose IDs are deltas from the node's key.

// StreamID is a stream entry ID.
type StreamID struct{ Ms, Seq uint64 }

// StreamEntry is one entry of a node: fields and values alternating.
// Deleted entries (tombstones Redis keeps until their node empties) are
// marked so.
type StreamEntry struct {
	ID      StreamID
	Fields  [][]byte
	Deleted bool
}

// StreamNode is one listpack: its key (master ID), its master entry's
// field names, its entries in order, and its size in bytes.
type StreamNode struct {
	Master  StreamID
	Fields  [][]byte
	Entries []StreamEntry
	Bytes   int
}

// StreamNACK is a pending entry of a group; Consumer is its owner's index
// in the group's Consumers.
type StreamNACK struct {
	ID            StreamID
	DeliveryTime  int64
	DeliveryCount uint64
	Consumer      int
}

// StreamConsumer is a consumer of a group.
type StreamConsumer struct {
	Name     []byte
	SeenTime int64
}

// StreamGroup is a consumer group. EntriesRead is -1 when unknown.
type StreamGroup struct {
	Name        []byte
	LastID      StreamID
	EntriesRead int64
	PEL         []StreamNACK
	Consumers   []StreamConsumer
}

// Stream is a stream value.
type Stream struct {
	Nodes                   []StreamNode
	Length                  uint64
	Last, First, MaxDeleted StreamID
	EntriesAdded            uint64
	Groups                  []StreamGroup
}

// Stream entry flags in a listpack.
const (
	lpFlagDeleted    = 1
	lpFlagSameFields = 2
)

// streamCount reads a count that may be 0 (an empty stream, a group
// without pending entries), bounded by the bytes left.
func (c *cursor) streamCount() (int, error) {
	n, err := c.length()
	if err != nil {
		return 0, err
	}
	if n > uint64(len(c.b)) {
		return 0, ErrTruncated
	}
	return int(n), nil
}

func (c *cursor) id() (StreamID, error) {
	ms, err := c.length()
	if err != nil {
		return StreamID{}, err
	}
	seq, err := c.length()
	return StreamID{ms, seq}, err
}

func (c *cursor) raw(n int) ([]byte, error) {
	if len(c.b) < n {
		return nil, ErrTruncated
	}
	b := c.b[:n]
	c.b = c.b[n:]
	return b, nil
}

func rawID(b []byte) StreamID {
	return StreamID{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])}
}

func idLess(a, b StreamID) bool { return a.Ms < b.Ms || a.Ms == b.Ms && a.Seq < b.Seq }

// stream decodes a stream of type 15 or 19, validating it as Redis's deep
// sanitization does: well-formed listpacks whose counts agree, nodes and
// entries in ID order, every pending entry owned by one consumer.
func (c *cursor) stream(v2 bool) (*Object, error) {
	n, err := c.streamCount()
	if err != nil {
		return nil, err
	}
	s := &Stream{}
	var live uint64
	for range n {
		key, err := c.str()
		if err != nil {
			return nil, err
		}
		if len(key) != 16 {
			return nil, wrapBad("stream node key")
		}
		blob, err := c.str()
		if err != nil {
			return nil, err
		}
		node, err := streamNode(rawID(key), blob)
		if err != nil {
			return nil, err
		}
		if k := len(s.Nodes); k > 0 && !idLess(s.Nodes[k-1].Master, node.Master) {
			return nil, wrapBad("stream nodes out of order")
		}
		for _, e := range node.Entries {
			if !e.Deleted {
				live++
			}
		}
		s.Nodes = append(s.Nodes, node)
	}
	if s.Length, err = c.length(); err != nil {
		return nil, err
	}
	if s.Last, err = c.id(); err != nil {
		return nil, err
	}
	if v2 {
		if s.First, err = c.id(); err != nil {
			return nil, err
		}
		if s.MaxDeleted, err = c.id(); err != nil {
			return nil, err
		}
		if s.EntriesAdded, err = c.length(); err != nil {
			return nil, err
		}
	} else {
		s.EntriesAdded = s.Length
		s.First = firstLive(s)
	}
	if s.Length != live {
		return nil, wrapBad("stream length")
	}
	groups, err := c.streamCount()
	if err != nil {
		return nil, err
	}
	for range groups {
		g, err := c.group(s, v2)
		if err != nil {
			return nil, err
		}
		if k := len(s.Groups); k > 0 && string(s.Groups[k-1].Name) >= string(g.Name) {
			return nil, wrapBad("stream groups out of order or duplicated")
		}
		s.Groups = append(s.Groups, g)
	}
	return &Object{Kind: KindStream, Stream: s}, nil
}

func firstLive(s *Stream) StreamID {
	for _, n := range s.Nodes {
		for _, e := range n.Entries {
			if !e.Deleted {
				return e.ID
			}
		}
	}
	return StreamID{}
}

func (c *cursor) group(s *Stream, v2 bool) (StreamGroup, error) {
	var g StreamGroup
	var err error
	if g.Name, err = c.str(); err != nil {
		return g, err
	}
	if g.LastID, err = c.id(); err != nil {
		return g, err
	}
	if v2 {
		er, err := c.length()
		if err != nil {
			return g, err
		}
		g.EntriesRead = int64(er)
	} else {
		g.EntriesRead = estimateDistance(s, g.LastID)
	}
	pel, err := c.streamCount()
	if err != nil {
		return g, err
	}
	for range pel {
		raw, err := c.raw(16)
		if err != nil {
			return g, err
		}
		t, err := c.raw(8)
		if err != nil {
			return g, err
		}
		cnt, err := c.length()
		if err != nil {
			return g, err
		}
		id := rawID(raw)
		if k := len(g.PEL); k > 0 && !idLess(g.PEL[k-1].ID, id) {
			return g, wrapBad("stream PEL out of order")
		}
		g.PEL = append(g.PEL, StreamNACK{ID: id, DeliveryTime: int64(binary.LittleEndian.Uint64(t)), DeliveryCount: cnt, Consumer: -1})
	}
	consumers, err := c.streamCount()
	if err != nil {
		return g, err
	}
	for i := range consumers {
		var con StreamConsumer
		if con.Name, err = c.str(); err != nil {
			return g, err
		}
		t, err := c.raw(8)
		if err != nil {
			return g, err
		}
		con.SeenTime = int64(binary.LittleEndian.Uint64(t))
		if k := len(g.Consumers); k > 0 && string(g.Consumers[k-1].Name) >= string(con.Name) {
			return g, wrapBad("stream consumers out of order or duplicated")
		}
		g.Consumers = append(g.Consumers, con)
		owned, err := c.streamCount()
		if err != nil {
			return g, err
		}
		for range owned {
			raw, err := c.raw(16)
			if err != nil {
				return g, err
			}
			id := rawID(raw)
			j := searchNACK(g.PEL, id)
			if j < 0 || g.PEL[j].Consumer != -1 {
				return g, wrapBad("stream consumer PEL")
			}
			g.PEL[j].Consumer = i
		}
	}
	for _, p := range g.PEL {
		if p.Consumer == -1 {
			return g, wrapBad("stream pending entry without a consumer")
		}
	}
	return g, nil
}

func searchNACK(pel []StreamNACK, id StreamID) int {
	lo, hi := 0, len(pel)
	for lo < hi {
		m := (lo + hi) / 2
		if idLess(pel[m].ID, id) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(pel) && pel[lo].ID == id {
		return lo
	}
	return -1
}

// estimateDistance is Redis's streamEstimateDistanceFromFirstEverEntry for
// a legacy payload (entries added = length, no deletions recorded).
func estimateDistance(s *Stream, id StreamID) int64 {
	switch {
	case s.EntriesAdded == 0:
		return 0
	case s.Length == 0 && !idLess(s.Last, id):
		return int64(s.EntriesAdded)
	case id == s.Last:
		return int64(s.EntriesAdded)
	case idLess(s.Last, id):
		return -1
	case idLess(id, s.First):
		return int64(s.EntriesAdded - s.Length)
	case id == s.First:
		return int64(s.EntriesAdded - s.Length + 1)
	}
	return -1
}

// streamNode decodes one listpack of a stream.
func streamNode(master StreamID, blob []byte) (StreamNode, error) {
	node := StreamNode{Master: master, Bytes: len(blob)}
	items, err := listpackItems(blob)
	if err != nil {
		return node, err
	}
	p := &lpReader{items: items}
	count, deleted, nf := p.int(), p.int(), p.int()
	if p.bad || count < 0 || deleted < 0 || nf < 0 || int64(len(p.items)) < nf+1 {
		return node, wrapBad("stream master entry")
	}
	node.Fields = p.items[:nf]
	p.items = p.items[nf:]
	if p.int() != 0 {
		return node, wrapBad("stream master entry terminator")
	}
	var seenLive, seenDel int64
	prev := StreamID{}
	for len(p.items) > 0 {
		flags, msd, seqd := p.int(), p.int(), p.int()
		e := StreamEntry{ID: StreamID{master.Ms + uint64(msd), master.Seq + uint64(seqd)}, Deleted: flags&lpFlagDeleted != 0}
		n := int64(len(node.Fields))
		if flags&lpFlagSameFields == 0 {
			n = p.int()
		}
		if p.bad || n < 0 || int64(len(p.items)) < n*2+1 && flags&lpFlagSameFields == 0 || int64(len(p.items)) < n+1 {
			return node, wrapBad("stream entry")
		}
		for i := range n {
			if flags&lpFlagSameFields != 0 {
				e.Fields = append(e.Fields, node.Fields[i], p.items[0])
				p.items = p.items[1:]
			} else {
				e.Fields = append(e.Fields, p.items[0], p.items[1])
				p.items = p.items[2:]
			}
		}
		lpCount := p.int()
		want := n + 3
		if flags&lpFlagSameFields == 0 {
			want += n + 1
		}
		if p.bad || lpCount != want {
			return node, wrapBad("stream entry lp-count")
		}
		if len(node.Entries) > 0 && !idLess(prev, e.ID) || idLess(e.ID, master) {
			return node, wrapBad("stream entries out of order")
		}
		prev = e.ID
		if e.Deleted {
			seenDel++
		} else {
			seenLive++
		}
		node.Entries = append(node.Entries, e)
	}
	if seenLive != count || seenDel != deleted || len(node.Entries) == 0 {
		return node, wrapBad("stream node counts")
	}
	return node, nil
}

// lpReader reads integers from decoded listpack items.
type lpReader struct {
	items [][]byte
	bad   bool
}

func (p *lpReader) int() int64 {
	if len(p.items) == 0 {
		p.bad = true
		return 0
	}
	v, err := strconv.ParseInt(string(p.items[0]), 10, 64)
	p.items = p.items[1:]
	if err != nil {
		p.bad = true
	}
	return v
}

// Stream writes s as RDB_TYPE_STREAM_LISTPACKS_2. Each node is written
// with its live entries only (Redis keeps deleted ones until their node
// empties; a payload without them restores the same stream). Nodes
// without live entries are skipped.
func (d *Dump) Stream(s *Stream) {
	d.start(typeStreamLP2)
	nodes := 0
	for _, n := range s.Nodes {
		if liveEntries(n) > 0 {
			nodes++
		}
	}
	d.buf = AppendLen(d.buf, uint64(nodes))
	var lp []byte
	for _, n := range s.Nodes {
		if liveEntries(n) == 0 {
			continue
		}
		var key [16]byte
		d.appendString(AppendStreamRawID(key[:0], n.Master))
		lp = appendStreamListpack(lp[:0], n)
		d.appendString(lp)
	}
	d.buf = AppendStreamMeta(d.buf, s.Length, s.Last, s.First, s.MaxDeleted, s.EntriesAdded)
	d.buf = AppendLen(d.buf, uint64(len(s.Groups)))
	for _, g := range s.Groups {
		d.appendString(g.Name)
		d.buf = AppendStreamGroupHead(d.buf, g.LastID, g.EntriesRead, len(g.PEL))
		for _, p := range g.PEL {
			d.buf = AppendStreamNACK(d.buf, p.ID, p.DeliveryTime, p.DeliveryCount)
		}
		d.buf = AppendLen(d.buf, uint64(len(g.Consumers)))
		for i, con := range g.Consumers {
			d.appendString(con.Name)
			owned := 0
			for _, p := range g.PEL {
				if p.Consumer == i {
					owned++
				}
			}
			d.buf = AppendStreamConsumerHead(d.buf, con.SeenTime, owned)
			for _, p := range g.PEL {
				if p.Consumer == i {
					d.buf = AppendStreamRawID(d.buf, p.ID)
				}
			}
		}
	}
	d.state = dumpComplete
}

// The parts of RDB_TYPE_STREAM_LISTPACKS_2 (19), for a writer that
// streams a stream piece by piece (an RDB file's, proxy/rdbfile): the
// node count (AppendLen), then per node its key (AppendStreamRawID of the
// master ID, as an RDB string) and listpack (AppendStreamListpack, as an
// RDB string); AppendStreamMeta; the group count (AppendLen); per group
// its name (an RDB string), AppendStreamGroupHead, its pending entries
// (AppendStreamNACK each, in ID order), the consumer count (AppendLen),
// and per consumer its name (an RDB string), AppendStreamConsumerHead and
// the IDs of its pending entries (AppendStreamRawID each, in ID order).
// Dump.Stream is built from them.

// DecodeStreamNode decodes one node of a stream (its listpack blob,
// master its key), validated as a payload's nodes are: counts, flags,
// entries in ID order from master.
func DecodeStreamNode(master StreamID, blob []byte) (StreamNode, error) {
	return streamNode(master, blob)
}

// StreamIDFromKey decodes a node's 16-byte key.
func StreamIDFromKey(b []byte) StreamID { return rawID(b) }

// AppendStreamRawID appends id as 16 big-endian bytes (a node's key, a
// consumer's pending entry).
func AppendStreamRawID(dst []byte, id StreamID) []byte {
	dst = binary.BigEndian.AppendUint64(dst, id.Ms)
	return binary.BigEndian.AppendUint64(dst, id.Seq)
}

// AppendStreamListpack appends node n's listpack as Redis 7.0 encodes it,
// with its live entries only (n.Entries may hold deleted ones: skipped).
func AppendStreamListpack(dst []byte, n *StreamNode) []byte { return appendStreamListpack(dst, *n) }

// AppendStreamMeta appends what follows the nodes: length, last ID, first
// ID, max deleted ID and entries added.
func AppendStreamMeta(dst []byte, length uint64, last, first, maxDeleted StreamID, entriesAdded uint64) []byte {
	for _, v := range []uint64{length, last.Ms, last.Seq, first.Ms, first.Seq, maxDeleted.Ms, maxDeleted.Seq, entriesAdded} {
		dst = AppendLen(dst, v)
	}
	return dst
}

// AppendStreamGroupHead appends what follows a group's name: its last ID,
// entries read (-1: unknown) and pending entry count.
func AppendStreamGroupHead(dst []byte, last StreamID, entriesRead int64, pending int) []byte {
	dst = AppendLen(dst, last.Ms)
	dst = AppendLen(dst, last.Seq)
	dst = AppendLen(dst, uint64(entriesRead))
	return AppendLen(dst, uint64(pending))
}

// AppendStreamNACK appends one pending entry of a group's list.
func AppendStreamNACK(dst []byte, id StreamID, deliveryTime int64, deliveryCount uint64) []byte {
	dst = AppendStreamRawID(dst, id)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(deliveryTime))
	return AppendLen(dst, deliveryCount)
}

// AppendStreamConsumerHead appends what follows a consumer's name: its
// seen time and the count of its pending entries.
func AppendStreamConsumerHead(dst []byte, seenTime int64, pending int) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(seenTime))
	return AppendLen(dst, uint64(pending))
}

func liveEntries(n StreamNode) int {
	k := 0
	for _, e := range n.Entries {
		if !e.Deleted {
			k++
		}
	}
	return k
}

// appendStreamListpack encodes a node's live entries as Redis does.
func appendStreamListpack(lp []byte, n StreamNode) []byte {
	lp = append(lp, 0, 0, 0, 0, 0, 0)
	count := 0
	add := func(b []byte) {
		lp = lpAppendString(lp, b)
		count++
	}
	addInt := func(v int64) {
		lp = lpAppendInt(lp, v)
		count++
	}
	addInt(int64(liveEntries(n)))
	addInt(0)
	addInt(int64(len(n.Fields)))
	for _, f := range n.Fields {
		add(f)
	}
	addInt(0)
	for _, e := range n.Entries {
		if e.Deleted {
			continue
		}
		same := len(e.Fields) == 2*len(n.Fields)
		for i := 0; same && i < len(n.Fields); i++ {
			same = string(e.Fields[2*i]) == string(n.Fields[i])
		}
		flags := int64(0)
		if same {
			flags = lpFlagSameFields
		}
		addInt(flags)
		addInt(int64(e.ID.Ms - n.Master.Ms))
		addInt(int64(e.ID.Seq - n.Master.Seq))
		nf := int64(len(e.Fields) / 2)
		if !same {
			addInt(nf)
		}
		for i, f := range e.Fields {
			if i%2 == 1 || !same {
				add(f)
			}
		}
		lpCount := nf + 3
		if !same {
			lpCount += nf + 1
		}
		addInt(lpCount)
	}
	lp = append(lp, 0xff)
	binary.LittleEndian.PutUint32(lp, uint32(len(lp)))
	if count > 65535 {
		count = 65535
	}
	binary.LittleEndian.PutUint16(lp[4:], uint16(count))
	return lp
}
