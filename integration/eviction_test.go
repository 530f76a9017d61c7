package integration

import (
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// TestEvictedEvents: with an eviction policy, a budget Spillway cannot
// meet (maxmemory 1) evicts keys as Redis does: the subscriber gets the
// same "evicted" events and INFO counts evicted_keys.
func TestEvictedEvents(t *testing.T) {
	for _, srv := range []struct {
		name string
		s    *harness.Server
	}{
		{"redis", harness.StartRedis(t)},
		{"spillway", harness.StartSpillway(t, "", "--loglevel", "warning")},
	} {
		t.Run(srv.name, func(t *testing.T) {
			c := utDial(t, srv.s.Addr(), 10*time.Second)
			sub := utDial(t, srv.s.Addr(), 10*time.Second)
			for _, args := range [][]string{
				{"CONFIG", "SET", "notify-keyspace-events", "Ee"},
				{"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"},
				{"SET", "foo", "bar"},
			} {
				if r := c.Do(args...); r.Str != "OK" {
					t.Fatalf("%v = %s", args, r.String())
				}
			}
			if r := sub.Do("PSUBSCRIBE", "*"); r.Type != '*' {
				t.Fatalf("PSUBSCRIBE = %s", r.String())
			}
			if r := c.Do("CONFIG", "SET", "maxmemory", "1"); r.Str != "OK" {
				t.Fatalf("CONFIG SET maxmemory 1 = %s", r.String())
			}
			r := sub.Read()
			if want := "pmessage * __keyevent@0__:evicted foo"; len(r.Elems) != 4 ||
				r.Elems[0].Str+" "+r.Elems[1].Str+" "+r.Elems[2].Str+" "+r.Elems[3].Str != want {
				t.Fatalf("event = %s; want %q", r.String(), want)
			}
			if n, err := utInfoInt(c, "stats", "evicted_keys"); err != nil || n != 1 {
				t.Fatalf("evicted_keys = %d, %v; want 1", n, err)
			}
			for _, args := range [][]string{{"CONFIG", "SET", "maxmemory", "0"}, {"CONFIG", "SET", "maxmemory-policy", "noeviction"}} {
				if r := c.Do(args...); r.Str != "OK" {
					t.Fatalf("%v = %s", args, r.String())
				}
			}
		})
	}
}
