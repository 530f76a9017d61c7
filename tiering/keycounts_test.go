package tiering

import (
	"fmt"
	"testing"
	"time"

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

// After a crash (no counts recorded), the keys are counted in the
// background from a snapshot taken at the start, while commands run: the
// writes meanwhile (new keys, deletions, expiries set and removed, in
// several databases) are counted on top of it, what needs exact counts
// (DBSIZE, FLUSHDB, a graceful Close) finishes the count first, and the
// shortcuts that trust the counts (all keys hot, an empty database) wait
// for it.
func TestKeyCountInTheBackground(t *testing.T) {
	for _, tc := range []struct {
		name   string
		finish func(v *env) // ends the count, by whatever needs it
	}{
		{"DBSIZE", func(v *env) { v.sizes(0) }},
		{"FLUSHDB", func(v *env) { v.do(func(tx *Tx) error { return tx.FlushDB(2) }) }},
		{"graceful close", func(v *env) { v.reopen() }},
		{"background loop", func(v *env) {
			v.e.mu.Lock()
			v.e.opts.keyCountNoLoop = false
			v.e.mu.Unlock()
			v.e.wg.Add(1)
			go v.e.countLoop()
			for deadline := time.Now().Add(10 * time.Second); ; {
				v.e.mu.Lock()
				done := v.e.count == nil
				v.e.mu.Unlock()
				if done {
					return
				}
				if time.Now().After(deadline) {
					t.Fatal("the background count did not end")
				}
				time.Sleep(time.Millisecond)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultOpts()
			o.keyCountSync, o.keyCountNoLoop = 7, true
			v := newEnv(t, o)
			for i := range 120 {
				var at int64
				if i%4 == 0 {
					at = v.now() + 3_600_000
				}
				v.set(i%3, fmt.Sprint("k", i), "v", at)
			}
			v.crash()
			if v.e.count == nil || v.e.countsRestored {
				t.Fatal("the start after a crash did not leave a count running")
			}
			// Every key is cold and the counts hold no key yet: reads
			// must not take the all-hot shortcut.
			if got, ok := v.get(2, "k5"); !ok || got != "v" {
				t.Fatalf("k5 = %q (found %v) while counting", got, ok)
			}
			// Meanwhile: 5 new keys in db 0 (one with an expiry), one
			// overwrite, 3 deletions and an expiry removed in db 1, an
			// expiry set in db 2.
			for i := range 5 {
				var at int64
				if i == 0 {
					at = v.now() + 3_600_000
				}
				v.set(0, fmt.Sprint("new", i), "v", at)
			}
			v.set(0, "k3", "again", 0)
			later := v.now() + 60_000
			v.do(func(tx *Tx) error {
				for _, k := range []string{"k1", "k4", "k7"} {
					if _, err := tx.Delete(1, []byte(k)); err != nil {
						return err
					}
				}
				if _, err := tx.SetExpire(1, []byte("k16"), 0); err != nil {
					return err
				}
				_, err := tx.SetExpire(2, []byte("k2"), later)
				return err
			})
			if v.e.count == nil {
				t.Fatal("a write finished the count")
			}
			v.do(func(tx *Tx) error {
				if tx.allHot(tx.pdb(0)) {
					t.Error("all-hot shortcut taken while counting")
				}
				k, err := tx.RandomKey(1)
				if err == nil && k == nil {
					t.Error("RANDOMKEY found db 1 empty while counting")
				}
				return err
			})
			if v.e.count == nil {
				t.Fatal("RANDOMKEY finished the count")
			}
			tc.finish(v)
			if v.e.count != nil {
				t.Fatal("the count still runs")
			}
			want := [3][2]int64{{40 + 5, 10 + 1}, {40 - 3, 10 - 1 - 1}, {40, 10 + 1}} // keys, expires
			if tc.name == "FLUSHDB" {
				want[2] = [2]int64{}
			}
			for db, w := range want {
				if n, x := v.sizes(db); n != w[0] || x != w[1] {
					t.Errorf("db %d: %d keys, %d with an expiry; want %d and %d", db, n, x, w[0], w[1])
				}
			}
			v.checkInvariants() // the counters equal a scan of the store
		})
	}
}

// A key count that fails in the background (an unreadable meta record)
// leaves the server running, and a graceful Close then records no counts:
// the next start counts again rather than trusting wrong ones.
func TestKeyCountFailureRecordsNoCounts(t *testing.T) {
	o := defaultOpts()
	o.keyCountSync, o.keyCountNoLoop = 1, true
	v := newEnv(t, o)
	for i := range 20 {
		v.set(0, fmt.Sprint("k", i), "v", 0)
	}
	b := v.s.NewBatch()
	// Physical database 255 sorts after every key of database 0.
	if err := b.Set(codec.AppendMetaKey(nil, 255, []byte("bad")), []byte{0xff, 0xff}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	v.crash()
	if v.e.count == nil {
		t.Fatal("no count running after the crash")
	}
	v.sizes(0) // finishes it: it fails on the bad record
	if !v.e.countFailed {
		t.Fatal("the count did not fail")
	}
	v.e.Close()
	if _, found, err := v.s.Get(codec.AppendSystemKey(nil, codec.SysKeyCounts), nil); err != nil || found {
		t.Fatalf("counts recorded after a failed count (found %v, %v)", found, err)
	}
}
