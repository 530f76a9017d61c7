package link

import (
	"fmt"

	"github.com/spillway/spillway/proxy/rdb"
	"github.com/spillway/spillway/tiering"
)

// Dump is the RESTORE payload encoder, proxy/rdb's (the one embedded
// mode's DUMP uses too).
type Dump = rdb.Dump

// dumpRDBVersion is the RDB version of the payloads sent upstream. Redis
// rejects payloads whose version is newer than its own; 9 is the version of
// Redis 5.0, so the payload loads on Redis 5.0 through 7.x.
const dumpRDBVersion = 9

// The cold store in upstream mode is the tiering engine with no hot tier:
// every key it holds is a cold copy. This file builds the RESTORE payload
// that moves a cold copy back upstream; writing, dropping and weighing
// cold copies is the placement policy's (tiering/uptier).

// DumpKey builds into d the RESTORE payload of key's cold copy and returns
// its expiry (unix ms, 0 for none); ok is false when there is no live cold
// copy.
func DumpKey(eng *tiering.Engine, db int, key []byte, d *Dump) (expireAt int64, ok bool, err error) {
	// Update, not View: an expired copy found is deleted.
	_, err = eng.Update(func(tx *tiering.Tx) error {
		e, err := tx.Peek(db, key)
		if err != nil || e == nil {
			return err
		}
		if err := dumpEntry(tx, db, key, e, d); err != nil {
			return err
		}
		expireAt, ok = e.ExpireAt, true
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return expireAt, ok, nil
}

// dumpEntry writes e, key's live cold copy, into d.
func dumpEntry(tx *tiering.Tx, db int, key []byte, e *tiering.Entry, d *Dump) error {
	d.Reset()
	d.Version = dumpRDBVersion
	if err := tx.WriteValue(db, key, e, d); err != nil {
		return fmt.Errorf("upstream: read cold copy: %w", err)
	}
	return nil
}
