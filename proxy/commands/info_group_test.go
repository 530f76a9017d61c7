package commands_test

import (
	"strings"
	"testing"
	"time"
)

// TestInfoInsideGroups: INFO's memory and tiering sections and MEMORY STATS
// read the engine's figures inside MULTI and scripts, whose group holds
// the engine's lock already: they took it again, and the server stopped
// serving every key.
func TestInfoInsideGroups(t *testing.T) {
	s, _ := openLocal(t, modes[0])
	l := s.NewLocal()
	defer l.Close()
	other := s.NewLocal()
	defer other.Close()
	done := make(chan string, 1)
	go func() {
		var out strings.Builder
		for _, args := range [][]string{
			{"MULTI"}, {"SET", "k", "v"}, {"INFO", "memory"}, {"INFO", "tiering"}, {"MEMORY", "STATS"}, {"INFO"}, {"EXEC"},
			{"EVAL", "return redis.call('info', 'everything')", "0"},
		} {
			out.Write(l.DoString(args...))
		}
		out.Write(other.DoString("GET", "k"))
		done <- out.String()
	}()
	select {
	case got := <-done:
		for _, want := range []string{"used_memory:", "hot_keys:", "peak.allocated", "# Tiering", "$1\r\nv\r\n"} {
			if !strings.Contains(got, want) {
				t.Errorf("the replies lack %q", want)
			}
		}
		if n := strings.Count(got, "# Tiering"); n != 2 {
			t.Errorf("%d Tiering sections, want 2 (MULTI's INFO tiering and the script's INFO everything)", n)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("MULTI with INFO memory / tiering / MEMORY STATS, or a script's INFO, did not finish")
	}
}
