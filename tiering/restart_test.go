package tiering

import (
	"fmt"
	"testing"

	"github.com/spillway/spillway/coldstore"
)

// Keys, values, absolute expiry times and counters survive closing and
// reopening the engine and the store; keys that expired while it was down
// are invisible and swept.
func TestRestartKeepsKeysAndTTLs(t *testing.T) {
	o := defaultOpts()
	o.HotBudget = 3000 // some keys hot at shutdown, most cold
	v := newEnv(t, o)
	now := v.now()
	type rec struct {
		val string
		at  int64
	}
	want := map[[2]string]rec{}
	for i := 0; i < 60; i++ {
		db := i % 3
		k := fmt.Sprint("key:", i)
		var at int64
		switch i % 4 {
		case 1:
			at = now + 3_600_000 + int64(i)
		case 2:
			at = now + 86_400_000*365
		}
		val := fmt.Sprintf("value %d", i)
		v.set(db, k, val, at)
		want[[2]string{fmt.Sprint(db), k}] = rec{val, at}
	}
	v.do(func(tx *Tx) error { return tx.SwapDB(1, 2) })
	soon := v.now() + 40
	v.set(0, "short", "v", soon)
	sizes := func() (n [3]int64, x [3]int64) {
		for db := 0; db < 3; db++ {
			n[db], x[db] = v.sizes(db)
		}
		return
	}
	n0, x0 := sizes()
	v.reopen()
	if n, x := sizes(); n != n0 || x != x0 {
		t.Fatalf("after reopen DBSize %v Expires %v, want %v %v", n, x, n0, x0)
	}
	v.checkInvariants()
	check := func() {
		t.Helper()
		for k, w := range want {
			db := map[string]int{"0": 0, "1": 2, "2": 1}[k[0]] // swapped
			got, at, ok := v.peek(db, k[1])
			if !ok || got != w.val || at != w.at {
				t.Fatalf("db %d %s = %q at %d (%v), want %q at %d", db, k[1], got, at, ok, w.val, w.at)
			}
		}
	}
	check()
	v.close()
	waitPast(soon)
	v.open()
	if _, ok := v.get(0, "short"); ok {
		t.Fatal("key that expired while the engine was down is visible")
	}
	v.sweepAll()
	n, x := sizes()
	if n[0] != n0[0]-1 || x[0] != x0[0]-1 {
		t.Fatalf("db 0 DBSize %d Expires %d after expiry, want %d %d", n[0], x[0], n0[0]-1, x0[0]-1)
	}
	check()
	v.checkInvariants()
}

// A value written under appendfsync always and waited for is on disk.
func TestRestartFsyncAlways(t *testing.T) {
	v := newEnv(t, defaultOpts())
	v.s.SetFsync(coldstore.FsyncAlways)
	tx := v.e.begin()
	if err := tx.SetString(0, []byte("k"), []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	p, err := tx.commit()
	if err != nil {
		t.Fatal(err)
	}
	if p.IsZero() {
		t.Fatal("Commit under appendfsync always returned nothing to wait for")
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	v.reopen()
	if got, ok := v.get(0, "k"); !ok || got != "v" {
		t.Fatalf("k = %q %v", got, ok)
	}
}
