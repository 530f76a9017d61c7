package tiering

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// waitPast sleeps until the wall clock is past at (unix ms).
func waitPast(at int64) {
	for time.Now().UnixMilli() <= at {
		time.Sleep(5 * time.Millisecond)
	}
}

// sweepAll runs SweepExpired until it finds nothing due.
func (v *env) sweepAll() {
	v.t.Helper()
	for i := 0; i < 100; i++ {
		n, err := v.e.SweepExpired(1000)
		if err != nil {
			v.t.Fatalf("SweepExpired: %v", err)
		}
		if n == 0 {
			return
		}
	}
	v.t.Fatal("SweepExpired never drained")
}

// Lazy expiry: a key past its ExpireAt is invisible and deleted by the read
// that finds it, hot or cold. Everything happens inside one transaction, so
// the background sweeper cannot interfere.
func TestLazyExpiry(t *testing.T) {
	tests := []struct {
		name     string
		hot      bool
		peek     bool
		wantCold int64
	}{
		{"hot Get", true, false, 0},
		{"hot Peek", true, true, 0},
		{"cold Get", false, false, 1},
		{"cold Peek", false, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := defaultOpts()
			o.HotBudget = 8000 // writes of more than 1000 bytes stay cold
			v := newEnv(t, o)
			val := "v"
			if !tt.hot {
				val = strings.Repeat("c", 2000)
			}
			v.set(0, "other", "x", 0)
			st := &v.e.Stats
			tx := v.e.begin()
			if err := tx.SetString(0, []byte("k"), []byte(val), tx.Now()-1); err != nil {
				t.Fatal(err)
			}
			if got := v.e.Hot().Contains(tx.pdb(0), []byte("k")); got != tt.hot {
				t.Fatalf("key hot = %v, want %v", got, tt.hot)
			}
			if tx.DBSize(0) != 2 || tx.Expires(0) != 1 {
				t.Fatalf("before read: DBSize %d Expires %d, want 2 1", tx.DBSize(0), tx.Expires(0))
			}
			var e *Entry
			var err error
			if tt.peek {
				e, err = tx.Peek(0, []byte("k"))
			} else {
				e, err = tx.Get(0, []byte("k"))
			}
			if err != nil || e != nil {
				t.Fatalf("read of expired key = %+v, %v; want nil", e, err)
			}
			if tx.DBSize(0) != 1 || tx.Expires(0) != 0 {
				t.Fatalf("after read: DBSize %d Expires %d, want 1 0", tx.DBSize(0), tx.Expires(0))
			}
			if p, err := tx.commit(); err != nil || p.Wait() != nil {
				t.Fatal(err)
			}
			if st.ExpiredKeys.Load() != 1 || st.ExpiredColdKeys.Load() != tt.wantCold {
				t.Fatalf("ExpiredKeys %d ExpiredColdKeys %d, want 1 %d", st.ExpiredKeys.Load(), st.ExpiredColdKeys.Load(), tt.wantCold)
			}
			if _, found := v.storedMeta(0, "k"); found {
				t.Fatal("expired key's meta record left on disk")
			}
			if idx := v.expiryIndex(); len(idx) != 0 {
				t.Fatalf("expiry index = %v, want empty", idx)
			}
			if v.isHot(0, "k") {
				t.Fatal("expired key still hot")
			}
			if n, x := v.sizes(0); n != 1 || x != 0 {
				t.Fatalf("committed DBSize %d Expires %d, want 1 0", n, x)
			}
		})
	}
}

// Redis counts a read that finds an expired key as a keyspace miss
// (lookupKey -> expireIfNeeded -> miss), whichever tier held the key.
func TestExpiredReadCountsMiss(t *testing.T) {
	for _, hot := range []bool{true, false} {
		t.Run(fmt.Sprint("hot=", hot), func(t *testing.T) {
			o := defaultOpts()
			o.HotBudget = 8000
			v := newEnv(t, o)
			val := "v"
			if !hot {
				val = strings.Repeat("c", 2000)
			}
			st := &v.e.Stats
			v.do(func(tx *Tx) error {
				if err := tx.SetString(0, []byte("k"), []byte(val), tx.Now()-1); err != nil {
					return err
				}
				tx.CountLookups(true) // a client's read
				_, err := tx.Get(0, []byte("k"))
				return err
			})
			if h, m := st.KeyspaceHits.Load(), st.KeyspaceMisses.Load(); h != 0 || m != 1 {
				t.Fatalf("hits %d misses %d, want 0 1", h, m)
			}
		})
	}
}

// Keys expired on disk disappear without being read: the sweeper walks the
// expiry index.
func TestSweepExpiredWithoutReads(t *testing.T) {
	o := defaultOpts()
	v := newEnv(t, o)
	const nCold, nHot = 7, 3
	at := v.now() + 40
	for i := 0; i < nCold; i++ {
		v.set(2, fmt.Sprint("cold", i), "v", at+int64(i%3))
	}
	v.demoteAll()
	for i := 0; i < nHot; i++ {
		v.set(2, fmt.Sprint("hot", i), "v", at)
	}
	v.set(2, "persistent", "v", 0)
	v.set(2, "later", "v", at+3_600_000)
	if n, x := v.sizes(2); n != nCold+nHot+2 || x != nCold+nHot+1 {
		t.Fatalf("DBSize %d Expires %d", n, x)
	}
	st := &v.e.Stats
	h0, m0 := st.KeyspaceHits.Load(), st.KeyspaceMisses.Load()
	waitPast(at + 3)
	v.sweepAll()
	if n, x := v.sizes(2); n != 2 || x != 1 {
		t.Fatalf("after sweep DBSize %d Expires %d, want 2 1", n, x)
	}
	if st.ExpiredKeys.Load() != nCold+nHot || st.ExpiredColdKeys.Load() != nCold {
		t.Fatalf("ExpiredKeys %d ExpiredColdKeys %d, want %d %d", st.ExpiredKeys.Load(), st.ExpiredColdKeys.Load(), nCold+nHot, nCold)
	}
	if st.KeyspaceHits.Load() != h0 || st.KeyspaceMisses.Load() != m0 {
		t.Fatal("the sweep counted keyspace reads")
	}
	for i := 0; i < nCold; i++ {
		if _, found := v.storedMeta(2, fmt.Sprint("cold", i)); found {
			t.Fatalf("cold%d still on disk", i)
		}
	}
	if _, _, n := v.hotUsage(); n != 2 {
		t.Fatalf("%d hot keys after the sweep, want 2 (persistent, later)", n)
	}
	if idx := v.expiryIndex(); len(idx) != 1 || !strings.HasSuffix(idx[0], "/2/later") {
		t.Fatalf("expiry index = %v, want only later", idx)
	}
	if got := v.keys(2); fmt.Sprint(got) != "[later persistent]" {
		t.Fatalf("keys = %v", got)
	}
}

func TestSweepLimit(t *testing.T) {
	v := newEnv(t, defaultOpts())
	// Expired at once, but nothing reads them; take the lock so that the
	// background sweeper cannot run between the writes and our sweep.
	tx := v.e.begin()
	for i := 0; i < 5; i++ {
		if err := tx.SetString(0, []byte(fmt.Sprint("k", i)), []byte("v"), tx.Now()-10); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.commit(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for i := 0; i < 10; i++ {
		n, err := v.e.SweepExpired(2)
		if err != nil {
			t.Fatal(err)
		}
		if n > 2 {
			t.Fatalf("SweepExpired(2) processed %d entries", n)
		}
		total += n
		if n == 0 {
			break
		}
	}
	if k, _ := v.sizes(0); k != 0 {
		t.Fatalf("DBSize %d after sweeping, want 0", k)
	}
	if got := v.e.Stats.ExpiredKeys.Load(); got != 5 {
		t.Fatalf("ExpiredKeys %d, want 5", got)
	}
}

// Stale index entries (the key is gone or carries another expiry) are
// dropped without touching the key.
func TestSweepDropsStaleEntries(t *testing.T) {
	v := newEnv(t, defaultOpts())
	now := v.now()
	v.set(0, "noexp", "v", 0)
	v.set(0, "future", "v", now+3_600_000)
	v.set(1, "otherdb", "v", 0)
	past := now - 1000
	b := v.s.NewBatch()
	for _, r := range []struct {
		db  uint8
		key string
	}{{0, "noexp"}, {0, "future"}, {0, "absent"}, {0, "otherdb"}} {
		if err := b.PutExpiry(past, r.db, []byte(r.key)); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := b.Commit(); err != nil || p.Wait() != nil {
		t.Fatal(err)
	}
	v.sweepAll()
	for _, k := range []struct {
		db  int
		key string
	}{{0, "noexp"}, {0, "future"}, {1, "otherdb"}} {
		if _, ok := v.get(k.db, k.key); !ok {
			t.Errorf("%d/%s removed by a stale index entry", k.db, k.key)
		}
	}
	if idx := v.expiryIndex(); len(idx) != 1 || idx[0] != fmt.Sprintf("%d/0/future", now+3_600_000) {
		t.Fatalf("expiry index = %v, want only future's entry", idx)
	}
	if v.e.Stats.ExpiredKeys.Load() != 0 {
		t.Fatal("stale entries counted as expirations")
	}
	if n, x := v.sizes(0); n != 2 || x != 1 {
		t.Fatalf("DBSize %d Expires %d, want 2 1", n, x)
	}
}

// The sweeper says it drops malformed index entries; one that is never
// dropped is re-read, and logged, on every tick forever.
func TestSweepDropsMalformedEntries(t *testing.T) {
	v := newEnv(t, defaultOpts())
	bad := []byte{'x', 0, 0, 0, 0, 0, 0, 0, 1} // no db byte
	b := v.s.NewBatch()
	if err := b.Set(bad, nil); err != nil {
		t.Fatal(err)
	}
	if p, err := b.Commit(); err != nil || p.Wait() != nil {
		t.Fatal(err)
	}
	v.sweepAll()
	if _, found, err := v.s.Get(bad, nil); err != nil || found {
		t.Fatalf("malformed expiry entry still stored after sweeping (found=%v err=%v)", found, err)
	}
}

// Re-setting a key with another TTL (or none) before the old one is due moves
// its index entry: the old time must not expire the key.
func TestResetMovesExpiry(t *testing.T) {
	tests := []struct {
		name   string
		newTTL int64 // ms from now; 0: no expiry
		hot    bool
	}{
		{"longer hot", 3_600_000, true},
		{"longer cold", 3_600_000, false},
		{"none hot", 0, true},
		{"none cold", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newEnv(t, defaultOpts())
			old := v.now() + 30
			v.set(0, "k", "v1", old)
			if !tt.hot {
				v.demoteAll()
			}
			var newAt int64
			if tt.newTTL != 0 {
				newAt = v.now() + tt.newTTL
			}
			v.set(0, "k", "v2", newAt)
			waitPast(old)
			v.sweepAll()
			got, at, ok := v.peek(0, "k")
			if !ok || got != "v2" || at != newAt {
				t.Fatalf("k = %q at %d (%v); want v2 at %d", got, at, ok, newAt)
			}
			wantIdx := 0
			if newAt != 0 {
				wantIdx = 1
			}
			if idx := v.expiryIndex(); len(idx) != wantIdx {
				t.Fatalf("expiry index = %v", idx)
			}
			if _, x := v.sizes(0); x != int64(wantIdx) {
				t.Fatalf("Expires = %d, want %d", x, wantIdx)
			}
		})
	}
}

func TestSetExpire(t *testing.T) {
	const hour = 3_600_000
	// short must outlast the steps before SetExpire on a loaded machine
	// (40 ms did not, once in a few runs beside other tests).
	const short = 300
	tests := []struct {
		name       string
		initial    int64 // ms from now; 0: none
		next       int64 // ms from now; 0: persist; <0: in the past
		cold       bool
		wantAfter  bool // key exists after the old and new times have passed
		wantExists bool // SetExpire's result
	}{
		{"far to shorter", hour, short, false, false, true},
		{"far to shorter cold", hour, short, true, false, true},
		{"short to longer", short, hour, false, true, true},
		{"short to longer cold", short, hour, true, true, true},
		{"short to persist", short, 0, false, true, true},
		{"short to persist cold", short, 0, true, true, true},
		{"none to short", 0, short, true, false, true},
		{"none to none", 0, 0, false, true, true},
		{"same time", hour, hour, true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newEnv(t, defaultOpts())
			now := v.now()
			var initial, next int64
			if tt.initial != 0 {
				initial = now + tt.initial
			}
			if tt.next != 0 {
				next = now + tt.next
			}
			v.set(0, "k", "v", initial)
			if tt.cold {
				v.demoteAll()
			}
			var exists bool
			v.do(func(tx *Tx) (err error) {
				exists, err = tx.SetExpire(0, []byte("k"), next)
				return err
			})
			if exists != tt.wantExists {
				t.Fatalf("SetExpire = %v", exists)
			}
			if tt.cold && v.isHot(0, "k") {
				t.Fatal("SetExpire promoted a cold key")
			}
			// The index holds exactly the new time; the meta record agrees.
			var wantIdx []string
			if next != 0 {
				wantIdx = []string{fmt.Sprintf("%d/0/k", next)}
			}
			if idx := v.expiryIndex(); fmt.Sprint(idx) != fmt.Sprint(wantIdx) {
				t.Fatalf("expiry index = %v, want %v", idx, wantIdx)
			}
			if m, _ := v.storedMeta(0, "k"); m.ExpireAt != next || string(m.Value) != "v" {
				t.Fatalf("stored meta ExpireAt %d value %q, want %d v", m.ExpireAt, m.Value, next)
			}
			if _, at, _ := v.peek(0, "k"); at != next {
				t.Fatalf("Peek ExpireAt %d, want %d", at, next)
			}
			wantExp := int64(0)
			if next != 0 {
				wantExp = 1
			}
			if _, x := v.sizes(0); x != wantExp {
				t.Fatalf("Expires %d, want %d", x, wantExp)
			}
			// Let both short times pass, then sweep without reading.
			waitPast(now + short + 1)
			v.sweepAll()
			if _, found := v.storedMeta(0, "k"); found != tt.wantAfter {
				t.Fatalf("after sweep key stored = %v, want %v", found, tt.wantAfter)
			}
		})
	}
}

func TestSetExpireMissingOrExpired(t *testing.T) {
	v := newEnv(t, defaultOpts())
	tx := v.e.begin()
	defer func() {
		if _, err := tx.commit(); err != nil {
			t.Fatal(err)
		}
	}()
	if ok, err := tx.SetExpire(0, []byte("missing"), tx.Now()+1000); ok || err != nil {
		t.Fatalf("SetExpire(missing) = %v, %v", ok, err)
	}
	if err := tx.SetString(0, []byte("k"), []byte("v"), tx.Now()-1); err != nil {
		t.Fatal(err)
	}
	if ok, err := tx.SetExpire(0, []byte("k"), tx.Now()+1000); ok || err != nil {
		t.Fatalf("SetExpire(expired) = %v, %v; want false", ok, err)
	}
	if tx.DBSize(0) != 0 || tx.Expires(0) != 0 {
		t.Fatalf("DBSize %d Expires %d after expiring", tx.DBSize(0), tx.Expires(0))
	}
}

// Any command that finds an expired key deletes it as an expiration first
// (Redis's expireIfNeeded counts expired_keys even when SET then overwrites
// the key). Whether the sweeper or the command gets there first, the key
// counts as expired exactly once.
func TestWriteOverExpiredCountsExpiry(t *testing.T) {
	tests := []struct {
		name string
		hot  bool
		op   func(tx *Tx) error
	}{
		{"set hot", true, func(tx *Tx) error { return tx.SetString(0, []byte("k"), []byte("new"), 0) }},
		{"set cold", false, func(tx *Tx) error { return tx.SetString(0, []byte("k"), []byte("new"), 0) }},
		{"delete hot", true, func(tx *Tx) error {
			if ok, err := tx.Delete(0, []byte("k")); ok || err != nil {
				return fmt.Errorf("Delete of an expired key = %v, %v", ok, err)
			}
			return nil
		}},
		{"delete cold", false, func(tx *Tx) error { _, err := tx.Delete(0, []byte("k")); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newEnv(t, defaultOpts())
			v.set(0, "k", "old", v.now()-1)
			if !tt.hot {
				v.demoteAll()
			}
			v.do(tt.op)
			if got := v.e.Stats.ExpiredKeys.Load(); got != 1 {
				t.Fatalf("ExpiredKeys = %d, want 1", got)
			}
			v.checkInvariants()
		})
	}
}
