package rdbfile

import (
	"fmt"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/rdb"
	"github.com/spillway/spillway/tiering"
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
