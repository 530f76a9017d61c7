package tiering

import (
	"testing"
	"time"
)

func TestIdleMillis(t *testing.T) {
	v := newEnv(t, defaultOpts())
	v.set(0, "k", "v", 0)
	time.Sleep(30 * time.Millisecond)
	tests := []struct {
		key     string
		exists  bool
		atLeast int64
	}{
		{"k", true, 25},
		{"missing", false, 0},
	}
	for _, tt := range tests {
		v.do(func(tx *Tx) error {
			ms, ok, err := tx.IdleMillis(0, []byte(tt.key))
			if err != nil {
				return err
			}
			if ok != tt.exists || ms < tt.atLeast || ms > 5000 {
				t.Errorf("IdleMillis(%q) = %d, %v; want exists=%v and >= %d ms", tt.key, ms, ok, tt.exists, tt.atLeast)
			}
			return nil
		})
	}
	// A read resets the idle time; IdleMillis itself does not.
	v.get(0, "k")
	v.do(func(tx *Tx) error {
		ms, _, err := tx.IdleMillis(0, []byte("k"))
		if ms > 20 {
			t.Errorf("idle %d ms right after a read", ms)
		}
		return err
	})
}
