package tiering

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/spillway/spillway/coldstore"
)

// benchEngine opens an engine with the given hot budget over a 4 MB block
// cache (what a 32 MB maxmemory gives).
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

// benchKeys returns the keys key:00000000 .. key:n-1.
func benchKeys(n int) [][]byte {
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("key:%08d", i))
	}
	return keys
}

// benchLoad stores n keys with values of size bytes and returns the keys.
func benchLoad(b *testing.B, e *Engine, n, size int) [][]byte {
	b.Helper()
	keys := benchKeys(n)
	val := make([]byte, size)
	for _, k := range keys {
		tx := e.begin()
		if err := tx.SetString(0, k, val, 0); err != nil {
			tx.abort()
			b.Fatal(err)
		}
		if _, err := tx.commit(); err != nil {
			b.Fatal(err)
		}
	}
	return keys
}

// benchGets times one GET per iteration over keys, visiting them with the
// given stride, and fails if a key's presence is not found.
func benchGets(b *testing.B, e *Engine, keys [][]byte, stride int, found bool) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tx := e.begin()
		v, err := tx.Get(0, keys[(i*stride)%len(keys)])
		tx.commit()
		if err != nil || (v != nil) != found {
			b.Fatalf("Get: %v, found %v, want found %v", err, v != nil, found)
		}
	}
}

// BenchmarkGetHot measures a GET of a hot key: no Pebble access.
func BenchmarkGetHot(b *testing.B) {
	e := benchEngine(b, 64<<20)
	benchGets(b, e, benchLoad(b, e, 1000, 100), 1, true)
}

// BenchmarkSetHot measures a SET of a hot key, written through to Pebble.
func BenchmarkSetHot(b *testing.B) {
	e := benchEngine(b, 64<<20)
	keys := benchKeys(1000)
	val := make([]byte, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tx := e.begin()
		if err := tx.SetString(0, keys[i%len(keys)], val, 0); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetCold measures a GET served from Pebble without promotion.
func BenchmarkGetCold(b *testing.B) {
	e := benchEngine(b, 4<<10)
	keys := benchLoad(b, e, 20000, 100)
	e.SetPolicy(1<<30, 1<<20)
	benchGets(b, e, keys, 7919, true)
}

// BenchmarkGetMiss measures a GET of a key that does not exist, with many
// keys on disk: a Pebble lookup that the bloom filters should answer.
func BenchmarkGetMiss(b *testing.B) {
	e := benchEngine(b, 4<<10)
	benchLoad(b, e, 50000, 500)
	if err := e.Cold().Flush(); err != nil {
		b.Fatal(err)
	}
	benchGets(b, e, benchKeys(100000)[50000:], 1, false)
}

// BenchmarkSetHotParallel measures SETs of hot keys from concurrent
// clients through Update, as the server runs them: the engine's lock
// serialises the transactions, and their store writes are applied to
// Pebble after it is released (coldstore/commitq.go).
func BenchmarkSetHotParallel(b *testing.B) {
	e := benchEngine(b, 256<<20)
	keys := benchKeys(200000)
	val := make([]byte, 512)
	b.ReportAllocs()
	b.SetParallelism(25)
	b.ResetTimer()
	var seq atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := keys[int(seq.Add(7919))%len(keys)]
			if _, err := e.Update(func(tx *Tx) error { return tx.SetString(0, k, val, 0) }); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSetHotParallelRun is BenchmarkSetHotParallel with each client
// running its SETs in runs of 16 (a pipeline of 16 commands, as the server
// runs one: tiering.Run), one hold of the lock and one Drain a run.
func BenchmarkSetHotParallelRun(b *testing.B) {
	e := benchEngine(b, 256<<20)
	keys := benchKeys(200000)
	val := make([]byte, 512)
	b.ReportAllocs()
	b.SetParallelism(25)
	b.ResetTimer()
	var seq atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		var r Run
		n := 0
		for pb.Next() {
			k := keys[int(seq.Add(7919))%len(keys)]
			if _, err := r.Update(e, func(tx *Tx) error { return tx.SetString(0, k, val, 0) }); err != nil {
				b.Fatal(err)
			}
			if n++; n%16 == 0 {
				if err := r.End(); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := r.End(); err != nil {
			b.Fatal(err)
		}
	})
}
