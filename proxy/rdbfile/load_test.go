package rdbfile_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/integration/harness"
	"github.com/spillway/spillway/proxy/rdbfile"
	"github.com/spillway/spillway/tiering"
)

// writeRDB writes engine e's dataset (functions from its system record)
// as an RDB file.
func writeRDB(t *testing.T, e *tiering.Engine, functions []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	opts := rdbfile.DefaultOptions()
	opts.Functions = functions
	if err := rdbfile.Write(&b, snapshotOf(t, e), opts); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestLoadInChunks: Spillway's RDB of the dataset, loaded with tiny
// transactions (every structure spread over many), then written again,
// loads in redis-server as the dataset fed to a redis-server directly.
func TestLoadInChunks(t *testing.T) {
	ref := harness.StartRedis(t, "--enable-debug-command", "yes")
	rc := ref.Conn(t)
	s, e := openLocal(t, 256<<20)
	l := s.NewLocal()
	defer l.Close()
	for _, c := range dataset(time.Now().Add(time.Hour).UnixMilli()) {
		args := make([][]byte, len(c))
		for i, a := range c {
			args[i] = []byte(a)
		}
		if out := l.Do(args...); len(out) > 0 && out[0] == '-' {
			t.Fatalf("spillway %v: %s", c[:min(len(c), 3)], out)
		}
		rc.Do(c...)
	}
	file := writeRDB(t, e, functionRecords(t, l))

	for _, budget := range []int64{256 << 20, 0} {
		_, e2 := openLocal(t, budget)
		st, err := rdbfile.Load(bytes.NewReader(file), e2, rdbfile.LoadOptions{ChunkBytes: 512})
		if err != nil {
			t.Fatal(err)
		}
		if st.Functions != 1 || st.Keys != e.KeysOnDisk() || st.Keys != e2.KeysOnDisk() || st.Expired != 0 {
			t.Errorf("load stats %+v; the source holds %d keys, the loaded engine %d", st, e.KeysOnDisk(), e2.KeysOnDisk())
		}
		fn, ok, err := e2.SystemRecord(codec.SysFunctions)
		if err != nil || !ok {
			t.Fatalf("functions record: %v %v", ok, err)
		}
		again := writeRDB(t, e2, fn[:len(fn)-10])
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), again, 0o644); err != nil {
			t.Fatal(err)
		}
		loaded := harness.StartRedis(t, "--enable-debug-command", "yes", "--dir", dir, "--dbfilename", "dump.rdb")
		compareRedis(t, rc, loaded.Conn(t))
	}
}

// TestLoadRefusals: corrupt input fails with ErrCorrupt and leaves the
// store empty; a non-empty store is refused.
func TestLoadRefusals(t *testing.T) {
	s, e := openLocal(t, 256<<20)
	l := s.NewLocal()
	defer l.Close()
	l.Do([]byte("RPUSH"), []byte("l"), []byte("a"), []byte("b"))
	l.Do([]byte("SET"), []byte("s"), []byte(strings.Repeat("x", 1000)))
	good := writeRDB(t, e, nil)
	if _, err := rdbfile.Load(bytes.NewReader(good), e, rdbfile.LoadOptions{}); err == nil {
		t.Errorf("a load into a store holding keys was accepted")
	}
	bad := append([]byte(nil), good...)
	bad[len(bad)-20] ^= 1 // in the string's bytes: only the checksum tells
	for name, in := range map[string][]byte{"checksum": bad, "truncated": good[:len(good)-30], "empty": nil} {
		_, e2 := openLocal(t, 256<<20)
		_, err := rdbfile.Load(bytes.NewReader(in), e2, rdbfile.LoadOptions{ChunkBytes: 64})
		if !errors.Is(err, rdbfile.ErrCorrupt) {
			t.Errorf("%s: Load = %v, want ErrCorrupt", name, err)
		}
		if n := e2.KeysOnDisk(); n != 0 {
			t.Errorf("%s: %d keys kept after a failed load", name, n)
		}
	}
}

// TestLoadingRefusesCommands: while an RDB loads, commands without the
// loading flag get Redis's LOADING error; INFO still answers.
func TestLoadingRefusesCommands(t *testing.T) {
	s, _ := openLocal(t, 256<<20)
	l := s.NewLocal()
	defer l.Close()
	s.SetLoading(true)
	for _, c := range []string{"GET k", "PING", "SET k v"} {
		if out := string(l.Do(bytesArgs(c)...)); out != "-LOADING Redis is loading the dataset in memory\r\n" {
			t.Errorf("%s while loading: %q", c, out)
		}
	}
	if out := string(l.Do(bytesArgs("INFO persistence")...)); !strings.Contains(out, "loading:1\r\n") {
		t.Errorf("INFO while loading: %q", out)
	}
	s.SetLoading(false)
	if out := string(l.Do(bytesArgs("PING")...)); out != "+PONG\r\n" {
		t.Errorf("PING after loading: %q", out)
	}
}

func bytesArgs(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

// TestLoadCanceledOrCutShort: a load whose Stop is closed ends with
// ErrLoadCanceled and an empty store; a load cut short by the process's
// death (its marker left, keys written) is reported by Interrupted and
// undone by ClearInterrupted.
func TestLoadCanceledOrCutShort(t *testing.T) {
	s, e := openLocal(t, 256<<20)
	l := s.NewLocal()
	defer l.Close()
	for i := range 50 {
		l.Do([]byte("SET"), []byte("k"+strings.Repeat("x", i)), []byte("v"))
	}
	file := writeRDB(t, e, nil)

	_, e2 := openLocal(t, 256<<20)
	stop := make(chan struct{})
	close(stop)
	if _, err := rdbfile.Load(bytes.NewReader(file), e2, rdbfile.LoadOptions{Stop: stop}); !errors.Is(err, rdbfile.ErrLoadCanceled) {
		t.Fatalf("Load with Stop closed = %v", err)
	}
	if cut, err := rdbfile.Interrupted(e2); cut || err != nil || e2.KeysOnDisk() != 0 {
		t.Errorf("after a canceled load: interrupted %v (%v), %d keys", cut, err, e2.KeysOnDisk())
	}
	if _, err := rdbfile.Load(bytes.NewReader(file), e2, rdbfile.LoadOptions{}); err != nil || e2.KeysOnDisk() != 50 {
		t.Fatalf("Load = %v, %d keys", err, e2.KeysOnDisk())
	}
	if cut, _ := rdbfile.Interrupted(e2); cut {
		t.Errorf("a finished load reads as interrupted")
	}

	// The state a crash mid-load leaves: the marker on, some keys stored.
	_, e3 := openLocal(t, 256<<20)
	if err := rdbfile.MarkLoading(e3); err != nil {
		t.Fatal(err)
	}
	if _, err := e3.Update(func(tx *tiering.Tx) error { return tx.SetString(0, []byte("partial"), []byte("x"), 0) }); err != nil {
		t.Fatal(err)
	}
	if cut, err := rdbfile.Interrupted(e3); !cut || err != nil {
		t.Fatalf("Interrupted = %v, %v", cut, err)
	}
	if err := rdbfile.ClearInterrupted(e3); err != nil {
		t.Fatal(err)
	}
	if cut, _ := rdbfile.Interrupted(e3); cut || e3.KeysOnDisk() != 0 {
		t.Errorf("after ClearInterrupted: interrupted %v, %d keys", cut, e3.KeysOnDisk())
	}
}
