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

// TestMetaLookupsProbeWhenMissing runs meta lookups on a store whose
// records are in the last level, with deleted keys above them and a write
// still pending: lookups of absent keys turn probing on, and then use the
// last level's bloom filters (Pebble's Get does not); lookups of present
// keys turn it off. Both ways, through the store and through a batch,
// answer as the model says.
func TestMetaLookupsProbeWhenMissing(t *testing.T) {
	s := openStore(t, t.TempDir(), FsyncNo)
	defer closeStore(t, s)
	key := func(i int) []byte { return fmt.Appendf(nil, "k%04d", i) }
	model := map[string]string{}
	b := s.NewBatch()
	for i := range 600 {
		v := fmt.Sprintf("value-%d", i)
		if err := b.PutMeta(0, key(i), &codec.Meta{Type: codec.TypeString, Value: []byte(v)}); err != nil {
			t.Fatal(err)
		}
		model[string(key(i))] = v
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
	absent := func(i int) []byte { return fmt.Appendf(nil, "k%04d-absent", i) }
	filterHits := func() int64 { return s.db.Metrics().Filter.Hits }
	var meta codec.Meta
	lookups := func(keys func(int) []byte, n int) {
		t.Helper()
		for i := range n {
			if _, _, _, err := s.GetMeta(0, keys(i), &meta, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if s.metaMix.probing() {
		t.Fatal("a new store probes")
	}
	before := filterHits()
	lookups(absent, mixWindow-1) // still Get: the window has not ended
	if got := filterHits() - before; got > mixWindow/8 {
		t.Errorf("Get of %d absent keys: %d filter hits; Get should skip L6's filters", mixWindow-1, got)
	}
	lookups(absent, 1)
	if !s.metaMix.probing() {
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
		if err := b.DeleteMeta(0, key(i)); err != nil {
			t.Fatal(err)
		}
		delete(model, string(key(i)))
	}
	commit(t, b)
	if err := s.Drain(); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	b = s.NewBatch()
	if err := b.PutMeta(0, key(700), &codec.Meta{Type: codec.TypeString, Value: []byte("pending")}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Enqueue(); err != nil {
		t.Fatal(err)
	}
	model[string(key(700))] = "pending"

	// check reads keys 0..749 through the store and through a batch, in
	// the way given, resetting the mix before each window can end.
	check := func(probe bool) {
		t.Helper()
		rb := s.NewBatch()
		defer rb.Abort()
		for i := range 750 {
			if i%(mixWindow-1) == 0 {
				s.metaMix.n.Store(0)
				s.metaMix.missed.Store(0)
				s.metaMix.probe.Store(probe)
			}
			k := key(i)
			_, v, found, err := s.GetMeta(0, k, &meta, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, ok := model[string(k)]
			if found != ok || (found && string(meta.Value) != want) {
				t.Fatalf("probe %v: store's %s = %q (found %v), want %q (found %v)", probe, k, v, found, want, ok)
			}
			meta = codec.Meta{}
			if _, found, err = rb.GetMeta(0, k, &meta, nil); err != nil {
				t.Fatal(err)
			}
			if found != ok || (found && string(meta.Value) != want) {
				t.Fatalf("probe %v: batch's %s = %q (found %v), want %q (found %v)", probe, k, meta.Value, found, want, ok)
			}
		}
	}
	check(true)
	check(false)

	// Present keys turn probing off.
	s.metaMix.n.Store(0)
	s.metaMix.missed.Store(0)
	s.metaMix.probe.Store(true)
	lookups(func(i int) []byte { return key(2*i + 1) }, mixWindow) // a seventh deleted
	if s.metaMix.probing() {
		t.Errorf("a window of hits left probing on")
	}
}
