package tiering

import (
	"bytes"
	"math"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/coldstore"
)

// sweepInterval is how often the expiry sweeper runs.
const sweepInterval = 100 * time.Millisecond

// sweepLoop removes expired keys, hot or cold, without waiting for a client
// to read them, walking the expiry index in time order.
func (e *Engine) sweepLoop() {
	defer e.wg.Done()
	t := time.NewTicker(sweepInterval)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			var held time.Duration // under the lock, not waiting for it
			for !e.expiryPaused.Load() {
				n, d, err := e.sweep(e.opts.SweepPerTick)
				held += d
				if err != nil {
					e.opts.Logger.Error("expiry sweep failed", "err", err)
					break
				}
				if n < e.opts.SweepPerTick {
					break
				}
				select {
				case <-e.stop:
					return
				default:
				}
			}
			if fn := e.sweepObserver.Load(); fn != nil {
				(*fn)(held)
			}
		}
	}
}

// ObserveSweeps makes the expiry sweeper call fn with the duration of
// each of its cycles (every sweepInterval, the expired keys it found then
// removed), the time it held the engine's lock (not the time it waited
// for it, nor the log's sync), from the sweeper's goroutine: the latency monitor's
// "expire-cycle" event, as Redis's activeExpireCycle reports it. fn must
// be quick; a later call replaces fn.
func (e *Engine) ObserveSweeps(fn func(time.Duration)) { e.sweepObserver.Store(&fn) }

type expiryRef struct {
	at  int64
	db  uint8
	key []byte
}

// SweepExpired removes up to limit expired keys (and stale index entries)
// and returns how many index entries it processed.
func (e *Engine) SweepExpired(limit int) (int, error) {
	n, _, err := e.sweep(limit)
	return n, err
}

// sweep is SweepExpired, also returning how long it held the engine's
// lock.
func (e *Engine) sweep(limit int) (n int, held time.Duration, err error) {
	tx := e.begin()
	start := time.Now()
	n, p, err := e.sweepTx(tx, limit)
	held = time.Since(start) // the commit released the lock
	if err != nil {
		return 0, held, err
	}
	return n, held, p.Wait()
}

// sweepTx removes up to limit expired keys in tx and commits it (or
// aborts it on an error), returning the sync to wait for.
func (e *Engine) sweepTx(tx *Tx, limit int) (int, coldstore.Pending, error) {
	var none coldstore.Pending
	floor := e.expiryFloor.get(tx)
	refs, malformed, last, err := e.dueExpiries(floor, tx.now, limit)
	if err != nil {
		tx.abort()
		return 0, none, err
	}
	for _, k := range malformed {
		if err := tx.batch.Delete(k); err != nil {
			tx.abort()
			return 0, none, err
		}
	}
	for _, r := range refs {
		tx.hk = hotKey(tx.hk, r.db, r.key)
		cur, wasHot, err := tx.stored(r.db, r.key, tx.hk)
		if err != nil {
			tx.abort()
			return 0, none, err
		}
		if cur != nil && cur.ExpireAt == r.at {
			if err := tx.expire(r.db, r.key, cur, wasHot); err != nil {
				tx.abort()
				return 0, none, err
			}
			continue
		}
		// The key is gone or carries another expiry: the entry is stale.
		if err := tx.batch.DeleteExpiry(r.at, r.db, r.key); err != nil {
			tx.abort()
			return 0, none, err
		}
	}
	if last != nil {
		// Every entry before last, and last, is deleted: the next sweep
		// starts after it, if this transaction commits.
		e.expiryFloor.advance(tx, last)
	}
	p, err := tx.commit()
	if err != nil {
		return 0, none, err
	}
	return len(refs) + len(malformed), p, nil
}

// expiryFloor is how far the expiry index is known consumed: the sweeper
// deletes the entries due in index order, and each deletion leaves a
// Pebble tombstone until compaction drops it, so a sweep walking from the
// index's start would step over every entry swept before (a wave of
// expired keys would slow every later sweep, under the engine lock).
// The sweeper walks from the floor instead. It is a hint kept in memory,
// under the engine lock: a restart forgets it (the first sweep walks from
// the start), an expiry written below it lowers it (Tx.moveExpiry calls
// expiryWritten), and one that rests on a sweep that did not commit is
// dropped.
type expiryFloor struct {
	key   []byte // no live index entry sorts before key (nil: unknown)
	at    int64  // key's time: writes due later cannot be below it
	claim pendingClaim
}

// get returns the floor (nil if none is known) for tx.
func (f *expiryFloor) get(tx *Tx) []byte {
	if f.key != nil && !f.claim.settle(tx) {
		f.key, f.claim = nil, pendingClaim{}
	}
	return f.key
}

// advance moves the floor past last, the last index entry tx deleted
// (every entry before it is deleted too).
func (f *expiryFloor) advance(tx *Tx, last []byte) {
	f.key = append(append(f.key[:0], last...), 0)
	at, _, _, err := codec.ParseExpiryKey(last)
	if err != nil { // a malformed entry: compare every write with the key
		at = math.MaxInt64
	}
	f.at = at
	f.claim.dependOn(tx, last)
}

// expiryWritten lowers the floor below an index entry written at at for
// (pdb, key). It costs one comparison when the entry is above the floor.
func (e *Engine) expiryWritten(at int64, pdb uint8, key []byte) {
	f := &e.expiryFloor
	if f.key == nil || at > f.at {
		return
	}
	if k := codec.AppendExpiryKey(nil, at, pdb, key); bytes.Compare(k, f.key) < 0 {
		f.key, f.at = k, at // a weaker claim: it holds whatever happens
	}
}

// dueExpiries lists up to limit expiry index entries due before now, from
// floor (nil: the index's start), the raw keys of malformed entries in
// that range (to be deleted), and the last entry's key (nil if none).
func (e *Engine) dueExpiries(floor []byte, now int64, limit int) ([]expiryRef, [][]byte, []byte, error) {
	lo := []byte{codec.NSExpiry}
	hi := codec.AppendExpiryKey(nil, now, 0, nil) // every entry with at < now
	if floor != nil {
		if bytes.Compare(floor, hi) >= 0 {
			return nil, nil, nil, nil
		}
		lo = floor
	}
	it, err := e.cold.NewIter(lo, hi)
	if err != nil {
		return nil, nil, nil, err
	}
	defer it.Close()
	var refs []expiryRef
	var malformed [][]byte
	var last []byte
	for valid := it.First(); valid && len(refs)+len(malformed) < limit; valid = it.Next() {
		last = append(last[:0], it.Key()...)
		at, db, key, err := codec.ParseExpiryKey(it.Key())
		if err != nil {
			e.opts.Logger.Warn("dropping malformed expiry index entry", "err", err)
			malformed = append(malformed, append([]byte(nil), it.Key()...))
			continue
		}
		refs = append(refs, expiryRef{at: at, db: db, key: append([]byte(nil), key...)})
	}
	if err := it.Error(); err != nil {
		return nil, nil, nil, err
	}
	return refs, malformed, last, nil
}

// reclaimInterval is how often stale versions are reclaimed.
const reclaimInterval = time.Second

func (e *Engine) reclaimLoop() {
	e.every(reclaimInterval, func() {
		if !e.reclaimGate.TryLock() {
			return // a Stage is open (stage.go): next tick
		}
		n, err := e.cold.Reclaim(256)
		e.reclaimGate.Unlock()
		if err != nil {
			e.opts.Logger.Error("version reclaim failed", "err", err)
		}
		e.Stats.ReclaimedVers.Add(int64(n))
	})
}

// every runs fn every d until the engine closes, then marks the calling
// background goroutine done (e.wg).
func (e *Engine) every(d time.Duration, fn func()) {
	defer e.wg.Done()
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			fn()
		}
	}
}
