package upstream

import (
	"testing"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cmdtable"
)

func argv(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// TestBlockFence: a write naming a key of a blocking command on its way
// (same database), or naming no key, waits until that command leaves the
// fence, marked blocked meanwhile; other writes pass at once; the wait is
// bounded by fenceWaitMax.
func TestBlockFence(t *testing.T) {
	var f blockFence
	xread := argv("XREAD", "BLOCK", "0", "STREAMS", "s1", "s2", "$", "$")
	pos, _ := cmdtable.LookupArgs(xread).KeyPositions(xread, nil)
	e := f.enter(9, xread, pos)

	// write runs cmd against the fence in a goroutine and reports when it
	// passed, and whether it was marked blocked while it waited.
	type result struct{ blocked, unblocked bool }
	write := func(db int, args [][]byte) (<-chan result, func() bool) {
		done := make(chan result, 1)
		var r result
		started := make(chan struct{})
		go func() {
			f.waitFor(db, cmdtable.LookupArgs(args), args, nil, func() (<-chan struct{}, func(bool)) {
				r.blocked = true
				close(started)
				return nil, func(bool) { r.unblocked = true }
			})
			done <- r
		}()
		return done, func() bool {
			select {
			case <-started:
				return true
			case <-time.After(10 * time.Second):
				return false
			}
		}
	}
	passes := func(db int, args ...string) {
		t.Helper()
		done, _ := write(db, argv(args...))
		select {
		case r := <-done:
			if r.blocked {
				t.Fatalf("%v (db %d) was held at the fence", args, db)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v (db %d) waited for a blocking command it does not concern", args, db)
		}
	}
	passes(9, "DEL", "other")
	passes(0, "DEL", "s1") // another database

	for _, args := range [][]string{{"DEL", "s2"}, {"SET", "s1", "v"}, {"FLUSHALL"}} {
		done, waiting := write(9, argv(args...))
		if !waiting() {
			t.Fatalf("%v did not wait at the fence", args)
		}
		select {
		case <-done:
			t.Fatalf("%v passed the fence before the blocking command left it", args)
		default:
		}
		f.leave(e)
		r := <-done
		if !r.blocked || !r.unblocked {
			t.Fatalf("%v: marked blocked %v, unblocked %v", args, r.blocked, r.unblocked)
		}
		e = f.enter(9, xread, pos)
	}
	f.leave(e)
	f.leave(e) // a second leave does nothing
	if f.n.Load() != 0 {
		t.Fatalf("fence holds %d commands after they all left", f.n.Load())
	}
	passes(9, "DEL", "s1")

	// A blocking command that never leaves holds a write fenceWaitMax at
	// most (bounded: the write then goes on).
	f.enter(9, xread, pos)
	done, waiting := write(9, argv("DEL", "s1"))
	if !waiting() {
		t.Fatal("DEL did not wait at the fence")
	}
	select {
	case r := <-done:
		if !r.unblocked {
			t.Fatal("the write was not unblocked after its bounded wait")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a write waited at the fence beyond its bound")
	}
}

// TestBlockedRecently: the writes of orderWriteNames wait for the other
// clients' input only for a key a blocking command named in the last
// orderWindow (EXEC: a key it queued), or, naming no key, after any
// blocking command in that window; never before any blocking command.
func TestBlockedRecently(t *testing.T) {
	var f blockFence
	del := argv("DEL", "s", "x")
	if f.blockedRecently(0, del, []int{1, 2}, false, nil) || f.blockedRecently(0, argv("FLUSHALL"), nil, false, nil) {
		t.Fatal("a write waits before any blocking command")
	}
	xread := argv("XREAD", "BLOCK", "0", "STREAMS", "s", "$")
	f.leave(f.enter(3, xread, []int{4}))
	for _, c := range []struct {
		db     int
		args   [][]byte
		pos    []int
		exec   bool
		queued []protectedKey
		want   bool
	}{
		{3, del, []int{1, 2}, false, nil, true},
		{3, argv("DEL", "x"), []int{1}, false, nil, false},
		{0, del, []int{1, 2}, false, nil, false}, // another database
		{3, argv("FLUSHALL"), nil, false, nil, true},
		{3, argv("EXEC"), nil, true, nil, false},
		{3, argv("EXEC"), nil, true, []protectedKey{{3, codec.KeyHash([]byte("x"))}}, false},
		{3, argv("EXEC"), nil, true, []protectedKey{{3, codec.KeyHash([]byte("s"))}}, true},
	} {
		if got := f.blockedRecently(c.db, c.args, c.pos, c.exec, c.queued); got != c.want {
			t.Errorf("%q (db %d, queued %v): waits %v, want %v", c.args, c.db, c.queued, got, c.want)
		}
	}
	// Past the window, nothing waits.
	f.last.Store(time.Now().Add(-2 * orderWindow).UnixNano())
	if f.blockedRecently(3, del, []int{1, 2}, false, nil) {
		t.Fatal("a write waits for a blocking command older than orderWindow")
	}
}

// TestForwardingOrder: a command waits for the tickets taken before its
// own (all of them when it holds none), never for later ones or its own;
// giving a ticket back wakes its waiters, and a ticket reused after that
// is a new one. The keys clients are blocked on are counted per blocking
// command until it is unblocked.
func TestForwardingOrder(t *testing.T) {
	var o fwdOrder
	var a, b, c orderTicket
	o.take(&a)
	o.take(&b)
	if got := o.n.Load(); got != 2 {
		t.Fatalf("tickets out: %d, want 2", got)
	}
	if got := o.ahead(&a, nil); len(got) != 0 {
		t.Fatalf("the first ticket waits for %d", len(got))
	}
	ofB := o.ahead(&b, nil)
	if len(ofB) != 1 {
		t.Fatalf("the second ticket waits for %d, want 1", len(ofB))
	}
	if got := o.ahead(&c, nil); len(got) != 2 {
		t.Fatalf("a command holding no ticket waits for %d, want 2", len(got))
	}
	select {
	case <-ofB[0]:
		t.Fatal("woken before the ticket was given back")
	default:
	}
	o.give(&a)
	select {
	case <-ofB[0]:
	case <-time.After(5 * time.Second):
		t.Fatal("giving the ticket back did not wake its waiter")
	}
	if a.held || o.n.Load() != 1 {
		t.Fatalf("after give: held %v, %d out", a.held, o.n.Load())
	}
	o.take(&a) // reused: now after b
	if got := o.ahead(&a, nil); len(got) != 1 {
		t.Fatalf("the reused ticket waits for %d, want 1 (b)", len(got))
	}
	if got := o.ahead(&b, nil); len(got) != 0 {
		t.Fatalf("b waits for %d after a was reused, want 0", len(got))
	}
	o.give(&a)
	o.give(&b)
	if o.n.Load() != 0 || len(o.on) != 0 {
		t.Fatalf("%d tickets out after all were given back", o.n.Load())
	}

	var f blockFence
	blpop := argv("BLPOP", "q1", "q2", "0")
	pos, _ := cmdtable.LookupArgs(blpop).KeyPositions(blpop, nil)
	e1, e2 := f.enter(0, blpop, pos), f.enter(0, blpop, pos)
	lpush := argv("LPUSH", "q2", "x")
	lpos, _ := cmdtable.LookupArgs(lpush).KeyPositions(lpush, nil)
	if !f.wakes(0, lpush, lpos) || f.wakes(1, lpush, lpos) {
		t.Fatal("a push to a key blocked on in database 0 wakes, in database 1 does not")
	}
	f.unblocked(e1)
	if !f.wakes(0, lpush, lpos) {
		t.Fatal("the key is still blocked on by the second client")
	}
	f.unblocked(e2)
	if f.wakes(0, lpush, lpos) || f.waiting.Load() != 0 {
		t.Fatal("no client is blocked any more")
	}
}
