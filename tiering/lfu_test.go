package tiering

import (
	"fmt"
	"testing"
)

// TestLFUCounter checks Redis's LFU arithmetic: a new key counts 5, its
// first access always makes it 6, a counter loses one per idle minute down
// to 0, and a set counter reads back until a minute passes.
func TestLFUCounter(t *testing.T) {
	const now = int64(28_333_333 * 60_000) // at the start of a minute, as counters decay on minute boundaries
	var s lfuState
	if got := s.decayed(defaultLFU, now); got != lfuInitVal {
		t.Fatalf("new key: %d, want %d", got, lfuInitVal)
	}
	s.touch(defaultLFU, now)
	if got := s.decayed(defaultLFU, now); got != lfuInitVal+1 {
		t.Fatalf("after one access: %d, want %d", got, lfuInitVal+1)
	}
	s = newLFU(100, now)
	for _, c := range []struct {
		later int64
		want  uint8
	}{{0, 100}, {59_999, 100}, {60_000, 99}, {10 * 60_000, 90}, {1000 * 60_000, 0}} {
		if got := s.decayed(defaultLFU, now+c.later); got != c.want {
			t.Errorf("%d ms later: %d, want %d", c.later, got, c.want)
		}
	}
	s = newLFU(255, now)
	s.touch(defaultLFU, now)
	if got := s.decayed(defaultLFU, now); got != 255 {
		t.Errorf("saturated counter: %d, want 255", got)
	}
}

// TestLFUSettings checks lfu-log-factor and lfu-decay-time as Redis reads
// them: factor 0 counts every access, decay time 0 never decays, decay
// time N takes one per N idle minutes.
func TestLFUSettings(t *testing.T) {
	const now = int64(28_333_333 * 60_000)
	var s lfuState
	every := lfuParams{logFactor: 0, decayMins: 0}
	for range 20 {
		s.touch(every, now)
	}
	if got := s.decayed(every, now); got != lfuInitVal+20 {
		t.Fatalf("factor 0, 20 accesses: %d, want %d", got, lfuInitVal+20)
	}
	if got := s.decayed(every, now+1000*60_000); got != lfuInitVal+20 {
		t.Fatalf("decay time 0, 1000 minutes later: %d, want no decay", got)
	}
	if got := s.decayed(lfuParams{logFactor: 0, decayMins: 10}, now+35*60_000); got != lfuInitVal+20-3 {
		t.Fatalf("decay time 10, 35 minutes later: %d, want %d", got, lfuInitVal+20-3)
	}
}

// TestLFUDemotionKeepsFrequentKeys: under an LFU policy the hot tier keeps
// keys read often through scans of keys read once, where the plain LRU
// order lets each scan push them out. Workload: 40 frequent keys read in
// turn, with a scan of 60 other keys between rounds, in a budget for
// about 80 entries; it counts the frequent keys' reads served hot after
// a warm-up. LFU demotion must serve clearly more of them.
func TestLFUDemotionKeepsFrequentKeys(t *testing.T) {
	run := func(lfu bool) (hot, total int) {
		opts := defaultOpts()
		probe := newEnv(t, opts)
		probe.set(0, "size:probe", "v", 0)
		used, _, _ := probe.hotUsage()
		opts.HotBudget = used * 80
		v := newEnv(t, opts)
		v.e.SetLFU(0, 0) // every access counts, nothing decays: deterministic
		v.e.SetLFUDemotion(lfu)
		for i := range 40 {
			v.set(0, fmt.Sprintf("freq:%02d", i), "v", 0)
		}
		scan := 0
		for round := range 30 {
			for i := range 40 {
				k := fmt.Sprintf("freq:%02d", i)
				if round >= 10 {
					total++
					if v.isHot(0, k) {
						hot++
					}
				}
				v.get(0, k)
			}
			for range 60 {
				k := fmt.Sprintf("scan:%06d", scan)
				scan++
				v.set(0, k, "v", 0)
			}
		}
		return hot, total
	}
	lruHot, total := run(false)
	lfuHot, _ := run(true)
	t.Logf("frequent keys' reads served hot: LRU %d/%d, LFU %d/%d", lruHot, total, lfuHot, total)
	if lfuHot <= lruHot+total/4 {
		t.Fatalf("LFU demotion served %d of %d frequent reads hot, LRU %d: want clearly more", lfuHot, total, lruHot)
	}
}
