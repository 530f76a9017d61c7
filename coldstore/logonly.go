package coldstore

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/spillway/spillway/codec"
)

// Log-only records: write-back for hot keys.
//
// A record written with PutMetaLogOnly is made durable like any other (the
// write log holds it, in commit order, inside its batch's frame) but is
// never applied to Pebble, nor seen by the pending-write index: the
// caller (the engine, for a hot string it overwrites) keeps the value in
// memory and is the key's authority until it writes the record again the
// ordinary way (at demotion, or at a checkpoint). Pebble meanwhile holds
// the key's previous record, which must say the same about the key but
// its value (type, expiry: the caller's rule).
//
// SetLogOnly and DeleteLogOnly are the same for any record (the engine's
// hot lists: their elements' records).
//
// In the batch it is a Pebble LogData record (which Pebble keeps out of
// memtables and sstables), holding logOnlyTag, the key's length as a
// uvarint, the key and the value; a deletion holds logOnlyDeleteTag and
// the key. A log replay (openLog) applies it as the Set or Delete it
// stands for, in its place in the order, so that after a crash the store
// holds what the engine held.
//
// The log keeps a log-only record as long as the engine needs it: the
// engine lowers the log's floor (LowerLogFloor) to the batch number of its
// first log-only record while none was outstanding, and raises it
// (RaiseLogFloor) once the records below a number are all superseded by
// ordinary records (a checkpoint wrote every key that was dirty, or none
// is dirty any more). Segments holding batches at or above the floor are
// not retired.

// logOnlyTag is the first byte of a log-only Set's LogData payload,
// logOnlyDeleteTag of a log-only Delete's.
const (
	logOnlyTag       = 0x57 // 'W'
	logOnlyDeleteTag = 0x58 // 'X'
)

// appendLogOnly appends the LogData payload of a log-only Set of key.
func appendLogOnly(dst, key, value []byte) []byte {
	dst = append(dst, logOnlyTag)
	dst = binary.AppendUvarint(dst, uint64(len(key)))
	dst = append(dst, key...)
	return append(dst, value...)
}

// appendLogOnlyDelete appends the LogData payload of a log-only Delete of
// key.
func appendLogOnlyDelete(dst, key []byte) []byte {
	return append(append(dst, logOnlyDeleteTag), key...)
}

// parseLogOnly splits a log-only record's payload into its key and value;
// del reports a deletion (value nil).
func parseLogOnly(data []byte) (key, value []byte, del bool, err error) {
	if len(data) > 0 && data[0] == logOnlyDeleteTag {
		return data[1:], nil, true, nil
	}
	if len(data) == 0 || data[0] != logOnlyTag {
		return nil, nil, false, fmt.Errorf("coldstore: unknown log record")
	}
	n, w := binary.Uvarint(data[1:])
	if w <= 0 || n > uint64(len(data)-1-w) {
		return nil, nil, false, fmt.Errorf("coldstore: corrupt log-only record")
	}
	rest := data[1+w:]
	return rest[:n], rest[n:], false, nil
}

// SetLogOnly writes a Set of key to the write log only (see above).
func (b *Batch) SetLogOnly(key, value []byte) error {
	b.wbuf = appendLogOnly(b.wbuf[:0], key, value)
	if err := b.batch().LogData(b.wbuf, nil); err != nil {
		return fmt.Errorf("coldstore: set (log only): %w", err)
	}
	return nil
}

// DeleteLogOnly writes a Delete of key to the write log only (see above).
func (b *Batch) DeleteLogOnly(key []byte) error {
	b.wbuf = appendLogOnlyDelete(b.wbuf[:0], key)
	if err := b.batch().LogData(b.wbuf, nil); err != nil {
		return fmt.Errorf("coldstore: delete (log only): %w", err)
	}
	return nil
}

// PutMetaLogOnly writes key's meta record to the write log only (see
// above): Pebble, and reads of the store, keep the record before it.
func (b *Batch) PutMetaLogOnly(db uint8, key []byte, m *codec.Meta) error {
	b.kbuf = codec.AppendMetaKey(b.kbuf[:0], db, key)
	b.vbuf = codec.AppendMeta(b.vbuf[:0], m)
	b.wbuf = appendLogOnly(b.wbuf[:0], b.kbuf, b.vbuf)
	if err := b.batch().LogData(b.wbuf, nil); err != nil {
		return fmt.Errorf("coldstore: put meta (log only): %w", err)
	}
	return nil
}

// logFloor is the lowest batch number whose frame the log must keep for
// its log-only records (math.MaxUint64: none), with a raise waiting for
// the batches that supersede the records below it to be applied.
type logFloor struct {
	mu      sync.Mutex
	floor   uint64
	raiseTo uint64 // 0: no raise pending
	after   uint64 // the raise takes effect once applied >= after
}

// NextBatchNumber is the number the next batch enqueued will get, when
// no other writer enqueues first (the engine calls it under its lock).
func (s *Store) NextBatchNumber() uint64 { return s.q.queued.Load() + 1 }

// LowerLogFloor makes the log keep every batch numbered n or more (at
// once), for the log-only records they may hold.
func (s *Store) LowerLogFloor(n uint64) {
	f := &s.floor
	f.mu.Lock()
	f.floor = min(f.floor, n)
	if f.raiseTo != 0 {
		f.raiseTo = min(f.raiseTo, n)
	}
	f.mu.Unlock()
}

// RaiseLogFloor lets the log drop the batches numbered below n (all of
// them for math.MaxUint64) once every batch up to after is applied: the
// caller has superseded every log-only record below n with ordinary
// records in batches numbered at most after. A later raise replaces one
// still waiting.
func (s *Store) RaiseLogFloor(n, after uint64) {
	f := &s.floor
	f.mu.Lock()
	f.raiseTo, f.after = n, after
	f.mu.Unlock()
}

// retireLimit is the highest batch number whose segments may be retired,
// given that every batch up to applied is applied.
func (f *logFloor) retireLimit(applied uint64) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.raiseTo != 0 && applied >= f.after {
		f.floor, f.raiseTo = max(f.floor, f.raiseTo), 0
	}
	if f.floor == math.MaxUint64 {
		return applied
	}
	return min(applied, f.floor-1)
}

// LogBytes is the size of the write log's segments on disk.
func (s *Store) LogBytes() int64 { return s.log.bytes() }

// LogWritten is how many bytes the write log has taken since Open.
func (s *Store) LogWritten() int64 { return s.log.total.Load() }
