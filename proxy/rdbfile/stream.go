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

// streamPayload reads a stream value (type 15, or 19 when v2) from the
// file, following its structure, and returns it re-encoded as a DUMP
// payload's value (its strings plain), which rdb.DecodeValue decodes and
// validates as RESTORE does.
func (r *reader) streamPayload(v2 bool) ([]byte, error) {
	var p []byte
	var err error
	count := func() uint64 {
		var n uint64
		if err == nil {
			n, err = r.count()
			p = rdb.AppendLen(p, n)
		}
		return n
	}
	str := func() {
		if err == nil {
			var s []byte
			if s, err = r.str(); err == nil {
				p = rdb.AppendLen(p, uint64(len(s)))
				p = append(p, s...)
			}
		}
	}
	var raw [24]byte
	bytes := func(n int) {
		if err == nil {
			if err = r.full(raw[:n]); err == nil {
				p = append(p, raw[:n]...)
			}
		}
	}
	nodes := count()
	for i := uint64(0); i < nodes && err == nil; i++ {
		str() // master ID
		str() // listpack
	}
	count() // length
	count() // last ID
	count()
	if v2 {
		for range 5 { // first ID, max deleted ID, entries added
			count()
		}
	}
	groups := count()
	for i := uint64(0); i < groups && err == nil; i++ {
		str() // name
		count()
		count() // last ID
		if v2 {
			count() // entries read
		}
		pel := count()
		for j := uint64(0); j < pel && err == nil; j++ {
			bytes(24) // ID, delivery time
			count()   // delivery count
		}
		consumers := count()
		for j := uint64(0); j < consumers && err == nil; j++ {
			str()    // name
			bytes(8) // seen time
			owned := count()
			for k := uint64(0); k < owned && err == nil; k++ {
				bytes(16)
			}
		}
	}
	return p, err
}

// loadStream reads a stream value and queues it whole: a stream is
// stored in one transaction (and left on disk, cold, when it does not fit
// the hot tier).
func (c *collector) loadStream(typ byte) error {
	p, err := c.l.r.streamPayload(typ == typeStreamListpacks2)
	if err != nil {
		return err
	}
	obj, err := rdb.DecodeValue(typ, p)
	if err != nil {
		return corrupt("stream: %v", err)
	}
	return c.whole(obj, len(p))
}

// restoreStream stores v as key (database db), which must not exist, with
// the file's nodes (live and deleted counts, master fields), entries,
// groups, consumers and pending entries. The caller closes the stream.
func restoreStream(tx *tiering.Tx, db int, key []byte, v *rdb.Stream) (*tiering.Stream, error) {
	var size int64
	for _, n := range v.Nodes {
		for _, e := range n.Entries {
			if !e.Deleted {
				for _, f := range e.Fields {
					size += int64(len(f))
				}
			}
		}
	}
	l := stream.NewLoader(codec.StreamMeta{Last: modelID(v.Last), First: modelID(v.First),
		MaxDeleted: modelID(v.MaxDeleted), EntriesAdded: v.EntriesAdded}, int64(v.Length), size, nil)
	for _, n := range v.Nodes {
		var live, deleted int64
		for _, e := range n.Entries {
			if e.Deleted {
				deleted++
			} else {
				live++
			}
		}
		if live == 0 {
			continue // Redis frees a node whose entries are all deleted
		}
		last := n.Entries[len(n.Entries)-1].ID
		l.LoadNodeLP(modelID(n.Master), n.Fields, live, deleted, modelID(last), int64(n.Bytes))
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
				return nil, corrupt("stream: %v", err)
			}
		}
		for _, p := range g.PEL {
			err := l.LoadPending(g.Name, modelID(p.ID), p.DeliveryTime, int64(p.DeliveryCount), g.Consumers[p.Consumer].Name)
			if err != nil {
				return nil, corrupt("stream: %v", err)
			}
		}
	}
	m, err := l.Done(int64(v.Length), nil)
	if err != nil {
		return nil, corrupt("stream: %v", err)
	}
	s, err := tx.OpenStream(db, key, true)
	if err != nil {
		return nil, err
	}
	s.Replace(m)
	return s, nil
}

func modelID(id rdb.StreamID) stream.ID { return stream.ID{Ms: id.Ms, Seq: id.Seq} }
