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
