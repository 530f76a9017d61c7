package commands_test

import (
	"fmt"
	"testing"
)

// The hot write path of the collections, as redis-benchmark drives it:
// ZADD of a member of a hot 4,000-member sorted set at a new score, HSET
// of a field of a hot hash to the value it holds (redis-benchmark repeats
// one value), LPUSH and RPOP of a hot list. Local.Do adds one allocation
// (the reply's copy); LPUSH one more, the element the hot list keeps.
// Nothing else allocates: the handles, their buffers and the store's
// batch are reused.

// collHotArgs returns n ZADD/HSET/LPUSH/RPOP commands over the benchmark's
// keys, cycling through members members.
func collHotArgs(cmd string, n, members int) [][][]byte {
	out := make([][][]byte, n)
	for i := range out {
		m := fmt.Appendf(nil, "element:%06d", i%members)
		switch cmd {
		case "ZADD":
			out[i] = [][]byte{[]byte(cmd), []byte("myzset"), fmt.Appendf(nil, "%d", i%7919), m}
		case "HSET":
			out[i] = [][]byte{[]byte(cmd), []byte("myhash"), m, []byte("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")}
		case "LPUSH":
			out[i] = [][]byte{[]byte(cmd), []byte("mylist"), []byte("xxxxxxxxxxxxxxxx")}
		case "RPOP":
			out[i] = [][]byte{[]byte(cmd), []byte("mylist")}
		}
	}
	return out
}

// TestCollHotPathAllocations holds the collections' hot writes to the
// allocations above.
func TestCollHotPathAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not the hot path's under the race detector")
	}
	s, e := openLocal(t, modes[0])
	l := s.NewLocal()
	defer l.Close()
	const members = 4000
	for _, cmd := range []string{"ZADD", "HSET"} {
		for _, a := range collHotArgs(cmd, members, members) {
			l.Do(a...)
		}
	}
	for _, c := range []struct {
		name string
		want float64
	}{
		{"ZADD", 1}, {"HSET", 1}, {"LPUSH", 2}, {"RPOP", 1},
	} {
		checkAllocs(t, l, e, c.name, collHotArgs(c.name, 2*members, members), members/2, members, c.want)
	}
}
