package tiering

import (
	"fmt"
	"math"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/coldstore"
	"github.com/spillway/spillway/tiering/stream"
)

// Snapshot is a consistent point-in-time view of the whole dataset, every
// database, as the last committed transaction left it: what an RDB file
// is written from. Every write reaches the store under the engine lock
// (the hot tier caches what is stored), so the store holds the dataset
// but for the values of dirty hot strings and lists (writeback.go), and
// the view is a Pebble snapshot plus the database map, key counts and
// those values of that moment. It does not hold the engine lock: commands go on
// while it is read. Close releases it (it pins the records it can see).
//
// A Snapshot and the iterators it returns are for one goroutine.
type Snapshot struct {
	snap  *coldstore.Snapshot
	dbmap []uint8 // logical -> physical database
	keys  []int64 // per logical database: keys stored
	exps  []int64 // per logical database: keys with an expiry
	now   int64
	// dirty holds the values of the strings whose store records lagged
	// them (writeback.go), by hot key; nil when none did. lists holds
	// the lists whose element records lagged, likewise.
	dirty map[string][]byte
	lists map[string]*listImage
}

// Snapshot takes a snapshot of the committed dataset. It is called inside
// Engine.View or Update (under the lock, so that no commit is half
// applied); the snapshot outlives the transaction. Writes of the current
// transaction (of a MULTI or script group still running) are not in it,
// database swaps included.
func (tx *Tx) Snapshot() (*Snapshot, error) {
	e := tx.e
	n := e.opts.Databases
	s := &Snapshot{
		dbmap: append([]uint8(nil), e.dbmap...),
		keys:  make([]int64, n),
		exps:  make([]int64, n),
		now:   tx.now,
	}
	// Undo the swaps this transaction has not committed.
	for i := len(tx.swaps) - 1; i >= 0; i-- {
		a, b := tx.swaps[i][0], tx.swaps[i][1]
		s.dbmap[a], s.dbmap[b] = s.dbmap[b], s.dbmap[a]
	}
	e.counted()
	for db := range n {
		s.keys[db] = e.keys[s.dbmap[db]]
		s.exps[db] = e.exps[s.dbmap[db]]
	}
	s.dirty = tx.dirtyOverlay()
	s.lists = tx.listOverlay()
	s.snap = e.cold.NewSnapshot()
	return s, nil
}

// Close releases the snapshot. Iterators still open must be closed first.
func (s *Snapshot) Close() error { return s.snap.Close() }

// Databases is the number of logical databases.
func (s *Snapshot) Databases() int { return len(s.keys) }

// Now is the clock (unix milliseconds) of the transaction that took the
// snapshot.
func (s *Snapshot) Now() int64 { return s.now }

// Counts returns how many keys, and keys with an expiry, logical database
// db stored when the snapshot was taken (keys expired but not yet removed
// included, as in Redis's dictionaries): RESIZEDB's hint.
func (s *Snapshot) Counts(db int) (keys, expires int64) { return s.keys[db], s.exps[db] }

// SnapshotKeys iterates over the keys of one database of a Snapshot, in
// key-hash order. Expired keys not yet removed are included with their
// expiry, as Redis's RDB save writes them (a loader drops them). For the
// current key it gives the type, expiry and length, and streams a
// structure's contents record by record from the store.
//
//	it, err := snap.Keys(db)
//	for it.Next() { ... it.Key(), it.Type(), it.Elements(fn) ... }
//	err = it.Err(); it.Close()
type SnapshotKeys struct {
	s    *Snapshot
	pdb  uint8
	it   *coldstore.Iter
	meta codec.Meta
	mbuf []byte
	key  []byte
	hk   []byte // the current key's hot key (for Snapshot.dirty)
	list *listImage
	err  error
	// started: the iterator has been positioned on the first key.
	started bool
}

// Keys starts an iteration over logical database db.
func (s *Snapshot) Keys(db int) (*SnapshotKeys, error) {
	if db < 0 || db >= len(s.keys) {
		return nil, fmt.Errorf("tiering: snapshot database %d out of range", db)
	}
	pdb := s.dbmap[db]
	lo := []byte{codec.NSMeta, pdb}
	it, err := s.snap.NewIter(lo, codec.PrefixEnd(lo))
	if err != nil {
		return nil, err
	}
	return &SnapshotKeys{s: s, pdb: pdb, it: it}, nil
}

// Next moves to the next key; false at the end or on an error (Err).
func (k *SnapshotKeys) Next() bool {
	if k.err != nil {
		return false
	}
	var valid bool
	if k.started {
		valid = k.it.Next()
	} else {
		k.started = true
		valid = k.it.First()
	}
	if !valid {
		k.err = k.it.Error()
		k.key = nil
		return false
	}
	_, key, err := codec.ParseMetaKey(k.it.Key())
	if err != nil {
		k.err = fmt.Errorf("tiering: snapshot: %w", err)
		return false
	}
	v, err := k.it.ValueAndErr()
	if err != nil {
		k.err = fmt.Errorf("tiering: snapshot: %w", err)
		return false
	}
	k.mbuf = append(k.mbuf[:0], v...)
	if err := codec.DecodeMeta(k.mbuf, &k.meta); err != nil {
		k.err = fmt.Errorf("tiering: snapshot: meta of %q: %w", key, err)
		return false
	}
	if k.meta.Type == codec.TypeString && k.s.dirty != nil {
		k.hk = append(append(k.hk[:0], k.pdb), key...)
		if v, ok := k.s.dirty[string(k.hk)]; ok {
			k.meta.Value = v
		}
	}
	k.list = nil
	if k.meta.Type == codec.TypeList && k.s.lists != nil {
		k.hk = append(append(k.hk[:0], k.pdb), key...)
		if im, ok := k.s.lists[string(k.hk)]; ok {
			k.list = im
			k.meta.Head, k.meta.Tail = im.head, im.tail
			k.meta.Count, k.meta.Bytes = uint64(im.count), uint64(im.bytes)
		}
	}
	k.key = key
	return true
}

// Err is the error that ended the iteration, if any.
func (k *SnapshotKeys) Err() error { return k.err }

// Close ends the iteration.
func (k *SnapshotKeys) Close() error { return k.it.Close() }

// Key is the current key (valid until Next).
func (k *SnapshotKeys) Key() []byte { return k.key }

// Type is the current key's type.
func (k *SnapshotKeys) Type() codec.Type { return k.meta.Type }

// ExpireAt is the current key's expiry, unix milliseconds (0: none).
func (k *SnapshotKeys) ExpireAt() int64 { return k.meta.ExpireAt }

// Expired reports whether the current key had expired when the snapshot
// was taken.
func (k *SnapshotKeys) Expired() bool {
	return k.meta.ExpireAt != 0 && k.s.now > k.meta.ExpireAt
}

// Len is the current key's element count (fields, members, elements; 0
// for a string).
func (k *SnapshotKeys) Len() int64 {
	if k.meta.Type == codec.TypeString {
		return 0
	}
	return int64(k.meta.Count)
}

// Bytes is the total length of the current structure's fields and values
// (members, elements), or of the string.
func (k *SnapshotKeys) Bytes() int64 {
	if k.meta.Type == codec.TypeString {
		return int64(len(k.meta.Value))
	}
	return int64(k.meta.Bytes)
}

// Skiplist reports whether the current sorted set is in Redis's skiplist
// encoding (it outgrew the compact one once; Redis never converts back).
func (k *SnapshotKeys) Skiplist() bool {
	return k.meta.Type == codec.TypeZSet && k.meta.Flags&codec.ZSetSkiplist != 0
}

// Value is the current string's value (valid until Next).
func (k *SnapshotKeys) Value() []byte { return k.meta.Value }

// dataIter iterates over [lo, PrefixEnd(lo)) of the snapshot.
func (k *SnapshotKeys) dataIter(lo []byte) (*coldstore.Iter, error) {
	return k.s.snap.NewIter(lo, codec.PrefixEnd(lo))
}

// checkCount reports a count that disagrees with the records stored.
func (k *SnapshotKeys) checkCount(got uint64) error {
	if got != k.meta.Count {
		return fmt.Errorf("%w: %q counts %d elements, %d stored", ErrCorrupt, k.key, k.meta.Count, got)
	}
	return nil
}

// Fields streams the current hash's fields and values, or the current
// set's members (val empty), in field-hash order, one record at a time. fn
// may not keep its arguments; an error from fn stops and is returned.
func (k *SnapshotKeys) Fields(fn func(field, val []byte) error) error {
	if k.meta.Type != codec.TypeHash && k.meta.Type != codec.TypeSet {
		return fmt.Errorf("tiering: snapshot: Fields of a %s", k.meta.Type)
	}
	lo := codec.AppendFieldPrefix(nil, k.pdb, k.key, k.meta.Version)
	it, err := k.dataIter(lo)
	if err != nil {
		return err
	}
	defer it.Close()
	var n uint64
	for valid := it.First(); valid; valid = it.Next() {
		_, field, val, err := fieldOf(it, len(lo))
		if err != nil {
			return fmt.Errorf("tiering: %q: %w", k.key, err)
		}
		if n++; n > k.meta.Count {
			break
		}
		if err := fn(field, val); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	return k.checkCount(n)
}

// Elements streams the current list's elements from head to tail.
func (k *SnapshotKeys) Elements(fn func(elem []byte) error) error {
	if k.meta.Type != codec.TypeList {
		return fmt.Errorf("tiering: snapshot: Elements of a %s", k.meta.Type)
	}
	if k.list != nil { // written back: its elements as they were
		for _, s := range k.list.elems {
			if err := fn(bytesOf(s)); err != nil {
				return err
			}
		}
		return nil
	}
	lo := codec.AppendListKey(nil, k.pdb, k.key, k.meta.Version, k.meta.Head)
	hi := codec.AppendListKey(nil, k.pdb, k.key, k.meta.Version, k.meta.Tail)
	it, err := k.s.snap.NewIter(lo, hi)
	if err != nil {
		return err
	}
	defer it.Close()
	var n uint64
	for valid := it.First(); valid; valid = it.Next() {
		idx, err := codec.ParseListRest(it.Key()[len(lo)-8:])
		if err != nil {
			return fmt.Errorf("tiering: %q: %w", k.key, err)
		}
		if idx != k.meta.Head+n {
			return fmt.Errorf("%w: %q element %d is missing", ErrCorrupt, k.key, n)
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		n++
		if err := fn(v); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	return k.checkCount(n)
}

// Members streams the current sorted set's members in score order (then
// member order), with their scores (-0 where it is stored).
func (k *SnapshotKeys) Members(fn func(member []byte, score float64) error) error {
	if k.meta.Type != codec.TypeZSet {
		return fmt.Errorf("tiering: snapshot: Members of a %s", k.meta.Type)
	}
	lo := codec.AppendScorePrefix(nil, k.pdb, k.key, k.meta.Version)
	it, err := k.dataIter(lo)
	if err != nil {
		return err
	}
	defer it.Close()
	var n uint64
	for valid := it.First(); valid; valid = it.Next() {
		score, member, err := codec.ParseScoreRest(it.Key()[len(lo):])
		if err != nil {
			return fmt.Errorf("tiering: %q: %w", k.key, err)
		}
		if score == 0 && len(it.Value()) > 0 {
			score = math.Copysign(0, -1) // marked -0
		}
		if n++; n > k.meta.Count {
			break
		}
		if err := fn(member, score); err != nil {
			return err
		}
	}
	if err := it.Error(); err != nil {
		return err
	}
	return k.checkCount(n)
}

// Streams, record by record: a stream's nodes (the listpacks Redis would
// hold), its entries by ID range, its groups, and each group's consumers
// and pending entries, each in key order (IDs, names bytewise), so that an
// RDB writer emits one node at a time and never loads a cold stream
// whole. The callbacks may not keep their arguments.

// StreamMeta is the current stream's last, first and max deleted IDs and
// entries added.
func (k *SnapshotKeys) StreamMeta() codec.StreamMeta { return k.meta.Stream }

// streamIter iterates over the current stream's records of one tag.
func (k *SnapshotKeys) streamIter(tag byte, fn func(rest, val []byte) error) error {
	if k.meta.Type != codec.TypeStream {
		return fmt.Errorf("tiering: snapshot: stream records of a %s", k.meta.Type)
	}
	lo := codec.AppendStreamTagPrefix(nil, k.pdb, k.key, k.meta.Version, tag)
	return k.iterFrom(lo, codec.PrefixEnd(lo), len(lo), fn)
}

// iterFrom calls fn with each record of [lo, hi): its key after skip
// bytes, and its value.
func (k *SnapshotKeys) iterFrom(lo, hi []byte, skip int, fn func(rest, val []byte) error) error {
	it, err := k.s.snap.NewIter(lo, hi)
	if err != nil {
		return err
	}
	defer it.Close()
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return err
		}
		if err := fn(it.Key()[skip:], v); err != nil {
			return err
		}
	}
	return it.Error()
}

// StreamNodes streams the current stream's nodes in ID order: each by its
// master ID, with its field names, live and deleted counts and last ID.
func (k *SnapshotKeys) StreamNodes(fn func(master codec.StreamID, n *codec.StreamNodeValue) error) error {
	return k.streamIter(codec.TagStreamNode, func(rest, val []byte) error {
		if len(rest) != 16 {
			return fmt.Errorf("%w: stream %q: node key of %d bytes", ErrCorrupt, k.key, len(rest))
		}
		n, err := codec.ParseStreamNode(val)
		if err != nil {
			return fmt.Errorf("%w: stream %q: %w", ErrCorrupt, k.key, err)
		}
		return fn(codec.DecodeStreamID(rest), &n)
	})
}

// StreamEntries streams the current stream's entries from from to to
// (inclusive), in ID order: fields and values alternating.
func (k *SnapshotKeys) StreamEntries(from, to codec.StreamID, fn func(id codec.StreamID, fields [][]byte) error) error {
	if k.meta.Type != codec.TypeStream {
		return fmt.Errorf("tiering: snapshot: stream entries of a %s", k.meta.Type)
	}
	lo := codec.AppendStreamIDKey(nil, k.pdb, k.key, k.meta.Version, codec.TagStreamEntry, from)
	hi := codec.AppendStreamIDKey(nil, k.pdb, k.key, k.meta.Version, codec.TagStreamEntry, to)
	hi = append(hi, 0) // just after to
	return k.iterFrom(lo, hi, len(lo)-16, func(rest, val []byte) error {
		f, err := codec.ParseStreamValues(val)
		if err != nil || len(rest) != 16 {
			return fmt.Errorf("%w: stream %q: entry: %v", ErrCorrupt, k.key, err)
		}
		return fn(codec.DecodeStreamID(rest), f)
	})
}

// StreamGroups streams the current stream's consumer groups in name
// order, each with its last delivered ID and entries read (-1: unknown).
func (k *SnapshotKeys) StreamGroups(fn func(name []byte, last codec.StreamID, entriesRead int64) error) error {
	return k.streamIter(codec.TagStreamGroup, func(rest, val []byte) error {
		last, er, err := codec.ParseStreamGroup(val)
		if err != nil {
			return fmt.Errorf("%w: stream %q: %w", ErrCorrupt, k.key, err)
		}
		return fn(rest, last, er)
	})
}

// StreamConsumers streams group's consumers in name order, each with its
// seen time.
func (k *SnapshotKeys) StreamConsumers(group []byte, fn func(name []byte, seenTime int64) error) error {
	lo := codec.AppendStreamInGroupPrefix(nil, k.pdb, k.key, k.meta.Version, codec.TagStreamConsumer, group)
	return k.iterFrom(lo, codec.PrefixEnd(lo), len(lo), func(rest, val []byte) error {
		seen, _, _, _, err := codec.ParseStreamConsumer(val)
		if err != nil {
			return fmt.Errorf("%w: stream %q: %w", ErrCorrupt, k.key, err)
		}
		return fn(rest, seen)
	})
}

// StreamPending streams group's pending entries in ID order, each with
// its delivery time, delivery count and owner.
func (k *SnapshotKeys) StreamPending(group []byte, fn func(id codec.StreamID, deliveryTime, deliveryCount int64, consumer []byte) error) error {
	lo := codec.AppendStreamInGroupPrefix(nil, k.pdb, k.key, k.meta.Version, codec.TagStreamPending, group)
	return k.iterFrom(lo, codec.PrefixEnd(lo), len(lo), func(rest, val []byte) error {
		t, n, c, err := codec.ParseStreamPending(val)
		if err != nil || len(rest) != 16 {
			return fmt.Errorf("%w: stream %q: pending entry: %v", ErrCorrupt, k.key, err)
		}
		return fn(codec.DecodeStreamID(rest), t, n, c)
	})
}

// StreamLoad writes a stream read from an RDB file in bounded steps, the
// snapshot's counterpart for loading: its nodes and entries in as many
// transactions as the loader chooses (Add), then its groups and the key
// itself in the last one (Finish). Until Finish the key does not exist:
// the records written so far are under a version no meta record names,
// unseen by commands (a failed load's FlushAll removes them with the
// rest). The stream is left on disk, cold.
type StreamLoad struct {
	db           int
	key          []byte
	version      uint64
	count, bytes int64
}

// BeginStreamLoad reserves a version for key's stream (database db).
func (tx *Tx) BeginStreamLoad(db int, key []byte) (*StreamLoad, error) {
	v, err := tx.e.cold.NextVersion()
	if err != nil {
		return nil, fmt.Errorf("tiering: stream load: %w", err)
	}
	return &StreamLoad{db: db, key: append([]byte(nil), key...), version: v}, nil
}

func (l *StreamLoad) journal(tx *Tx) *streamJournal {
	return &streamJournal{tx: tx, pdb: tx.pdb(l.db), key: l.key, version: l.version}
}

// Add writes part of the stream: m, a model holding whole nodes and their
// entries (built with stream.Loader, in memory), following in ID order
// what was added before.
func (l *StreamLoad) Add(tx *Tx, m *stream.Stream) error {
	j := l.journal(tx)
	for _, n := range m.NodeList() {
		j.PutNode(n)
	}
	m.Range(stream.ID{}, stream.MaxID, false, func(e *stream.Entry) bool {
		j.PutEntry(e)
		return j.err == nil
	})
	l.count += m.Len()
	l.bytes += m.Bytes()
	return j.err
}

// Finish writes the groups of g (a model holding only groups, consumers
// and pending entries) and creates the key with meta m; key must not
// exist (it fails otherwise, writing nothing).
func (l *StreamLoad) Finish(tx *Tx, m codec.StreamMeta, g *stream.Stream) error {
	e, err := tx.Peek(l.db, l.key)
	if err != nil {
		return err
	}
	if e != nil {
		return fmt.Errorf("%w: stream load: key %q exists", ErrCorrupt, l.key)
	}
	j := l.journal(tx)
	for _, grp := range g.Groups() {
		j.PutGroup(grp)
		for _, c := range grp.Consumers() {
			j.PutConsumer(grp, c)
		}
		g.EachPending(grp, nil, stream.ID{}, stream.MaxID, func(n *stream.NACK) bool {
			j.PutPending(grp, n)
			return true
		})
	}
	if j.err != nil {
		return j.err
	}
	pdb := tx.pdb(l.db)
	ent := &Entry{Type: codec.TypeStream, Version: l.version, Count: l.count, Bytes: l.bytes, strm: &streamState{meta: m}}
	if err := tx.putMeta(pdb, l.key, ent); err != nil {
		return err
	}
	tx.addKeys(pdb, 1)
	return nil
}

// ValueWriter receives a key's value in the shape of RDB's plain forms: a
// string, or a collection's element count followed by its elements. The
// DUMP payload encoder (proxy/rdb.Dump) is one.
type ValueWriter interface {
	String(v []byte)
	BeginList(n int)
	BeginSet(n int)
	BeginHash(n int)
	BeginZSet(n int)
	Elem(e []byte)
	Pair(field, value []byte)
	ZElem(member []byte, score float64)
}

// WriteValue writes e, key's live entry in db (as Get or Peek returned
// it), to w: hash fields and set members in stored order, a list from head
// to tail, a sorted set by rank. A cold structure is read from the store
// as it is written, never promoted. An element count that disagrees with
// the elements stored is ErrCorrupt (a payload built from it would be
// refused by every RESTORE).
func (tx *Tx) WriteValue(db int, key []byte, e *Entry, w ValueWriter) error {
	var got int64
	var err error
	switch e.Type {
	case codec.TypeString:
		w.String(e.Str)
		return nil
	case codec.TypeHash, codec.TypeSet:
		hash := e.Type == codec.TypeHash
		if hash {
			w.BeginHash(int(e.Count))
		} else {
			w.BeginSet(int(e.Count))
		}
		err = tx.PeekColl(db, key, e).Each(func(f, v []byte) bool {
			if got++; got > e.Count {
				return false
			}
			if hash {
				w.Pair(f, v)
			} else {
				w.Elem(f)
			}
			return true
		})
	case codec.TypeList:
		w.BeginList(int(e.Count))
		err = tx.PeekList(db, key, e).Range(0, e.Count-1, false, func(_ int64, v []byte) bool {
			if got++; got > e.Count {
				return false
			}
			w.Elem(v)
			return true
		})
	case codec.TypeZSet:
		w.BeginZSet(int(e.Count))
		err = tx.PeekZSet(db, key, e).Members(func(m []byte, score float64) bool {
			if got++; got > e.Count {
				return false
			}
			w.ZElem(m, score)
			return true
		})
	default:
		return fmt.Errorf("%w: %q has unknown type %d", ErrCorrupt, key, e.Type)
	}
	if err == nil && got != e.Count {
		err = fmt.Errorf("%w: %q counts %d elements, %d stored", ErrCorrupt, key, e.Count, got)
	}
	return err
}
