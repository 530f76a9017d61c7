package codec

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// orderedScores is strictly increasing, except that -0 and +0 are equal.
var orderedScores = []float64{
	math.Inf(-1),
	-math.MaxFloat64,
	-1e300,
	-2,
	-1,
	-0.5,
	-0x1p-1022,                       // smallest negative normal
	-0x1p-1022 + 0x1p-1074,           // largest-magnitude negative subnormal
	-math.SmallestNonzeroFloat64 * 2, // negative subnormal
	-math.SmallestNonzeroFloat64,     // negative subnormal closest to 0
	math.Copysign(0, -1),             // -0 ...
	0,                                // ... equals +0
	math.SmallestNonzeroFloat64,      // positive subnormal
	math.SmallestNonzeroFloat64 * 2,  // positive subnormal
	0x1p-1022,                        // smallest positive normal
	0.5,
	1,
	math.Nextafter(1, 2),
	2,
	1e300,
	math.MaxFloat64,
	math.Inf(1),
}

func mustScoreBytes(t testing.TB, f float64) []byte {
	t.Helper()
	b, err := AppendScore(nil, f)
	if err != nil {
		t.Fatalf("AppendScore(%v): %v", f, err)
	}
	return b
}

func TestScoreOrder(t *testing.T) {
	for i, a := range orderedScores {
		for j, b := range orderedScores {
			want := cmpFloat(a, b)
			got := bytes.Compare(mustScoreBytes(t, a), mustScoreBytes(t, b))
			if got != want {
				t.Errorf("scores[%d]=%v vs scores[%d]=%v: byte order %d, want %d", i, a, j, b, got, want)
			}
		}
	}
}

func TestScoreOrderRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		a := math.Float64frombits(r.Uint64())
		b := math.Float64frombits(r.Uint64())
		if r.IntN(4) == 0 { // also close pairs
			b = math.Nextafter(a, math.Inf(1))
		}
		if math.IsNaN(a) || math.IsNaN(b) {
			continue
		}
		if got, want := bytes.Compare(mustScoreBytes(t, a), mustScoreBytes(t, b)), cmpFloat(a, b); got != want {
			t.Fatalf("%v vs %v: byte order %d, want %d", a, b, got, want)
		}
	}
}

func TestScoreRoundTrip(t *testing.T) {
	for _, f := range orderedScores {
		b := mustScoreBytes(t, f)
		if len(b) != 8 {
			t.Fatalf("AppendScore(%v) has %d bytes", f, len(b))
		}
		got, err := ParseScore(b)
		if err != nil {
			t.Fatalf("ParseScore(%x): %v", b, err)
		}
		want := f
		if f == 0 {
			want = 0 // -0 comes back as +0
		}
		if got != want || math.Signbit(got) != math.Signbit(want) {
			t.Errorf("round trip %v -> %x -> %v, want %v", f, b, got, want)
		}
	}
}

func TestScoreKnownEncodings(t *testing.T) {
	tests := []struct {
		f    float64
		want uint64
	}{
		{0, 0x8000000000000000},
		{math.Copysign(0, -1), 0x8000000000000000},
		{1, 0xBFF0000000000000},
		{-1, 0x400FFFFFFFFFFFFF},
		{math.Inf(1), 0xFFF0000000000000},
		{math.Inf(-1), 0x000FFFFFFFFFFFFF},
	}
	for _, tt := range tests {
		got, err := EncodeScore(tt.f)
		if err != nil || got != tt.want {
			t.Errorf("EncodeScore(%v) = %#x, %v; want %#x", tt.f, got, err, tt.want)
		}
	}
}

func TestScoreNaN(t *testing.T) {
	nans := []float64{math.NaN(), math.Float64frombits(0xFFF8000000000001), math.Float64frombits(0x7FF0000000000001)}
	for _, n := range nans {
		if _, err := EncodeScore(n); !errors.Is(err, ErrNaN) {
			t.Errorf("EncodeScore(%x) err = %v, want ErrNaN", math.Float64bits(n), err)
		}
		dst := []byte("x")
		if got, err := AppendScore(dst, n); !errors.Is(err, ErrNaN) || !bytes.Equal(got, dst) {
			t.Errorf("AppendScore(NaN) = %q, %v", got, err)
		}
		if _, err := AppendScoreKey(nil, 0, []byte("k"), 1, n, []byte("m")); !errors.Is(err, ErrNaN) {
			t.Errorf("AppendScoreKey(NaN) err = %v", err)
		}
	}
}

func TestDecodeScoreRejectsNonCanonical(t *testing.T) {
	bad := []uint64{
		0x0000000000000000, // negative NaN, all bits set
		0x000FFFFFFFFFFFFE, // negative NaN next to -inf
		0xFFF0000000000001, // positive NaN next to +inf
		0xFFFFFFFFFFFFFFFF, // positive NaN
		0x7FFFFFFFFFFFFFFF, // -0
	}
	for _, u := range bad {
		if f, err := DecodeScore(u); !errors.Is(err, ErrCorrupt) {
			t.Errorf("DecodeScore(%#x) = %v, %v; want ErrCorrupt", u, f, err)
		}
	}
	for _, n := range []int{0, 7, 9} {
		if _, err := ParseScore(make([]byte, n)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ParseScore(%d bytes) err = %v", n, err)
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestMemberScoreKeepsSignOfZero(t *testing.T) {
	for _, s := range []float64{0, math.Copysign(0, -1), 1.5, -2, math.Inf(1), math.Inf(-1), math.SmallestNonzeroFloat64} {
		b, err := AppendMemberScore(nil, s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseMemberScore(b)
		if err != nil || math.Float64bits(got) != math.Float64bits(s) {
			t.Fatalf("%v round-tripped to %v (%v)", s, got, err)
		}
	}
	if _, err := AppendMemberScore(nil, math.NaN()); err != ErrNaN {
		t.Fatalf("NaN: %v", err)
	}
	nan := make([]byte, 8)
	for i := range nan {
		nan[i] = 0xff
	}
	if _, err := ParseMemberScore(nan); err == nil {
		t.Fatal("a NaN member score decoded")
	}
	if _, err := ParseMemberScore([]byte{1}); err == nil {
		t.Fatal("a short member score decoded")
	}
}
