package tiering

// Demote drops key's hot copy now (its value is already in the cold store)
// and reports whether it was hot. It is demotion on demand, for tests and
// tools: the key's next read is a cold read.
func (tx *Tx) Demote(db int, key []byte) bool {
	pdb := tx.pdb(db)
	tx.hk = hotKey(tx.hk, pdb, key)
	if !tx.e.hot.remove(tx.hk) {
		return false
	}
	tx.e.Stats.Demotions.Add(1)
	return true
}
