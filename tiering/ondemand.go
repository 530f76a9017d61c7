package tiering

import (
	"fmt"

	"github.com/spillway/spillway/codec"
)

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

// PutSystem writes system record name (codec.Sys*) within the transaction:
// it is stored atomically with the transaction's other writes.
func (tx *Tx) PutSystem(name string, val []byte) error {
	return tx.batch.Set(codec.AppendSystemKey(nil, name), append([]byte(nil), val...))
}

// SystemRecord reads the committed system record name (codec.Sys*).
func (e *Engine) SystemRecord(name string) ([]byte, bool, error) {
	v, ok, err := e.cold.Get(codec.AppendSystemKey(nil, name), nil)
	if err != nil {
		return nil, false, fmt.Errorf("tiering: read system record %s: %w", name, err)
	}
	return v, ok, nil
}
