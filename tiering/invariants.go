//go:build invariants

package tiering

import (
	"fmt"
	"time"

	"github.com/spillway/spillway/codec"
)

// InvariantLockWait is how long CheckInvariants waits for the engine's
// lock before it reports it held: background work (the sweeper, stepwise
// promotion) holds it briefly, a leaked transaction for ever.
var InvariantLockWait = 2 * time.Second

// CheckInvariants verifies what must hold between transactions (built
// with the invariants tag only; a test's tool, not a production check):
//
//   - the engine's lock is free, or freed within InvariantLockWait;
//   - every hot entry's recorded size is what its contents cost
//     (entrySize), so no in-place change was left unaccounted;
//   - the hot tier's used bytes are the sum of its entries' sizes, and
//     within the budget;
//   - the per-database hot key counts add up to the entries held;
//   - a list held by its ends has garbage spans outside Head..Tail
//     (listCache.gc);
//   - the dirty set (writeback.go) holds exactly the dirty entries, each
//     a hot string or a list held whole, at its recorded place, and no
//     transaction's undo or unwritten demoted entry is left over.
//
// It takes the lock for the check and returns the first violation found.
func (e *Engine) CheckInvariants() error {
	deadline := time.Now().Add(InvariantLockWait)
	for !e.mu.TryLock() {
		if time.Now().After(deadline) {
			return fmt.Errorf("tiering: engine lock still held %v after the command (transaction %d open)",
				InvariantLockWait, e.held.Load())
		}
		time.Sleep(100 * time.Microsecond)
	}
	defer e.mu.Unlock()
	if id := e.held.Load(); id != 0 {
		return fmt.Errorf("tiering: the lock is free but transaction %d is marked open", id)
	}
	h := e.hot
	var used int64
	var perDB [256]int64
	listed, dirty := 0, 0
	for he := h.root.next; he != &h.root; he = he.next {
		if listed++; listed > len(h.m) || he.next.prev != he {
			return fmt.Errorf("tiering: the hot tier's recency list is broken after %d of its %d entries", listed, len(h.m))
		}
		hk := he.hk
		if h.m[hk] != he {
			return fmt.Errorf("tiering: hot key %q listed but not found", hk)
		}
		if want := entrySize([]byte(hk[1:]), he); he.size != want {
			return fmt.Errorf("tiering: hot key %q (db %d, %v) accounted at %d bytes, its contents cost %d",
				hk[1:], hk[0], he.Type, he.size, want)
		}
		used += he.size
		perDB[hk[0]]++
		if lc := he.list; lc != nil && !lc.whole && (lc.gc[0] > he.Head || lc.gc[1] < he.Tail) {
			return fmt.Errorf("tiering: hot list %q (db %d) held by its ends has garbage spans %v inside %d..%d", hk[1:], hk[0], lc.gc, he.Head, he.Tail)
		}
		if he.dirtyAt != 0 {
			dirty++
			if int(he.dirtyAt) > len(h.dirty) || h.dirty[he.dirtyAt-1] != he ||
				he.Type != codec.TypeString && (he.list == nil || !he.list.whole) {
				return fmt.Errorf("tiering: hot key %q (db %d, %v) marked dirty at %d, not in the dirty set", hk[1:], hk[0], he.Type, he.dirtyAt)
			}
		}
	}
	if dirty != len(h.dirty) {
		return fmt.Errorf("tiering: the dirty set holds %d entries, %d hot entries are dirty", len(h.dirty), dirty)
	}
	if len(h.undo) != 0 || len(h.listUndo) != 0 || len(h.evicted) != 0 {
		return fmt.Errorf("tiering: %d undo records and %d demoted dirty entries left between transactions", len(h.undo), len(h.evicted))
	}
	if listed != len(h.m) {
		return fmt.Errorf("tiering: the hot tier's recency list holds %d of its %d entries", listed, len(h.m))
	}
	if used != h.used {
		return fmt.Errorf("tiering: hot tier accounts %d bytes, its %d entries sum to %d", h.used, len(h.m), used)
	}
	if h.used > h.budget {
		return fmt.Errorf("tiering: hot tier holds %d bytes, over its budget of %d", h.used, h.budget)
	}
	if perDB != h.perDB {
		for db := range perDB {
			if perDB[db] != h.perDB[db] {
				return fmt.Errorf("tiering: physical db %d: hot counter %d, hot tier holds %d keys", db, h.perDB[db], perDB[db])
			}
		}
	}
	return nil
}

// SkewHotAccountingForTest adds n to the hot tier's used bytes without
// changing its contents, so that tests can see CheckInvariants fire.
func (e *Engine) SkewHotAccountingForTest(n int64) {
	e.mu.Lock()
	e.hot.used += n
	e.mu.Unlock()
}

// LeakTxForTest opens a transaction and leaves it open, holding the
// engine's lock, as a caller that could take the lock by hand might: tests
// see CheckInvariants fire on it. The returned function releases it.
// Outside tests the lock is only taken through Update and View.
func (e *Engine) LeakTxForTest() (txID uint64, release func()) {
	tx := e.begin()
	return tx.TxID(), tx.abort
}
