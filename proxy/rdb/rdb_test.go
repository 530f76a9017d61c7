package rdb

import (
	"bytes"
	"hash/crc64"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestCRC64 checks the CRC against Redis's published test vector and
// against hash/crc64 with the same table (undoing its init/final inversion).
func TestCRC64(t *testing.T) {
	if got := CRC64(0, []byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("CRC64(123456789) = %#x, want 0xe9c6d914c4b8d9ca", got)
	}
	if got := CRC64(0, nil); got != 0 {
		t.Errorf("CRC64(empty) = %#x, want 0", got)
	}
	tab := crc64.MakeTable(0x95ac9329ac4bc9b5)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 8, 9, 63, 64, 1000, 100000} {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		want := ^crc64.Update(^uint64(0), tab, p)
		if got := CRC64(0, p); got != want {
			t.Errorf("len %d: CRC64 %#x, hash/crc64 equivalent %#x", n, got, want)
		}
		if got := CRC64(CRC64(0, p[:n/2]), p[n/2:]); got != want {
			t.Errorf("len %d: split update %#x, want %#x", n, got, want)
		}
	}
}

// TestAppendLen checks the RDB length encoding at every width boundary.
func TestAppendLen(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want []byte
	}{
		{0, []byte{0x00}},
		{63, []byte{0x3f}},
		{64, []byte{0x40, 0x40}},
		{300, []byte{0x41, 0x2c}},
		{16383, []byte{0x7f, 0xff}},
		{16384, []byte{0x80, 0, 0, 0x40, 0}},
		{math.MaxUint32, []byte{0x80, 0xff, 0xff, 0xff, 0xff}},
		{math.MaxUint32 + 1, []byte{0x81, 0, 0, 0, 1, 0, 0, 0, 0}},
	} {
		if got := AppendLen(nil, c.n); !bytes.Equal(got, c.want) {
			t.Errorf("AppendLen(%d) = % x, want % x", c.n, got, c.want)
		}
	}
}

// TestLZFRoundTrip compresses and decompresses inputs of many shapes.
func TestLZFRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	inputs := [][]byte{
		[]byte(strings.Repeat("abc", 100)),
		[]byte("#!lua name=x\nredis.register_function('x', function() return 1 end)"),
		bytes.Repeat([]byte{0}, 1000),
	}
	for i := 0; i < 50; i++ {
		n := rng.IntN(3000) + 21
		b := make([]byte, n)
		alphabet := rng.IntN(255) + 1
		for j := range b {
			b[j] = byte(rng.IntN(alphabet))
		}
		inputs = append(inputs, b)
	}
	for _, in := range inputs {
		c := LZFCompress(in, len(in)-4)
		if c == nil {
			continue
		}
		out, err := LZFDecompress(c, len(in))
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("LZF round trip of %d bytes failed: %v", len(in), err)
		}
	}
	if _, err := LZFDecompress([]byte{0xff, 0xff}, 10); err == nil {
		t.Errorf("corrupt LZF data decoded without error")
	}
}
