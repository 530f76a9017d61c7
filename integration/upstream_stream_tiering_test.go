package integration

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// Streams in upstream mode: a stream with consumer groups, consumers and
// pending entries is demoted into Spillway's store (on demand with DEBUG
// DEMOTE, or by the demoter when the upstream is over its budget) and every
// command on it must then answer as a redis-server alone holding the same
// stream: reads answered from the store or after a reload, writes after a
// reload, blocking reads woken by another client's XADD.

// streamTimeTol is how far apart (ms) two servers' time-dependent figures
// may be: idle times, delivery and seen times of the same command sent to
// both within milliseconds, on a loaded machine.
const streamTimeTol = 5000

// streamTimeKeys are the XINFO fields holding times.
var streamTimeKeys = map[string]bool{"idle": true, "seen-time": true, "delivery-time": true, "active-time": true, "inactive": true}

// streamRepliesMatch reports whether a and b, two servers' replies to cmd,
// are the same but for times: integers after an XINFO time field, idle
// times of XPENDING's extended form, and absolute millisecond times (over
// 10^12: XINFO STREAM FULL's delivery times) may differ by streamTimeTol.
func streamRepliesMatch(cmd string, a, b harness.Reply) bool {
	if a.Err != nil || b.Err != nil {
		return false
	}
	if string(a.Raw) == string(b.Raw) {
		return true
	}
	if ok, _ := compareReplies([]string{cmd}, a, b); ok {
		return true // TTLs within ttlTolerance
	}
	return streamMatch(strings.ToLower(cmd), a, b, false)
}

func streamMatch(cmd string, a, b harness.Reply, timeField bool) bool {
	if a.Type != b.Type || len(a.Elems) != len(b.Elems) || a.Null != b.Null {
		return false
	}
	if a.Type == ':' {
		d := a.Int - b.Int
		if d < 0 {
			d = -d
		}
		timeLike := timeField || (a.Int > 1e12 && b.Int > 1e12)
		return d == 0 || timeLike && a.Int >= 0 && b.Int >= 0 && d <= streamTimeTol
	}
	if len(a.Elems) == 0 {
		return string(a.Raw) == string(b.Raw)
	}
	// XPENDING's extended form: [id, consumer, idle, deliveries].
	xpendingEntry := cmd == "xpending" && len(a.Elems) == 4 && a.Elems[0].Type == '$' && a.Elems[2].Type == ':'
	for i := range a.Elems {
		tf := xpendingEntry && i == 2
		if i > 0 && (a.Elems[i-1].Type == '$' || a.Elems[i-1].Type == '+') && streamTimeKeys[a.Elems[i-1].Str] {
			tf = true
		}
		if !streamMatch(cmd, a.Elems[i], b.Elems[i], tf) {
			return false
		}
	}
	return true
}

// streamSetup is the stream both servers are given: entries under several
// field sets (so Redis's nodes get different master fields) with some
// deleted, two groups, consumers with pending entries (one claimed twice,
// one consumer created empty), a NOACK read and a TTL.
func streamSetup() [][]string {
	var cmds [][]string
	for i := 1; i <= 260; i++ {
		id := strconv.Itoa(i) + "-1"
		switch {
		case i%7 == 0:
			cmds = append(cmds, []string{"XADD", "s", id, "other", strconv.Itoa(i)})
		case i%50 == 0:
			cmds = append(cmds, []string{"XADD", "s", id, "big", strings.Repeat("x", 300+i)})
		default:
			cmds = append(cmds, []string{"XADD", "s", id, "a", strconv.Itoa(i), "b", "v" + strconv.Itoa(i*3)})
		}
	}
	return append(cmds,
		[]string{"XDEL", "s", "3-1", "4-1", "120-1", "200-1"},
		[]string{"XGROUP", "CREATE", "s", "g1", "0"},
		[]string{"XGROUP", "CREATE", "s", "g2", "150-1", "ENTRIESREAD", "140"},
		[]string{"XGROUP", "CREATECONSUMER", "s", "g2", "idle-one"},
		[]string{"XREADGROUP", "GROUP", "g1", "alice", "COUNT", "20", "STREAMS", "s", ">"},
		[]string{"XREADGROUP", "GROUP", "g1", "bob", "COUNT", "15", "STREAMS", "s", ">"},
		[]string{"XACK", "s", "g1", "1-1", "2-1", "9-1"},
		[]string{"XCLAIM", "s", "g1", "carol", "0", "5-1", "6-1"},
		[]string{"XCLAIM", "s", "g1", "carol", "0", "5-1"},
		[]string{"XREADGROUP", "GROUP", "g1", "alice", "NOACK", "COUNT", "5", "STREAMS", "s", ">"},
		[]string{"XREADGROUP", "GROUP", "g2", "zed", "COUNT", "4", "STREAMS", "s", ">"},
		[]string{"PEXPIRE", "s", "100000000"},
	)
}

// streamReads are the read commands compared on a cold stream.
var streamReads = [][]string{
	{"XLEN", "s"},
	{"XRANGE", "s", "-", "+"},
	{"XRANGE", "s", "-", "+", "COUNT", "7"},
	{"XRANGE", "s", "(5-1", "30-1"},
	{"XRANGE", "s", "118", "122"},
	{"XREVRANGE", "s", "+", "-", "COUNT", "9"},
	{"XREVRANGE", "s", "100", "50"},
	{"XRANGE", "s", "100000", "+"},
	{"XINFO", "STREAM", "s"},
	{"XINFO", "STREAM", "s", "FULL"},
	{"XINFO", "STREAM", "s", "FULL", "COUNT", "3"},
	{"XINFO", "GROUPS", "s"},
	{"XINFO", "CONSUMERS", "s", "g1"},
	{"XINFO", "CONSUMERS", "s", "g2"},
	{"XINFO", "CONSUMERS", "s", "nosuch"},
	{"XPENDING", "s", "g1"},
	{"XPENDING", "s", "g1", "-", "+", "100"},
	{"XPENDING", "s", "g1", "-", "+", "100", "carol"},
	{"XPENDING", "s", "g1", "IDLE", "0", "-", "+", "10"},
	{"XPENDING", "s", "g1", "IDLE", "100000000", "-", "+", "10"},
	{"XPENDING", "s", "g1", "(20-1", "+", "5", "alice"},
	{"XPENDING", "s", "g2", "(10-1", "+", "3"},
	{"XPENDING", "s", "nosuch"},
	{"XREAD", "COUNT", "5", "STREAMS", "s", "0"},
	{"XREAD", "STREAMS", "s", "255-0"},
	{"XREAD", "COUNT", "3", "STREAMS", "s", "$"},
	{"TYPE", "s"},
	{"OBJECT", "ENCODING", "s"},
	{"EXISTS", "s"},
	{"PTTL", "s"},
	{"GET", "s"},
	{"HGET", "s", "f"},
}

// streamWrites are the write commands applied to a cold stream, each
// followed by a comparison of the whole stream.
var streamWrites = [][]string{
	{"XADD", "s", "300-1", "k", "v"},
	{"XADD", "s", "NOMKSTREAM", "301-1", "k", "v2"},
	{"XADD", "s", "5-1", "too", "small"},
	{"XDEL", "s", "10-1", "11-1", "999-1"},
	{"XACK", "s", "g1", "12-1", "13-1", "30-1"},
	{"XCLAIM", "s", "g1", "dave", "0", "14-1", "15-1"},
	{"XCLAIM", "s", "g1", "dave", "0", "16-1", "JUSTID"},
	{"XCLAIM", "s", "g1", "dave", "0", "17-1", "IDLE", "5000"},
	{"XCLAIM", "s", "g1", "dave", "0", "18-1", "TIME", "1700000000000", "RETRYCOUNT", "9"},
	{"XCLAIM", "s", "g1", "dave", "0", "250-1", "FORCE", "LASTID", "255-1"},
	{"XCLAIM", "s", "g1", "dave", "0", "4-1", "FORCE"},
	{"XCLAIM", "s", "g1", "dave", "100000000", "19-1"},
	{"XAUTOCLAIM", "s", "g1", "erin", "0", "0-0", "COUNT", "5"},
	{"XAUTOCLAIM", "s", "g1", "erin", "0", "0-0", "COUNT", "3", "JUSTID"},
	{"XGROUP", "SETID", "s", "g2", "5-1", "ENTRIESREAD", "3"},
	{"XGROUP", "CREATECONSUMER", "s", "g1", "frank"},
	{"XGROUP", "DELCONSUMER", "s", "g1", "bob"},
	{"XGROUP", "CREATE", "s", "g3", "$"},
	{"XGROUP", "CREATE", "s", "g3", "$"},
	{"XGROUP", "DESTROY", "s", "g3"},
	{"XREADGROUP", "GROUP", "g2", "zed", "COUNT", "3", "STREAMS", "s", ">"},
	{"XREADGROUP", "GROUP", "g1", "alice", "COUNT", "3", "STREAMS", "s", "0"},
	{"XREADGROUP", "GROUP", "nosuch", "alice", "STREAMS", "s", ">"},
	{"XTRIM", "s", "MINID", "20"},
	{"XTRIM", "s", "MAXLEN", "~", "150"},
	{"XADD", "s", "MAXLEN", "200", "302-1", "k", "v3"},
	{"XSETID", "s", "999-1", "ENTRIESADDED", "10000", "MAXDELETEDID", "500-1"},
	{"XADD", "s", "1000-*", "a", "b"},
	{"LPUSH", "s", "x"},
	{"RENAME", "s", "s2"},
	{"XLEN", "s2"},
	{"RENAME", "s2", "s"},
	{"COPY", "s", "s3"},
	{"XINFO", "STREAM", "s3", "FULL"},
	{"DEL", "s3"},
	{"PERSIST", "s"},
	{"XINFO", "STREAM", "s", "FULL"},
	{"DEL", "s"},
	{"EXISTS", "s"},
}

// streamState is what is compared after each write.
var streamState = [][]string{
	{"XINFO", "STREAM", "s", "FULL"},
	{"XPENDING", "s", "g1", "-", "+", "1000"},
	{"XRANGE", "s", "-", "+"},
}

// streamDemote demotes key on Spillway and checks it left the upstream.
func streamDemote(t *testing.T, sp, up *harness.Conn, key string) {
	t.Helper()
	if r := sp.Do("DEBUG", "DEMOTE", key); r.IsError() {
		t.Fatalf("DEBUG DEMOTE %s: %s", key, r.String())
	}
	if r := up.Do("EXISTS", key); r.Int != 0 {
		t.Fatalf("%s is still in the upstream after DEBUG DEMOTE", key)
	}
}

// streamCompare sends cmd to both servers and fails on a difference.
func streamCompare(t *testing.T, sp, rc *harness.Conn, cmd []string, when string) {
	t.Helper()
	want, got := exchange(rc, sp, cmd)
	if !streamRepliesMatch(cmd[0], got, want) {
		t.Fatalf("%s %v:\nspillway %s\nredis    %s", when, cmd, harness.Trunc(got.String(), 3000), harness.Trunc(want.String(), 3000))
	}
}

// TestUpstreamStreamColdCommands builds the same stream in a redis-server
// and in Spillway fronting another, demotes it into Spillway's store before
// every command, and compares each read (answered from the store or after
// a reload), then each write (after a reload) followed by the whole
// stream's state, in RESP2 and RESP3.
func TestUpstreamStreamColdCommands(t *testing.T) {
	p := startUpstreamPair(t, "64mb")
	ref := harness.StartRedis(t)
	up := harness.MustDial(t, p.up.Addr())
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			sp, rc := harness.MustDial(t, p.spw.Addr()), harness.MustDial(t, ref.Addr())
			setupPair(t, rc, sp, proto)
			for _, cmd := range streamSetup() {
				want, got := exchange(rc, sp, cmd)
				if want.IsError() || !streamRepliesMatch(cmd[0], got, want) {
					t.Fatalf("setup %v:\nspillway %s\nredis    %s", cmd, got.String(), want.String())
				}
			}
			streamDemote(t, sp, up, "s")
			if cold := upstreamStats(t, sp)["cold_keys"]; cold != 1 {
				t.Fatalf("cold_keys = %d after demoting the stream", cold)
			}
			for _, cmd := range streamState {
				streamCompare(t, sp, rc, cmd, "after the demotion")
			}
			// Reads answered from the store (the embedded handlers), then
			// reads that reload the stream first (promote-min-hits 1).
			for _, hits := range []string{"1000000", "1"} {
				if r := sp.Do("CONFIG", "SET", "promote-min-hits", hits); r.Str != "OK" {
					t.Fatalf("CONFIG SET promote-min-hits: %s", r.String())
				}
				before := upstreamStats(t, sp)
				for _, cmd := range streamReads {
					streamDemote(t, sp, up, "s")
					streamCompare(t, sp, rc, cmd, "cold read (promote-min-hits "+hits+")")
				}
				after := upstreamStats(t, sp)
				served, reloaded := after["cold_reads"]-before["cold_reads"], after["promotions"]-before["promotions"]
				// XREAD is a blocking command: it always reloads.
				xreads := int64(0)
				for _, cmd := range streamReads {
					if cmd[0] == "XREAD" {
						xreads++
					}
				}
				if hits == "1" && reloaded < 10 || hits != "1" && (served < 10 || reloaded != xreads) {
					t.Fatalf("promote-min-hits %s: %d reads served from the store, %d reloads", hits, served, reloaded)
				}
			}
			for _, cmd := range streamWrites {
				if sp.Do("EXISTS", "s").Int == 1 {
					streamDemote(t, sp, up, "s")
				}
				streamCompare(t, sp, rc, cmd, "write to the cold stream")
				for _, st := range streamState {
					streamCompare(t, sp, rc, st, fmt.Sprintf("after %v:", cmd))
				}
			}
		})
	}
}

// TestUpstreamStreamColdBlocking: XREAD and XREADGROUP BLOCK on a cold
// stream block (the stream is reloaded first) and are woken by another
// client's XADD with the entry, as on redis-server; a blocked XREADGROUP
// gets Redis's error when another client deletes the cold stream.
func TestUpstreamStreamColdBlocking(t *testing.T) {
	p := startUpstreamPair(t, "64mb")
	ref := harness.StartRedis(t)
	up := harness.MustDial(t, p.up.Addr())
	sp, rc := harness.MustDial(t, p.spw.Addr()), harness.MustDial(t, ref.Addr())
	for _, cmd := range append(streamSetup(), []string{"XGROUP", "CREATE", "s", "gb", "$"}) {
		exchange(rc, sp, cmd)
	}
	type step struct {
		block, wake []string
	}
	for _, st := range []step{
		{[]string{"XREAD", "BLOCK", "10000", "STREAMS", "s", "$"}, []string{"XADD", "s", "400-1", "w", "1"}},
		{[]string{"XREADGROUP", "GROUP", "gb", "alice", "BLOCK", "10000", "STREAMS", "s", ">"}, []string{"XADD", "s", "401-1", "w", "2"}},
		{[]string{"XREADGROUP", "GROUP", "gb", "alice", "BLOCK", "10000", "STREAMS", "s", ">"}, []string{"DEL", "s"}},
	} {
		exchange(rc, sp, []string{"XGROUP", "SETID", "s", "gb", "$"})
		streamDemote(t, sp, up, "s")
		var replies [2]harness.Reply
		for i, addr := range []string{ref.Addr(), p.spw.Addr()} {
			b, w := harness.MustDial(t, addr), harness.MustDial(t, addr)
			b.Timeout = 20 * time.Second
			if err := b.Send(st.block...); err != nil {
				t.Fatal(err)
			}
			if err := b.Flush(); err != nil {
				t.Fatal(err)
			}
			// The blocked client shows in CLIENT LIST's blocked count
			// (INFO clients) before the waker runs: bounded wait.
			blocked := false
			for range 200 {
				info, err := harness.Info(w, "clients")
				if err != nil {
					t.Fatal(err)
				}
				if info["blocked_clients"] == "1" {
					blocked = true
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if !blocked {
				t.Fatalf("%v never blocked on %s", st.block, addr)
			}
			if r := w.Do(st.wake...); r.IsError() {
				t.Fatalf("%v: %s", st.wake, r.String())
			}
			replies[i] = b.Read()
		}
		if !streamRepliesMatch(st.block[0], replies[1], replies[0]) {
			t.Fatalf("%v woken by %v:\nspillway %s\nredis    %s", st.block, st.wake, replies[1].String(), replies[0].String())
		}
		if st.wake[0] == "DEL" {
			break
		}
		for _, cmd := range streamState {
			streamCompare(t, sp, rc, cmd, fmt.Sprintf("after %v:", st.block))
		}
	}
}

// TestUpstreamStreamDemotedByBudget: a stream bigger than the upstream's
// budget is demoted by the demoter itself (no DEBUG DEMOTE), groups and
// pending entries with it, and reads and writes then answer as
// redis-server's for the same stream while the demoter keeps moving it.
func TestUpstreamStreamDemotedByBudget(t *testing.T) {
	p := startUpstreamPair(t, "3mb")
	ref := harness.StartRedis(t)
	up := harness.MustDial(t, p.up.Addr())
	sp, rc := harness.MustDial(t, p.spw.Addr()), harness.MustDial(t, ref.Addr())
	sp.Timeout, rc.Timeout = time.Minute, time.Minute
	const entries = 40_000
	var cmds [][]string
	for i := 1; i <= entries; i++ {
		cmds = append(cmds, []string{"XADD", "big", strconv.Itoa(i) + "-1", "field", strings.Repeat("v", 40) + strconv.Itoa(i)})
	}
	cmds = append(cmds,
		[]string{"XGROUP", "CREATE", "big", "g", "0"},
		[]string{"XREADGROUP", "GROUP", "g", "c1", "COUNT", "500", "STREAMS", "big", ">"},
		[]string{"XREADGROUP", "GROUP", "g", "c2", "COUNT", "300", "STREAMS", "big", ">"},
		[]string{"XACK", "big", "g", "1-1", "2-1", "3-1", "600-1"})
	for _, c := range []*harness.Conn{sp, rc} {
		pipe(t, c, len(cmds), 500, func(i int) []string { return cmds[i] }, func(i int, r harness.Reply) error {
			if r.IsError() {
				return fmt.Errorf("%v: %s", cmds[i], r.String())
			}
			return nil
		})
	}
	demoted := false
	for range 300 {
		if up.Do("EXISTS", "big").Int == 0 {
			demoted = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !demoted {
		t.Fatalf("the stream was not demoted in 30 s (upstream used_memory %s)", up.Do("INFO", "memory").Str)
	}
	for _, cmd := range [][]string{
		{"XLEN", "big"},
		{"XINFO", "STREAM", "big"},
		{"XINFO", "GROUPS", "big"},
		{"XINFO", "CONSUMERS", "big", "g"},
		{"XPENDING", "big", "g"},
		{"XPENDING", "big", "g", "-", "+", "1000"},
		{"XRANGE", "big", "20000", "+", "COUNT", "50"},
		{"XREVRANGE", "big", "+", "-", "COUNT", "50"},
		{"XADD", "big", "50000-1", "field", "new"},
		{"XREADGROUP", "GROUP", "g", "c1", "COUNT", "10", "STREAMS", "big", ">"},
		{"XACK", "big", "g", "801-1", "802-1"},
		{"XINFO", "STREAM", "big", "FULL", "COUNT", "20"},
		{"XPENDING", "big", "g", "-", "+", "1000"},
		{"XLEN", "big"},
	} {
		streamCompare(t, sp, rc, cmd, "budget-demoted stream:")
	}
	if st := upstreamStats(t, sp); st["demotions"] == 0 {
		t.Fatalf("INFO tiering counts no demotion: %v", st)
	}
}

// TestUpstreamStreamBlockThenWrite: as in Redis, a blocking stream read
// sent on one connection just before another client's DEL, SET or
// FLUSHALL of the stream (sent without waiting) blocks first and is then
// woken with Redis's error; an XREAD BLOCK ... $ sent before a DEL and an
// XADD gets the XADD's entry (it waited for ever when the DEL and XADD
// overtook it). The suite's stream-cgroups tests, on fresh connections,
// for a stream clients block on (one did in the last second: the first
// blocking command ever on a key still races a write sent right after).
func TestUpstreamStreamBlockThenWrite(t *testing.T) {
	p := startUpstreamPair(t, "64mb")
	r := harness.MustDial(t, p.spw.Addr())
	if res := r.Do("XREAD", "BLOCK", "5", "STREAMS", "s", "$"); !res.Null {
		t.Fatalf("XREAD BLOCK 5 of a missing stream: %s", res.String())
	}
	type round struct {
		block  []string
		writes [][]string
		want   string // the blocked client's reply, or its error's start
	}
	rounds := []round{
		{[]string{"XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">"},
			[][]string{{"DEL", "s"}}, "UNBLOCKED the stream key no longer exists"},
		{[]string{"XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">"},
			[][]string{{"SET", "s", "v"}}, "UNBLOCKED the stream key no longer exists"},
		{[]string{"XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", "s", ">"},
			[][]string{{"FLUSHALL"}}, "UNBLOCKED the stream key no longer exists"},
		{[]string{"XREAD", "BLOCK", "0", "STREAMS", "s", "$"},
			[][]string{{"DEL", "s"}, {"XADD", "s", "667", "f", "v"}}, "667-0"},
	}
	for i := range 40 {
		rd := rounds[i%len(rounds)]
		for _, cmd := range [][]string{{"DEL", "s"}, {"XADD", "s", "666", "f", "v"}, {"XGROUP", "CREATE", "s", "g", "$"}} {
			if res := r.Do(cmd...); res.IsError() {
				t.Fatalf("%v: %s", cmd, res.String())
			}
		}
		b := harness.MustDial(t, p.spw.Addr())
		b.Timeout = 20 * time.Second
		if res := b.Do("PING"); res.Str != "PONG" { // accepted, as the suite's SELECT makes sure
			t.Fatalf("PING: %s", res.String())
		}
		if err := b.Send(rd.block...); err != nil {
			t.Fatal(err)
		}
		if err := b.Flush(); err != nil {
			t.Fatal(err)
		}
		for _, w := range rd.writes {
			if res := r.Do(w...); res.IsError() {
				t.Fatalf("%v: %s", w, res.String())
			}
		}
		got := b.Read()
		text := got.Str
		if len(got.Elems) == 1 && len(got.Elems[0].Elems) == 2 && len(got.Elems[0].Elems[1].Elems) > 0 {
			text = got.Elems[0].Elems[1].Elems[0].Elems[0].Str // the first entry's ID
		}
		if !strings.HasPrefix(text, rd.want) {
			t.Fatalf("round %d: %v then %v: got %s, want %s", i, rd.block, rd.writes, got.String(), rd.want)
		}
		b.Close()
	}
}
