package tiering

import (
	"math"
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

// rivalHalfLifeMs is how fast a hot entry's read count fades while it is
// not read: it counts half per this many milliseconds since its last
// access, so that a key read often long ago does not hold its place
// against keys read now (AdmitOver).
const rivalHalfLifeMs = 10_000

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

// AdmitOver is Admit for a hot tier that must displace an entry to take the
// key (embedded mode): when full is set, a key that Admit would promote is
// promoted only if it was read more often than rival, the read count of
// the entry that would be demoted first (Entry.rivalHits); otherwise its
// count is kept and it stays cold. Under a uniform load over a data set
// larger than the tier no key is read more often than another, so the
// tier stops trading one key for an equally cold one (each trade reads the
// whole value from the store and demotes another); under a skewed load the
// keys read most win their places, as in W-TinyLFU. With MinHits of 1 or
// less every read key is promoted, full or not (plain LRU). It returns
// whether to promote and the key's read count, which the promoted entry
// keeps as its own (Entry.hits).
func (a *Admission) AdmitOver(hash uint64, size int64, full bool, rival uint32) (bool, uint32) {
	s := a.settings()
	if !s.Fits(size) {
		return false, 0
	}
	if s.MinHits <= 1 {
		return true, 1
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	n, _ := a.ghost.Get(hash)
	n++
	if n < s.MinHits || (full && uint64(n) <= uint64(rival)) {
		a.ghost.Add(hash, n)
		return false, 0
	}
	a.ghost.Remove(hash)
	return true, uint32(min(n, math.MaxUint32))
}
