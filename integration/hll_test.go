package integration

import (
	"strings"
	"sync"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// HyperLogLogs in embedded mode, black box: the keyspace events of PFADD,
// PFCOUNT, PFMERGE and PFDEBUG against redis-server's (TestNotifyDiff's
// machinery), hot and cold, with the subscriber in RESP2, RESP3 and on
// the commands' own connection.

var hllNotifyCase = notifyCase{name: "hyperloglog", classes: "KEA$nm", steps: [][]string{
	{"PFADD", "h", "a", "b", "c"}, {"PFADD", "h", "a"}, {"PFADD", "h"}, {"PFADD", "e"},
	{"PFCOUNT", "h"}, {"PFCOUNT", "h"}, {"PFCOUNT", "missing"}, {"PFCOUNT", "h", "missing", "e"},
	{"PFMERGE", "d", "h", "missing"}, {"PFMERGE", "d", "h"}, {"PFMERGE", "d"},
	{"@demote", "h", "d"},
	{"PFADD", "h", "x", "y"}, {"PFCOUNT", "h"}, {"PFMERGE", "d", "h", "e"}, {"PFCOUNT", "d", "h"},
	{"@demote", "h"},
	{"PFDEBUG", "TODENSE", "h"}, {"PFDEBUG", "ENCODING", "h"}, {"PFDEBUG", "GETREG", "missing"},
	{"PFADD", "h", "z"}, {"GET", "h"}, {"GET", "d"},
	{"SET", "s", "bar"}, {"PFADD", "s", "a"}, {"PFCOUNT", "s"}, {"PFMERGE", "s", "h"},
	{"RPUSH", "l", "a"}, {"PFADD", "l", "a"}, {"PFMERGE", "h", "l"},
	{"APPEND", "d", "tail"}, {"PFCOUNT", "d"}, {"PFADD", "d", "q"},
}}

func TestHLLNotifyDiff(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{}
	ref, spw := harness.StartRedis(t), startNotifySpillway(t)
	for _, proto := range []int{2, 3, notifySelfMode} {
		runNotifyDiff(t, ref, spw, hllNotifyCase, proto, &mu, seen)
	}
	for _, name := range []string{"new", "pfadd", "keymiss", "append", "set", "rpush"} {
		if !t.Failed() && !seen[name] {
			t.Errorf("Redis sent no %q event: the case lost coverage (saw %s)", name, strings.Join(hllSeenNames(seen), " "))
		}
	}
}

// hllSeenNames lists the event names seen.
func hllSeenNames(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
