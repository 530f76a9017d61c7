package rdbfile_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/integration/harness"
	"github.com/spillway/spillway/proxy/rdbfile"
)

// TestRecordsRestoreInRedis: every key record of a real redis-server's RDB
// (every type and encoding, several databases, expiries, a function
// library), handed over by Records as a DUMP payload and sent to a second
// redis-server as RESTORE ... ABSTTL (libraries as FUNCTION LOAD), rebuilds
// exactly the first server's dataset; a truncated file or a wrong checksum
// is an error.
func TestRecordsRestoreInRedis(t *testing.T) {
	file, rc := redisRDB(t)

	dst := harness.StartRedis(t, "--enable-debug-command", "yes")
	dc := dst.Conn(t)
	keys, libs, expiring := 0, 0, 0
	err := rdbfile.Records(bytes.NewReader(file), func(rec *rdbfile.Record) error {
		if rec.Function != nil {
			libs++
			if r := dc.Do("FUNCTION", "LOAD", string(rec.Function)); r.IsError() {
				t.Fatalf("FUNCTION LOAD: %s", r.Str)
			}
			return nil
		}
		keys++
		if rec.ExpireMS != 0 {
			expiring++
		}
		dc.Do("SELECT", strconv.Itoa(rec.DB))
		if r := dc.Do("RESTORE", string(rec.Key), strconv.FormatInt(rec.ExpireMS, 10), string(rec.Payload), "ABSTTL"); r.IsError() {
			t.Fatalf("RESTORE db %d %q: %s", rec.DB, rec.Key, r.Str)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want, wantExp := keyspaceCount(rc.Do("INFO", "keyspace").Str, "keys="), keyspaceCount(rc.Do("INFO", "keyspace").Str, "expires=")
	if keys != want || expiring != wantExp || libs != 1 || wantExp == 0 {
		t.Fatalf("Records handed over %d keys (%d expiring) and %d libraries; the server holds %d keys (%d expiring) and 1 library", keys, expiring, libs, want, wantExp)
	}
	compareRedis(t, rc, dc)

	// A truncated file, or one whose checksum is wrong, is an error.
	if err := rdbfile.Records(bytes.NewReader(file[:len(file)-20]), func(*rdbfile.Record) error { return nil }); err == nil {
		t.Fatal("a truncated RDB was read without error")
	}
	bad := bytes.Clone(file)
	bad[len(bad)-1] ^= 0xff
	if err := rdbfile.Records(bytes.NewReader(bad), func(*rdbfile.Record) error { return nil }); err == nil {
		t.Fatal("an RDB with a wrong checksum was read without error")
	}
}

// keyspaceCount sums the field (keys= or expires=) over INFO keyspace's
// databases.
func keyspaceCount(info, field string) int {
	total := 0
	for _, line := range strings.Split(info, "\n") {
		if i := strings.Index(line, field); i >= 0 {
			v, _, _ := strings.Cut(line[i+len(field):], ",")
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			total += n
		}
	}
	return total
}
