package tiering

import (
	"math"
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

// TestAdmissionWindow checks that reads are counted for the
// admissionWindow keys read most recently only.
func TestAdmissionWindow(t *testing.T) {
	a := NewAdmission(func() AdmissionSettings {
		return AdmissionSettings{MinHits: 2, ColdReadMax: 1 << 20, HotBudget: 1 << 30}
	})
	a.Admit(0, 1)
	for h := uint64(1); h <= admissionWindow; h++ {
		a.Admit(h, 1)
	}
	if a.Admit(0, 1) {
		t.Fatal("a read older than the window still counted")
	}
	if !a.Admit(admissionWindow, 1) {
		t.Fatal("a read within the window was not counted")
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
