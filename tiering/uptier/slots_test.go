package uptier

import (
	"fmt"
	"io"
	"log/slog"
	"sort"
	"testing"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/coldstore"
	"github.com/spillway/spillway/tiering"
)

// TestKeySlot checks CRC16 against the check value the Redis Cluster
// specification gives (CRC16 of "123456789" is 0x31C3) and the hash tag
// rules by the specification's examples: keys whose tags are equal share
// a slot with the tag alone; an empty tag, or no closing brace, hashes the
// whole key. TestClusterSidecars compares KeySlot with a real node's
// CLUSTER KEYSLOT for 30,000 keys.
func TestKeySlot(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("crc16(123456789) = %#x; want 0x31C3", got)
	}
	whole := func(k string) int { return int(crc16([]byte(k)) & (SlotCount - 1)) }
	for _, c := range []struct{ key, hashed string }{
		{"123456789", "123456789"},
		{"{user1000}.following", "user1000"},
		{"{user1000}.followers", "user1000"},
		{"foo{}{bar}", "foo{}{bar}"},
		{"foo{{bar}}zap", "{bar"},
		{"foo{bar}{zap}", "bar"},
		{"foo{bar", "foo{bar"},
		{"}{x}", "x"},
		{"", ""},
	} {
		if got, want := KeySlot([]byte(c.key)), whole(c.hashed); got != want {
			t.Errorf("KeySlot(%q) = %d; want that of %q, %d", c.key, got, c.hashed, want)
		}
	}
	if got := KeySlot([]byte("123456789")); got != 0x31C3&(SlotCount-1) {
		t.Fatalf("KeySlot(123456789) = %d", got)
	}
}

func openSlotEngine(t *testing.T) *tiering.Engine {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cold, err := coldstore.Open(coldstore.Options{Dir: t.TempDir(), CacheBytes: 4 << 20, MemTableBytes: 4 << 20,
		Fsync: coldstore.FsyncNo, Logger: quiet})
	if err != nil {
		t.Fatalf("coldstore.Open: %v", err)
	}
	eng, err := tiering.Open(cold, tiering.Options{Databases: 16, HotBudget: 0, PromoteMinHits: 1,
		ColdReadMaxBytes: 1 << 20, Logger: quiet})
	if err != nil {
		cold.Close()
		t.Fatalf("tiering.Open: %v", err)
	}
	t.Cleanup(func() {
		eng.Close()
		if err := cold.Close(); err != nil {
			t.Errorf("coldstore.Close: %v", err)
		}
	})
	return eng
}

// TestSlotDirectory: the directory lists a slot's cold keys, built from
// the store on the first query; keys demoted after are reported to it and
// listed; keys dropped from the store (and expired ones) are no longer
// listed; other databases and slots are apart.
func TestSlotDirectory(t *testing.T) {
	eng := openSlotEngine(t)
	put := func(db int, exp int64, keys ...string) {
		t.Helper()
		var vals []*Value
		for _, k := range keys {
			vals = append(vals, &Value{Key: []byte(k), Type: codec.TypeString, Str: []byte("v-" + k), ExpireAt: exp})
		}
		if err := Import(eng, db, vals); err != nil {
			t.Fatal(err)
		}
	}
	list := func(d *SlotDirectory, db int, key string) []string {
		t.Helper()
		var got []string
		if err := d.Keys(db, KeySlot([]byte(key)), func(k []byte) bool { got = append(got, string(k)); return true }); err != nil {
			t.Fatal(err)
		}
		sort.Strings(got)
		return got
	}
	// {a}x keys share a slot; "b" is elsewhere.
	put(0, 0, "{a}1", "{a}2", "b")
	put(1, 0, "{a}9")
	put(0, 1, "{a}expired") // expired in 1970
	d := NewSlotDirectory(eng)
	d.Demoted(0, [][]byte{[]byte("{a}ignored")}) // no directory yet: nothing kept
	if got := list(d, 0, "{a}"); fmt.Sprint(got) != "[{a}1 {a}2]" {
		t.Fatalf("slot of {a} in db 0 = %q", got)
	}
	if got := list(d, 1, "{a}"); fmt.Sprint(got) != "[{a}9]" {
		t.Fatalf("slot of {a} in db 1 = %q", got)
	}
	if got := list(d, 0, "b"); fmt.Sprint(got) != "[b]" {
		t.Fatalf("slot of b = %q", got)
	}
	put(0, 0, "{a}3")
	d.Demoted(0, [][]byte{[]byte("{a}3")})
	if err := DropKey(eng, 0, []byte("{a}1")); err != nil {
		t.Fatal(err)
	}
	if got := list(d, 0, "{a}"); fmt.Sprint(got) != "[{a}2 {a}3]" {
		t.Fatalf("slot of {a} after a demotion and a drop = %q", got)
	}
	// A key written to the store without being reported is not listed
	// until the directory is rebuilt: demotion is the only way in.
	put(0, 0, "{a}4")
	if got := list(d, 0, "{a}"); fmt.Sprint(got) != "[{a}2 {a}3]" {
		t.Fatalf("slot of {a} with an unreported key = %q", got)
	}
	if got := list(NewSlotDirectory(eng), 0, "{a}"); fmt.Sprint(got) != "[{a}2 {a}3 {a}4]" {
		t.Fatalf("slot of {a} in a new directory = %q", got)
	}
}
