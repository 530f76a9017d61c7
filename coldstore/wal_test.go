package coldstore

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestNoRecycledWAL: after many memtable flushes the directory holds no
// finished write-ahead logs kept for reuse, only the live one and those of
// memtables not yet flushed, and every write is still there after a
// reopen (which replays the live log).
func TestNoRecycledWAL(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, MemTableBytes: 256 << 10, Fsync: FsyncEverySec, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	val := make([]byte, 1024)
	const n = 4000 // 4 MB: about 16 memtables of 256 KB
	for i := range n {
		for j := range val {
			val[j] = 'a' + byte((i+j)%26)
		}
		if _, err := s.SetSync(fmt.Appendf(nil, "\x01k%06d", i), val); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	m := s.Metrics()
	if m.Flush.Count < 4 {
		t.Fatalf("%d flushes; the test needs several", m.Flush.Count)
	}
	if m.WAL.ObsoleteFiles != 0 {
		t.Errorf("Pebble keeps %d finished logs (%d bytes) for reuse, want none", m.WAL.ObsoleteFiles, m.WAL.ObsoletePhysicalSize)
	}
	// Obsolete files are deleted in the background: a bounded wait.
	var logs []string
	for range 200 {
		if logs, err = filepath.Glob(filepath.Join(dir, "*.log")); err != nil {
			t.Fatal(err)
		}
		if len(logs) <= 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(logs) != 1 {
		t.Errorf("logs after a flush: %v, want only the live one", logs)
	}
	closeStore(t, s)

	s = openStore(t, dir, FsyncEverySec)
	defer closeStore(t, s)
	for _, i := range []int{0, n / 2, n - 1} {
		got, found, err := s.Get(fmt.Appendf(nil, "\x01k%06d", i), nil)
		if err != nil || !found || len(got) != len(val) || got[0] != 'a'+byte(i%26) {
			t.Fatalf("key %d after reopen: %q found %v, %v", i, got, found, err)
		}
	}
}
