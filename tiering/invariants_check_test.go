//go:build invariants

package tiering

import (
	"strings"
	"testing"
	"time"
)

// TestCheckInvariantsFires proves the invariants check can fail: on a
// skewed byte count, a mis-sized entry and a lock left held.
func TestCheckInvariantsFires(t *testing.T) {
	v := newEnv(t, Options{Databases: 16, HotBudget: 1 << 20, Logger: quietLogger})
	tx := v.e.begin()
	if err := tx.SetString(0, []byte("k"), []byte("value"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.commit(); err != nil {
		t.Fatal(err)
	}
	if err := v.e.CheckInvariants(); err != nil {
		t.Fatalf("clean engine: %v", err)
	}

	v.e.SkewHotAccountingForTest(7)
	err := v.e.CheckInvariants()
	if err == nil || !strings.Contains(err.Error(), "entries sum to") {
		t.Fatalf("skewed accounting: got %v", err)
	}
	v.e.SkewHotAccountingForTest(-7)

	v.e.mu.Lock()
	he, _ := v.e.hot.peek(hotKey(nil, 0, []byte("k")))
	he.Str = []byte("a longer value, changed in place without resize")
	v.e.mu.Unlock()
	err = v.e.CheckInvariants()
	if err == nil || !strings.Contains(err.Error(), "its contents cost") {
		t.Fatalf("mis-sized entry: got %v", err)
	}
	v.e.mu.Lock()
	v.e.hot.resize(hotKey(nil, 0, []byte("k")), he)
	v.e.mu.Unlock()
	if err := v.e.CheckInvariants(); err != nil {
		t.Fatalf("after resize: %v", err)
	}

	defer func(d time.Duration) { InvariantLockWait = d }(InvariantLockWait)
	InvariantLockWait = 20 * time.Millisecond
	tx = v.e.begin()
	err = v.e.CheckInvariants()
	tx.abort()
	if err == nil || !strings.Contains(err.Error(), "lock still held") {
		t.Fatalf("held lock: got %v", err)
	}
	if err := v.e.CheckInvariants(); err != nil {
		t.Fatalf("after release: %v", err)
	}
}
