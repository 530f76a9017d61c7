package streams

import (
	"math"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
	"github.com/spillway/spillway/tiering/stream"
)

// cmdXPending is XPENDING key group [[IDLE min-idle] start end count
// [consumer]].
func cmdXPending(x *server.Ctx, args [][]byte) error {
	justInfo := len(args) == 3
	if !justInfo && (len(args) < 6 || len(args) > 9) {
		return resp.Err(strops.ErrSyntax)
	}
	var start, end stream.ID
	var count, minIdle int64
	var consumer []byte
	if !justInfo {
		at := 3
		var err error
		if cstr.EqualFold(args[3], "idle") {
			if minIdle, err = parseInt(args[4], ""); err != nil {
				return err
			}
			if len(args) < 8 {
				return resp.Err(strops.ErrSyntax)
			}
			at += 2
		}
		if count, err = parseInt(args[at+2], ""); err != nil {
			return err
		}
		count = max(count, 0)
		if start, err = parseRangeID(args[at], 0, false); err != nil {
			return err
		}
		if end, err = parseRangeID(args[at+1], math.MaxUint64, true); err != nil {
			return err
		}
		if at+3 < len(args) {
			consumer = args[at+3]
		}
	}
	return x.View(func(tx *tiering.Tx) error {
		s, g, err := lookupGroup(x, tx, args)
		if err != nil {
			return err
		}
		w := x.W
		if justInfo {
			// From the group's counters: no pending entry is read.
			w.Array(4)
			w.Int(g.PendingCount())
			if g.PendingCount() == 0 {
				w.Null()
				w.Null()
				w.NullArray()
				return nil
			}
			lo, hi := g.PendingBounds()
			writeID(w, lo)
			writeID(w, hi)
			n := 0
			for _, c := range g.Consumers() {
				if c.PendingCount() > 0 {
					n++
				}
			}
			w.Array(n)
			for _, c := range g.Consumers() {
				if c.PendingCount() > 0 {
					w.Array(2)
					w.Bulk(c.Name)
					w.BulkInt(c.PendingCount())
				}
			}
			return nil
		}
		var c *stream.Consumer
		if consumer != nil {
			if c = s.Consumer(g, consumer, false, 0); c == nil {
				w.Array(0)
				return nil
			}
		}
		now := tx.Now()
		var out []*stream.NACK
		if count > 0 {
			s.EachPending(g, c, start, end, func(p *stream.NACK) bool {
				if minIdle == 0 || now-p.DeliveryTime >= minIdle {
					out = append(out, p)
				}
				return int64(len(out)) < count
			})
		}
		if err := s.Err(); err != nil {
			return err
		}
		w.Array(len(out))
		for _, p := range out {
			w.Array(4)
			writeID(w, p.ID)
			w.Bulk(p.Consumer.Name)
			w.Int(max(now-p.DeliveryTime, 0))
			w.Int(p.DeliveryCount)
		}
		return nil
	})
}

// cmdXClaim is XCLAIM key group consumer min-idle-time id [id ...] [IDLE
// ms] [TIME ms] [RETRYCOUNT n] [FORCE] [JUSTID] [LASTID id].
//
// It propagates as Redis's xclaimCommand: one idempotent XCLAIM per entry
// claimed or found deleted (propagate.go), else XGROUP SETID if LASTID
// moved the group's last ID; never as itself.
func cmdXClaim(x *server.Ctx, args [][]byte) error {
	x.PreventPropagation()
	err := x.Update(func(tx *tiering.Tx) error {
		created := false
		s, g, err := lookupGroup(x, tx, args)
		if err != nil {
			return err
		}
		minIdle, err := parseInt(args[4], "ERR Invalid min-idle-time argument for XCLAIM")
		if err != nil {
			return err
		}
		minIdle = max(minIdle, 0)
		var ids []stream.ID
		j := 5
		for ; j < len(args); j++ {
			id, err := parseID(args[j])
			if err != nil {
				break
			}
			ids = append(ids, id)
		}
		idArgs := args[5:j]
		now := tx.Now()
		deliveryTime, retryCount := int64(-1), int64(-1)
		force, justID := false, false
		var lastID stream.ID
		for ; j < len(args); j++ {
			more := len(args) - 1 - j
			o := args[j]
			switch {
			case cstr.EqualFold(o, "force"):
				force = true
			case cstr.EqualFold(o, "justid"):
				justID = true
			case cstr.EqualFold(o, "idle") && more > 0:
				j++
				if deliveryTime, err = parseInt(args[j], "ERR Invalid IDLE option argument for XCLAIM"); err != nil {
					return err
				}
				deliveryTime = now - deliveryTime
			case cstr.EqualFold(o, "time") && more > 0:
				j++
				if deliveryTime, err = parseInt(args[j], "ERR Invalid TIME option argument for XCLAIM"); err != nil {
					return err
				}
			case cstr.EqualFold(o, "retrycount") && more > 0:
				j++
				if retryCount, err = parseInt(args[j], "ERR Invalid RETRYCOUNT option argument for XCLAIM"); err != nil {
					return err
				}
			case cstr.EqualFold(o, "lastid") && more > 0:
				j++
				if lastID, err = parseID(args[j]); err != nil {
					return err
				}
			default:
				return resp.Err("ERR Unrecognized XCLAIM option '" + cstr.ErrArg(o) + "'")
			}
		}
		propLastID := false
		if stream.Less(g.LastID, lastID) {
			s.SetGroupLastID(g, lastID)
			propLastID = true
		}
		replicating := x.Replicating()
		if deliveryTime == -1 || deliveryTime < 0 || deliveryTime > now {
			deliveryTime = now
		}
		var c *stream.Consumer
		var claimed []*stream.NACK
		var entries []*stream.Entry
		for k, id := range ids {
			n := s.Pending(g, id)
			e := s.Get(id)
			if e == nil {
				if n != nil {
					if replicating {
						x.Propagate(xclaimArgs(args[1], args[2], idArgs[k], n, g)...)
					}
					propLastID = false
					s.Ack(g, id) // the entry is gone: so is its pending entry
				}
				continue
			}
			if force && n == nil {
				n = s.ForcePending(g, id)
			}
			if n == nil {
				continue
			}
			if n.Consumer != nil && minIdle != 0 && now-n.DeliveryTime < minIdle {
				continue
			}
			if c == nil {
				if c = s.Consumer(g, args[3], true, now); c == nil {
					c, created = s.CreateConsumer(g, args[3], now), true
				}
			}
			count := n.DeliveryCount
			if retryCount >= 0 {
				count = retryCount
			} else if !justID {
				count++
			}
			s.Claim(g, n, c, deliveryTime, count)
			claimed = append(claimed, n)
			entries = append(entries, e)
			if replicating {
				x.Propagate(xclaimArgs(args[1], args[2], idArgs[k], n, g)...)
			}
			propLastID = false
		}
		if propLastID && replicating {
			x.Propagate(setIDArgs(args[1], args[2], g)...)
		}
		if err := s.Close(); err != nil {
			return err
		}
		x.W.Array(len(claimed))
		if created { // where Redis's deferred reply puts it: after the header
			x.Notify(server.NotifyStream, "xgroup-createconsumer", args[1])
		}
		for i, n := range claimed {
			if justID {
				writeID(x.W, n.ID)
			} else {
				writeEntry(x.W, entries[i])
			}
		}
		return nil
	})
	return err
}

// cmdXAutoClaim is XAUTOCLAIM key group consumer min-idle-time start
// [COUNT count] [JUSTID].
//
// It propagates as Redis's xautoclaimCommand: one idempotent XCLAIM per
// entry claimed or found deleted (propagate.go), never as itself.
func cmdXAutoClaim(x *server.Ctx, args [][]byte) error {
	x.PreventPropagation()
	minIdle, err := parseInt(args[4], "ERR Invalid min-idle-time argument for XAUTOCLAIM")
	if err != nil {
		return err
	}
	minIdle = max(minIdle, 0)
	start, err := parseRangeID(args[5], 0, false)
	if err != nil {
		return err
	}
	count, justID := int64(100), false
	for j := 6; j < len(args); j++ {
		switch {
		case cstr.EqualFold(args[j], "count") && j+1 < len(args):
			n, ok := cstr.ParseInt(args[j+1])
			if !ok || n < 1 || n > math.MaxInt64/16 {
				return resp.Err("ERR COUNT must be > 0")
			}
			count = n
			j++
		case cstr.EqualFold(args[j], "justid"):
			justID = true
		default:
			return resp.Err(strops.ErrSyntax)
		}
	}
	err = x.Update(func(tx *tiering.Tx) error {
		s, g, err := lookupGroup(x, tx, args)
		if err != nil {
			return err
		}
		created := false
		now := tx.Now()
		attempts := count * 10
		var c *stream.Consumer
		var claimed []*stream.NACK
		var entries []*stream.Entry
		var deleted []stream.ID
		next := stream.ID{}
		// The candidates, read once: at most attempts of them are
		// examined, and the one after is the reply's next start.
		var pel []*stream.NACK
		s.EachPending(g, nil, start, stream.MaxID, func(n *stream.NACK) bool {
			pel = append(pel, n)
			return int64(len(pel)) <= attempts
		})
		i := 0
		for ; attempts > 0 && count > 0 && i < len(pel); attempts-- {
			n := pel[i]
			i++
			e := s.Get(n.ID)
			if e == nil {
				deleted = append(deleted, n.ID)
				if x.Replicating() {
					x.Propagate(xclaimArgs(args[1], args[2], stream.AppendID(nil, n.ID), n, g)...)
				}
				s.Ack(g, n.ID)
				count--
				continue
			}
			if minIdle != 0 && now-n.DeliveryTime < minIdle {
				continue
			}
			if c == nil {
				if c = s.Consumer(g, args[3], true, now); c == nil {
					c, created = s.CreateConsumer(g, args[3], now), true
				}
			}
			dc := n.DeliveryCount
			if !justID {
				dc++
			}
			s.Claim(g, n, c, now, dc)
			claimed = append(claimed, n)
			entries = append(entries, e)
			count--
			if x.Replicating() {
				x.Propagate(xclaimArgs(args[1], args[2], stream.AppendID(nil, n.ID), n, g)...)
			}
		}
		if i < len(pel) {
			next = pel[i].ID
		}
		if err := s.Close(); err != nil {
			return err
		}
		x.W.Array(3)
		writeID(x.W, next)
		x.W.Array(len(claimed))
		if created { // where Redis's deferred replies put it
			x.Notify(server.NotifyStream, "xgroup-createconsumer", args[1])
		}
		for k, n := range claimed {
			if justID {
				writeID(x.W, n.ID)
			} else {
				writeEntry(x.W, entries[k])
			}
		}
		x.W.Array(len(deleted))
		for _, id := range deleted {
			writeID(x.W, id)
		}
		return nil
	})
	return err
}
