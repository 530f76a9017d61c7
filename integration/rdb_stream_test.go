package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// TestRDBStreamsToRedis: Spillway's SAVE writes streams (nodes with
// tombstones, groups, consumers, pending entries, empty streams, expiry)
// that a redis-server loads; what it loads equals Spillway's streams, and
// a redis-server fed the same commands (delivery times are the dataset's:
// XCLAIM TIME; seen times are each server's clock). The writer reads
// every stream from the store, node by node; with maxmemory 1mb the big
// stream's entries are not even in memory.
func TestRDBStreamsToRedis(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{{"hot", nil}, {"cold", []string{"--maxmemory", "1mb"}}} {
		t.Run(tc.name, func(t *testing.T) {
			ref := harness.StartRedis(t, "--enable-debug-command", "yes")
			sp := harness.StartSpillway(t, "", tc.args...)
			rc, sc := ref.Conn(t), sp.Conn(t)
			feed(t, streamDataset("st"), rc, sc)
			for _, c := range []*harness.Conn{rc, sc} {
				pipe(t, c, 3000, 250, func(i int) []string {
					return []string{"XADD", "st:huge", strconv.Itoa(i+1) + "-1", "f", strconv.Itoa(i), "pad", strings.Repeat("p", 500)}
				}, func(int, harness.Reply) error { return nil })
				feed(t, [][]string{{"XDEL", "st:huge", "7-1", "500-1"}, {"XGROUP", "CREATE", "st:huge", "g", "0"},
					{"XREADGROUP", "GROUP", "g", "c", "COUNT", "20", "STREAMS", "st:huge", ">"},
					{"XCLAIM", "st:huge", "g", "c", "0", "1-1", "2-1", "3-1", "TIME", "1600000000000"}}, c)
			}
			if tc.args != nil {
				// The huge stream's entries and nodes left memory.
				if m, _ := harness.Info(sc, "tiering"); m["demotions"] == "0" || m["demotions"] == "" {
					t.Fatalf("no stream was demoted: %v", m)
				}
			}
			if r := sc.Do("SAVE"); r.Str != "OK" {
				t.Fatalf("SAVE: %s", r.String())
			}
			lc := loadInRedis(t, filepath.Join(sp.Dir(), "dump.rdb"))
			for _, db := range []int{0, 2} {
				sameStreams(t, sc, lc, db, false, false)
				sameStreams(t, rc, lc, db, true, false)
			}
		})
	}
}

// TestRDBStreamsFromRedis: an RDB redis-server wrote with streams loads
// into Spillway, whose streams then equal redis-server's; one of 6 MB
// (more than a load transaction's 4 MiB) is loaded in several
// transactions. XADD, XREADGROUP, XCLAIM and XTRIM go on from there as on
// the reference.
func TestRDBStreamsFromRedis(t *testing.T) {
	ref := harness.StartRedis(t, "--enable-debug-command", "yes")
	rc := ref.Conn(t)
	feed(t, streamDataset("st"), rc)
	pipe(t, rc, 10000, 500, func(i int) []string {
		return []string{"XADD", "st:huge", strconv.Itoa(i+1) + "-1", "f", strconv.Itoa(i), "pad", strings.Repeat("p", 600)}
	}, func(int, harness.Reply) error { return nil })
	feed(t, [][]string{{"XDEL", "st:huge", "7-1", "5000-1"}, {"XGROUP", "CREATE", "st:huge", "g", "0"},
		{"XREADGROUP", "GROUP", "g", "c", "COUNT", "20", "STREAMS", "st:huge", ">"}, {"PEXPIREAT", "st:huge", "4102444800000"}}, rc)
	if r := rc.Do("SAVE"); r.Str != "OK" {
		t.Fatalf("redis SAVE: %s", r.String())
	}
	data, err := os.ReadFile(filepath.Join(ref.Dir(), "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dump.rdb"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	sp := harness.StartSpillway(t, dir)
	sc := sp.Conn(t)
	for _, db := range []int{0, 2} {
		sameStreams(t, rc, sc, db, false, false)
	}
	sc.Do("CONFIG", "SET", "stream-node-max-entries", "5") // the setting is not in the file
	more := [][]string{
		{"XADD", "st:big", "200-1", "f", "1"}, {"XADD", "st:big", "200-2", "g", "2"},
		{"XREADGROUP", "GROUP", "g1", "alice", "STREAMS", "st:big", ">"},
		{"XCLAIM", "st:big", "g1", "bob", "0", "200-1", "200-2", "TIME", "1600000000000"},
		{"XTRIM", "st:big", "MAXLEN", "~", "40"},
		{"XADD", "st:empty", "6-1", "a", "b"},
		{"XADD", "st:huge", "20000-1", "f", "x"}, {"XTRIM", "st:huge", "MINID", "9000"},
		{"XREADGROUP", "GROUP", "g", "d", "COUNT", "3", "STREAMS", "st:huge", ">"},
	}
	feed(t, more, rc, sc)
	sameStreams(t, rc, sc, 0, true, false) // the read's delivery times are each server's clock
}
