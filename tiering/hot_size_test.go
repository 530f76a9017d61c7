package tiering

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/spillway/spillway/codec"
)

// TestHotStringAccountingMatchesHeap checks that the hot tier's accounting
// of string entries (entrySize) is close to what they really take on the
// Go heap: the LRU's map slot and list element, the Entry, the key string
// put makes and the value copy SetString makes. An accounting far below the
// heap lets a budget of small keys hold twice its size (a 64 MB budget
// took 250 MB of RSS in a bulk load of small keys); far above, the budget
// holds fewer keys than it could.
func TestHotStringAccountingMatchesHeap(t *testing.T) {
	for _, c := range []struct{ keyLen, valLen int }{{10, 16}, {24, 3}, {40, 100}, {16, 1000}} {
		t.Run(fmt.Sprintf("key%d_val%d", c.keyLen, c.valLen), func(t *testing.T) {
			const n = 100_000
			val := make([]byte, c.valLen)
			hk := make([]byte, 1+c.keyLen)
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			l := NewLRU(1 << 62)
			for i := range n {
				copy(hk[1:], fmt.Sprintf("%0*d", c.keyLen, i))
				e := &Entry{Type: codec.TypeString, Str: append([]byte(nil), val...)}
				l.put(hk, e)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			real := float64(after.HeapAlloc-before.HeapAlloc) / n
			counted := float64(l.UsedBytes()) / n
			runtime.KeepAlive(l)
			t.Logf("key %d B, value %d B: %.0f B on the heap per entry, %.0f B accounted (%.2fx)",
				c.keyLen, c.valLen, real, counted, counted/real)
			if counted < 0.9*real || counted > 1.3*real {
				t.Errorf("accounted %.0f B per entry for %.0f B on the heap: outside 0.9x-1.3x", counted, real)
			}
		})
	}
}

// BenchmarkLRUGetLarge measures the hot tier's part of a GET in a tier of
// 200,000 keys of 512 bytes read in random order, as redis-benchmark -r
// 200000 -d 512 reads them: the lookup, the recency update, the read's
// counters and the value's copy into a reply buffer. Each step misses the
// CPU caches (the map, the entry, the recency list's neighbours, the
// value), which a tier of 1,000 keys hides.
func BenchmarkLRUGetLarge(b *testing.B) {
	const n = 200_000
	l := NewLRU(1 << 62)
	keys := make([][]byte, n)
	val := make([]byte, 512)
	for i := range keys {
		hk := []byte(fmt.Sprintf("\x00key:%012d", i))
		keys[i] = hk
		e := &Entry{Type: codec.TypeString}
		e.hk, e.Str = stringValue(hk, val)
		l.put(hk, e)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	out := make([]byte, 0, 64<<10)
	p := defaultLFU
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e, ok := l.get(keys[i%n])
		if !ok || e.ExpireAt != 0 || e.loading != nil {
			b.Fatal("key not hot")
		}
		e.access = int64(i)
		e.hits++
		e.lfu.touch(p, int64(i))
		e.spared = false
		if len(out)+len(e.Str) > cap(out) {
			out = out[:0]
		}
		out = append(out, e.Str...)
	}
}
