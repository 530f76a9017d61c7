//go:build !linux

package config

// availableMemory is unknown off Linux; DefaultMaxMemory falls back.
func availableMemory() uint64 { return 0 }
