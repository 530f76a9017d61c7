package coldstore

import (
	"cmp"
	"fmt"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/batchrepr"
)

// replayer applies a log replay (openLog) to Pebble, coalesced as an
// application round is (apply.go): of the point records of one key
// between two range deletions, only the last is applied, and the records
// kept are written in key order. A log-only record (logonly.go) is applied
// as the Set or Delete it stands for.
//
// Why: a replay is what a restart after a crash waits for, and the log
// it replays is mostly overwrites of the same keys (the write-back's
// log-only records, counters, a hot hash's fields). Applied batch by
// batch, each record was its own memtable insert, in commit order: 2
// million SETs of 100 bytes over 200,000 keys (321 MB of log) took 11 s;
// coalesced, the memtable takes a sorted run of each key once per window.
//
// The records alias the segment openLog read, so the run is applied at
// the end of each segment (endSegment) at the latest, and every
// replayRunMax distinct keys, which bounds the replay's index.
type replayer struct {
	db *pebble.DB
	b  *pebble.Batch
	// memBytes bounds a commit's memtable footprint, as the applier's
	// (applier.memBytes); mem counts the batch's.
	memBytes, mem int
	// n counts the batches replayed; applied and dropped the point
	// records applied and those a later record of their key overwrote.
	n, applied, dropped int64
	// run holds the window's point records, one per key: last maps a
	// key (aliasing its record) to its place in run. runMax bounds it
	// (replayRunMax; tests make it smaller).
	runMax int
	run    []pointRec
	last   map[string]int32
	order  []keyOrder
}

// replayRunMax is how many distinct keys a replay window holds before it
// is applied: about 100 bytes of index a key.
const replayRunMax = 1 << 20

// add takes one replayed batch.
func (r *replayer) add(repr []byte) error {
	if _, ok := batchrepr.ReadHeader(repr); !ok {
		return fmt.Errorf("coldstore: replayed batch: short header")
	}
	r.n++
	for rd := batchrepr.Read(repr); ; {
		kind, k, v, ok, err := rd.Next()
		if err != nil {
			return fmt.Errorf("coldstore: replayed batch: %w", err)
		}
		if !ok {
			return nil
		}
		switch kind {
		case pebble.InternalKeyKindSet:
			err = r.point(k, v, false)
		case pebble.InternalKeyKindDelete:
			err = r.point(k, nil, true)
		case pebble.InternalKeyKindLogData:
			key, value, del, perr := parseLogOnly(k)
			if perr != nil {
				return fmt.Errorf("coldstore: replayed batch: %w", perr)
			}
			err = r.point(key, value, del)
		case pebble.InternalKeyKindRangeDelete:
			// The point records before it are applied before it.
			if err = r.applyRun(); err == nil {
				err = r.batch().DeleteRange(k, v, nil)
			}
			if err == nil {
				err = r.commitIfFull(len(k) + len(v))
			}
		default:
			return fmt.Errorf("coldstore: unexpected record kind %v in a replayed batch", kind)
		}
		if err != nil {
			return fmt.Errorf("coldstore: replayed batch: %w", err)
		}
	}
}

// point takes a Set (or a Delete: del) of k: it replaces the window's
// record of k, if any.
func (r *replayer) point(k, v []byte, del bool) error {
	if r.last == nil {
		r.last = make(map[string]int32)
	}
	ks := unsafe.String(unsafe.SliceData(k), len(k)) // aliases the segment, as the run does
	if i, ok := r.last[ks]; ok {
		r.run[i] = pointRec{k: k, v: v, del: del}
		r.dropped++
		return nil
	}
	r.last[ks] = int32(len(r.run))
	r.run = append(r.run, pointRec{k: k, v: v, del: del})
	if len(r.run) >= cmp.Or(r.runMax, replayRunMax) {
		return r.applyRun()
	}
	return nil
}

// endSegment applies what the segment left in the window: its bytes are
// about to be released.
func (r *replayer) endSegment() error { return r.applyRun() }

// applyRun writes the window's records into the batch in key order,
// committing it whenever it fills, and empties the window.
func (r *replayer) applyRun() error {
	if len(r.run) == 0 {
		return nil
	}
	r.order = sortRun(r.order, r.run)
	b := r.batch()
	var err error
	for _, o := range r.order {
		p := &r.run[o.i]
		if p.del {
			err = b.Delete(p.k, nil)
		} else {
			err = b.Set(p.k, p.v, nil)
		}
		if err == nil {
			err = r.commitIfFull(len(p.k) + len(p.v))
		}
		if err != nil {
			break
		}
	}
	r.applied += int64(len(r.run))
	clear(r.run)
	r.run = r.run[:0]
	clear(r.last)
	return err
}

func (r *replayer) batch() *pebble.Batch {
	if r.b == nil {
		r.b = r.db.NewBatch(pebble.WithInitialSizeBytes(batchBytes), pebble.WithMaxRetainedSizeBytes(batchBytes))
	}
	return r.b
}

// commitIfFull counts a record of n bytes just added and commits the
// batch once it holds commitBytes or its memtable bound.
func (r *replayer) commitIfFull(n int) error {
	r.mem += n + memEntryBytes
	if len(r.b.Repr()) < commitBytes && r.mem < r.memBytes {
		return nil
	}
	return r.flush()
}

// flush commits the batch (the window must be applied first).
func (r *replayer) flush() error {
	if r.b == nil || r.b.Empty() {
		return nil
	}
	err := commitNoWAL(r.b)
	r.b.Reset()
	r.mem = 0
	return err
}

func (r *replayer) close() {
	if r.b != nil {
		r.b.Close()
	}
}
