package repl

import (
	"encoding/binary"
	"io"
	"strconv"

	"github.com/spillway/spillway/proxy/rdb"
)

// WriteKeylessRDB writes a Redis 7.0 RDB without keys: the aux fields a
// replica reads (repl-id, repl-offset), then functions (FUNCTION2 records,
// possibly none), EOF and the CRC-64 footer. It is what a full resync
// sends to a replica that asked for no data (REPLCONF rdb-filter-only).
func WriteKeylessRDB(w io.Writer, replID string, offset int64, functions []byte) error {
	b := []byte("REDIS0010")
	aux := func(k, v string) {
		b = append(b, 0xFA)
		b = rdb.AppendString(b, []byte(k))
		b = rdb.AppendString(b, []byte(v))
	}
	aux("redis-ver", "7.0.15")
	aux("redis-bits", "64")
	aux("repl-stream-db", "0")
	aux("repl-id", replID)
	aux("repl-offset", strconv.FormatInt(offset, 10))
	aux("aof-base", "0")
	b = append(b, functions...)
	b = append(b, 0xFF)
	b = binary.LittleEndian.AppendUint64(b, rdb.CRC64(0, b))
	_, err := w.Write(b)
	return err
}
