package hll

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
)

// selfTestCycles is how many times the register test fills the registers.
const selfTestCycles = 1000

// SelfTest is PFSELFTEST, Redis's own test of the implementation:
//
//  1. the dense registers keep random values without disturbing their
//     neighbours, in 1,000 rounds;
//  2. adding 10,000,000 distinct 8-byte elements to a dense and a sparse
//     HyperLogLog, at each power of ten the sparse one is still sparse
//     below sparseMax/2 elements, both agree on the cardinality, and its
//     error is within six standard errors (1 at 10 elements).
//
// rng supplies the random values. It returns nil, or the error Redis
// replies ("TESTFAILED ...").
func SelfTest(sparseMax int64, rng *rand.Rand) error {
	dense := make([]byte, DenseSize)
	regs := dense[HeaderSize:]
	var want [Registers]uint8
	for range selfTestCycles {
		for i := range want {
			want[i] = uint8(rng.Uint32() & regMax)
			denseSet(regs, i, want[i])
		}
		for i, w := range want {
			if got := denseGet(regs, i); got != w {
				return fmt.Errorf("TESTFAILED Register %d should be %d but is %d", i, w, got)
			}
		}
	}

	clear(regs)
	sparse := Open(Empty(), sparseMax)
	relerr := 1.04 / math.Sqrt(Registers)
	checkpoint := int64(1)
	seed := rng.Uint64()
	var ele [8]byte
	for j := int64(1); j <= 10_000_000; j++ {
		binary.LittleEndian.PutUint64(ele[:], uint64(j)^seed)
		index, count := PatLen(ele[:])
		denseMax(regs, index, count)
		_, _ = sparse.Set(index, count) // Redis ignores the result too
		if j != checkpoint {
			continue
		}
		if j < sparseMax/2 && sparse.Dense() {
			return fmt.Errorf("TESTFAILED sparse encoding not used")
		}
		card, _ := Count(dense)
		if c2, _ := Count(sparse.Bytes()); c2 != card {
			return fmt.Errorf("TESTFAILED dense/sparse disagree")
		}
		abserr := checkpoint - int64(card)
		maxerr := int64(math.Ceil(relerr * 6 * float64(checkpoint)))
		if j == 10 {
			maxerr = 1
		}
		if abserr < 0 {
			abserr = -abserr
		}
		if abserr > maxerr {
			return fmt.Errorf("TESTFAILED Too big error. card:%d abserr:%d", checkpoint, abserr)
		}
		checkpoint *= 10
	}
	return nil
}
