package tiering

import (
	"slices"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/coldstore"
)

// A list's edits other than pushes and pops: LSET, LINSERT and LREM
// (Splice), LTRIM, and the deletions they share. They write through to
// the store; a list written back (writeback.go) is written first.

// Set replaces element i (0 <= i < Len) with val.
func (l *List) Set(i int64, val []byte) error {
	if err := l.beforeEdit(); err != nil {
		return err
	}
	old, err := l.Index(i)
	if err != nil {
		return err
	}
	e := l.e
	e.Bytes += int64(len(val) - len(old))
	if lc := e.list; lc != nil {
		if i < int64(lc.front.Len()) {
			lc.front.Set(int(i), string(val))
		} else if j := i - (e.Count - int64(lc.back.Len())); j >= 0 {
			lc.back.Set(int(j), string(val))
		}
	}
	l.dirty = true
	return l.tx.batch.Set(l.elemKey(i), val)
}

// Elements returns elements from..to (copies), from memory or the store.
func (l *List) Elements(from, to int64) ([]string, error) {
	out := make([]string, 0, max(to-from+1, 0))
	err := l.Range(from, to, false, func(_ int64, v []byte) bool {
		out = append(out, string(v))
		return true
	})
	return out, err
}

// Splice replaces elements i..j-1 (0 <= i <= j <= Len), whose total
// length is removedBytes, with repl. The elements on the shorter side of
// the splice are rewritten at their new indexes, so it costs the smaller
// of i and Len-j reads and writes plus len(repl) writes.
func (l *List) Splice(i, j int64, removedBytes int64, repl []string) error {
	if err := l.beforeEdit(); err != nil {
		return err
	}
	if err := l.flushPopped(); err != nil {
		return err
	}
	e := l.e
	n := e.Count
	delta := int64(len(repl)) - (j - i)
	var added int64
	for _, s := range repl {
		added += int64(len(s))
	}
	b := l.tx.batch
	if i <= n-j {
		// The head side moves: its new head is Head-delta.
		left, err := l.Elements(0, i-1)
		if err != nil {
			return err
		}
		newHead := e.Head - uint64(delta)
		put := func(k uint64, s string) error {
			l.kb = codec.AppendListKey(l.kb[:0], l.pdb, l.key, e.Version, newHead+k)
			return b.Set(l.kb, bytesOf(s))
		}
		for k, s := range left {
			if err := put(uint64(k), s); err != nil {
				return err
			}
		}
		for k, s := range repl {
			if err := put(uint64(i)+uint64(k), s); err != nil {
				return err
			}
		}
		for idx := e.Head; idx < newHead && delta < 0; idx++ {
			l.kb = codec.AppendListKey(l.kb[:0], l.pdb, l.key, e.Version, idx)
			if err := b.Delete(l.kb); err != nil {
				return err
			}
		}
		e.Head = newHead
	} else {
		// The tail side moves: its new tail is Tail+delta.
		right, err := l.Elements(j, n-1)
		if err != nil {
			return err
		}
		newTail := e.Tail + uint64(delta)
		at := e.Head + uint64(i)
		for _, part := range [][]string{repl, right} {
			for _, s := range part {
				l.kb = codec.AppendListKey(l.kb[:0], l.pdb, l.key, e.Version, at)
				if err := b.Set(l.kb, bytesOf(s)); err != nil {
					return err
				}
				at++
			}
		}
		for idx := newTail; idx < e.Tail && delta < 0; idx++ {
			l.kb = codec.AppendListKey(l.kb[:0], l.pdb, l.key, e.Version, idx)
			if err := b.Delete(l.kb); err != nil {
				return err
			}
		}
		e.Tail = newTail
	}
	if lc := e.list; lc != nil {
		if lc.whole {
			all := lc.front.Slice()
			next := append(append(append(make([]string, 0, len(all)+int(delta)), all[:i]...), repl...), all[j:]...)
			lc.front.Fill(next)
		} else {
			lc.front.Reset()
			lc.back.Reset()
			lc.widenGC(e)
		}
	}
	e.Count += delta
	e.Bytes += added - removedBytes
	l.dirty = true
	return nil
}

// Trim keeps elements from..to and deletes the rest; from > to or from >=
// Len deletes the list, in O(1). Otherwise it costs one read of each
// element removed (to keep the byte count) and a range deletion per end.
func (l *List) Trim(from, to int64) error {
	if err := l.beforeEdit(); err != nil {
		return err
	}
	if err := l.flushPopped(); err != nil {
		return err
	}
	e := l.e
	to = min(to, e.Count-1)
	if from > to {
		return l.deleteAll()
	}
	var removed int64
	sum := func(_ int64, v []byte) bool { removed += int64(len(v)); return true }
	if err := l.Range(0, from-1, false, sum); err != nil {
		return err
	}
	if err := l.Range(to+1, e.Count-1, false, sum); err != nil {
		return err
	}
	if err := l.deleteIndexes(e.Head, e.Head+uint64(from)); err != nil {
		return err
	}
	if err := l.deleteIndexes(e.Head+uint64(to)+1, e.Tail); err != nil {
		return err
	}
	if lc := e.list; lc != nil {
		dropHead, dropTail := int(from), int(e.Count-1-to)
		if lc.whole {
			for range dropHead {
				lc.front.PopFront()
			}
			for range dropTail {
				lc.front.PopBack()
			}
		} else {
			lc.trimEnds(e.Count, from, to)
		}
	}
	e.Tail = e.Head + uint64(to) + 1
	e.Head += uint64(from)
	e.Count = to - from + 1
	e.Bytes -= removed
	l.dirty = true
	return nil
}

// trimEnds keeps, of a list of n elements held by its ends, what its
// windows hold of elements from..to: a window keeps its part of the range
// if it still touches its end of the list, and if together they now hold
// the whole range the list is held whole.
func (lc *listCache) trimEnds(n, from, to int64) {
	f, b := int64(lc.front.Len()), int64(lc.back.Len())
	front, back := lc.front.Slice(), lc.back.Slice()
	var nf, nb []string
	if from < f {
		nf = front[from:min(f, to+1)]
	}
	if backStart := n - b; to >= backStart {
		nb = back[max(0, from-backStart) : to+1-backStart]
	}
	if int64(len(nf)+len(nb)) == to-from+1 {
		// The windows (disjoint) now meet: they hold the whole list.
		lc.whole = true
		lc.front.Fill(append(slices.Clone(nf), nb...))
		lc.back.Reset()
		return
	}
	lc.front.Fill(nf)
	lc.back.Fill(nb)
}

// deleteIndexes deletes the element records at absolute indexes lo..hi-1:
// point deletes for a few, one range deletion for many.
func (l *List) deleteIndexes(lo, hi uint64) error {
	var err error
	l.kb, err = deleteListElems(l.tx.batch, l.kb, l.pdb, l.key, l.e.Version, lo, hi)
	return err
}

// deleteListElems deletes the element records at absolute indexes
// lo..hi-1 of (pdb, key, version) in b: point deletes for a few, one
// range deletion for many. kb is a scratch buffer returned for reuse.
func deleteListElems(b *coldstore.Batch, kb []byte, pdb uint8, key []byte, version, lo, hi uint64) ([]byte, error) {
	if lo >= hi {
		return kb, nil
	}
	if hi-lo > 64 {
		a := codec.AppendListKey(nil, pdb, key, version, lo)
		z := codec.AppendListKey(nil, pdb, key, version, hi)
		return kb, b.DeleteRange(a, z)
	}
	for idx := lo; idx < hi; idx++ {
		kb = codec.AppendListKey(kb[:0], pdb, key, version, idx)
		if err := b.Delete(kb); err != nil {
			return kb, err
		}
	}
	return kb, nil
}

// deleteAll deletes the list in O(1): its records are reclaimed in the
// background.
func (l *List) deleteAll() error {
	if l.created {
		l.e.Count, l.e.Bytes = 0, 0
		return nil
	}
	l.tx.hk = append(l.tx.hk[:0], l.hk...)
	if err := l.tx.remove(l.pdb, l.key, l.e); err != nil {
		return err
	}
	l.dirty = false
	l.e.Count, l.e.Bytes = 0, 0
	return nil
}
