package repl

import (
	"encoding/binary"
	"io"
	"strconv"

	"github.com/spillway/spillway/proxy/rdb"
)

// WriteEmptyRDB writes a Redis 7.0 RDB file holding no keys, with the
// aux fields a replica reads (redis-ver, repl-id, repl-offset) and the
// CRC-64 footer. It is what a full resync sends until the server gives
// Run a writer of the dataset's snapshot.
func WriteEmptyRDB(w io.Writer, replID string, offset int64) error {
	b := []byte("REDIS0010")
	aux := func(k, v string) {
		b = append(b, 0xFA)
		b = appendRDBString(b, k)
		b = appendRDBString(b, v)
	}
	aux("redis-ver", "7.0.15")
	aux("redis-bits", "64")
	aux("repl-stream-db", "0")
	aux("repl-id", replID)
	aux("repl-offset", strconv.FormatInt(offset, 10))
	b = append(b, 0xFF)
	b = binary.LittleEndian.AppendUint64(b, rdb.CRC64(0, b))
	_, err := w.Write(b)
	return err
}

// appendRDBString appends s as an RDB length-prefixed string (lengths
// under 2^14 only: aux fields are short).
func appendRDBString(b []byte, s string) []byte {
	if len(s) < 64 {
		b = append(b, byte(len(s)))
	} else {
		b = append(b, 0x40|byte(len(s)>>8), byte(len(s)))
	}
	return append(b, s...)
}
