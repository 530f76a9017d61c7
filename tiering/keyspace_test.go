package tiering

import (
	"fmt"
	"strings"
	"testing"
)

// Counters follow every kind of change, and the start-up scan rebuilds them.
func TestCountersAcrossOperations(t *testing.T) {
	v := newEnv(t, defaultOpts())
	far := v.now() + 3_600_000
	type want struct{ k0, x0, k1, x1 int64 }
	steps := []struct {
		name string
		do   func()
		want want
	}{
		{"set a", func() { v.set(0, "a", "1", 0) }, want{1, 0, 0, 0}},
		{"set b ttl", func() { v.set(0, "b", "1", far) }, want{2, 1, 0, 0}},
		{"overwrite a with ttl", func() { v.set(0, "a", "2", far+1) }, want{2, 2, 0, 0}},
		{"overwrite b without ttl", func() { v.set(0, "b", "2", 0) }, want{2, 1, 0, 0}},
		{"set c in db1 ttl", func() { v.set(1, "c", "1", far) }, want{2, 1, 1, 1}},
		{"demote all", func() { v.demoteAll() }, want{2, 1, 1, 1}},
		{"overwrite cold c", func() { v.set(1, "c", "2", far+5) }, want{2, 1, 1, 1}},
		{"delete a", func() { v.del(0, "a") }, want{1, 0, 1, 1}},
		{"delete missing", func() { v.del(0, "zz") }, want{1, 0, 1, 1}},
		{"persist c", func() {
			v.do(func(tx *Tx) error { _, err := tx.SetExpire(1, []byte("c"), 0); return err })
		}, want{1, 0, 1, 0}},
		{"expire b lazily", func() {
			v.do(func(tx *Tx) error {
				if _, err := tx.SetExpire(0, []byte("b"), tx.Now()-1); err != nil {
					return err
				}
				_, err := tx.Get(0, []byte("b"))
				return err
			})
		}, want{0, 0, 1, 0}},
		{"many keys", func() {
			for i := 0; i < 30; i++ {
				v.set(0, fmt.Sprint("m", i), "v", far+int64(i%2)*0)
			}
		}, want{30, 30, 1, 0}},
		{"flushdb 0", func() { v.do(func(tx *Tx) error { return tx.FlushDB(0) }) }, want{0, 0, 1, 0}},
		{"flushall", func() { v.do(func(tx *Tx) error { return tx.FlushAll() }) }, want{0, 0, 0, 0}},
		{"set after flush", func() { v.set(0, "m1", "v", 0); v.set(1, "m1", "v", far) }, want{1, 0, 1, 1}},
	}
	for _, st := range steps {
		st.do()
		check := func(when string) {
			k0, x0 := v.sizes(0)
			k1, x1 := v.sizes(1)
			if got := (want{k0, x0, k1, x1}); got != st.want {
				t.Fatalf("%s (%s): counters %+v, want %+v", st.name, when, got, st.want)
			}
			if v.e.KeysOnDisk() != st.want.k0+st.want.k1 {
				t.Fatalf("%s (%s): KeysOnDisk %d", st.name, when, v.e.KeysOnDisk())
			}
		}
		check("live")
		v.checkInvariants()
		v.reopen()
		check("after reopen")
	}
}

func TestFlushDBOnlyItsDB(t *testing.T) {
	v := newEnv(t, defaultOpts())
	far := v.now() + 3_600_000
	for db := 0; db < 3; db++ {
		for i := 0; i < 5; i++ {
			v.set(db, fmt.Sprint("k", i), fmt.Sprint(db), far*int64(i%2))
		}
	}
	v.writeRaw(rawHash{db: 1, key: "h", version: 1 << 40, fields: 4}, rawHash{db: 2, key: "h", version: 1<<40 + 1, fields: 4})
	v.set(0, "k0", "0", 0) // something hot again in db 0 and 1
	v.set(1, "k0", "1", 0)
	v.do(func(tx *Tx) error { return tx.FlushDB(1) })
	if got := v.keys(1); len(got) != 0 {
		t.Fatalf("db 1 after FLUSHDB: %v", got)
	}
	if n, x := v.sizes(1); n != 0 || x != 0 {
		t.Fatalf("db 1 DBSize %d Expires %d", n, x)
	}
	if v.isHot(1, "k0") {
		t.Fatal("hot copy of a flushed key left")
	}
	if _, ok := v.get(1, "k0"); ok {
		t.Fatal("flushed key readable")
	}
	if v.dataRecords(1, "h") != 0 {
		t.Fatal("flushed hash's data records left")
	}
	if v.dataRecords(2, "h") != 4 {
		t.Fatal("FLUSHDB 1 touched db 2's data records")
	}
	for _, db := range []int{0, 2} {
		if n, _ := v.sizes(db); (db == 0 && n != 5) || (db == 2 && n != 6) {
			t.Fatalf("db %d DBSize %d", db, n)
		}
		if got, ok := v.get(db, "k3"); !ok || got != fmt.Sprint(db) {
			t.Fatalf("db %d k3 = %q %v", db, got, ok)
		}
	}
	v.checkInvariants()
	v.do(func(tx *Tx) error { return tx.FlushAll() })
	for db := 0; db < 16; db++ {
		if n, x := v.sizes(db); n != 0 || x != 0 {
			t.Fatalf("db %d after FLUSHALL: %d %d", db, n, x)
		}
	}
	if _, _, n := v.hotUsage(); n != 0 {
		t.Fatal("hot keys after FLUSHALL")
	}
	v.checkInvariants()
	v.reopen()
	if v.e.KeysOnDisk() != 0 {
		t.Fatalf("KeysOnDisk after FLUSHALL and reopen = %d", v.e.KeysOnDisk())
	}
}

// FLUSHDB leaves expiry index entries for the sweeper: they must not expire
// a key re-created afterwards with another expiry or none.
func TestFlushLeavesNoLiveExpiry(t *testing.T) {
	v := newEnv(t, defaultOpts())
	at := v.now() + 40
	v.set(3, "none", "old", at)
	v.set(3, "later", "old", at)
	v.do(func(tx *Tx) error { return tx.FlushDB(3) })
	v.set(3, "none", "new", 0)
	later := v.now() + 3_600_000
	v.set(3, "later", "new", later)
	waitPast(at)
	v.sweepAll()
	if got, x, ok := v.peek(3, "none"); !ok || got != "new" || x != 0 {
		t.Fatalf("none = %q %d %v", got, x, ok)
	}
	if got, x, ok := v.peek(3, "later"); !ok || got != "new" || x != later {
		t.Fatalf("later = %q %d %v", got, x, ok)
	}
	if n, x := v.sizes(3); n != 2 || x != 1 {
		t.Fatalf("DBSize %d Expires %d", n, x)
	}
	v.checkInvariants()
}

func TestSwapDB(t *testing.T) {
	v := newEnv(t, defaultOpts())
	far := v.now() + 3_600_000
	v.set(0, "a", "in0", far)
	v.set(0, "shared", "0", 0)
	v.set(1, "b", "in1", 0)
	v.set(1, "shared", "1", 0)
	v.set(1, "c", "in1", 0)
	v.demoteAll()
	v.get(1, "b") // one hot key in each, one cold
	v.get(0, "a")
	check := func(when string, swapped bool) {
		t.Helper()
		d0, d1 := 0, 1
		if swapped {
			d0, d1 = 1, 0
		}
		if got := v.keys(d0); fmt.Sprint(got) != "[a shared]" {
			t.Fatalf("%s: db %d keys %v", when, d0, got)
		}
		if got := v.keys(d1); fmt.Sprint(got) != "[b c shared]" {
			t.Fatalf("%s: db %d keys %v", when, d1, got)
		}
		if got, x, _ := v.peek(d0, "a"); got != "in0" || x != far {
			t.Fatalf("%s: a = %q %d", when, got, x)
		}
		if got, _ := v.get(d0, "shared"); got != "0" {
			t.Fatalf("%s: db %d shared = %q", when, d0, got)
		}
		if got, _ := v.get(d1, "shared"); got != "1" {
			t.Fatalf("%s: db %d shared = %q", when, d1, got)
		}
		if n, x := v.sizes(d0); n != 2 || x != 1 {
			t.Fatalf("%s: db %d DBSize %d Expires %d", when, d0, n, x)
		}
		if n, x := v.sizes(d1); n != 3 || x != 0 {
			t.Fatalf("%s: db %d DBSize %d Expires %d", when, d1, n, x)
		}
		v.checkInvariants()
	}
	swap := func() { v.do(func(tx *Tx) error { return tx.SwapDB(0, 1) }) }
	check("before", false)
	swap()
	check("swapped", true)
	v.reopen()
	check("swapped, reopened", true)
	// Writes after the swap land in the swapped database.
	v.set(0, "new", "x", 0)
	if _, ok := v.get(1, "new"); ok {
		t.Fatal("write to db 0 visible in db 1")
	}
	v.del(0, "new")
	swap()
	check("swapped back", false)
	v.reopen()
	check("swapped back, reopened", false)
	// Swapping a database with itself changes nothing.
	v.do(func(tx *Tx) error { return tx.SwapDB(1, 1) })
	check("self swap", false)
}

// Expiry keeps working in a swapped database: the index names physical dbs.
func TestSwapDBThenExpire(t *testing.T) {
	v := newEnv(t, defaultOpts())
	at := v.now() + 40
	v.set(0, "k", "v", at)
	v.do(func(tx *Tx) error { return tx.SwapDB(0, 5) })
	waitPast(at)
	v.sweepAll()
	if n, x := v.sizes(5); n != 0 || x != 0 {
		t.Fatalf("db 5 DBSize %d Expires %d after expiry", n, x)
	}
	v.checkInvariants()
}

// An aborted SWAPDB (or one whose commit fails) must leave the map as it was:
// the swap is in memory at once but only persisted by the commit.
func TestSwapDBAbortRestoresMap(t *testing.T) {
	v := newEnv(t, defaultOpts())
	v.set(0, "k", "db0", 0)
	tx := v.e.begin()
	if err := tx.SwapDB(0, 1); err != nil {
		t.Fatal(err)
	}
	tx.abort()
	if got, ok := v.get(0, "k"); !ok || got != "db0" {
		t.Fatalf("after an aborted SWAPDB, db 0 k = %q %v; want db0", got, ok)
	}
	v.reopen()
	if got, ok := v.get(0, "k"); !ok || got != "db0" {
		t.Fatalf("after reopen, db 0 k = %q %v; want db0", got, ok)
	}
}

// The stored database map is kept when the configured number of databases
// changes; a SWAPDB made while fewer databases are configured must not
// exchange the contents of databases it never named once more come back.
func TestDBMapAcrossDatabaseCounts(t *testing.T) {
	v := newEnv(t, defaultOpts()) // 16 databases
	for db := 0; db < 4; db++ {
		v.set(db, "k", fmt.Sprint("db", db), 0)
	}
	v.do(func(tx *Tx) error { return tx.SwapDB(0, 3) })
	v.opts.Databases = 2
	v.reopen()
	if got, _ := v.get(0, "k"); got != "db3" {
		t.Fatalf("with 2 databases, db 0 k = %q, want db3", got)
	}
	v.do(func(tx *Tx) error { return tx.SwapDB(0, 1) })
	v.opts.Databases = 16
	v.reopen()
	want := []string{"db1", "db3", "db2", "db0"}
	for db, w := range want {
		if got, _ := v.get(db, "k"); got != w {
			t.Errorf("db %d k = %q, want %q", db, got, w)
		}
	}
}

func TestRenameCopy(t *testing.T) {
	const far = int64(1) << 50 // far future, unix ms
	type key struct {
		db  int
		key string
	}
	type state map[key]string // key -> "value@expireAt"
	base := func() state {
		return state{
			{0, "src"}:   "s@" + fmt.Sprint(far),
			{0, "plain"}: "p@0",
			{0, "dst"}:   "d@0",
			{1, "dst"}:   "d1@" + fmt.Sprint(far+7),
		}
	}
	with := func(s state, changes map[key]string) state {
		for k, v := range changes {
			if v == "" {
				delete(s, k)
			} else {
				s[k] = v
			}
		}
		return s
	}
	src := "s@" + fmt.Sprint(far)
	tests := []struct {
		name     string
		op       string // rename, renamenx, copy, copyreplace
		from, to key
		cold     bool
		wantA    bool // rename: exists; copy: copied
		wantB    bool // rename: moved
		want     state
	}{
		{"rename to new", "rename", key{0, "src"}, key{0, "new"}, false, true, true, with(base(), map[key]string{{0, "src"}: "", {0, "new"}: src})},
		{"rename to new cold", "rename", key{0, "src"}, key{0, "new"}, true, true, true, with(base(), map[key]string{{0, "src"}: "", {0, "new"}: src})},
		{"rename over existing", "rename", key{0, "src"}, key{0, "dst"}, false, true, true, with(base(), map[key]string{{0, "src"}: "", {0, "dst"}: src})},
		{"rename no ttl over ttl", "rename", key{0, "plain"}, key{1, "dst"}, true, true, true, with(base(), map[key]string{{0, "plain"}: "", {1, "dst"}: "p@0"})},
		{"rename across dbs", "rename", key{0, "src"}, key{1, "x"}, false, true, true, with(base(), map[key]string{{0, "src"}: "", {1, "x"}: src})},
		{"renamenx existing", "renamenx", key{0, "src"}, key{0, "dst"}, false, true, false, base()},
		{"renamenx existing cold", "renamenx", key{0, "src"}, key{1, "dst"}, true, true, false, base()},
		{"renamenx new", "renamenx", key{0, "src"}, key{1, "x"}, true, true, true, with(base(), map[key]string{{0, "src"}: "", {1, "x"}: src})},
		{"rename missing", "rename", key{0, "nope"}, key{0, "x"}, false, false, false, base()},
		{"rename to itself", "rename", key{0, "src"}, key{0, "src"}, false, true, true, base()},
		{"renamenx to itself", "renamenx", key{0, "src"}, key{0, "src"}, false, true, false, base()},
		{"rename same name other db", "rename", key{0, "dst"}, key{1, "dst"}, false, true, true, with(base(), map[key]string{{0, "dst"}: "", {1, "dst"}: "d@0"})},
		{"copy to new", "copy", key{0, "src"}, key{2, "x"}, false, true, false, with(base(), map[key]string{{2, "x"}: src})},
		{"copy to new cold", "copy", key{0, "src"}, key{0, "x"}, true, true, false, with(base(), map[key]string{{0, "x"}: src})},
		{"copy existing", "copy", key{0, "src"}, key{0, "dst"}, false, false, false, base()},
		{"copy replace", "copyreplace", key{0, "src"}, key{0, "dst"}, true, true, false, with(base(), map[key]string{{0, "dst"}: src})},
		{"copy replace drops ttl", "copyreplace", key{0, "plain"}, key{1, "dst"}, false, true, false, with(base(), map[key]string{{1, "dst"}: "p@0"})},
		{"copy missing", "copy", key{0, "nope"}, key{0, "x"}, false, false, false, base()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newEnv(t, defaultOpts())
			for k, val := range base() {
				var s string
				var at int64
				fmt.Sscanf(strings.Replace(val, "@", " ", 1), "%s %d", &s, &at)
				v.set(k.db, k.key, s, at)
			}
			if tt.cold {
				v.demoteAll()
			}
			var a, b bool
			v.do(func(tx *Tx) (err error) {
				f, to := []byte(tt.from.key), []byte(tt.to.key)
				switch tt.op {
				case "rename", "renamenx":
					a, b, err = tx.Rename(tt.from.db, f, tt.to.db, to, tt.op == "renamenx")
				case "copy", "copyreplace":
					a, err = tx.Copy(tt.from.db, f, tt.to.db, to, tt.op == "copyreplace")
				}
				return err
			})
			if a != tt.wantA || b != tt.wantB {
				t.Fatalf("result %v %v, want %v %v", a, b, tt.wantA, tt.wantB)
			}
			got := state{}
			counts := map[int]int64{}
			exps := map[int]int64{}
			for db := 0; db < 3; db++ {
				for _, k := range v.keys(db) {
					s, at, _ := v.peek(db, k)
					got[key{db, k}] = fmt.Sprintf("%s@%d", s, at)
					counts[db]++
					if at != 0 {
						exps[db]++
					}
				}
				if n, x := v.sizes(db); n != counts[db] || x != exps[db] {
					t.Fatalf("db %d DBSize %d Expires %d, keys say %d %d", db, n, x, counts[db], exps[db])
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("state %v\nwant  %v", got, tt.want)
			}
			v.checkInvariants()
		})
	}
}

// An expired destination counts as absent for RENAMENX and COPY.
func TestRenameCopyOverExpired(t *testing.T) {
	for _, op := range []string{"renamenx", "copy"} {
		t.Run(op, func(t *testing.T) {
			v := newEnv(t, defaultOpts())
			v.set(0, "src", "s", 0)
			var ok bool
			v.do(func(tx *Tx) (err error) {
				if err := tx.SetString(0, []byte("dst"), []byte("old"), tx.Now()-1); err != nil {
					return err
				}
				if op == "copy" {
					ok, err = tx.Copy(0, []byte("src"), 0, []byte("dst"), false)
				} else {
					_, ok, err = tx.Rename(0, []byte("src"), 0, []byte("dst"), true)
				}
				return err
			})
			if !ok {
				t.Fatal("expired destination blocked the operation")
			}
			if got, x, _ := v.peek(0, "dst"); got != "s" || x != 0 {
				t.Fatalf("dst = %q at %d", got, x)
			}
			v.checkInvariants()
		})
	}
}
