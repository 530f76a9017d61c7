package coldstore

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
)

// The compression plans compared by the benchmarks below.
var benchPlans = []struct {
	name string
	plan compressionPlan
}{
	{"snappy", uniformPlan(sstable.SnappyCompression, 16<<10)},
	{"zstd1", uniformPlan(zstd1Compression, 16<<10)},
	{"zstd1-8k", uniformPlan(zstd1Compression, 8<<10)},
	{"zstd1-4k", uniformPlan(zstd1Compression, 4<<10)},
	{"zstd3", uniformPlan(sstable.ZstdCompression, 16<<10)},
	{"L5L6-zstd1", bottomPlan(2, zstd1Compression, 16<<10)},
	{"L5L6-zstd1-4k", bottomPlan(2, zstd1Compression, 4<<10)},
	{"L5L6-zstd1-8k", bottomPlan(2, zstd1Compression, 8<<10)},
	{"L5L6-zstd1-2k", bottomPlan(2, zstd1Compression, 2<<10)},
	{"L5L6-zstd1-1k", bottomPlan(2, zstd1Compression, 1<<10)},
	{"L5L6-zstd3-4k", bottomPlan(2, sstable.ZstdCompression, 4<<10)},
}

// getValues is how many values BenchmarkCompressionGet loads:
// benchValues, or SPILLWAY_BENCH_GET_VALUES (320 MB: 327680, as make
// bench's cold-read dataset).
func getValues(tb testing.TB) int {
	v := os.Getenv("SPILLWAY_BENCH_GET_VALUES")
	if v == "" {
		return benchValues
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("SPILLWAY_BENCH_GET_VALUES=%q", v)
	}
	return n
}

// benchValues is how many values of 1 KB of random letters (as make bench's
// datasets) a write benchmark stores: 96 MB, enough for an LSM of L0, an
// Lbase and L6.
const benchValues = 96 << 10

// cpuTime is the CPU time (user and system) this process has used so far,
// Pebble's background compactions and cgo included.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchKey(i int) []byte { return fmt.Appendf(nil, "\x01mem:%09d", i) }

// benchLoad writes n values, one commit each as Spillway's SETs, in key
// order (as make bench loads its datasets: Pebble keeps such tables in L0,
// as they do not overlap) or in random order (a leveled LSM, compactions at
// every level), and waits for the compactions they cause to finish
// (bounded).
func benchLoad(tb testing.TB, s *Store, n int, random bool) {
	r := rand.New(rand.NewPCG(1, 2))
	pool := make([]byte, 1<<20)
	for i := range pool {
		pool[i] = 'a' + byte(r.IntN(26))
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	if random {
		order = r.Perm(n)
	}
	for _, i := range order {
		off := r.IntN(len(pool) - 1024)
		if err := s.db.Set(benchKey(i), pool[off:off+1024], pebble.NoSync); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		tb.Fatal(err)
	}
	// Compactions are done when none has run for half a second.
	deadline := time.Now().Add(2 * time.Minute)
	idle := 0
	for idle < 10 && time.Now().Before(deadline) {
		m := s.db.Metrics()
		if m.Compact.NumInProgress == 0 {
			idle++
		} else {
			idle = 0
		}
		time.Sleep(50 * time.Millisecond)
	}
	if os.Getenv("SPILLWAY_BENCH_LSM") == "1" {
		tb.Logf("LSM after the load:\n%s", s.db.Metrics())
	}
}

// sstBytes sums the sizes of dir's sstables and blob files.
func sstBytes(tb testing.TB, dir string) int64 {
	files, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		tb.Fatal(err)
	}
	blobs, err := filepath.Glob(filepath.Join(dir, "*.blob"))
	if err != nil {
		tb.Fatal(err)
	}
	files = append(files, blobs...)
	var n int64
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// BenchmarkCompressionWrite loads benchValues values per iteration into a
// fresh store with each plan (memtable and cache as Spillway's at
// --maxmemory 32mb) and reports the CPU time per MB of values, flushes and
// compactions included, and the sstables' size against the values'.
// Run with -benchtime 1x.
func BenchmarkCompressionWrite(b *testing.B) {
	for _, order := range []string{"seq", "rand"} {
		for _, p := range benchPlans {
			b.Run(order+"/"+p.name, func(b *testing.B) { benchWrite(b, p.plan, order == "rand") })
		}
	}
}

// benchWrite is one write benchmark: see BenchmarkCompressionWrite.
func benchWrite(b *testing.B, plan compressionPlan, random bool) {
	var cpu time.Duration
	var ratio float64
	for range b.N {
		dir := b.TempDir()
		s := openPlanStore(b, dir, plan)
		c0 := cpuTime()
		benchLoad(b, s, benchValues, random)
		cpu += cpuTime() - c0
		ratio += float64(sstBytes(b, dir)) / float64(benchValues*1024)
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N)/(benchValues>>10), "cpu-ms/MB")
	b.ReportMetric(ratio/float64(b.N), "sst/values")
}

// BenchmarkCompressionGet reads random keys of a store loaded with
// benchValues values with each plan, through a 4 MB block cache (most reads
// decompress a data block, as cold reads over 10x the budget do), and
// reports the CPU time per read.
func BenchmarkCompressionGet(b *testing.B) {
	for _, p := range benchPlans {
		b.Run(p.name, func(b *testing.B) {
			s := openPlanStore(b, b.TempDir(), p.plan)
			defer s.Close()
			n := getValues(b)
			benchLoad(b, s, n, true)
			r := rand.New(rand.NewPCG(3, 4))
			var buf []byte
			b.ResetTimer()
			c0 := cpuTime()
			for range b.N {
				var found bool
				var err error
				if buf, found, err = s.Get(benchKey(r.IntN(n)), buf); err != nil || !found {
					b.Fatalf("get: found %v, %v", found, err)
				}
			}
			b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkCompressionScan reads 20 consecutive values from a random key of
// a store loaded with benchValues values with each plan (as promoting a
// cold hash of 20 fields of 1 KB reads its records), through a 4 MB block
// cache, and reports the CPU time per scan.
func BenchmarkCompressionScan(b *testing.B) {
	for _, p := range benchPlans {
		b.Run(p.name, func(b *testing.B) {
			s := openPlanStore(b, b.TempDir(), p.plan)
			defer s.Close()
			n := getValues(b)
			benchLoad(b, s, n, true)
			r := rand.New(rand.NewPCG(3, 4))
			b.ResetTimer()
			c0 := cpuTime()
			for range b.N {
				it, err := s.NewIter(benchKey(r.IntN(n-20)), []byte{2})
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for ok := it.First(); ok && got < 20; ok = it.Next() {
					if len(it.Value()) != 1024 {
						b.Fatalf("value of %d bytes", len(it.Value()))
					}
					got++
				}
				if err := it.Close(); err != nil || got != 20 {
					b.Fatalf("scan: %d values, %v", got, err)
				}
			}
			b.ReportMetric(float64((cpuTime()-c0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// openPlanStore opens a benchmark store in dir (4 MB block cache, 2 MB
// memtables, no fsync) whose tables are written with plan.
func openPlanStore(b *testing.B, dir string, plan compressionPlan) *Store {
	b.Helper()
	s, err := Open(Options{Dir: dir, CacheBytes: 4 << 20, MemTableBytes: 2 << 20,
		Fsync: FsyncNo, Logger: quietLogger, compression: plan})
	if err != nil {
		b.Fatal(err)
	}
	return s
}
