//go:build invariants

package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/tiering"
)

// TestInvariantsFire proves the check after every command fires: a
// command that leaves its transaction open, one that leaves a transaction
// of its own making open (the lock held), and one that skews the hot
// tier's accounting each make the Local's Do panic, outside the command's
// recovery, with the invariants message.
func TestInvariantsFire(t *testing.T) {
	var releaseOwn, releaseLeaked func()
	tb := NewTable()
	tb.Register("get", func(x *Ctx, args [][]byte) error {
		// As a handler taking the lock by hand would: never committed.
		x.c.txID, releaseOwn = x.c.s.engine.LeakTxForTest()
		return nil
	})
	tb.Register("strlen", func(x *Ctx, args [][]byte) error {
		_, releaseLeaked = x.Engine().LeakTxForTest() // not the client's: only the lock shows it
		x.W.Int(0)
		return nil
	})
	tb.Register("append", func(x *Ctx, args [][]byte) error {
		x.Engine().SkewHotAccountingForTest(3)
		x.W.Int(0)
		return nil
	})
	s := localServer(t, tb)
	defer func(d time.Duration) { tiering.InvariantLockWait = d }(tiering.InvariantLockWait)
	tiering.InvariantLockWait = 20 * time.Millisecond

	do := func(args ...string) (msg string) {
		l := s.NewLocal()
		defer func() { msg = fmt.Sprint(recover()) }()
		l.DoString(args...)
		return ""
	}
	if msg := do("SET", "k", "v"); msg != "<nil>" {
		t.Fatalf("a clean command tripped the check: %s", msg)
	}
	msg := do("GET", "k")
	if !strings.Contains(msg, "left its transaction") {
		t.Errorf("transaction left open: %q", msg)
	}
	releaseOwn()
	msg = do("STRLEN", "k")
	if !strings.Contains(msg, "engine lock still held") {
		t.Errorf("lock left held: %q", msg)
	}
	releaseLeaked()
	msg = do("APPEND", "k", "v")
	if !strings.Contains(msg, "hot tier accounts") {
		t.Errorf("accounting skewed: %q", msg)
	}
	s.engine.SkewHotAccountingForTest(-3)
	if msg := do("SET", "k", "v"); msg != "<nil>" {
		t.Fatalf("the check still fires once repaired: %s", msg)
	}
}
