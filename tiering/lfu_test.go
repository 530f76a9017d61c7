package tiering

import "testing"

// TestLFUCounter checks Redis's LFU arithmetic: a new key counts 5, its
// first access always makes it 6, a counter loses one per idle minute down
// to 0, and a set counter reads back until a minute passes.
func TestLFUCounter(t *testing.T) {
	const now = int64(28_333_333 * 60_000) // at the start of a minute, as counters decay on minute boundaries
	var s lfuState
	if got := s.decayed(now); got != lfuInitVal {
		t.Fatalf("new key: %d, want %d", got, lfuInitVal)
	}
	s.touch(now)
	if got := s.decayed(now); got != lfuInitVal+1 {
		t.Fatalf("after one access: %d, want %d", got, lfuInitVal+1)
	}
	s = newLFU(100, now)
	for _, c := range []struct {
		later int64
		want  uint8
	}{{0, 100}, {59_999, 100}, {60_000, 99}, {10 * 60_000, 90}, {1000 * 60_000, 0}} {
		if got := s.decayed(now + c.later); got != c.want {
			t.Errorf("%d ms later: %d, want %d", c.later, got, c.want)
		}
	}
	s = newLFU(255, now)
	s.touch(now)
	if got := s.decayed(now); got != 255 {
		t.Errorf("saturated counter: %d, want 255", got)
	}
}
