package integration

import (
	"strings"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// TestLFUSettingsMatchRedis: OBJECT FREQ under an LFU policy follows
// lfu-log-factor and lfu-decay-time as Redis's does. With factor 0 every
// access counts (deterministic), with decay time 0 nothing decays, and a
// CONFIG SET takes effect for the next access; compared with
// redis-server step by step.
func TestLFUSettingsMatchRedis(t *testing.T) {
	steps := [][]string{
		{"CONFIG", "SET", "maxmemory-policy", "allkeys-lfu", "lfu-log-factor", "0", "lfu-decay-time", "0"},
		{"SET", "lfu:k", "v"},
		{"OBJECT", "FREQ", "lfu:k"},
		{"GET", "lfu:k"}, {"GET", "lfu:k"}, {"GET", "lfu:k"}, {"APPEND", "lfu:k", "w"},
		{"OBJECT", "FREQ", "lfu:k"},
		{"SET", "lfu:k", "overwritten"},
		{"OBJECT", "FREQ", "lfu:k"},
		{"CONFIG", "GET", "lfu-log-factor"},
		{"CONFIG", "SET", "lfu-log-factor", "100000000"},
		{"GET", "lfu:k"},
		{"OBJECT", "FREQ", "lfu:k"},
		{"RESTORE", "lfu:r", "0", "\x00\x01x\n\x00\"\x80\x86_\xbd\xe8H\xd0", "FREQ", "200"},
		{"OBJECT", "FREQ", "lfu:r"},
	}
	var got [2][]string
	for i, srv := range []*harness.Server{harness.StartRedis(t), harness.StartSpillway(t, "")} {
		c := harness.MustDial(t, srv.Addr())
		for _, s := range steps {
			got[i] = append(got[i], c.Do(s...).String())
		}
	}
	for i, s := range steps {
		if got[0][i] != got[1][i] {
			t.Errorf("%q:\nredis    %s\nspillway %s", s, got[0][i], got[1][i])
		}
	}
}

// TestSetBigValueIsTrimmed is the suite's "trim on SET with big value",
// which unit/type/string runs only when INFO says the allocator is
// jemalloc (Spillway's is Go's): after a SET of a 100,000-byte value grew
// the query buffer, a SET of a 33,000-byte value keeps only its value,
// not the buffer it arrived in (MEMORY USAGE under 42,000, the suite's
// bound).
func TestSetBigValueIsTrimmed(t *testing.T) {
	srv := harness.StartSpillway(t, "")
	c := harness.MustDial(t, srv.Addr())
	c.Do("SET", "key", strings.Repeat("A", 100000))
	c.Do("SET", "key", strings.Repeat("A", 33000))
	if r := c.Do("MEMORY", "USAGE", "key"); r.Type != ':' || r.Int >= 42000 {
		t.Fatalf("MEMORY USAGE key = %s; want under 42000", r.String())
	}
}
