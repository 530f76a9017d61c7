package tiering

import "github.com/spillway/spillway/coldstore"

// The engine's lock, as the rest of the program takes it. Update and View
// are the only ways to open a transaction from outside this package: each
// takes the lock, runs a function and releases the lock whatever the
// function returns or panics with, so no caller can leave it held or
// release it twice.

// Update runs fn in a transaction, holding the engine's lock for the whole
// call. When fn returns nil, what it wrote is committed atomically; when it
// returns an error or panics, nothing it wrote is kept (the panic goes on).
// It returns fn's error or the commit's, and the Pending the caller must
// wait on before acknowledging the writes (a no-op unless appendfsync is
// always).
func (e *Engine) Update(fn func(tx *Tx) error) (coldstore.Pending, error) {
	return e.UpdateAt(0, fn)
}

// UpdateAt is Update with the transaction's time (Tx.Now) given: nowMs,
// unix milliseconds, is the time the caller's command began, as Redis
// takes one time for a whole command (its expiry checks, the times it
// sets); the engine saves reading the clock. 0 reads the clock, as Update.
// A caller that waited (a blocked command woken up) must pass a fresh
// time or 0.
func (e *Engine) UpdateAt(nowMs int64, fn func(tx *Tx) error) (coldstore.Pending, error) {
	e.mu.Lock()
	tx := e.beginHeld(nowMs)
	finished := false
	defer func() {
		if !finished {
			tx.abort() // fn panicked
		}
	}()
	err := fn(tx)
	finished = true
	if err != nil {
		tx.abort()
		return coldstore.Pending{}, err
	}
	p, err := tx.commit()
	if err != nil {
		return p, err
	}
	// The lock is released: apply the batch (and any queued meanwhile)
	// to the store outside it (coldstore/commitq.go).
	return p, e.cold.Drain()
}

// View runs fn in a transaction that is aborted when fn returns: for reads
// that write nothing, not even the deletion of an expired key they meet
// (Tx.Peek, Tx.Keys, Tx.DBSize...). A write fn makes anyway is discarded,
// and the hot tier with it (it is rebuilt from the store on demand).
func (e *Engine) View(fn func(tx *Tx) error) error {
	tx := e.begin()
	defer tx.abort()
	return fn(tx)
}

// Run keeps the engine's lock across a run of transactions: a client's
// pipeline of ordinary commands takes the lock once, not once a command,
// and its batches are applied to the store once, when the run ends. Each
// transaction of the run is still committed or aborted on its own, in
// order, exactly as Update commits it (its batch takes its place in the
// store's commit order at its commit, so every read of the store sees
// it), so a run changes only when the lock is released and the batches
// applied. The zero Run holds nothing. A Run is used by one goroutine.
//
// The holder must not block while it holds a run (no network I/O, no
// waiting for other clients) and must not open any other transaction
// (Update, View) meanwhile: it ends the run first.
type Run struct {
	e *Engine
	// n counts the transactions run under the current hold.
	n int
}

// Update runs fn as Engine.Update does, but under the run's hold of the
// lock, which it takes if the run holds nothing and keeps when fn
// returns; the batch is queued, not applied (End applies it). If fn
// panics, the transaction is aborted and the run ended before the panic
// goes on.
func (r *Run) Update(e *Engine, fn func(tx *Tx) error) (coldstore.Pending, error) {
	return r.UpdateAt(e, 0, fn)
}

// UpdateAt is Update with the transaction's time given, as
// Engine.UpdateAt.
func (r *Run) UpdateAt(e *Engine, nowMs int64, fn func(tx *Tx) error) (coldstore.Pending, error) {
	if r.e == nil {
		e.mu.Lock()
		r.e = e
	}
	r.n++
	tx := e.beginHeld(nowMs)
	finished := false
	defer func() {
		if !finished {
			tx.abortHeld() // fn panicked
			r.End()
		}
	}()
	err := fn(tx)
	finished = true
	if err != nil {
		tx.abortHeld()
		return coldstore.Pending{}, err
	}
	return tx.commitHeld()
}

// Held reports whether the run holds the lock, and how many transactions
// it ran under this hold.
func (r *Run) Held() (bool, int) { return r.e != nil, r.n }

// End releases the lock, if the run holds it, and applies the batches
// queued meanwhile (Store.Drain); it returns Drain's error.
func (r *Run) End() error {
	e := r.e
	if e == nil {
		return nil
	}
	r.e, r.n = nil, 0
	e.mu.Unlock()
	return e.cold.Drain()
}
