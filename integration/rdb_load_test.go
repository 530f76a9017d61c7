package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// rdbLargeValues adds values large enough to span several of the loader's
// transactions (4 MiB each) and Redis's multi-node quicklists.
func rdbLargeValues() [][]string {
	var cmds [][]string
	pad := strings.Repeat("p", 40)
	for b := range 60 {
		h := []string{"HSET", "big:hash"}
		s := []string{"SADD", "big:set"}
		z := []string{"ZADD", "big:zset"}
		l := []string{"RPUSH", "big:list"}
		for i := range 1000 {
			n := strconv.Itoa(b*1000 + i)
			h = append(h, "field:"+n+pad, n)
			s = append(s, "member:"+n+pad)
			z = append(z, strconv.Itoa(b*1000+i), "m:"+n+pad)
			l = append(l, "elem:"+n+pad)
		}
		cmds = append(cmds, h, s, z, l)
	}
	cmds = append(cmds, []string{"PEXPIREAT", "big:list", strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)})
	return cmds
}

// redisRDB fills a redis-server with the dataset, saves it, and returns
// the reference connection and a copy of its RDB file.
func redisRDB(t *testing.T) (*harness.Conn, string) {
	t.Helper()
	ref := harness.StartRedis(t, "--enable-debug-command", "yes")
	rc := ref.Conn(t)
	feed(t, rdbDataset(time.Now().Add(time.Hour).UnixMilli()), rc)
	feed(t, rdbLargeValues(), rc)
	// A key that expires before the load: saved, then dropped by loaders
	// (active expiry off, so that the reference keeps it until SAVE).
	if r := rc.Do("DEBUG", "SET-ACTIVE-EXPIRE", "0"); r.IsError() {
		t.Fatalf("DEBUG SET-ACTIVE-EXPIRE: %s", r.Str)
	}
	feed(t, [][]string{{"SET", "gone", "x", "PX", "1"}}, rc)
	time.Sleep(5 * time.Millisecond)
	if r := rc.Do("SAVE"); r.Str != "OK" {
		t.Fatalf("redis SAVE: %s", r.String())
	}
	data, err := os.ReadFile(filepath.Join(ref.Dir(), "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "redis.rdb")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	rc.Do("DEL", "gone") // expired: the reference's dataset is without it
	return rc, path
}

func TestRDBLoadFromRedis(t *testing.T) {
	rc, rdbPath := redisRDB(t)
	data, _ := os.ReadFile(rdbPath)

	// At start: dump.rdb in an empty dir is loaded.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	sp := harness.StartSpillway(t, dir, "--maxmemory", "64mb")
	sc := sp.Conn(t)
	sameDataset(t, rc, sc, false)
	m, _ := harness.Info(sc, "persistence")
	if m["loading"] != "0" || m["rdb_last_load_keys_expired"] != "1" || m["rdb_last_load_keys_loaded"] == "0" {
		t.Errorf("INFO persistence after the load: %v", m)
	}
	// The store is the dataset from now on: a restart does not load the
	// file again (a key deleted stays deleted).
	sc.Do("DEL", "s:int")
	sp.Restart()
	if r := sp.Conn(t).Do("EXISTS", "s:int"); r.Int != 0 {
		t.Errorf("after a restart, the RDB file was loaded again into a non-empty store")
	}

	// Offline: --import-rdb FILE, then a start on that dir.
	dir2 := t.TempDir()
	out, err := exec.Command(harness.BuildSpillway(t), "--dir", dir2, "--import-rdb", rdbPath).CombinedOutput()
	if err != nil {
		t.Fatalf("--import-rdb: %v\n%s", err, out)
	}
	sp2 := harness.StartSpillway(t, dir2)
	sameDataset(t, rc, sp2.Conn(t), false)
}

func TestRDBLoadRefusesCorruptFile(t *testing.T) {
	_, rdbPath := redisRDB(t)
	good, _ := os.ReadFile(rdbPath)
	bin := harness.BuildSpillway(t)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"flipped byte", flip(good, len(good)/2), ""},
		{"wrong checksum", flip(good, len(good)-3), "checksum"},
		{"truncated", good[:len(good)*2/3], ""},
		{"bad signature", append([]byte("RUBIS"), good[5:]...), "not an RDB file"},
		{"newer version", append([]byte("REDIS0011"), good[9:]...), "newer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "bad.rdb")
			if err := os.WriteFile(file, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			out, err := exec.Command(bin, "--dir", dir, "--import-rdb", file).CombinedOutput()
			if err == nil {
				t.Fatalf("--import-rdb of a corrupt file succeeded:\n%s", out)
			}
			if !strings.Contains(string(out), "corrupt") || !strings.Contains(string(out), tc.want) {
				t.Errorf("--import-rdb error does not say what is wrong:\n%s", out)
			}
			// Nothing of it is kept: the dir's store is empty.
			sp := harness.StartSpillway(t, dir)
			if r := sp.Conn(t).Do("DBSIZE"); r.Int != 0 {
				t.Errorf("after a refused import, DBSIZE = %d", r.Int)
			}
			sp.Term()
			// At start, a corrupt dump.rdb stops the server with the error.
			dir = t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "--port", strconv.Itoa(harness.FreePort(t)), "--bind", "127.0.0.1", "--dir", dir)
			done := make(chan error, 1)
			var outb strings.Builder
			cmd.Stdout, cmd.Stderr = &outb, &outb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(outb.String(), "corrupt") {
					t.Errorf("start on a corrupt dump.rdb: exit %v\n%s", err, outb.String())
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("spillway still running 30 s after starting on a corrupt dump.rdb")
			}
		})
	}
}

// flip returns a copy of b with byte i inverted.
func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0xff
	return c
}

// TestRDBLoadKilledMidway: a start loading dump.rdb killed with -9 while
// clients get -LOADING, then started again, serves the whole file (what
// the first load wrote is removed and the file loaded anew); one stopped
// by SHUTDOWN while loading exits at once, without saving over the file.
func TestRDBLoadKilledMidway(t *testing.T) {
	rc, rdbPath := redisRDB(t)
	data, _ := os.ReadFile(rdbPath)
	bin := harness.BuildSpillway(t)
	for _, stop := range []string{"kill -9", "SHUTDOWN"} {
		t.Run(stop, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			port := harness.FreePort(t)
			cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "3600 1")
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			// Wait (bounded) for a LOADING reply, then stop it.
			sawLoading := false
			for i := 0; i < 2000 && !sawLoading; i++ {
				if c, err := harness.Dial("127.0.0.1:" + strconv.Itoa(port)); err == nil {
					r := c.Do("GET", "s:int")
					c.Close()
					sawLoading = strings.HasPrefix(r.Str, "LOADING")
					if !sawLoading && r.Err == nil {
						break // already loaded
					}
				}
				time.Sleep(2 * time.Millisecond)
			}
			if stop == "kill -9" {
				cmd.Process.Kill()
			} else if c, err := harness.Dial("127.0.0.1:" + strconv.Itoa(port)); err == nil {
				c.Do("SHUTDOWN")
				c.Close()
			}
			select {
			case <-exited:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatalf("spillway still running 30 s after %s during the load:\n%s", stop, out.String())
			}
			t.Logf("LOADING seen before %s: %v", stop, sawLoading)
			if now, _ := os.ReadFile(filepath.Join(dir, "dump.rdb")); string(now) != string(data) {
				t.Fatalf("dump.rdb changed by the stop during its load")
			}
			sp := harness.StartSpillway(t, dir)
			sameDataset(t, rc, sp.Conn(t), false)
		})
	}
}
