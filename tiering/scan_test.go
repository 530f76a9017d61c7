package tiering

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/spillway/spillway/codec"
)

// scanAll runs a full SCAN iteration in db with the given options and
// returns every key returned (duplicates kept) and the number of calls.
func (v *env) scanAll(db int, opts ScanOptions, between func()) ([]string, int) {
	v.t.Helper()
	var out []string
	var cursor uint64
	calls := 0
	for {
		var page [][]byte
		v.do(func(tx *Tx) (err error) {
			page, cursor, err = tx.Scan(db, cursor, opts, nil)
			return err
		})
		calls++
		for _, k := range page {
			out = append(out, string(k))
		}
		if cursor >= 1<<ScanCursorBits {
			v.t.Fatalf("SCAN cursor %d is not below 2^%d", cursor, ScanCursorBits)
		}
		if cursor == 0 {
			return out, calls
		}
		if calls > 10000 {
			v.t.Fatal("SCAN does not terminate")
		}
		if between != nil {
			between()
		}
	}
}

func TestScanFilters(t *testing.T) {
	v := newEnv(t, defaultOpts())
	v.writeRaw(rawHash{db: 0, key: "user:hash", version: 1 << 40, fields: 2}, rawHash{db: 0, key: "other:hash", version: 1<<40 + 1, fields: 2})
	for i := 0; i < 30; i++ {
		v.set(0, fmt.Sprint("user:", i), "v", 0)
		v.set(0, fmt.Sprint("item:", i), "v", 0)
	}
	v.set(1, "user:db1", "v", 0)
	soon := v.now() + 30
	v.set(0, "user:expiring", "v", soon)
	v.demoteAll()
	for i := 0; i < 10; i++ {
		v.get(0, fmt.Sprint("user:", i)) // some hot, some cold
	}
	waitPast(soon)
	users := func(extra ...string) []string {
		var w []string
		for i := 0; i < 30; i++ {
			w = append(w, fmt.Sprint("user:", i))
		}
		w = append(w, extra...)
		slices.Sort(w)
		return w
	}
	prefix := func(p string) func([]byte) bool {
		return func(k []byte) bool { return bytes.HasPrefix(k, []byte(p)) }
	}
	tests := []struct {
		name string
		opts ScanOptions
		want []string
	}{
		{"match strings", ScanOptions{Count: 7, Match: prefix("user:"), Type: codec.TypeString}, users()},
		{"match any type", ScanOptions{Count: 3, Match: prefix("user:")}, users("user:hash")},
		{"hashes", ScanOptions{Count: 1, Type: codec.TypeHash}, []string{"other:hash", "user:hash"}},
		{"lists", ScanOptions{Count: 20, Type: codec.TypeList}, nil},
		{"match nothing", ScanOptions{Count: 5, Match: prefix("zzz")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v.t = t
			got, _ := v.scanAll(0, tt.opts, nil)
			slices.Sort(got)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("scan = %v\nwant   %v", got, tt.want)
			}
		})
	}
	v.t = t
}

func TestScanCount(t *testing.T) {
	v := newEnv(t, defaultOpts())
	const n = 100
	for i := 0; i < n; i++ {
		v.set(4, fmt.Sprint("k", i), "v", 0)
	}
	for _, count := range []int{0, 1, 7, 20, 99, 100, 1000} {
		got, calls := v.scanAll(4, ScanOptions{Count: count}, nil)
		if len(got) != n {
			t.Fatalf("Count %d: %d keys returned, want %d (no churn, no duplicates)", count, len(got), n)
		}
		c := count
		if c <= 0 {
			c = 10
		}
		// Each call visits about Count keys; the last may find none left.
		if min := (n + c - 1) / c; calls < min || calls > min+1 {
			t.Fatalf("Count %d: %d calls, want %d or %d", count, calls, min, min+1)
		}
	}
	if got, calls := v.scanAll(5, ScanOptions{Count: 10}, nil); len(got) != 0 || calls != 1 {
		t.Fatalf("empty db: %v in %d calls", got, calls)
	}
}

// The SCAN guarantee: a key present for the whole iteration is returned at
// least once, whatever moves between tiers or changes around it; a key
// returned is live when returned.
func TestScanGuaranteeUnderChurn(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 99))
			o := defaultOpts()
			o.HotBudget = 4000 + int64(r.IntN(4000))
			o.PromoteMinHits = 1 + r.IntN(2)
			v := newEnv(t, o)
			const stable = 150
			for i := 0; i < stable; i++ {
				v.set(0, fmt.Sprint("stable:", i), fmt.Sprint(i), 0)
			}
			var temp []string
			soon := v.now() + 20
			for i := 0; i < 20; i++ {
				v.set(0, fmt.Sprint("expiring:", i), "v", soon)
			}
			waitPast(soon)
			churn := func() {
				for n := r.IntN(6); n > 0; n-- {
					switch r.IntN(6) {
					case 0:
						k := fmt.Sprint("temp:", r.IntN(1000))
						v.set(0, k, strings.Repeat("t", r.IntN(300)), 0)
						temp = append(temp, k)
					case 1:
						if len(temp) > 0 {
							i := r.IntN(len(temp))
							v.del(0, temp[i])
							temp = slices.Delete(temp, i, i+1)
						}
					case 2:
						v.get(0, fmt.Sprint("stable:", r.IntN(stable)))
					case 3:
						v.demoteAll()
					case 4:
						v.set(0, fmt.Sprint("stable:", r.IntN(stable)), fmt.Sprint("rewritten", r.IntN(9)), 0)
					case 5:
						v.set(1, fmt.Sprint("other:", r.IntN(50)), "v", 0)
					}
				}
			}
			count := 1 + r.IntN(20)
			seen := map[string]int{}
			var cursor uint64
			for calls := 0; ; calls++ {
				if calls > 5000 {
					t.Fatal("SCAN does not terminate")
				}
				v.do(func(tx *Tx) error {
					page, next, err := tx.Scan(0, cursor, ScanOptions{Count: count}, nil)
					if err != nil {
						return err
					}
					for _, k := range page {
						seen[string(k)]++
						if strings.HasPrefix(string(k), "expiring:") || strings.HasPrefix(string(k), "other:") {
							t.Fatalf("SCAN returned %q", k)
						}
						if e, err := tx.Peek(0, k); err != nil || e == nil {
							t.Fatalf("SCAN returned %q, which is not live (%v)", k, err)
						}
					}
					cursor = next
					return nil
				})
				if cursor == 0 {
					break
				}
				churn()
			}
			for i := 0; i < stable; i++ {
				if seen[fmt.Sprint("stable:", i)] == 0 {
					t.Fatalf("stable:%d never returned (count %d)", i, count)
				}
			}
			v.checkInvariants()
		})
	}
}

// Cursors are hash prefixes below 2^ScanCursorBits; keys sharing one are
// returned by the same call, whatever COUNT says, so a walk neither skips
// nor repeats keys and ends. Narrow cursors (a few bits) make such runs
// long: each call returns whole runs, hot and cold keys alike.
func TestScanCursorPrefixRuns(t *testing.T) {
	v := newEnv(t, defaultOpts())
	const n = 400
	for i := 0; i < n; i++ {
		v.set(0, fmt.Sprint("k", i), "v", 0)
	}
	v.demoteAll()
	for i := 0; i < n; i += 3 {
		v.get(0, fmt.Sprint("k", i)) // some back in the hot tier
	}
	for _, bits := range []uint{1, 4, 9, ScanCursorBits, 64} {
		for _, count := range []int{1, 7, 1000} {
			seen := map[string]int{}
			var cursor uint64
			calls := 0
			for {
				var page [][]byte
				var next uint64
				v.do(func(tx *Tx) (err error) {
					page, next, err = tx.scan(0, cursor, bits, ScanOptions{Count: count}, nil)
					return err
				})
				calls++
				if bits < 64 && next>>bits != 0 {
					t.Fatalf("bits %d: cursor %#x wider than %d bits", bits, next, bits)
				}
				if next != 0 && next <= cursor {
					t.Fatalf("bits %d count %d: cursor went from %#x to %#x", bits, count, cursor, next)
				}
				for _, k := range page {
					seen[string(k)]++
				}
				// Every key returned has a hash prefix in [cursor, next).
				for _, k := range page {
					p := codec.KeyHash(k) >> (64 - bits)
					if p < cursor || next != 0 && p >= next {
						t.Fatalf("bits %d: key %q (prefix %#x) returned for cursor range [%#x, %#x)", bits, k, p, cursor, next)
					}
				}
				if cursor = next; cursor == 0 {
					break
				}
				if calls > 2*n {
					t.Fatalf("bits %d count %d: SCAN does not terminate", bits, count)
				}
			}
			if len(seen) != n {
				t.Fatalf("bits %d count %d: %d distinct keys returned, want %d", bits, count, len(seen), n)
			}
			for k, c := range seen {
				if c != 1 {
					t.Fatalf("bits %d count %d: %q returned %d times", bits, count, k, c)
				}
			}
			if bits <= 4 && calls > 1<<bits {
				t.Fatalf("bits %d count %d: %d calls for %d possible cursors", bits, count, calls, 1<<bits)
			}
		}
	}
	// A cursor Scan never returns (2^ScanCursorBits or more) ends the walk.
	v.do(func(tx *Tx) error {
		for _, c := range []uint64{1 << ScanCursorBits, 1<<64 - 1} {
			page, next, err := tx.Scan(0, c, ScanOptions{}, nil)
			if err != nil || next != 0 || len(page) != 0 {
				t.Fatalf("Scan(cursor %#x) = %d keys, next %#x, %v; want none, 0", c, len(page), next, err)
			}
		}
		return nil
	})
}

// The cursor is a hash: it stays valid across a restart.
func TestScanCursorSurvivesRestart(t *testing.T) {
	v := newEnv(t, defaultOpts())
	for i := 0; i < 60; i++ {
		v.set(0, fmt.Sprint("k", i), "v", 0)
	}
	seen := map[string]bool{}
	var cursor uint64
	for calls := 0; ; calls++ {
		var page [][]byte
		v.do(func(tx *Tx) (err error) {
			page, cursor, err = tx.Scan(0, cursor, ScanOptions{Count: 9}, nil)
			return err
		})
		for _, k := range page {
			seen[string(k)] = true
		}
		if cursor == 0 {
			break
		}
		if calls%2 == 0 {
			v.reopen()
		}
	}
	if len(seen) != 60 {
		t.Fatalf("%d keys seen across restarts, want 60", len(seen))
	}
}

// Within one transaction (a command today, MULTI/EXEC later), SCAN and KEYS
// must agree with what the transaction itself wrote, as DBSize does.
func TestScanSeesOwnWrites(t *testing.T) {
	v := newEnv(t, defaultOpts())
	v.set(0, "gone", "v", 0)
	v.do(func(tx *Tx) error {
		if err := tx.SetString(0, []byte("new"), []byte("v"), 0); err != nil {
			return err
		}
		if _, err := tx.Delete(0, []byte("gone")); err != nil {
			return err
		}
		keys, err := tx.Keys(0, nil)
		if err != nil {
			return err
		}
		if got := fmt.Sprintf("%q", keys); got != `["new"]` || tx.DBSize(0) != 1 {
			t.Errorf("inside the transaction KEYS = %s, DBSIZE = %d; want [\"new\"] and 1", got, tx.DBSize(0))
		}
		return nil
	})
}

func TestRandomKey(t *testing.T) {
	v := newEnv(t, defaultOpts())
	randomKey := func(db int) string {
		var k []byte
		v.do(func(tx *Tx) (err error) { k, err = tx.RandomKey(db); return err })
		if k == nil {
			return "<nil>"
		}
		return string(k)
	}
	if got := randomKey(0); got != "<nil>" {
		t.Fatalf("RandomKey of an empty db = %q", got)
	}
	live := map[string]bool{}
	for i := 0; i < 10; i++ {
		k := fmt.Sprint("k", i)
		v.set(0, k, "v", 0)
		live[k] = true
	}
	v.set(1, "elsewhere", "v", 0)
	soon := v.now() + 20
	for i := 0; i < 10; i++ {
		v.set(0, fmt.Sprint("exp", i), "v", soon)
	}
	v.demoteAll()
	v.get(0, "k3")
	waitPast(soon)
	seen := map[string]bool{}
	for i := 0; i < 200; i++ {
		k := randomKey(0)
		if !live[k] {
			t.Fatalf("RandomKey returned %q", k)
		}
		seen[k] = true
	}
	if len(seen) < 5 {
		t.Fatalf("RandomKey returned only %v over 200 calls", seen)
	}
	v.do(func(tx *Tx) error { return tx.FlushDB(0) })
	if got := randomKey(0); got != "<nil>" {
		t.Fatalf("RandomKey after FLUSHDB = %q", got)
	}
}

// A live key must be found however many expired (not yet swept) keys hash
// after it: RandomKey should wrap around instead of giving up.
func TestRandomKeyFindsLiveAmongExpired(t *testing.T) {
	v := newEnv(t, defaultOpts())
	// A live key whose hash is in the lowest 1/20000 of the space.
	var liveKey string
	for i := 0; ; i++ {
		k := fmt.Sprint("live", i)
		if codec.KeyHash([]byte(k)) < ^uint64(0)/20000 {
			liveKey = k
			break
		}
	}
	// Expired keys written without index entries, so no sweeper removes them.
	var raws []rawHash
	for i := 0; i < 1000; i++ {
		raws = append(raws, rawHash{db: 0, key: fmt.Sprint("dead", i), version: 1<<40 + uint64(i), expireAt: 1, noIndex: true})
	}
	v.writeRaw(raws...)
	v.set(0, liveKey, "v", 0)
	nils := 0
	for i := 0; i < 5; i++ {
		var k []byte
		v.do(func(tx *Tx) (err error) { k, err = tx.RandomKey(0); return err })
		if k == nil {
			nils++
		} else if string(k) != liveKey {
			t.Fatalf("RandomKey = %q, want %q", k, liveKey)
		}
	}
	if nils > 0 {
		t.Fatalf("RandomKey returned nil %d times out of 5 though %q is live", nils, liveKey)
	}
}
