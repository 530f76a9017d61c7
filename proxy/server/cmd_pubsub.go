package server

import (
	"strings"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/pubsub"
	"github.com/spillway/spillway/proxy/resp"
)

// Pub/Sub in embedded mode, as Redis 7.0 outside cluster mode: SUBSCRIBE,
// PSUBSCRIBE and SSUBSCRIBE with their UNSUBSCRIBEs, PUBLISH, SPUBLISH
// and PUBSUB. The subscriptions live in the server's pubsub.Hub; a client
// that subscribes gets an output queue (pushout.go) through which its
// replies and the messages it receives reach its socket. Upstream mode
// never reaches these handlers: it forwards Pub/Sub to the upstream.

func registerPubSub(t *Table) {
	t.Register("subscribe", subscribeHandler(pubsub.Channels))
	t.Register("psubscribe", subscribeHandler(pubsub.Patterns))
	t.Register("ssubscribe", cmdSSubscribe)
	t.Register("unsubscribe", unsubscribeHandler(pubsub.Channels))
	t.Register("punsubscribe", unsubscribeHandler(pubsub.Patterns))
	t.Register("sunsubscribe", unsubscribeHandler(pubsub.Shard))
	t.Register("publish", cmdPublish)
	t.Register("spublish", cmdSPublish)
	t.Register("pubsub|channels", func(x *Ctx, args [][]byte) error { return x.c.pubsubNames(pubsub.Channels, args) })
	t.Register("pubsub|shardchannels", func(x *Ctx, args [][]byte) error { return x.c.pubsubNames(pubsub.Shard, args) })
	t.Register("pubsub|numsub", func(x *Ctx, args [][]byte) error { return x.c.pubsubNumSub(pubsub.Channels, args) })
	t.Register("pubsub|shardnumsub", func(x *Ctx, args [][]byte) error { return x.c.pubsubNumSub(pubsub.Shard, args) })
	t.Register("pubsub|numpat", func(x *Ctx, _ [][]byte) error {
		x.W.Int(int64(x.c.s.pubsub.Len(pubsub.Patterns)))
		return nil
	})
	t.Register("pubsub|help", HelpHandler(pubsubHelp))
}

// subscribeHandler returns the handler of SUBSCRIBE or PSUBSCRIBE.
func subscribeHandler(sp pubsub.Space) Handler {
	return func(x *Ctx, args [][]byte) error {
		x.c.subscribe(sp, args)
		return nil
	}
}

// unsubscribeHandler returns the handler of UNSUBSCRIBE, PUNSUBSCRIBE or
// SUNSUBSCRIBE.
func unsubscribeHandler(sp pubsub.Space) Handler {
	return func(x *Ctx, args [][]byte) error {
		x.c.unsubscribe(sp, args)
		return nil
	}
}

// pubsubHelp is PUBSUB HELP's reply, as redis-server 7.0.15 sends it.
var pubsubHelp = []string{
	"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CHANNELS [<pattern>]",
	"    Return the currently active channels matching a <pattern> (default: '*').",
	"NUMPAT",
	"    Return number of subscriptions to patterns.",
	"NUMSUB [<channel> ...]",
	"    Return the number of subscribers for the specified channels, excluding",
	"    pattern subscriptions(default: no channels).",
	"SHARDCHANNELS [<pattern>]",
	"    Return the currently active shard level channels matching a <pattern> (default: '*').",
	"SHARDNUMSUB [<shardchannel> ...]",
	"    Return the number of subscribers for the specified shard level channel(s)",
	"HELP",
	"    Prints this help.",
}

// confirmNames are the first elements of the confirmations, per space.
var confirmNames = [...]struct{ sub, unsub string }{
	pubsub.Channels: {"subscribe", "unsubscribe"},
	pubsub.Patterns: {"psubscribe", "punsubscribe"},
	pubsub.Shard:    {"ssubscribe", "sunsubscribe"},
}

// subscribedAllowed are the commands a RESP2 client may run while it
// subscribes to something.
var subscribedAllowed = map[string]bool{
	"ping": true, "subscribe": true, "ssubscribe": true, "unsubscribe": true, "sunsubscribe": true,
	"psubscribe": true, "punsubscribe": true, "quit": true, "reset": true,
}

// subscribedContextReject enforces Redis's RESP2 subscribed context: a
// RESP2 client that subscribes to anything may only run (P|S)SUBSCRIBE,
// (P|S)UNSUBSCRIBE, PING, QUIT and RESET. For another command it writes
// Redis's error and reports true; the caller then skips the command.
// RESP3 clients and clients subscribed to nothing run anything. It is a
// field test for every other client (and always false in upstream mode,
// where no client subscribes here).
func (c *Client) subscribedContextReject(cmd *cmdtable.Command) bool {
	if !c.subscribed || c.w.Proto != 2 {
		return false
	}
	return c.rejectSubscribed(cmd)
}

// rejectSubscribed is subscribedContextReject's slow path (kept out of
// line so that the fast path inlines into dispatch).
//
//go:noinline
func (c *Client) rejectSubscribed(cmd *cmdtable.Command) bool {
	if subscribedAllowed[cmd.Name] {
		return false
	}
	c.rejectInMulti("ERR Can't execute '" + cmd.Name +
		"': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
	return true
}

// pushConfirm writes one (un)subscribe confirmation: a push in RESP3, an
// array in RESP2; name nil writes a null (nothing was unsubscribed).
func (c *Client) pushConfirm(kind string, name []byte, count int) {
	c.w.Push(3)
	c.w.BulkString(kind)
	if name == nil {
		c.w.Null()
	} else {
		c.w.Bulk(name)
	}
	c.w.Int(int64(count))
}

// counter returns the CLIENT LIST counter of space sp.
func (c *Client) counter(sp pubsub.Space) *atomic.Int32 {
	switch sp {
	case pubsub.Patterns:
		return &c.nPSub
	case pubsub.Shard:
		return &c.nSSub
	}
	return &c.nSub
}

// spaceCount is the count Redis reports in sp's confirmations.
func (c *Client) spaceCount(sp pubsub.Space) int {
	if sp == pubsub.Shard {
		return int(c.nSSub.Load())
	}
	return int(c.nSub.Load() + c.nPSub.Load())
}

// updateSubscribed recomputes the subscribed flag (Redis's CLIENT_PUBSUB)
// after the client's subscriptions changed.
func (c *Client) updateSubscribed() {
	on := c.nSub.Load()+c.nPSub.Load()+c.nSSub.Load() > 0
	if on != c.subscribed {
		c.subscribed = on
		if c.out != nil {
			c.out.setPubSubClass(on)
		}
	}
}

// subscribe is SUBSCRIBE and PSUBSCRIBE (and SSUBSCRIBE's body). It
// cannot fail: its confirmations, written as it subscribes, must reach the
// client (and c.mark is moved past them).
func (c *Client) subscribe(sp pubsub.Space, args [][]byte) {
	q := c.ensurePushOut()
	// Messages on the new subscriptions wait until the confirmations,
	// which are in c.w, have been handed to the queue.
	q.holdDeliveries()
	hub := c.s.pubsub
	for _, name := range args[1:] {
		added, count := hub.Subscribe(q, sp, name)
		if added {
			c.counter(sp).Add(1)
		}
		c.pushConfirm(confirmNames[sp].sub, name, count)
	}
	c.updateSubscribed()
	// Confirmations are pushes: CLIENT REPLY OFF/SKIP does not drop them.
	c.mark = c.w.Len()
}

func cmdSSubscribe(x *Ctx, args [][]byte) error {
	if x.InGroup() {
		// Redis refuses it to a CLIENT_DENY_BLOCKING client, which a
		// client running EXEC is (SUBSCRIBE and PSUBSCRIBE are let
		// through inside MULTI for backward compatibility).
		return resp.Err("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
	}
	x.c.subscribe(pubsub.Shard, args)
	return nil
}

// unsubscribe is UNSUBSCRIBE, PUNSUBSCRIBE and SUNSUBSCRIBE: from the
// names given, or from everything in the space when none are; with
// nothing to unsubscribe from, one confirmation with a null name. It
// cannot fail (the confirmations, like subscribe's, must stay).
func (c *Client) unsubscribe(sp pubsub.Space, args [][]byte) {
	hub := c.s.pubsub
	kind := confirmNames[sp].unsub
	var q pubsub.Subscriber
	if c.out != nil {
		q = c.out
	}
	if len(args) == 1 {
		n := 0
		if q != nil {
			n = hub.UnsubscribeAll(q, sp, func(name []byte, count int) {
				c.counter(sp).Add(-1)
				c.pushConfirm(kind, name, count)
			})
		}
		if n == 0 {
			c.pushConfirm(kind, nil, c.spaceCount(sp))
		}
	} else {
		for _, name := range args[1:] {
			count := c.spaceCount(sp)
			if q != nil {
				var removed bool
				if removed, count = hub.Unsubscribe(q, sp, name); removed {
					c.counter(sp).Add(-1)
				}
			}
			c.pushConfirm(kind, name, count)
		}
	}
	c.updateSubscribed()
	c.mark = c.w.Len()
}

// resetPubSub unsubscribes the client from everything without
// confirmations (RESET).
func (c *Client) resetPubSub() {
	if c.out == nil {
		return
	}
	c.s.pubsub.Drop(c.out)
	c.nSub.Store(0)
	c.nPSub.Store(0)
	c.nSSub.Store(0)
	c.updateSubscribed()
}

// endPubSub runs when the connection ends: the client leaves the hub and
// its queue is written out (unless the client was killed) and stopped.
func (c *Client) endPubSub() {
	if c.out == nil {
		return
	}
	c.resetPubSub()
	c.out.close()
}

// awaitSubscribers waits, before c publishes to channel in space sp,
// until none of the first publishWaitCheck recipients has input it has not
// run (see "Ordering across connections" in blocking.go): an UNSUBSCRIBE
// sent before the PUBLISH is run first. Subscribers seldom send anything,
// so this costs a peek at each recipient's socket and no wait. Inside
// MULTI/EXEC or a script (the engine's lock held) it does not wait.
func (c *Client) awaitSubscribers(sp pubsub.Space, channel []byte) {
	if c.group != nil || sp == pubsub.Channels && !c.s.pubsub.Active() {
		return
	}
	ticket := c.src.await()
	defer c.src.done()
	var deadline time.Time
	for {
		busy, n := false, 0
		c.s.pubsub.Recipients(sp, channel, func(s pubsub.Subscriber) bool {
			if n++; n > publishWaitCheck {
				return false
			}
			q, ok := s.(*pushOut)
			busy = ok && q != c.out && q.c.inputPending(ticket, c.orderID(), false)
			return !busy
		})
		if !busy || !orderWait(&deadline) {
			return
		}
	}
}

// publishWaitCheck is the most recipients a publish waits for.
const publishWaitCheck = 8

func cmdPublish(x *Ctx, args [][]byte) error {
	c := x.c
	forcePropagation(x)
	c.awaitSubscribers(pubsub.Channels, args[1])
	var n int
	if c.out != nil {
		n = c.s.pubsub.PublishFrom(c.out, args[1], args[2])
	} else {
		n = c.s.pubsub.Publish(args[1], args[2])
	}
	c.w.Int(int64(n))
	return nil
}

func cmdSPublish(x *Ctx, args [][]byte) error {
	c := x.c
	forcePropagation(x)
	c.awaitSubscribers(pubsub.Shard, args[1])
	var n int
	if c.out != nil {
		n = c.s.pubsub.SPublishFrom(c.out, args[1], args[2])
	} else {
		n = c.s.pubsub.SPublish(args[1], args[2])
	}
	c.w.Int(int64(n))
	return nil
}

// pubsubNames is PUBSUB CHANNELS and SHARDCHANNELS [pattern].
func (c *Client) pubsubNames(sp pubsub.Space, args [][]byte) error {
	if len(args) > 3 {
		return resp.Err("ERR unknown subcommand or wrong number of arguments for '" + cstr.ErrArg(args[1]) +
			"'. Try " + strings.ToUpper(string(cstr.CString(args[0]))) + " HELP.")
	}
	var names [][]byte
	if len(args) == 3 {
		names = c.s.pubsub.Names(sp, args[2], true)
	} else {
		names = c.s.pubsub.Names(sp, nil, false)
	}
	c.w.Array(len(names))
	for _, n := range names {
		c.w.Bulk(n)
	}
	return nil
}

// pubsubNumSub is PUBSUB NUMSUB and SHARDNUMSUB [channel ...]: a flat
// array of channel, count pairs (in RESP3 too, as Redis).
func (c *Client) pubsubNumSub(sp pubsub.Space, args [][]byte) error {
	c.w.Array(2 * (len(args) - 2))
	for _, name := range args[2:] {
		c.w.Bulk(name)
		c.w.Int(int64(c.s.pubsub.NumSub(sp, name)))
	}
	return nil
}
