package coldstore

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/spillway/spillway/codec"
)

// Batch collects the writes of one command (or transaction) so that they
// reach Pebble atomically. Reads through the batch see its own writes. A
// Batch is not safe for concurrent use; it is reused after Commit or Abort.
type Batch struct {
	s    *Store
	b    *pebble.Batch // nil until the first write; indexed by the first read (indexed)
	kbuf []byte
	vbuf []byte
	wbuf []byte // a log-only record's payload (PutMetaLogOnly)
	// ix indexes b's records, lazily: built by a read of a key the
	// commit queue holds pending writes of (ownState), reset with b.
	ix pendIndex
	// ns has the namespace bits (nsBit) of b's records, a range
	// deletion's whole span included: the queue tells an iterator that
	// no pending record can touch it from them alone (waitRange).
	ns uint8
	// born has the offsets in b's representation of the records written
	// by SetNew, in order.
	born []int32
}

// NewBatch returns an empty batch.
func (s *Store) NewBatch() *Batch { return &Batch{s: s} }

// Empty reports whether the batch holds no writes.
func (b *Batch) Empty() bool { return b.b == nil || b.b.Empty() }

func (b *Batch) batch() *pebble.Batch {
	if b.b == nil {
		b.b = b.s.db.NewBatch()
	}
	return b.b
}

// indexed makes b's writes readable through it, indexing them once: most
// transactions never read their own writes back (a hot structure is read
// from memory), so a batch is unindexed until its first read.
func (b *Batch) indexed() error {
	if b.b.Indexed() {
		return nil
	}
	ib := b.s.db.NewIndexedBatch()
	if err := ib.Apply(b.b, nil); err != nil {
		ib.Close()
		return fmt.Errorf("coldstore: index batch: %w", err)
	}
	b.b.Close()
	b.b = ib
	b.ix.reset()
	return nil
}

func (b *Batch) getter() (getter, error) {
	if b.b != nil {
		return b.b, b.indexed()
	}
	return b.s.db, nil
}

// GetMeta reads key's meta record, seeing this batch's writes. The raw record
// is copied into buf (returned for reuse) and m aliases it.
func (b *Batch) GetMeta(db uint8, key []byte, m *codec.Meta, buf []byte) ([]byte, bool, error) {
	b.kbuf = codec.AppendMetaKey(b.kbuf[:0], db, key)
	g, err := b.getter()
	if err != nil {
		return buf, false, err
	}
	buf, found, err := b.s.readMeta(g, b.kbuf, buf, b)
	if err != nil || !found {
		return buf, false, err
	}
	if err := codec.DecodeMeta(buf, m); err != nil {
		return buf, false, fmt.Errorf("coldstore: meta of %q: %w", key, err)
	}
	return buf, true, nil
}

// GetData reads one data record (already encoded key), seeing this batch.
func (b *Batch) GetData(key, buf []byte) ([]byte, bool, error) {
	g, err := b.getter()
	if err != nil {
		return buf, false, err
	}
	return b.s.readPoint(g, key, buf, b, false)
}

// ProbeData is GetData for a record that probably does not exist: it
// consults every level's bloom filter first (see probeInto).
func (b *Batch) ProbeData(key, buf []byte) ([]byte, bool, error) {
	g, err := b.getter()
	if err != nil {
		return buf, false, err
	}
	return b.s.readPoint(g, key, buf, b, true)
}

// NewIter returns an iterator over [lower, upper) that sees the committed
// data and this batch's writes.
func (b *Batch) NewIter(lower, upper []byte) (*Iter, error) {
	if b.b == nil {
		return b.s.NewIter(lower, upper)
	}
	if err := b.s.q.waitRange(lower, upper); err != nil {
		return nil, err
	}
	if err := b.indexed(); err != nil {
		return nil, err
	}
	it, err := b.b.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("coldstore: batch iterator: %w", err)
	}
	return &Iter{Iterator: it, steps: &b.s.iterSteps, points: &b.s.iterPoints}, nil
}

// PutMeta writes key's meta record.
func (b *Batch) PutMeta(db uint8, key []byte, m *codec.Meta) error {
	b.kbuf = codec.AppendMetaKey(b.kbuf[:0], db, key)
	b.vbuf = codec.AppendMeta(b.vbuf[:0], m)
	b.ns |= nsBitMeta
	if err := b.batch().Set(b.kbuf, b.vbuf, nil); err != nil {
		return fmt.Errorf("coldstore: put meta: %w", err)
	}
	return nil
}

// DeleteMeta deletes key's meta record.
func (b *Batch) DeleteMeta(db uint8, key []byte) error {
	b.kbuf = codec.AppendMetaKey(b.kbuf[:0], db, key)
	b.ns |= nsBitMeta
	if err := b.batch().Delete(b.kbuf, nil); err != nil {
		return fmt.Errorf("coldstore: delete meta: %w", err)
	}
	return nil
}

// keyNs is the namespace bit of a raw key.
func keyNs(key []byte) uint8 {
	if len(key) == 0 {
		return nsBitOther
	}
	return nsBit(key[0])
}

// Set writes a raw (already encoded) record.
func (b *Batch) Set(key, value []byte) error {
	b.ns |= keyNs(key)
	if err := b.batch().Set(key, value, nil); err != nil {
		return fmt.Errorf("coldstore: set: %w", err)
	}
	return nil
}

// SetNew is Set of a key the store does not hold: no record of it is in
// Pebble, pending, or earlier in this batch, or the last of them deletes
// it (a data record of a member, field or index entry its structure does
// not have). The caller's promise lets an application round drop the
// record and its deletion altogether when both are in the round
// (pendIndex.add); breaking it would resurrect the key's older record.
func (b *Batch) SetNew(key, value []byte) error {
	off := b.batch().Len()
	if err := b.Set(key, value); err != nil {
		return err
	}
	b.born = append(b.born, int32(off))
	return nil
}

// Delete deletes a raw (already encoded) record.
func (b *Batch) Delete(key []byte) error {
	b.ns |= keyNs(key)
	if err := b.batch().Delete(key, nil); err != nil {
		return fmt.Errorf("coldstore: delete: %w", err)
	}
	return nil
}

// PutExpiry adds key to the expiry index at expireAt (unix ms).
func (b *Batch) PutExpiry(expireAt int64, db uint8, key []byte) error {
	b.kbuf = codec.AppendExpiryKey(b.kbuf[:0], expireAt, db, key)
	return b.Set(b.kbuf, nil)
}

// DeleteExpiry removes key's expiry index entry at expireAt.
func (b *Batch) DeleteExpiry(expireAt int64, db uint8, key []byte) error {
	b.kbuf = codec.AppendExpiryKey(b.kbuf[:0], expireAt, db, key)
	return b.Delete(b.kbuf)
}

// DropVersion records that the data records of (db, key, version) are garbage,
// to be reclaimed in the background by Reclaim. count is the number of data
// records, which picks between a DeleteRange and point deletes.
func (b *Batch) DropVersion(db uint8, key []byte, version, count uint64) error {
	_, err := b.MarkGarbage(db, key, version, count)
	return err
}

// MarkGarbage is DropVersion that returns the garbage record's key (a copy):
// deleting that record before the reclaimer acts on it takes the version
// back (tiering's staged writes mark their version first, so that a crash
// leaves it reclaimable, and delete the mark when they install it).
func (b *Batch) MarkGarbage(db uint8, key []byte, version, count uint64) ([]byte, error) {
	seq := b.s.garbageSeq.Add(1)
	b.kbuf = codec.AppendGarbageKey(b.kbuf[:0], seq)
	b.vbuf = codec.AppendGarbageValue(b.vbuf[:0], db, key, version, count)
	return append([]byte(nil), b.kbuf...), b.Set(b.kbuf, b.vbuf)
}

// DeleteRange deletes every record in [start, end).
func (b *Batch) DeleteRange(start, end []byte) error {
	b.ns |= nsSpan(start, end)
	if err := b.batch().DeleteRange(start, end, nil); err != nil {
		return fmt.Errorf("coldstore: delete range: %w", err)
	}
	return nil
}

// Pending is a committed write that may not be durable yet. Under
// FsyncAlways it must be waited on before the write is acknowledged; one
// Wait covers every write committed before it (the write log is
// sequential), so a connection waits once per pipeline and concurrent
// connections share syncs.
type Pending struct {
	s *Store
	n uint64 // the batch's place in the commit queue
}

// Wait blocks until the write, and every write committed before it, is
// durable: written to the write log and synced (not necessarily applied
// to Pebble: readers wait for that). It is a no-op for the zero Pending.
func (p Pending) Wait() error {
	if p.s == nil {
		return nil
	}
	if err := p.s.q.waitWritten(p.n); err != nil {
		return err
	}
	return p.s.log.sync()
}

// Enqueue commits the batch: it takes its place in the store's commit
// order now (the caller holds the engine's lock, whose order is the
// writes' order), is written to the write log after the next Drain, which
// the caller runs after releasing its lock (under FsyncAlways, by the
// returned Pending's Wait), and applied to Pebble later; reads see it at
// once (answered from the queue, or after a round: see commitq.go).
// Under FsyncAlways the returned Pending must be waited on before the
// write is acknowledged; under the other
// policies it is zero. The Batch is empty and reusable afterwards,
// whatever the outcome.
func (b *Batch) Enqueue() (Pending, error) {
	pb, ns, born := b.b, b.ns, b.born
	b.b, b.ns, b.born = nil, 0, b.born[:0]
	if pb == nil {
		return Pending{}, nil
	}
	if pb.Empty() {
		pb.Close()
		return Pending{}, nil
	}
	b.ix.reset()
	n, err := b.s.q.enqueue(pb, ns, born)
	if err != nil {
		return Pending{}, err
	}
	if b.s.FsyncPolicy() == FsyncAlways {
		return Pending{s: b.s, n: n}, nil
	}
	return Pending{}, nil
}

// Commit is Enqueue followed by the batch's application: its writes are
// visible when Commit returns. For writers outside the engine's lock
// (staged writes).
func (b *Batch) Commit() (Pending, error) {
	p, err := b.Enqueue()
	if err != nil {
		return p, err
	}
	return p, b.s.q.waitAll()
}

// Abort discards the batch's writes.
func (b *Batch) Abort() {
	if b.b != nil {
		b.b.Close()
		b.b = nil
	}
	b.ns, b.born = 0, b.born[:0]
	b.ix.reset()
}

// ownState tells whether the batch's own writes decide what a read of key
// (h: its hash with the queue's seed) sees: pendingSet or pendingDel
// (without the value: reading through the indexed batch returns it) when
// one of its records sets or deletes the key, a range deletion included;
// notPending when none touches it; pendingUnknown when its index cannot
// tell (a hash collision). The index is built as reads need it.
func (b *Batch) ownState(key []byte, h uint64) pendingState {
	if b.Empty() {
		return notPending
	}
	repr := b.b.Repr()
	b.ix.catchUpBatch(repr, b.s.q.seed)
	_, st := b.ix.find(repr, key, h)
	return st
}

// GetMeta reads key's committed meta record into buf; m aliases buf.
func (s *Store) GetMeta(db uint8, key []byte, m *codec.Meta, kbuf, buf []byte) ([]byte, []byte, bool, error) {
	kbuf = codec.AppendMetaKey(kbuf[:0], db, key)
	buf, found, err := s.readMeta(s.db, kbuf, buf, nil)
	if err != nil || !found {
		return kbuf, buf, false, err
	}
	if err := codec.DecodeMeta(buf, m); err != nil {
		return kbuf, buf, false, fmt.Errorf("coldstore: meta of %q: %w", key, err)
	}
	return kbuf, buf, true, nil
}

// smallVersion is the record count under which a stale version is reclaimed
// with point deletes rather than a range tombstone.
const smallVersion = 64

// Reclaim deletes the data records of up to limit stale versions recorded by
// DropVersion, and returns how many it reclaimed. Stale versions are
// unreachable (no meta record points at them), so this needs no coordination
// with readers or writers.
func (s *Store) Reclaim(limit int) (int, error) {
	it, err := s.NewIter([]byte{codec.NSGarbage}, []byte{codec.NSGarbage + 1})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	b := s.db.NewBatch()
	defer func() { b.Close() }()
	n := 0
	var prefix []byte
	for valid := it.First(); valid && n < limit; valid = it.Next() {
		g, err := codec.ParseGarbageValue(it.Value())
		if err != nil {
			s.logger.Warn("dropping malformed garbage record", "err", err)
		} else {
			prefix = g.AppendDataPrefix(prefix[:0])
			end := codec.PrefixEnd(prefix)
			if g.Count > smallVersion {
				if err := b.DeleteRange(prefix, end, nil); err != nil {
					return n, fmt.Errorf("coldstore: reclaim: %w", err)
				}
			} else if err := s.pointDeleteRange(b, prefix, end); err != nil {
				return n, err
			}
		}
		if err := b.Delete(it.Key(), nil); err != nil {
			return n, fmt.Errorf("coldstore: reclaim: %w", err)
		}
		n++
	}
	if err := it.Error(); err != nil {
		return n, fmt.Errorf("coldstore: reclaim scan: %w", err)
	}
	if n == 0 {
		return 0, nil
	}
	// Through the queue and the log, like every write: the deletions are
	// replayed after a crash, in their place in the order.
	pb := b
	b = s.db.NewBatch() // closed by the defer; enqueue closes pb
	if _, err := s.q.enqueue(pb, nsBitData|nsBitGarbage, nil); err != nil {
		return 0, fmt.Errorf("coldstore: reclaim commit: %w", err)
	}
	if err := s.q.drain(false); err != nil {
		return 0, fmt.Errorf("coldstore: reclaim commit: %w", err)
	}
	return n, nil
}

func (s *Store) pointDeleteRange(b *pebble.Batch, lo, hi []byte) error {
	it, err := s.NewIter(lo, hi)
	if err != nil {
		return err
	}
	defer it.Close()
	for valid := it.First(); valid; valid = it.Next() {
		if err := b.Delete(it.Key(), nil); err != nil {
			return fmt.Errorf("coldstore: reclaim: %w", err)
		}
	}
	return it.Error()
}

// IsZero reports whether there is nothing to wait for.
func (p Pending) IsZero() bool { return p.s == nil }
