package server

import (
	"testing"

	"github.com/spillway/spillway/tiering"
)

// stringTable is a command table with GET and SET (the command library
// cannot be imported here), enough to read and write keys.
func stringTable() *Table {
	tb := NewTable()
	tb.Register("get", func(x *Ctx, args [][]byte) error {
		return x.View(func(tx *tiering.Tx) error {
			e, err := tx.Get(x.DB(), args[1])
			if err != nil {
				return err
			}
			if e == nil {
				x.W.Null()
			} else {
				x.W.Bulk(e.Str)
			}
			return nil
		})
	})
	tb.Register("set", func(x *Ctx, args [][]byte) error {
		return x.Update(func(tx *tiering.Tx) error {
			x.W.OK()
			return tx.SetString(x.DB(), args[1], args[2], 0)
		})
	})
	return tb
}

// TestTrackingOwnWrite: a RESP3 tracker's invalidation for its own write
// follows the write's reply; reads inside MULTI are remembered and their
// invalidations follow EXEC's reply; turning tracking off leaves no
// tracking client.
func TestTrackingOwnWrite(t *testing.T) {
	s := localServer(t, stringTable())
	l := s.NewLocal()
	defer l.Close()
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "TRACKING", "on"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$-1\r\n"}, // RESP2: no pushes
		{[]string{"SET", "k", "v"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$1\r\nv\r\n"},
		{[]string{"CLIENT", "TRACKING", "off"}, "+OK\r\n"},
	}
	run := func() {
		t.Helper()
		for _, st := range steps {
			if got := string(l.DoString(st.args...)); got != st.want {
				t.Fatalf("%q = %q, want %q", st.args, got, st.want)
			}
		}
	}
	run()
	l.DoString("HELLO", "3")
	push := ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n"
	steps = []struct {
		args []string
		want string
	}{
		{[]string{"CLIENT", "TRACKING", "on"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "$1\r\nv\r\n"},
		{[]string{"SET", "k", "w"}, "+OK\r\n" + push},
		{[]string{"MULTI"}, "+OK\r\n"},
		{[]string{"GET", "k"}, "+QUEUED\r\n"},
		{[]string{"SET", "k", "x"}, "+QUEUED\r\n"},
		{[]string{"EXEC"}, "*2\r\n$1\r\nw\r\n+OK\r\n" + push},
		{[]string{"SET", "k", "y"}, "+OK\r\n"}, // forgotten once invalidated
		{[]string{"CLIENT", "TRACKING", "off"}, "+OK\r\n"},
	}
	run()
	if s.trk.Active() {
		t.Error("a tracking client remains")
	}
}

// TestTrackingCostsNoAllocation: with a client tracking, another client's
// reads and writes allocate no more than with none.
func TestTrackingCostsNoAllocation(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's sync.Pool drops buffers: allocation counts vary")
	}
	s := localServer(t, stringTable())
	l := s.NewLocal()
	defer l.Close()
	get, set := [][]byte{[]byte("GET"), []byte("k")}, [][]byte{[]byte("SET"), []byte("k"), []byte("v")}
	cost := func() float64 {
		return testing.AllocsPerRun(200, func() {
			l.Do(get...)
			l.Do(set...)
		})
	}
	before := cost()
	tr := s.NewLocal()
	defer tr.Close()
	if got := string(tr.DoString("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "other:")); got != "+OK\r\n" {
		t.Fatalf("CLIENT TRACKING: %q", got)
	}
	if after := cost(); after > before {
		t.Errorf("allocations per GET+SET: %v without tracking, %v with a BCAST tracker elsewhere", before, after)
	}
}
