package commands

import (
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/proxy/server"
	"github.com/spillway/spillway/proxy/strops"
	"github.com/spillway/spillway/tiering"
)

// The expiry commands: EXPIRE and its variants, TTL and its variants,
// PERSIST. Expiry times are absolute, in milliseconds (tiering.Entry's
// ExpireAt; 0: none).

// expireGeneric is EXPIRE, PEXPIRE (relative, seconds or not), EXPIREAT
// and PEXPIREAT (absolute) key time [NX|XX|GT|LT]; name is the command's,
// for the invalid-expire error. The flags are checked before the
// transaction, the time inside it (relative times count from its clock).
// A time in the past deletes the key.
func expireGeneric(x *server.Ctx, args [][]byte, seconds, absolute bool, name string) error {
	flags, msg := strops.ParseExpireFlags(args[3:])
	if msg != "" {
		return resp.Err(msg)
	}
	return x.Update(func(tx *tiering.Tx) error {
		var base int64
		if !absolute {
			base = tx.Now()
		}
		when, msg := strops.ExpireWhen(args[2], seconds, base, name)
		if msg != "" {
			return resp.Err(msg)
		}
		e, err := tx.Peek(x.DB(), args[1])
		if err != nil {
			return err
		}
		if e == nil {
			x.W.Int(0)
			return nil
		}
		cur := int64(-1)
		if e.ExpireAt != 0 {
			cur = e.ExpireAt
		}
		if !flags.Allows(cur, when) {
			x.W.Int(0)
			return nil
		}
		past := when <= tx.Now() && !tx.ExpiredLive() // a replica's master client sets it
		if past {
			_, err = tx.Delete(x.DB(), args[1])
		} else {
			_, err = tx.SetExpire(x.DB(), args[1], when)
		}
		if err != nil {
			return err
		}
		if x.Replicating() {
			// Propagated as an absolute time (the flags kept), or as the
			// deletion it made.
			if past {
				x.RewriteArgs(delArg(x, "lazyfree-lazy-expire"), args[1])
			} else {
				name, at := argPExpireAt, intArg(when)
				if absolute && !seconds {
					name, at = args[0], args[2] // PEXPIREAT as received
				}
				rw := append([][]byte{name, args[1], at}, args[3:]...)
				x.RewriteArgs(rw...)
			}
		}
		// Redis: "del" then the reply, or the reply then "expire".
		if past {
			x.Notify(server.NotifyGeneric, "del", args[1])
		}
		x.W.Int(1)
		if !past {
			x.Notify(server.NotifyGeneric, "expire", args[1])
		}
		return nil
	})
}

// ttlGeneric is TTL, PTTL (ms), EXPIRETIME and PEXPIRETIME (absolute): -2
// for a missing key (a read miss), -1 for a key without expiry.
func ttlGeneric(x *server.Ctx, args [][]byte, ms, absolute bool) error {
	return x.View(func(tx *tiering.Tx) error {
		e, err := tx.PeekNoTouch(x.DB(), args[1])
		if err != nil {
			return err
		}
		switch {
		case e == nil:
			x.NotifyKeyMiss(args[1])
			x.W.Int(-2)
		case e.ExpireAt == 0:
			x.W.Int(-1)
		case absolute && ms:
			x.W.Int(e.ExpireAt)
		case absolute:
			x.W.Int(e.ExpireAt / 1000)
		default:
			x.W.Int(strops.TTL(e.ExpireAt, tx.Now(), ms))
		}
		return nil
	})
}

// cmdPersist is PERSIST key: it removes key's expiry, replying whether
// there was one.
func cmdPersist(x *server.Ctx, args [][]byte) error {
	return x.Update(func(tx *tiering.Tx) error {
		e, err := tx.Peek(x.DB(), args[1])
		if err != nil {
			return err
		}
		if e == nil || e.ExpireAt == 0 {
			x.W.Int(0)
			return nil
		}
		if _, err := tx.SetExpire(x.DB(), args[1], 0); err != nil {
			return err
		}
		x.Notify(server.NotifyGeneric, "persist", args[1])
		x.W.Int(1)
		return nil
	})
}
