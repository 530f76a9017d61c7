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
	"math/rand/v2"
	"strconv"
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
				for _, nc := range append(sortNotifyCases, sortColdCase()) {
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

// sortColdCase sorts a list, a set and a sorted set of 1,500 elements
// each by 4,500 weight keys and hash fields, everything demoted to disk
// first on Spillway, with no events (the replies are what is compared).
// The weights are distinct, so Redis's order is fully determined.
func sortColdCase() notifyCase {
	const n = 1500
	rng := rand.New(rand.NewPCG(7, 21))
	weights := rng.Perm(10 * n)
	var steps [][]string
	push := []string{"RPUSH", "list"}
	add := []string{"SADD", "set"}
	zadd := []string{"ZADD", "zset"}
	mset := []string{"MSET"}
	demote := []string{"@demote", "list", "set", "zset"}
	for i := range n {
		id := strconv.Itoa(i)
		w := strconv.Itoa(weights[i])
		if i%3 == 0 {
			w += "." + strconv.Itoa(i%7) // some floats
		}
		push = append(push, id)
		add = append(add, id)
		zadd = append(zadd, strconv.Itoa(weights[n+i]), "m"+id)
		mset = append(mset, "w_"+id, w, "w_m"+id, strconv.Itoa(weights[2*n+i]))
		steps = append(steps, []string{"HSET", "h_" + id, "w", strconv.Itoa(weights[3*n+i]), "name", "n" + w})
		demote = append(demote, "w_"+id, "w_m"+id, "h_"+id)
	}
	steps = append(steps, push, add, zadd, mset, demote,
		[]string{"SORT", "list", "BY", "w_*", "LIMIT", "10", "20", "GET", "#", "GET", "h_*->w"},
		[]string{"SORT", "list", "BY", "h_*->w", "DESC", "GET", "w_*"},
		[]string{"SORT", "set", "BY", "h_*->name", "ALPHA", "LIMIT", "1400", "200"},
		[]string{"SORT", "set", "DESC", "LIMIT", "0", "50"},
		[]string{"SORT_RO", "zset", "BY", "w_*", "GET", "w_*", "GET", "#"},
		[]string{"SORT", "zset", "BY", "nosort", "DESC", "LIMIT", "700", "30", "GET", "#"},
		[]string{"SORT", "list", "BY", "nosort", "LIMIT", "1000", "10"},
		[]string{"SORT", "list", "ALPHA", "LIMIT", "100", "5"},
		[]string{"SORT", "set", "BY", "w_*", "GET", "h_*->name", "STORE", "out"},
		[]string{"LRANGE", "out", "0", "-1"})
	return notifyCase{name: "sort-cold-big", classes: "", steps: steps}
}
