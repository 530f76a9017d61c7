package coldstore

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/spillway/spillway/codec"
)

// metaValue reads the string value of key's meta record in database 0.
func metaValue(t *testing.T, s *Store, key string) string {
	t.Helper()
	var m codec.Meta
	_, _, found, err := s.GetMeta(0, []byte(key), &m, nil, nil)
	if err != nil || !found {
		t.Fatalf("GetMeta(%q): found %v, %v", key, found, err)
	}
	return string(m.Value)
}

func putString(t *testing.T, s *Store, key, val string, logOnly bool) {
	t.Helper()
	b := s.NewBatch()
	m := codec.Meta{Type: codec.TypeString, Value: []byte(val)}
	var err error
	if logOnly {
		err = b.PutMetaLogOnly(0, []byte(key), &m)
	} else {
		err = b.PutMeta(0, []byte(key), &m)
	}
	if err != nil {
		t.Fatal(err)
	}
	commit(t, b)
}

// fillLog writes n ordinary records of 1 KB, enough to close log segments.
func fillLog(t *testing.T, s *Store, n int) {
	t.Helper()
	for i := range n {
		b := s.NewBatch()
		if err := b.Set(fmt.Appendf(nil, "\x01fill%06d", i), bytes.Repeat([]byte{'f'}, 1024)); err != nil {
			t.Fatal(err)
		}
		commit(t, b)
	}
}

// crashAfterFill writes n ordinary records of 1 KB (fillLog), flushes the
// store, crashes it and opens it again from dir.
func crashAfterFill(t *testing.T, s *Store, dir string, n int) *Store {
	t.Helper()
	fillLog(t, s, n)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.CrashForTest(); err != nil {
		t.Fatal(err)
	}
	return openStore(t, dir, FsyncNo)
}

// TestLogOnlyRecords: a log-only record is durable (a crash's replay
// applies it) but neither Pebble nor the store's reads see it before; the
// log keeps its segment while the floor says so, and drops it once the
// floor is raised past it and what supersedes it is applied.
func TestLogOnlyRecords(t *testing.T) {
	for _, c := range []struct {
		name  string
		floor bool
		want  string // after fillLog, Flush, a crash and a replay
	}{
		{"kept below the floor", true, "v2"},
		{"retired without a floor", false, "v1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, FsyncNo)
			putString(t, s, "k", "v1", false)
			if c.floor {
				s.LowerLogFloor(s.NextBatchNumber())
			}
			putString(t, s, "k", "v2", true)
			if err := s.q.waitAll(); err != nil {
				t.Fatal(err)
			}
			if got := metaValue(t, s, "k"); got != "v1" {
				t.Fatalf("the store reads %q after a log-only write, want the record before it", got)
			}
			s = crashAfterFill(t, s, dir, 5000) // 5 MB: segments of 2 MB close
			defer closeStore(t, s)
			if got := metaValue(t, s, "k"); got != c.want {
				t.Fatalf("after the crash k = %q, want %q", got, c.want)
			}
		})
	}
}

// TestLogFloorRaise: a raised floor takes effect only once the batches that
// supersede the records below it are applied; then the log retires.
func TestLogFloorRaise(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncNo)
	defer closeStore(t, s)
	putString(t, s, "k", "v1", false)
	s.LowerLogFloor(s.NextBatchNumber())
	putString(t, s, "k", "v2", true)
	fillLog(t, s, 5000)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	pinned := s.LogBytes()
	if pinned < 4<<20 {
		t.Fatalf("the floor kept %d bytes of log, want the 5 MB written after it", pinned)
	}
	// Raised after a batch not yet enqueued: nothing retires.
	s.RaiseLogFloor(math.MaxUint64, s.NextBatchNumber())
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := s.LogBytes(); got < pinned {
		t.Fatalf("log shrank from %d to %d bytes before the superseding batch was applied", pinned, got)
	}
	putString(t, s, "k", "v2", false) // the superseding record
	fillLog(t, s, 3000)               // close the segment holding it
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := s.LogBytes(); got >= pinned {
		t.Fatalf("log still %d bytes (was %d) after the floor was raised and applied", got, pinned)
	}
	if got := metaValue(t, s, "k"); got != "v2" {
		t.Fatalf("k = %q", got)
	}
}

func TestParseLogOnly(t *testing.T) {
	p := appendLogOnly(nil, []byte("key"), []byte("value"))
	k, v, del, err := parseLogOnly(p)
	if err != nil || del || string(k) != "key" || string(v) != "value" {
		t.Fatalf("parse(append) = %q %q %v %v", k, v, del, err)
	}
	k, v, del, err = parseLogOnly(appendLogOnlyDelete(nil, []byte("key")))
	if err != nil || !del || string(k) != "key" || v != nil {
		t.Fatalf("parse(appendDelete) = %q %q %v %v", k, v, del, err)
	}
	for _, bad := range [][]byte{nil, {0}, {logOnlyTag}, {logOnlyTag, 9, 'a'}, {logOnlyTag, 0xff}} {
		if _, _, _, err := parseLogOnly(bad); err == nil {
			t.Errorf("parse(%q) accepted", bad)
		}
	}
}

// FuzzParseLogOnly: any payload either parses into a key and value (or a
// deletion of a key) whose encoding is the payload again, or is refused;
// nothing panics. Seed corpus: testdata/fuzz/FuzzParseLogOnly.
func FuzzParseLogOnly(f *testing.F) {
	f.Add(appendLogOnly(nil, []byte("m\x00key"), []byte("value")))
	f.Add(appendLogOnlyDelete(nil, []byte("d\x00key")))
	f.Add([]byte{logOnlyTag, 0x80})
	f.Fuzz(func(t *testing.T, p []byte) {
		k, v, del, err := parseLogOnly(p)
		if err != nil {
			return
		}
		if del {
			if again := appendLogOnlyDelete(nil, k); !bytes.Equal(again, p) || v != nil {
				t.Fatalf("parse(%x) = delete %x (value %x), which re-encodes to %x", p, k, v, again)
			}
			return
		}
		if again := appendLogOnly(nil, k, v); !bytes.Equal(again, p) {
			// A non-minimal uvarint length parses too; its re-encoding
			// must still give the same key and value.
			k2, v2, del2, err := parseLogOnly(again)
			if err != nil || del2 || !bytes.Equal(k2, k) || !bytes.Equal(v2, v) {
				t.Fatalf("parse(%x) = %x %x, which re-encode to %x", p, k, v, again)
			}
		}
	})
}

// TestLogOnlySetDelete: SetLogOnly and DeleteLogOnly of any record are
// invisible to the store's reads, and a crash's replay applies them in
// their place in the order (a Delete after a Set of the same key, an
// ordinary Set after a log-only Delete).
func TestLogOnlySetDelete(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, FsyncNo)
	write := func(fn func(b *Batch) error) {
		t.Helper()
		b := s.NewBatch()
		if err := fn(b); err != nil {
			t.Fatal(err)
		}
		commit(t, b)
	}
	get := func(key string) (string, bool) {
		t.Helper()
		v, ok, err := s.Get([]byte(key), nil)
		if err != nil {
			t.Fatal(err)
		}
		return string(v), ok
	}
	write(func(b *Batch) error { return b.Set([]byte("\x01a"), []byte("a1")) })
	write(func(b *Batch) error { return b.Set([]byte("\x01c"), []byte("c1")) })
	s.LowerLogFloor(s.NextBatchNumber())
	write(func(b *Batch) error {
		if err := b.DeleteLogOnly([]byte("\x01a")); err != nil {
			return err
		}
		if err := b.SetLogOnly([]byte("\x01b"), []byte("b1")); err != nil {
			return err
		}
		return b.SetLogOnly([]byte("\x01c"), []byte("c2"))
	})
	write(func(b *Batch) error { return b.DeleteLogOnly([]byte("\x01c")) })
	write(func(b *Batch) error { return b.SetLogOnly([]byte("\x01d"), []byte("d1")) })
	write(func(b *Batch) error { return b.Set([]byte("\x01d"), []byte("d2")) })
	if err := s.q.waitAll(); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"\x01a": "a1", "\x01b": "", "\x01c": "c1", "\x01d": "d2"} {
		if v, ok := get(key); v != want || ok != (want != "") {
			t.Fatalf("before the crash %q = %q (found %v), want %q", key, v, ok, want)
		}
	}
	s = crashAfterFill(t, s, dir, 3000)
	defer closeStore(t, s)
	for key, want := range map[string]string{"\x01a": "", "\x01b": "b1", "\x01c": "", "\x01d": "d2"} {
		if v, ok := get(key); v != want || ok != (want != "") {
			t.Fatalf("after the crash %q = %q (found %v), want %q", key, v, ok, want)
		}
	}
}
