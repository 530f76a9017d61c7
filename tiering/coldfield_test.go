package tiering

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spillway/spillway/codec"
)

// hset writes field = val into hash key (created if missing).
func (v *env) hset(db int, key, field, val string) {
	v.t.Helper()
	v.do(func(tx *Tx) error {
		c, err := tx.OpenColl(db, []byte(key), codec.TypeHash, true)
		if err != nil {
			return err
		}
		if _, err := c.Set([]byte(field), []byte(val)); err != nil {
			return err
		}
		return c.Close()
	})
}

// coldField runs the three steps of a lock-free field read as cmdHGet
// does, with between (if not nil) run after the probe and before the store
// reads. It returns the value, whether the field exists, whether the key
// was probed cold and whether step 3 used step 2's read (fresh).
func (v *env) coldField(db int, key, field string, between func()) (val string, found, cold, fresh bool, err error) {
	v.t.Helper()
	k, f := []byte(key), []byte(field)
	read := func(c *Coll) {
		if c != nil && err == nil {
			var b []byte
			b, found, err = c.Get(f)
			val = string(b)
		}
	}
	tx := v.e.begin()
	c, probe, err := tx.CollOrProbe(db, k, codec.TypeHash)
	cold = probe.Cold()
	if err == nil && cold {
		tx.abort()
		if between != nil {
			between()
		}
		var b ColdBuffers
		var e *Entry
		var got []byte
		var ok bool
		e, got, ok, err = v.e.ReadColdField(probe, k, f, &b)
		tx = v.e.begin()
		if err == nil {
			c, fresh, err = tx.FinishField(db, k, codec.TypeHash, probe, e)
			if err == nil && fresh {
				val, found = string(got), ok && e != nil
			}
		}
	}
	if !fresh {
		read(c)
	}
	if err != nil && !errors.Is(err, ErrWrongType) {
		tx.abort()
		v.t.Fatalf("cold field %s %s: %v", key, field, err)
	}
	if _, cerr := tx.commit(); cerr != nil {
		v.t.Fatal(cerr)
	}
	return val, found, cold, fresh, err
}

func TestColdFieldSteps(t *testing.T) {
	hash := func(v *env) {
		v.hset(0, "h", "f", "v")
		v.hset(0, "h", "g", "w")
	}
	cases := []struct {
		name             string
		setup, between   func(v *env)
		field            string
		wantVal          string
		wantFound        bool
		wantCold, wFresh bool
		wantErr          error
		wantHot          bool
	}{
		{"hot hash answered in step 1", hash, nil, "f", "v", true, false, false, nil, true},
		{"cold hash: field read from the store, hash promoted", func(v *env) { hash(v); v.demoteAll() }, nil,
			"g", "w", true, true, true, nil, true},
		{"cold hash: missing field", func(v *env) { hash(v); v.demoteAll() }, nil, "x", "", false, true, true, nil, true},
		{"missing key while all are hot", func(v *env) { v.set(0, "other", "v", 0) }, nil, "f", "", false, false, false, nil, false},
		{"missing key with cold keys", func(v *env) { v.set(0, "other", "v", 0); v.demoteAll() }, nil,
			"f", "", false, true, true, nil, false},
		{"cold string: WRONGTYPE", func(v *env) { v.set(0, "h", "s", 0); v.demoteAll() }, nil,
			"f", "", false, true, true, ErrWrongType, false},
		{"hot string: WRONGTYPE", func(v *env) { v.set(0, "h", "s", 0) }, nil, "f", "", false, false, false, ErrWrongType, true},
		{"field written in between: read again under the lock", func(v *env) { hash(v); v.demoteAll() },
			func(v *env) { v.hset(0, "h", "f", "new") }, "f", "new", true, true, false, nil, true},
		{"hash deleted in between", func(v *env) { hash(v); v.demoteAll() },
			func(v *env) { v.del(0, "h") }, "f", "", false, true, false, nil, false},
		{"another key written in between: read again", func(v *env) { hash(v); v.demoteAll() },
			func(v *env) { v.set(0, "z", "1", 0) }, "f", "v", true, true, false, nil, true},
		{"SWAPDB in between: read again", func(v *env) {
			hash(v)
			v.hset(1, "h", "f", "one")
			v.demoteAll()
		}, func(v *env) { v.do(func(tx *Tx) error { return tx.SwapDB(0, 1) }) }, "f", "one", true, true, false, nil, true},
		{"promoted in between: the hot copy answers", func(v *env) { hash(v); v.demoteAll() },
			func(v *env) { v.coldField(0, "h", "g", nil) }, "f", "v", true, true, false, nil, true},
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
			val, found, cold, fresh, err := v.coldField(0, "h", tc.field, between)
			if val != tc.wantVal || found != tc.wantFound || cold != tc.wantCold || fresh != tc.wFresh || !errors.Is(err, tc.wantErr) {
				t.Fatalf("got %q found %v cold %v fresh %v err %v, want %q %v %v %v %v",
					val, found, cold, fresh, err, tc.wantVal, tc.wantFound, tc.wantCold, tc.wFresh, tc.wantErr)
			}
			if hot := v.isHot(0, "h"); hot != tc.wantHot {
				t.Fatalf("hot afterwards = %v, want %v", hot, tc.wantHot)
			}
			v.checkInvariants()
		})
	}
}

// An expired cold hash read without the lock is deleted in step 3, as a
// locked lookup deletes it.
func TestColdFieldExpired(t *testing.T) {
	v := newEnv(t, defaultOpts())
	v.hset(0, "h", "f", "v")
	at := v.now() + 30
	v.do(func(tx *Tx) error {
		_, err := tx.SetExpire(0, []byte("h"), at)
		return err
	})
	v.demoteAll()
	val, found, cold, fresh, err := v.coldField(0, "h", "f", func() { time.Sleep(60 * time.Millisecond) })
	if val != "" || found || !cold || fresh || err != nil {
		t.Fatalf("got %q %v cold %v fresh %v err %v; want a miss redone under the lock", val, found, cold, fresh, err)
	}
	if keys, _ := v.sizes(0); keys != 0 {
		t.Fatalf("DBSIZE %d after the expired hash was read", keys)
	}
	v.checkInvariants()
}

// Lock-free field reads racing writers of the same hashes: every value
// read is one a writer stored for that field, and a reader never sees a
// field's counter go backwards.
func TestColdFieldsRacingWriters(t *testing.T) {
	o := defaultOpts()
	o.HotBudget = 6000
	o.PromoteMinHits = 2
	v := newEnv(t, o)
	const hashes, fields = 8, 5
	for h := range hashes {
		for f := range fields {
			v.hset(0, fmt.Sprint("h", h), fmt.Sprint("f", f), fmt.Sprintf("h%d|f%d|0|%s", h, f, strings.Repeat("x", 100)))
		}
	}
	var mu sync.Mutex
	var counters [hashes][fields]int
	deadline := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	wg.Go(func() {
		for i := 0; time.Now().Before(deadline) && i < 50_000; i++ {
			h, f := (i*7)%hashes, (i*3)%fields
			mu.Lock()
			counters[h][f]++
			n := counters[h][f]
			mu.Unlock()
			v.hset(0, fmt.Sprint("h", h), fmt.Sprint("f", f), fmt.Sprintf("h%d|f%d|%d|%s", h, f, n, strings.Repeat("x", 50+i%200)))
		}
	})
	for r := range 3 {
		wg.Go(func() {
			last := map[string]int{}
			for i := 0; time.Now().Before(deadline) && i < 50_000; i++ {
				h, f := (i*13+r)%hashes, (i*5+r)%fields
				val, found, _, _, err := v.coldField(0, fmt.Sprint("h", h), fmt.Sprint("f", f), nil)
				var n int
				var rest string
				if err == nil && found {
					_, err = fmt.Sscanf(val, fmt.Sprintf("h%d|f%d|%%d|%%s", h, f), &n, &rest)
				}
				if err == nil && !found {
					err = errors.New("missing")
				}
				if err != nil {
					errs <- fmt.Errorf("h%d f%d: %q: %v", h, f, val, err)
					return
				}
				k := fmt.Sprint(h, "/", f)
				if n < last[k] {
					errs <- fmt.Errorf("h%d f%d went back from %d to %d", h, f, last[k], n)
					return
				}
				last[k] = n
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

// A full hot tier takes a cold key only if it was read more often than the
// entry it would displace: keys read as often as the hot ones stay cold
// (no churn), a key read more often gets in.
func TestPromotionAgainstRival(t *testing.T) {
	o := defaultOpts()
	o.HotBudget = 8 << 10
	o.PromoteMinHits = 2
	v := newEnv(t, o)
	val := strings.Repeat("v", 700) // 1,024 bytes hot: 8 fill the tier
	one := entrySize([]byte("k0"), &Entry{Type: codec.TypeString, Str: []byte(val)})
	for k := range 40 {
		v.set(0, fmt.Sprint("k", k), val, 0)
	}
	v.demoteAll()
	// k0..k7 fill the tier, each read 4 times.
	for k := range 8 {
		for range 4 {
			v.get(0, fmt.Sprint("k", k))
		}
	}
	used, budget, n := v.hotUsage()
	if n != 8 || used+one <= budget {
		t.Fatalf("tier not full: %d keys, %d of %d bytes", n, used, budget)
	}
	hot := func() (keys []string) {
		for k := range 40 {
			if v.isHot(0, fmt.Sprint("k", k)) {
				keys = append(keys, fmt.Sprint("k", k))
			}
		}
		return keys
	}
	before := strings.Join(hot(), " ")
	// Read as often as the hot keys (twice each: promote-min-hits) or less:
	// nothing changes.
	for k := 10; k < 40; k++ {
		v.get(0, fmt.Sprint("k", k))
		v.get(0, fmt.Sprint("k", k))
	}
	if after := strings.Join(hot(), " "); after != before {
		t.Fatalf("keys read less than the hot ones displaced them: %s -> %s", before, after)
	}
	// Read more often than the least recently used hot key: promoted.
	for range 5 {
		v.get(0, "k39")
	}
	if !v.isHot(0, "k39") {
		t.Fatalf("k39, read 7 times, not promoted over keys read 4 times (hot: %v)", hot())
	}
	v.checkInvariants()
}

// The cold meta cache: a second field read of a cold hash reads only the
// field's record; any write retires what the cache knew, and the reads
// that follow see the new state (here the hash deleted and written again
// under a new version, then a SWAPDB).
func TestColdMetaCache(t *testing.T) {
	o := defaultOpts()
	o.PromoteMinHits = 1000 // the hash stays cold
	v := newEnv(t, o)
	v.hset(0, "h", "f", "v")
	v.hset(0, "h", "g", "w")
	v.demoteAll()
	read := func(field, want string, wantGets int64) {
		t.Helper()
		before := v.s.ReadStats().Gets
		val, found, cold, fresh, err := v.coldField(0, "h", field, nil)
		if err != nil || !cold || !fresh || val != want || found != (want != "") {
			t.Fatalf("%s: got %q found %v cold %v fresh %v err %v, want %q", field, val, found, cold, fresh, err, want)
		}
		if gets := v.s.ReadStats().Gets - before; gets != wantGets {
			t.Fatalf("%s: %d store lookups, want %d", field, gets, wantGets)
		}
	}
	read("f", "v", 2) // meta and field
	read("g", "w", 1) // field only
	read("x", "", 1)
	v.del(0, "h")
	v.hset(0, "h", "f", "new")
	v.demoteAll()
	read("f", "new", 2)
	read("g", "", 1)
	v.hset(1, "h", "f", "one")
	v.demoteAll()
	read("f", "new", 2)
	v.do(func(tx *Tx) error { return tx.SwapDB(0, 1) })
	read("f", "one", 2)
	read("f", "one", 1)
	v.checkInvariants()
}

// Read-only field reads of many cold hashes by concurrent readers, with a
// hot tier that holds a few of them (promotions and demotions all along):
// every field is found with its value.
func TestColdFieldsReadOnlyChurn(t *testing.T) {
	o := defaultOpts()
	o.HotBudget = 40 << 10
	o.PromoteMinHits = 2
	v := newEnv(t, o)
	const hashes, fields = 64, 8
	for h := range hashes {
		for f := range fields {
			v.hset(0, fmt.Sprint("h", h), fmt.Sprint("f", f), fmt.Sprintf("h%d|f%d|%s", h, f, strings.Repeat("x", 300)))
		}
	}
	v.demoteAll()
	deadline := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := range 4 {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline) && i < 100_000; i++ {
				h, f := (i*17+r*5)%hashes, (i*3+r)%fields
				val, found, _, _, err := v.coldField(0, fmt.Sprint("h", h), fmt.Sprint("f", f), nil)
				if want := fmt.Sprintf("h%d|f%d|", h, f); err != nil || !found || !strings.HasPrefix(val, want) {
					errs <- fmt.Errorf("read %d of h%d f%d: %.20q found %v err %v", i, h, f, val, found, err)
					return
				}
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

// Putting a key the cache already holds (two readers missed it at once)
// must not leave the map keyed by the caller's reusable buffer.
func TestColdMetaCachePutTwice(t *testing.T) {
	var c coldMetaCache
	buf := []byte("\x00hash-a")
	e := &Entry{Type: codec.TypeHash, Version: 7, Count: 1, Bytes: 2}
	c.put(buf, e, 1, 0)
	c.put(buf, e, 1, 0)
	copy(buf, "\x00hash-b") // the buffer is reused for another key
	if _, ok := c.get(buf, 1, 0); ok {
		t.Fatal("hash-b found: the map's key aliases the caller's buffer")
	}
	if m, ok := c.get([]byte("\x00hash-a"), 1, 0); !ok || m.version != 7 {
		t.Fatalf("hash-a: %+v %v, want version 7", m, ok)
	}
}
