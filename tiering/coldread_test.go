package tiering

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// coldGet runs the three steps of a lock-free cold read as cmdGet does,
// with between (if not nil) run after the probe and before the store read:
// the window in which other transactions commit.
func (v *env) coldGet(db int, key string, between func()) (string, bool, bool) {
	v.t.Helper()
	tx := v.e.begin()
	e, probe, err := tx.GetOrProbe(db, []byte(key))
	cold := probe.Cold()
	if err == nil && cold {
		tx.abort()
		if between != nil {
			between()
		}
		var b ColdBuffers
		var read *Entry
		read, err = v.e.ReadCold(probe, []byte(key), &b)
		tx = v.e.begin()
		if err == nil {
			e, err = tx.FinishGet(db, []byte(key), probe, read)
		}
	}
	if err != nil {
		tx.abort()
		v.t.Fatalf("cold get %s: %v", key, err)
	}
	// Read under the lock, as the server's reply is written: a hot
	// string's entry is reused by the next write of the key.
	var val string
	if e != nil {
		val = string(e.Str)
	}
	if _, err := tx.commit(); err != nil {
		v.t.Fatal(err)
	}
	return val, e != nil, cold
}

func TestColdReadSteps(t *testing.T) {
	big := strings.Repeat("x", 4000) // over budget/8: never hot
	cases := []struct {
		name      string
		setup     func(v *env)
		between   func(v *env)
		wantVal   string
		wantFound bool
		wantCold  bool
		wantHot   bool // key hot afterwards
		after     string
	}{
		{"hot key answered in step 1", func(v *env) { v.set(0, "k", "v", 0) }, nil, "v", true, false, true, "v"},
		{"cold key read and promoted", func(v *env) { v.set(0, "k", "v", 0); v.demoteAll() }, nil, "v", true, true, true, "v"},
		{"missing key while all are hot: no store read", func(v *env) { v.set(0, "other", "v", 0) }, nil, "", false, false, false, ""},
		{"missing key with cold keys", func(v *env) { v.set(0, "other", "v", 0); v.demoteAll() }, nil, "", false, true, false, ""},
		{"write in between: newer value read, not cached", func(v *env) { v.set(0, "k", "v", 0); v.demoteAll() },
			func(v *env) { v.set(0, "k", big, 0) }, big, true, true, false, big},
		{"write in between to another key: still promoted", func(v *env) { v.set(0, "k", "v", 0); v.demoteAll() },
			func(v *env) { v.set(0, "z", "w", 0) }, "v", true, true, false, "v"},
		{"delete in between", func(v *env) { v.set(0, "k", "v", 0); v.demoteAll() },
			func(v *env) { v.del(0, "k") }, "", false, true, false, ""},
		{"SWAPDB in between: redone under the lock", func(v *env) {
			v.set(0, "k", "zero", 0)
			v.set(1, "k", "one", 0)
			v.demoteAll()
		}, func(v *env) { v.do(func(tx *Tx) error { return tx.SwapDB(0, 1) }) }, "one", true, true, true, "one"},
		{"expired when read: deleted", func(v *env) {
			v.set(0, "k", "v", v.now()+30)
			v.demoteAll()
		}, func(v *env) { time.Sleep(60 * time.Millisecond) }, "", false, true, false, ""},
		{"promoted in between: the hot copy answers", func(v *env) { v.set(0, "k", "v", 0); v.demoteAll() },
			func(v *env) { v.get(0, "k") }, "v", true, true, true, "v"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultOpts()
			o.HotBudget = 16 << 10
			o.PromoteMinHits = 1
			v := newEnv(t, o)
			tc.setup(v)
			var between func()
			if tc.between != nil {
				between = func() { tc.between(v) }
			}
			val, found, cold := v.coldGet(0, "k", between)
			if val != tc.wantVal || found != tc.wantFound || cold != tc.wantCold {
				t.Fatalf("got %.20q found %v cold %v, want %.20q %v %v", val, found, cold, tc.wantVal, tc.wantFound, tc.wantCold)
			}
			if tc.wantHot && !v.isHot(0, "k") {
				t.Fatal("key not hot afterwards")
			}
			if got, ok := v.get(0, "k"); got != tc.after || ok != (tc.after != "") {
				t.Fatalf("Get afterwards = %.20q %v, want %.20q", got, ok, tc.after)
			}
			v.checkInvariants()
		})
	}
}

// Lock-free cold reads racing writers, demotion and promotion: every value
// read is whole and belongs to its key, and a reader never sees a key's
// counter go backwards (each read is linearizable).
func TestColdReadsRacingWriters(t *testing.T) {
	o := defaultOpts()
	o.HotBudget = 3000
	o.PromoteMinHits = 2
	v := newEnv(t, o)
	const keys = 40
	for k := range keys {
		v.set(0, fmt.Sprint("key", k), string(selfValue(fmt.Sprint("key", k), 0, 0, 100)), 0)
	}
	deadline := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	var counters [keys]int
	var mu sync.Mutex
	for w := range 2 {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline) && i < 100_000; i++ {
				k := (i*7 + w) % keys
				key := fmt.Sprint("key", k)
				tx := v.e.begin()
				mu.Lock()
				counters[k]++
				n := counters[k]
				mu.Unlock()
				if err := tx.SetString(0, []byte(key), selfValue(key, w, n, 50+i%300), 0); err != nil {
					tx.abort()
					t.Error(err)
					return
				}
				if _, err := tx.commit(); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	errs := make(chan error, 4)
	for r := range 3 {
		wg.Go(func() {
			last := map[string]int{}
			for i := 0; time.Now().Before(deadline) && i < 100_000; i++ {
				key := fmt.Sprint("key", (i*13+r)%keys)
				val, found, _ := v.coldGet(0, key, nil)
				if !found {
					errs <- fmt.Errorf("%s missing", key)
					return
				}
				if err := checkValue(key, []byte(val)); err != nil {
					errs <- err
					return
				}
				n, _ := strconv.Atoi(strings.Split(val, "|")[2])
				if n < last[key] {
					errs <- fmt.Errorf("%s went back from counter %d to %d", key, last[key], n)
					return
				}
				last[key] = n
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	v.checkInvariants()
}
