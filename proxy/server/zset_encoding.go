package server

import "github.com/spillway/spillway/tiering"

// zsetEncoding reports the encoding Redis 7.0 would hold z in: listpack
// until the set once grew past 128 members or held a member over 64 bytes,
// skiplist from then on.
//
// It stays here, out of the sorted-set family (now proxy/commands), only
// for OBJECT ENCODING in cmd_keys.go; it goes when the keys family moves
// to proxy/commands with its own copy.
func zsetEncoding(z *tiering.ZSet) (string, error) {
	if z.Skiplist() {
		return "skiplist", nil
	}
	return "listpack", nil
}
