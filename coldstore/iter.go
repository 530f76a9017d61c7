package coldstore

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// Iter is a Pebble iterator that counts the records it lands on in the
// store's read counters. Every other method is Pebble's.
type Iter struct {
	*pebble.Iterator
	steps *atomic.Int64
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
	Gets      int64
	IterSteps int64
}

// ReadStats returns the read counters.
func (s *Store) ReadStats() ReadStats {
	return ReadStats{Gets: s.gets.Load(), IterSteps: s.iterSteps.Load()}
}
