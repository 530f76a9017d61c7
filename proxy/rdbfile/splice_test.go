package rdbfile_test

import (
	"bytes"
	"testing"

	"github.com/spillway/spillway/proxy/rdbfile"
)

// TestSpliceLoadsInRedis: a real redis-server's RDB of every type (several
// databases, expiries, functions) spliced with Spillway's cold keys, one of
// them a key the RDB also holds, loads in redis-server (which refuses a
// file with a duplicate key) as exactly the server's dataset plus the cold
// keys, the duplicate being the server's copy.
func TestSpliceLoadsInRedis(t *testing.T) {
	upRDB, rc := redisRDB(t)
	rc.Do("SELECT", "0")
	dup := rc.Do("RANDOMKEY").Str
	if dup == "" {
		t.Fatal("the dataset has no key in db 0")
	}

	s, e := openLocal(t, 0)
	l := s.NewLocal()
	defer l.Close()
	cold := [][]string{
		{"SELECT", "0"}, {"SET", "cold:s", "cold string"}, {"HSET", "cold:h", "f", "v", "g", "w"},
		{"RPUSH", "cold:l", "a", "b", "c"}, {"SET", dup, "the cold copy, shadowed"},
		{"SELECT", "3"}, {"ZADD", "cold:z", "1", "a", "2.5", "b"}, {"SET", "cold:ttl", "v", "PXAT", "4102444800000"},
	}
	for _, c := range cold {
		args := make([][]byte, len(c))
		for i, a := range c {
			args[i] = []byte(a)
		}
		if out := l.Do(args...); len(out) > 0 && out[0] == '-' {
			t.Fatalf("spillway %v: %s", c, out)
		}
	}
	snap := snapshotOf(t, e)
	var out bytes.Buffer
	opts := rdbfile.DefaultOptions()
	opts.Repl = &rdbfile.ReplInfo{ID: "0123456789012345678901234567890123456789", Offset: 42, StreamDB: 3}
	st, err := rdbfile.Splice(&out, bytes.NewReader(upRDB), snap, opts)
	if err != nil {
		t.Fatal(err)
	}
	if st.Cold != 5 || st.Shadowed != 1 || st.Upstream == 0 {
		t.Fatalf("stats %+v; want 5 cold keys, 1 shadowed, the server's keys", st)
	}
	aux, err := rdbfile.ReadAux(bytes.NewReader(out.Bytes()))
	if err != nil || aux["repl-offset"] != "42" || aux["repl-stream-db"] != "3" || aux["repl-id"] != opts.Repl.ID {
		t.Fatalf("spliced file's aux fields %v (%v); want the relay's replication fields", aux, err)
	}
	// A truncated master file, or one whose checksum is wrong, is refused.
	if _, err := rdbfile.Splice(&bytes.Buffer{}, bytes.NewReader(upRDB[:len(upRDB)-20]), snap, opts); err == nil {
		t.Fatal("a truncated RDB was spliced")
	}
	bad := bytes.Clone(upRDB)
	bad[len(bad)-1] ^= 0xff
	if _, err := rdbfile.Splice(&bytes.Buffer{}, bytes.NewReader(bad), snap, opts); err == nil {
		t.Fatal("an RDB with a wrong checksum was spliced")
	}

	lc := loadInRedis(t, out.Bytes())
	// The expected dataset: the server's, plus the cold keys it lacks.
	for _, c := range cold {
		if c[0] == "SET" && c[1] == dup {
			continue
		}
		if r := rc.Do(c...); r.IsError() {
			t.Fatalf("redis %v: %s", c, r.Str)
		}
	}
	compareRedis(t, rc, lc)
}
