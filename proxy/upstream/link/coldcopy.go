package link

import (
	"fmt"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/rdb"
	"github.com/spillway/spillway/proxy/rdbfile"
	"github.com/spillway/spillway/tiering"
	"github.com/spillway/spillway/tiering/stream"
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
	if e.Type == codec.TypeStream {
		return dumpStream(tx, db, key, d)
	}
	if err := tx.WriteValue(db, key, e, d); err != nil {
		return fmt.Errorf("upstream: read cold copy: %w", err)
	}
	return nil
}

// dumpStream writes key's cold stream into d as Redis 7.0 does
// (RDB_TYPE_STREAM_LISTPACKS_2, RDB version 10: the type needs it, and only
// a Redis 7.0 or newer upstream ever had a stream demoted, see
// decodeStreamPayload), its groups, consumers and pending entries
// included. The whole stream is read: RESTORE takes it in one payload.
func dumpStream(tx *tiering.Tx, db int, key []byte, d *Dump) error {
	s, err := tx.OpenStream(db, key, false)
	if err != nil {
		return fmt.Errorf("upstream: read cold stream: %w", err)
	}
	if s == nil {
		return fmt.Errorf("upstream: cold stream %q vanished", key)
	}
	v := rdbfile.StreamValue(s.Stream)
	if err := s.Close(); err != nil {
		return fmt.Errorf("upstream: read cold stream: %w", err)
	}
	d.Version = rdb.Version
	d.Stream(v)
	return nil
}

// typeStreamListpacks2 is RDB_TYPE_STREAM_LISTPACKS_2, the first byte of a
// Redis 7.0 stream's DUMP payload.
const typeStreamListpacks2 = 19

// decodeStreamPayload turns the upstream's DUMP payload of a stream into
// the model the cold store writes (uptier.Import). It returns nil, with no
// error, for a payload of an older Redis (RDB_TYPE_STREAM_LISTPACKS, Redis
// 5 to 6.2): such an upstream would refuse the Redis 7.0 payload the
// stream is reloaded with, so the stream is left upstream.
func decodeStreamPayload(key, payload []byte) (*stream.Stream, error) {
	if len(payload) == 0 || payload[0] != typeStreamListpacks2 {
		return nil, nil
	}
	obj, err := rdb.Decode(payload)
	if err != nil {
		return nil, fmt.Errorf("upstream: DUMP of stream %q: %w", key, err)
	}
	if obj.Kind != rdb.KindStream {
		return nil, fmt.Errorf("upstream: DUMP of stream %q holds another type", key)
	}
	m, err := rdbfile.StreamModel(obj.Stream, false)
	if err != nil {
		return nil, fmt.Errorf("upstream: DUMP of stream %q: %w", key, err)
	}
	return m, nil
}
