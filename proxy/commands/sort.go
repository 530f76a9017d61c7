package commands

import (
	"bytes"
	"slices"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// SORT and SORT_RO, as Redis 7.0's sort.c: the elements of a list, set or
// sorted set, ordered by their own values or by the values a BY pattern
// names (numerically, or as strings with ALPHA), cut to a LIMIT window,
// each replaced by the values GET patterns name, then replied or (SORT
// ... STORE) stored as a list. The source, and the keys the patterns
// reach, are read hot or cold; a cold source is read without promotion,
// only the window when the order is the structure's own (BY <constant>).
// The pattern rules (sortLookup) and the number rules (sortScore) are in
// sort_pattern.go.

func registerSort(t *server.Table) {
	t.Register("sort", func(x *server.Ctx, a [][]byte) error { return cmdSort(x, a, false) })
	t.Register("sort_ro", func(x *server.Ctx, a [][]byte) error { return cmdSort(x, a, true) })
}

// errSortScore is the reply when a numeric sort meets a value that is not
// a number.
var errSortScore = resp.Err("ERR One or more scores can't be converted into double")

// sortOpts are SORT's parsed options.
type sortOpts struct {
	desc, alpha bool
	// dontsort: some BY pattern has no '*' (a constant): the elements keep
	// the structure's order, and no pattern is looked up to sort.
	dontsort bool
	by       []byte // the last BY pattern (nil: sort by the elements)
	store    []byte
	hasStore bool
	gets     [][]byte
	// limitStart, limitCount are LIMIT's arguments (0, -1 without LIMIT).
	limitStart, limitCount int64
}

// parseSortOpts parses SORT's options (args after the key) with Redis's
// errors; readonly (SORT_RO) does not know STORE, a syntax error there.
// Later options override earlier ones, except that a constant BY is kept
// as "do not sort" even when a later BY has a pattern, as Redis does.
//
// fullRead reports whether the user may read every key (BY and GET with a
// pattern reach keys the ACL check could not see; Redis refuses them
// otherwise); it is asked at most once.
func parseSortOpts(args [][]byte, readonly bool, fullRead func() bool) (*sortOpts, error) {
	o := &sortOpts{limitCount: -1}
	for j := 0; j < len(args); j++ {
		left := len(args) - j - 1
		a := args[j]
		switch {
		case cstr.EqualFold(a, "asc"):
			o.desc = false
		case cstr.EqualFold(a, "desc"):
			o.desc = true
		case cstr.EqualFold(a, "alpha"):
			o.alpha = true
		case cstr.EqualFold(a, "limit") && left >= 2:
			start, ok := cstr.ParseInt(args[j+1])
			if !ok {
				return nil, resp.Err(strops.ErrNotInteger)
			}
			count, ok := cstr.ParseInt(args[j+2])
			if !ok {
				return nil, resp.Err(strops.ErrNotInteger)
			}
			o.limitStart, o.limitCount = start, count
			j += 2
		case !readonly && cstr.EqualFold(a, "store") && left >= 1:
			o.store, o.hasStore = args[j+1], true
			j++
		case cstr.EqualFold(a, "by") && left >= 1:
			o.by = args[j+1]
			if bytes.IndexByte(cString(o.by), '*') < 0 {
				o.dontsort = true
			} else if !fullRead() {
				return nil, resp.Err("ERR BY option of SORT denied due to insufficient ACL permissions.")
			}
			j++
		case cstr.EqualFold(a, "get") && left >= 1:
			if !fullRead() {
				return nil, resp.Err("ERR GET option of SORT denied due to insufficient ACL permissions.")
			}
			o.gets = append(o.gets, args[j+1])
			j++
		default:
			return nil, resp.Err(strops.ErrSyntax)
		}
	}
	return o, nil
}

// cmdSort is SORT (readonly false) and SORT_RO key [options].
func cmdSort(x *server.Ctx, args [][]byte, readonly bool) error {
	known, full := false, false
	fullRead := func() bool {
		if !known {
			known, full = true, x.FullKeyReadAccess(args)
		}
		return full
	}
	o, err := parseSortOpts(args[2:], readonly, fullRead)
	if err != nil {
		return err
	}
	run := func(tx *tiering.Tx) error { return runSort(x, tx, args[1], o) }
	if o.hasStore {
		return x.Update(run)
	}
	return x.View(run)
}

// sortElem is one element being sorted.
type sortElem struct {
	v     []byte  // the element (a copy)
	score float64 // its numeric sort key (0 when BY's key is missing)
	cmp   []byte  // its ALPHA sort key by BY (a copy), when hasCmp
	// hasCmp: BY's value was found; elements without one sort first.
	hasCmp bool
}

// sortWindow returns the first and last positions of LIMIT start count
// over n elements, clamped as Redis does (last < first: an empty window).
func sortWindow(n, start, count int64) (int64, int64) {
	start = min(max(start, 0), n)
	count = min(max(count, -1), n)
	end := n - 1
	if count >= 0 {
		end = start + count - 1
	}
	if start >= n {
		start, end = n-1, n-2
	}
	return start, min(end, n-1)
}

// runSort is SORT within tx.
func runSort(x *server.Ctx, tx *tiering.Tx, key []byte, o *sortOpts) error {
	e, err := tx.Peek(x.DB(), key)
	if err != nil {
		return err
	}
	t := codec.TypeList // a missing key sorts as an empty list
	if e == nil {
		x.NotifyKeyMiss(key)
	} else {
		t = e.Type
	}
	if t != codec.TypeList && t != codec.TypeSet && t != codec.TypeZSet {
		return resp.ErrWrongType
	}
	dontsort, alpha, by := o.dontsort, o.alpha, o.by
	if dontsort && t == codec.TypeSet && (o.hasStore || x.InScript()) {
		// A set has no order of its own: what is stored (or what a
		// script sees) must not depend on it, so it is sorted by value.
		dontsort, alpha, by = false, true, nil
	}
	var n int64
	if e != nil {
		n = e.Count
	}
	start, end := sortWindow(n, o.limitStart, o.limitCount)
	var elems []sortElem
	if e != nil {
		ordered := dontsort && t != codec.TypeSet
		if elems, err = readSortElems(x, tx, key, e, ordered, o.desc, start, end); err != nil {
			return err
		}
		if ordered { // only the window was read
			start, end = 0, end-start
		}
	}
	if !dontsort {
		if err := sortElems(x, tx, elems, by, alpha, o); err != nil {
			return err
		}
	}
	var window []sortElem
	if end >= start {
		window = elems[start : end+1]
	}
	if !o.hasStore {
		return replySorted(x, tx, window, o.gets)
	}
	return storeSorted(x, tx, window, o)
}

// readSortElems reads the elements of e (key's list, set or sorted set):
// all of them, or, if ordered (a list or sorted set kept in its own
// order), only the window start..end, from the tail (the highest score)
// when desc.
func readSortElems(x *server.Ctx, tx *tiering.Tx, key []byte, e *tiering.Entry, ordered, desc bool, start, end int64) ([]sortElem, error) {
	n := e.Count
	if ordered {
		if end < start {
			return nil, nil
		}
		n = end - start + 1
	}
	elems := make([]sortElem, 0, n)
	add := func(v []byte) { elems = append(elems, sortElem{v: bytes.Clone(v)}) }
	var err error
	switch e.Type {
	case codec.TypeList:
		l := tx.PeekList(x.DB(), key, e)
		from, to, rev := int64(0), e.Count-1, false
		if ordered {
			from, to, rev = start, end, desc
			if desc {
				from, to = e.Count-1-end, e.Count-1-start
			}
		}
		err = l.Range(from, to, rev, func(_ int64, v []byte) bool { add(v); return true })
	case codec.TypeZSet:
		z := tx.PeekZSet(x.DB(), key, e)
		from, to, rev := int64(0), e.Count-1, false
		if ordered {
			from, to, rev = start, end, desc
		}
		err = z.RangeByRank(from, to, rev, func(m []byte, _ float64) bool { add(m); return true })
	default:
		err = tx.PeekColl(x.DB(), key, e).Each(func(m, _ []byte) bool { add(m); return true })
	}
	if err == nil && int64(len(elems)) != n {
		return nil, streamed(key, n, int64(len(elems)), nil)
	}
	return elems, err
}

// sortElems computes the elements' sort keys (their own values, or what
// by names) and sorts them, stably: elements whose keys tie keep the order
// they were read in, as glibc's qsort (a merge sort) keeps them in Redis.
// A numeric key that is not a number fails the command (errSortScore).
func sortElems(x *server.Ctx, tx *tiering.Tx, elems []sortElem, by []byte, alpha bool, o *sortOpts) error {
	bad := false
	for i := range elems {
		el := &elems[i]
		val := el.v
		if by != nil {
			v, found, err := sortLookup(x, tx, by, el.v)
			if err != nil {
				return err
			}
			if !found {
				continue
			}
			val = v
		}
		switch {
		case alpha && by != nil:
			el.cmp, el.hasCmp = bytes.Clone(val), true
		case !alpha:
			score, ok := sortScore(val)
			el.score = score
			bad = bad || !ok
		}
	}
	if bad {
		return errSortScore
	}
	cmp := sortCompare(alpha, by != nil, o.hasStore)
	if o.desc {
		slices.SortStableFunc(elems, func(a, b sortElem) int { return -cmp(&a, &b) })
	} else {
		slices.SortStableFunc(elems, func(a, b sortElem) int { return cmp(&a, &b) })
	}
	return nil
}

// sortCompare returns SORT's order (ascending): numeric by score, ties by
// the elements' bytes; ALPHA by BY's values (missing ones first) or by the
// elements. ALPHA compares as strcoll in the C locale (up to a NUL byte)
// when replying, and byte by byte when storing, as Redis does (so a stored
// result does not depend on the server's locale).
func sortCompare(alpha, byPattern, store bool) func(a, b *sortElem) int {
	text := collate
	if store {
		text = bytes.Compare
	}
	switch {
	case !alpha:
		return func(a, b *sortElem) int {
			switch {
			case a.score > b.score:
				return 1
			case a.score < b.score:
				return -1
			}
			return bytes.Compare(a.v, b.v)
		}
	case byPattern:
		return func(a, b *sortElem) int {
			switch {
			case a.hasCmp && b.hasCmp:
				return text(a.cmp, b.cmp)
			case a.hasCmp:
				return 1
			case b.hasCmp:
				return -1
			}
			return 0
		}
	default:
		return func(a, b *sortElem) int { return text(a.v, b.v) }
	}
}

// collate compares a and b as strcoll does in the C (and glibc's C.UTF-8)
// locale: as C strings, byte by byte up to a NUL.
func collate(a, b []byte) int { return bytes.Compare(cString(a), cString(b)) }

// replySorted replies the window: each element, or for each element the
// values of the GET patterns (a null for a missing one).
func replySorted(x *server.Ctx, tx *tiering.Tx, window []sortElem, gets [][]byte) error {
	x.W.Array(len(window) * max(len(gets), 1))
	for i := range window {
		el := window[i].v
		if len(gets) == 0 {
			x.W.Bulk(el)
		}
		for _, g := range gets {
			v, found, err := sortLookup(x, tx, g, el)
			if err != nil {
				return err
			}
			if found {
				x.W.Bulk(v)
			} else {
				x.W.Null()
			}
		}
	}
	return nil
}

// storeSorted is STORE: the window (or the GET values, an empty string for
// a missing one) replaces o.store as a list, and the reply is its length.
// An empty result deletes the destination. Everything is read before the
// destination is written, so it may be the source or a pattern's key.
func storeSorted(x *server.Ctx, tx *tiering.Tx, window []sortElem, o *sortOpts) error {
	var vals [][]byte
	for i := range window {
		el := window[i].v
		if len(o.gets) == 0 {
			vals = append(vals, el)
		}
		for _, g := range o.gets {
			v, _, err := sortLookup(x, tx, g, el)
			if err != nil {
				return err
			}
			vals = append(vals, bytes.Clone(v))
		}
	}
	tx.CountLookups(false) // the destination is written, not read (keyspace_hits)
	dst := o.store
	if len(vals) == 0 {
		deleted, err := tx.Delete(x.DB(), dst)
		if err != nil {
			return err
		}
		if deleted {
			x.Notify(server.NotifyGeneric, "del", dst)
		}
		x.W.Int(0)
		return nil
	}
	isNew, err := x.KeyIsNew(tx, x.DB(), dst)
	if err != nil {
		return err
	}
	if _, err := tx.Delete(x.DB(), dst); err != nil {
		return err
	}
	l, err := tx.OpenList(x.DB(), dst, true)
	if err != nil {
		return err
	}
	for _, v := range vals {
		if err := l.Push(false, v); err != nil {
			return err
		}
	}
	// Redis: "new", "sortstore", then the reply; a client blocked on dst
	// is served when the transaction commits (Close notes dst ready).
	x.NotifyNewKey(isNew, dst)
	x.Notify(server.NotifyList, "sortstore", dst)
	x.W.Int(int64(len(vals)))
	return l.Close()
}
