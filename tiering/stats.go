package tiering

import "github.com/spillway/spillway/codec"

// Read-only figures for MEMORY and INFO: what one key costs, and the hot
// tier's totals. None of them promotes a key, touches its recency, expires
// it or counts a keyspace hit or miss.

// KeyUsage is one key's footprint (MEMORY USAGE).
type KeyUsage struct {
	// Bytes is, for a hot key, what the hot tier's byte accounting charges
	// for its decoded copy (key, value and per-entry overhead: the figure
	// the budget is enforced with); for a cold key, the bytes of its
	// records in the store before compression (its meta record, and its
	// data records estimated from the meta record's counts, no I/O).
	Bytes int64
	// Hot reports that the key has a decoded copy in memory.
	Hot bool
}

// KeyUsage returns key's footprint in database db, and false if key is not
// stored. As Redis's MEMORY USAGE, a key whose time to live has passed but
// which is not yet deleted is still reported.
func (tx *Tx) KeyUsage(db int, key []byte) (KeyUsage, bool, error) {
	pdb := tx.pdb(db)
	tx.hk = hotKey(tx.hk, pdb, key)
	e, hot, err := tx.stored(pdb, key, tx.hk)
	if err != nil || e == nil {
		return KeyUsage{}, false, err
	}
	if hot {
		return KeyUsage{Bytes: e.size, Hot: true}, true, nil
	}
	return KeyUsage{Bytes: coldSize(pdb, key, e)}, true, nil
}

// coldSize estimates the bytes of a cold key's records: the meta record
// (key and encoded meta, a string's value included) and, for a structure,
// one data record per element whose record key repeats the key's data
// prefix, as the codec lays them out.
func coldSize(pdb uint8, key []byte, e *Entry) int64 {
	metaKey := int64(len(codec.AppendMetaKey(nil, pdb, key)))
	m := codec.Meta{Type: e.Type, ExpireAt: e.ExpireAt, Version: e.Version, Count: uint64(e.Count),
		Bytes: uint64(e.Bytes), Head: e.Head, Tail: e.Tail, Value: e.Str}
	n := metaKey + int64(len(codec.AppendMeta(nil, &m)))
	prefix := int64(len(codec.AppendDataPrefix(nil, pdb, key, e.Version))) + 1 // + the record's tag
	switch e.Type {
	case codec.TypeString:
	case codec.TypeList:
		n += e.Count*(prefix+8) + e.Bytes // index(8) | element
	case codec.TypeZSet:
		// member -> score and (score, member) records: the member twice.
		n += e.Count*(2*prefix+4+8+8) + 2*e.Bytes
	default:
		n += e.Count*(prefix+4) + e.Bytes // field hash(4) | field -> value
	}
	return n
}

// HotKeys returns how many keys of database db have a decoded copy in
// memory.
func (tx *Tx) HotKeys(db int) int64 { return tx.e.hot.perDB[tx.pdb(db)] }

// HotMemory is the hot tier's byte accounting (INFO memory, MEMORY STATS).
type HotMemory struct {
	// Keys is the number of hot keys; Used the bytes they are charged,
	// Peak the most Used has been since the engine opened; Budget the
	// byte budget.
	Keys               int
	Used, Peak, Budget int64
}

// HotMemory returns the hot tier's figures; it takes the engine's lock
// briefly (Tx.HotMemory inside a transaction).
func (e *Engine) HotMemory() HotMemory {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hotMemory()
}

// HotMemory is Engine.HotMemory for a holder of the lock (a command inside
// MULTI or a script, whose group holds it already).
func (tx *Tx) HotMemory() HotMemory { return tx.e.hotMemory() }

func (e *Engine) hotMemory() HotMemory {
	l := e.hot
	return HotMemory{Keys: l.Len(), Used: l.used, Peak: max(l.peak, l.used), Budget: l.budget}
}

// HotOverhead returns what the hot tier charges database db's hot keys
// beyond their keys and values (the per-entry overhead): MEMORY STATS's
// overhead.hashtable.main.
func (tx *Tx) HotOverhead(db int) int64 { return tx.HotKeys(db) * entryOverhead }

// Inspect returns key's entry if it is stored and has not expired, hot or
// cold, without promoting it, touching its recency, deleting it or
// counting a keyspace hit or miss (nil if absent). The entry must not be
// modified.
func (tx *Tx) Inspect(db int, key []byte) (*Entry, error) {
	e, err := tx.storedEntry(db, key)
	if e == nil || err != nil || tx.expired(e) {
		return nil, err
	}
	return e, nil
}
