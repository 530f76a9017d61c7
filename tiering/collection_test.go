package tiering

import (
	"testing"

	"github.com/spillway/spillway/codec"
)

// Removing a collection (DEL, overwrite by another type, expiry) must record
// its version as garbage so that the reclaimer deletes its data records;
// otherwise they stay on disk forever.
func TestRemovedCollectionIsReclaimed(t *testing.T) {
	tests := []struct {
		name     string
		expireAt int64 // of the hash
		remove   func(v *env)
		wantGone bool // the key no longer exists
	}{
		{"delete", 0, func(v *env) { v.del(0, "h") }, true},
		{"overwrite with a string", 0, func(v *env) { v.set(0, "h", "s", 0) }, false},
		{"lazy expiry", 1, func(v *env) { v.get(0, "h") }, true},
		{"swept expiry", 1, func(v *env) { v.sweepAll() }, true},
		{"flushdb", 0, func(v *env) { v.do(func(tx *Tx) error { return tx.FlushDB(0) }) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newEnv(t, defaultOpts())
			v.writeRaw(
				rawHash{db: 0, key: "h", version: 1 << 40, fields: 5, expireAt: tt.expireAt},
				rawHash{db: 1, key: "keep", version: 1<<40 + 1, fields: 3},
			)
			if tt.expireAt == 0 {
				e, _, ok := v.peekEntry(0, "h")
				if !ok || e != codec.TypeHash {
					t.Fatalf("raw hash not visible: %v %v", e, ok)
				}
			}
			tt.remove(v)
			if _, found := v.storedMeta(0, "h"); found == tt.wantGone {
				t.Fatalf("meta stored = %v after removal", found)
			}
			// Reclaim what the removal recorded, as the background loop does.
			for {
				n, err := v.s.Reclaim(100)
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
			}
			if n := v.dataRecords(0, "h"); n != 0 {
				t.Fatalf("%d data records of the removed hash left after reclaiming", n)
			}
			if n := v.dataRecords(1, "keep"); n != 3 {
				t.Fatalf("other hash has %d data records, want 3", n)
			}
			v.checkInvariants()
		})
	}
}

// peekEntry returns key's type and expiry through Peek.
func (v *env) peekEntry(db int, key string) (codec.Type, int64, bool) {
	v.t.Helper()
	var typ codec.Type
	var at int64
	var ok bool
	v.do(func(tx *Tx) error {
		e, err := tx.Peek(db, []byte(key))
		if err != nil || e == nil {
			return err
		}
		typ, at, ok = e.Type, e.ExpireAt, true
		return nil
	})
	return typ, at, ok
}
