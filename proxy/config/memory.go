package config

import "sync"

// fallbackMemory is assumed when the machine's memory cannot be read.
const fallbackMemory = 4 << 30

// DefaultMaxMemory is maxmemory's default: a quarter of the memory this
// process may use, which is the machine's physical memory (sysinfo(2)),
// or on Linux the cgroup's memory limit when that is lower (containers).
// If neither can be read it is a quarter of 4 GiB. It is computed once.
func DefaultMaxMemory() uint64 { return defaultMaxMemory() }

var defaultMaxMemory = sync.OnceValue(func() uint64 {
	m := availableMemory()
	if m == 0 {
		m = fallbackMemory
	}
	return m / 4
})
