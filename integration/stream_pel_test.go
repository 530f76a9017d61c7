package integration

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// A cold stream's pending entries lists, read per record: embedded
// Spillway under a small maxmemory holds a stream far bigger than its hot
// tier, with two groups, several consumers and pending entries whose
// entries were deleted, next to a redis-server given the same commands.
// Every command on the PEL (XACK, XPENDING in all its forms, XCLAIM with
// each option, XAUTOCLAIM, XREADGROUP of a consumer's history, XGROUP
// DELCONSUMER, XINFO STREAM FULL) must reply as Redis's, and so must the
// group's state after each; after a kill -9 and a restart the PEL's counts
// and records are still those.

// pelSetup builds the stream: 3,000 entries of 200-byte padding, 2,800 of
// them delivered to four consumers of group g, 100 to group g2, some of
// the pending ones deleted, three acknowledged.
func pelSetup(t *testing.T, rc, sp *harness.Conn) {
	t.Helper()
	pad := strings.Repeat("p", 200)
	for _, c := range []*harness.Conn{rc, sp} {
		pipe(t, c, 3000, 250, func(i int) []string {
			return []string{"XADD", "s", strconv.Itoa(i + 1), "field", "v" + strconv.Itoa(i), "pad", pad}
		}, func(i int, r harness.Reply) error {
			if r.Str != strconv.Itoa(i+1)+"-0" {
				return fmt.Errorf("XADD %d: %s", i+1, r.String())
			}
			return nil
		})
	}
	for _, cmd := range [][]string{
		{"XGROUP", "CREATE", "s", "g", "0"},
		{"XGROUP", "CREATE", "s", "g2", "0"},
		{"XREADGROUP", "GROUP", "g", "c1", "COUNT", "800", "STREAMS", "s", ">"},
		{"XREADGROUP", "GROUP", "g", "c2", "COUNT", "800", "STREAMS", "s", ">"},
		{"XREADGROUP", "GROUP", "g", "c3", "COUNT", "700", "STREAMS", "s", ">"},
		{"XREADGROUP", "GROUP", "g", "c4", "COUNT", "500", "STREAMS", "s", ">"},
		{"XREADGROUP", "GROUP", "g2", "x", "COUNT", "100", "STREAMS", "s", ">"},
		{"XDEL", "s", "5", "6", "100", "1000", "1001", "2000", "2799"},
		{"XACK", "s", "g", "1", "2", "3"},
	} {
		want, got := exchange(rc, sp, cmd)
		if want.IsError() || !streamRepliesMatch(cmd[0], got, want) {
			t.Fatalf("setup %v:\nspillway %s\nredis    %s", cmd, harness.Trunc(got.String(), 2000), harness.Trunc(want.String(), 2000))
		}
	}
}

// pelCommands are the commands on the PEL, each compared, then the state.
var pelCommands = [][]string{
	{"XACK", "s", "g", "7", "8", "9", "5"},
	{"XACK", "s", "g", "7"},
	{"XACK", "s", "g", "1500", "1501", "99999"},
	{"XACK", "s", "nosuch", "10"},
	{"XPENDING", "s", "g"},
	{"XPENDING", "s", "g2"},
	{"XPENDING", "s", "g", "-", "+", "10"},
	{"XPENDING", "s", "g", "IDLE", "0", "-", "+", "5"},
	{"XPENDING", "s", "g", "IDLE", "100000000", "-", "+", "5"},
	{"XPENDING", "s", "g", "(10", "200", "5", "c1"},
	{"XPENDING", "s", "g", "995", "1005", "20"},
	{"XPENDING", "s", "g", "2790", "+", "100"},
	{"XPENDING", "s", "g", "+", "-", "10"},
	{"XPENDING", "s", "g", "-", "+", "0"},
	{"XPENDING", "s", "g", "-", "+", "5", "nosuch"},
	{"XPENDING", "s", "g", "-", "+", "5", "c4"},
	{"XCLAIM", "s", "g", "c5", "0", "10", "11", "12"},
	{"XCLAIM", "s", "g", "c5", "0", "13", "JUSTID"},
	{"XCLAIM", "s", "g", "c1", "0", "100"},
	{"XCLAIM", "s", "g", "c2", "0", "14", "IDLE", "5000"},
	{"XCLAIM", "s", "g", "c2", "0", "15", "TIME", "1700000000000"},
	{"XCLAIM", "s", "g", "c3", "0", "16", "RETRYCOUNT", "7"},
	{"XCLAIM", "s", "g", "c3", "0", "2950", "FORCE"},
	{"XCLAIM", "s", "g", "c3", "0", "2960"},
	{"XCLAIM", "s", "g", "c3", "0", "1001", "FORCE"},
	{"XCLAIM", "s", "g", "c4", "0", "17", "LASTID", "2990"},
	{"XCLAIM", "s", "g", "c4", "100000000", "18"},
	{"XCLAIM", "s", "g", "c4", "0", "19", "20", "JUSTID", "RETRYCOUNT", "3", "FORCE"},
	{"XAUTOCLAIM", "s", "g", "c6", "0", "0-0", "COUNT", "10"},
	{"XAUTOCLAIM", "s", "g", "c6", "0", "990", "COUNT", "5", "JUSTID"},
	{"XAUTOCLAIM", "s", "g", "c6", "0", "1995", "COUNT", "3"},
	{"XAUTOCLAIM", "s", "g", "c6", "100000000", "0-0", "COUNT", "2"},
	{"XAUTOCLAIM", "s", "g", "c6", "0", "2795", "COUNT", "100"},
	{"XREADGROUP", "GROUP", "g", "c2", "COUNT", "10", "STREAMS", "s", "0"},
	{"XREADGROUP", "GROUP", "g", "c1", "COUNT", "5", "STREAMS", "s", "99"},
	{"XREADGROUP", "GROUP", "g", "c9", "STREAMS", "s", "0"},
	{"XREADGROUP", "GROUP", "g", "c7", "COUNT", "20", "STREAMS", "s", ">"},
	{"XGROUP", "DELCONSUMER", "s", "g", "c4"},
	{"XINFO", "STREAM", "s", "FULL"},
	{"XINFO", "STREAM", "s", "FULL", "COUNT", "3"},
	{"XINFO", "CONSUMERS", "s", "g"},
	{"XDEL", "s", "12"},
	{"XREADGROUP", "GROUP", "g", "c5", "STREAMS", "s", "0"},
	{"XACK", "s", "g", "10", "11", "12", "13"},
	{"XPENDING", "s", "g", "-", "+", "5", "c5"},
}

// pelState is compared after each command and after the restart.
var pelState = [][]string{
	{"XPENDING", "s", "g"},
	{"XPENDING", "s", "g", "-", "+", "20"},
	{"XPENDING", "s", "g", "-", "+", "10", "c2"},
	{"XPENDING", "s", "g", "2980", "+", "30"},
	{"XINFO", "GROUPS", "s"},
	{"XINFO", "STREAM", "s", "FULL", "COUNT", "4"},
}

func TestStreamColdPELDiff(t *testing.T) {
	dir := t.TempDir()
	srv := harness.StartSpillway(t, dir, "--maxmemory", "1mb", "--appendfsync", "always", "--loglevel", "warning")
	ref := harness.StartRedis(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			sp, rc := srv.Conn(t), harness.MustDial(t, ref.Addr())
			setupPair(t, rc, sp, proto)
			pelSetup(t, rc, sp)
			for _, cmd := range pelState {
				streamCompare(t, sp, rc, cmd, "after the setup")
			}
			for _, cmd := range pelCommands {
				streamCompare(t, sp, rc, cmd, "on the cold PEL")
				for _, st := range pelState {
					streamCompare(t, sp, rc, st, fmt.Sprintf("after %v:", cmd))
				}
			}
			// An XACK reads the PEL's records it needs, not the PEL: a
			// bounded number of store reads, over 2,000 pending.
			before := infoInt(t, sp, "cold_store_iter_points") + infoInt(t, sp, "cold_store_gets")
			for i := 2100; i < 2110; i++ {
				streamCompare(t, sp, rc, []string{"XACK", "s", "g", strconv.Itoa(i)}, "XACK")
			}
			if cost := infoInt(t, sp, "cold_store_iter_points") + infoInt(t, sp, "cold_store_gets") - before; cost > 10*64 {
				t.Errorf("10 XACKs read %d records of the store, want at most %d", cost, 10*64)
			}
			// kill -9, restart: every acknowledged change is there, the
			// counts agreeing with the records.
			srv.Kill9()
			srv.Restart()
			sp = srv.Conn(t)
			if proto == 3 {
				if r := sp.Do("HELLO", "3"); r.Type != '%' {
					t.Fatalf("HELLO 3: %s", r.String())
				}
			}
			for _, cmd := range pelState {
				streamCompare(t, sp, rc, cmd, "after kill -9 and a restart")
			}
			for _, cmd := range [][]string{
				{"XACK", "s", "g", "2200", "2201"},
				{"XPENDING", "s", "g"},
				{"XAUTOCLAIM", "s", "g", "c8", "0", "0-0", "COUNT", "4"},
				{"XPENDING", "s", "g"},
			} {
				streamCompare(t, sp, rc, cmd, "after the restart")
			}
		})
	}
}
