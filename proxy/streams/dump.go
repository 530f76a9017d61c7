package streams

import (
	"github.com/spillway/spillway/proxy/rdb"
	"github.com/spillway/spillway/proxy/rdbfile"
	"github.com/spillway/spillway/tiering"
)

// DUMP and RESTORE of streams (proxy/commands' DUMP, RESTORE and MIGRATE
// call these for stream values).

// Dump writes key's stream (database db) to d as a Redis 7.0 payload
// (RDB_TYPE_STREAM_LISTPACKS_2): its nodes with their live entries, its
// meta fields, groups, consumers and pending entries.
func Dump(tx *tiering.Tx, db int, key []byte, d *rdb.Dump) error {
	s, err := tx.OpenStream(db, key, false)
	if err != nil || s == nil {
		return err
	}
	v := rdbfile.StreamValue(s.Stream)
	if err := s.Close(); err != nil {
		return err
	}
	d.Stream(v)
	return nil
}

// Restore stores v as key (database db), which must not exist: RESTORE's
// part for a stream (the caller sets the expiry). v is validated
// (rdb.DecodeValue), so its model is built as an RDB file's is.
func Restore(tx *tiering.Tx, db int, key []byte, v *rdb.Stream) error {
	m, err := rdbfile.StreamModel(v, false)
	if err != nil {
		return err
	}
	s, err := tx.OpenStream(db, key, true)
	if err != nil {
		return err
	}
	s.Replace(m)
	return s.Close()
}
