package coldstore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/spillway/spillway/codec"
)

// tableCompressions returns, per level, the compression profile names of
// the store's sstables (as recorded in each table's properties).
func tableCompressions(t *testing.T, s *Store) map[int][]string {
	t.Helper()
	levels, err := s.db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatalf("SSTables: %v", err)
	}
	got := map[int][]string{}
	for l, tables := range levels {
		for _, tb := range tables {
			got[l] = append(got[l], tb.Properties.CompressionName)
		}
	}
	return got
}

// TestSnappyStoreOpensWithCurrentPlan: a store written by an earlier build
// (every table Snappy) opens and reads with the current plan; once its keys
// are written again, compaction rewrites its bottom level with zstd, which
// reads back the same values, before and after a restart, in less room.
func TestSnappyStoreOpensWithCurrentPlan(t *testing.T) {
	const keys = 3000
	r := rand.New(rand.NewPCG(5, 6))
	values := make([][]byte, keys)
	for i := range values {
		v := make([]byte, 1024)
		for j := range v {
			v[j] = 'a' + byte(r.IntN(26))
		}
		values[i] = v
	}
	key := func(i int) []byte { return fmt.Appendf(nil, "k:%06d", i) }
	checkAll := func(s *Store) {
		t.Helper()
		var m codec.Meta
		for i := range keys {
			_, _, found, err := s.GetMeta(0, key(i), &m, nil, nil)
			if err != nil || !found || m.Type != codec.TypeString || !bytes.Equal(m.Value, values[i]) {
				t.Fatalf("GetMeta(%s): found=%v err=%v type=%v, value equal %v", key(i), found, err, m.Type,
					bytes.Equal(m.Value, values[i]))
			}
		}
	}

	dir := t.TempDir()
	// cold-compression snappy is that plan.
	s, err := Open(Options{Dir: dir, CacheBytes: 1 << 20, MemTableBytes: 1 << 20, Logger: quietLogger, Compression: CompressSnappy})
	if err != nil {
		t.Fatal(err)
	}
	writeAll := func(s *Store) {
		t.Helper()
		b := s.NewBatch()
		for i := range keys {
			if err := b.PutMeta(0, key(i), &codec.Meta{Type: codec.TypeString, Value: values[i]}); err != nil {
				t.Fatal(err)
			}
			if i%100 == 99 {
				commit(t, b)
			}
		}
		commit(t, b)
	}
	writeAll(s)
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	before := tableCompressions(t, s)
	if len(before[6]) == 0 {
		t.Fatalf("after Compact no table in L6: %v", before)
	}
	for l, names := range before {
		for _, n := range names {
			if n != "Snappy" {
				t.Fatalf("Snappy-plan store: L%d table compressed with %q", l, n)
			}
		}
	}
	snappyBytes := s.Metrics().Table.Local.LiveSize
	closeStore(t, s)

	s = openStore(t, dir, FsyncEverySec) // the default plan
	checkAll(s)
	// Pebble rewrites a table only when a compaction reaches it: here the
	// keys written again, compacted with the Snappy tables below them.
	writeAll(s)
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	after := tableCompressions(t, s)
	if len(after[6]) == 0 {
		t.Fatalf("after Compact no table in L6: %v", after)
	}
	for _, n := range after[6] {
		if n != zstd1Compression.Name {
			t.Fatalf("L6 table after compaction with the default plan: %q, want %q (all: %v)", n, zstd1Compression.Name, after)
		}
	}
	zstdBytes := s.Metrics().Table.Local.LiveSize
	// Random letters: 4.7 bits of entropy a byte, about 0.6 after zstd;
	// Snappy finds nothing to compress.
	if zstdBytes*10 > snappyBytes*7 {
		t.Errorf("tables: %d bytes with zstd, %d with Snappy: want at most 0.7x", zstdBytes, snappyBytes)
	}
	checkAll(s)
	closeStore(t, s)

	s = openStore(t, dir, FsyncEverySec)
	defer closeStore(t, s)
	checkAll(s)
}

// TestDefaultCompressionPlan: Snappy in 16 KB blocks where tables churn
// (L0 to L4), zstd level 1 in 4 KB blocks on the two bottom levels, which
// hold most of the data.
func TestDefaultCompressionPlan(t *testing.T) {
	var got []string
	for l := range pebbleLevels {
		p, size := defaultCompressionPlan(l)
		got = append(got, fmt.Sprintf("L%d:%s/%dk", l, p.Name, size>>10))
	}
	want := "L0:Snappy/16k L1:Snappy/16k L2:Snappy/16k L3:Snappy/16k L4:Snappy/16k L5:ZSTD1/4k L6:ZSTD1/4k"
	if s := strings.Join(got, " "); s != want {
		t.Errorf("plan = %s, want %s", s, want)
	}
}

// TestParseCompression: cold-compression's words, and nothing else.
func TestParseCompression(t *testing.T) {
	for word, want := range map[string]Compression{"zstd": CompressZstd, "snappy": CompressSnappy} {
		if got, err := ParseCompression(word); err != nil || got != want {
			t.Errorf("ParseCompression(%q) = %v, %v; want %v", word, got, err, want)
		}
	}
	if _, err := ParseCompression("lz4"); err == nil {
		t.Error("ParseCompression(lz4) accepted")
	}
}
