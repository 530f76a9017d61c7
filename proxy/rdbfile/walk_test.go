package rdbfile_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"testing"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/integration/harness"
	"github.com/spillway/spillway/proxy/rdbfile"
)

// oldRDB is an RDB file as Redis 2.x wrote it (version 4): EXPIRETIME in
// seconds, the plain list, set, string-scored sorted set (type 3) and
// hash types, two databases, and no checksum after EOF.
func oldRDB() []byte {
	b := []byte("REDIS0004")
	// key appends a key's record: its type, name, element count (n >= 0;
	// none for a string) and strings.
	key := func(typ byte, name string, n int, strs ...string) {
		b = append(append(append(b, typ), byte(len(name))), name...)
		if n >= 0 {
			b = append(b, byte(n))
		}
		for _, s := range strs {
			b = append(append(b, byte(len(s))), s...)
		}
	}
	b = append(b, 0xfe, 0) // SELECTDB 0
	b = append(b, 0xfd)    // EXPIRETIME, 2038-01-19 (an int32)
	b = binary.LittleEndian.AppendUint32(b, 2147483000)
	key(0, "k", -1, "v")
	key(1, "l", 2, "a", "b")
	key(2, "s", 2, "x", "y")
	key(3, "z", 2, "m", "1.5", "n", "-2") // scores as text
	key(4, "h", 1, "f", "v")
	b = append(b, 0xfe, 2) // SELECTDB 2
	key(0, "k2", -1, "abc")
	return append(b, 0xff) // EOF, no checksum
}

// TestReadersAgree: Load, Records and Splice, which share one walk of an
// RDB file's records, each rebuild the file's dataset exactly (compared
// with a redis-server that loaded the file itself) from files whose
// records the common writer does not produce: a real redis-server's RDB
// under an LRU and an LFU policy (an IDLE or a FREQ hint before every
// key), and a version 4 file (EXPIRETIME in seconds, type 3 sorted set, no
// checksum). Records' payloads are restored into a redis-server, Splice's
// file (no cold key) and Load's engine written again are loaded by one.
func TestReadersAgree(t *testing.T) {
	files := map[string]func() ([]byte, *harness.Conn){
		"lru": func() ([]byte, *harness.Conn) { return redisRDB(t, "--maxmemory-policy", "allkeys-lru") },
		"lfu": func() ([]byte, *harness.Conn) { return redisRDB(t, "--maxmemory-policy", "allkeys-lfu") },
		"version 4": func() ([]byte, *harness.Conn) {
			f := oldRDB()
			return f, loadInRedis(t, f)
		},
	}
	for name, get := range files {
		t.Run(name, func(t *testing.T) {
			file, ref := get()
			if n := ref.Do("DBSIZE"); n.Int == 0 && name != "version 4" {
				t.Fatalf("the reference holds no key")
			}

			dc := harness.StartRedis(t, "--enable-debug-command", "yes").Conn(t)
			err := rdbfile.Records(bytes.NewReader(file), func(rec *rdbfile.Record) error {
				if rec.Function != nil {
					if r := dc.Do("FUNCTION", "LOAD", string(rec.Function)); r.IsError() {
						t.Fatalf("FUNCTION LOAD: %s", r.Str)
					}
					return nil
				}
				dc.Do("SELECT", strconv.Itoa(rec.DB))
				if r := dc.Do("RESTORE", string(rec.Key), strconv.FormatInt(rec.ExpireMS, 10), string(rec.Payload), "ABSTTL"); r.IsError() {
					t.Fatalf("RESTORE db %d %q: %s", rec.DB, rec.Key, r.Str)
				}
				return nil
			})
			if err != nil {
				t.Fatalf("Records: %v", err)
			}
			t.Run("records", func(t *testing.T) { compareRedis(t, ref, dc) })

			_, empty := openLocal(t, 256<<20)
			var spliced bytes.Buffer
			st, err := rdbfile.Splice(&spliced, bytes.NewReader(file), snapshotOf(t, empty), rdbfile.DefaultOptions())
			if err != nil || st.Cold != 0 || st.Upstream == 0 {
				t.Fatalf("Splice: %+v %v", st, err)
			}
			t.Run("splice", func(t *testing.T) { compareRedis(t, ref, loadInRedis(t, spliced.Bytes())) })

			_, e := openLocal(t, 256<<20)
			ls, err := rdbfile.Load(bytes.NewReader(file), e, rdbfile.LoadOptions{ChunkBytes: 512})
			if err != nil || ls.Keys != st.Upstream {
				t.Fatalf("Load: %+v %v; Splice copied %d keys", ls, err, st.Upstream)
			}
			fn, _, err := e.SystemRecord(codec.SysFunctions)
			if err != nil {
				t.Fatal(err)
			}
			if len(fn) > 0 {
				fn = fn[:len(fn)-10] // the FUNCTION2 records, without DUMP's footer
			}
			t.Run("load", func(t *testing.T) { compareRedis(t, ref, loadInRedis(t, writeRDB(t, e, fn))) })
		})
	}
}

// TestReadersRefuseAlike: the three readers refuse a bad file with the
// same ErrCorrupt error, from their common walk.
func TestReadersRefuseAlike(t *testing.T) {
	good := oldRDB()
	v10 := append([]byte("REDIS0010"), good[9:]...)
	v10 = binary.LittleEndian.AppendUint64(v10, 1) // a wrong checksum
	for _, tc := range []struct {
		name, want string
		file       []byte
	}{
		{"signature", "no REDIS signature", append([]byte("RUBIS"), good[5:]...)},
		{"newer version", "RDB version 11 is newer", append([]byte("REDIS0011"), good[9:]...)},
		{"module data", "MODULE_AUX", append(bytes.Clone(good[:9]), 0xf7, 1)},
		{"truncated", "unexpected end of file", good[:len(good)-4]},
		{"checksum", "wrong RDB checksum", v10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, e := openLocal(t, 256<<20)
			_, lerr := rdbfile.Load(bytes.NewReader(tc.file), e, rdbfile.LoadOptions{})
			rerr := rdbfile.Records(bytes.NewReader(tc.file), func(*rdbfile.Record) error { return nil })
			_, serr := rdbfile.Splice(&bytes.Buffer{}, bytes.NewReader(tc.file), snapshotOf(t, e), rdbfile.DefaultOptions())
			for _, err := range []error{lerr, rerr, serr} {
				if !errors.Is(err, rdbfile.ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
					t.Errorf("Load: %v; Records: %v; Splice: %v; want ErrCorrupt saying %q", lerr, rerr, serr, tc.want)
					break
				}
			}
		})
	}
}
