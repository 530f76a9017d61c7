package server

import (
	"testing"
	"time"
)

// The latency histogram's buckets cover every duration, in order, each
// holding the values from just above the previous bucket's highest up to
// its own, within 1/16 of the value.
func TestLatencyBuckets(t *testing.T) {
	prev := int64(-1)
	for i := 0; i < 60*16; i++ {
		hi := latValue(i)
		if hi <= prev {
			t.Fatalf("bucket %d: highest %d not above the previous %d", i, hi, prev)
		}
		for _, v := range []int64{prev + 1, hi} {
			if b := latBucket(v); b != i {
				t.Fatalf("value %d: bucket %d, want %d", v, b, i)
			}
		}
		if lo := prev + 1; lo >= 16 && float64(hi-lo) > float64(lo)/16 {
			t.Fatalf("bucket %d: %d..%d is wider than 1/16", i, lo, hi)
		}
		prev = hi
	}
	if b := latBucket(int64(^uint64(0) >> 1)); b >= len(latHist{}) {
		t.Fatalf("the longest duration falls outside the histogram: bucket %d", b)
	}
}

func TestLatencyPercentiles(t *testing.T) {
	var st cmdStat
	for i := 0; i < 98; i++ {
		st.record(10 * time.Microsecond)
	}
	st.record(time.Millisecond)
	st.record(time.Second)
	got, ok := st.hist.Load().appendPercentiles(nil)
	if !ok {
		t.Fatal("no percentiles")
	}
	// Of 100 samples, p50 is the 50th (10 µs), p99 the 99th (1 ms), p99.9
	// the 100th (1 s); each is reported as its bucket's highest value.
	want := "p50=10.239,p99=1015.807,p99.9=1006632.959"
	if string(got) != want {
		t.Errorf("percentiles %s, want %s", got, want)
	}
}
