package tiering

import "sync/atomic"

// admissionWindow is the number of slots of the admission filter's read
// counts: a key's count lives in the slot its hash picks, until a read of
// another key whose hash picks the same slot takes it over. Under reads
// spread over many keys a count lasts for about admissionWindow reads of
// other keys, as in an LRU of the admissionWindow keys read last (what the
// filter was until 2026-11-26), at a fraction of the cost: one atomic word
// a read instead of a map lookup, a list move and an allocation under a
// mutex (about 1 µs of a cold read's CPU), and 512 KB instead of about
// 6 MB.
const admissionWindow = 1 << 16

// slotCount masks a slot word's count. A slot's index is the low bits of
// the key hash, so its word keeps the hash's other bits, which name the key
// with the index, and the count in those low bits.
const slotCount = admissionWindow - 1

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
// read within the admission window, counted per key hash in a table of
// admissionWindow slots (see admissionWindow). It is safe for concurrent
// use and takes no lock: a slot is one word, updated by compare-and-swap.
type Admission struct {
	settings func() AdmissionSettings

	slots [admissionWindow]atomic.Uint64
}

// rivalHalfLifeMs is how fast a hot entry's read count fades while it is
// not read: it counts half per this many milliseconds since its last
// access, so that a key read often long ago does not hold its place
// against keys read now (AdmitOver).
const rivalHalfLifeMs = 10_000

// NewAdmission returns a policy that reads its settings from settings
// (called once per Admit, under the caller's locks).
func NewAdmission(settings func() AdmissionSettings) *Admission {
	return &Admission{settings: settings}
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
	_, ok := a.count(hash, func(n int) bool { return n >= s.MinHits })
	return ok
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
// less every read key is promoted, full or not (plain LRU). It returns whether
// to promote and the key's read count, which the promoted entry keeps as
// its own (Entry.hits).
func (a *Admission) AdmitOver(hash uint64, size int64, full bool, rival uint32) (bool, uint32) {
	s := a.settings()
	if !s.Fits(size) {
		return false, 0
	}
	if s.MinHits <= 1 {
		return true, 1
	}
	n, ok := a.count(hash, func(n int) bool {
		return n >= s.MinHits && (!full || uint64(n) > uint64(rival))
	})
	if !ok {
		return false, 0
	}
	return true, uint32(n)
}

// count adds a read to hash's count and returns the new count and
// admit(count): when admit says yes the count is cleared (an admitted key
// starts again), otherwise it is kept in the key's slot, taking the slot
// over from another key's count.
func (a *Admission) count(hash uint64, admit func(n int) bool) (int, bool) {
	slot := &a.slots[hash&slotCount]
	tag := hash &^ slotCount
	for {
		old := slot.Load()
		n := 1
		if old&^slotCount == tag {
			// Saturates at the count's field (a promote-min-hits that high
			// is never reached).
			n = min(int(old&slotCount)+1, slotCount)
		}
		ok := admit(n)
		next := tag | uint64(n)
		if ok {
			next = 0
		}
		if slot.CompareAndSwap(old, next) {
			return n, ok
		}
	}
}
