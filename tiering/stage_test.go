package tiering

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/spillway/spillway/codec"
)

// stageCase is one structure written both ways: by the type's normal
// writer in one transaction, and by a Stage.
type stageCase struct {
	name   string
	t      codec.Type
	normal func(tx *Tx, key []byte) error
	stage  func(st *Stage) error
}

func stageCases(n int) []stageCase {
	field := func(i int) []byte { return []byte(fmt.Sprintf("field:%06d", i)) }
	val := func(i int) []byte { return []byte(fmt.Sprintf("value-%d-%s", i, "0123456789abcdef")) }
	// Scores cover the index's order and what must survive: -0 (kept by a
	// skiplist), infinities, negatives, fractions.
	score := func(i int) float64 {
		switch i {
		case 0:
			return math.Copysign(0, -1)
		case 1:
			return math.Inf(-1)
		case 2:
			return math.Inf(1)
		case 3:
			return 0
		}
		return float64(i%97-48) / 7
	}
	zset := func(skiplist bool, members int) stageCase {
		return stageCase{
			name: fmt.Sprintf("zset skiplist=%v", skiplist), t: codec.TypeZSet,
			normal: func(tx *Tx, key []byte) error {
				z, err := tx.CreateZSet(0, key)
				if err != nil {
					return err
				}
				z.SetSkiplist(skiplist)
				for i := 0; i < members; i++ {
					if _, err := z.Add(field(i), score(i)); err != nil {
						return err
					}
				}
				return z.Close()
			},
			stage: func(st *Stage) error {
				st.SetSkiplist(skiplist)
				for i := 0; i < members; i++ {
					if err := st.Member(field(i), score(i)); err != nil {
						return err
					}
				}
				return nil
			},
		}
	}
	coll := func(t codec.Type) stageCase {
		v := func(i int) []byte {
			if t == codec.TypeSet {
				return nil
			}
			return val(i)
		}
		return stageCase{
			name: t.String(), t: t,
			normal: func(tx *Tx, key []byte) error {
				c, err := tx.CreateColl(0, key, t)
				if err != nil {
					return err
				}
				for i := 0; i < n; i++ {
					if _, err := c.Set(field(i), v(i)); err != nil {
						return err
					}
				}
				return c.Close()
			},
			stage: func(st *Stage) error {
				for i := 0; i < n; i++ {
					if err := st.Field(field(i), v(i)); err != nil {
						return err
					}
				}
				return nil
			},
		}
	}
	return []stageCase{
		coll(codec.TypeHash),
		coll(codec.TypeSet),
		zset(true, n),
		zset(false, 100), // compact: -0 is stored as 0
		{
			name: "list", t: codec.TypeList,
			normal: func(tx *Tx, key []byte) error {
				l, err := tx.OpenList(0, key, true)
				if err != nil {
					return err
				}
				for i := 0; i < n; i++ {
					if err := l.Push(false, val(i)); err != nil {
						return err
					}
				}
				return l.Close()
			},
			stage: func(st *Stage) error {
				for i := 0; i < n; i++ {
					if err := st.Push(val(i)); err != nil {
						return err
					}
				}
				return nil
			},
		},
	}
}

// versionRecords returns key's data records under version, each as its
// key's bytes after the data prefix and its value.
func (v *env) versionRecords(pdb uint8, key string, version uint64) []string {
	v.t.Helper()
	lo := codec.AppendDataPrefix(nil, pdb, []byte(key), version)
	it, err := v.s.NewIter(lo, codec.PrefixEnd(lo))
	if err != nil {
		v.t.Fatal(err)
	}
	defer it.Close()
	var out []string
	for valid := it.First(); valid; valid = it.Next() {
		out = append(out, fmt.Sprintf("%x=%x", it.Key()[len(lo):], it.Value()))
	}
	return out
}

// garbageFor counts the garbage records naming key.
func (v *env) garbageFor(pdb uint8, key string) int {
	v.t.Helper()
	it, err := v.s.NewIter([]byte{codec.NSGarbage}, []byte{codec.NSGarbage + 1})
	if err != nil {
		v.t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		g, err := codec.ParseGarbageValue(it.Value())
		if err != nil {
			v.t.Fatal(err)
		}
		if g.DB == pdb && string(g.Key) == key {
			n++
		}
	}
	return n
}

// reclaimAll runs the reclaimer until it finds nothing, as its loop does.
func (v *env) reclaimAll() {
	v.t.Helper()
	for i := 0; i < 100; i++ {
		n, err := v.s.Reclaim(100)
		if err != nil {
			v.t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
	v.t.Fatal("Reclaim never drained")
}

// stageOf stages c's structure as key in database 0 and commits its
// records, without installing it. The marker's record count is large, as
// RESTORE's are, so the reclaimer drops the version with a range deletion.
func (v *env) stageOf(c stageCase, key string) *Stage {
	v.t.Helper()
	st, err := v.e.NewStage(0, []byte(key), c.t, 1<<20)
	if err != nil {
		v.t.Fatal(err)
	}
	if err := c.stage(st); err != nil {
		v.t.Fatal(err)
	}
	if err := st.Flush(); err != nil {
		v.t.Fatal(err)
	}
	return st
}

// A staged install stores exactly what the type's normal writer stores:
// the same records (keys after the version, values) and the same meta
// record but for the version. The key is cold, its garbage mark is gone,
// so the reclaimer leaves its records alone.
func TestStageInstallEqualsNormalWrite(t *testing.T) {
	// 20,000 hash fields are ~1.3 MiB of records: more than one batch.
	for _, c := range stageCases(20_000) {
		t.Run(c.name, func(t *testing.T) {
			v := newEnv(t, defaultOpts())
			v.do(func(tx *Tx) error { return c.normal(tx, []byte("a")) })
			st := v.stageOf(c, "b")
			if v.garbageFor(0, "b") != 1 {
				t.Fatal("no garbage mark while staged")
			}
			if _, found := v.storedMeta(0, "b"); found {
				t.Fatal("staged key visible before its install")
			}
			v.e.AddBlockedClients(1)
			var ready []ReadyKey
			v.do(func(tx *Tx) error {
				tx.TakeReady()
				err := tx.InstallStage(st, 0)
				ready = tx.TakeReady()
				return err
			})
			v.e.AddBlockedClients(-1)
			st.Close()
			wantReady := c.t == codec.TypeList || c.t == codec.TypeZSet
			if got := len(ready) == 1 && string(ready[0].Key) == "b"; got != wantReady {
				t.Fatalf("ready after the install: %v, want b noted: %v", ready, wantReady)
			}
			v.reclaimAll()
			ma, _ := v.storedMeta(0, "a")
			mb, found := v.storedMeta(0, "b")
			if !found {
				t.Fatal("installed key not stored")
			}
			ra, rb := v.versionRecords(0, "a", ma.Version), v.versionRecords(0, "b", mb.Version)
			if len(ra) == 0 || !slices.Equal(ra, rb) {
				t.Fatalf("records differ: normal %d, staged %d", len(ra), len(rb))
			}
			if n := v.dataRecords(0, "b"); n != len(rb) {
				t.Fatalf("%d data records of b, %d under its version", n, len(rb))
			}
			ma.Version, mb.Version = 0, 0
			if fmt.Sprint(ma) != fmt.Sprint(mb) {
				t.Fatalf("meta differs:\nnormal %+v\nstaged %+v", ma, mb)
			}
			if v.garbageFor(0, "b") != 0 {
				t.Fatal("garbage mark left after the install")
			}
			if v.isHot(0, "b") {
				t.Fatal("staged key is hot after its install")
			}
			v.checkInvariants()
		})
	}
}

// A Stage that is not installed (a failed check, a key created meanwhile,
// a SWAPDB or FLUSHDB that made it stale) leaves no visible key, and the
// reclaimer removes its records.
func TestStageNotInstalledIsReclaimed(t *testing.T) {
	c := stageCases(5_000)[0]
	tests := []struct {
		name    string
		between func(v *env) // after staging, before the install
		install bool
		wantErr error
	}{
		{"given up", func(*env) {}, false, nil},
		{"key created meanwhile", func(v *env) { v.set(0, "b", "x", 0) }, true, nil},
		{"swapdb", func(v *env) { v.do(func(tx *Tx) error { return tx.SwapDB(0, 1) }) }, true, ErrStageStale},
		{"flushdb", func(v *env) { v.do(func(tx *Tx) error { return tx.FlushDB(0) }) }, true, ErrStageStale},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newEnv(t, defaultOpts())
			st := v.stageOf(c, "b")
			if v.e.reclaimGate.TryLock() {
				t.Fatal("the reclaimer may run while a Stage is open")
			}
			if v.dataRecords(0, "b") == 0 {
				t.Fatal("no staged records: the test proves nothing")
			}
			tt.between(v)
			if tt.install {
				tx := v.e.begin()
				err := tx.InstallStage(st, 0)
				tx.abort() // as Ctx.Update does after an error
				if err == nil || tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Fatalf("InstallStage = %v, want %v", err, tt.wantErr)
				}
			}
			st.Close()
			st.Close() // twice is harmless
			if tt.name != "key created meanwhile" {
				for db := 0; db < 2; db++ {
					if e, _, ok := v.peekEntry(db, "b"); ok {
						t.Fatalf("db %d holds a %s b", db, e)
					}
				}
			}
			v.reclaimAll()
			for pdb := uint8(0); pdb < 2; pdb++ {
				if n := v.dataRecords(pdb, "b"); n != 0 {
					t.Fatalf("%d staged records left in physical db %d after reclaiming", n, pdb)
				}
			}
			if !v.e.reclaimGate.TryLock() {
				t.Fatal("the reclaimer stays off after Close")
			}
			v.e.reclaimGate.Unlock()
			v.checkInvariants()
		})
	}
}

// A crash between staging and install (the store closed with the Stage
// open, then reopened) leaves no visible key, and the records are
// reclaimed after the restart.
func TestStageCrashBeforeInstall(t *testing.T) {
	for _, c := range stageCases(3_000) {
		t.Run(c.name, func(t *testing.T) {
			v := newEnv(t, defaultOpts())
			v.set(0, "other", "v", 0)
			v.stageOf(c, "b") // never installed nor closed
			records := v.dataRecords(0, "b")
			if records == 0 || v.garbageFor(0, "b") != 1 {
				t.Fatalf("%d records staged, %d garbage marks", records, v.garbageFor(0, "b"))
			}
			v.reopen() // the mark is reclaimable now: nothing holds it
			if e, _, ok := v.peekEntry(0, "b"); ok {
				t.Fatalf("a %s b is visible after the crash", e)
			}
			v.reclaimAll()
			if n := v.dataRecords(0, "b"); n != 0 {
				t.Fatalf("%d of %d staged records left after reclaiming", n, records)
			}
			if got, _ := v.get(0, "other"); got != "v" {
				t.Fatalf("other = %q", got)
			}
			v.checkInvariants()
		})
	}
}
