package tiering

import (
	"fmt"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/coldstore"
	"github.com/spillway/spillway/tiering/stream"
)

// Streams. A stream is stored as its meta record (codec.StreamMeta: last,
// first and max-deleted IDs, entries added) plus one record per entry,
// per listpack node Redis would hold, per consumer group, per consumer and
// per pending entry (codec/stream.go), so every change writes only the
// records it touches: XADD one entry and its node, XACK one delete.
//
// In memory a stream is a stream.Stream model. One that fits the hot
// tier's share (keepHot) is loaded whole and stays hot. A bigger one is
// cold: only its groups (consumers, pending entries) are loaded, and kept
// hot if they fit; its entries and nodes stay on disk, read by seeks
// (XRANGE from anywhere is a seek; XADD reads the last node and writes
// the entry and the node).

// streamState is a stream entry's own part: its meta record's stream
// fields, and the model when the stream is loaded.
type streamState struct {
	meta codec.StreamMeta
	mem  *stream.Stream
}

// Stream is a stream opened by a Tx: the model (read it and change it
// through its methods) plus the key it belongs to. Close must be called
// after changes: it stores the meta record and keeps the hot tier's
// accounting right.
type Stream struct {
	*stream.Stream
	tx      *Tx
	pdb     uint8
	key     []byte
	hk      []byte
	e       *Entry
	created bool
	j       *streamJournal
	jv      streamJournal // what j points to
}

// streamHandle returns a Stream from the transaction's pool (see
// Tx.coll): opening a hot stream allocates nothing.
func (tx *Tx) streamHandle() *Stream {
	if tx.strmsUsed == len(tx.strms) {
		tx.strms = append(tx.strms, new(Stream))
	}
	x := tx.strms[tx.strmsUsed]
	tx.strmsUsed++
	return x
}

// streamJournal writes a stream's changes to the transaction's batch.
type streamJournal struct {
	tx      *Tx
	pdb     uint8
	key     []byte
	version uint64
	kb, vb  []byte
	dirty   bool
	err     error
	// first is the model's first entry ID (nil until the model is bound):
	// no live entry is below it, so walks from the start of the entries
	// and nodes begin there, past the tombstones of the entries deleted
	// before (XDEL, XTRIM of the oldest).
	first *stream.ID
}

func (j *streamJournal) set(k, v []byte) {
	j.dirty = true
	if j.err == nil {
		j.err = j.tx.batch.Set(k, v)
	}
}

func (j *streamJournal) del(k []byte) {
	j.dirty = true
	if j.err == nil {
		j.err = j.tx.batch.Delete(k)
	}
}

// Range reads entries from the store (stream.Store).
func (j *streamJournal) Range(start, end stream.ID, rev bool, fn func(e *stream.Entry) bool) error {
	if j.first != nil && stream.Less(start, *j.first) {
		start = *j.first
	}
	j.kb = codec.AppendStreamTagPrefix(j.kb[:0], j.pdb, j.key, j.version, codec.TagStreamEntry)
	return j.rangeIDs(j.kb, start, end, rev, func(id stream.ID, it *coldstore.Iter) (bool, error) {
		val, err := it.ValueAndErr()
		if err != nil {
			return false, err
		}
		f, err := codec.ParseStreamValues(val)
		if err != nil {
			return false, fmt.Errorf("%w: stream %q: %w", ErrCorrupt, j.key, err)
		}
		return fn(&stream.Entry{ID: id, Fields: f}), nil
	})
}

// rangeIDs walks the records whose keys are prefix followed by a stream
// ID (entries, a group's pending entries, a consumer's pending index),
// from start to end inclusive, or from end down to start with rev. It
// calls fn with each record's ID and it positioned on the record, which
// fn decodes as its layout says; fn returning false or an error stops the
// walk. prefix is copied first: it may be j.kb, which fn may reuse.
func (j *streamJournal) rangeIDs(prefix []byte, start, end stream.ID, rev bool, fn func(id stream.ID, it *coldstore.Iter) (bool, error)) error {
	lo := codec.AppendStreamID(append(make([]byte, 0, len(prefix)+16), prefix...), start)
	var hi []byte
	if next, ok := stream.Incr(end); ok {
		hi = codec.AppendStreamID(append(make([]byte, 0, len(prefix)+16), prefix...), next)
	} else {
		hi = codec.PrefixEnd(prefix)
	}
	it, err := j.tx.batch.NewIter(lo, hi)
	if err != nil {
		return err
	}
	defer it.Close()
	first, step := it.First, it.Next
	if rev {
		first, step = it.Last, it.Prev
	}
	for valid := first(); valid; valid = step() {
		k := it.Key()
		if more, err := fn(codec.DecodeStreamID(k[len(k)-16:]), it); !more || err != nil {
			return err
		}
	}
	return it.Error()
}

// Node reads the last node whose master ID is at most id (stream.Store).
func (j *streamJournal) Node(id stream.ID) (*stream.Node, error) {
	it, err := j.nodes()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	if !j.seekNode(it, id) {
		return nil, it.Error()
	}
	return j.nodeAt(it)
}

// EachNode reads every node in ID order (stream.Store).
func (j *streamJournal) EachNode(fn func(n *stream.Node) bool) error {
	it, err := j.nodes()
	if err != nil {
		return err
	}
	defer it.Close()
	valid := false
	if j.first != nil && !stream.IsZero(*j.first) {
		// From the node holding the first entry: every node before it is
		// deleted (a node goes when its last live entry does).
		valid = j.seekNode(it, *j.first)
	}
	if !valid {
		valid = it.First()
	}
	for ; valid; valid = it.Next() {
		n, err := j.nodeAt(it)
		if err != nil {
			return err
		}
		if !fn(n) {
			return nil
		}
	}
	return it.Error()
}

// nodes opens an iterator over the stream's nodes.
func (j *streamJournal) nodes() (*coldstore.Iter, error) {
	prefix := codec.AppendStreamTagPrefix(nil, j.pdb, j.key, j.version, codec.TagStreamNode)
	return j.tx.batch.NewIter(prefix, codec.PrefixEnd(prefix))
}

// seekNode positions it (over the nodes) on the last node whose master ID
// is at most id, and reports whether there is one.
func (j *streamJournal) seekNode(it *coldstore.Iter, id stream.ID) bool {
	if next, ok := stream.Incr(id); ok {
		return it.SeekLT(codec.AppendStreamIDKey(nil, j.pdb, j.key, j.version, codec.TagStreamNode, next))
	}
	return it.Last()
}

func (j *streamJournal) nodeAt(it *coldstore.Iter) (*stream.Node, error) {
	k := it.Key()
	val, err := it.ValueAndErr()
	if err != nil {
		return nil, err
	}
	v, err := codec.ParseStreamNode(val)
	if err != nil {
		return nil, fmt.Errorf("%w: stream %q: %w", ErrCorrupt, j.key, err)
	}
	return &stream.Node{Master: codec.DecodeStreamID(k[len(k)-16:]), Fields: v.Fields, Live: v.Live,
		Deleted: v.Deleted, Last: v.Last, Bytes: v.LPBytes}, nil
}

// Get reads one entry from the store (stream.Store).
func (j *streamJournal) Get(id stream.ID) (*stream.Entry, error) {
	buf, found, err := j.tx.batch.GetData(j.idKey(codec.TagStreamEntry, id), j.vb[:0])
	j.vb = buf
	if err != nil || !found {
		return nil, err
	}
	f, err := codec.ParseStreamValues(buf)
	if err != nil {
		return nil, fmt.Errorf("%w: stream %q: %w", ErrCorrupt, j.key, err)
	}
	return &stream.Entry{ID: id, Fields: f}, nil
}

func (j *streamJournal) idKey(tag byte, id stream.ID) []byte {
	j.kb = codec.AppendStreamIDKey(j.kb[:0], j.pdb, j.key, j.version, tag, id)
	return j.kb
}

// The stream.Journal methods: each change becomes one record write or
// delete in the transaction's batch (a group's removal, two range deletes).

// PutEntry writes an entry's record.
func (j *streamJournal) PutEntry(e *stream.Entry) {
	j.vb = codec.AppendStreamValues(j.vb[:0], e.Fields)
	j.set(j.idKey(codec.TagStreamEntry, e.ID), j.vb)
}

// DelEntry deletes an entry's record.
func (j *streamJournal) DelEntry(id stream.ID) { j.del(j.idKey(codec.TagStreamEntry, id)) }

// PutNode writes a node's record.
func (j *streamJournal) PutNode(n *stream.Node) {
	j.vb = codec.AppendStreamNode(j.vb[:0], &codec.StreamNodeValue{Live: n.Live, Deleted: n.Deleted, Last: n.Last, LPBytes: n.Bytes, Fields: n.Fields})
	j.set(j.idKey(codec.TagStreamNode, n.Master), j.vb)
}

// DelNode deletes a node's record.
func (j *streamJournal) DelNode(master stream.ID) { j.del(j.idKey(codec.TagStreamNode, master)) }

// PutGroup writes a group's record, with its PEL counters.
func (j *streamJournal) PutGroup(g *stream.Group) {
	j.kb = codec.AppendStreamGroupKey(j.kb[:0], j.pdb, j.key, j.version, g.Name)
	lo, hi := g.PendingBounds()
	j.vb = codec.AppendStreamGroupPEL(j.vb[:0], g.LastID, g.EntriesRead, codec.StreamGroupPEL{Pending: g.PendingCount(), Min: lo, Max: hi})
	j.set(j.kb, j.vb)
}

// DelGroup deletes a group's record, consumers and pending entries.
func (j *streamJournal) DelGroup(g *stream.Group) {
	j.kb = codec.AppendStreamGroupKey(j.kb[:0], j.pdb, j.key, j.version, g.Name)
	j.del(j.kb)
	for _, tag := range []byte{codec.TagStreamConsumer, codec.TagStreamPending, codec.TagStreamConsumerPending} {
		lo := codec.AppendStreamInGroupPrefix(nil, j.pdb, j.key, j.version, tag, g.Name)
		if j.err == nil {
			j.err = j.tx.batch.DeleteRange(lo, codec.PrefixEnd(lo))
		}
	}
}

// PutConsumer writes a consumer's record, with its PEL counters.
func (j *streamJournal) PutConsumer(g *stream.Group, c *stream.Consumer) {
	j.kb = codec.AppendStreamConsumerKey(j.kb[:0], j.pdb, j.key, j.version, g.Name, c.Name)
	j.vb = codec.AppendStreamConsumer(j.vb[:0], c.SeenTime, c.PendingCount(), c.PendingMin())
	j.set(j.kb, j.vb)
}

// DelConsumer deletes a consumer's record and its pending index.
func (j *streamJournal) DelConsumer(g *stream.Group, c *stream.Consumer) {
	j.kb = codec.AppendStreamConsumerKey(j.kb[:0], j.pdb, j.key, j.version, g.Name, c.Name)
	j.del(j.kb)
	lo := codec.AppendStreamConsumerPendingPrefix(nil, j.pdb, j.key, j.version, g.Name, c.Name)
	if j.err == nil {
		j.err = j.tx.batch.DeleteRange(lo, codec.PrefixEnd(lo))
	}
}

// PutPending writes a pending entry's record and its consumer's index
// record.
func (j *streamJournal) PutPending(g *stream.Group, n *stream.NACK) {
	j.kb = codec.AppendStreamPendingKey(j.kb[:0], j.pdb, j.key, j.version, g.Name, n.ID)
	j.vb = codec.AppendStreamPending(j.vb[:0], n.DeliveryTime, n.DeliveryCount, n.Consumer.Name)
	j.set(j.kb, j.vb)
	j.kb = codec.AppendStreamConsumerPendingKey(j.kb[:0], j.pdb, j.key, j.version, g.Name, n.Consumer.Name, n.ID)
	j.set(j.kb, nil)
}

// DelPending deletes a pending entry's record and, with c, c's index
// record for it.
func (j *streamJournal) DelPending(g *stream.Group, id stream.ID, c *stream.Consumer) {
	j.kb = codec.AppendStreamPendingKey(j.kb[:0], j.pdb, j.key, j.version, g.Name, id)
	j.del(j.kb)
	if c != nil {
		j.kb = codec.AppendStreamConsumerPendingKey(j.kb[:0], j.pdb, j.key, j.version, g.Name, c.Name, id)
		j.del(j.kb)
	}
}

// GetPending reads one pending entry (stream.Store).
func (j *streamJournal) GetPending(g *stream.Group, id stream.ID) (int64, int64, []byte, bool, error) {
	j.kb = codec.AppendStreamPendingKey(j.kb[:0], j.pdb, j.key, j.version, g.Name, id)
	buf, found, err := j.tx.batch.GetData(j.kb, j.vb[:0])
	j.vb = buf
	if err != nil || !found {
		return 0, 0, nil, false, err
	}
	t, n, c, err := codec.ParseStreamPending(buf)
	if err != nil {
		return 0, 0, nil, false, fmt.Errorf("%w: stream %q: %w", ErrCorrupt, j.key, err)
	}
	return t, n, c, true, nil
}

// RangePending walks a group's pending entries, or a consumer's through
// its index (stream.Store).
func (j *streamJournal) RangePending(g *stream.Group, c *stream.Consumer, start, end stream.ID, rev bool, fn func(id stream.ID, deliveryTime, deliveryCount int64, consumer []byte) bool) error {
	if c != nil {
		// The index's records are empty: each entry is read from the group's.
		j.kb = codec.AppendStreamConsumerPendingPrefix(j.kb[:0], j.pdb, j.key, j.version, g.Name, c.Name)
		return j.rangeIDs(j.kb, start, end, rev, func(id stream.ID, _ *coldstore.Iter) (bool, error) {
			t, n, name, found, err := j.GetPending(g, id)
			if err != nil {
				return false, err
			}
			if !found {
				return false, fmt.Errorf("%w: stream %q: consumer %q's pending entry %v has no record", ErrCorrupt, j.key, c.Name, id)
			}
			return fn(id, t, n, name), nil
		})
	}
	j.kb = codec.AppendStreamInGroupPrefix(j.kb[:0], j.pdb, j.key, j.version, codec.TagStreamPending, g.Name)
	return j.rangeIDs(j.kb, start, end, rev, func(id stream.ID, it *coldstore.Iter) (bool, error) {
		val, err := it.ValueAndErr()
		if err != nil {
			return false, fmt.Errorf("%w: stream %q: %w", ErrCorrupt, j.key, err)
		}
		t, n, name, err := codec.ParseStreamPending(val)
		if err != nil {
			return false, fmt.Errorf("%w: stream %q: %w", ErrCorrupt, j.key, err)
		}
		return fn(id, t, n, name), nil
	})
}

// OpenStream opens key (database db) as a stream, loading it if it is
// cold. If key does not exist it returns nil, unless create is set: then
// it returns an empty stream, stored on Close. A key of another type
// yields ErrWrongType.
func (tx *Tx) OpenStream(db int, key []byte, create bool) (*Stream, error) {
	e, err := tx.lookup(db, key, codec.TypeNone, true)
	if err != nil {
		return nil, err
	}
	switch {
	case e != nil && e.Type != codec.TypeStream:
		return nil, ErrWrongType
	case e == nil && !create:
		return nil, nil
	}
	pdb := tx.pdb(db)
	x := tx.streamHandle()
	*x = Stream{tx: tx, pdb: pdb, key: append(x.key[:0], key...), hk: append(x.hk[:0], tx.hk...), e: e,
		jv: streamJournal{kb: x.jv.kb[:0], vb: x.jv.vb[:0]}}
	if e == nil {
		v, err := tx.e.cold.NextVersion()
		if err != nil {
			return nil, fmt.Errorf("tiering: new stream: %w", err)
		}
		x.e = &Entry{Type: codec.TypeStream, Version: v, strm: &streamState{}}
		x.created = true
	}
	x.jv.tx, x.jv.pdb, x.jv.key, x.jv.version = tx, pdb, x.key, x.e.Version
	x.j = &x.jv
	st := x.e.strm
	switch {
	case st.mem != nil:
		st.mem.Bind(x.j, x.j)
	case x.created:
		st.mem = stream.New(x.j)
	default:
		// Whole only with room to grow: a stream demoted for its size is not
		// loaded whole again at its next command.
		m, err := tx.loadStream(pdb, key, x.e, x.j, !tx.e.keepHot(2*wholeStreamSize(key, x.e)))
		if err != nil {
			return nil, err
		}
		st.mem = m
		tx.e.Stats.ColdReads.Add(1)
		if tx.e.keepHot(entrySize(key, x.e)) {
			tx.hk = append(tx.hk[:0], x.hk...)
			tx.promote(x.e)
		}
	}
	x.Stream = st.mem
	x.jv.first = &st.mem.First
	return x, nil
}

// wholeStreamSize estimates what a cold stream loaded whole would weigh.
func wholeStreamSize(key []byte, e *Entry) int64 {
	return int64(len(key)) + entryOverhead + e.Bytes + e.Count*(64+4*24)
}

// loadStream reads a stored stream's records into a model reporting to j:
// all of them, or with cold set only its groups, consumers and pending
// entries: the model then reads entries and nodes from the store through
// j.
func (tx *Tx) loadStream(pdb uint8, key []byte, e *Entry, j *streamJournal, cold bool) (*stream.Stream, error) {
	var store stream.Store
	tags := []byte{codec.TagStreamGroup, codec.TagStreamConsumer, codec.TagStreamPending, codec.TagStreamNode, codec.TagStreamEntry}
	if cold {
		store, tags = j, tags[:3]
	}
	l := stream.NewLoader(e.strm.meta, e.Count, e.Bytes, store)
	for _, tag := range tags {
		if tag == codec.TagStreamPending && cold && !l.Legacy() {
			continue // read per record from the store
		}
		if err := tx.loadStreamTag(pdb, key, e.Version, tag, l); err != nil {
			return nil, fmt.Errorf("%w: stream %q: %w", ErrCorrupt, key, err)
		}
	}
	m, err := l.Done(e.Count, j)
	if err == nil && l.Legacy() {
		// A store written before the PEL counters: rewrite the groups in
		// the current form, in this command's batch.
		m.RewritePEL()
	}
	return m, err
}

func (tx *Tx) loadStreamTag(pdb uint8, key []byte, version uint64, tag byte, l *stream.Loader) error {
	lo := codec.AppendStreamTagPrefix(nil, pdb, key, version, tag)
	it, err := tx.batch.NewIter(lo, codec.PrefixEnd(lo))
	if err != nil {
		return err
	}
	defer it.Close()
	for valid := it.First(); valid; valid = it.Next() {
		rest := it.Key()[len(lo):]
		val, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if err := loadStreamRecord(tag, rest, val, l); err != nil {
			return err
		}
	}
	return it.Error()
}

func loadStreamRecord(tag byte, rest, val []byte, l *stream.Loader) error {
	switch tag {
	case codec.TagStreamGroup:
		last, er, err := codec.ParseStreamGroup(val)
		if err != nil {
			return err
		}
		p, counted, err := codec.ParseStreamGroupPEL(val)
		if err != nil {
			return err
		}
		if counted {
			l.LoadGroupPEL(rest, last, er, p)
		} else {
			l.LoadGroup(rest, last, er)
		}
	case codec.TagStreamConsumer:
		g, name, err := codec.ParseStreamInGroup(rest)
		if err != nil {
			return fmt.Errorf("consumer record: %w", err)
		}
		seen, pending, lo, _, err := codec.ParseStreamConsumer(val)
		if err != nil {
			return err
		}
		return l.LoadConsumerPEL(g, name, seen, pending, lo)
	case codec.TagStreamPending:
		g, idb, err := codec.ParseStreamInGroup(rest)
		if err != nil || len(idb) != 16 {
			return fmt.Errorf("pending record: %v", err)
		}
		t, n, c, err := codec.ParseStreamPending(val)
		if err != nil {
			return err
		}
		return l.LoadPending(g, codec.DecodeStreamID(idb), t, n, c)
	case codec.TagStreamNode:
		if len(rest) != 16 {
			return fmt.Errorf("node key of %d bytes", len(rest))
		}
		v, err := codec.ParseStreamNode(val)
		if err != nil {
			return err
		}
		l.LoadNode(codec.DecodeStreamID(rest), v)
	case codec.TagStreamEntry:
		if len(rest) != 16 {
			return fmt.Errorf("entry key of %d bytes", len(rest))
		}
		f, err := codec.ParseStreamValues(val)
		if err != nil {
			return err
		}
		l.LoadEntry(codec.DecodeStreamID(rest), f)
	}
	return nil
}

// syncStreamMeta copies a loaded stream's counters into its entry.
func syncStreamMeta(e *Entry) {
	st := e.strm
	if st == nil || st.mem == nil {
		return
	}
	m := st.mem
	st.meta = codec.StreamMeta{Last: m.Last, First: m.First, MaxDeleted: m.MaxDeleted, EntriesAdded: m.EntriesAdded}
	e.Count, e.Bytes = m.Len(), m.Bytes()
}

// Created reports whether this open created the stream.
func (x *Stream) Created() bool { return x.created }

// Close stores the stream's meta record if anything changed (a new stream
// is always stored: Redis keeps empty streams), and keeps the hot tier's
// accounting right. Closing a nil handle does nothing.
func (x *Stream) Close() error {
	if x == nil {
		return nil
	}
	x.Stream.Flush()
	if x.j.err != nil {
		return x.j.err
	}
	if err := x.Stream.Err(); err != nil {
		return err
	}
	e, tx := x.e, x.tx
	before := e.strm.meta
	count, size := e.Count, e.Bytes
	syncStreamMeta(e)
	if !x.created && !x.j.dirty && before == e.strm.meta && count == e.Count && size == e.Bytes {
		return nil
	}
	x.j.dirty = false
	if err := tx.putMeta(x.pdb, x.key, e); err != nil {
		return err
	}
	if x.created {
		x.created = false
		tx.addKeys(x.pdb, 1)
	}
	if !tx.settleHot(x.hk, x.key, e, true) {
		// Too big to be held whole: keep its groups hot, its entries and
		// nodes on disk, rather than load it again at its next command.
		if m := e.strm.mem; !m.Cold() {
			m.MakeCold(x.j)
			if tx.settleHot(x.hk, x.key, e, true) {
				return nil
			}
		}
		e.strm.mem = nil
	}
	return nil
}

// duplicateStream writes a copy of src's stream under version v of dst.
func (tx *Tx) duplicateStream(psrc uint8, src []byte, e *Entry, pdst uint8, dst []byte, v uint64) (*Entry, error) {
	sj := &streamJournal{tx: tx, pdb: psrc, key: append([]byte(nil), src...), version: e.Version}
	m := e.strm.mem
	if m == nil {
		var err error
		if m, err = tx.loadStream(psrc, src, e, sj, true); err != nil {
			return nil, err
		}
	} else {
		m.Bind(sj, sj)
	}
	j := &streamJournal{tx: tx, pdb: pdst, key: append([]byte(nil), dst...), version: v}
	c := m.Copy(j, j)
	if j.err != nil {
		return nil, j.err
	}
	if err := m.Err(); err != nil {
		return nil, err
	}
	ne := &Entry{Type: codec.TypeStream, ExpireAt: e.ExpireAt, Version: v, strm: &streamState{mem: c}}
	syncStreamMeta(ne)
	if !tx.e.keepHot(entrySize(dst, ne)) {
		ne.strm.mem = nil
	}
	return ne, nil
}

// noteStreamGone notes a deleted stream as ready: clients blocked on it
// in a consumer group must be told (Redis's signalDeletedKeyAsReady).
func (tx *Tx) noteStreamGone(pdb uint8, key []byte) {
	for db, p := range tx.e.dbmap {
		if p == pdb {
			tx.NoteReady(db, key)
			return
		}
	}
}

// Replace makes the stream m (a model built apart, e.g. by a
// stream.Loader) the content of this newly created stream, writing all
// of its records.
func (x *Stream) Replace(m *stream.Stream) {
	c := m.Copy(x.j, nil)
	x.Stream, x.e.strm.mem = c, c
}
