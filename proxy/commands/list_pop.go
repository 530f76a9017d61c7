package commands

import (
	"bytes"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// The list pops: LPOP/RPOP, the LMOVE family, LMPOP and the blocking forms
// (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP), which share listOp, the
// server.PopOp the blocking registry runs for a served waiter.

// listEnds are LMPOP's ends; newListMPop is its pop.
var listEnds = [2]string{"left", "right"}

// newListMPop returns LMPOP's pop of up to count elements from the left
// end (or the right).
func newListMPop(left bool, count int64) server.PopOp { return &listOp{left: left, count: count} }

// cmdPop is LPOP/RPOP key [count]: one element (a bulk), or with a count
// an array of up to count.
func cmdPop(x *server.Ctx, args [][]byte, left bool) error {
	if len(args) > 3 {
		return resp.Err("ERR wrong number of arguments for '" + strops.LowerASCII(args[0]) + "' command")
	}
	count := int64(-1)
	if len(args) == 3 {
		n, ok := cstr.ParseInt(args[2])
		if !ok || n < 0 {
			return resp.Err("ERR value is out of range, must be positive")
		}
		count = n
	}
	return x.Update(func(tx *tiering.Tx) error {
		l, err := tx.OpenList(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		switch {
		case l == nil && count >= 0:
			x.W.NullArray()
		case l == nil:
			x.W.Null()
		case count == 0:
			x.W.Array(0)
		case count < 0:
			if _, err := l.Pop(left, 1, x.W.Bulk); err != nil {
				return err
			}
			popped(x.Events(), x.DB(), args[1], left, l.Len())
		default:
			x.W.Array(int(min(count, l.Len())))
			if _, err := l.Pop(left, count, x.W.Bulk); err != nil {
				return err
			}
			popped(x.Events(), x.DB(), args[1], left, l.Len())
		}
		return closeAll(l)
	})
}

// listOp is a pop a client asked for: BLPOP/BRPOP (count -1: one element,
// reply [key, element]), LMPOP/BLMPOP (count > 0: reply [key, [elements]])
// or the LMOVE family (move: pop, push to dst, reply the element).
//
// Run records the non-blocking form it executed for the replicas (Redis's
// serveClientBlockedOnList and the rewrites of blmpop/blmove): LPOP/RPOP
// key [count], LMOVE source destination ends, RPOPLPUSH (rpoplpush) —
// except for LMOVE and RPOPLPUSH themselves (asIs), which propagate as
// received.
type listOp struct {
	left      bool
	count     int64
	move      bool
	dst       []byte
	dstLeft   bool
	rpoplpush bool
	asIs      bool
	// self and ends: BLMOVE's own client and its ends as received, which
	// it propagates when it pops at once (served later, Redis spells them
	// "left" and "right").
	self server.Events
	ends [2][]byte
}

// propagate records the pop op executed on key (n elements).
func (op *listOp) propagate(ev server.Events, db int, key []byte, n int64) {
	switch {
	case op.asIs || !ev.Replicating():
	case op.move && op.rpoplpush:
		ev.Propagate(db, argRPopLPush, key, op.dst)
	case op.move && ev == op.self:
		ev.Propagate(db, argLMove, key, op.dst, op.ends[0], op.ends[1])
	case op.move:
		ev.Propagate(db, argLMove, key, op.dst, endArg(op.left), endArg(op.dstLeft))
	case op.count > 0:
		ev.Propagate(db, popArg(op.left), key, intArg(n))
	default:
		ev.Propagate(db, popArg(op.left), key)
	}
}

func endArg(left bool) []byte {
	if left {
		return argLeft
	}
	return argRight
}

func popArg(left bool) []byte {
	if left {
		return argLPop
	}
	return argRPop
}

// Run implements server.PopOp: it executes op on key (database db) within
// tx and writes the reply to w. It reports false, having written nothing,
// when key holds no list; ErrWrongType when it holds something else. A
// destination of the wrong type is answered (WRONGTYPE, nothing popped)
// and reported done.
func (op *listOp) Run(ev server.Events, tx *tiering.Tx, db int, key []byte, w *resp.Writer) (bool, error) {
	src, err := tx.OpenList(db, key, false)
	if err != nil || src == nil {
		return false, err
	}
	if !op.move {
		w.Array(2)
		w.Bulk(key)
		n := int64(1)
		if op.count > 0 {
			n = min(op.count, src.Len())
			w.Array(int(n))
		}
		if _, err := src.Pop(op.left, n, w.Bulk); err != nil {
			return true, err
		}
		op.propagate(ev, db, key, n)
		popped(ev, db, key, op.left, src.Len())
		return true, src.Close()
	}
	dst := src
	if !bytes.Equal(op.dst, key) {
		dst, err = tx.OpenList(db, op.dst, true)
		if err == tiering.ErrWrongType {
			w.Error(resp.ErrWrongType.Msg)
			return true, nil
		}
		if err != nil {
			return true, err
		}
	}
	dstNew := dst.Len() == 0 // a list is never stored empty
	var val []byte
	if _, err := src.Pop(op.left, 1, func(v []byte) { val = bytes.Clone(v) }); err != nil {
		return true, err
	}
	if err := dst.Push(op.dstLeft, val); err != nil {
		return true, err
	}
	// Redis pushes (lmoveHandlePush: "new", the push event, the reply),
	// then reports the pop.
	if dstNew {
		ev.Notify(db, server.NotifyNew, "new", op.dst)
	}
	ev.Notify(db, server.NotifyList, pushEvent(op.dstLeft), op.dst)
	op.propagate(ev, db, key, 1)
	w.Bulk(val)
	popped(ev, db, key, op.left, src.Len())
	if err := src.Close(); err != nil {
		return true, err
	}
	return true, dst.Close()
}

// cmdBPop is BLPOP/BRPOP key... timeout.
func cmdBPop(x *server.Ctx, args [][]byte, left bool) error {
	ms, err := timeout(args[len(args)-1])
	if err != nil {
		return err
	}
	x.PreventPropagation() // the pop propagates as LPOP/RPOP
	return x.PopOrBlock(&listOp{left: left, count: -1}, args[1:len(args)-1], ms, false)
}

// cmdLMove is LMOVE source destination LEFT|RIGHT LEFT|RIGHT.
func cmdLMove(x *server.Ctx, args [][]byte) error {
	from, err := listEnd(args[3])
	if err != nil {
		return err
	}
	to, err := listEnd(args[4])
	if err != nil {
		return err
	}
	return moveNow(x, listOp{left: from, move: true, dst: args[2], dstLeft: to, asIs: true}, args[1])
}

// cmdRPopLPush is RPOPLPUSH source destination: LMOVE ... RIGHT LEFT.
func cmdRPopLPush(x *server.Ctx, args [][]byte) error {
	return moveNow(x, listOp{left: false, move: true, dst: args[2], dstLeft: true, asIs: true}, args[1])
}

// moveNow runs an LMOVE; a missing source answers nil.
func moveNow(x *server.Ctx, op listOp, src []byte) error {
	return x.Update(func(tx *tiering.Tx) error {
		done, err := x.RunPop(tx, &op, [][]byte{src}) // op does not outlive the command
		if !done && err == nil {
			x.W.Null()
		}
		return err
	})
}

// cmdBLMove is BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout.
func cmdBLMove(x *server.Ctx, args [][]byte) error {
	from, err := listEnd(args[3])
	if err != nil {
		return err
	}
	to, err := listEnd(args[4])
	if err != nil {
		return err
	}
	ms, err := timeout(args[5])
	if err != nil {
		return err
	}
	x.PreventPropagation() // propagated as LMOVE
	op := &listOp{left: from, move: true, dst: bytes.Clone(args[2]), dstLeft: to, self: x.Events(),
		ends: [2][]byte{bytes.Clone(args[3]), bytes.Clone(args[4])}}
	return x.PopOrBlock(op, args[1:2], ms, true)
}

// cmdBRPopLPush is BRPOPLPUSH source destination timeout.
func cmdBRPopLPush(x *server.Ctx, args [][]byte) error {
	ms, err := timeout(args[3])
	if err != nil {
		return err
	}
	x.PreventPropagation() // propagated as RPOPLPUSH
	return x.PopOrBlock(&listOp{left: false, move: true, dst: bytes.Clone(args[2]), dstLeft: true, rpoplpush: true},
		args[1:2], ms, true)
}

// pushEvent is the event of a push at the left or the right end.
func pushEvent(left bool) string {
	if left {
		return "lpush"
	}
	return "rpush"
}

// popped publishes a list pop's events through ev: "lpop" or "rpop", then
// "del" if the list is left empty (left elements remain).
func popped(ev server.Events, db int, key []byte, leftEnd bool, left int64) {
	event := "rpop"
	if leftEnd {
		event = "lpop"
	}
	ev.Notify(db, server.NotifyList, event, key)
	if left == 0 {
		ev.Notify(db, server.NotifyGeneric, "del", key)
	}
}
