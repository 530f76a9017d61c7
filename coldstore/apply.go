package coldstore

import (
	"fmt"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/batchrepr"
)

// applier turns an application round's frames into Pebble commits
// (commitq.go). It is used by one round at a time; its map is kept
// between rounds so that a steady load allocates nothing.
type applier struct {
	db *pebble.DB
	// last maps a point key to the ordinal of its last record in the
	// round: only that record is applied.
	last map[string]int32
	// Records and bytes the rounds applied and dropped (overwritten in
	// the same round), for INFO and tests.
	applied, dropped, rounds int64
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
// round overwrites. Dropping it cannot change the result: a Set or Delete
// replaces whatever the key held, whatever range deletion came between.
func (a *applier) applyFrames(frames []byte) error {
	n := 0
	for rest := frames; len(rest) > 0; n++ {
		_, r, ok := nextFrame(rest)
		if !ok {
			return fmt.Errorf("coldstore: corrupt pending frame")
		}
		rest = r
	}
	coalesce := n >= coalesceMin
	if coalesce {
		if a.last == nil {
			a.last = make(map[string]int32)
		}
		clear(a.last)
		ord := int32(0)
		ok, err := a.scan(frames, func(kind pebble.InternalKeyKind, k, _ []byte) {
			if kind != pebble.InternalKeyKindRangeDelete {
				a.last[unsafe.String(unsafe.SliceData(k), len(k))] = ord
			}
			ord++
		})
		if err != nil {
			return err
		}
		coalesce = ok
	}
	b := a.db.NewBatch()
	defer func() { b.Close() }()
	ord := int32(0)
	var werr error
	_, err := a.scan(frames, func(kind pebble.InternalKeyKind, k, v []byte) {
		o := ord
		ord++
		if werr != nil {
			return
		}
		if coalesce && kind != pebble.InternalKeyKindRangeDelete && a.last[unsafe.String(unsafe.SliceData(k), len(k))] != o {
			a.dropped++
			return
		}
		switch kind {
		case pebble.InternalKeyKindSet:
			werr = b.Set(k, v, nil)
		case pebble.InternalKeyKindDelete:
			werr = b.Delete(k, nil)
		case pebble.InternalKeyKindRangeDelete:
			werr = b.DeleteRange(k, v, nil)
		default:
			werr = fmt.Errorf("coldstore: unexpected record kind %v in a batch", kind)
		}
		a.applied++
		if werr == nil && len(b.Repr()) >= commitBytes {
			werr = commitNoWAL(b)
			b.Reset()
		}
	})
	if err == nil {
		err = werr
	}
	if err == nil && !b.Empty() {
		err = commitNoWAL(b)
	}
	clear(a.last)
	a.rounds++
	return err
}

// scan calls fn for every record of every framed batch, in order. It
// reports false when a record of a kind other than Set, Delete or
// DeleteRange appears (the batches are then applied as they are).
func (a *applier) scan(frames []byte, fn func(kind pebble.InternalKeyKind, k, v []byte)) (bool, error) {
	plain := true
	for rest := frames; len(rest) > 0; {
		repr, r, _ := nextFrame(rest)
		rest = r
		rd := batchrepr.Read(repr)
		for {
			kind, k, v, ok, err := rd.Next()
			if err != nil {
				return false, fmt.Errorf("coldstore: read pending batch: %w", err)
			}
			if !ok {
				break
			}
			switch kind {
			case pebble.InternalKeyKindSet, pebble.InternalKeyKindDelete, pebble.InternalKeyKindRangeDelete:
			default:
				plain = false
			}
			fn(kind, k, v)
		}
	}
	return plain, nil
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
