package coldstore

import (
	"fmt"
	"testing"

	"github.com/spillway/spillway/codec"
)

// TestLookupMixThreshold: a window probes the next one when more than a
// third of its lookups missed, and a window of hits goes back to Get.
func TestLookupMixThreshold(t *testing.T) {
	for _, c := range []struct {
		missed int
		probe  bool
	}{{0, false}, {85, false}, {86, true}, {mixWindow, true}} {
		var m lookupMix
		m.probe.Store(!c.probe) // the window decides, whatever came before
		for i := range mixWindow {
			if m.probing() != !c.probe {
				t.Fatalf("%d missed: the way changed after %d lookups, before the window ended", c.missed, i)
			}
			m.note(i >= c.missed)
		}
		if m.probing() != c.probe {
			t.Errorf("%d of %d missed: probing = %v, want %v", c.missed, mixWindow, m.probing(), c.probe)
		}
	}
}

// lookupKind is one kind of point lookup that follows a lookupMix: meta
// records (GetMeta) or fields of collections (GetField).
type lookupKind struct {
	name string
	mix  func(*Store) *lookupMix
	put  func(b *Batch, name, val string) error
	del  func(b *Batch, name string) error
	// get reads through the store, getB through a batch: the value, and
	// whether it exists.
	get  func(s *Store, name string) (string, bool, error)
	getB func(b *Batch, name string) (string, bool, error)
}

func fieldKey(name string) []byte { return codec.AppendFieldKey(nil, 0, []byte("h"), 7, []byte(name)) }

var lookupKinds = []lookupKind{{
	name: "meta",
	mix:  func(s *Store) *lookupMix { return &s.metaMix },
	put: func(b *Batch, name, val string) error {
		return b.PutMeta(0, []byte(name), &codec.Meta{Type: codec.TypeString, Value: []byte(val)})
	},
	del: func(b *Batch, name string) error { return b.DeleteMeta(0, []byte(name)) },
	get: func(s *Store, name string) (string, bool, error) {
		var m codec.Meta
		_, _, found, err := s.GetMeta(0, []byte(name), &m, nil, nil)
		return string(m.Value), found, err
	},
	getB: func(b *Batch, name string) (string, bool, error) {
		var m codec.Meta
		_, found, err := b.GetMeta(0, []byte(name), &m, nil)
		return string(m.Value), found, err
	},
}, {
	name: "field",
	mix:  func(s *Store) *lookupMix { return &s.fieldMix },
	put:  func(b *Batch, name, val string) error { return b.Set(fieldKey(name), []byte(val)) },
	del:  func(b *Batch, name string) error { return b.Delete(fieldKey(name)) },
	get: func(s *Store, name string) (string, bool, error) {
		v, found, err := s.GetField(fieldKey(name), nil)
		return string(v), found, err
	},
	getB: func(b *Batch, name string) (string, bool, error) {
		v, found, err := b.GetField(fieldKey(name), nil)
		return string(v), found, err
	},
}}

// TestLookupsProbeWhenMissing runs meta and field lookups on a store whose
// records are in the last level, with deleted keys above them and a write
// still pending: lookups of absent keys turn probing on, and then use the
// last level's bloom filters (Pebble's Get does not); lookups of present
// keys turn it off. Both ways, through the store and through a batch,
// answer as the model says.
func TestLookupsProbeWhenMissing(t *testing.T) {
	for _, kind := range lookupKinds {
		t.Run(kind.name, func(t *testing.T) { testLookupsProbeWhenMissing(t, kind) })
	}
}

func testLookupsProbeWhenMissing(t *testing.T, kind lookupKind) {
	s := openStore(t, t.TempDir(), FsyncNo)
	defer closeStore(t, s)
	mix := kind.mix(s)
	key := func(i int) string { return fmt.Sprintf("k%04d", i) }
	model := map[string]string{}
	b := s.NewBatch()
	for i := range 600 {
		v := fmt.Sprintf("value-%d", i)
		if err := kind.put(b, key(i), v); err != nil {
			t.Fatal(err)
		}
		model[key(i)] = v
	}
	commit(t, b)
	if err := s.Drain(); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(); err != nil { // every record in the last level
		t.Fatal(err)
	}
	if n := s.db.Metrics().Levels[6].TablesCount; n == 0 {
		t.Fatalf("no table in L6 after Compact")
	}

	// Absent keys between the stored ones: Get reads L6's data blocks, a
	// probe is answered by L6's filter.
	absent := func(i int) string { return fmt.Sprintf("k%04d-absent", i) }
	filterHits := func() int64 { return s.db.Metrics().Filter.Hits }
	lookups := func(keys func(int) string, n int) {
		t.Helper()
		for i := range n {
			if _, _, err := kind.get(s, keys(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if mix.probing() {
		t.Fatal("a new store probes")
	}
	before := filterHits()
	lookups(absent, mixWindow-1) // still Get: the window has not ended
	if got := filterHits() - before; got > mixWindow/8 {
		t.Errorf("Get of %d absent keys: %d filter hits; Get should skip L6's filters", mixWindow-1, got)
	}
	lookups(absent, 1)
	if !mix.probing() {
		t.Fatalf("a window of misses did not turn probing on")
	}
	before = filterHits()
	lookups(absent, mixWindow-1)
	if got := filterHits() - before; got < mixWindow/2 {
		t.Errorf("probes of %d absent keys: %d filter hits, want most answered by L6's filter", mixWindow-1, got)
	}

	// Deletions above the last level, and a write not yet applied.
	b = s.NewBatch()
	for i := 0; i < 600; i += 7 {
		if err := kind.del(b, key(i)); err != nil {
			t.Fatal(err)
		}
		delete(model, key(i))
	}
	commit(t, b)
	if err := s.Drain(); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	b = s.NewBatch()
	if err := kind.put(b, key(700), "pending"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Enqueue(); err != nil {
		t.Fatal(err)
	}
	model[key(700)] = "pending"

	// reset sets the way and starts a new window.
	reset := func(probe bool) {
		mix.n.Store(0)
		mix.missed.Store(0)
		mix.probe.Store(probe)
	}
	// check reads keys 0..749 through the store and through a batch, in
	// the way given, resetting the mix before a window can end.
	check := func(probe bool) {
		t.Helper()
		rb := s.NewBatch()
		defer rb.Abort()
		for i := range 750 {
			if i%(mixWindow/2) == 0 {
				reset(probe)
			}
			k := key(i)
			want, ok := model[k]
			for _, read := range []struct {
				by  string
				get func() (string, bool, error)
			}{{"store", func() (string, bool, error) { return kind.get(s, k) }}, {"batch", func() (string, bool, error) { return kind.getB(rb, k) }}} {
				v, found, err := read.get()
				if err != nil {
					t.Fatal(err)
				}
				if found != ok || (found && v != want) {
					t.Fatalf("probe %v: %s's %s = %q (found %v), want %q (found %v)", probe, read.by, k, v, found, want, ok)
				}
			}
		}
	}
	check(true)
	check(false)

	// Present keys turn probing off.
	reset(true)
	lookups(func(i int) string { return key(2*i + 1) }, mixWindow) // a seventh deleted
	if mix.probing() {
		t.Errorf("a window of hits left probing on")
	}
}
