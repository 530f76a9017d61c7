package coldstore

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Snapshot is a consistent, read-only view of the store as of the moment it
// was taken: later commits, deletions and reclamation do not change what it
// reads. It pins the records it can see (their space is not reclaimed)
// until Close, which must be called once; it is safe for use by one
// goroutine while others write to the store.
type Snapshot struct {
	s    *Store
	snap *pebble.Snapshot
}

// NewSnapshot takes a snapshot of the committed data (a batch's uncommitted
// writes are not in it).
func (s *Store) NewSnapshot() *Snapshot {
	// A failed application is reported by the snapshot's reads.
	_ = s.q.waitAll()
	return &Snapshot{s: s, snap: s.db.NewSnapshot()}
}

// NewIter returns an iterator over [lower, upper) of the snapshot.
func (sn *Snapshot) NewIter(lower, upper []byte) (*Iter, error) {
	it, err := sn.snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("coldstore: snapshot iterator: %w", err)
	}
	return &Iter{Iterator: it, steps: &sn.s.iterSteps, points: &sn.s.iterPoints}, nil
}

// Get reads one record of the snapshot into buf.
func (sn *Snapshot) Get(key, buf []byte) ([]byte, bool, error) {
	return sn.s.getInto(sn.snap, key, buf)
}

// Close releases the snapshot.
func (sn *Snapshot) Close() error {
	if err := sn.snap.Close(); err != nil {
		return fmt.Errorf("coldstore: close snapshot: %w", err)
	}
	return nil
}

// Dir is the directory the store was opened in.
func (s *Store) Dir() string { return s.opts.Dir }
