package coldstore

import (
	"testing"
	"time"
)

// TestErrLimit: errLimitBurst lines a second go out; the next one let
// through reports how many were dropped before it.
func TestErrLimit(t *testing.T) {
	var e errLimit
	t0 := time.Unix(1000, 0)
	out := 0
	for i := range 100 {
		if ok, dropped := e.allow(t0.Add(time.Duration(i) * time.Millisecond)); ok {
			out++
			if dropped != 0 {
				t.Fatalf("line %d: %d dropped reported within the first second", i, dropped)
			}
		}
	}
	if out != errLimitBurst {
		t.Fatalf("%d of 100 lines in one second went out; want %d", out, errLimitBurst)
	}
	ok, dropped := e.allow(t0.Add(time.Second))
	if !ok || dropped != 100-errLimitBurst {
		t.Fatalf("first line of the next second: ok %v, dropped %d; want true, %d", ok, dropped, 100-errLimitBurst)
	}
	if ok, dropped := e.allow(t0.Add(time.Second + time.Millisecond)); !ok || dropped != 0 {
		t.Fatalf("second line of the next second: ok %v, dropped %d; want true, 0", ok, dropped)
	}
}
