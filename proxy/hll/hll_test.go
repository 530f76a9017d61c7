package hll

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// Known answers recorded from redis-server 7.0.15 (the same values are in
// proxy/commands/testdata/hll.txt, checked there against Redis).
const (
	// PFADD h a b c "" on a new key.
	redisABC = "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80W1\x84I\xc0\x80P\xb1\x84K\xfb\x80BZ"
	// hyperloglog.c's example: registers 1000, 1020, 1021 = 2, 3, 3.
	docExample = "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x43\xe7\x84\x12\x89\x7c\x01"
	// docExample after PFADD doc a (Redis's PFDEBUG DECODE).
	docPlusA = "Z:1000 v:2,1 z:19 v:3,2 Z:11689 v:2,1 Z:3672"
)

func TestEmpty(t *testing.T) {
	v := Empty()
	if want := "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"; string(v) != want {
		t.Fatalf("Empty() = %q, want %q", v, want)
	}
	if err := Check(v); err != nil {
		t.Fatal(err)
	}
	if n, err := Count(v); n != 0 || err != nil {
		t.Fatalf("Count(empty) = %d, %v", n, err)
	}
}

func TestAddMatchesRedis(t *testing.T) {
	s := Open(Empty(), 3000)
	for _, e := range []string{"a", "b", "c", ""} {
		if changed, err := s.Add([]byte(e)); !changed || err != nil {
			t.Fatalf("Add(%q) = %v, %v", e, changed, err)
		}
	}
	s.Invalidate()
	if string(s.Bytes()) != redisABC {
		t.Fatalf("after a b c \"\": %q, want Redis's %q", s.Bytes(), redisABC)
	}
	if n, _ := Count(s.Bytes()); n != 4 {
		t.Fatalf("Count = %d, want 4 (Redis)", n)
	}

	d := Open([]byte(docExample), 3000)
	if changed, err := d.Add([]byte("a")); !changed || err != nil {
		t.Fatalf("Add(a) = %v, %v", changed, err)
	}
	if got, _ := Decode(d.Bytes()); got != docPlusA {
		t.Fatalf("Decode = %q, want Redis's %q", got, docPlusA)
	}
	if n, _ := Count([]byte(docExample)); n != 3 {
		t.Fatalf("Count(doc example) = %d, want 3 (Redis)", n)
	}
}

func TestCheck(t *testing.T) {
	dense := make([]byte, DenseSize)
	copy(dense, "HYLL")
	cases := []struct {
		v    string
		want error
	}{
		{redisABC, nil},
		{string(dense), nil},
		{string(dense[:DenseSize-1]), ErrNotHLL},
		{string(dense) + "x", ErrNotHLL},
		{"HYLL\x01", ErrNotHLL},
		{"HYLX" + redisABC[4:], ErrNotHLL},
		{"HYLL\x02" + redisABC[5:], ErrNotHLL},
		{"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", nil}, // no registers: corrupt, not wrong type
	}
	for _, c := range cases {
		if err := Check([]byte(c.v)); !errors.Is(err, c.want) {
			t.Errorf("Check(%.40q) = %v, want %v", c.v, err, c.want)
		}
	}
}

func TestCachedCardinality(t *testing.T) {
	v := []byte(redisABC)
	if _, ok := Cached(v); ok {
		t.Fatal("a changed value's cache reads valid")
	}
	SetCached(v, 4)
	if n, ok := Cached(v); n != 4 || !ok {
		t.Fatalf("Cached = %d, %v", n, ok)
	}
	if string(v[8:16]) != "\x04\x00\x00\x00\x00\x00\x00\x00" {
		t.Fatalf("card bytes %q", v[8:16])
	}
}

// TestSparseDenseAgree adds the same elements to a sparse and a dense
// sketch: their registers and cardinalities must match at every step, and
// the sparse one must stay well-formed and promote itself past the limit.
func TestSparseDenseAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, limit := range []int64{0, 300, 3000, 1 << 20} {
		s := Open(Empty(), limit)
		d := Open(Empty(), limit)
		if _, err := d.ToDense(); err != nil {
			t.Fatal(err)
		}
		var elem [8]byte
		for i := range 4000 {
			for j := range elem {
				elem[j] = byte(rng.Uint32())
			}
			c1, err1 := s.Add(elem[:])
			c2, err2 := d.Add(elem[:])
			if c1 != c2 || err1 != nil || err2 != nil {
				t.Fatalf("limit %d, element %d: sparse %v %v, dense %v %v", limit, i, c1, err1, c2, err2)
			}
			if !s.Dense() && int64(len(s.Bytes())) > max(limit, int64(len(Empty()))) {
				t.Fatalf("limit %d: sparse value of %d bytes", limit, len(s.Bytes()))
			}
			if i%97 != 0 && i != 3999 {
				continue
			}
			n1, err1 := Count(s.Bytes())
			n2, err2 := Count(d.Bytes())
			if n1 != n2 || err1 != nil || err2 != nil {
				t.Fatalf("limit %d, element %d: counts %d %v, %d %v", limit, i, n1, err1, n2, err2)
			}
			conv := Open(s.Bytes(), limit)
			if _, err := conv.ToDense(); err != nil {
				t.Fatalf("limit %d: ToDense: %v", limit, err)
			}
			if !bytes.Equal(conv.Bytes()[HeaderSize:], d.Bytes()[HeaderSize:]) {
				t.Fatalf("limit %d, element %d: registers differ", limit, i)
			}
		}
		if limit == 1<<20 && s.Dense() {
			t.Errorf("promoted under a 1 MB limit")
		}
		if limit <= 3000 && !s.Dense() {
			t.Errorf("limit %d: still sparse after 4000 elements", limit)
		}
	}
}

// TestEstimate checks the estimator's error on distinct elements (within
// 3 standard errors, 1.04/sqrt(16384) each) and PFCOUNT-of-several's
// union.
func TestEstimate(t *testing.T) {
	s := Open(Empty(), 3000)
	a, b := Open(Empty(), 3000), Open(Empty(), 3000)
	var elem [8]byte
	for i := uint64(1); i <= 200000; i++ {
		for j := range elem {
			elem[j] = byte(i >> (8 * j))
		}
		s.Add(elem[:])
		if i%2 == 0 {
			a.Add(elem[:])
		} else {
			b.Add(elem[:])
		}
	}
	n, err := Count(s.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if e := float64(n)/200000 - 1; e > 3*0.008125 || e < -3*0.008125 {
		t.Errorf("Count = %d for 200000 elements", n)
	}
	var m Max
	if err := m.Merge(a.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := m.Merge(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	if u := m.Count(); u != n {
		t.Errorf("union of the halves = %d, whole = %d", u, n)
	}
}

func TestSelfTest(t *testing.T) {
	if err := SelfTest(3000, rand.New(rand.NewPCG(5, 6))); err != nil {
		t.Fatal(err)
	}
}

func TestDecode(t *testing.T) {
	got, err := Decode([]byte(docExample))
	if want := "Z:1000 v:2,1 z:19 v:3,2 Z:15362"; got != want || err != nil {
		t.Fatalf("Decode = %q, %v; want %q", got, err, want)
	}
	dense := make([]byte, DenseSize)
	copy(dense, "HYLL")
	if _, err := Decode(dense); err != ErrNotSparse {
		t.Fatalf("Decode(dense) = %v", err)
	}
	// A truncated XZERO reads a zero byte after the value, as Redis.
	if got, _ := Decode([]byte(docExample[:HeaderSize] + "\x7f")); got != "Z:16129" {
		t.Fatalf("truncated XZERO: %q", got)
	}
}
