package integration

// SORT's effects beyond its reply, black box against a real redis-server
// (the replies themselves are in proxy/commands/testdata/sort.txt): the
// keyspace events of SORT ... STORE ("new", "sortstore", "del" when an
// empty result deletes the destination) and of the keys its BY and GET
// patterns read ("keymiss"), with those keys and the source demoted to
// disk; a client blocked on the destination is served by the store; WATCH
// sees the destination written or deleted. It runs on TestNotifyDiff's
// machinery (runNotifyDiff), in its three subscriber modes.

import (
	"fmt"
	"sync"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

var sortNotifyCases = []notifyCase{
	{name: "sort-store", classes: "KEAnm", steps: [][]string{
		{"RPUSH", "src", "3", "1", "2"}, {"MSET", "w_1", "30", "w_2", "10"},
		{"HSET", "h_1", "n", "one"}, {"HSET", "h_3", "n", "three"},
		{"@demote", "src", "w_1", "w_2", "h_1", "h_3"},
		{"SORT", "src"}, {"SORT", "src", "BY", "w_*"}, {"SORT_RO", "src", "BY", "w_*", "GET", "h_*->n", "GET", "#"},
		{"SORT", "src", "BY", "nosort", "GET", "nosuch_*"},
		{"SORT", "src", "STORE", "dst"}, {"SORT", "src", "DESC", "STORE", "dst"},
		{"SET", "s", "x"}, {"SORT", "src", "BY", "w_*", "GET", "h_*->n", "STORE", "s"}, {"TYPE", "s"},
		{"SORT", "nokey", "STORE", "dst"}, {"SORT", "nokey", "STORE", "dst"},
		{"SORT", "src", "LIMIT", "5", "1", "STORE", "s"}, {"EXISTS", "s"},
		{"SADD", "set", "b", "a"}, {"@demote", "set"}, {"SORT", "set", "BY", "nosort", "STORE", "set"},
		{"LRANGE", "set", "0", "-1"}, {"SORT", "str", "STORE", "dst"}, {"SET", "str", "v"}, {"SORT", "str", "STORE", "dst"},
		{"SORT", "src", "BY", "w_*", "ALPHA", "STORE", "src"}, {"LRANGE", "src", "0", "-1"},
	}},
	{name: "sort-blocked", classes: "Elg", steps: [][]string{
		{"RPUSH", "src", "hello", "hola", "aguacate", "zanzibar"}, {"@demote", "src"},
		{"@bg", "a", "BLPOP", "dst", "0"}, {"@bg", "b", "BLMPOP", "0", "1", "dst", "RIGHT", "COUNT", "2"},
		{"SORT", "src", "ALPHA", "STORE", "dst"},
		{"@read", "a"}, {"@read", "b"}, {"LRANGE", "dst", "0", "-1"},
		{"@bg", "a", "BRPOP", "dst2", "0"}, {"SORT", "nokey", "STORE", "dst2"},
		{"SORT", "src", "ALPHA", "LIMIT", "0", "1", "STORE", "dst2"}, {"@read", "a"}, {"EXISTS", "dst2"},
	}},
	{name: "sort-watch", classes: "KEA", steps: [][]string{
		{"RPUSH", "src", "2", "1"}, {"RPUSH", "dst", "x"},
		{"WATCH", "dst"}, {"SORT", "src", "STORE", "dst"}, {"MULTI"}, {"PING"}, {"EXEC"},
		{"WATCH", "dst"}, {"SORT", "nokey", "STORE", "dst"}, {"MULTI"}, {"PING"}, {"EXEC"},
		{"WATCH", "dst"}, {"SORT", "nokey", "STORE", "dst"}, {"MULTI"}, {"PING"}, {"EXEC"},
		{"WATCH", "src"}, {"SORT", "src", "STORE", "dst"}, {"SORT_RO", "src"}, {"MULTI"}, {"PING"}, {"EXEC"},
		{"MULTI"}, {"SORT", "src", "DESC", "STORE", "dst"}, {"LRANGE", "dst", "0", "-1"}, {"EXEC"},
	}},
}

// TestSortNotifyDiff compares SORT's events, blocked-client wake-ups and
// WATCH effects on redis-server and Spillway.
func TestSortNotifyDiff(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	modes := []int{2, 3, notifySelfMode}
	var refs, spws []*harness.Server
	for range modes {
		refs, spws = append(refs, harness.StartRedis(t)), append(spws, startNotifySpillway(t))
	}
	t.Run("modes", func(t *testing.T) {
		for i, proto := range modes {
			mode := fmt.Sprintf("resp%d", proto)
			if proto == notifySelfMode {
				mode = "self-resp3"
			}
			ref, spw := refs[i], spws[i]
			t.Run(mode, func(t *testing.T) {
				t.Parallel()
				for _, nc := range sortNotifyCases {
					runNotifyDiff(t, ref, spw, nc, proto, &mu, seen)
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	for _, name := range []string{"sortstore", "new", "del", "keymiss", "lpop", "rpop"} {
		if !seen[name] {
			t.Errorf("no case makes Redis send %q: the table lost coverage", name)
		}
	}
}
