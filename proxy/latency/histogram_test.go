package latency

import (
	"fmt"
	"testing"
	"time"
)

// The histogram's buckets cover every duration, in order, each holding
// the values from just above the previous bucket's highest up to its own,
// within 1/16 of the value.
func TestBuckets(t *testing.T) {
	prev := int64(-1)
	for i := 0; i < 60*16; i++ {
		hi := bucketHigh(i)
		if hi <= prev {
			t.Fatalf("bucket %d: highest %d not above the previous %d", i, hi, prev)
		}
		for _, v := range []int64{prev + 1, hi} {
			if b := bucket(v); b != i {
				t.Fatalf("value %d: bucket %d, want %d", v, b, i)
			}
		}
		if lo := prev + 1; lo >= 16 && float64(hi-lo) > float64(lo)/16 {
			t.Fatalf("bucket %d: %d..%d is wider than 1/16", i, lo, hi)
		}
		prev = hi
	}
	if b := bucket(int64(^uint64(0) >> 1)); b >= len(Histogram{}) {
		t.Fatalf("the longest duration falls outside the histogram: bucket %d", b)
	}
}

func TestPercentiles(t *testing.T) {
	var h Histogram
	for i := 0; i < 98; i++ {
		h.Record(int64(10 * time.Microsecond))
	}
	h.Record(int64(time.Millisecond))
	h.Record(int64(time.Second))
	got, ok := h.AppendPercentiles(nil, []Percentile{{"p50", 50}, {"p99", 99}, {"p99.9", 99.9}})
	if !ok {
		t.Fatal("no percentiles")
	}
	// Of 100 samples, p50 is the 50th (10 µs), p99 the 99th (1 ms), p99.9
	// the 100th (1 s); each is reported as its bucket's highest value.
	want := "p50=10.239,p99=1015.807,p99.9=1006632.959"
	if string(got) != want {
		t.Errorf("percentiles %s, want %s", got, want)
	}
	if _, ok := new(Histogram).AppendPercentiles(nil, nil); ok {
		t.Error("an empty histogram has percentiles")
	}
}

// CDF's labels are Redis's (the HDR histogram's highest value of each
// power of two's bucket, in µs), its counts cumulative, a pair only where
// the count grew, and durations over 1 s count in the 1 s bucket.
func TestCDF(t *testing.T) {
	var h Histogram
	for _, d := range []time.Duration{500, 900, 3000, 3000, 40 * time.Microsecond, 2 * time.Second} {
		h.Record(int64(d))
	}
	calls, pairs := h.CDF()
	if calls != 6 {
		t.Errorf("calls %d, want 6", calls)
	}
	got := fmt.Sprint(pairs)
	want := "[[1 2] [4 4] [66 5] [1082130 6]]"
	if got != want {
		t.Errorf("CDF %s, want %s", got, want)
	}
	if calls, pairs := new(Histogram).CDF(); calls != 0 || len(pairs) != 0 {
		t.Errorf("empty histogram: %d calls, %v", calls, pairs)
	}
}
