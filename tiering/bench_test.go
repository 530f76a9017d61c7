package tiering

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/spillway/spillway/coldstore"
)

func benchEngine(b *testing.B, budget int64) *Engine {
	b.Helper()
	cold, err := coldstore.Open(coldstore.Options{Dir: b.TempDir(), Fsync: coldstore.FsyncNo, CacheBytes: 4 << 20})
	if err != nil {
		b.Fatal(err)
	}
	e, err := Open(cold, Options{Databases: 16, HotBudget: budget, PromoteMinHits: 2, ColdReadMaxBytes: 1 << 20, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close(); cold.Close() })
	return e
}

func benchKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key:%08d", i))
	}
	return keys
}

// BenchmarkGetHot measures a GET of a hot key: no Pebble access.
func BenchmarkGetHot(b *testing.B) {
	e := benchEngine(b, 64<<20)
	keys := benchKeys(1000)
	val := make([]byte, 100)
	for _, k := range keys {
		tx := e.Begin()
		if err := tx.SetString(0, k, val, 0); err != nil {
			b.Fatal(err)
		}
		tx.Commit()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tx := e.Begin()
		if v, err := tx.Get(0, keys[i%len(keys)]); err != nil || v == nil {
			b.Fatal(err)
		}
		tx.Commit()
	}
}

// BenchmarkSetHot measures a SET of a hot key, written through to Pebble.
func BenchmarkSetHot(b *testing.B) {
	e := benchEngine(b, 64<<20)
	keys := benchKeys(1000)
	val := make([]byte, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tx := e.Begin()
		if err := tx.SetString(0, keys[i%len(keys)], val, 0); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetCold measures a GET served from Pebble without promotion.
func BenchmarkGetCold(b *testing.B) {
	e := benchEngine(b, 4<<10)
	keys := benchKeys(20000)
	val := make([]byte, 100)
	for _, k := range keys {
		tx := e.Begin()
		tx.SetString(0, k, val, 0)
		tx.Commit()
	}
	e.SetPolicy(1<<30, 1<<20)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tx := e.Begin()
		if v, err := tx.Get(0, keys[(i*7919)%len(keys)]); err != nil || v == nil {
			b.Fatal(err)
		}
		tx.Commit()
	}
}

// BenchmarkGetMiss measures a GET of a key that does not exist, with many
// keys on disk: a Pebble lookup that the bloom filters should answer.
func BenchmarkGetMiss(b *testing.B) {
	e := benchEngine(b, 4<<10)
	keys := benchKeys(50000)
	val := make([]byte, 500)
	for _, k := range keys {
		tx := e.Begin()
		tx.SetString(0, k, val, 0)
		tx.Commit()
	}
	if err := e.Cold().Flush(); err != nil {
		b.Fatal(err)
	}
	missing := benchKeys(100000)[50000:]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tx := e.Begin()
		if v, err := tx.Get(0, missing[i%len(missing)]); err != nil || v != nil {
			b.Fatal(err)
		}
		tx.Commit()
	}
}
