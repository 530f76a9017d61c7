package tiering

import (
	"slices"
	"testing"

	"github.com/spillway/spillway/codec"
)

// snapshotState reads every key of every database of s: "db key type
// expireAt value(s)".
func snapshotState(t *testing.T, s *Snapshot) []string {
	t.Helper()
	var out []string
	for db := range s.Databases() {
		it, err := s.Keys(db)
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			line := string(rune('0'+db)) + " " + string(it.Key()) + " " + it.Type().String()
			if it.ExpireAt() != 0 {
				line += " ttl"
			}
			switch it.Type() {
			case codec.TypeString:
				line += " " + string(it.Value())
			case codec.TypeHash, codec.TypeSet:
				var fs []string
				err = it.Fields(func(f, v []byte) error { fs = append(fs, string(f)+"="+string(v)); return nil })
				slices.Sort(fs)
				for _, f := range fs {
					line += " " + f
				}
			case codec.TypeList:
				err = it.Elements(func(v []byte) error { line += " " + string(v); return nil })
			case codec.TypeZSet:
				err = it.Members(func(m []byte, sc float64) error {
					line += " " + string(m) + ":" + formatScore(sc)
					return nil
				})
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, line)
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		it.Close()
	}
	slices.Sort(out)
	return out
}

func formatScore(f float64) string {
	switch f {
	case -1:
		return "-1"
	case 2.5:
		return "2.5"
	}
	return "?"
}

// TestSnapshotIsolation: a snapshot keeps showing the dataset as it was
// when taken (every type, hot and cold, database swaps included) while the
// engine goes on changing it, and its keys stream in full.
func TestSnapshotIsolation(t *testing.T) {
	v := newEnv(t, defaultOpts())
	v.set(0, "s", "v", 0)
	v.set(1, "t", "w", v.now()+3_600_000)
	v.do(func(tx *Tx) error {
		c, err := tx.OpenColl(0, []byte("h"), codec.TypeHash, true)
		if err != nil {
			return err
		}
		c.Set([]byte("f"), []byte("1"))
		c.Set([]byte("g"), []byte("2"))
		if err := c.Close(); err != nil {
			return err
		}
		l, err := tx.OpenList(0, []byte("l"), true)
		if err != nil {
			return err
		}
		l.Push(false, []byte("a"))
		l.Push(false, []byte("b"))
		if err := l.Close(); err != nil {
			return err
		}
		z, err := tx.OpenZSet(0, []byte("z"), true)
		if err != nil {
			return err
		}
		z.Add([]byte("m"), 2.5)
		z.Add([]byte("n"), -1)
		return z.Close()
	})
	v.demoteAll()
	want := []string{"0 h hash f=1 g=2", "0 l list a b", "0 s string v", "0 z zset n:-1 m:2.5", "1 t string ttl w"}
	var snap *Snapshot
	v.do(func(tx *Tx) (err error) {
		snap, err = tx.Snapshot()
		return err
	})
	defer snap.Close()
	// Changes after the snapshot: none is seen.
	v.set(0, "s", "changed", 0)
	v.del(0, "h")
	v.do(func(tx *Tx) error { return tx.SwapDB(0, 1) })
	v.set(2, "new", "x", 0)
	if got := snapshotState(t, snap); !slices.Equal(got, want) {
		t.Errorf("snapshot: %q, want %q", got, want)
	}
}
