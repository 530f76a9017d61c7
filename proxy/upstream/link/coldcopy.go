package link

import (
	"fmt"

	"github.com/spillway/spillway/codec"
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
	var err error
	d.Reset()
	d.Version = dumpRDBVersion
	switch e.Type {
	case codec.TypeString:
		d.String(e.Str)
	case codec.TypeHash, codec.TypeSet:
		c := tx.PeekColl(db, key, e)
		if e.Type == codec.TypeHash {
			d.BeginHash(int(e.Count))
		} else {
			d.BeginSet(int(e.Count))
		}
		hash := e.Type == codec.TypeHash
		err = c.Each(func(f, v []byte) bool {
			if hash {
				d.Pair(f, v)
			} else {
				d.Elem(f)
			}
			return true
		})
	case codec.TypeList:
		l := tx.PeekList(db, key, e)
		d.BeginList(int(e.Count))
		err = l.Range(0, e.Count-1, false, func(_ int64, v []byte) bool {
			d.Elem(v)
			return true
		})
	case codec.TypeZSet:
		z := tx.PeekZSet(db, key, e)
		d.BeginZSet(int(e.Count))
		err = z.Members(func(m []byte, score float64) bool {
			d.ZElem(m, score)
			return true
		})
	default:
		return fmt.Errorf("upstream: cold key of unknown type %d", e.Type)
	}
	if err != nil {
		return fmt.Errorf("upstream: read cold copy: %w", err)
	}
	return nil
}
