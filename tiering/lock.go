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
	tx := e.begin()
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
