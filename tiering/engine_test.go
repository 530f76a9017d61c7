package tiering

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestOpenOptions(t *testing.T) {
	for _, n := range []int{0, -1, 257} {
		v := newEnv(t, defaultOpts())
		o := defaultOpts()
		o.Databases = n
		if _, err := Open(v.s, o); err == nil {
			t.Errorf("Open with Databases=%d succeeded", n)
		}
	}
}

func TestStringRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		db   int
		key  string
		val  string
	}{
		{"simple", 0, "k", "v"},
		{"empty value", 0, "empty", ""},
		{"empty key", 0, "", "value of empty key"},
		{"binary", 3, "bin\x00\xff", "\x00\x01\xfe\xff"},
		{"last db", 15, "k", "in db 15"},
		{"big (never hot)", 1, "big", strings.Repeat("x", 300<<10)},
	}
	v := newEnv(t, defaultOpts())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v.t = t
			if _, ok := v.get(tt.db, tt.key); ok {
				t.Fatal("key exists before SET")
			}
			v.set(tt.db, tt.key, tt.val, 0)
			if got, ok := v.get(tt.db, tt.key); !ok || got != tt.val {
				t.Fatalf("Get = %d bytes, %v; want %d bytes", len(got), ok, len(tt.val))
			}
			if got, at, ok := v.peek(tt.db, tt.key); !ok || got != tt.val || at != 0 {
				t.Fatalf("Peek = %d bytes, at %d, %v", len(got), at, ok)
			}
			// Not visible in another database.
			if _, ok := v.get((tt.db+1)%16, tt.key); ok {
				t.Fatal("key visible in another database")
			}
			// Stored durably in the cold store (write-through).
			m, found := v.storedMeta(uint8(tt.db), tt.key)
			if !found || string(m.Value) != tt.val {
				t.Fatalf("cold meta found=%v, value %d bytes", found, len(m.Value))
			}
			v.set(tt.db, tt.key, tt.val+"2", 0)
			if got, _ := v.get(tt.db, tt.key); got != tt.val+"2" {
				t.Fatal("overwrite not visible")
			}
			if !v.del(tt.db, tt.key) {
				t.Fatal("Delete of existing key returned false")
			}
			if v.del(tt.db, tt.key) {
				t.Fatal("second Delete returned true")
			}
			if _, ok := v.get(tt.db, tt.key); ok {
				t.Fatal("key visible after Delete")
			}
			if _, found := v.storedMeta(uint8(tt.db), tt.key); found {
				t.Fatal("meta record left after Delete")
			}
		})
	}
	v.t = t
}

// Values returned by Get are copies owned by the tier: changing the caller's
// input buffer after SetString must not change the stored value.
func TestSetStringCopiesInput(t *testing.T) {
	v := newEnv(t, defaultOpts())
	buf := []byte("original")
	v.do(func(tx *Tx) error { return tx.SetString(0, []byte("k"), buf, 0) })
	copy(buf, "XXXXXXXX")
	if got, _ := v.get(0, "k"); got != "original" {
		t.Fatalf("stored value aliased the input: %q", got)
	}
	v.demoteAll()
	if got, _ := v.get(0, "k"); got != "original" {
		t.Fatalf("cold value = %q", got)
	}
}

func TestDemotionKeepsBudget(t *testing.T) {
	for _, budget := range []int64{0, 1000, 4000, 20000} {
		t.Run(fmt.Sprintf("budget%d", budget), func(t *testing.T) {
			o := defaultOpts()
			o.HotBudget = budget
			v := newEnv(t, o)
			want := map[string]string{}
			for i := 0; i < 150; i++ {
				k := fmt.Sprintf("key:%03d", i)
				val := fmt.Sprintf("val:%d:%s", i, strings.Repeat("v", i%40))
				v.set(i%2, k, val, 0)
				want[fmt.Sprint(i%2, k)] = val
				used, b, _ := v.hotUsage()
				if used > b {
					t.Fatalf("after write %d: hot used %d > budget %d", i, used, b)
				}
			}
			if budget >= 4000 && v.e.Stats.Demotions.Load() == 0 {
				t.Fatal("no demotions though 150 keys exceed the budget")
			}
			_, _, n := v.hotUsage()
			if budget == 0 && n != 0 {
				t.Fatalf("%d hot keys with a zero budget", n)
			}
			for i := 0; i < 150; i++ {
				k := fmt.Sprintf("key:%03d", i)
				got, ok := v.get(i%2, k)
				if !ok || got != want[fmt.Sprint(i%2, k)] {
					t.Fatalf("%s = %q, %v; want %q", k, got, ok, want[fmt.Sprint(i%2, k)])
				}
				if used, b, _ := v.hotUsage(); used > b {
					t.Fatalf("after read of %s: hot used %d > budget %d", k, used, b)
				}
			}
		})
	}
}

// The hot tier's byte accounting must match the entries it holds.
func TestHotAccountingExact(t *testing.T) {
	v := newEnv(t, defaultOpts())
	v.set(0, "a", "1", 0)
	v.set(0, "a", "12345", 0) // overwrite re-accounts
	v.set(1, "bb", "xyz", 0)
	v.set(0, "c", "gone", 0)
	v.del(0, "c")
	used, _, n := v.hotUsage()
	want := allocSize(1+1) + allocSize(5) + entryOverhead + allocSize(2+1) + allocSize(3) + entryOverhead
	if used != want || n != 2 {
		t.Fatalf("hot used %d (%d keys), want %d (2 keys)", used, n, want)
	}
	v.do(func(tx *Tx) error { return tx.FlushAll() })
	if used, _, n := v.hotUsage(); used != 0 || n != 0 {
		t.Fatalf("after FLUSHALL hot used %d, %d keys", used, n)
	}
}

func TestSetHotBudgetDemotes(t *testing.T) {
	v := newEnv(t, defaultOpts())
	for i := 0; i < 20; i++ {
		v.set(0, fmt.Sprint("k", i), "v", 0)
	}
	if _, _, n := v.hotUsage(); n != 20 {
		t.Fatalf("hot keys = %d, want 20", n)
	}
	v.e.SetHotBudget(500)
	used, b, n := v.hotUsage()
	if b != 500 || used > 500 || n == 0 || n >= 20 {
		t.Fatalf("after SetHotBudget(500): used %d budget %d keys %d", used, b, n)
	}
	// The most recently written keys are the ones kept.
	if !v.isHot(0, "k19") || v.isHot(0, "k0") {
		t.Fatal("demotion did not follow LRU order")
	}
	if d := v.e.Stats.Demotions.Load(); d != int64(20-n) {
		t.Fatalf("Demotions = %d, want %d", d, 20-n)
	}
}

func TestLRUOrderFollowsReads(t *testing.T) {
	// Writes stay hot only up to an eighth of the budget each, so the
	// smallest budget holding these entries holds exactly eight of them.
	size := allocSize(2+1) + allocSize(1) + entryOverhead
	o := defaultOpts()
	o.HotBudget = 8 * size
	v := newEnv(t, o)
	for i := 1; i <= 8; i++ {
		v.set(0, fmt.Sprint("k", i), "v", 0)
	}
	// Touch k1: k2 is now the least recently used.
	v.get(0, "k1")
	v.set(0, "k9", "v", 0)
	for i := 1; i <= 9; i++ {
		k := fmt.Sprint("k", i)
		if want := i != 2; v.isHot(0, k) != want {
			t.Errorf("%s hot = %v, want %v", k, !want, want)
		}
	}
}

func TestPromotionPolicy(t *testing.T) {
	tests := []struct {
		name     string
		minHits  int
		coldMax  int64
		budget   int64
		valLen   int
		reads    int
		promoted int // read number (1-based) that promotes; 0: never
	}{
		{"first touch", 1, 1 << 20, 1 << 20, 10, 3, 1},
		{"zero min hits means one", 0, 1 << 20, 1 << 20, 10, 3, 1},
		{"two hits", 2, 1 << 20, 1 << 20, 10, 3, 2},
		{"three hits", 3, 1 << 20, 1 << 20, 10, 4, 3},
		{"over ColdReadMaxBytes", 1, 100, 1 << 20, 200, 4, 0},
		{"over ColdReadMaxBytes two hits", 2, 100, 1 << 20, 200, 4, 0},
		{"over an eighth of the budget", 1, 1 << 20, 8 * 200, 200, 4, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := defaultOpts()
			o.PromoteMinHits = tt.minHits
			o.ColdReadMaxBytes = tt.coldMax
			o.HotBudget = tt.budget
			v := newEnv(t, o)
			val := strings.Repeat("p", tt.valLen)
			v.set(0, "k", val, 0)
			v.demoteAll()
			st := &v.e.Stats
			for r := 1; r <= tt.reads; r++ {
				p0, c0 := st.Promotions.Load(), st.ColdReads.Load()
				wasHot := v.isHot(0, "k")
				got, ok := v.get(0, "k")
				if !ok || got != val {
					t.Fatalf("read %d: wrong value", r)
				}
				dp, dc := st.Promotions.Load()-p0, st.ColdReads.Load()-c0
				switch {
				case wasHot:
					if dp != 0 || dc != 0 {
						t.Fatalf("read %d of a hot key: promotions +%d cold reads +%d", r, dp, dc)
					}
				case r == tt.promoted:
					if dp != 1 || dc != 0 || !v.isHot(0, "k") {
						t.Fatalf("read %d: promotions +%d cold reads +%d hot %v; want promoted", r, dp, dc, v.isHot(0, "k"))
					}
				default:
					if dp != 0 || dc != 1 || v.isHot(0, "k") {
						t.Fatalf("read %d: promotions +%d cold reads +%d hot %v; want a cold read", r, dp, dc, v.isHot(0, "k"))
					}
				}
			}
			if tt.promoted == 0 && v.isHot(0, "k") {
				t.Fatal("value promoted though the policy forbids it")
			}
		})
	}
}

func TestSetPolicyAtRunTime(t *testing.T) {
	o := defaultOpts()
	o.PromoteMinHits = 5
	v := newEnv(t, o)
	v.set(0, "k", "v", 0)
	v.demoteAll()
	v.get(0, "k")
	if v.isHot(0, "k") {
		t.Fatal("promoted on first read with PromoteMinHits=5")
	}
	v.e.SetPolicy(0, 1<<20)
	v.get(0, "k")
	if !v.isHot(0, "k") {
		t.Fatal("not promoted after SetPolicy(1)")
	}
	v.demoteAll()
	v.e.SetPolicy(1, 0)
	v.get(0, "k")
	if v.isHot(0, "k") {
		t.Fatal("promoted though ColdReadMaxBytes is 0")
	}
}

func TestPeekNeverPromotes(t *testing.T) {
	o := defaultOpts()
	o.PromoteMinHits = 2
	v := newEnv(t, o)
	v.set(0, "k", "v", 0)
	v.demoteAll()
	p0 := v.e.Stats.Promotions.Load()
	for i := 0; i < 5; i++ {
		if got, _, ok := v.peek(0, "k"); !ok || got != "v" {
			t.Fatalf("Peek = %q %v", got, ok)
		}
	}
	if v.isHot(0, "k") || v.e.Stats.Promotions.Load() != p0 {
		t.Fatal("Peek promoted a cold key")
	}
	// Peeks do not count towards admission either: one Get is still only
	// the first hit.
	v.get(0, "k")
	if v.isHot(0, "k") {
		t.Fatal("Peeks counted as admission hits")
	}
	v.get(0, "k")
	if !v.isHot(0, "k") {
		t.Fatal("second Get did not promote")
	}
}

func TestWritesStayHotUnlessLarge(t *testing.T) {
	o := defaultOpts()
	o.HotBudget = 8000 // an eighth is 1000 bytes
	v := newEnv(t, o)
	v.set(0, "small", "v", 0)
	big := strings.Repeat("b", 2000)
	v.set(0, "big", big, 0)
	if !v.isHot(0, "small") || v.isHot(0, "big") {
		t.Fatalf("small hot %v, big hot %v; want true, false", v.isHot(0, "small"), v.isHot(0, "big"))
	}
	// Overwriting a hot key with a large value drops the stale hot copy.
	v.set(0, "small", big, 0)
	if v.isHot(0, "small") {
		t.Fatal("large overwrite left a hot copy")
	}
	if got, _ := v.get(0, "small"); got != big {
		t.Fatal("large overwrite not visible")
	}
}

func TestKeyspaceHitsMisses(t *testing.T) {
	v := newEnv(t, defaultOpts())
	st := &v.e.Stats
	v.set(0, "hot", "v", 0)
	v.set(0, "cold", "v", 0)
	v.demoteAll()
	// Lookups count only when the transaction counts them (a client's
	// read); Spillway's own and a write command's count nothing.
	v.get(0, "hot")
	v.get(0, "missing")
	if h, m := st.KeyspaceHits.Load(), st.KeyspaceMisses.Load(); h != 0 || m != 0 {
		t.Fatalf("uncounted lookups: hits %d misses %d, want 0 and 0", h, m)
	}
	v.do(func(tx *Tx) error {
		tx.CountLookups(true)
		for _, k := range []string{"hot", "missing"} {
			if _, err := tx.Get(0, []byte(k)); err != nil {
				return err
			}
		}
		if _, err := tx.Peek(0, []byte("missing")); err != nil {
			return err
		}
		_, err := tx.Get(0, []byte("cold"))
		tx.AddLookup(false)
		tx.CountLookups(false)
		_, err2 := tx.Get(0, []byte("hot"))
		tx.AddLookup(true)
		return errors.Join(err, err2)
	})
	if h, m := st.KeyspaceHits.Load(), st.KeyspaceMisses.Load(); h != 2 || m != 3 {
		t.Fatalf("hits %d misses %d, want 2 and 3", h, m)
	}
	st.ResetStats()
	if st.KeyspaceHits.Load() != 0 || st.Promotions.Load() != 0 {
		t.Fatal("ResetStats left counters")
	}
}

func TestAbortDiscardsWrites(t *testing.T) {
	v := newEnv(t, defaultOpts())
	v.set(0, "k", "old", 0)
	tx := v.e.begin()
	if err := tx.SetString(0, []byte("k"), []byte("new"), 0); err != nil {
		t.Fatal(err)
	}
	if err := tx.SetString(0, []byte("n"), []byte("new"), 0); err != nil {
		t.Fatal(err)
	}
	if tx.DBSize(0) != 2 {
		t.Fatalf("DBSize inside tx = %d, want 2", tx.DBSize(0))
	}
	tx.abort()
	if got, _ := v.get(0, "k"); got != "old" {
		t.Fatalf("after Abort k = %q, want old", got)
	}
	if _, ok := v.get(0, "n"); ok {
		t.Fatal("aborted key visible")
	}
	if n, _ := v.sizes(0); n != 1 {
		t.Fatalf("DBSize after Abort = %d, want 1", n)
	}
}
