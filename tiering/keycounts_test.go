package tiering

import (
	"testing"

	"github.com/spillway/spillway/codec"
)

// A graceful shutdown records the key counts and the next start uses them
// instead of scanning; the record is gone once the store is open again, a
// write after it was recorded deletes it, and an unreadable one means a
// scan. In every case the counts after the restart are the real ones.
func TestKeyCountsAcrossRestarts(t *testing.T) {
	countsKey := codec.AppendSystemKey(nil, codec.SysKeyCounts)
	recorded := func(v *env) bool {
		_, found, err := v.s.Get(countsKey, nil)
		if err != nil {
			t.Fatal(err)
		}
		return found
	}
	fill := func(v *env) {
		for i := range 50 {
			var at int64
			if i%5 == 0 {
				at = v.now() + 3_600_000
			}
			v.set(i%2, "k"+string(rune('a'+i%26))+string(rune('0'+i/26)), "v", at)
		}
	}
	cases := []struct {
		name     string
		after    func(v *env) // between Engine.Close and Store.Close
		restored bool         // the start uses the record
	}{
		{"graceful", func(v *env) {}, true},
		{"write after the counts were saved", func(v *env) { v.set(0, "late", "v", 0) }, false},
		{"another writer's write (an older build)", func(v *env) {
			if _, err := v.s.SetSync(codec.AppendSystemKey(nil, "scratch"), []byte("x")); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"sequence record missing", func(v *env) {
			if _, err := v.s.DeleteSync(codec.AppendSystemKey(nil, codec.SysKeyCountsSeq)); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"unreadable record", func(v *env) {
			b := v.s.NewBatch()
			if err := b.Set(countsKey, []byte{1, 2, 3}); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Commit(); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t, defaultOpts())
			fill(v)
			v.e.Close()
			if !recorded(v) {
				t.Fatal("graceful Close left no key counts record")
			}
			tc.after(v)
			if err := v.s.Close(); err != nil {
				t.Fatal(err)
			}
			v.e, v.s = nil, nil
			v.open()
			if recorded(v) {
				t.Fatal("the key counts record survived the start that used it")
			}
			if v.e.countsRestored != tc.restored {
				t.Fatalf("counts restored from the record: %v, want %v", v.e.countsRestored, tc.restored)
			}
			v.checkInvariants() // the counters equal a scan of the store
			if n0, _ := v.sizes(0); n0 == 0 {
				t.Fatal("the test stored nothing")
			}
		})
	}
}

// The all-hot shortcut (a miss in the hot tier needs no store lookup when
// every stored key is hot) never hides a key: with a budget that keeps
// some keys cold, every key reads back; with one that keeps all hot,
// misses still miss.
func TestAllHotShortcutNeverHidesColdKeys(t *testing.T) {
	for _, budget := range []int64{2000, 1 << 20} {
		o := defaultOpts()
		o.HotBudget = budget
		v := newEnv(t, o)
		for i := range 200 {
			v.set(0, "key:"+string(rune('A'+i%50))+string(rune('0'+i/50)), "value", 0)
		}
		for i := range 200 {
			k := "key:" + string(rune('A'+i%50)) + string(rune('0'+i/50))
			if got, ok := v.get(0, k); !ok || got != "value" {
				t.Fatalf("budget %d: %s = %q %v", budget, k, got, ok)
			}
		}
		if _, ok := v.get(0, "missing"); ok {
			t.Fatalf("budget %d: a missing key was found", budget)
		}
		v.checkInvariants()
		v.reopen() // every key cold: no shortcut until they are hot again
		for i := range 200 {
			k := "key:" + string(rune('A'+i%50)) + string(rune('0'+i/50))
			if got, ok := v.get(0, k); !ok || got != "value" {
				t.Fatalf("budget %d after reopen: %s = %q %v", budget, k, got, ok)
			}
		}
		v.checkInvariants()
	}
}
