//go:build linux

package config

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// availableMemory returns the physical memory, lowered to the cgroup's
// memory limit if one is set; 0 if unknown.
func availableMemory() uint64 {
	var si syscall.Sysinfo_t
	var phys uint64
	if syscall.Sysinfo(&si) == nil {
		phys = uint64(si.Totalram) * uint64(si.Unit)
	}
	for _, f := range []string{
		"/sys/fs/cgroup/memory.max",                   // cgroup v2
		"/sys/fs/cgroup/memory/memory.limit_in_bytes", // cgroup v1
	} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lim, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err == nil && lim > 0 && (phys == 0 || lim < phys) {
			phys = lim
		}
		break
	}
	return phys
}
