package tiering

import (
	"fmt"
	"slices"
	"testing"

	"github.com/spillway/spillway/codec"
)

// sadd is one SADD as a handler runs it: open (creating), add, close.
func sadd(t *testing.T, tx *Tx, key, member string) {
	t.Helper()
	c, err := tx.OpenColl(0, []byte(key), codec.TypeSet, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set([]byte(member), nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// members lists key's members (db 0), sorted, and its count.
func (v *env) members(key string) ([]string, int64) {
	v.t.Helper()
	var out []string
	var n int64
	v.do(func(tx *Tx) error {
		c, err := tx.OpenColl(0, []byte(key), codec.TypeSet, false)
		if err != nil || c == nil {
			return err
		}
		n = c.Len()
		return c.Each(func(f, _ []byte) bool { out = append(out, string(f)); return true })
	})
	slices.Sort(out)
	return out, n
}

// A group transaction (script, MULTI) that writes one structure many
// times leaves one meta record pending, written at commit: what it wrote
// is what a lookup, SCAN and the store after a restart see.
func TestGroupWritesMetaOnce(t *testing.T) {
	v := newEnv(t, defaultOpts())
	var want []string
	v.do(func(tx *Tx) error {
		for i := range 200 {
			sadd(t, tx, "s", fmt.Sprint(i))
			sadd(t, tx, "t", fmt.Sprint(i))
			want = append(want, fmt.Sprint(i))
		}
		if n := len(tx.metaPend); n != 2 {
			t.Errorf("%d meta records pending after 400 writes of 2 keys, want 2", n)
		}
		keys, err := tx.Keys(0, nil) // iterates meta records: writes them first
		if err != nil {
			return err
		}
		if len(keys) != 2 || len(tx.metaPend) != 0 {
			t.Errorf("KEYS in the transaction: %q, %d pending", keys, len(tx.metaPend))
		}
		sadd(t, tx, "s", "last")
		return nil
	})
	want = append(want, "last")
	slices.Sort(want)
	if m, ok := v.storedMeta(v.e.dbmap[0], "s"); !ok || m.Count != 201 {
		t.Fatalf("stored meta of s: %+v %v, want count 201", m, ok)
	}
	v.reopen()
	got, n := v.members("s")
	if n != 201 || !slices.Equal(got, want) {
		t.Fatalf("after restart: count %d, %d members, want 201", n, len(got))
	}
}

// A key written (its meta pending) then deleted, or flushed, in the same
// transaction is gone at commit; an aborted transaction keeps nothing.
func TestPendingMetaDeletedOrAborted(t *testing.T) {
	v := newEnv(t, defaultOpts())
	v.do(func(tx *Tx) error {
		sadd(t, tx, "gone", "a")
		sadd(t, tx, "gone", "b")
		if ok, err := tx.Delete(0, []byte("gone")); err != nil || !ok {
			t.Fatalf("DEL: %v %v", ok, err)
		}
		sadd(t, tx, "again", "a")
		if ok, err := tx.Delete(0, []byte("again")); err != nil || !ok {
			t.Fatalf("DEL: %v %v", ok, err)
		}
		sadd(t, tx, "again", "b") // recreated after its deletion
		sadd(t, tx, "flushed", "a")
		return nil
	})
	v.do(func(tx *Tx) error {
		sadd(t, tx, "flushed", "b")
		return tx.FlushDB(1) // another database: db 0's pending record stays
	})
	if _, ok := v.storedMeta(v.e.dbmap[0], "gone"); ok {
		t.Fatal("deleted key stored")
	}
	if got, n := v.members("again"); n != 1 || !slices.Equal(got, []string{"b"}) {
		t.Fatalf("recreated key: %q count %d", got, n)
	}
	if got, n := v.members("flushed"); n != 2 || len(got) != 2 {
		t.Fatalf("flushed: %q count %d", got, n)
	}
	tx := v.e.begin()
	sadd(t, tx, "aborted", "a")
	tx.abort()
	if len(tx.metaPend) != 0 || len(tx.outgrown) != 0 {
		t.Fatal("abort left pending work")
	}
	v.reopen()
	if _, ok := v.storedMeta(v.e.dbmap[0], "aborted"); ok {
		t.Fatal("aborted key stored")
	}
}

// A set that outgrows the hot tier's share in a transaction stays
// resident (its later writes need no store read) until the transaction
// ends, and is demoted then; everything it holds is stored.
func TestOutgrownSetDemotedAtEnd(t *testing.T) {
	o := defaultOpts()
	o.HotBudget = 16 << 10 // share: 2 KB, about 30 small members
	v := newEnv(t, o)
	const n = 300
	v.do(func(tx *Tx) error {
		for i := range n {
			sadd(t, tx, "big", fmt.Sprint(i))
		}
		c, err := tx.OpenColl(0, []byte("big"), codec.TypeSet, false)
		if err != nil {
			return err
		}
		if !c.Resident() || c.Len() != n || tx.e.keepHot(c.e.size) {
			t.Errorf("in the transaction: resident %v, %d members, size %d", c.Resident(), c.Len(), c.e.size)
		}
		return nil
	})
	if v.isHot(0, "big") {
		t.Fatal("set over the share still hot after commit")
	}
	if used, _, _ := v.hotUsage(); used > 16<<10 {
		t.Fatalf("hot tier uses %d bytes over its budget", used)
	}
	if _, count := v.members("big"); count != n {
		t.Fatalf("count %d, want %d", count, n)
	}
	v.reopen()
	got, count := v.members("big")
	if count != n || len(got) != n {
		t.Fatalf("after restart: count %d, %d members", count, len(got))
	}
}
