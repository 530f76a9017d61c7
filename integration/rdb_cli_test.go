package integration

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// TestRDBRedisCliRdb: `redis-cli --rdb FILE` against Spillway (REPLCONF
// rdb-only, then SYNC) gets the whole dataset as an RDB file that a
// redis-server loads with every key equal to a redis-server fed the same
// commands.
func TestRDBRedisCliRdb(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not found on PATH: " + harness.RedisMissing)
	}
	ref := harness.StartRedis(t, "--enable-debug-command", "yes")
	sp := harness.StartSpillway(t, "")
	rc, sc := ref.Conn(t), sp.Conn(t)
	feed(t, rdbDataset(time.Now().Add(time.Hour).UnixMilli()), rc, sc)
	file := filepath.Join(t.TempDir(), "cli.rdb")
	cmd := exec.Command(cli, "-p", strconv.Itoa(sp.Port()), "--rdb", file)
	done := make(chan []byte, 1)
	go func() {
		out, err := cmd.CombinedOutput()
		if err != nil {
			out = append(out, []byte("\nexit: "+err.Error())...)
			done <- out
			return
		}
		done <- nil
	}()
	select {
	case out := <-done:
		if out != nil {
			t.Fatalf("redis-cli --rdb: %s", out)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("redis-cli --rdb still running after 60 s")
	}
	sameDataset(t, rc, loadInRedis(t, file), true)
}
