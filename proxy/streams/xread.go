package streams

import (
	"bytes"
	"errors"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
	"github.com/spillway/spillway/tiering/stream"
)

// blockedCount is how many entries a blocked XREAD without COUNT gets
// (Redis's XREAD_BLOCKED_DEFAULT_COUNT).
const blockedCount = 1000

// readArgs are XREAD's and XREADGROUP's arguments.
type readArgs struct {
	timeout  int64 // -1: no BLOCK
	count    int64
	group    []byte
	consumer []byte
	noack    bool
	keys     [][]byte
	idArgs   [][]byte
}

func parseRead(x *server.Ctx, args [][]byte, group bool) (*readArgs, error) {
	name := string(args[0]) // as the client spelled it, as in Redis's message
	a := &readArgs{timeout: -1}
	streamsAt := 0
	for i := 1; i < len(args); i++ {
		more := len(args) - i - 1
		o := args[i]
		switch {
		case cstr.EqualFold(o, "block") && more > 0:
			if x.InScript() {
				return nil, resp.Err("ERR " + name + " command is not allowed with BLOCK option from scripts")
			}
			i++
			n, ok := cstr.ParseInt(args[i])
			if !ok {
				return nil, resp.Err("ERR timeout is not an integer or out of range")
			}
			if n < 0 {
				return nil, resp.Err("ERR timeout is negative")
			}
			a.timeout = n
		case cstr.EqualFold(o, "count") && more > 0:
			i++
			n, err := parseInt(args[i], "")
			if err != nil {
				return nil, err
			}
			a.count = max(n, 0)
		case cstr.EqualFold(o, "streams") && more > 0:
			streamsAt = i + 1
			if (len(args)-streamsAt)%2 != 0 {
				return nil, resp.Err("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
			}
			i = len(args)
		case cstr.EqualFold(o, "group") && more >= 2:
			if !group {
				return nil, resp.Err("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
			}
			a.group, a.consumer = bytes.Clone(args[i+1]), bytes.Clone(args[i+2])
			i += 2
		case cstr.EqualFold(o, "noack"):
			if !group {
				return nil, resp.Err("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
			}
			a.noack = true
		default:
			return nil, resp.Err(strops.ErrSyntax)
		}
	}
	if streamsAt == 0 {
		return nil, resp.Err(strops.ErrSyntax)
	}
	if group && a.group == nil {
		return nil, resp.Err("ERR Missing GROUP option for XREADGROUP")
	}
	n := (len(args) - streamsAt) / 2
	a.keys, a.idArgs = args[streamsAt:streamsAt+n], args[streamsAt+n:]
	return a, nil
}

// cmdXRead is XREAD [COUNT n] [BLOCK ms] STREAMS key... id... and
// XREADGROUP GROUP group consumer [COUNT n] [BLOCK ms] [NOACK] STREAMS
// key... id...
func cmdXRead(x *server.Ctx, args [][]byte) error {
	group := len(args[0]) == len("xreadgroup")
	// Neither form propagates itself: XREADGROUP's effects go as
	// XCLAIMs and XGROUPs (propagate.go), as in Redis.
	x.PreventPropagation()
	a, err := parseRead(x, args, group)
	if err != nil {
		return err
	}
	op := &readOp{count: a.count, group: a.group, consumer: a.consumer, noack: a.noack}
	served := false
	err = x.Update(func(tx *tiering.Tx) error {
		var err error
		served, err = op.resolve(x, tx, a)
		if err != nil || served || a.timeout != -1 {
			return err
		}
		x.W.NullArray()
		return nil
	})
	if err != nil || served || a.timeout == -1 {
		return err
	}
	if op.count == 0 {
		op.count = blockedCount
	}
	op.blocking = true
	keys := make([][]byte, len(a.keys))
	for i, k := range a.keys {
		keys[i] = bytes.Clone(k)
	}
	return x.PopOrBlock(op, keys, a.timeout, false)
}

// readOp reads streams for XREAD and XREADGROUP: at once (resolve), and
// for a blocked client when a key it waits on is ready (Run).
type readOp struct {
	count    int64
	group    []byte
	consumer []byte
	noack    bool
	blocking bool
	// after maps each key to the ID the client reads after ("$"
	// resolved); for XREADGROUP ">" it is not used (the group's last ID).
	after map[string]stream.ID
}

// resolve checks every key, resolves "$", and replies with what the
// streams hold after the IDs given; it reports false, having written
// nothing, when there is nothing to read.
func (op *readOp) resolve(x *server.Ctx, tx *tiering.Tx, a *readArgs) (bool, error) {
	type target struct {
		s       *tiering.Stream
		g       *stream.Group
		gt      stream.ID
		history bool
	}
	ts := make([]target, len(a.keys))
	op.after = make(map[string]stream.ID, len(a.keys))
	for i, key := range a.keys {
		s, err := tx.OpenStream(x.DB(), key, false)
		if err != nil {
			return false, err
		}
		if s == nil {
			x.NotifyKeyMiss(key)
		}
		t := target{s: s}
		if op.group != nil {
			if s != nil {
				t.g = s.Group(op.group)
			}
			if t.g == nil {
				return false, resp.Err("NOGROUP No such key '" + cstr.ErrArg(key) + "' or consumer group '" +
					cstr.ErrArg(op.group) + "' in XREADGROUP with GROUP option")
			}
		}
		arg := a.idArgs[i]
		switch {
		case len(arg) == 1 && arg[0] == '$':
			if op.group != nil {
				return false, resp.Err("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
			}
			if s != nil {
				t.gt = s.Last
			}
		case len(arg) == 1 && arg[0] == '>':
			if op.group == nil {
				return false, resp.Err("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
			}
			t.gt = t.g.LastID
		default:
			id, err := parseID(arg)
			if err != nil {
				return false, err
			}
			t.gt, t.history = id, op.group != nil
		}
		if _, dup := op.after[string(key)]; !dup {
			op.after[string(key)] = t.gt
		}
		ts[i] = t
	}
	n := 0
	serve := make([]bool, len(ts))
	for i, t := range ts {
		if t.s == nil {
			continue
		}
		serve[i] = t.history
		if !serve[i] {
			last, ok := t.s.LastValid()
			serve[i] = ok && stream.Less(t.gt, last)
		}
		if serve[i] {
			n++
		}
	}
	// Redis looks every key up again as it replies: a missing key's
	// keymiss comes where that lookup falls among the reply's parts.
	header := false
	for i, t := range ts {
		tx.AddLookup(t.s != nil) // Redis's second lookup (keyspace_hits)
		if t.s == nil {
			x.NotifyKeyMiss(a.keys[i])
		}
		if !serve[i] {
			continue
		}
		if !header {
			header = true
			if x.W.RESP3() {
				x.W.Map(n)
			} else {
				x.W.Array(n)
			}
		}
		if !x.W.RESP3() {
			x.W.Array(2)
		}
		x.W.Bulk(a.keys[i])
		var prop propFunc
		if t.g != nil && x.Replicating() {
			prop = x.Propagate
		}
		var c *stream.Consumer
		if t.g != nil {
			var made bool
			c, made = op.consumerOf(tx, t.s, t.g)
			if made {
				x.Notify(server.NotifyStream, "xgroup-createconsumer", a.keys[i])
				if prop != nil && op.noack {
					prop(createConsumerArgs(a.keys[i], op.group, op.consumer)...)
				}
			}
		}
		start, _ := stream.Incr(t.gt)
		if t.history {
			writeHistory(x.W, t.s, t.g, c, start, op.count, tx.Now())
		} else {
			op.deliver(x.W, tx, t.s, t.g, c, start, a.keys[i], prop)
		}
		if err := t.s.Close(); err != nil {
			return false, err
		}
	}
	return n > 0, nil
}

// consumerOf looks the consumer up (refreshing its seen time) or creates
// it; made reports a creation.
func (op *readOp) consumerOf(tx *tiering.Tx, s *tiering.Stream, g *stream.Group) (c *stream.Consumer, made bool) {
	if c = s.Consumer(g, op.consumer, true, tx.Now()); c != nil {
		return c, false
	}
	return s.CreateConsumer(g, op.consumer, tx.Now()), true
}

// deliver writes the entries from start (at most op.count), delivering
// them to consumer c of group g if there is one. With prop (a replica
// attached), each delivery propagates as an XCLAIM of the entry, or,
// under NOACK, the group's moved last ID as one XGROUP SETID at the end,
// as Redis's streamReplyWithRange.
func (op *readOp) deliver(w *resp.Writer, tx *tiering.Tx, s *tiering.Stream, g *stream.Group, c *stream.Consumer, start stream.ID, key []byte, prop propFunc) {
	var items []*stream.Entry
	s.Range(start, stream.MaxID, false, func(e *stream.Entry) bool {
		items = append(items, e)
		return op.count == 0 || int64(len(items)) < op.count
	})
	w.Array(len(items))
	moved := false
	for _, e := range items {
		if g != nil {
			before := g.LastID
			n := s.Deliver(g, c, e.ID, tx.Now(), op.noack)
			moved = moved || g.LastID != before
			if prop != nil && n != nil {
				prop(xclaimArgs(key, op.group, stream.AppendID(nil, e.ID), n, g)...)
			}
		}
		writeEntry(w, e)
	}
	if prop != nil && op.noack && moved {
		prop(setIDArgs(key, op.group, g)...)
	}
}

// writeHistory writes consumer c's pending entries from start (at most
// count, 0: all): each as its entry, or [id, nil] if the entry was
// deleted, counting a delivery for each entry found.
func writeHistory(w *resp.Writer, s *tiering.Stream, g *stream.Group, c *stream.Consumer, start stream.ID, count, now int64) {
	var todo []*stream.NACK
	s.EachPending(g, c, start, stream.MaxID, func(p *stream.NACK) bool {
		todo = append(todo, p)
		return count <= 0 || int64(len(todo)) < count
	})
	w.Array(len(todo))
	for _, p := range todo {
		e := s.Get(p.ID)
		if e == nil {
			w.Array(2)
			writeID(w, p.ID)
			w.NullArray()
			continue
		}
		s.Redelivered(g, p, now)
		writeEntry(w, e)
	}
}

// Run serves a blocked client when key is ready: it replies with the new
// entries of key, or reports false when there are none yet. A blocked
// XREADGROUP whose group or stream is gone gets Redis's error.
func (op *readOp) Run(ev server.Events, tx *tiering.Tx, db int, key []byte, w *resp.Writer) (bool, error) {
	s, err := tx.OpenStream(db, key, false)
	if errors.Is(err, tiering.ErrWrongType) || err == nil && s == nil {
		if op.group != nil && op.blocking {
			w.Error("UNBLOCKED the stream key no longer exists")
			return true, nil
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	gt := op.after[string(key)]
	var g *stream.Group
	if op.group != nil {
		if g = s.Group(op.group); g == nil {
			w.Error("NOGROUP the consumer group this client was blocked on no longer exists")
			return true, nil
		}
		gt = g.LastID
	}
	if last, ok := s.LastValid(); !ok || !stream.Less(gt, last) {
		return false, nil
	}
	var prop propFunc
	if g != nil && ev.Replicating() {
		prop = func(args ...[]byte) { ev.Propagate(db, args...) }
	}
	var c *stream.Consumer
	if g != nil {
		var made bool
		if c, made = op.consumerOf(tx, s, g); made {
			ev.Notify(db, server.NotifyStream, "xgroup-createconsumer", key) // before the reply, as in Redis
			if prop != nil && op.noack {
				prop(createConsumerArgs(key, op.group, op.consumer)...)
			}
		}
	}
	if w.RESP3() {
		w.Map(1)
	} else {
		w.Array(1)
		w.Array(2)
	}
	w.Bulk(key)
	start, _ := stream.Incr(gt)
	op.deliver(w, tx, s, g, c, start, key, prop)
	return true, s.Close()
}

// Independent marks readOp as a server.IndependentOp.
func (op *readOp) Independent() {}
