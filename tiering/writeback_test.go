package tiering

import (
	"errors"
	"fmt"
	"testing"
)

// storedString is key's string value in the store's record (db 0), which
// lags a dirty entry's.
func (v *env) storedString(key string) string {
	v.t.Helper()
	m, ok := v.storedMeta(v.e.dbmap[0], key)
	if !ok {
		v.t.Fatalf("%q has no record", key)
	}
	return string(m.Value)
}

func (v *env) dirtyKeys() int { return v.e.DirtyKeys() }

// crash stops the engine and its store as kill -9 would (once the log
// writer has written what was queued) and opens them again.
func (v *env) crash() {
	v.t.Helper()
	v.listLeaks = true
	close(v.e.stop)
	v.e.wg.Wait()
	if c := v.e.count; c != nil {
		c.release() // a kill -9 leaves no iterator open
	}
	if err := v.s.CrashForTest(); err != nil {
		v.t.Fatal(err)
	}
	v.e, v.s = nil, nil
	v.open()
}

// TestWriteBackOverwrite: overwriting a hot string with the same expiry
// writes the log only (the store keeps the old record) and marks it
// dirty; a new expiry, a demotion, a checkpoint or a clean close write
// the record.
func TestWriteBackOverwrite(t *testing.T) {
	v := newEnv(t, defaultOpts())
	v.set(0, "k", "v1", 0)
	v.set(0, "k", "v2", 0)
	if got, _ := v.get(0, "k"); got != "v2" || v.storedString("k") != "v1" || v.dirtyKeys() != 1 {
		t.Fatalf("after an overwrite: get %q, stored %q, dirty %d; want v2, v1, 1", got, v.storedString("k"), v.dirtyKeys())
	}
	v.checkInvariants()

	// A new expiry writes the whole record.
	at := v.now() + 3_600_000
	v.set(0, "k", "v3", at)
	if v.storedString("k") != "v3" || v.dirtyKeys() != 0 {
		t.Fatalf("after SET with a new expiry: stored %q, dirty %d", v.storedString("k"), v.dirtyKeys())
	}
	v.set(0, "k", "v4", at)
	if v.storedString("k") != "v3" || v.dirtyKeys() != 1 {
		t.Fatalf("overwrite keeping the expiry: stored %q, dirty %d", v.storedString("k"), v.dirtyKeys())
	}
	// EXPIRE on a dirty key writes the value with the new expiry.
	v.do(func(tx *Tx) error { _, err := tx.SetExpire(0, []byte("k"), at+1); return err })
	if m, _ := v.storedMeta(v.e.dbmap[0], "k"); string(m.Value) != "v4" || m.ExpireAt != at+1 || v.dirtyKeys() != 0 {
		t.Fatalf("after EXPIRE: stored %q at %d, dirty %d", m.Value, m.ExpireAt, v.dirtyKeys())
	}

	// Demotion writes the record.
	v.set(0, "d", "d1", 0)
	v.set(0, "d", "d2", 0)
	v.do(func(tx *Tx) error { _, err := tx.Demote(0, []byte("d")); return err })
	if v.isHot(0, "d") || v.storedString("d") != "d2" || v.dirtyKeys() != 0 {
		t.Fatalf("after Demote: hot %v, stored %q, dirty %d", v.isHot(0, "d"), v.storedString("d"), v.dirtyKeys())
	}
	v.set(0, "d", "d3", 0) // d is cold: written through
	v.set(0, "e", "e1", 0)
	v.set(0, "e", "e2", 0)
	v.demoteAll() // demotion by the budget
	if v.storedString("e") != "e2" || v.dirtyKeys() != 0 {
		t.Fatalf("after demoting all: stored %q, dirty %d", v.storedString("e"), v.dirtyKeys())
	}
	if got, _ := v.get(0, "e"); got != "e2" {
		t.Fatalf("e = %q after its demotion", got)
	}

	// A checkpoint writes every dirty record.
	for i := range 10 {
		v.set(0, fmt.Sprint("c", i), "a", 0)
		v.set(0, fmt.Sprint("c", i), "b", 0)
	}
	if n, err := v.e.Checkpoint(); err != nil || n != 10 || v.dirtyKeys() != 0 || v.storedString("c3") != "b" {
		t.Fatalf("Checkpoint wrote %d (%v), dirty %d, c3 stored %q", n, err, v.dirtyKeys(), v.storedString("c3"))
	}
	v.checkInvariants()

	// A clean close too: nothing is left to the log.
	v.set(0, "k", "v5", at+1)
	v.reopen()
	if v.storedString("k") != "v5" {
		t.Fatalf("after a clean restart the store holds %q", v.storedString("k"))
	}
}

// TestWriteBackCrash: after a crash, the log's replay gives every dirty
// value back, and the restarted store holds them.
func TestWriteBackCrash(t *testing.T) {
	v := newEnv(t, defaultOpts())
	for i := range 100 {
		v.set(0, fmt.Sprint("k", i), "old", 0)
	}
	for round := range 3 {
		for i := range 100 {
			v.set(0, fmt.Sprint("k", i), fmt.Sprint("new", round, i), 0)
		}
	}
	if v.dirtyKeys() != 100 {
		t.Fatalf("%d dirty keys, want 100", v.dirtyKeys())
	}
	v.crash()
	for i := range 100 {
		if got, _ := v.get(0, fmt.Sprint("k", i)); got != fmt.Sprint("new", 2, i) {
			t.Fatalf("k%d = %q after the crash", i, got)
		}
	}
	if v.dirtyKeys() != 0 {
		t.Fatalf("%d dirty keys after the replay", v.dirtyKeys())
	}
	v.checkInvariants()
}

// TestWriteBackAbort: a transaction that aborts leaves every dirty entry
// as it found it, whatever it did to them (overwrite, delete, expiry,
// FLUSHALL), and drops only clean hot copies.
func TestWriteBackAbort(t *testing.T) {
	v := newEnv(t, defaultOpts())
	for _, k := range []string{"a", "b", "c", "d"} {
		v.set(0, k, k+"1", 0)
		v.set(0, k, k+"2", 0) // dirty
	}
	v.set(0, "clean", "x", 0)
	boom := errors.New("boom")
	for _, c := range []struct {
		name string
		fn   func(tx *Tx) error
	}{
		{"overwrites", func(tx *Tx) error {
			for _, k := range []string{"a", "b"} {
				if err := tx.SetString(0, []byte(k), []byte(k+"3"), 0); err != nil {
					return err
				}
				if err := tx.SetString(0, []byte(k), []byte(k+"4"), 0); err != nil {
					return err
				}
			}
			return nil
		}},
		{"delete and recreate", func(tx *Tx) error {
			if _, err := tx.Delete(0, []byte("c")); err != nil {
				return err
			}
			if err := tx.SetString(0, []byte("c"), []byte("c9"), 0); err != nil {
				return err
			}
			return tx.SetString(0, []byte("c"), []byte("c10"), 0)
		}},
		{"expiry", func(tx *Tx) error {
			_, err := tx.SetExpire(0, []byte("d"), tx.Now()+1000)
			return err
		}},
		{"flushall", func(tx *Tx) error { return tx.FlushAll() }},
		{"demote", func(tx *Tx) error { _, err := tx.Demote(0, []byte("a")); return err }},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := v.e.Update(func(tx *Tx) error {
				if err := c.fn(tx); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("Update: %v", err)
			}
			for _, k := range []string{"a", "b", "c", "d"} {
				val, at, ok := v.peek(0, k)
				if !ok || val != k+"2" || at != 0 || !v.isHot(0, k) {
					t.Fatalf("%s = %q (expiry %d, exists %v, hot %v) after the abort, want %q hot", k, val, at, ok, v.isHot(0, k), k+"2")
				}
			}
			if v.dirtyKeys() != 4 {
				t.Fatalf("%d dirty keys after the abort, want 4", v.dirtyKeys())
			}
			if got, _, _ := v.peek(0, "clean"); got != "x" {
				t.Fatalf("clean = %q", got)
			}
			v.checkInvariants()
		})
	}
}

// TestWriteBackSnapshot: a snapshot holds the dirty values as the last
// commit left them, not the open transaction's.
func TestWriteBackSnapshot(t *testing.T) {
	v := newEnv(t, defaultOpts())
	v.set(0, "k", "v1", 0)
	v.set(0, "k", "v2", 0)
	v.set(0, "j", "j1", 0)
	v.set(0, "j", "j2", 0)
	var snap *Snapshot
	v.do(func(tx *Tx) error {
		if err := tx.SetString(0, []byte("k"), []byte("v3"), 0); err != nil {
			return err
		}
		if err := tx.SetString(0, []byte("clean"), []byte("c"), 0); err != nil {
			return err
		}
		if _, err := tx.Delete(0, []byte("j")); err != nil {
			return err
		}
		var err error
		snap, err = tx.Snapshot()
		return err
	})
	defer snap.Close()
	it, err := snap.Keys(0)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	got := map[string]string{}
	for it.Next() {
		got[string(it.Key())] = string(it.Value())
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	if len(got) != 2 || got["k"] != "v2" || got["j"] != "j2" {
		t.Fatalf("snapshot holds %q, want k=v2 j=j2", got)
	}
}

// TestWriteThroughOption: with write-back off every overwrite, push and
// pop reaches the store's records at once and nothing is ever dirty.
func TestWriteThroughOption(t *testing.T) {
	opts := defaultOpts()
	opts.WriteThrough = true
	v := newEnv(t, opts)
	v.set(0, "k", "v1", 0)
	v.set(0, "k", "v2", 0)
	v.set(0, "n", "1", 0)
	v.set(0, "n", "2", 0)
	v.withList("l", true, func(l *List) error { return l.Push(false, []byte("a")) })
	v.withList("l", true, func(l *List) error { return l.Push(false, []byte("b")) })
	v.withList("l", false, func(l *List) error {
		_, err := l.Pop(true, 1, func([]byte) {})
		return err
	})
	v.checkInvariants() // the store's records of l are its elements
	if v.storedString("k") != "v2" || v.storedString("n") != "2" || v.dirtyKeys() != 0 || v.e.Stats.LogOnlyWrites.Load() != 0 {
		t.Fatalf("write-through: k stored %q, n stored %q, %d dirty, %d log-only writes",
			v.storedString("k"), v.storedString("n"), v.dirtyKeys(), v.e.Stats.LogOnlyWrites.Load())
	}
}
