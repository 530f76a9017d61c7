package coldstore

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
)

// compressionPlan picks the block compression and data block size of the
// sstables written to each LSM level (0 to 6). Pebble records the codec in
// every block, so a plan only decides how new tables are written: tables of
// an earlier plan (Snappy everywhere, 16 KB blocks, before 2026-11-26) stay
// readable and take the current plan as compactions rewrite them. No
// format version changes (neither codec.FormatVersion nor Pebble's).
//
// What the choices cost, measured with the benchmarks of
// compression_bench_test.go on 1 KB values of random letters (as make
// bench's; 4.7 bits of entropy a byte: 0.59x at best, and Snappy, like
// Redis's LZF, finds nothing to compress):
//
//	go test -run '^$' -bench 'BenchmarkCompression(Write/rand|Get|Scan)' -benchtime 1x|200000x|50000x ./coldstore/
//
//	                    sst/values  write CPU   Get CPU µs         Scan CPU µs
//	                                ms/MB       96 MB    320 MB    96 MB
//	Snappy 16 KB         1.02       14-19       8.3-9.9  12.6      26.6
//	zstd1 16 KB, all     0.61       29-34       15-16
//	zstd3 16 KB, all     0.62       45-48       17.8-18
//	zstd1 16 KB, L5-L6   0.61       28-32       15-17    21.1      37.8
//	zstd1 8 KB, L5-L6    0.62                            17.4      44.6
//	zstd1 4 KB, L5-L6    0.63       31-37       9.7-11.6 13.5      52.4
//
// Write CPU is the process's CPU time per MB of values written (one commit
// each, in random key order as Spillway's hashed meta keys), flushes and
// compactions included: zstd doubles the background cost of compactions,
// which on such data are otherwise copies. A cold read decompresses one data
// block, so zstd's cost there scales with the block: at 4 KB it is near
// Snappy's (whose blocks of random letters are stored raw), at 16 KB 1.7x.
// A scan (20 values of 1 KB from a random key, as promoting a cold hash of
// 20 fields) decompresses every byte it reads, and pays per block besides:
// 4 KB blocks cost it twice Snappy's CPU, 16 KB 1.4x. Point lookups (GET,
// HGET, SISMEMBER, ZSCORE of cold keys) are the commoner cold read, hence
// 4 KB. Below 4 KB the index outgrows a small block cache, and 2 KB blocks
// did not pay (2026-11-26: the cold-read data set of make bench rebuilt
// into L6 with each size, 3% larger with 2 KB; in CPU profiles of a
// uniform cold GET load zstd took 4.4 µs a read with either size, and the
// server's CPU per GET differed by less than the noise of the shared
// machine, -7% to +2%). Pure-Go
// zstd (klauspost, build tag pebblegozstd) did not compress these blocks by
// the 12% Pebble requires (0.97-1.02x); MinLZ needs a newer table format
// and, like Snappy, has no entropy coder.
type compressionPlan func(level int) (p *sstable.CompressionProfile, blockSize int)

// zstd1Compression is zstd at level 1 (cgo, DataDog/zstd, as Pebble builds
// it by default) for data and value blocks and Snappy for the others (index
// blocks, read on every lookup that misses the cache); a block that shrinks
// by less than 12% is stored raw, as in Pebble's simple profiles. Pebble's
// own zstd level 1 profiles (Balanced, Fast) use MinLZ for index blocks,
// which this store's table format lacks: Pebble would write Snappy instead.
// The name is recorded in each table's properties and the OPTIONS file
// (Pebble's Open does not read it back; its command-line tool would not
// know it).
var zstd1Compression = func() *sstable.CompressionProfile {
	p := *sstable.ZstdCompression
	p.Name = "ZSTD1"
	p.DataBlocks = sstable.BalancedCompression.DataBlocks
	p.ValueBlocks = sstable.BalancedCompression.ValueBlocks
	p.OtherBlocks = sstable.SnappyCompression.OtherBlocks
	return &p
}()

// uniformPlan compresses every level with p, in blocks of blockSize.
func uniformPlan(p *sstable.CompressionProfile, blockSize int) compressionPlan {
	return func(int) (*sstable.CompressionProfile, int) { return p, blockSize }
}

// bottomPlan compresses the bottom n levels with deep in blocks of
// deepBlock, and the levels above with Snappy in blocks of 16 KB.
func bottomPlan(n int, deep *sstable.CompressionProfile, deepBlock int) compressionPlan {
	return func(level int) (*sstable.CompressionProfile, int) {
		if level >= pebbleLevels-n {
			return deep, deepBlock
		}
		return sstable.SnappyCompression, 16 << 10
	}
}

// pebbleLevels is the number of LSM levels (L0 to L6).
const pebbleLevels = 7

// defaultCompressionPlan is the plan of a store opened without one: Snappy
// in 16 KB blocks where tables churn (L0 to L4: flushes and compactions
// rewrite them again and again), zstd level 1 in 4 KB blocks on the two
// bottom levels, which hold about 90% of the data once it outgrows Pebble's
// base level (64 MB) and all of it below that (L6 is then the base level).
var defaultCompressionPlan = bottomPlan(2, zstd1Compression, 4<<10)

// applyCompressionPlan sets each level's compression and block size in po.
func applyCompressionPlan(po *pebble.Options, plan compressionPlan) {
	for i := range po.Levels {
		p, size := plan(i)
		po.Levels[i].Compression = func() *sstable.CompressionProfile { return p }
		po.Levels[i].BlockSize = size
	}
}

// Compression is the codec of the store's bottom levels (the
// cold-compression setting); the levels above always use Snappy.
type Compression int

const (
	// CompressZstd is zstd level 1 in 4 KB blocks on L5-L6
	// (defaultCompressionPlan).
	CompressZstd Compression = iota
	// CompressSnappy is Snappy in 16 KB blocks on every level (the plan
	// before zstd): cheaper to write and to scan, larger on disk.
	CompressSnappy
)

// ParseCompression parses cold-compression's words, "zstd" and "snappy".
func ParseCompression(s string) (Compression, error) {
	switch s {
	case "zstd":
		return CompressZstd, nil
	case "snappy":
		return CompressSnappy, nil
	}
	return 0, fmt.Errorf("coldstore: unknown compression %q", s)
}

// plan is c's compression plan.
func (c Compression) plan() compressionPlan {
	if c == CompressSnappy {
		return uniformPlan(sstable.SnappyCompression, 16<<10)
	}
	return defaultCompressionPlan
}
