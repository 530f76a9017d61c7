package streams

import (
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/tiering"
	"github.com/spillway/spillway/tiering/stream"
)

// openInfo opens XINFO's key (args[2]): a missing key is an error.
func openInfo(x *server.Ctx, tx *tiering.Tx, key []byte) (*tiering.Stream, error) {
	s, err := tx.OpenStream(x.DB(), key, false)
	if err == nil && s == nil {
		x.NotifyKeyMiss(key)
		err = resp.Err(errNoKey)
	}
	return s, err
}

// writeLag writes a group's lag, or a null when it cannot be known.
func writeLag(w *resp.Writer, s *tiering.Stream, g *stream.Group) {
	if lag, ok := s.Lag(g); ok {
		w.Int(lag)
	} else {
		w.Null()
	}
}

func writeEntriesRead(w *resp.Writer, g *stream.Group) {
	if g.EntriesRead != -1 {
		w.Int(g.EntriesRead)
	} else {
		w.Null()
	}
}

// cmdXInfoStream is XINFO STREAM key [FULL [COUNT n]].
func cmdXInfoStream(x *server.Ctx, args [][]byte) error {
	full, count := false, int64(10)
	if opts := args[3:]; len(opts) > 0 {
		if len(opts) != 1 && len(opts) != 3 || !cstr.EqualFold(opts[0], "full") {
			return subcommandSyntax(args)
		}
		full = true
		if len(opts) == 3 {
			if !cstr.EqualFold(opts[1], "count") {
				return subcommandSyntax(args)
			}
			n, err := parseInt(opts[2], "")
			if err != nil {
				return err
			}
			if count = n; count < 0 {
				count = 10
			}
		}
	}
	return x.View(func(tx *tiering.Tx) error {
		s, err := openInfo(x, tx, args[2])
		if err != nil {
			return err
		}
		w := x.W
		if full {
			w.Map(9)
		} else {
			w.Map(10)
		}
		w.BulkString("length")
		w.Int(s.Len())
		w.BulkString("radix-tree-keys")
		w.Int(int64(s.Nodes()))
		w.BulkString("radix-tree-nodes")
		w.Int(s.RadixNodes())
		w.BulkString("last-generated-id")
		writeID(w, s.Last)
		w.BulkString("max-deleted-entry-id")
		writeID(w, s.MaxDeleted)
		w.BulkString("entries-added")
		w.Int(int64(s.EntriesAdded))
		w.BulkString("recorded-first-entry-id")
		writeID(w, s.First)
		if !full {
			w.BulkString("groups")
			w.Int(int64(len(s.Groups())))
			w.BulkString("first-entry")
			if e := s.FirstEntry(); e != nil {
				writeEntry(w, e)
			} else {
				w.Null()
			}
			w.BulkString("last-entry")
			if e := s.LastEntry(); e != nil {
				writeEntry(w, e)
			} else {
				w.Null()
			}
			return nil
		}
		w.BulkString("entries")
		writeRange(w, s.Stream, stream.ID{}, stream.MaxID, count, false)
		w.BulkString("groups")
		w.Array(len(s.Groups()))
		for _, g := range s.Groups() {
			writeFullGroup(w, s, g, count)
		}
		return nil
	})
}

func writeFullGroup(w *resp.Writer, s *tiering.Stream, g *stream.Group, count int64) {
	w.Map(7)
	w.BulkString("name")
	w.Bulk(g.Name)
	w.BulkString("last-delivered-id")
	writeID(w, g.LastID)
	w.BulkString("entries-read")
	writeEntriesRead(w, g)
	w.BulkString("lag")
	writeLag(w, s, g)
	w.BulkString("pel-count")
	w.Int(g.PendingCount())
	w.BulkString("pending")
	pel := firstPending(s, g, nil, count)
	w.Array(len(pel))
	for _, p := range pel {
		w.Array(4)
		writeID(w, p.ID)
		w.Bulk(p.Consumer.Name)
		w.Int(p.DeliveryTime)
		w.Int(p.DeliveryCount)
	}
	w.BulkString("consumers")
	w.Array(len(g.Consumers()))
	for _, c := range g.Consumers() {
		w.Map(4)
		w.BulkString("name")
		w.Bulk(c.Name)
		w.BulkString("seen-time")
		w.Int(c.SeenTime)
		w.BulkString("pel-count")
		w.Int(c.PendingCount())
		w.BulkString("pending")
		cp := firstPending(s, g, c, count)
		w.Array(len(cp))
		for _, p := range cp {
			w.Array(3)
			writeID(w, p.ID)
			w.Int(p.DeliveryTime)
			w.Int(p.DeliveryCount)
		}
	}
}

// firstPending returns the first count (0: all) pending entries of g, or
// of its consumer c if c is not nil.
func firstPending(s *tiering.Stream, g *stream.Group, c *stream.Consumer, count int64) []*stream.NACK {
	var out []*stream.NACK
	s.EachPending(g, c, stream.ID{}, stream.MaxID, func(p *stream.NACK) bool {
		out = append(out, p)
		return count <= 0 || int64(len(out)) < count
	})
	return out
}

// cmdXInfoGroups is XINFO GROUPS key.
func cmdXInfoGroups(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		s, err := openInfo(x, tx, args[2])
		if err != nil {
			return err
		}
		w := x.W
		w.Array(len(s.Groups()))
		for _, g := range s.Groups() {
			w.Map(6)
			w.BulkString("name")
			w.Bulk(g.Name)
			w.BulkString("consumers")
			w.Int(int64(len(g.Consumers())))
			w.BulkString("pending")
			w.Int(g.PendingCount())
			w.BulkString("last-delivered-id")
			writeID(w, g.LastID)
			w.BulkString("entries-read")
			writeEntriesRead(w, g)
			w.BulkString("lag")
			writeLag(w, s, g)
		}
		return nil
	})
}

// cmdXInfoConsumers is XINFO CONSUMERS key group.
func cmdXInfoConsumers(x *server.Ctx, args [][]byte) error {
	return x.View(func(tx *tiering.Tx) error {
		s, err := openInfo(x, tx, args[2])
		if err != nil {
			return err
		}
		g := s.Group(args[3])
		if g == nil {
			return resp.Err("NOGROUP No such consumer group '" + cstr.ErrArg(args[3]) + "' for key name '" + cstr.ErrArg(args[2]) + "'")
		}
		w := x.W
		now := tx.Now()
		w.Array(len(g.Consumers()))
		for _, c := range g.Consumers() {
			w.Map(3)
			w.BulkString("name")
			w.Bulk(c.Name)
			w.BulkString("pending")
			w.Int(c.PendingCount())
			w.BulkString("idle")
			w.Int(max(now-c.SeenTime, 0))
		}
		return nil
	})
}
