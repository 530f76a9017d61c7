package coldstore

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestReplayCoalescedMatchesModel: a replay of random batches (Sets,
// Deletes, range deletions, log-only Sets and Deletes over a small key
// space), cut into segments and into windows at random, leaves Pebble
// holding what applying every record in order gives (the model), and
// drops overwritten records.
func TestReplayCoalescedMatchesModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), DisableWAL: true, Logger: newPebbleLogger(quietLogger)})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			rng := rand.New(rand.NewPCG(seed, 7))
			r := replayer{db: db, memBytes: 64 << 10, runMax: 1 + rng.IntN(40)}
			defer r.close()
			m := map[string]string{}
			key := func() []byte { return fmt.Appendf(nil, "\x01k%02d", rng.IntN(60)) }
			var segment [][]byte // the reprs of the current segment, alive until its end
			for i := range 3000 {
				b := db.NewBatch()
				for j := range 1 + rng.IntN(4) {
					k, v := key(), fmt.Sprintf("v%d.%d", i, j)
					var err error
					switch x := rng.IntN(20); {
					case x < 7:
						err = b.Set(k, []byte(v), nil)
						m[string(k)] = v
					case x < 13:
						err = b.LogData(appendLogOnly(nil, k, []byte(v)), nil)
						m[string(k)] = v
					case x < 16:
						err = b.Delete(k, nil)
						delete(m, string(k))
					case x < 19:
						err = b.LogData(appendLogOnlyDelete(nil, k), nil)
						delete(m, string(k))
					default:
						lo, hi := key(), key()
						if bytes.Compare(lo, hi) > 0 {
							lo, hi = hi, lo
						}
						err = b.DeleteRange(lo, hi, nil)
						for mk := range m {
							if mk >= string(lo) && mk < string(hi) {
								delete(m, mk)
							}
						}
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				repr := append([]byte(nil), b.Repr()...)
				b.Close()
				segment = append(segment, repr)
				if err := r.add(repr); err != nil {
					t.Fatal(err)
				}
				if rng.IntN(300) == 0 {
					if err := r.endSegment(); err != nil {
						t.Fatal(err)
					}
					for _, repr := range segment {
						for i := range repr {
							repr[i] = 0xff // the segment's unmap: its records are gone
						}
					}
					segment = segment[:0]
				}
			}
			if err := r.endSegment(); err != nil {
				t.Fatal(err)
			}
			if err := r.flush(); err != nil {
				t.Fatal(err)
			}
			it, err := db.NewIter(nil)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for valid := it.First(); valid; valid = it.Next() {
				n++
				if want, ok := m[string(it.Key())]; !ok || want != string(it.Value()) {
					t.Fatalf("%q = %q after the replay, want %q (present %v)", it.Key(), it.Value(), want, ok)
				}
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
			if n != len(m) {
				t.Fatalf("%d keys after the replay, want %d", n, len(m))
			}
			if r.n != 3000 || r.dropped == 0 {
				t.Fatalf("replayed %d batches, dropped %d overwritten records (applied %d)", r.n, r.dropped, r.applied)
			}
		})
	}
}
