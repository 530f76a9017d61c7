package tiering

import (
	"fmt"

	"github.com/spillway/spillway/codec"
)

// ValueWriter receives a key's value in the shape of RDB's plain forms: a
// string, or a collection's element count followed by its elements. The
// DUMP payload encoder (proxy/rdb.Dump) is one.
type ValueWriter interface {
	String(v []byte)
	BeginList(n int)
	BeginSet(n int)
	BeginHash(n int)
	BeginZSet(n int)
	Elem(e []byte)
	Pair(field, value []byte)
	ZElem(member []byte, score float64)
}

// WriteValue writes e, key's live entry in db (as Get or Peek returned
// it), to w: hash fields and set members in stored order, a list from head
// to tail, a sorted set by rank. A cold structure is read from the store
// as it is written, never promoted. An element count that disagrees with
// the elements stored is ErrCorrupt (a payload built from it would be
// refused by every RESTORE).
func (tx *Tx) WriteValue(db int, key []byte, e *Entry, w ValueWriter) error {
	var got int64
	var err error
	switch e.Type {
	case codec.TypeString:
		w.String(e.Str)
		return nil
	case codec.TypeHash, codec.TypeSet:
		hash := e.Type == codec.TypeHash
		if hash {
			w.BeginHash(int(e.Count))
		} else {
			w.BeginSet(int(e.Count))
		}
		err = tx.PeekColl(db, key, e).Each(func(f, v []byte) bool {
			if got++; got > e.Count {
				return false
			}
			if hash {
				w.Pair(f, v)
			} else {
				w.Elem(f)
			}
			return true
		})
	case codec.TypeList:
		w.BeginList(int(e.Count))
		err = tx.PeekList(db, key, e).Range(0, e.Count-1, false, func(_ int64, v []byte) bool {
			if got++; got > e.Count {
				return false
			}
			w.Elem(v)
			return true
		})
	case codec.TypeZSet:
		w.BeginZSet(int(e.Count))
		err = tx.PeekZSet(db, key, e).Members(func(m []byte, score float64) bool {
			if got++; got > e.Count {
				return false
			}
			w.ZElem(m, score)
			return true
		})
	default:
		return fmt.Errorf("%w: %q has unknown type %d", ErrCorrupt, key, e.Type)
	}
	if err == nil && got != e.Count {
		err = fmt.Errorf("%w: %q counts %d elements, %d stored", ErrCorrupt, key, e.Count, got)
	}
	return err
}
