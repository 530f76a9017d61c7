package coldstore

import (
	"sync/atomic"
	"time"
)

// ReadLatencyBounds are the upper bounds, in seconds, of the buckets of
// the store's point-read latency histogram (ReadLatency): 10 µs to 1 s.
var ReadLatencyBounds = [...]float64{
	10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6,
	1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1,
}

// boundsNs are ReadLatencyBounds in nanoseconds.
var boundsNs = func() (b [len(ReadLatencyBounds)]int64) {
	for i, s := range ReadLatencyBounds {
		b[i] = int64(s * 1e9)
	}
	return b
}()

// ReadLatencySample is how many point reads there are for each one timed:
// reading the clock twice costs about 180 ns on this project's machines
// (no vDSO clock in its VMs), as much as a memtable read, and every write
// of a key not in the hot tier reads the store once; one read in 16 keeps
// the histogram's shape at a sixteenth of the cost.
const ReadLatencySample = 16

// sampled reports whether the nth point read (counted from 1) is timed.
func sampled(n int64) bool { return n%ReadLatencySample == 0 }

// readLatency is a histogram of point reads, kept with atomics only: an
// observation is a bucket search over 16 bounds and two atomic adds.
type readLatency struct {
	buckets [len(ReadLatencyBounds) + 1]atomic.Uint64 // the last: over 1 s
	sumNs   atomic.Int64
}

func (h *readLatency) observe(d time.Duration) {
	ns := int64(d)
	i := 0
	for i < len(boundsNs) && ns > boundsNs[i] {
		i++
	}
	h.buckets[i].Add(1)
	h.sumNs.Add(ns)
}

// ReadLatency is the histogram of the store's point reads (the meta
// record of a key not in the hot tier, a cold field, element or member)
// since the store opened, one read in ReadLatencySample timed: Counts[i]
// timed reads took at most ReadLatencyBounds[i] and more than the bound
// before it; the last count is of reads over the last bound. Sum is their
// total duration.
type ReadLatency struct {
	Counts [len(ReadLatencyBounds) + 1]uint64
	Sum    time.Duration
}

// ReadLatency returns the point-read latency histogram.
func (s *Store) ReadLatency() ReadLatency {
	var r ReadLatency
	for i := range r.Counts {
		r.Counts[i] = s.readLat.buckets[i].Load()
	}
	r.Sum = time.Duration(s.readLat.sumNs.Load())
	return r
}
