package integration

import (
	"strconv"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// TestUpstreamSortPatternsReachColdKeys: SORT's BY and GET patterns reach
// keys no key position names. In upstream mode, with those keys demoted to
// the store, SORT must still read them (Spillway reloads them before the
// upstream sorts), and the reply must equal redis-server's for the same
// data: BY a string weight, BY a hash field, GET a string, GET a hash
// field, GET #, SORT_RO, and STORE.
func TestUpstreamSortPatternsReachColdKeys(t *testing.T) {
	p := startUpstreamPair(t, "64mb")
	ref := harness.StartRedis(t)
	sp, rc := harness.MustDial(t, p.spw.Addr()), harness.MustDial(t, ref.Addr())
	var setup [][]string
	for i := 1; i <= 12; i++ {
		n := strconv.Itoa(i)
		w := strconv.Itoa((i * 7) % 13)
		setup = append(setup,
			[]string{"RPUSH", "srt:list", n},
			[]string{"SET", "srt:w_" + n, w},
			[]string{"SET", "srt:obj_" + n, "value-" + n},
			[]string{"HSET", "srt:h_" + n, "f", strconv.Itoa(100 - i*3), "name", "n" + n})
	}
	for _, cmd := range setup {
		for _, c := range []*harness.Conn{sp, rc} {
			if r := c.Do(cmd...); r.IsError() {
				t.Fatalf("%v: %s", cmd, r.String())
			}
		}
	}
	demote := []string{"DEBUG", "DEMOTE"}
	for i := 1; i <= 12; i++ {
		n := strconv.Itoa(i)
		demote = append(demote, "srt:w_"+n, "srt:obj_"+n, "srt:h_"+n)
	}
	if r := sp.Do(demote...); r.IsError() {
		t.Fatalf("DEBUG DEMOTE: %s", r.String())
	}
	if cold := upstreamStats(t, sp)["cold_keys"]; cold < 36 {
		t.Fatalf("cold_keys = %d after DEBUG DEMOTE of 36 keys", cold)
	}
	for _, cmd := range [][]string{
		{"SORT", "srt:list", "BY", "srt:w_*"},
		{"SORT", "srt:list", "BY", "srt:w_*", "GET", "srt:obj_*", "GET", "#"},
		{"SORT", "srt:list", "BY", "srt:h_*->f", "GET", "srt:h_*->name"},
		{"SORT_RO", "srt:list", "BY", "srt:w_*", "DESC", "LIMIT", "2", "5", "GET", "srt:obj_*"},
		{"SORT", "srt:list", "BY", "nosort", "GET", "srt:obj_*"},
		{"SORT", "srt:list", "BY", "srt:w_*", "GET", "srt:obj_*", "STORE", "srt:dst"},
		{"LRANGE", "srt:dst", "0", "-1"},
	} {
		if r := sp.Do(demote...); r.IsError() { // cold again before each
			t.Fatalf("DEBUG DEMOTE: %s", r.String())
		}
		got, want := sp.Do(cmd...), rc.Do(cmd...)
		if got.String() != want.String() {
			t.Fatalf("%v:\nspillway %s\nredis    %s", cmd, got.String(), want.String())
		}
	}
}
