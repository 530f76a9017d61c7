package integration

import (
	"strconv"
	"strings"
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

// TestUpstreamMigrateColdKeys: MIGRATE names its keys, so Spillway
// reloads the cold ones before the upstream migrates them: keys moved to
// the store reach the target (single key and KEYS forms, COPY keeps the
// source), and leave both tiers of the source.
func TestUpstreamMigrateColdKeys(t *testing.T) {
	p := startUpstreamPair(t, "64mb")
	dst := harness.StartRedis(t)
	sp, dc := harness.MustDial(t, p.spw.Addr()), harness.MustDial(t, dst.Addr())
	host, port, _ := strings.Cut(dst.Addr(), ":")
	sp.Do("SET", "mig:s", "v1")
	sp.Do("HSET", "mig:h", "f", "v2")
	sp.Do("RPUSH", "mig:l", "a", "b")
	if r := sp.Do("DEBUG", "DEMOTE", "mig:s", "mig:h", "mig:l"); r.IsError() {
		t.Fatalf("DEBUG DEMOTE: %s", r.String())
	}
	if cold := upstreamStats(t, sp)["cold_keys"]; cold != 3 {
		t.Fatalf("cold_keys = %d, want 3", cold)
	}
	for _, cmd := range [][]string{
		{"MIGRATE", host, port, "mig:s", "0", "5000"},
		{"MIGRATE", host, port, "", "0", "5000", "KEYS", "mig:h"},
		{"MIGRATE", host, port, "", "0", "5000", "COPY", "KEYS", "mig:l"},
	} {
		if r := sp.Do(cmd...); r.Str != "OK" {
			t.Fatalf("%v = %s; want OK", cmd, r.String())
		}
	}
	if got := dc.Do("GET", "mig:s").Str; got != "v1" {
		t.Errorf("target GET mig:s = %q", got)
	}
	if got := dc.Do("HGET", "mig:h", "f").Str; got != "v2" {
		t.Errorf("target HGET mig:h f = %q", got)
	}
	if got := dc.Do("LLEN", "mig:l").Int; got != 2 {
		t.Errorf("target LLEN mig:l = %d", got)
	}
	if n := sp.Do("EXISTS", "mig:s", "mig:h", "mig:l").Int; n != 1 {
		t.Errorf("source EXISTS after MIGRATE = %d; want 1 (only the COPY)", n)
	}
	if cold := upstreamStats(t, sp)["cold_keys"]; cold != 0 {
		t.Errorf("cold_keys = %d after MIGRATE; want 0", cold)
	}
}
