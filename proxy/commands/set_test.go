package commands

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestCompareCanonicalInts checks the intset order's comparison against
// the values' own on edge and random integers.
func TestCompareCanonicalInts(t *testing.T) {
	vals := []int64{0, 1, -1, 9, 10, -9, -10, 99, 100, -100, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1}
	for range 500 {
		vals = append(vals, rand.Int64()>>rand.IntN(64), -(rand.Int64() >> rand.IntN(64)))
	}
	for _, a := range vals {
		for _, b := range vals[:40] {
			want := 0
			if a < b {
				want = -1
			} else if a > b {
				want = 1
			}
			got := compareCanonicalInts([]byte(strconv.FormatInt(a, 10)), []byte(strconv.FormatInt(b, 10)))
			if got != want {
				t.Fatalf("compare(%d, %d) = %d, want %d", a, b, got, want)
			}
		}
	}
}

// TestSortIntset checks that only what Redis would keep as an intset is
// put in numeric order: at most intsetMax canonical integers.
func TestSortIntset(t *testing.T) {
	strs := func(ss ...string) [][]byte {
		out := make([][]byte, len(ss))
		for i, s := range ss {
			out[i] = []byte(s)
		}
		return out
	}
	join := func(m [][]byte) string { return string(bytes.Join(m, []byte(" "))) }
	m := strs("10", "-2", "3", "-30", "0")
	sortIntset(m)
	if got := join(m); got != "-30 -2 0 3 10" {
		t.Errorf("integers: %q", got)
	}
	for _, in := range [][]string{{"10", "2", "x"}, {"10", "02", "1"}, {"10", "+2", "1"}, {"10", "-0", "1"}} {
		m := strs(in...)
		sortIntset(m)
		if got, want := join(m), join(strs(in...)); got != want {
			t.Errorf("%q reordered to %q", want, got)
		}
	}
	big := make([][]byte, intsetMax+1)
	for i := range big {
		big[i] = []byte(strconv.Itoa(len(big) - i))
	}
	sortIntset(big)
	if string(big[0]) != strconv.Itoa(intsetMax+1) {
		t.Errorf("a set over intsetMax was reordered")
	}
}
