package server

import (
	"bytes"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

func init() {
	register("lpush", func(c *Client, a [][]byte) { cmdPush(c, a, true, false) })
	register("rpush", func(c *Client, a [][]byte) { cmdPush(c, a, false, false) })
	register("lpushx", func(c *Client, a [][]byte) { cmdPush(c, a, true, true) })
	register("rpushx", func(c *Client, a [][]byte) { cmdPush(c, a, false, true) })
	register("lpop", func(c *Client, a [][]byte) { cmdPop(c, a, true) })
	register("rpop", func(c *Client, a [][]byte) { cmdPop(c, a, false) })
	register("llen", cmdLLen)
	register("lindex", cmdLIndex)
	register("lrange", cmdLRange)
	register("lset", cmdLSet)
	register("linsert", cmdLInsert)
	register("lrem", cmdLRem)
	register("ltrim", cmdLTrim)
	register("lpos", cmdLPos)
	register("lmove", cmdLMove)
	register("rpoplpush", cmdRPopLPush)
	register("lmpop", func(c *Client, a [][]byte) { cmdMPop(c, a, false, listEnds, newListMPop) })
	register("blpop", func(c *Client, a [][]byte) { cmdBPop(c, a, true) })
	register("brpop", func(c *Client, a [][]byte) { cmdBPop(c, a, false) })
	register("blmove", cmdBLMove)
	register("brpoplpush", cmdBRPopLPush)
	register("blmpop", func(c *Client, a [][]byte) { cmdMPop(c, a, true, listEnds, newListMPop) })
}

// openList opens key as a list (see Tx.OpenList). On WRONGTYPE or a store
// error it replies, ends tx and returns ok false.
func (c *Client) openList(tx *tiering.Tx, key []byte, create bool) (*tiering.List, bool) {
	l, err := tx.OpenList(c.db, key, create)
	if err != nil {
		c.collErr(tx, err)
		return nil, false
	}
	return l, true
}

// listEnds are LMPOP's ends; newListMPop is its pop.
var listEnds = [2]string{"left", "right"}

func newListMPop(left bool, count int64) PopOp { return &listOp{left: left, count: count} }

// listIndex parses an index argument (LINDEX, LRANGE...).
func (c *Client) listIndex(arg []byte) (int64, bool) {
	n, ok := cstr.ParseInt(arg)
	if !ok {
		c.err(strops.ErrNotInteger)
	}
	return n, ok
}

// indexPair parses a start and a stop index (LRANGE, LTRIM, ZRANGE...),
// replying on error.
func (c *Client) indexPair(a, b []byte) (start, stop int64, ok bool) {
	if start, ok = c.listIndex(a); ok {
		stop, ok = c.listIndex(b)
	}
	return start, stop, ok
}

// listEnd parses LEFT or RIGHT; it reports left, or replies a syntax error.
func (c *Client) listEnd(arg []byte) (left, ok bool) {
	switch {
	case eqFold(arg, "left"):
		return true, true
	case eqFold(arg, "right"):
		return false, true
	}
	c.err(strops.ErrSyntax)
	return false, false
}

// rangeOf normalises Redis list range arguments against length n. It
// returns ok false for an empty range.
func rangeOf(start, stop, n int64) (int64, int64, bool) {
	if start < 0 {
		start += n
	}
	if stop < 0 {
		stop += n
	}
	start = max(start, 0)
	if start > stop || start >= n {
		return 0, 0, false
	}
	return start, min(stop, n-1), true
}

func cmdPush(c *Client, args [][]byte, left, onlyExisting bool) {
	tx := c.begin()
	l, ok := c.openList(tx, args[1], !onlyExisting)
	if !ok {
		return
	}
	if l == nil {
		c.w.Int(0)
		c.commit(tx)
		return
	}
	c.notifyNewKey(l.Len() == 0, args[1]) // a list is never stored empty
	for _, v := range args[2:] {
		if err := l.Push(left, v); err != nil {
			c.txErr(tx, err)
			return
		}
	}
	c.w.Int(l.Len())
	c.notify(NotifyList, pushEvent(left), args[1]) // after the reply, as Redis
	c.closeAndCommit(tx, l)
}

func cmdPop(c *Client, args [][]byte, left bool) {
	if len(args) > 3 {
		c.err("ERR wrong number of arguments for '" + strops.LowerASCII(args[0]) + "' command")
		return
	}
	count := int64(-1)
	if len(args) == 3 {
		n, ok := cstr.ParseInt(args[2])
		if !ok || n < 0 {
			c.err("ERR value is out of range, must be positive")
			return
		}
		count = n
	}
	tx := c.begin()
	l, ok := c.openList(tx, args[1], false)
	if !ok {
		return
	}
	switch {
	case l == nil && count >= 0:
		c.w.NullArray()
	case l == nil:
		c.w.Null()
	case count == 0:
		c.w.Array(0)
	case count < 0:
		if _, err := l.Pop(left, 1, c.w.Bulk); err != nil {
			c.txErr(tx, err)
			return
		}
		c.events().popped(c.db, args[1], left, l.Len())
	default:
		c.w.Array(int(min(count, l.Len())))
		if _, err := l.Pop(left, count, c.w.Bulk); err != nil {
			c.txErr(tx, err)
			return
		}
		c.events().popped(c.db, args[1], left, l.Len())
	}
	c.closeAndCommit(tx, l)
}

func cmdLLen(c *Client, args [][]byte) {
	tx := c.begin()
	e, err := tx.Peek(c.db, args[1])
	if err != nil {
		c.txErr(tx, err)
		return
	}
	switch {
	case e == nil:
		c.notifyKeyMiss(args[1])
		c.w.Int(0)
	case e.Type != codec.TypeList:
		c.txFail(tx, errWrongType)
		return
	default:
		c.w.Int(e.Count)
	}
	c.commit(tx)
}

func cmdLIndex(c *Client, args [][]byte) {
	tx := c.begin()
	l, ok := c.openList(tx, args[1], false)
	if !ok {
		return
	}
	if l == nil {
		c.notifyKeyMiss(args[1])
		c.w.Null()
		c.commit(tx)
		return
	}
	i, ok := c.listIndex(args[2])
	if !ok {
		c.commit(tx)
		return
	}
	if i < 0 {
		i += l.Len()
	}
	if i < 0 || i >= l.Len() {
		c.w.Null()
		c.commit(tx)
		return
	}
	v, err := l.Index(i)
	if err != nil {
		c.txErr(tx, err)
		return
	}
	c.w.Bulk(v)
	c.commit(tx)
}

func cmdLRange(c *Client, args [][]byte) {
	start, stop, ok := c.indexPair(args[2], args[3])
	if !ok {
		return
	}
	tx := c.begin()
	l, ok := c.openList(tx, args[1], false)
	if !ok {
		return
	}
	if l == nil {
		c.notifyKeyMiss(args[1])
		c.w.Array(0)
		c.commit(tx)
		return
	}
	from, to, ok := rangeOf(start, stop, l.Len())
	if !ok {
		c.w.Array(0)
		c.commit(tx)
		return
	}
	c.w.Array(int(to - from + 1))
	err := l.Range(from, to, false, func(_ int64, v []byte) bool {
		c.w.Bulk(v)
		return true
	})
	if err != nil {
		c.txErr(tx, err)
		return
	}
	c.commit(tx)
}

func cmdLSet(c *Client, args [][]byte) {
	tx := c.begin()
	l, ok := c.openList(tx, args[1], false)
	if !ok {
		return
	}
	if l == nil {
		c.txFail(tx, "ERR no such key")
		return
	}
	i, ok := c.listIndex(args[2])
	if !ok {
		c.commit(tx)
		return
	}
	if i < 0 {
		i += l.Len()
	}
	if i < 0 || i >= l.Len() {
		c.txFail(tx, "ERR index out of range")
		return
	}
	if err := l.Set(i, args[3]); err != nil {
		c.txErr(tx, err)
		return
	}
	c.w.OK()
	c.notify(NotifyList, "lset", args[1]) // after the reply, as Redis
	c.closeAndCommit(tx, l)
}

func cmdLInsert(c *Client, args [][]byte) {
	var after bool
	switch {
	case eqFold(args[2], "after"):
		after = true
	case eqFold(args[2], "before"):
	default:
		c.err(strops.ErrSyntax)
		return
	}
	tx := c.begin()
	l, ok := c.openList(tx, args[1], false)
	if !ok {
		return
	}
	if l == nil {
		c.w.Int(0)
		c.commit(tx)
		return
	}
	pos := int64(-1)
	err := l.Range(0, l.Len()-1, false, func(i int64, v []byte) bool {
		if bytes.Equal(v, args[3]) {
			pos = i
			return false
		}
		return true
	})
	if err == nil && pos >= 0 {
		if after {
			pos++
		}
		err = l.Splice(pos, pos, 0, []string{string(args[4])})
	}
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if pos < 0 {
		c.w.Int(-1)
	} else {
		c.notify(NotifyList, "linsert", args[1])
		c.w.Int(l.Len())
	}
	c.closeAndCommit(tx, l)
}

func cmdLRem(c *Client, args [][]byte) {
	count, ok := c.listIndex(args[2])
	if !ok {
		return
	}
	tx := c.begin()
	l, ok := c.openList(tx, args[1], false)
	if !ok {
		return
	}
	if l == nil {
		c.w.Int(0)
		c.commit(tx)
		return
	}
	// Find the matches (up to |count|, from the tail if count < 0), then
	// splice the span between the first and the last one.
	elem := args[3]
	limit := count
	if limit < 0 {
		limit = -limit // like Redis, -MinInt64 stays negative: no limit
	}
	limit = max(limit, 0)
	first, last, found := int64(-1), int64(-1), int64(0)
	err := l.Range(0, l.Len()-1, count < 0, func(i int64, v []byte) bool {
		if bytes.Equal(v, elem) {
			if found == 0 {
				first, last = i, i
			}
			first, last = min(first, i), max(last, i)
			found++
		}
		return limit == 0 || found < limit
	})
	if err == nil && found > 0 {
		var span []string
		span, err = l.Elements(first, last)
		var kept []string
		spanBytes := int64(0)
		for _, v := range span {
			spanBytes += int64(len(v))
			if v != string(elem) {
				kept = append(kept, v)
			}
		}
		if err == nil {
			err = l.Splice(first, last+1, spanBytes, kept)
		}
	}
	if err != nil {
		c.txErr(tx, err)
		return
	}
	if found > 0 {
		c.notify(NotifyList, "lrem", args[1])
		if l.Len() == 0 {
			c.notify(NotifyGeneric, "del", args[1])
		}
	}
	c.w.Int(found)
	c.closeAndCommit(tx, l)
}

func cmdLTrim(c *Client, args [][]byte) {
	start, stop, ok := c.indexPair(args[2], args[3])
	if !ok {
		return
	}
	tx := c.begin()
	l, ok := c.openList(tx, args[1], false)
	if !ok {
		return
	}
	if l == nil {
		c.w.OK()
		c.commit(tx)
		return
	}
	from, to, keep := rangeOf(start, stop, l.Len())
	if !keep {
		from, to = 1, 0
	}
	if err := l.Trim(from, to); err != nil {
		c.txErr(tx, err)
		return
	}
	c.notify(NotifyList, "ltrim", args[1])
	if l.Len() == 0 {
		c.notify(NotifyGeneric, "del", args[1])
	}
	c.w.OK()
	c.closeAndCommit(tx, l)
}

func cmdLPos(c *Client, args [][]byte) {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for j := 3; j < len(args); j++ {
		more := j+1 < len(args)
		switch {
		case eqFold(args[j], "rank") && more:
			j++
			n, ok := cstr.ParseInt(args[j])
			if !ok {
				c.err(strops.ErrNotInteger)
				return
			}
			if n == 0 {
				c.err("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
				return
			}
			rank = n
		case eqFold(args[j], "count") && more:
			j++
			n, ok := cstr.ParseInt(args[j])
			if !ok || n < 0 {
				c.err("ERR COUNT can't be negative")
				return
			}
			count = n
		case eqFold(args[j], "maxlen") && more:
			j++
			n, ok := cstr.ParseInt(args[j])
			if !ok || n < 0 {
				c.err("ERR MAXLEN can't be negative")
				return
			}
			maxlen = n
		default:
			c.err(strops.ErrSyntax)
			return
		}
	}
	reverse := rank < 0
	if reverse {
		rank = -rank // like Redis, -MinInt64 stays negative: every match ranks
	}
	tx := c.begin()
	l, ok := c.openList(tx, args[1], false)
	if !ok {
		return
	}
	if l == nil {
		c.notifyKeyMiss(args[1])
		if count >= 0 {
			c.w.Array(0)
		} else {
			c.w.Null()
		}
		c.commit(tx)
		return
	}
	var hits []int64
	scanned, matches := int64(0), int64(0)
	err := l.Range(0, l.Len()-1, reverse, func(i int64, v []byte) bool {
		if maxlen > 0 && scanned >= maxlen {
			return false
		}
		scanned++
		if !bytes.Equal(v, args[2]) {
			return true
		}
		matches++
		if matches >= rank {
			hits = append(hits, i)
			if count < 0 || count > 0 && int64(len(hits)) >= count {
				return false
			}
		}
		return true
	})
	if err != nil {
		c.txErr(tx, err)
		return
	}
	switch {
	case count >= 0:
		c.w.Array(len(hits))
		for _, i := range hits {
			c.w.Int(i)
		}
	case len(hits) > 0:
		c.w.Int(hits[0])
	default:
		c.w.Null()
	}
	c.commit(tx)
}

// listOp is a pop a client asked for: BLPOP/BRPOP (count -1: one element,
// reply [key, element]), LMPOP/BLMPOP (count > 0: reply [key, [elements]])
// or the LMOVE family (move: pop, push to dst, reply the element).
type listOp struct {
	left    bool
	count   int64
	move    bool
	dst     []byte
	dstLeft bool
}

// run executes op on key (database db) within tx and writes the reply to
// w. It reports false, having written nothing, when key holds no list;
// ErrWrongType when it holds something else. A destination of the wrong
// type is answered (WRONGTYPE, nothing popped) and reported done.
func (op *listOp) Run(ev Events, tx *tiering.Tx, db int, key []byte, w *resp.Writer) (bool, error) {
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
		ev.popped(db, key, op.left, src.Len())
		return true, src.Close()
	}
	dst := src
	if !bytes.Equal(op.dst, key) {
		dst, err = tx.OpenList(db, op.dst, true)
		if err == tiering.ErrWrongType {
			w.Error(errWrongType)
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
		ev.Notify(db, NotifyNew, "new", op.dst)
	}
	ev.Notify(db, NotifyList, pushEvent(op.dstLeft), op.dst)
	w.Bulk(val)
	ev.popped(db, key, op.left, src.Len())
	if err := src.Close(); err != nil {
		return true, err
	}
	return true, dst.Close()
}

// runNow runs op on the first of keys that holds something to pop (a list
// or a sorted set, as op pops), replying on c. It reports false if none
// does (nothing replied, tx still open).
func (c *Client) runNow(tx *tiering.Tx, op PopOp, keys [][]byte) bool {
	for _, k := range keys {
		done, err := op.Run(c.events(), tx, c.db, k, &c.w)
		if err == tiering.ErrWrongType {
			c.txFail(tx, errWrongType)
			return true
		}
		if err != nil {
			c.txErr(tx, err)
			return true
		}
		if done {
			c.commit(tx)
			return true
		}
	}
	return false
}

// popOrBlock runs op on the first key that holds something to pop or, if
// none does, blocks the client on keys for timeoutMs (0: for ever). op
// must not alias the request's buffers: a blocked client's op outlives
// them.
func (c *Client) popOrBlock(op PopOp, keys [][]byte, timeoutMs int64) {
	tx := c.begin()
	if c.runNow(tx, op, keys) {
		return
	}
	if tx == c.group {
		// Inside EXEC or a script a blocking pop does not block: it
		// replies at once as Redis does (a null, a null bulk for a move).
		if lo, ok := op.(*listOp); ok && lo.move {
			c.w.Null()
		} else {
			c.w.NullArray()
		}
		return
	}
	w := &waiter{c: c, db: c.db, op: op, proto: c.w.Proto, done: make(chan struct{})}
	for _, k := range keys {
		dup := false
		for _, seen := range w.keys {
			dup = dup || bytes.Equal(seen, k)
		}
		if !dup {
			w.keys = append(w.keys, bytes.Clone(k))
		}
	}
	c.s.blocking.add(w)
	if !c.commit(tx) {
		c.s.blocking.cancel(w, nil)
		return
	}
	if !c.block(w, timeoutMs) {
		c.quit = true
	}
}

// timeout parses a blocking command's timeout, replying on error.
func (c *Client) timeout(arg []byte) (int64, bool) {
	ms, msg := strops.ParseTimeout(arg)
	if msg != "" {
		c.err(msg)
		return 0, false
	}
	return ms, true
}

func cmdBPop(c *Client, args [][]byte, left bool) {
	ms, ok := c.timeout(args[len(args)-1])
	if !ok {
		return
	}
	c.popOrBlock(&listOp{left: left, count: -1}, args[1:len(args)-1], ms)
}

func cmdLMove(c *Client, args [][]byte) {
	from, ok := c.listEnd(args[3])
	if !ok {
		return
	}
	to, ok := c.listEnd(args[4])
	if !ok {
		return
	}
	moveNow(c, listOp{left: from, move: true, dst: args[2], dstLeft: to}, args[1])
}

func cmdRPopLPush(c *Client, args [][]byte) {
	moveNow(c, listOp{left: false, move: true, dst: args[2], dstLeft: true}, args[1])
}

// moveNow runs an LMOVE; a missing source answers nil.
func moveNow(c *Client, op listOp, src []byte) {
	tx := c.begin()
	if !c.runNow(tx, &op, [][]byte{src}) { // op does not outlive the command
		c.w.Null()
		c.commit(tx)
	}
}

func cmdBLMove(c *Client, args [][]byte) {
	from, ok := c.listEnd(args[3])
	if !ok {
		return
	}
	to, ok := c.listEnd(args[4])
	if !ok {
		return
	}
	ms, ok := c.timeout(args[5])
	if !ok {
		return
	}
	c.popOrBlock(&listOp{left: from, move: true, dst: bytes.Clone(args[2]), dstLeft: to}, args[1:2], ms)
}

func cmdBRPopLPush(c *Client, args [][]byte) {
	ms, ok := c.timeout(args[3])
	if !ok {
		return
	}
	c.popOrBlock(&listOp{left: false, move: true, dst: bytes.Clone(args[2]), dstLeft: true}, args[1:2], ms)
}

// cmdMPop is LMPOP numkeys key... LEFT|RIGHT [COUNT n] and ZMPOP (MIN|MAX),
// and their blocking forms BLMPOP/BZMPOP, whose timeout comes first (and
// is checked after the other arguments). ends are the two accepted ends;
// newOp builds the pop for the first end or the other.
func cmdMPop(c *Client, args [][]byte, blocking bool, ends [2]string, newOp func(first bool, count int64) PopOp) {
	at := 1
	if blocking {
		at = 2
	}
	numkeys, ok := cstr.ParseInt(args[at])
	if !ok || numkeys < 1 {
		c.err("ERR numkeys should be greater than 0")
		return
	}
	whereAt := int64(at) + numkeys + 1
	if numkeys >= int64(len(args)) || whereAt >= int64(len(args)) {
		c.err(strops.ErrSyntax)
		return
	}
	first := eqFold(args[whereAt], ends[0])
	if !first && !eqFold(args[whereAt], ends[1]) {
		c.err(strops.ErrSyntax)
		return
	}
	count := int64(-1)
	for j := int(whereAt) + 1; j < len(args); j++ {
		if count == -1 && eqFold(args[j], "count") && j+1 < len(args) {
			j++
			n, ok := cstr.ParseInt(args[j])
			if !ok || n < 1 {
				c.err("ERR count should be greater than 0")
				return
			}
			count = n
			continue
		}
		c.err(strops.ErrSyntax)
		return
	}
	if count == -1 {
		count = 1
	}
	op := newOp(first, count)
	keys := args[at+1 : whereAt]
	if blocking {
		ms, ok := c.timeout(args[1])
		if !ok {
			return
		}
		c.popOrBlock(op, keys, ms)
		return
	}
	tx := c.begin()
	if !c.runNow(tx, op, keys) {
		c.w.NullArray()
		c.commit(tx)
	}
}

// pushEvent is the event of a push at the left or the right end.
func pushEvent(left bool) string {
	if left {
		return "lpush"
	}
	return "rpush"
}

// popped publishes a list pop's events: "lpop" or "rpop", then "del" if
// the list is left empty (left elements remain).
func (ev Events) popped(db int, key []byte, leftEnd bool, left int64) {
	event := "rpop"
	if leftEnd {
		event = "lpop"
	}
	ev.Notify(db, NotifyList, event, key)
	if left == 0 {
		ev.Notify(db, NotifyGeneric, "del", key)
	}
}
