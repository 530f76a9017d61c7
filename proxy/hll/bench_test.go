package hll

import (
	"encoding/binary"
	"testing"
)

// filled returns a sketch holding n distinct elements.
func filled(n int, sparseMax int64) *Sketch {
	s := Open(Empty(), sparseMax)
	var e [8]byte
	for i := range n {
		binary.LittleEndian.PutUint64(e[:], uint64(i))
		s.Add(e[:])
	}
	return s
}

// BenchmarkAddSparse adds to a sparse HyperLogLog of about 1,000
// elements (about 1.9 KB): each add walks the opcodes.
func BenchmarkAddSparse(b *testing.B) {
	s := filled(1000, 3000)
	if s.Dense() {
		b.Fatal("dense")
	}
	v := s.Bytes()
	var e [8]byte
	b.ResetTimer()
	for i := range b.N {
		t := Open(v, 3000)
		binary.LittleEndian.PutUint64(e[:], uint64(i)<<32)
		t.Add(e[:])
	}
}

// BenchmarkAddDense adds to a dense HyperLogLog (copy included, as PFADD).
func BenchmarkAddDense(b *testing.B) {
	v := filled(100000, 3000).Bytes()
	var e [8]byte
	b.ResetTimer()
	for i := range b.N {
		t := Open(v, 3000)
		binary.LittleEndian.PutUint64(e[:], uint64(i)<<32)
		t.Add(e[:])
	}
}

// BenchmarkCountDense is PFCOUNT of a dense HyperLogLog without a valid
// cache.
func BenchmarkCountDense(b *testing.B) {
	v := filled(100000, 3000).Bytes()
	for range b.N {
		if _, err := Count(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnion3 is PFCOUNT of three dense keys.
func BenchmarkUnion3(b *testing.B) {
	vs := [][]byte{filled(50000, 3000).Bytes(), filled(60000, 3000).Bytes(), filled(70000, 3000).Bytes()}
	for range b.N {
		var m Max
		for _, v := range vs {
			if err := m.Merge(v); err != nil {
				b.Fatal(err)
			}
		}
		m.Count()
	}
}
