package tiering

import "sync/atomic"

// KeyEvent is what a transaction did to a key (see Observer).
type KeyEvent uint8

const (
	// KeyModified: the key's value, a field or element, or its expiry was
	// written (the key exists afterwards).
	KeyModified KeyEvent = iota
	// KeyDeleted: the key was deleted (DEL, an emptied structure, the source
	// of RENAME, a type overwrite...).
	KeyDeleted
	// KeyExpired: the key was deleted because its time to live had passed
	// (a lookup found it expired, or the sweeper did, hot or cold).
	KeyExpired
	// KeyEvicted: the key was deleted by an eviction (Tx.Evict).
	KeyEvicted
)

// Observer is told of every key a transaction modifies, deletes or
// expires, with its logical database, while the transaction holds the
// engine's lock (so it sees the events of one transaction in order and
// none of another's in between). It must not call into the engine. Events
// of a transaction that later aborts (a storage error) are not withdrawn.
// FLUSHDB, FLUSHALL and SWAPDB report no per-key events. Demotion and
// promotion are not modifications and report nothing.
type Observer func(db int, key []byte, ev KeyEvent)

// observerState is the engine's observer and whether it wants events.
type observerState struct {
	fn Observer
	on atomic.Bool
}

// SetObserver installs the observer (before the engine serves commands).
func (e *Engine) SetObserver(fn Observer) { e.observer.fn = fn }

// SetObserving turns event reports on or off; while off (the default)
// writes pay one atomic load.
func (e *Engine) SetObserving(on bool) { e.observer.on.Store(on) }

// KeyExpiredNow reports whether key is stored in db with an expiry that
// has passed (not yet deleted), without deleting, promoting or counting it.
func (tx *Tx) KeyExpiredNow(db int, key []byte) (bool, error) {
	e, err := tx.storedEntry(db, key)
	return e != nil && tx.expired(e), err
}

// KeyStored reports whether key is stored in db, expired or not, without
// deleting, promoting or counting it (WATCH's view of FLUSHDB and SWAPDB).
func (tx *Tx) KeyStored(db int, key []byte) (bool, error) {
	e, err := tx.storedEntry(db, key)
	return e != nil, err
}

func (tx *Tx) storedEntry(db int, key []byte) (*Entry, error) {
	pdb := tx.pdb(db)
	tx.hk = hotKey(tx.hk, pdb, key)
	e, _, err := tx.stored(pdb, key, tx.hk)
	return e, err
}

// observe reports an event on key (physical database pdb) if wanted.
func (tx *Tx) observe(pdb uint8, key []byte, ev KeyEvent) {
	o := &tx.e.observer
	if !o.on.Load() || o.fn == nil {
		return
	}
	for db := 0; db < tx.e.opts.Databases; db++ {
		if tx.e.dbmap[db] == pdb {
			o.fn(db, key, ev)
			return
		}
	}
}
