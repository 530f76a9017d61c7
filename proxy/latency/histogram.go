package latency

import (
	"math"
	"math/bits"
	"strconv"
	"sync/atomic"
)

// Histogram is a command's latency histogram over nanoseconds (INFO
// latencystats, LATENCY HISTOGRAM): exact below 16 ns, then 16 buckets
// per power of two (an error under 7%, where Redis's HDR histogram keeps
// two significant digits). Record is safe for concurrent use, lock-free
// and allocation-free.
type Histogram [61 * 16]atomic.Int64

func bucket(ns int64) int {
	if ns < 16 {
		return int(max(ns, 0))
	}
	exp := bits.Len64(uint64(ns)) - 1 // >= 4
	return (exp-3)*16 + int(ns>>(exp-4))&15
}

// bucketHigh is the highest value bucket i holds.
func bucketHigh(i int) int64 {
	if i < 16 {
		return int64(i)
	}
	shift := i/16 - 1
	return (int64(16+i%16)+1)<<shift - 1
}

// Record adds one duration of ns nanoseconds.
func (h *Histogram) Record(ns int64) { h[bucket(ns)].Add(1) }

// counts snapshots the buckets and their total.
func (h *Histogram) counts() (c [len(Histogram{})]int64, total int64) {
	for i := range h {
		c[i] = h[i].Load()
		total += c[i]
	}
	return c, total
}

// Percentile is one of latency-tracking-info-percentiles: its name in
// INFO ("p99.9") and its value.
type Percentile struct {
	Name string
	P    float64
}

// AppendPercentiles appends "p50=%.3f,p99=...", the percentiles ps of the
// recorded durations in microseconds, as Redis's
// fillPercentileDistributionLatencies; false if h is empty.
func (h *Histogram) AppendPercentiles(b []byte, ps []Percentile) ([]byte, bool) {
	counts, total := h.counts()
	if total == 0 {
		return b, false
	}
	for j, pc := range ps {
		want := max(int64(math.Ceil(pc.P/100*float64(total))), 1)
		var seen int64
		i := 0
		for ; i < len(counts)-1; i++ {
			if seen += counts[i]; seen >= want {
				break
			}
		}
		if j > 0 {
			b = append(b, ',')
		}
		b = append(b, pc.Name...)
		b = append(b, '=')
		b = strconv.AppendFloat(b, float64(bucketHigh(i))/1000, 'f', 3, 64)
	}
	return b, true
}

// CDF returns the number of recorded durations and LATENCY HISTOGRAM's
// histogram_usec pairs: for each power of two from 1024 ns, the bucket's
// label in µs (the highest value Redis's HDR histogram, two significant
// digits, puts in the bucket of that power: 1, 2, 4, 8, 16, 33, 66...) and
// how many durations are at most that power's bucket, cumulatively; a
// pair only where the count grew, up to the last duration; durations
// over 1 s count as 1 s, as Redis records them.
func (h *Histogram) CDF() (calls int64, pairs [][2]int64) {
	counts, total := h.counts()
	var cum, prev int64
	i := 0
	for level := int64(1024); cum < total; level *= 2 {
		high := level + level/128 - 1 // HDR's highest equivalent value
		for ; i < len(counts) && bucketHigh(i) <= high; i++ {
			cum += counts[i]
		}
		if level == maxTracked {
			cum = total // Redis records longer durations as 1 s
		}
		if cum > prev {
			pairs = append(pairs, [2]int64{high / 1000, cum})
			prev = cum
		}
	}
	return total, pairs
}

// maxTracked is the power of two whose bucket holds Redis's highest
// tracked latency, 1 s (LATENCY_HISTOGRAM_MAX_VALUE).
const maxTracked = 1 << 30
