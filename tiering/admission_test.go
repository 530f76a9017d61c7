package tiering

import (
	"math"
	"sync"
	"testing"
)

// TestAdmission checks the promotion policy both modes share: the size
// limits, the MinHits-th read within the window, and that settings are
// read on every decision.
func TestAdmission(t *testing.T) {
	set := AdmissionSettings{MinHits: 3, ColdReadMax: 1000, HotBudget: 80000}
	a := NewAdmission(func() AdmissionSettings { return set })
	for i, want := range []bool{false, false, true, false, false, true} {
		if got := a.Admit(1, 100); got != want {
			t.Fatalf("read %d: Admit = %v; want %v", i+1, got, want)
		}
	}
	// Keys are counted apart.
	a.Admit(2, 100)
	a.Admit(3, 100)
	a.Admit(3, 100)
	if a.Admit(3, 100) != true || a.Admit(2, 100) != false {
		t.Fatal("reads of different keys were counted together")
	}
	// Too big for cold-read-max-bytes or an eighth of the budget: never,
	// and not counted.
	for range 5 {
		if a.Admit(4, 1001) || a.Admit(5, 1001) {
			t.Fatal("admitted a value over cold-read-max-bytes")
		}
	}
	set.ColdReadMax = 5000
	if a.Admit(4, 1001) || a.Admit(4, 1001) || !a.Admit(4, 1000) {
		t.Fatal("reads of a value too big were counted")
	}
	set.HotBudget = 8000
	if a.Admit(6, 1001) || a.Admit(6, 1001) || a.Admit(6, 1001) {
		t.Fatal("admitted a value over an eighth of the hot budget")
	}
	// MinHits of 1 or less admits on the first read.
	set.MinHits = 1
	if !a.Admit(7, 10) {
		t.Fatal("MinHits 1 did not admit the first read")
	}
	set.MinHits = 0
	if !a.Admit(8, 10) {
		t.Fatal("MinHits 0 did not admit the first read")
	}
	// A budget of 0 admits nothing; no budget (MaxInt64) caps nothing but
	// ColdReadMax.
	set.HotBudget = 0
	if a.Admit(9, 1) {
		t.Fatal("a budget of 0 admitted a value")
	}
	set.HotBudget = math.MaxInt64
	if !a.Admit(10, 5000) || a.Admit(10, 5001) {
		t.Fatal("without a budget, only cold-read-max-bytes limits")
	}
}

// TestAdmissionWindow checks where read counts are kept: a key's count
// survives reads of admissionWindow-1 other keys that land on other slots,
// and is lost to a read of a key that lands on its slot.
func TestAdmissionWindow(t *testing.T) {
	a := NewAdmission(func() AdmissionSettings {
		return AdmissionSettings{MinHits: 2, ColdReadMax: 1 << 20, HotBudget: 1 << 30}
	})
	a.Admit(0, 1)
	for h := uint64(1); h < admissionWindow; h++ {
		if a.Admit(h, 1) {
			t.Fatalf("key %d admitted on its first read", h)
		}
	}
	if !a.Admit(0, 1) {
		t.Fatal("a count was lost to reads of keys on other slots")
	}
	// Admitted: its slot is free. A key on the same slot takes it over.
	a.Admit(0, 1)
	a.Admit(admissionWindow, 1)
	if a.Admit(0, 1) {
		t.Fatal("a count survived a read of a key on its slot")
	}
	// Two keys on one slot read in turn each take it from the other: their
	// reads are never added together.
	for i := range 10 {
		if a.Admit(uint64(2+i%2)*admissionWindow+7, 1) {
			t.Fatalf("read %d: admitted with the other key's count", i)
		}
	}
	// And the other keys' counts are still there.
	if !a.Admit(1, 1) || !a.Admit(admissionWindow-1, 1) {
		t.Fatal("counts on other slots were lost")
	}
}

// TestAdmissionConcurrent checks that concurrent reads are all counted:
// each goroutine reads its own key (its own slot) MinHits*rounds times
// and must see exactly rounds admissions.
func TestAdmissionConcurrent(t *testing.T) {
	const minHits, rounds, readers = 50, 40, 8
	a := NewAdmission(func() AdmissionSettings {
		return AdmissionSettings{MinHits: minHits, ColdReadMax: 1 << 20, HotBudget: 1 << 30}
	})
	var wg sync.WaitGroup
	got := make([]int, readers)
	for r := range readers {
		wg.Go(func() {
			for range minHits * rounds {
				if a.Admit(uint64(r)<<20|uint64(r), 1) {
					got[r]++
				}
			}
		})
	}
	wg.Wait()
	for r, n := range got {
		if n != rounds {
			t.Errorf("reader %d: %d admissions, want %d", r, n, rounds)
		}
	}
}

// TestAdmitOver checks the full tier's rule: a key Admit would promote
// displaces an entry only if it was read more often (its count is kept
// until then), a tier with room takes it as Admit does, and MinHits 1
// promotes every read.
func TestAdmitOver(t *testing.T) {
	set := AdmissionSettings{MinHits: 2, ColdReadMax: 1000, HotBudget: 80000}
	a := NewAdmission(func() AdmissionSettings { return set })
	if ok, _ := a.AdmitOver(1, 100, true, 0); ok {
		t.Fatal("first read admitted under MinHits 2")
	}
	// Second read: MinHits reached, but the rival was read 3 times.
	for i, want := range []bool{false, false, true} { // counts 2, 3, 4 against 3
		ok, n := a.AdmitOver(1, 100, true, 3)
		if ok != want {
			t.Fatalf("read %d against a rival of 3: admitted %v, want %v", i+2, ok, want)
		}
		if ok && n != 4 {
			t.Fatalf("admitted with count %d, want 4", n)
		}
	}
	// Admitted: the count starts again.
	if ok, _ := a.AdmitOver(1, 100, false, 0); ok {
		t.Fatal("count not reset by the admission")
	}
	// Room in the tier: Admit's rule.
	a.AdmitOver(2, 100, false, 0)
	if ok, n := a.AdmitOver(2, 100, false, 1000); !ok || n != 2 {
		t.Fatalf("with room: admitted %v count %d, want true 2", ok, n)
	}
	// Too big: never, full or not.
	for range 3 {
		if ok, _ := a.AdmitOver(3, 1001, false, 0); ok {
			t.Fatal("admitted a value over cold-read-max-bytes")
		}
	}
	set.MinHits = 1
	if ok, _ := a.AdmitOver(4, 10, true, 1000); !ok {
		t.Fatal("MinHits 1 did not admit the first read of a full tier")
	}
}

// BenchmarkAdmitOver is the admission's bookkeeping for a cold read under
// uniform keys over 4x the window (a full tier, a rival read twice): what
// each cold read pays under the engine's lock.
func BenchmarkAdmitOver(b *testing.B) {
	a := NewAdmission(func() AdmissionSettings {
		return AdmissionSettings{MinHits: 2, ColdReadMax: 1 << 20, HotBudget: 1 << 30}
	})
	hashes := make([]uint64, 4*admissionWindow)
	for i := range hashes {
		hashes[i] = uint64(i)*0x9e3779b97f4a7c15 + 1
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		a.AdmitOver(hashes[(i*7919)%len(hashes)], 100, true, 2)
	}
}
