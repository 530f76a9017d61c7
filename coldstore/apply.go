package coldstore

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/batchrepr"
)

// applier turns an application round's frames into Pebble commits
// (commitq.go). It is used by one round at a time.
type applier struct {
	db *pebble.DB
	// b is the rounds' one Pebble batch, reset after every commit: its
	// buffer is sized for a commit (batchBytes) and kept, where a batch per
	// round regrew it from 1 KB on fresh memory every round, since a
	// commit's batch outgrows Pebble's default retained size (1 MB).
	b *pebble.Batch
	// memBytes bounds a commit's memtable footprint (a quarter of a
	// memtable; see commitBytes).
	memBytes int
	// Records the rounds applied and dropped (overwritten in the same
	// round), and the rounds, for tests.
	applied, dropped, rounds int64
	// ix indexes a round's buffer for coalescing when the readers' index
	// of it was not complete (commitQueue.round).
	ix pendIndex
	// run holds a coalesced round's point records until sortedRun writes
	// them into b in key order; order is its scratch (run's indexes).
	run   []pointRec
	order []keyOrder
}

// pointRec is a Set (or a Delete: del) of a round, aliasing its frames.
type pointRec struct {
	k, v []byte
	del  bool
}

// keyOrder places a record of a run (its index i) in key order: by its
// key's first 8 bytes (big endian, zero-padded), then by the whole key,
// then by place. Records are scattered over a round's buffer or a log
// segment of megabytes, where comparing two keys cost two cache misses;
// meta keys (a namespace, a database and the key's hash first) and data
// keys (a namespace and a version first) differ within 8 bytes but for a
// structure's own records.
type keyOrder struct {
	prefix uint64
	i      int32
}

// sortRun returns order (reused) holding run's records in key order, the
// records of one key in their place.
func sortRun(order []keyOrder, run []pointRec) []keyOrder {
	order = order[:0]
	for i := range run {
		order = append(order, keyOrder{prefix: keyPrefix(run[i].k), i: int32(i)})
	}
	slices.SortFunc(order, func(x, y keyOrder) int {
		if c := cmp.Compare(x.prefix, y.prefix); c != 0 {
			return c
		}
		if c := bytes.Compare(run[x.i].k, run[y.i].k); c != 0 {
			return c
		}
		return cmp.Compare(x.i, y.i)
	})
	return order
}

func keyPrefix(k []byte) uint64 {
	if len(k) >= 8 {
		return binary.BigEndian.Uint64(k)
	}
	var b [8]byte
	copy(b[:], k)
	return binary.BigEndian.Uint64(b[:])
}

// coalesceMin is the fewest batches worth coalescing: below it the round
// applies them as they are (a read that needed the last few writes).
const coalesceMin = 8

// commitBytes bounds one Pebble commit of a round: a round is not atomic
// in Pebble (the log is what makes transactions atomic across a crash,
// and readers of the keys wait for the whole round), and Pebble takes a
// batch larger than half a memtable as a memtable of its own. A commit
// also ends at a quarter of a memtable (applier.memBytes, counted as
// Pebble counts a record's memtable size, at most memEntryBytes more than
// its key and value), so that Pebble never takes one as a memtable of its
// own: that forced a memtable flush per commit under small budgets (a
// 1 MB commit and a 2 MB memtable), and such a batch's buffer is not
// reused.
const commitBytes = 1 << 20

// memEntryBytes bounds what a memtable entry takes besides its key and
// value (Pebble's skiplist node, at most about 200 bytes, and the key's
// trailer).
const memEntryBytes = 256

// batchBytes is the applier's batch buffer: a commit's bytes plus a record
// (the buffer doubles from it only for a record over 1 MB, and a buffer
// grown past it is not kept).
const batchBytes = 2 * commitBytes

// applyFrames applies the batches framed in frames, in order, dropping
// every point record that a later record of the same key in the same
// round overwrites (a Set or Delete replaces whatever the key held,
// whatever range deletion came between, so dropping it cannot change the
// result). ix is the round's index (pendix.go: it marks the overwritten
// records), or nil: applyFrames then builds it, unless the round is too
// small to be worth it.
func (a *applier) applyFrames(frames []byte, ix *pendIndex, seed maphash.Seed) error {
	n := 0
	for rest := frames; len(rest) > 0; n++ {
		_, r, ok := splitFrame(rest)
		if !ok {
			return fmt.Errorf("coldstore: corrupt pending frame")
		}
		rest = r
	}
	coalesce := n >= coalesceMin || ix != nil
	if coalesce && ix == nil {
		a.ix.reset()
		a.ix.catchUp(frames, nil, seed) // no record known to create its key
		ix = &a.ix
	}
	if a.b == nil {
		a.b = a.db.NewBatch(pebble.WithInitialSizeBytes(batchBytes), pebble.WithMaxRetainedSizeBytes(batchBytes))
	}
	b := a.b
	// The batch is empty between rounds, whatever happens to this one.
	defer b.Reset()
	defer func() { clear(a.run); a.run = a.run[:0] }()
	rec, mem, pend := 0, 0, 0
	for rest := frames; len(rest) > 0; {
		repr, r, _ := splitFrame(rest)
		rest = r
		rd := batchrepr.Read(repr)
		for ; ; rec++ {
			kind, k, v, ok, err := rd.Next()
			if err != nil {
				return fmt.Errorf("coldstore: read pending batch: %w", err)
			}
			if !ok {
				break
			}
			if kind == pebble.InternalKeyKindLogData {
				continue // a log-only record (logonly.go): not for Pebble
			}
			if coalesce && ix.isDropped(rec) {
				a.dropped++
				continue
			}
			switch {
			case coalesce && (kind == pebble.InternalKeyKindSet || kind == pebble.InternalKeyKindDelete):
				a.run = append(a.run, pointRec{k: k, v: v, del: kind == pebble.InternalKeyKindDelete})
				pend += len(k) + len(v) + 16 // its size in b, about: the commit bound counts it
			case kind == pebble.InternalKeyKindSet:
				err = b.Set(k, v, nil)
			case kind == pebble.InternalKeyKindDelete:
				err = b.Delete(k, nil)
			case kind == pebble.InternalKeyKindRangeDelete:
				// The point records before it stay before it.
				if err = a.sortedRun(b); err == nil {
					pend = 0
					err = b.DeleteRange(k, v, nil)
				}
			default:
				err = fmt.Errorf("coldstore: unexpected record kind %v in a batch", kind)
			}
			a.applied++
			mem += len(k) + len(v) + memEntryBytes
			if err == nil && (len(b.Repr())+pend >= commitBytes || mem >= a.memBytes) {
				if err = a.sortedRun(b); err == nil {
					err = commitNoWAL(b)
				}
				b.Reset()
				mem, pend = 0, 0
			}
			if err != nil {
				return err
			}
		}
	}
	a.rounds++
	if err := a.sortedRun(b); err != nil {
		return err
	}
	if b.Empty() {
		return nil
	}
	return commitNoWAL(b)
}

// sortedRun writes the point records held in a.run into b in key order
// and empties it. Records of different keys commute, as long as none
// crosses a range deletion (applyFrames writes the run before each), and
// the records of one key keep their order (ties are broken by place: a
// coalesced round holds one record per key but for a hash collision in
// its index). In key order, Pebble's memtable takes them as a sorted run,
// each insert starting from the previous one's place, where records in
// commit order were each a search from the top of its skiplist (a cache
// miss a level).
func (a *applier) sortedRun(b *pebble.Batch) error {
	a.order = sortRun(a.order, a.run)
	for _, o := range a.order {
		r := &a.run[o.i]
		var err error
		if r.del {
			err = b.Delete(r.k, nil)
		} else {
			err = b.Set(r.k, r.v, nil)
		}
		if err != nil {
			return err
		}
	}
	clear(a.run)
	a.run = a.run[:0]
	return nil
}

// commitNoWAL commits b to Pebble, which runs without a WAL: the write log
// already holds it.
func commitNoWAL(b *pebble.Batch) error {
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("coldstore: commit: %w", err)
	}
	return nil
}
