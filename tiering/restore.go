package tiering

// SetIdleMillis backdates the last access of key (database db) by ms
// milliseconds, as RESTORE ... IDLETIME sets a key's LRU clock, so that
// IdleMillis reports it. Only a hot key keeps an access time: for a cold
// or missing key it does nothing and reports false.
func (tx *Tx) SetIdleMillis(db int, key []byte, ms int64) (bool, error) {
	e, wasHot, err := tx.live(tx.pdb(db), key)
	if err != nil || e == nil || !wasHot {
		return false, err
	}
	e.access = tx.now - ms
	return true, nil
}
