package streams

import (
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/tiering"
	"github.com/spillway/spillway/tiering/stream"
)

// groupOpts parses XGROUP CREATE's and SETID's options from args[5:].
func groupOpts(args [][]byte, create bool) (mkstream bool, entriesRead int64, err error) {
	entriesRead = -1
	for i := 5; i < len(args); {
		switch {
		case create && cstr.EqualFold(args[i], "mkstream"):
			mkstream = true
			i++
		case cstr.EqualFold(args[i], "entriesread") && i+1 < len(args):
			if entriesRead, err = parseInt(args[i+1], ""); err != nil {
				return false, 0, err
			}
			if entriesRead < 0 && entriesRead != -1 {
				return false, 0, resp.Err("ERR value for ENTRIESREAD must be positive or -1")
			}
			i += 2
		default:
			return false, 0, subcommandSyntax(args)
		}
	}
	return mkstream, entriesRead, nil
}

// openGroup opens XGROUP's key and group (args[2], args[3]) with Redis's
// errors: a missing key, and a missing group when needGroup.
func openGroup(x *server.Ctx, tx *tiering.Tx, args [][]byte, create, needGroup bool) (*tiering.Stream, *stream.Group, error) {
	s, err := tx.OpenStream(x.DB(), args[2], create)
	if err != nil {
		return nil, nil, err
	}
	if s == nil {
		return nil, nil, resp.Err("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")
	}
	g := s.Group(args[3])
	if g == nil && needGroup {
		return nil, nil, resp.Err("NOGROUP No such consumer group '" + cstr.ErrArg(args[3]) + "' for key name '" + cstr.ErrArg(args[2]) + "'")
	}
	return s, g, nil
}

// cmdXGroupCreate is XGROUP CREATE key group id|$ [MKSTREAM]
// [ENTRIESREAD n].
func cmdXGroupCreate(x *server.Ctx, args [][]byte) error {
	if len(args) > 8 {
		return subcommandSyntax(args)
	}
	mk, er, err := groupOpts(args, true)
	if err != nil {
		return err
	}
	err = x.Update(func(tx *tiering.Tx) error {
		s, err := tx.OpenStream(x.DB(), args[2], false)
		if err != nil {
			return err
		}
		if s == nil && !mk {
			_, _, err = openGroup(x, tx, args, false, false)
			return err
		}
		var id stream.ID
		if len(args[4]) == 1 && args[4][0] == '$' {
			if s != nil {
				id = s.Last
			}
		} else if id, err = parseID(args[4]); err != nil {
			return err
		}
		if s == nil {
			if s, err = tx.OpenStream(x.DB(), args[2], true); err != nil {
				return err
			}
			x.NotifyNewKey(true, args[2]) // before the reply, as Redis's dbAdd
		}
		if s.CreateGroup(args[3], id, er) == nil {
			if err := s.Close(); err != nil {
				return err
			}
			return resp.Err("BUSYGROUP Consumer Group name already exists")
		}
		if err := s.Close(); err != nil {
			return err
		}
		x.W.OK()
		// Inside the transaction: the change it counts makes the
		// command propagate.
		x.Notify(server.NotifyStream, "xgroup-create", args[2])
		return nil
	})
	return err
}

// cmdXGroupSetID is XGROUP SETID key group id|$ [ENTRIESREAD n].
func cmdXGroupSetID(x *server.Ctx, args [][]byte) error {
	if len(args) != 5 && len(args) != 7 {
		if _, _, err := groupOpts(args, false); err != nil {
			return err
		}
		return subcommandSyntax(args)
	}
	_, er, err := groupOpts(args, false)
	if err != nil {
		return err
	}
	err = x.Update(func(tx *tiering.Tx) error {
		s, g, err := openGroup(x, tx, args, false, true)
		if err != nil {
			return err
		}
		var id stream.ID
		if len(args[4]) == 1 && args[4][0] == '$' {
			id = s.Last
		} else {
			var ok bool
			if id, _, ok = stream.ParseID(args[4], 0, false, false); !ok {
				return resp.Err(errInvalidID)
			}
		}
		s.SetGroupID(g, id, er)
		if err := s.Close(); err != nil {
			return err
		}
		x.W.OK()
		// Inside the transaction: the change it counts makes the
		// command propagate.
		x.Notify(server.NotifyStream, "xgroup-setid", args[2])
		return nil
	})
	return err
}

// cmdXGroupDestroy is XGROUP DESTROY key group.
func cmdXGroupDestroy(x *server.Ctx, args [][]byte) error {
	done := false
	err := x.Update(func(tx *tiering.Tx) error {
		s, _, err := openGroup(x, tx, args, false, false)
		if err != nil {
			return err
		}
		done = s.DestroyGroup(args[3])
		if done {
			tx.NoteReady(x.DB(), args[2])
		}
		if err := s.Close(); err != nil {
			return err
		}
		x.W.Int(b2i(done))
		if done { // inside the transaction: the change makes it propagate
			x.Notify(server.NotifyStream, "xgroup-destroy", args[2])
		}
		return nil
	})
	return err
}

// cmdXGroupCreateConsumer is XGROUP CREATECONSUMER key group consumer.
func cmdXGroupCreateConsumer(x *server.Ctx, args [][]byte) error {
	err := x.Update(func(tx *tiering.Tx) error {
		s, g, err := openGroup(x, tx, args, false, true)
		if err != nil {
			return err
		}
		made := s.CreateConsumer(g, args[4], tx.Now()) != nil
		if err := s.Close(); err != nil {
			return err
		}
		if made {
			x.Notify(server.NotifyStream, "xgroup-createconsumer", args[2]) // before the reply, as in Redis
		}
		x.W.Int(b2i(made))
		return nil
	})
	return err
}

// cmdXGroupDelConsumer is XGROUP DELCONSUMER key group consumer.
func cmdXGroupDelConsumer(x *server.Ctx, args [][]byte) error {
	err := x.Update(func(tx *tiering.Tx) error {
		s, g, err := openGroup(x, tx, args, false, true)
		if err != nil {
			return err
		}
		var pending int64
		c := s.Consumer(g, args[4], false, 0)
		if c != nil {
			pending = s.DeleteConsumer(g, c)
		}
		if err := s.Close(); err != nil {
			return err
		}
		if c != nil {
			x.Notify(server.NotifyStream, "xgroup-delconsumer", args[2]) // before the reply, as in Redis
		}
		x.W.Int(pending)
		return nil
	})
	return err
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// cmdXAck is XACK key group id [id ...].
func cmdXAck(x *server.Ctx, args [][]byte) error {
	return x.Update(func(tx *tiering.Tx) error {
		s, err := tx.OpenStream(x.DB(), args[1], false)
		if err != nil {
			return err
		}
		var g *stream.Group
		if s != nil {
			g = s.Group(args[2])
		} else {
			x.NotifyKeyMiss(args[1])
		}
		if g == nil {
			x.W.Int(0)
			return nil
		}
		ids := make([]stream.ID, 0, len(args)-3)
		for _, a := range args[3:] {
			id, err := parseID(a)
			if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		var n int64
		for _, id := range ids {
			if s.Ack(g, id) {
				n++
			}
		}
		if n > 0 {
			// XACK notifies no event: it propagates by the entries it
			// acknowledged (Redis's server.dirty += acked).
			x.ForcePropagation()
		}
		x.W.Int(n)
		return s.Close()
	})
}

// lookupGroup opens key (args[1]) and group (args[2]) for XPENDING,
// XCLAIM and XAUTOCLAIM, with their NOGROUP error.
func lookupGroup(x *server.Ctx, tx *tiering.Tx, args [][]byte) (*tiering.Stream, *stream.Group, error) {
	s, err := tx.OpenStream(x.DB(), args[1], false)
	if err != nil {
		return nil, nil, err
	}
	var g *stream.Group
	if s != nil {
		g = s.Group(args[2])
	} else {
		x.NotifyKeyMiss(args[1])
	}
	if g == nil {
		return nil, nil, resp.Err("NOGROUP No such key '" + cstr.ErrArg(args[1]) + "' or consumer group '" + cstr.ErrArg(args[2]) + "'")
	}
	return s, g, nil
}
