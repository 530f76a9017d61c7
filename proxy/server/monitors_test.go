package server

import (
	"strings"
	"testing"
)

// TestSlowlogCostsNoAllocation: with the slow log at its default threshold
// and the latency monitor off, a fast command allocates no more than with
// both disabled (callCounted's one comparison).
func TestSlowlogCostsNoAllocation(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops buffers: allocation counts vary")
	}
	s := localServer(t, stringTable())
	l := s.NewLocal()
	defer l.Close()
	get, set := [][]byte{[]byte("GET"), []byte("k")}, [][]byte{[]byte("SET"), []byte("k"), []byte("v")}
	cost := func() float64 {
		return testing.AllocsPerRun(200, func() {
			l.Do(get...)
			l.Do(set...)
		})
	}
	l.DoString("CONFIG", "SET", "slowlog-log-slower-than", "-1")
	disabled := cost()
	l.DoString("CONFIG", "SET", "slowlog-log-slower-than", "10000")
	if s.slowlog.Len() != 0 {
		t.Fatalf("%d entries logged, fast commands expected", s.slowlog.Len())
	}
	if def := cost(); def > disabled {
		t.Errorf("allocations per GET+SET: %v with the slow log disabled, %v at its default threshold", disabled, def)
	}
}

// TestSlowlogFeeding: with a threshold of 0 every command run is logged
// once it has run (CONFIG SET's own change applies to it), EXEC is not
// but its commands are, commands queued by MULTI are logged when they run,
// and rejected ones are not.
func TestSlowlogFeeding(t *testing.T) {
	s := localServer(t, stringTable())
	l := s.NewLocal()
	defer l.Close()
	for _, cmd := range [][]string{
		{"CLIENT", "SETNAME", "feeder"},
		{"CONFIG", "SET", "slowlog-log-slower-than", "0"},
		{"SLOWLOG", "RESET"},
		{"MULTI"}, {"SET", "k", "v"}, {"GET", "k"}, {"EXEC"},
		{"GET"}, // arity: never run
		{"NOSUCH"},
		{"CONFIG", "SET", "slowlog-log-slower-than", "-1"},
	} {
		l.DoString(cmd...)
	}
	var got []string
	for _, e := range s.slowlog.Get(-1) {
		var a []string
		for _, b := range e.Args {
			a = append(a, string(b))
		}
		if e.Name != "feeder" || e.Addr == "" {
			t.Errorf("entry %q: client %q, name %q", a, e.Addr, e.Name)
		}
		got = append(got, strings.Join(a, " "))
	}
	want := "GET k|SET k v|MULTI|SLOWLOG RESET"
	if strings.Join(got, "|") != want {
		t.Errorf("logged %q, want %q", strings.Join(got, "|"), want)
	}
}
