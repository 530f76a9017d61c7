package codec

import "encoding/binary"

// Names of system records ('s' | name). Their values are 8-byte big-endian
// integers (AppendUint64Value / ParseUint64Value), except SysDBMap.
const (
	// SysFormat holds the store's format version (FormatVersion when written
	// by this build). A store without it is new; one with another value must
	// be migrated or refused.
	SysFormat = "format"
	// SysNextVersion holds the next unused collection version. Versions come
	// from this persisted counter, never from the clock.
	SysNextVersion = "nextversion"
	// SysDBMap maps logical databases (SELECT n) to the physical db byte
	// in keys: byte i is logical database i's physical number. SWAPDB swaps
	// two bytes. Its value is the raw map, not an integer.
	SysDBMap = "dbmap"
)

// AppendSystemKey appends the system-record key 's' | name.
func AppendSystemKey(dst []byte, name string) []byte {
	return append(append(dst, NSSystem), name...)
}

// AppendUint64Value appends v as 8 big-endian bytes, the value of a system
// record.
func AppendUint64Value(dst []byte, v uint64) []byte {
	return binary.BigEndian.AppendUint64(dst, v)
}

// ParseUint64Value decodes an 8-byte big-endian system-record value.
func ParseUint64Value(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, corrupt("system value", "length %d, want 8", len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}
