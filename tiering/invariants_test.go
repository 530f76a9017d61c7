package tiering

import (
	"bytes"
	"fmt"
	"math"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/coldstore"
	"github.com/spillway/spillway/tiering/deque"
)

// checkInvariants verifies, under the engine's lock, what must hold between
// transactions:
//   - per physical database, the key and expiry counters equal what the
//     meta records on disk say;
//   - every meta record with an expiry has its expiry index entry;
//   - every hot entry mirrors its meta record exactly (one authority).
func (v *env) checkInvariants() {
	v.t.Helper()
	tx := v.e.begin()
	defer tx.abort()
	e := v.e
	e.counted()
	var keys, exps [256]int64
	withExpiry := map[string]bool{}
	metas := map[string]codec.Meta{}
	it, err := v.s.NewIter([]byte{codec.NSMeta}, []byte{codec.NSMeta + 1})
	if err != nil {
		v.t.Fatal(err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		db, key, err := codec.ParseMetaKey(it.Key())
		if err != nil {
			v.t.Fatal(err)
		}
		var m codec.Meta
		if err := codec.DecodeMeta(bytes.Clone(it.Value()), &m); err != nil {
			v.t.Fatal(err)
		}
		keys[db]++
		if m.ExpireAt != 0 {
			exps[db]++
			withExpiry[fmt.Sprintf("%d/%d/%s", m.ExpireAt, db, key)] = true
		}
		metas[string(hotKey(nil, db, key))] = m
	}
	it.Close()
	for hk, m := range metas {
		if m.Type == codec.TypeString {
			continue
		}
		if m.Type == codec.TypeList {
			v.listOf(hk, &m) // checks the records
			continue
		}
		disk := v.fieldsOf(hk[0], []byte(hk[1:]), m.Version)
		var size int64
		for f, val := range disk {
			size += int64(len(f) + len(val))
		}
		if int64(len(disk)) != int64(m.Count) || size != int64(m.Bytes) || m.Count == 0 {
			v.t.Fatalf("structure %q: meta counts %d fields %d bytes, disk has %d and %d", hk, m.Count, m.Bytes, len(disk), size)
		}
		if m.Type == codec.TypeZSet {
			v.zsetOf(hk[0], []byte(hk[1:]), &m) // checks the score index
		}
	}
	for db := 0; db < 256; db++ {
		if e.keys[db] != keys[db] || e.exps[db] != exps[db] {
			v.t.Fatalf("physical db %d: counters keys %d expires %d, disk has %d and %d", db, e.keys[db], e.exps[db], keys[db], exps[db])
		}
	}
	for _, x := range v.expiryIndex() {
		delete(withExpiry, x)
	}
	for x := range withExpiry {
		v.t.Fatalf("meta with expiry %s has no index entry", x)
	}
	var hotPerDB [256]int64
	for hk := range e.hot.m {
		hotPerDB[hk[0]]++
	}
	for db := range 256 {
		if hotPerDB[db] != e.hot.LenDB(uint8(db)) || hotPerDB[db] > keys[db] {
			v.t.Fatalf("physical db %d: hot counter %d, hot tier holds %d keys of %d stored", db, e.hot.LenDB(uint8(db)), hotPerDB[db], keys[db])
		}
	}
	var used int64
	for hk, he := range e.hot.m {
		m, ok := metas[hk]
		if !ok {
			v.t.Fatalf("hot key %q has no meta record", hk)
		}
		// A dirty string's record lags its value (writeback.go): only the
		// log has the value.
		if he.Type != m.Type || he.ExpireAt != m.ExpireAt || (m.Type == codec.TypeString && he.dirtyAt == 0 && !bytes.Equal(he.Str, m.Value)) {
			v.t.Fatalf("hot key %q = %v/%d/%q, disk has %v/%d/%q", hk, he.Type, he.ExpireAt, he.Str, m.Type, m.ExpireAt, m.Value)
		}
		if m.Type == codec.TypeList {
			v.checkHotList(hk, he, &m)
		} else if m.Type == codec.TypeZSet {
			v.checkHotZSet(hk, he, &m)
		} else if m.Type != codec.TypeString && he.loading != nil {
			// A stepwise promotion: the partial copy holds exactly the
			// stored fields up to its cursor.
			for f, val := range v.fieldsOf(hk[0], []byte(hk[1:]), m.Version) {
				got, ok := he.fields.get([]byte(f))
				if he.loading.covers([]byte(f)) != ok || (ok && got != val) {
					v.t.Fatalf("partial structure %q field %q = %q/%v, disk %q, covered %v", hk, f, got, ok, val, he.loading.covers([]byte(f)))
				}
			}
		} else if m.Type != codec.TypeString {
			if he.Version != m.Version || he.Count != int64(m.Count) || he.Bytes != int64(m.Bytes) || !he.resident() {
				v.t.Fatalf("hot structure %q = v%d n%d b%d resident %v, meta has v%d n%d b%d", hk, he.Version, he.Count, he.Bytes, he.resident(), m.Version, m.Count, m.Bytes)
			}
			disk := v.fieldsOf(hk[0], []byte(hk[1:]), m.Version)
			if len(disk) != he.fields.len() {
				v.t.Fatalf("hot structure %q holds %d fields, disk %d", hk, he.fields.len(), len(disk))
			}
			for f, val := range disk {
				if got, ok := he.fields.get([]byte(f)); !ok || got != val {
					v.t.Fatalf("hot structure %q field %q = %q/%v, disk %q", hk, f, got, ok, val)
				}
			}
		}
		used += he.size
	}
	if used != e.hot.used {
		v.t.Fatalf("hot tier accounts %d bytes, entries sum to %d", e.hot.used, used)
	}
	var weight int64
	for _, d := range e.hot.dirty {
		weight += dirtyWeight(d)
	}
	if weight != e.hot.dirtyBytes {
		v.t.Fatalf("the dirty set counts %d bytes, its %d entries weigh %d", e.hot.dirtyBytes, len(e.hot.dirty), weight)
	}
	if e.hot.used > e.hot.budget {
		v.t.Fatalf("hot tier %d bytes over budget %d", e.hot.used, e.hot.budget)
	}
}

// rawHash is a hash written straight into the cold store.
type rawHash struct {
	db       uint8
	key      string
	version  uint64
	fields   int
	expireAt int64
	noIndex  bool // leave the expiry out of the index
}

// writeRaw writes collections straight into the store while the engine is
// closed (so that the start-up scan counts them), then reopens it.
func (v *env) writeRaw(hashes ...rawHash) {
	v.t.Helper()
	v.close()
	s, err := coldstore.Open(coldstore.Options{Dir: v.dir, Logger: quietLogger})
	if err != nil {
		v.t.Fatal(err)
	}
	b := s.NewBatch()
	for _, h := range hashes {
		k := []byte(h.key)
		m := codec.Meta{Type: codec.TypeHash, ExpireAt: h.expireAt, Version: h.version, Count: uint64(h.fields)}
		for i := 0; i < h.fields; i++ {
			m.Bytes += uint64(len(fmt.Sprint("f", i)) + len("val"))
		}
		if err := b.PutMeta(h.db, k, &m); err != nil {
			v.t.Fatal(err)
		}
		if h.expireAt != 0 && !h.noIndex {
			if err := b.PutExpiry(h.expireAt, h.db, k); err != nil {
				v.t.Fatal(err)
			}
		}
		for i := 0; i < h.fields; i++ {
			if err := b.Set(codec.AppendFieldKey(nil, h.db, k, h.version, []byte(fmt.Sprint("f", i))), []byte("val")); err != nil {
				v.t.Fatal(err)
			}
		}
	}
	if p, err := b.Commit(); err != nil || p.Wait() != nil {
		v.t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		v.t.Fatal(err)
	}
	v.open()
}

// dataRecords counts the data records stored for (db, key), any version.
func (v *env) dataRecords(db uint8, key string) int {
	v.t.Helper()
	lo := codec.AppendDataPrefix(nil, db, []byte(key), 0)[:2+4+len(key)]
	it, err := v.s.NewIter(lo, codec.PrefixEnd(lo))
	if err != nil {
		v.t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		n++
	}
	return n
}

// fieldsOf reads the field records of one version of a structure.
func (v *env) fieldsOf(db uint8, key []byte, version uint64) map[string]string {
	v.t.Helper()
	lo := codec.AppendFieldPrefix(nil, db, key, version)
	it, err := v.s.NewIter(lo, codec.PrefixEnd(lo))
	if err != nil {
		v.t.Fatal(err)
	}
	defer it.Close()
	out := map[string]string{}
	for valid := it.First(); valid; valid = it.Next() {
		_, f, err := codec.ParseFieldRest(it.Key()[len(lo):])
		if err != nil {
			v.t.Fatal(err)
		}
		out[string(f)] = string(it.Value())
	}
	return out
}

// listGarbage is where the store may hold records of list hk outside
// Head..Tail: within the garbage spans of a hot list held by its ends
// (listCache.gc), anywhere once v.listLeaks, nowhere otherwise.
func (v *env) listGarbage(hk string, m *codec.Meta) [2]uint64 {
	if v.listLeaks {
		return [2]uint64{0, math.MaxUint64}
	}
	if he, ok := v.e.hot.m[hk]; ok && he.Version == m.Version && he.list != nil && !he.list.whole {
		return he.list.gc
	}
	return [2]uint64{m.Head, m.Tail}
}

// eachListRecord calls fn with the index and value of every stored element
// record of one version of list key (physical database db), in order.
func (v *env) eachListRecord(db uint8, key []byte, version uint64, fn func(idx uint64, val []byte)) {
	v.t.Helper()
	lo := codec.AppendListPrefix(nil, db, key, version)
	it, err := v.s.NewIter(lo, codec.PrefixEnd(lo))
	if err != nil {
		v.t.Fatal(err)
	}
	defer it.Close()
	for valid := it.First(); valid; valid = it.Next() {
		idx, err := codec.ParseListRest(it.Key()[len(lo):])
		if err != nil {
			v.t.Fatal(err)
		}
		fn(idx, it.Value())
	}
}

// listOf reads list hk's element records and checks them against its meta
// record: exactly one record at each index Head..Tail-1 and Bytes their
// total length, and no others but in its garbage spans (listGarbage).
func (v *env) listOf(hk string, m *codec.Meta) []string {
	v.t.Helper()
	db, key := hk[0], []byte(hk[1:])
	gc := v.listGarbage(hk, m)
	var out []string
	var size uint64
	next := m.Head
	v.eachListRecord(db, key, m.Version, func(idx uint64, val []byte) {
		if idx < m.Head && idx >= gc[0] || idx >= m.Tail && idx < gc[1] {
			return // a popped element's, not deleted yet
		}
		if idx != next {
			v.t.Fatalf("list %q: record at index %d, expected %d (head %d tail %d)", key, idx, next, m.Head, m.Tail)
		}
		next++
		out = append(out, string(val))
		size += uint64(len(val))
	})
	if next != m.Tail || uint64(len(out)) != m.Count || size != m.Bytes || m.Count == 0 {
		v.t.Fatalf("list %q: meta counts %d elements %d bytes (head %d tail %d), disk has %d and %d", key, m.Count, m.Bytes, m.Head, m.Tail, len(out), size)
	}
	return out
}

// checkHotList checks a hot list against its meta record and records: the
// whole list, or windows that hold its ends and do not meet.
func (v *env) checkHotList(hk string, he *Entry, m *codec.Meta) {
	v.t.Helper()
	if he.dirtyAt != 0 {
		v.checkDirtyList(hk, he, m)
		return
	}
	if he.Version != m.Version || he.Count != int64(m.Count) || he.Bytes != int64(m.Bytes) || he.Head != m.Head || he.Tail != m.Tail || he.list == nil {
		v.t.Fatalf("hot list %q = v%d n%d b%d h%d t%d cached %v, meta has v%d n%d b%d h%d t%d", hk, he.Version, he.Count, he.Bytes, he.Head, he.Tail, he.list != nil, m.Version, m.Count, m.Bytes, m.Head, m.Tail)
	}
	disk := v.listOf(hk, m)
	lc := he.list
	front, back := lc.front.Slice(), lc.back.Slice()
	if lc.whole {
		if len(back) != 0 || fmt.Sprint(front) != fmt.Sprint(disk) {
			v.t.Fatalf("whole hot list %q = %q + %q, disk %q", hk, front, back, disk)
		}
		return
	}
	if len(front)+len(back) >= len(disk) {
		v.t.Fatalf("hot list %q: windows of %d and %d elements meet in a list of %d", hk, len(front), len(back), len(disk))
	}
	if fmt.Sprint(front) != fmt.Sprint(disk[:len(front)]) || fmt.Sprint(back) != fmt.Sprint(disk[len(disk)-len(back):]) {
		v.t.Fatalf("hot list %q windows %q / %q, disk %q", hk, front, back, disk)
	}
	if lc.front.Len() > listWindowElems || lc.back.Len() > listWindowElems {
		v.t.Fatalf("hot list %q: windows of %d and %d elements exceed %d", hk, lc.front.Len(), lc.back.Len(), listWindowElems)
	}
	for _, w := range []*deque.Deque{&lc.front, &lc.back} {
		if w.Len() > 1 && w.Bytes() > listWindowBytes {
			v.t.Fatalf("hot list %q: a window of %d elements holds %d bytes, over %d", hk, w.Len(), w.Bytes(), listWindowBytes)
		}
	}
}

// checkDirtyList checks a written-back list (writeback.go): the store
// holds its records as they were when it became dirty (lc.stored), and
// the elements at the indexes lc.kept are still the stored ones.
func (v *env) checkDirtyList(hk string, he *Entry, m *codec.Meta) {
	v.t.Helper()
	lc := he.list
	if lc == nil || !lc.whole || he.Version != m.Version || m.Head != lc.stored[0] || m.Tail != lc.stored[1] ||
		int64(lc.front.Len()) != he.Count || lc.front.Bytes() != he.Bytes || uint64(he.Count) != he.Tail-he.Head {
		v.t.Fatalf("dirty list %q: v%d h%d t%d n%d, meta v%d h%d t%d, stored %v", hk, he.Version, he.Head, he.Tail, he.Count, m.Version, m.Head, m.Tail, lc.stored)
	}
	disk := v.listOf(hk, m)
	for idx := lc.kept[0]; idx < lc.kept[1]; idx++ {
		if idx < he.Head || idx >= he.Tail || idx < m.Head || idx >= m.Tail {
			v.t.Fatalf("dirty list %q: kept index %d outside h%d t%d and stored %v", hk, idx, he.Head, he.Tail, lc.stored)
		}
		if got, want := lc.front.At(int(idx-he.Head)), disk[idx-m.Head]; got != want {
			v.t.Fatalf("dirty list %q: kept index %d holds %q, the store %q", hk, idx, got, want)
		}
	}
}

// zsetOf reads a sorted set's score index in order and checks it against
// its member records: the same members, each with the same score.
func (v *env) zsetOf(db uint8, key []byte, m *codec.Meta) []Member {
	v.t.Helper()
	members := v.fieldsOf(db, key, m.Version)
	lo := codec.AppendScorePrefix(nil, db, key, m.Version)
	it, err := v.s.NewIter(lo, codec.PrefixEnd(lo))
	if err != nil {
		v.t.Fatal(err)
	}
	defer it.Close()
	var out []Member
	for valid := it.First(); valid; valid = it.Next() {
		score, member, err := codec.ParseScoreRest(it.Key()[len(lo):])
		if err != nil {
			v.t.Fatal(err)
		}
		rec, ok := members[string(member)]
		if !ok {
			v.t.Fatalf("zset %q: index has %q (%v), no member record", key, member, score)
		}
		if len(it.Value()) > 0 {
			if score != 0 || string(it.Value()) != string(codec.NegZeroMark) {
				v.t.Fatalf("zset %q: index record of %q (%v) has value %q", key, member, score, it.Value())
			}
			score = math.Copysign(0, -1)
		}
		s, err := codec.ParseMemberScore([]byte(rec))
		if err != nil || math.Float64bits(s) != math.Float64bits(score) {
			v.t.Fatalf("zset %q: member %q scores %v in its record (%v), %v in the index", key, member, s, err, score)
		}
		out = append(out, Member{Member: string(member), Score: score})
	}
	if len(out) != len(members) || uint64(len(out)) != m.Count {
		v.t.Fatalf("zset %q: %d index records, %d member records, meta counts %d", key, len(out), len(members), m.Count)
	}
	return out
}

// checkHotZSet checks a hot sorted set against its meta record and the
// store: the same members in the same order, with the same scores.
func (v *env) checkHotZSet(hk string, he *Entry, m *codec.Meta) {
	v.t.Helper()
	if he.ZSkip != (m.Flags&codec.ZSetSkiplist != 0) {
		v.t.Fatalf("hot zset %q: skiplist flag %v, meta flags %#x", hk, he.ZSkip, m.Flags)
	}
	if he.Version != m.Version || he.Count != int64(m.Count) || he.Bytes != int64(m.Bytes) || he.zset == nil {
		v.t.Fatalf("hot zset %q = v%d n%d b%d in memory %v, meta has v%d n%d b%d", hk, he.Version, he.Count, he.Bytes, he.zset != nil, m.Version, m.Count, m.Bytes)
	}
	disk := v.zsetOf(hk[0], []byte(hk[1:]), m)
	var mem []Member
	for n := he.zset.zsl.first(); n != nil; n = n.next() {
		mem = append(mem, Member{Member: n.member, Score: n.score})
		if s, ok := he.zset.dict[n.member]; !ok || s != n.score {
			v.t.Fatalf("hot zset %q: skiplist has %q at %v, map %v/%v", hk, n.member, n.score, s, ok)
		}
	}
	if len(he.zset.dict) != len(mem) || fmt.Sprint(mem) != fmt.Sprint(disk) {
		v.t.Fatalf("hot zset %q = %v (map of %d), disk %v", hk, mem, len(he.zset.dict), disk)
	}
}
