package tiering

import (
	"strings"
	"testing"
)

// usage runs KeyUsage for key of db.
func (v *env) usage(db int, key string) (KeyUsage, bool) {
	v.t.Helper()
	var u KeyUsage
	var ok bool
	v.do(func(tx *Tx) (err error) {
		u, ok, err = tx.KeyUsage(db, []byte(key))
		return err
	})
	return u, ok
}

func TestKeyUsage(t *testing.T) {
	v := newEnv(t, defaultOpts())
	val := strings.Repeat("x", 1000)
	v.set(0, "k", val, 0)
	u, ok := v.usage(0, "k")
	used, _, _ := v.hotUsage()
	if !ok || !u.Hot || u.Bytes != used {
		t.Fatalf("hot key: %+v, %v; the hot tier charges %d", u, ok, used)
	}
	v.demoteAll()
	u, ok = v.usage(0, "k")
	if !ok || u.Hot || u.Bytes < int64(len(val)) || u.Bytes > int64(len(val))+64 {
		t.Errorf("cold key of 1000 bytes: %+v, %v", u, ok)
	}
	if v.isHot(0, "k") {
		t.Error("KeyUsage promoted the key")
	}
	if _, ok := v.usage(0, "nokey"); ok {
		t.Error("a missing key reported")
	}
	// An expired key not yet deleted is still reported, as Redis's MEMORY
	// USAGE does; Inspect does not return it, and neither deletes it.
	v.set(0, "old", "v", v.now()-1000)
	if _, ok := v.usage(0, "old"); !ok {
		t.Error("an expired key not yet deleted is not reported")
	}
	v.do(func(tx *Tx) error {
		if e, err := tx.Inspect(0, []byte("old")); e != nil || err != nil {
			t.Errorf("Inspect of an expired key: %v, %v", e, err)
		}
		if e, err := tx.Inspect(0, []byte("k")); e == nil || err != nil || string(e.Str) != val {
			t.Errorf("Inspect of a cold key: %v, %v", e, err)
		}
		return nil
	})
	if n, _ := v.sizes(0); n != 2 {
		t.Errorf("%d keys after KeyUsage and Inspect, want 2 (nothing deleted)", n)
	}
}

func TestHotMemoryPeak(t *testing.T) {
	v := newEnv(t, defaultOpts())
	v.set(0, "a", strings.Repeat("x", 10000), 0)
	m := v.e.HotMemory()
	if m.Keys != 1 || m.Used < 10000 || m.Peak != m.Used {
		t.Fatalf("after one key: %+v", m)
	}
	v.del(0, "a")
	after := v.e.HotMemory()
	if after.Used != 0 || after.Peak != m.Peak {
		t.Errorf("after deleting it: %+v, want the peak %d kept", after, m.Peak)
	}
}
