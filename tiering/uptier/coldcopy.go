package uptier

import (
	"fmt"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/tiering"
	"github.com/spillway/spillway/tiering/stream"
)

// The cold store in upstream mode is the tiering engine with no hot tier:
// every key it holds is a cold copy, written per field as in embedded mode
// and read by the same code. This file writes demoted values into it,
// drops cold copies and weighs them for the promotion policy; building a
// RESTORE payload from a cold copy is proxy/upstream/link's (DumpKey).

// ColdSize returns the size the promotion policy weighs a cold key by
// and whether the store holds a live cold copy of it.
//
// A copy found expired is deleted (the transaction commits it), so that
// the key stops being counted as soon as a client has found it gone.
func ColdSize(eng *tiering.Engine, db int, key []byte) (int64, bool, error) {
	var e *tiering.Entry
	_, err := eng.Update(func(tx *tiering.Tx) error {
		var err error
		e, err = tx.Peek(db, key)
		return err
	})
	if err != nil {
		return 0, false, err
	}
	if e == nil {
		return 0, false, nil
	}
	if e.Type == codec.TypeString {
		return int64(len(e.Str)), true, nil
	}
	return e.Bytes, true, nil
}

// DropKey deletes key's cold copy (O(1): the store reclaims its records in
// the background).
func DropKey(eng *tiering.Engine, db int, key []byte) error {
	_, err := eng.Update(func(tx *tiering.Tx) error {
		if _, err := tx.Delete(db, key); err != nil {
			return fmt.Errorf("upstream: drop cold copy: %w", err)
		}
		return nil
	})
	return err
}

// Value is one key's value as read from the upstream for demotion.
type Value struct {
	Key      []byte
	Type     codec.Type
	ExpireAt int64 // unix ms, 0 for none
	Str      []byte
	// Elems holds list elements or set members in order; Pairs hash
	// fields and values alternately; Members and Scores a sorted set.
	Elems   [][]byte
	Members [][]byte
	Scores  []float64
	// Skiplist says the upstream held a sorted set in its skiplist
	// encoding (OBJECT ENCODING), the one that keeps -0 scores.
	Skiplist bool
	// Stream is a stream whole (entries, Redis's nodes, meta fields,
	// groups, consumers, pending entries), as decoded from the upstream's
	// DUMP payload; Import writes its records.
	Stream *stream.Stream
}

// Import writes values as cold copies in one store transaction, replacing
// whatever the store held under their keys. The caller syncs the store
// before removing them upstream.
func Import(eng *tiering.Engine, db int, vals []*Value) error {
	_, err := eng.Update(func(tx *tiering.Tx) error {
		for _, v := range vals {
			if err := importOne(tx, db, v); err != nil {
				return fmt.Errorf("upstream: import %q: %w", v.Key, err)
			}
		}
		return nil
	})
	return err
}

func importOne(tx *tiering.Tx, db int, v *Value) error {
	switch v.Type {
	case codec.TypeString:
		return tx.SetString(db, v.Key, v.Str, v.ExpireAt)
	case codec.TypeHash, codec.TypeSet:
		c, err := tx.CreateColl(db, v.Key, v.Type)
		if err != nil {
			return err
		}
		if v.Type == codec.TypeHash {
			for i := 0; i+1 < len(v.Elems); i += 2 {
				if _, err := c.Set(v.Elems[i], v.Elems[i+1]); err != nil {
					return err
				}
			}
		} else {
			for _, m := range v.Elems {
				if _, err := c.Set(m, nil); err != nil {
					return err
				}
			}
		}
		if err := c.Close(); err != nil {
			return err
		}
	case codec.TypeList:
		if _, err := tx.Delete(db, v.Key); err != nil {
			return err
		}
		l, err := tx.OpenList(db, v.Key, true)
		if err != nil {
			return err
		}
		for _, el := range v.Elems {
			if err := l.Push(false, el); err != nil {
				return err
			}
		}
		if err := l.Close(); err != nil {
			return err
		}
	case codec.TypeZSet:
		z, err := tx.CreateZSet(db, v.Key)
		if err != nil {
			return err
		}
		// Before any member is added: a compact set normalizes -0 to 0.
		z.SetSkiplist(zsetSkiplist(v))
		for i, m := range v.Members {
			if _, err := z.Add(m, v.Scores[i]); err != nil {
				return err
			}
		}
		if err := z.Close(); err != nil {
			return err
		}
	case codec.TypeStream:
		if v.Stream == nil {
			return fmt.Errorf("stream without a model")
		}
		if _, err := tx.Delete(db, v.Key); err != nil {
			return err
		}
		s, err := tx.OpenStream(db, v.Key, true)
		if err != nil {
			return err
		}
		s.Replace(v.Stream)
		if err := s.Close(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("type %d cannot be demoted", v.Type)
	}
	if v.ExpireAt != 0 && v.Type != codec.TypeString {
		if _, err := tx.SetExpire(db, v.Key, v.ExpireAt); err != nil {
			return err
		}
	}
	return nil
}

// zsetSkiplist reports whether v needs the skiplist encoding: the
// upstream said so, or it is too big for Redis's compact one.
func zsetSkiplist(v *Value) bool {
	if v.Skiplist || len(v.Members) > tiering.CompactZSetMembers {
		return true
	}
	for _, m := range v.Members {
		if len(m) > tiering.CompactZSetMember {
			return true
		}
	}
	return false
}
