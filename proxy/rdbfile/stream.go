package rdbfile

import (
	"fmt"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/rdb"
	"github.com/spillway/spillway/tiering"
	"github.com/spillway/spillway/tiering/stream"
)

// Streams in RDB files: written as Redis 7.0 does
// (RDB_TYPE_STREAM_LISTPACKS_2), with proxy/rdb's encoder, one node at a
// time from the snapshot's records; read from types 15 and 19 (load.go
// calls loadStream).

// typeStreamListpacks2 is RDB_TYPE_STREAM_LISTPACKS_2.
const typeStreamListpacks2 = 19

// stream writes the current stream of it: its nodes with their live
// entries (nodes without any are left out, as DUMP does), its meta
// fields, then its groups with their pending entries and consumers. One
// node's entries are in memory at a time; a group's pending entries are
// gathered to write each consumer's list of them after the group's.
func (w *writer) stream(it *tiering.SnapshotKeys) error {
	nodes := 0
	err := it.StreamNodes(func(_ codec.StreamID, n *codec.StreamNodeValue) error {
		if n.Live > 0 {
			nodes++
		}
		return nil
	})
	if err != nil {
		return err
	}
	w.header(typeStreamListpacks2, it.Key())
	w.buf = rdb.AppendLen(w.buf, uint64(nodes))
	var node rdb.StreamNode
	var arena []byte
	written := 0
	err = it.StreamNodes(func(master codec.StreamID, n *codec.StreamNodeValue) error {
		if n.Live == 0 {
			return nil
		}
		node = rdb.StreamNode{Master: rdbID(master), Fields: n.Fields, Entries: node.Entries[:0]}
		arena = arena[:0]
		err := it.StreamEntries(master, n.Last, func(id codec.StreamID, fields [][]byte) error {
			// The entry's strings alias the iterator: copy them into
			// the node's arena (a slice made before it grew keeps its
			// old, still valid, copy).
			e := rdb.StreamEntry{ID: rdbID(id), Fields: make([][]byte, len(fields))}
			for i, f := range fields {
				start := len(arena)
				arena = append(arena, f...)
				e.Fields[i] = arena[start:len(arena):len(arena)]
			}
			node.Entries = append(node.Entries, e)
			return nil
		})
		if err != nil {
			return err
		}
		if len(node.Entries) == 0 {
			return fmt.Errorf("%w: stream %q: node %d-%d holds no entry", tiering.ErrCorrupt, it.Key(), master.Ms, master.Seq)
		}
		written++
		var key [16]byte
		w.put(rdb.AppendStreamRawID(key[:0], node.Master))
		w.tmp = rdb.AppendStreamListpack(w.tmp[:0], &node)
		return w.str(w.tmp)
	})
	if err != nil {
		return err
	}
	if written != nodes {
		return fmt.Errorf("rdbfile: stream %q: %d nodes counted, %d written", it.Key(), nodes, written)
	}
	m := it.StreamMeta()
	w.buf = rdb.AppendStreamMeta(w.buf, uint64(it.Len()), rdbID(m.Last), rdbID(m.First), rdbID(m.MaxDeleted), m.EntriesAdded)
	groups := 0
	if err := it.StreamGroups(func([]byte, codec.StreamID, int64) error { groups++; return nil }); err != nil {
		return err
	}
	w.buf = rdb.AppendLen(w.buf, uint64(groups))
	return it.StreamGroups(func(name []byte, last codec.StreamID, entriesRead int64) error {
		return w.streamGroup(it, name, last, entriesRead)
	})
}

// streamGroup writes one group: name, head, pending entries, consumers
// with the IDs of the entries they own (gathered in one pass over the
// group's pending entries: 16 bytes each).
func (w *writer) streamGroup(it *tiering.SnapshotKeys, name []byte, last codec.StreamID, entriesRead int64) error {
	owners := map[string][]rdb.StreamID{}
	pending := 0
	err := it.StreamPending(name, func(id codec.StreamID, _, _ int64, consumer []byte) error {
		owners[string(consumer)] = append(owners[string(consumer)], rdbID(id))
		pending++
		return nil
	})
	if err != nil {
		return err
	}
	w.put(name)
	w.buf = rdb.AppendStreamGroupHead(w.buf, rdbID(last), entriesRead, pending)
	err = it.StreamPending(name, func(id codec.StreamID, deliveryTime, deliveryCount int64, _ []byte) error {
		w.buf = rdb.AppendStreamNACK(w.buf, rdbID(id), deliveryTime, uint64(deliveryCount))
		return w.maybeFlush()
	})
	if err != nil {
		return err
	}
	consumers := 0
	if err := it.StreamConsumers(name, func([]byte, int64) error { consumers++; return nil }); err != nil {
		return err
	}
	w.buf = rdb.AppendLen(w.buf, uint64(consumers))
	owned := 0
	err = it.StreamConsumers(name, func(cname []byte, seen int64) error {
		w.put(cname)
		ids := owners[string(cname)]
		w.buf = rdb.AppendStreamConsumerHead(w.buf, seen, len(ids))
		for _, id := range ids {
			w.buf = rdb.AppendStreamRawID(w.buf, id)
		}
		owned += len(ids)
		return w.maybeFlush()
	})
	if err == nil && owned != pending {
		err = fmt.Errorf("%w: stream %q group %q: %d pending entries, %d owned by its consumers",
			tiering.ErrCorrupt, it.Key(), name, pending, owned)
	}
	return err
}

func rdbID(id codec.StreamID) rdb.StreamID { return rdb.StreamID{Ms: id.Ms, Seq: id.Seq} }

// valueReader reads the parts of a value for streamValue and
// streamGroups, each its own way: payloadReader copies them into a DUMP
// payload (Load), skipper walks them past (Records, Splice). The first
// error sticks: once err is set, every read does nothing.
type valueReader interface {
	// count reads a length; str a string; bytes n raw bytes.
	count() uint64
	str()
	bytes(n int)
	// part is called between the parts of a big value.
	part()
	failed() error
}

// streamValue walks a stream value (RDB_TYPE_STREAM_LISTPACKS, and with
// v2 _2): its nodes, meta fields and groups.
func streamValue(v valueReader, v2 bool) {
	nodes := v.count()
	for i := uint64(0); i < nodes && v.failed() == nil; i++ {
		v.str() // master ID
		v.str() // listpack
		v.part()
	}
	meta := 3 // length, last ID
	if v2 {
		meta += 5 // first ID, max deleted ID, entries added
	}
	for range meta {
		v.count()
	}
	streamGroups(v, v2)
}

// streamGroups walks a stream value's groups (their count first).
func streamGroups(v valueReader, v2 bool) {
	groups := v.count()
	for i := uint64(0); i < groups && v.failed() == nil; i++ {
		v.str() // name
		v.count()
		v.count() // last ID
		if v2 {
			v.count() // entries read
		}
		pel := v.count()
		for j := uint64(0); j < pel && v.failed() == nil; j++ {
			v.bytes(24) // ID, delivery time
			v.count()   // delivery count
		}
		consumers := v.count()
		for j := uint64(0); j < consumers && v.failed() == nil; j++ {
			v.str()    // name
			v.bytes(8) // seen time
			owned := v.count()
			for k := uint64(0); k < owned && v.failed() == nil; k++ {
				v.bytes(16)
			}
		}
		v.part()
	}
}

// payloadReader copies what it reads of a stream value from the file
// into p, re-encoded as a DUMP payload's value (strings plain), for
// rdb.DecodeValue to decode and validate.
type payloadReader struct {
	r   *reader
	p   []byte
	err error
	raw [24]byte
}

func (pr *payloadReader) count() uint64 {
	var n uint64
	if pr.err == nil {
		n, pr.err = pr.r.count()
		pr.p = rdb.AppendLen(pr.p, n)
	}
	return n
}

func (pr *payloadReader) str() {
	if pr.err != nil {
		return
	}
	s, err := pr.r.str()
	if pr.err = err; err == nil {
		pr.p = rdb.AppendLen(pr.p, uint64(len(s)))
		pr.p = append(pr.p, s...)
	}
}

func (pr *payloadReader) bytes(n int) {
	if pr.err == nil {
		if pr.err = pr.r.full(pr.raw[:n]); pr.err == nil {
			pr.p = append(pr.p, pr.raw[:n]...)
		}
	}
}

func (pr *payloadReader) part() {}

func (pr *payloadReader) failed() error { return pr.err }

// loadStream reads a stream value. One of type 15 (Redis 5 to 6.2, whose
// groups' entries-read are estimated from the whole stream) is read and
// stored whole. One of type 19 is read node by node: while it stays
// under ChunkBytes it is stored whole with the next pending keys, beyond
// that its nodes go to the store in transactions of about ChunkBytes
// (tiering.StreamLoad) and its groups and key in a last one, so memory
// holds one chunk of nodes (and the groups) whatever the stream's size.
func (c *collector) loadStream(typ byte) error {
	pr := &payloadReader{r: c.l.r}
	if typ != typeStreamListpacks2 {
		streamValue(pr, false)
		if pr.err != nil {
			return pr.err
		}
		obj, err := rdb.DecodeValue(typ, pr.p)
		if err != nil {
			return corrupt("stream: %v", err)
		}
		return c.whole(obj, len(pr.p))
	}
	sl := &streamLoader{c: c}
	nodes, err := c.l.r.count()
	if err != nil {
		return err
	}
	for i := uint64(0); i < nodes; i++ {
		if err := sl.node(); err != nil {
			return err
		}
	}
	// The meta fields, then the groups, decoded as the value of a stream
	// without entries (its length 0) for their validation.
	var meta [8]uint64
	for i := range meta {
		if meta[i], err = c.l.r.count(); err != nil {
			return err
		}
	}
	pr.p = rdb.AppendLen(pr.p, 0)
	pr.p = rdb.AppendStreamMeta(pr.p, 0, rdb.StreamID{Ms: meta[1], Seq: meta[2]}, rdb.StreamID{Ms: meta[3], Seq: meta[4]},
		rdb.StreamID{Ms: meta[5], Seq: meta[6]}, meta[7])
	streamGroups(pr, true)
	if pr.err != nil {
		return pr.err
	}
	obj, err := rdb.DecodeValue(typ, pr.p)
	if err != nil {
		return corrupt("stream: %v", err)
	}
	if meta[0] != sl.live {
		return corrupt("stream: length %d, %d entries", meta[0], sl.live)
	}
	v := obj.Stream
	v.Length, v.Nodes = meta[0], sl.nodes
	return sl.end(v)
}

// streamLoader gathers a type-19 stream's nodes, writing them in chunks
// once they outgrow ChunkBytes.
type streamLoader struct {
	c     *collector
	nodes []rdb.StreamNode // the chunk being gathered
	bytes int
	live  uint64
	last  rdb.StreamID
	any   bool
	load  *tiering.StreamLoad // once a chunk was written
}

// node reads one node, checks its entries follow the previous ones.
func (sl *streamLoader) node() error {
	r := sl.c.l.r
	key, err := r.str()
	if err != nil {
		return err
	}
	if len(key) != 16 {
		return corrupt("stream node key of %d bytes", len(key))
	}
	blob, err := r.str()
	if err != nil {
		return err
	}
	n, err := rdb.DecodeStreamNode(rdb.StreamIDFromKey(key), blob)
	if err != nil {
		return corrupt("stream: %v", err)
	}
	for _, e := range n.Entries {
		if sl.any && !(sl.last.Ms < e.ID.Ms || sl.last.Ms == e.ID.Ms && sl.last.Seq < e.ID.Seq) {
			return corrupt("stream entries out of order across nodes")
		}
		sl.last, sl.any = e.ID, true
		if !e.Deleted {
			sl.live++
		}
	}
	if sl.c.skip {
		return nil
	}
	sl.nodes = append(sl.nodes, n)
	sl.bytes += len(blob)
	if sl.bytes >= sl.c.l.opts.ChunkBytes {
		return sl.writeChunk()
	}
	return nil
}

// writeChunk writes the gathered nodes in a transaction of their own.
func (sl *streamLoader) writeChunk() error {
	c, l := sl.c, sl.c.l
	if sl.load == nil {
		if err := l.flush(); err != nil { // keep the file's order of keys
			return err
		}
	}
	_, err := l.eng.Update(func(tx *tiering.Tx) error {
		if sl.load == nil {
			var err error
			if sl.load, err = tx.BeginStreamLoad(c.db, c.key); err != nil {
				return err
			}
		}
		m, err := streamModel(&rdb.Stream{Nodes: sl.nodes}, false)
		if err != nil {
			return err
		}
		return sl.load.Add(tx, m)
	})
	if err != nil {
		return err
	}
	clear(sl.nodes)
	sl.nodes, sl.bytes = sl.nodes[:0], 0
	l.progress()
	return nil
}

// end stores the stream: whole if no chunk was written, else its last
// nodes, groups and key.
func (sl *streamLoader) end(v *rdb.Stream) error {
	c, l := sl.c, sl.c.l
	if c.skip {
		l.stats.Expired++
		return nil
	}
	if sl.load == nil {
		return c.whole(&rdb.Object{Kind: rdb.KindStream, Stream: v}, sl.bytes)
	}
	_, err := l.eng.Update(func(tx *tiering.Tx) error {
		if len(sl.nodes) > 0 {
			m, err := streamModel(&rdb.Stream{Nodes: sl.nodes}, false)
			if err != nil {
				return err
			}
			if err := sl.load.Add(tx, m); err != nil {
				return err
			}
		}
		g, err := streamModel(&rdb.Stream{Groups: v.Groups}, true)
		if err != nil {
			return err
		}
		meta := codec.StreamMeta{Last: codecID(v.Last), First: codecID(v.First), MaxDeleted: codecID(v.MaxDeleted), EntriesAdded: v.EntriesAdded}
		if err := sl.load.Finish(tx, meta, g); err != nil {
			return err
		}
		if c.expireAt != 0 {
			if _, err := tx.SetExpire(c.db, c.key, c.expireAt); err != nil {
				return err
			}
		}
		return applyHints(tx, c.db, c.key, c.freq, c.idle)
	})
	if err != nil {
		return err
	}
	l.stats.Keys++
	l.prog.Keys.Add(1)
	l.progress()
	return nil
}

func codecID(id rdb.StreamID) codec.StreamID { return codec.StreamID{Ms: id.Ms, Seq: id.Seq} }

// streamModel is StreamModel with its errors reported as a corrupt file.
func streamModel(v *rdb.Stream, groupsOnly bool) (*stream.Stream, error) {
	m, err := StreamModel(v, groupsOnly)
	if err != nil {
		return nil, corrupt("stream: %v", err)
	}
	return m, nil
}

// StreamModel builds the in-memory model of v, a stream decoded and
// validated by proxy/rdb (a file's, or a RESTORE payload's): its nodes
// with live entries (the payload's nodes kept: master fields, live and
// deleted counts, listpack sizes) and entries, and its groups, consumers
// and pending entries. With groupsOnly the meta and counts are left out
// (a StreamLoad's Finish).
func StreamModel(v *rdb.Stream, groupsOnly bool) (*stream.Stream, error) {
	var size, live int64
	for _, n := range v.Nodes {
		for _, e := range n.Entries {
			if !e.Deleted {
				live++
				for _, f := range e.Fields {
					size += int64(len(f))
				}
			}
		}
	}
	var meta codec.StreamMeta
	if !groupsOnly {
		meta = codec.StreamMeta{Last: modelID(v.Last), First: modelID(v.First),
			MaxDeleted: modelID(v.MaxDeleted), EntriesAdded: v.EntriesAdded}
	}
	l := stream.NewLoader(meta, live, size, nil)
	for _, n := range v.Nodes {
		var nl, deleted int64
		for _, e := range n.Entries {
			if e.Deleted {
				deleted++
			} else {
				nl++
			}
		}
		if nl == 0 {
			continue // Redis frees a node whose entries are all deleted
		}
		last := n.Entries[len(n.Entries)-1].ID
		l.LoadNodeLP(modelID(n.Master), n.Fields, nl, deleted, modelID(last), int64(n.Bytes))
	}
	for _, n := range v.Nodes {
		for _, e := range n.Entries {
			if !e.Deleted {
				l.LoadEntry(modelID(e.ID), e.Fields)
			}
		}
	}
	for _, g := range v.Groups {
		l.LoadGroup(g.Name, modelID(g.LastID), g.EntriesRead)
	}
	for _, g := range v.Groups {
		for _, con := range g.Consumers {
			if err := l.LoadConsumer(g.Name, con.Name, con.SeenTime); err != nil {
				return nil, err
			}
		}
		for _, p := range g.PEL {
			err := l.LoadPending(g.Name, modelID(p.ID), p.DeliveryTime, int64(p.DeliveryCount), g.Consumers[p.Consumer].Name)
			if err != nil {
				return nil, err
			}
		}
	}
	return l.Done(live, nil)
}

// StreamValue is StreamModel's inverse: the value DUMP writes for m (its
// nodes with their live entries, its meta fields, groups, consumers and
// pending entries), for proxy/rdb's Dump.Stream. A cold model's entries
// are read from the store; a read error is m's (m.Err).
func StreamValue(m *stream.Stream) *rdb.Stream {
	v := &rdb.Stream{Length: uint64(m.Len()), Last: rdbID(m.Last), First: rdbID(m.First),
		MaxDeleted: rdbID(m.MaxDeleted), EntriesAdded: m.EntriesAdded}
	for _, n := range m.NodeList() {
		rn := rdb.StreamNode{Master: rdbID(n.Master), Fields: n.Fields}
		m.Range(n.Master, n.Last, false, func(e *stream.Entry) bool {
			rn.Entries = append(rn.Entries, rdb.StreamEntry{ID: rdbID(e.ID), Fields: e.Fields})
			return true
		})
		v.Nodes = append(v.Nodes, rn)
	}
	for _, g := range m.Groups() {
		rg := rdb.StreamGroup{Name: g.Name, LastID: rdbID(g.LastID), EntriesRead: g.EntriesRead}
		index := make(map[*stream.Consumer]int, len(g.Consumers()))
		for i, c := range g.Consumers() {
			index[c] = i
			rg.Consumers = append(rg.Consumers, rdb.StreamConsumer{Name: c.Name, SeenTime: c.SeenTime})
		}
		m.EachPending(g, nil, stream.ID{}, stream.MaxID, func(p *stream.NACK) bool {
			rg.PEL = append(rg.PEL, rdb.StreamNACK{ID: rdbID(p.ID), DeliveryTime: p.DeliveryTime,
				DeliveryCount: uint64(p.DeliveryCount), Consumer: index[p.Consumer]})
			return true
		})
		v.Groups = append(v.Groups, rg)
	}
	return v
}

// restoreStream stores v (validated: rdb.DecodeValue, or loadStream's
// checks) as key (database db), which must not exist, in one
// transaction. The caller closes the stream.
func restoreStream(tx *tiering.Tx, db int, key []byte, v *rdb.Stream) (*tiering.Stream, error) {
	m, err := streamModel(v, false)
	if err != nil {
		return nil, err
	}
	s, err := tx.OpenStream(db, key, true)
	if err != nil {
		return nil, err
	}
	s.Replace(m)
	return s, nil
}

func modelID(id rdb.StreamID) stream.ID { return stream.ID{Ms: id.Ms, Seq: id.Seq} }
