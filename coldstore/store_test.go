package coldstore

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/spillway/spillway/codec"
)

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// openStore opens a store in dir with small caches; the store is closed when
// the test ends unless the caller closes it first (closeStore).
func openStore(t *testing.T, dir string, f Fsync) *Store {
	t.Helper()
	s, err := Open(Options{Dir: dir, CacheBytes: 1 << 20, MemTableBytes: 1 << 20, Fsync: f, Logger: quietLogger})
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return s
}

func closeStore(t *testing.T, s *Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func commit(t *testing.T, b *Batch) {
	t.Helper()
	p, err := b.Commit()
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := p.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}

// rawSet writes one record straight into a closed store's Pebble directory,
// bypassing every check, to simulate other builds or corruption.
func rawSet(t *testing.T, dir string, key, value []byte) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{Logger: newPebbleLogger(quietLogger)})
	if err != nil {
		t.Fatalf("raw open: %v", err)
	}
	if err := db.Set(key, value, pebble.Sync); err != nil {
		t.Fatalf("raw set: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("raw close: %v", err)
	}
}

func TestParseFsync(t *testing.T) {
	tests := []struct {
		in      string
		want    Fsync
		wantErr bool
	}{
		{"always", FsyncAlways, false},
		{"everysec", FsyncEverySec, false},
		{"no", FsyncNo, false},
		{"ALWAYS", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseFsync(tt.in)
		if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
			t.Errorf("ParseFsync(%q) = %v, %v; want %v, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if !tt.wantErr && got.String() != tt.in {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), tt.in)
		}
	}
}

func TestReopenKeepsData(t *testing.T) {
	for _, f := range []Fsync{FsyncEverySec, FsyncAlways, FsyncNo} {
		t.Run(f.String(), func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, f)
			b := s.NewBatch()
			want := map[string]codec.Meta{}
			for i := 0; i < 50; i++ {
				k := fmt.Sprintf("key:%d", i)
				m := codec.Meta{Type: codec.TypeString, ExpireAt: int64(i * 1000), Value: []byte(fmt.Sprintf("value-%d", i))}
				if err := b.PutMeta(uint8(i%3), []byte(k), &m); err != nil {
					t.Fatal(err)
				}
				want[k] = m
			}
			commit(t, b)
			// A deleted key must stay deleted.
			if err := b.DeleteMeta(uint8(7%3), []byte("key:7")); err != nil {
				t.Fatal(err)
			}
			commit(t, b)
			delete(want, "key:7")
			closeStore(t, s)

			s = openStore(t, dir, f)
			defer closeStore(t, s)
			var m codec.Meta
			for i := 0; i < 50; i++ {
				k := fmt.Sprintf("key:%d", i)
				_, _, found, err := s.GetMeta(uint8(i%3), []byte(k), &m, nil, nil)
				if err != nil {
					t.Fatalf("GetMeta(%s): %v", k, err)
				}
				w, ok := want[k]
				if found != ok {
					t.Fatalf("GetMeta(%s) found=%v, want %v", k, found, ok)
				}
				if ok && (m.Type != w.Type || m.ExpireAt != w.ExpireAt || !bytes.Equal(m.Value, w.Value)) {
					t.Errorf("GetMeta(%s) = %+v, want %+v", k, m, w)
				}
				// Wrong database: absent.
				_, _, found, err = s.GetMeta(uint8(i%3)+1, []byte(k), &m, nil, nil)
				if err != nil || found {
					t.Errorf("GetMeta(%s) in db %d: found=%v err=%v, want absent", k, i%3+1, found, err)
				}
			}
		})
	}
}

func TestFormatRecord(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, FsyncNo)
	v, found, err := s.Get(codec.AppendSystemKey(nil, codec.SysFormat), nil)
	if err != nil || !found {
		t.Fatalf("format record: found=%v err=%v", found, err)
	}
	if got, err := codec.ParseUint64Value(v); err != nil || got != codec.FormatVersion {
		t.Fatalf("format record = %x (%v), want %d", v, err, codec.FormatVersion)
	}
	closeStore(t, s)

	// Reopening a store of the current format works and keeps the record.
	s = openStore(t, dir, FsyncNo)
	closeStore(t, s)

	tests := []struct {
		name  string
		value []byte
	}{
		{"newer format", codec.AppendUint64Value(nil, codec.FormatVersion+1)},
		{"format zero", codec.AppendUint64Value(nil, 0)},
		{"short record", []byte{1}},
		{"long record", append(codec.AppendUint64Value(nil, codec.FormatVersion), 0)},
		{"empty record", []byte{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			closeStore(t, openStore(t, dir, FsyncNo))
			rawSet(t, dir, codec.AppendSystemKey(nil, codec.SysFormat), tt.value)
			s, err := Open(Options{Dir: dir, Logger: quietLogger})
			if err == nil {
				s.Close()
				t.Fatalf("Open accepted format record %x", tt.value)
			}
		})
	}
}

func TestNextVersionStrictlyIncreasing(t *testing.T) {
	dir := t.TempDir()
	var last uint64
	next := func(s *Store) uint64 {
		t.Helper()
		v, err := s.NextVersion()
		if err != nil {
			t.Fatalf("NextVersion: %v", err)
		}
		if v <= last {
			t.Fatalf("NextVersion = %d after %d", v, last)
		}
		last = v
		return v
	}
	// Runs of different lengths, one crossing a block boundary.
	for run, n := range []int{1, 5, versionBlock + 3, 2, 0, 1} {
		s := openStore(t, dir, FsyncNo)
		for i := 0; i < n; i++ {
			next(s)
		}
		// The persisted counter always covers every version handed out.
		v, found, err := s.Get(codec.AppendSystemKey(nil, codec.SysNextVersion), nil)
		if n > 0 {
			if err != nil || !found {
				t.Fatalf("run %d: nextversion record found=%v err=%v", run, found, err)
			}
			if limit, err := codec.ParseUint64Value(v); err != nil || limit <= last {
				t.Fatalf("run %d: persisted limit %d (%v) does not exceed last version %d", run, limit, err, last)
			}
		}
		closeStore(t, s)
	}
}

func TestNextVersionConcurrentUnique(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncNo)
	defer closeStore(t, s)
	const workers, per = 4, 500
	out := make(chan uint64, workers*per)
	errc := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() {
			for i := 0; i < per; i++ {
				v, err := s.NextVersion()
				if err != nil {
					errc <- err
					return
				}
				out <- v
			}
			errc <- nil
		}()
	}
	for w := 0; w < workers; w++ {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	close(out)
	seen := map[uint64]bool{}
	for v := range out {
		if seen[v] || v == 0 {
			t.Fatalf("version %d handed out twice (or zero)", v)
		}
		seen[v] = true
	}
}

// A nextversion record that is not 8 bytes is corruption; silently
// restarting the counter would hand out versions already in use, whose stale
// data records would then show up in new structures.
func TestOpenRefusesCorruptVersionCounter(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, FsyncNo)
	if _, err := s.NextVersion(); err != nil {
		t.Fatal(err)
	}
	closeStore(t, s)
	rawSet(t, dir, codec.AppendSystemKey(nil, codec.SysNextVersion), []byte{0, 1, 2})
	s, err := Open(Options{Dir: dir, Logger: quietLogger})
	if err == nil {
		v, _ := s.NextVersion()
		s.Close()
		t.Fatalf("Open accepted a 3-byte nextversion record (next version handed out: %d)", v)
	}
}

func TestBatchReadYourWrites(t *testing.T) {
	type op struct {
		kind string // "put", "del", "commit", "abort"
		key  string
		val  string
	}
	tests := []struct {
		name string
		ops  []op
		// want: key -> value seen through the batch ("" + absent when missing)
		want map[string]string
		// wantCommitted: key -> value seen through the store after the ops
		wantCommitted map[string]string
	}{
		{
			name:          "put then read",
			ops:           []op{{"put", "a", "1"}},
			want:          map[string]string{"a": "1"},
			wantCommitted: map[string]string{},
		},
		{
			name:          "put put overwrite",
			ops:           []op{{"put", "a", "1"}, {"put", "a", "2"}},
			want:          map[string]string{"a": "2"},
			wantCommitted: map[string]string{},
		},
		{
			name:          "put then delete",
			ops:           []op{{"put", "a", "1"}, {"del", "a", ""}},
			want:          map[string]string{},
			wantCommitted: map[string]string{},
		},
		{
			name:          "committed then delete in batch",
			ops:           []op{{"put", "a", "1"}, {"commit", "", ""}, {"del", "a", ""}},
			want:          map[string]string{},
			wantCommitted: map[string]string{"a": "1"},
		},
		{
			name:          "committed then overwrite in batch",
			ops:           []op{{"put", "a", "1"}, {"put", "b", "x"}, {"commit", "", ""}, {"put", "a", "2"}},
			want:          map[string]string{"a": "2", "b": "x"},
			wantCommitted: map[string]string{"a": "1", "b": "x"},
		},
		{
			name:          "delete then put again",
			ops:           []op{{"put", "a", "1"}, {"commit", "", ""}, {"del", "a", ""}, {"put", "a", "3"}},
			want:          map[string]string{"a": "3"},
			wantCommitted: map[string]string{"a": "1"},
		},
		{
			name:          "abort discards",
			ops:           []op{{"put", "a", "1"}, {"commit", "", ""}, {"put", "a", "2"}, {"del", "a", ""}, {"put", "c", "9"}, {"abort", "", ""}},
			want:          map[string]string{"a": "1"},
			wantCommitted: map[string]string{"a": "1"},
		},
		{
			name:          "reuse after abort",
			ops:           []op{{"put", "a", "1"}, {"abort", "", ""}, {"put", "b", "2"}, {"commit", "", ""}},
			want:          map[string]string{"b": "2"},
			wantCommitted: map[string]string{"b": "2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStore(t, t.TempDir(), FsyncNo)
			defer closeStore(t, s)
			b := s.NewBatch()
			for _, o := range tt.ops {
				var err error
				switch o.kind {
				case "put":
					err = b.PutMeta(0, []byte(o.key), &codec.Meta{Type: codec.TypeString, Value: []byte(o.val)})
				case "del":
					err = b.DeleteMeta(0, []byte(o.key))
				case "commit":
					commit(t, b)
					if !b.Empty() {
						t.Fatal("batch not empty after Commit")
					}
				case "abort":
					b.Abort()
					if !b.Empty() {
						t.Fatal("batch not empty after Abort")
					}
				}
				if err != nil {
					t.Fatalf("%s %s: %v", o.kind, o.key, err)
				}
			}
			var m codec.Meta
			for _, k := range []string{"a", "b", "c"} {
				_, found, err := b.GetMeta(0, []byte(k), &m, nil)
				if err != nil {
					t.Fatal(err)
				}
				w, ok := tt.want[k]
				if found != ok || (ok && string(m.Value) != w) {
					t.Errorf("batch GetMeta(%s) = %q found=%v, want %q found=%v", k, m.Value, found, w, ok)
				}
				_, _, found, err = s.GetMeta(0, []byte(k), &m, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				w, ok = tt.wantCommitted[k]
				if found != ok || (ok && string(m.Value) != w) {
					t.Errorf("store GetMeta(%s) = %q found=%v, want %q found=%v", k, m.Value, found, w, ok)
				}
			}
			b.Abort()
		})
	}
}

func TestBatchRawRecordsAndRange(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncNo)
	defer closeStore(t, s)
	b := s.NewBatch()
	if !b.Empty() {
		t.Fatal("new batch not empty")
	}
	k1 := codec.AppendFieldKey(nil, 0, []byte("h"), 5, []byte("f1"))
	k2 := codec.AppendFieldKey(nil, 0, []byte("h"), 5, []byte("f2"))
	for _, k := range [][]byte{k1, k2} {
		if err := b.Set(k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if v, found, err := b.GetData(k1, nil); err != nil || !found || string(v) != "v" {
		t.Fatalf("GetData through batch = %q %v %v", v, found, err)
	}
	if err := b.Delete(k1); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := b.GetData(k1, nil); found {
		t.Fatal("deleted record visible through batch")
	}
	commit(t, b)
	if _, found, _ := s.Get(k2, nil); !found {
		t.Fatal("committed record missing")
	}
	p := codec.AppendDataPrefix(nil, 0, []byte("h"), 5)
	if err := b.DeleteRange(p, codec.PrefixEnd(p)); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := b.GetData(k2, nil); found {
		t.Fatal("range-deleted record visible through batch")
	}
	commit(t, b)
	if _, found, _ := s.Get(k2, nil); found {
		t.Fatal("range-deleted record still stored")
	}
}

func TestCommitPending(t *testing.T) {
	tests := []struct {
		f        Fsync
		wantZero bool
	}{
		{FsyncAlways, false},
		{FsyncEverySec, true},
		{FsyncNo, true},
	}
	for _, tt := range tests {
		t.Run(tt.f.String(), func(t *testing.T) {
			s := openStore(t, t.TempDir(), tt.f)
			defer closeStore(t, s)
			if s.FsyncPolicy() != tt.f {
				t.Fatalf("FsyncPolicy = %v", s.FsyncPolicy())
			}
			b := s.NewBatch()
			// An empty batch has nothing to wait for.
			p, err := b.Commit()
			if err != nil || !p.IsZero() {
				t.Fatalf("empty Commit = %v zero=%v", err, p.IsZero())
			}
			if err := b.PutMeta(0, []byte("k"), &codec.Meta{Type: codec.TypeString, Value: []byte("v")}); err != nil {
				t.Fatal(err)
			}
			p, err = b.Commit()
			if err != nil {
				t.Fatal(err)
			}
			if p.IsZero() != tt.wantZero {
				t.Fatalf("Pending zero = %v, want %v", p.IsZero(), tt.wantZero)
			}
			// Visible as soon as Commit returns, before Wait.
			var m codec.Meta
			if _, _, found, err := s.GetMeta(0, []byte("k"), &m, nil, nil); err != nil || !found {
				t.Fatalf("committed meta not visible: %v %v", found, err)
			}
			if err := p.Wait(); err != nil {
				t.Fatalf("Wait: %v", err)
			}
			if !b.Empty() {
				t.Fatal("batch not reusable after Commit")
			}
		})
	}
}

func TestSetFsyncAtRunTime(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncNo)
	defer closeStore(t, s)
	b := s.NewBatch()
	put := func() Pending {
		if err := b.PutMeta(0, []byte("k"), &codec.Meta{Type: codec.TypeString}); err != nil {
			t.Fatal(err)
		}
		p, err := b.Commit()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := put(); !p.IsZero() {
		t.Fatal("FsyncNo returned a Pending")
	}
	s.SetFsync(FsyncAlways)
	p := put()
	if p.IsZero() {
		t.Fatal("FsyncAlways returned a zero Pending")
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := s.SyncWAL(); err != nil {
		t.Fatal(err)
	}
}

func TestExpiryIndexRecords(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncNo)
	defer closeStore(t, s)
	b := s.NewBatch()
	for i, at := range []int64{300, 100, 200} {
		if err := b.PutExpiry(at, uint8(i), []byte(fmt.Sprintf("k%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, b)
	if err := b.DeleteExpiry(200, 2, []byte("k2")); err != nil {
		t.Fatal(err)
	}
	commit(t, b)
	it, err := s.NewIter(codec.ExpiryStart(), codec.PrefixEnd(codec.ExpiryStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var got []string
	for valid := it.First(); valid; valid = it.Next() {
		at, db, key, err := codec.ParseExpiryKey(it.Key())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d/%d/%s", at, db, key))
	}
	want := []string{"100/1/k1", "300/0/k0"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("expiry index = %v, want %v (time order)", got, want)
	}
}

// SetSync and DeleteSync report the sequence number of their first
// record: consecutive calls with nothing in between differ by the records
// written, across a close and reopen too, and any write in between shows.
func TestSyncWritesReportSequenceNumbers(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, FsyncNo)
	a, err := s.SetSync([]byte("sa"), []byte("1"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.SetSync([]byte("sb"), []byte("2"))
	if err != nil || b != a+1 {
		t.Fatalf("second SetSync: seq %d (%v), want %d", b, err, a+1)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, dir, FsyncNo)
	d, err := s.DeleteSync([]byte("sa"), []byte("sb"))
	if err != nil || d != b+1 {
		t.Fatalf("DeleteSync after reopen: seq %d (%v), want %d", d, err, b+1)
	}
	batch := s.NewBatch()
	if err := batch.Set([]byte("other"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := batch.Commit(); err != nil {
		t.Fatal(err)
	}
	e, err := s.SetSync([]byte("sa"), []byte("3"))
	if err != nil || e != d+3 {
		t.Fatalf("SetSync after another write: seq %d (%v), want %d", e, err, d+3)
	}
	if _, found, _ := s.Get([]byte("sb"), nil); found {
		t.Fatal("DeleteSync left its key")
	}
	s.Close()
}
