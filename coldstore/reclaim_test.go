package coldstore

import (
	"fmt"
	"sort"
	"testing"

	"github.com/spillway/spillway/codec"
)

// writeVersion writes n data records of (db, key, version): fields, plus list
// elements and score-index entries when n allows, so every tag is covered.
func writeVersion(t *testing.T, b *Batch, db uint8, key string, version uint64, n int) {
	t.Helper()
	k := []byte(key)
	for i := 0; i < n; i++ {
		var rec []byte
		switch i % 3 {
		case 0:
			rec = codec.AppendFieldKey(nil, db, k, version, []byte(fmt.Sprintf("f%d", i)))
		case 1:
			rec = codec.AppendListKey(nil, db, k, version, codec.ListStartIndex+uint64(i))
		case 2:
			var err error
			rec, err = codec.AppendScoreKey(nil, db, k, version, float64(i)-1.5, []byte(fmt.Sprintf("m%d", i)))
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Set(rec, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
}

// dataCounts counts the data records of every (db, key, version) stored.
func dataCounts(t *testing.T, s *Store) map[string]int {
	t.Helper()
	it, err := s.NewIter([]byte{codec.NSData}, []byte{codec.NSData + 1})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	got := map[string]int{}
	for valid := it.First(); valid; valid = it.Next() {
		db, key, version, _, _, err := codec.ParseDataKey(it.Key())
		if err != nil {
			t.Fatalf("data key %x: %v", it.Key(), err)
		}
		got[fmt.Sprintf("%d/%s/%d", db, key, version)]++
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	return got
}

func garbageCount(t *testing.T, s *Store) int {
	t.Helper()
	it, err := s.NewIter(codec.GarbageStart(), codec.PrefixEnd(codec.GarbageStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		n++
	}
	return n
}

func TestReclaimDeletesExactlyDroppedVersions(t *testing.T) {
	tests := []struct {
		name  string
		count int // records of the dropped version (and its recorded count)
	}{
		{"point deletes, one record", 1},
		{"point deletes, small", 10},
		{"point deletes, at threshold", smallVersion},
		{"delete range, just over threshold", smallVersion + 1},
		{"delete range, large", 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStore(t, t.TempDir(), FsyncNo)
			defer closeStore(t, s)
			b := s.NewBatch()
			// The dropped version, and live neighbours that share as much of
			// its prefix as possible: same key other version, same version
			// other key (a prefix and an extension of it), other database.
			writeVersion(t, b, 1, "k", 7, tt.count)
			writeVersion(t, b, 1, "k", 8, 5)
			writeVersion(t, b, 1, "k", 6, 5)
			writeVersion(t, b, 1, "kk", 7, 5)
			writeVersion(t, b, 1, "", 7, 2)
			writeVersion(t, b, 0, "k", 7, 5)
			writeVersion(t, b, 2, "k", 7, 5)
			live := codec.AppendMetaKey(nil, 1, []byte("k"))
			if err := b.PutMeta(1, []byte("k"), &codec.Meta{Type: codec.TypeHash, Version: 8, Count: 5}); err != nil {
				t.Fatal(err)
			}
			commit(t, b)
			if err := b.DropVersion(1, []byte("k"), 7, uint64(tt.count)); err != nil {
				t.Fatal(err)
			}
			commit(t, b)
			if garbageCount(t, s) != 1 {
				t.Fatalf("garbage records = %d, want 1", garbageCount(t, s))
			}
			n, err := s.Reclaim(10)
			if err != nil || n != 1 {
				t.Fatalf("Reclaim = %d, %v; want 1", n, err)
			}
			want := map[string]int{"1/k/8": 5, "1/k/6": 5, "1/kk/7": 5, "1//7": 2, "0/k/7": 5, "2/k/7": 5}
			got := dataCounts(t, s)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("data records after reclaim = %v, want %v", got, want)
			}
			if g := garbageCount(t, s); g != 0 {
				t.Fatalf("garbage records after reclaim = %d, want 0", g)
			}
			if _, found, _ := s.Get(live, nil); !found {
				t.Fatal("Reclaim touched the live meta record")
			}
			if n, err := s.Reclaim(10); err != nil || n != 0 {
				t.Fatalf("second Reclaim = %d, %v; want 0", n, err)
			}
		})
	}
}

// The recorded count only picks the deletion method: a wrong count must still
// reclaim every record of the version and nothing else.
func TestReclaimCountMismatch(t *testing.T) {
	for _, tt := range []struct{ recorded, actual int }{{2, 100}, {1000, 3}, {0, 4}} {
		t.Run(fmt.Sprintf("recorded%d_actual%d", tt.recorded, tt.actual), func(t *testing.T) {
			s := openStore(t, t.TempDir(), FsyncNo)
			defer closeStore(t, s)
			b := s.NewBatch()
			writeVersion(t, b, 0, "k", 3, tt.actual)
			writeVersion(t, b, 0, "k", 4, 3)
			if err := b.DropVersion(0, []byte("k"), 3, uint64(tt.recorded)); err != nil {
				t.Fatal(err)
			}
			commit(t, b)
			if _, err := s.Reclaim(1); err != nil {
				t.Fatal(err)
			}
			if got := dataCounts(t, s); fmt.Sprint(got) != fmt.Sprint(map[string]int{"0/k/4": 3}) {
				t.Fatalf("data records = %v", got)
			}
		})
	}
}

func TestReclaimLimitAndOrder(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncNo)
	defer closeStore(t, s)
	b := s.NewBatch()
	for v := uint64(1); v <= 5; v++ {
		writeVersion(t, b, 0, "k", v, 3)
		if err := b.DropVersion(0, []byte("k"), v, 3); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, b)
	steps := []struct {
		limit, want int
		left        []string
	}{
		{2, 2, []string{"0/k/3", "0/k/4", "0/k/5"}},
		{1, 1, []string{"0/k/4", "0/k/5"}},
		{10, 2, nil},
		{10, 0, nil},
	}
	for i, st := range steps {
		n, err := s.Reclaim(st.limit)
		if err != nil || n != st.want {
			t.Fatalf("step %d: Reclaim(%d) = %d, %v; want %d", i, st.limit, n, err, st.want)
		}
		var left []string
		for k := range dataCounts(t, s) {
			left = append(left, k)
		}
		sort.Strings(left)
		if fmt.Sprint(left) != fmt.Sprint(st.left) {
			t.Fatalf("step %d: versions left %v, want %v (oldest garbage first)", i, left, st.left)
		}
	}
}

// Garbage recorded in an aborted batch is not recorded at all.
func TestDropVersionAborted(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncNo)
	defer closeStore(t, s)
	b := s.NewBatch()
	writeVersion(t, b, 0, "k", 1, 3)
	commit(t, b)
	if err := b.DropVersion(0, []byte("k"), 1, 3); err != nil {
		t.Fatal(err)
	}
	b.Abort()
	if n, err := s.Reclaim(10); err != nil || n != 0 {
		t.Fatalf("Reclaim = %d, %v; want 0", n, err)
	}
	if got := dataCounts(t, s); got["0/k/1"] != 3 {
		t.Fatalf("aborted drop reclaimed data: %v", got)
	}
}

// Garbage recorded before a restart is reclaimed after it, and new garbage
// never overwrites a record still waiting.
func TestGarbageSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, FsyncNo)
	b := s.NewBatch()
	for v := uint64(1); v <= 3; v++ {
		writeVersion(t, b, 0, "k", v, 2)
		if err := b.DropVersion(0, []byte("k"), v, 2); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, b)
	if n, err := s.Reclaim(1); err != nil || n != 1 {
		t.Fatalf("Reclaim = %d, %v", n, err)
	}
	closeStore(t, s)

	s = openStore(t, dir, FsyncNo)
	defer closeStore(t, s)
	b = s.NewBatch()
	writeVersion(t, b, 0, "k", 9, 2)
	if err := b.DropVersion(0, []byte("k"), 9, 2); err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	if g := garbageCount(t, s); g != 3 {
		t.Fatalf("garbage records after reopen = %d, want 3 (2 left + 1 new)", g)
	}
	if n, err := s.Reclaim(10); err != nil || n != 3 {
		t.Fatalf("Reclaim = %d, %v; want 3", n, err)
	}
	if got := dataCounts(t, s); len(got) != 0 {
		t.Fatalf("data left: %v", got)
	}
}

func TestReclaimDropsMalformedGarbage(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncNo)
	defer closeStore(t, s)
	b := s.NewBatch()
	writeVersion(t, b, 0, "k", 1, 2)
	if err := b.Set(codec.AppendGarbageKey(nil, 1), []byte{0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	if n, err := s.Reclaim(10); err != nil || n != 1 {
		t.Fatalf("Reclaim = %d, %v; want 1", n, err)
	}
	if g := garbageCount(t, s); g != 0 {
		t.Fatalf("malformed garbage record kept (%d records)", g)
	}
	if got := dataCounts(t, s); got["0/k/1"] != 2 {
		t.Fatalf("malformed garbage deleted data: %v", got)
	}
}
