package coldstore

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// Iter is a Pebble iterator that counts the records it lands on in the
// store's read counters and, when it is closed, the internal points it
// stepped over (see ReadStats.IterPoints). Every other method is Pebble's.
type Iter struct {
	*pebble.Iterator
	steps  *atomic.Int64
	points *atomic.Int64
}

// Close closes the iterator and adds the internal points it visited to
// the store's counter.
func (it *Iter) Close() error {
	it.points.Add(int64(it.Stats().InternalStats.PointCount))
	return it.Iterator.Close()
}

func (it *Iter) count(valid bool) bool {
	if valid {
		it.steps.Add(1)
	}
	return valid
}

// First moves to the first record.
func (it *Iter) First() bool { return it.count(it.Iterator.First()) }

// Last moves to the last record.
func (it *Iter) Last() bool { return it.count(it.Iterator.Last()) }

// Next moves to the next record.
func (it *Iter) Next() bool { return it.count(it.Iterator.Next()) }

// Prev moves to the previous record.
func (it *Iter) Prev() bool { return it.count(it.Iterator.Prev()) }

// SeekGE moves to the first record at or after key.
func (it *Iter) SeekGE(key []byte) bool { return it.count(it.Iterator.SeekGE(key)) }

// SeekLT moves to the last record before key.
func (it *Iter) SeekLT(key []byte) bool { return it.count(it.Iterator.SeekLT(key)) }

// ReadStats are the store's read counters since it opened: point lookups
// and records visited by iterators. They let tests assert that an operation
// touched a bounded number of records.
type ReadStats struct {
	Gets int64
	// IterSteps counts the live records iterators landed on.
	IterSteps int64
	// IterPoints counts the internal points closed iterators stepped over:
	// live records, but also the deletion tombstones (and the records
	// they shadow) Pebble skips on the way, which IterSteps does not see.
	// A walk that starts in a consumed prefix shows here.
	IterPoints int64
}

// ReadStats returns the read counters.
func (s *Store) ReadStats() ReadStats {
	return ReadStats{Gets: s.gets.Load(), IterSteps: s.iterSteps.Load(), IterPoints: s.iterPoints.Load()}
}
