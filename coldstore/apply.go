package coldstore

import (
	"fmt"
	"hash/maphash"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/batchrepr"
)

// applier turns an application round's frames into Pebble commits
// (commitq.go). It is used by one round at a time.
type applier struct {
	db *pebble.DB
	// Records the rounds applied and dropped (overwritten in the same
	// round), and the rounds, for tests.
	applied, dropped, rounds int64
	// ix indexes a round's buffer for coalescing when the readers' index
	// of it was not complete (commitQueue.round).
	ix pendIndex
}

// coalesceMin is the fewest batches worth coalescing: below it the round
// applies them as they are (a read that needed the last few writes).
const coalesceMin = 8

// commitBytes bounds one Pebble commit of a round: a round is not atomic
// in Pebble (the log is what makes transactions atomic across a crash,
// and readers of the keys wait for the whole round), and Pebble takes a
// batch larger than half a memtable as a memtable of its own.
const commitBytes = 1 << 20

// applyFrames applies the batches framed in frames, in order, dropping
// every point record that a later record of the same key in the same
// round overwrites. last is the round's index (a key's hash to the offset
// in frames of the last record of that hash, seeded with seed), or nil:
// applyFrames then builds it. A record is dropped when the last record of
// its hash is another record of the same key (a different key with the
// same hash keeps it).
// Dropping it cannot change the result: a Set or Delete replaces whatever
// the key held, whatever range deletion came between.
func (a *applier) applyFrames(frames []byte, last map[uint64]int, seed maphash.Seed) error {
	n := 0
	for rest := frames; len(rest) > 0; n++ {
		_, r, ok := splitFrame(rest)
		if !ok {
			return fmt.Errorf("coldstore: corrupt pending frame")
		}
		rest = r
	}
	coalesce := n >= coalesceMin
	if coalesce && last == nil {
		a.ix.reset()
		a.ix.catchUp(frames, seed)
		last = a.ix.keys
	}
	b := a.db.NewBatch()
	defer func() { b.Close() }()
	for rest := frames; len(rest) > 0; {
		repr, r, _ := splitFrame(rest)
		base := len(frames) - len(rest) + frameHeader
		rest = r
		rd := batchrepr.Read(repr)
		for {
			off := base + len(repr) - len(rd)
			kind, k, v, ok, err := rd.Next()
			if err != nil {
				return fmt.Errorf("coldstore: read pending batch: %w", err)
			}
			if !ok {
				break
			}
			if coalesce && kind != pebble.InternalKeyKindRangeDelete && overwritten(frames, off, k, last[maphash.Bytes(seed, k)]) {
				a.dropped++
				continue
			}
			switch kind {
			case pebble.InternalKeyKindSet:
				err = b.Set(k, v, nil)
			case pebble.InternalKeyKindDelete:
				err = b.Delete(k, nil)
			case pebble.InternalKeyKindRangeDelete:
				err = b.DeleteRange(k, v, nil)
			default:
				err = fmt.Errorf("coldstore: unexpected record kind %v in a batch", kind)
			}
			a.applied++
			if err == nil && len(b.Repr()) >= commitBytes {
				err = commitNoWAL(b)
				b.Reset()
			}
			if err != nil {
				return err
			}
		}
	}
	a.rounds++
	if b.Empty() {
		return nil
	}
	return commitNoWAL(b)
}

// overwritten reports whether the record of key k at offset off in frames
// is followed by another record of k: lastOff, the offset of the last
// record of k's hash, is later and holds k.
func overwritten(frames []byte, off int, k []byte, lastOff int) bool {
	if lastOff <= off || lastOff >= len(frames) {
		return false
	}
	_, lk, ok := batchrepr.DecodeStr(frames[lastOff+1:])
	return ok && string(lk) == string(k)
}

// commitNoWAL commits b to Pebble, which runs without a WAL: the write log
// already holds it.
func commitNoWAL(b *pebble.Batch) error {
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("coldstore: commit: %w", err)
	}
	return nil
}

// replayer applies the batches of a log replay, merged into commits of up
// to commitBytes.
type replayer struct {
	db *pebble.DB
	b  *pebble.Batch
	n  int64
}

func (r *replayer) add(repr []byte) error {
	if r.b == nil {
		r.b = r.db.NewBatch()
	}
	one := r.db.NewBatch()
	defer one.Close()
	if err := one.SetRepr(append([]byte(nil), repr...)); err != nil {
		return fmt.Errorf("coldstore: replayed batch: %w", err)
	}
	if err := r.b.Apply(one, nil); err != nil {
		return fmt.Errorf("coldstore: replayed batch: %w", err)
	}
	r.n++
	if len(r.b.Repr()) >= commitBytes {
		return r.flush()
	}
	return nil
}

func (r *replayer) flush() error {
	if r.b == nil || r.b.Empty() {
		return nil
	}
	err := commitNoWAL(r.b)
	r.b.Reset()
	return err
}

func (r *replayer) close() {
	if r.b != nil {
		r.b.Close()
	}
}
