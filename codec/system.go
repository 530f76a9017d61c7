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
	// SysKeyCounts holds each physical database's key and expiry counts,
	// written by a graceful shutdown and deleted (durably) by the next
	// start before it serves anything: present means the counts are exact
	// and the start-up scan of every meta record can be skipped. Its value
	// is AppendKeyCounts's.
	SysKeyCounts = "keycounts"
	// SysKeyCountsSeq holds the store sequence number of the SysKeyCounts
	// record (an 8-byte integer), written right after it: the counts are
	// trusted only if the next write the store sees is the start deleting
	// both, so a write by anything else in between (an older build that
	// does not know the record) makes the start scan instead.
	SysKeyCountsSeq = "keycounts-seq"
	// SysFunctions holds the FUNCTION libraries, as FUNCTION DUMP's payload;
	// written in the same batch as the FUNCTION command that changed them.
	SysFunctions = "functions"
)

// AppendKeyCounts appends the per-database key and expiry counts (256 of
// each, indexed by physical database) as the SysKeyCounts value: for each
// database with keys, its byte, then keys and expiries as 8 big-endian
// bytes each.
func AppendKeyCounts(dst []byte, keys, exps []int64) []byte {
	for db := range 256 {
		if keys[db] == 0 && exps[db] == 0 {
			continue
		}
		dst = append(dst, byte(db))
		dst = binary.BigEndian.AppendUint64(dst, uint64(keys[db]))
		dst = binary.BigEndian.AppendUint64(dst, uint64(exps[db]))
	}
	return dst
}

// ParseKeyCounts decodes a SysKeyCounts value into keys and exps (256
// entries each, zeroed first).
func ParseKeyCounts(b []byte, keys, exps []int64) error {
	const entry = 1 + 8 + 8
	if len(b)%entry != 0 || len(keys) < 256 || len(exps) < 256 {
		return corrupt("key counts", "length %d", len(b))
	}
	clear(keys)
	clear(exps)
	last := -1
	for ; len(b) > 0; b = b[entry:] {
		db := int(b[0])
		k, x := int64(binary.BigEndian.Uint64(b[1:])), int64(binary.BigEndian.Uint64(b[9:]))
		if db <= last || k < 0 || x < 0 || x > k {
			return corrupt("key counts", "entry for db %d out of order or negative", db)
		}
		last = db
		keys[db], exps[db] = k, x
	}
	return nil
}

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
