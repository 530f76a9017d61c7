package tiering

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// admissionWindow bounds the admission filter's memory: reads are counted
// for the admissionWindow cold keys read most recently.
const admissionWindow = 1 << 16

// AdmissionSettings are the promotion policy's knobs, read by Admission on
// every decision so that CONFIG SET takes effect at once.
type AdmissionSettings struct {
	// MinHits is promote-min-hits: a cold key is promoted on its
	// MinHits-th read within the admission window; 1 or less promotes on
	// the first read.
	MinHits int
	// ColdReadMax is cold-read-max-bytes: a larger value is served from
	// disk and never promoted by a read.
	ColdReadMax int64
	// HotBudget is the hot tier's byte budget: a value over an eighth of
	// it is never promoted (a budget of 0 admits nothing; pass
	// math.MaxInt64 for a hot tier without a budget).
	HotBudget int64
}

// Fits reports whether a value of size bytes may be brought into the hot
// tier at all: at most ColdReadMax and an eighth of the hot budget.
func (s AdmissionSettings) Fits(size int64) bool {
	return size <= s.ColdReadMax && size <= s.HotBudget/8
}

// Admission is the promotion policy of both modes: whether a cold value
// read now is brought into the hot tier (embedded mode: promoted into the
// in-process LRU; upstream mode: reloaded into the upstream Redis). A
// value that does not Fit never is; the others are on their MinHits-th
// read within the admission window, counted per key hash in a ghost LRU
// of the keys read recently. It is safe for concurrent use.
type Admission struct {
	settings func() AdmissionSettings

	mu    sync.Mutex
	ghost *simplelru.LRU[uint64, int]
}

// NewAdmission returns a policy that reads its settings from settings
// (called once per Admit, under the caller's locks).
func NewAdmission(settings func() AdmissionSettings) *Admission {
	ghost, err := simplelru.NewLRU[uint64, int](admissionWindow, nil)
	if err != nil {
		panic(err) // only for a non-positive size
	}
	return &Admission{settings: settings, ghost: ghost}
}

// Admit counts a read of the cold key whose hash is hash, of size bytes,
// and reports whether the key should now be brought into the hot tier.
// Reads of values that do not fit are not counted.
func (a *Admission) Admit(hash uint64, size int64) bool {
	s := a.settings()
	if !s.Fits(size) {
		return false
	}
	if s.MinHits <= 1 {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n, _ := a.ghost.Get(hash)
	n++
	if n >= s.MinHits {
		a.ghost.Remove(hash)
		return true
	}
	a.ghost.Add(hash, n)
	return false
}
