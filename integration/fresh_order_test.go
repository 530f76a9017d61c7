package integration

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// A connection opened and used at once (Redis's tests' deferring clients,
// an application's new pool connection) sends a blocking XREADGROUP, and
// an older connection then deletes, overwrites, flushes or swaps the
// stream without waiting for anything in between. Redis runs commands in
// the order their bytes arrive: the XREADGROUP blocks first and the write
// unblocks it with "-UNBLOCKED the stream key no longer exists". Spillway
// runs each connection in its own goroutine; the write waits for the
// fresh connection's input (awaitFresh), so the order, and the reply, are
// Redis's. Each pattern runs freshOrderRounds times on both servers: one
// wrong order fails the test.

const freshOrderRounds = 10

// freshOrderSpinners are goroutines of the test process that keep the
// cores busy while the rounds run.
const freshOrderSpinners = 4

// freshOrderRedisGap separates the fresh connection's command from the
// write on redis-server (see freshOrderRound); Spillway gets none.
const freshOrderRedisGap = 500 * time.Microsecond

// freshOrderCases are Redis's stream-cgroups patterns: setup commands,
// then the write sent right after the fresh client's XREADGROUP.
var freshOrderCases = []struct {
	name  string
	write [][]string // sent back to back on the old connection, replies read after
}{
	{"del", [][]string{{"DEL", "{k}"}}},
	{"set", [][]string{{"SET", "{k}", "v"}}},
	{"multi_set", [][]string{{"MULTI"}, {"SET", "{k}", "v"}, {"EXEC"}}},
	{"flushall", [][]string{{"FLUSHALL"}}},
	{"swapdb", [][]string{{"SWAPDB", "0", "1"}}},
}

func TestFreshConnectionOrder(t *testing.T) {
	targets := []struct {
		name  string
		start func(*testing.T) *harness.Server
		gap   time.Duration
	}{
		{"redis", func(t *testing.T) *harness.Server { return harness.StartRedis(t) }, freshOrderRedisGap},
		{"spillway", func(t *testing.T) *harness.Server { return harness.StartSpillway(t, "") }, 0},
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			srv := tg.start(t)
			old := srv.Conn(t)
			// Load the machine's cores, as the suite's runs share them:
			// on an idle machine the fresh connection's goroutine runs
			// first almost always, with or without the ordering.
			stop := make(chan struct{})
			defer close(stop)
			for range freshOrderSpinners {
				go spinUntil(stop)
			}
			for _, tc := range freshOrderCases {
				t.Run(tc.name, func(t *testing.T) {
					for round := range freshOrderRounds {
						freshOrderRound(t, srv, old, tc.write, tg.gap, round%2 == 1, "fo:"+tc.name+":"+strconv.Itoa(round))
					}
				})
			}
		})
	}
}

func freshOrderRound(t *testing.T, srv *harness.Server, old *harness.Conn, write [][]string, gap time.Duration, ping bool, key string) {
	t.Helper()
	for _, db := range []string{"1", "0"} {
		if r := old.Do("SELECT", db); r.String() != "OK" {
			t.Fatalf("SELECT %s: %s", db, r.String())
		}
		old.Do("FLUSHDB")
	}
	if r := old.Do("XADD", key, "1-1", "f", "v"); r.Err != nil || r.Type == '-' {
		t.Fatalf("XADD: %s", r.String())
	}
	if r := old.Do("XGROUP", "CREATE", key, "g", "$"); r.String() != "OK" {
		t.Fatalf("XGROUP CREATE: %s", r.String())
	}
	fresh := srv.Conn(t)
	defer fresh.Close()
	fresh.Timeout = 2 * blkWait
	if ping {
		// As Redis's deferring clients do (a PING, or SELECT without
		// --singledb): the racing command is the connection's second.
		if r := fresh.Do("PING"); r.String() != "PONG" {
			t.Fatalf("PING: %s", r.String())
		}
	} else {
		// The order is only defined once the server has accepted the
		// connection: until then it cannot know of it (Redis accepts in
		// its event loop before it reads the older connection's next
		// command).
		freshOrderAccepted(t, old, fresh)
	}
	if err := fresh.Send("XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0", "STREAMS", key, ">"); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Flush(); err != nil {
		t.Fatal(err)
	}
	// Redis itself orders two commands only when they reach it in
	// different turns of its event loop (epoll reports ready connections
	// in no fixed order): it gets a pause shorter than a turn on a loaded
	// machine, as between two commands of Redis's Tcl tests. Spillway
	// orders them even back to back.
	if gap > 0 {
		time.Sleep(gap)
	}
	for _, args := range write {
		cmd := make([]string, len(args))
		for i, a := range args {
			cmd[i] = strings.ReplaceAll(a, "{k}", key)
		}
		if err := old.Send(cmd...); err != nil {
			t.Fatal(err)
		}
	}
	if err := old.Flush(); err != nil {
		t.Fatal(err)
	}
	for range write {
		if r := old.Read(); r.Err != nil || r.Type == '-' {
			t.Fatalf("%v: %s", write, r.String())
		}
	}
	r := fresh.Read()
	if r.Err != nil {
		t.Fatalf("XREADGROUP: %v", r.Err)
	}
	if got := r.String(); !strings.Contains(got, "no longer exists") {
		t.Fatalf("%s: XREADGROUP sent before %v on a new connection (after a PING: %v) answered %q, want the UNBLOCKED error (it must block first)", key, write, ping, got)
	}
}

// freshOrderAccepted waits (bounded) until CLIENT LIST on old shows
// fresh's connection.
func freshOrderAccepted(t *testing.T, old, fresh *harness.Conn) {
	t.Helper()
	addr := "addr=" + fresh.NetConn().LocalAddr().String() + " "
	for range 500 {
		if strings.Contains(old.Do("CLIENT", "LIST").Str, addr) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("the server did not list %s within a second", addr)
}

// spinUntil burns CPU until stop is closed, yielding now and then.
func spinUntil(stop <-chan struct{}) {
	x := uint64(1)
	for {
		select {
		case <-stop:
			return
		default:
		}
		for range 1 << 16 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if x == 0 {
			runtime.Gosched()
		}
	}
}
