package integration

import (
	"fmt"
	"sync"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// streamNotifyCases are the stream commands' keyspace events (with
// TestNotifyDiff's runner): every event name and keymiss, on hot and on
// cold (demoted) streams, and for a consumer created by serving a blocked
// XREADGROUP.
var streamNotifyCases = []notifyCase{
	{name: "streams", classes: "KEA", steps: [][]string{
		{"XADD", "s", "1-1", "a", "1"}, {"XADD", "s", "MAXLEN", "1", "2-1", "b", "2"}, {"XADD", "s", "1-1", "a", "1"},
		{"XADD", "nok", "NOMKSTREAM", "*", "a", "1"}, {"XDEL", "s", "2-1", "9-9"}, {"XDEL", "s", "9-9"},
		{"XADD", "s", "3", "c", "3"}, {"XADD", "s", "4", "d", "4"}, {"XTRIM", "s", "MAXLEN", "1"}, {"XTRIM", "s", "MAXLEN", "5"},
		{"XSETID", "s", "10"}, {"XGROUP", "CREATE", "s", "g", "0"}, {"XGROUP", "CREATE", "s", "g", "0"},
		{"XGROUP", "CREATE", "m", "g", "$", "MKSTREAM"}, {"XGROUP", "SETID", "s", "g", "0"},
		{"XGROUP", "CREATECONSUMER", "s", "g", "c"}, {"XGROUP", "CREATECONSUMER", "s", "g", "c"},
		{"XREADGROUP", "GROUP", "g", "d", "STREAMS", "s", ">"}, {"XCLAIM", "s", "g", "e", "0", "4"},
		{"XAUTOCLAIM", "s", "g", "f", "0", "0"}, {"XACK", "s", "g", "4"},
		{"XGROUP", "DELCONSUMER", "s", "g", "c"}, {"XGROUP", "DELCONSUMER", "s", "g", "zz"},
		{"XGROUP", "DESTROY", "s", "g"}, {"XGROUP", "DESTROY", "s", "g"},
		{"@demote", "s"}, {"XADD", "s", "11", "e", "5"}, {"@demote", "s"}, {"XDEL", "s", "11"},
		{"@demote", "s"}, {"XGROUP", "CREATE", "s", "h", "0"}, {"DEL", "s", "m"},
	}},
	{name: "stream-keymiss", classes: "KEm", steps: [][]string{
		{"XREAD", "STREAMS", "k1", "k2", "0", "0"}, {"XRANGE", "k3", "-", "+"}, {"XREVRANGE", "k3", "+", "-"}, {"XLEN", "k4"},
		{"XINFO", "STREAM", "k5"}, {"XINFO", "GROUPS", "k5"}, {"XPENDING", "k6", "g"}, {"XACK", "k7", "g", "1"},
		{"XCLAIM", "k8", "g", "c", "0", "1"}, {"XAUTOCLAIM", "k9", "g", "c", "0", "0"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "k10", ">"}, {"XADD", "k11", "NOMKSTREAM", "*", "a", "b"},
		{"XDEL", "k12", "1"}, {"XTRIM", "k13", "MAXLEN", "1"}, {"XSETID", "k14", "1"},
	}},
	{name: "stream-new", classes: "KEnt", steps: [][]string{
		{"XADD", "n1", "1", "a", "1"}, {"XADD", "n1", "2", "a", "1"}, {"XGROUP", "CREATE", "n2", "g", "$", "MKSTREAM"},
		{"XADD", "n3", "0-0", "a", "1"}, {"XADD", "n3", "NOMKSTREAM", "1", "a", "1"}, {"XADD", "n4", "MAXLEN", "0", "1", "a", "1"},
	}},
	{name: "stream-blocked-consumer", classes: "KEA", notSelf: true, steps: [][]string{
		{"XGROUP", "CREATE", "b", "g", "$", "MKSTREAM"},
		{"@bg", "w", "XREADGROUP", "GROUP", "g", "newbie", "BLOCK", "0", "STREAMS", "b", ">"},
		{"XADD", "b", "5", "f", "v"}, {"@read", "w"},
	}},
}

// TestStreamNotifyDiff compares the stream commands' keyspace events with
// redis-server's, in RESP2, RESP3 and on a self-subscribed connection.
func TestStreamNotifyDiff(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	for _, proto := range []int{2, 3, notifySelfMode} {
		t.Run(fmt.Sprint("mode", proto), func(t *testing.T) {
			ref, spw := harness.StartRedis(t), startNotifySpillway(t)
			for _, nc := range streamNotifyCases {
				if proto != notifySelfMode || !nc.notSelf {
					runNotifyDiff(t, ref, spw, nc, proto, &mu, seen)
				}
			}
		})
	}
	for _, name := range []string{"xadd", "xtrim", "xdel", "xsetid", "xgroup-create", "xgroup-setid", "xgroup-destroy",
		"xgroup-createconsumer", "xgroup-delconsumer", "keymiss", "new", "del"} {
		if !t.Failed() && !seen[name] {
			t.Errorf("no case makes Redis send %q", name)
		}
	}
}
