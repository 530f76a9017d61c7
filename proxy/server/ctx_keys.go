package server

import (
	"bytes"

	"github.com/spillway/spillway/tiering"
)

// What a handler uses besides its transaction: keyspace notifications and
// blocking. Each is a method of the command's context, so handlers never
// reach into the client or the server.

// Notify publishes event (of class) on key in the client's database, as
// Redis's notifyKeyspaceEvent: call it where Redis does, after the reply
// (a subscribed client gets its own events among its replies there).
// With notifications off it costs one atomic load, and an atomic add
// for a change (the dirty counter, INFO rdb_changes_since_last_save).
func (x *Ctx) Notify(class NotifyClass, event string, key []byte) { x.c.notify(class, event, key) }

// NotifyIn is Notify for a key in database db (MOVE, COPY ... DB).
func (x *Ctx) NotifyIn(db int, class NotifyClass, event string, key []byte) {
	x.c.notifyIn(db, class, event, key)
}

// NotifyKeyMiss publishes "keymiss" (class m) for a read of a missing key.
func (x *Ctx) NotifyKeyMiss(key []byte) { x.c.notify(NotifyKeyMiss, "keymiss", key) }

// NotifyNewKey publishes "new" (class n) when created is set.
func (x *Ctx) NotifyNewKey(created bool, key []byte) {
	if created {
		x.c.notify(NotifyNew, "new", key)
	}
}

// NotifyEnabled reports whether an event of class would be published now;
// handlers use it to skip work only an event needs.
func (x *Ctx) NotifyEnabled(class NotifyClass) bool { return x.c.s.notifyEnabled(class) }

// Events returns the client's notifier, for code that also runs on behalf
// of other clients (a PopOp).
func (x *Ctx) Events() Events { return x.c.events() }

// KeyIsNew reports, for the "new" event, whether writing key in database
// db creates it. It looks only when "new" events would be published
// (false otherwise).
func (x *Ctx) KeyIsNew(tx *tiering.Tx, db int, key []byte) (bool, error) {
	if !x.c.s.notifyEnabled(NotifyNew) {
		return false, nil
	}
	return KeyIsMissing(tx, db, key)
}

// ExpireIfNeeded deletes key if it has expired (firing "expired"), as
// Redis's lookups do for keys a command looks at without using (SMOVE's
// destination when its source is missing). It only looks when expired
// events would be published: otherwise the deletion is invisible and left
// to the next access or the sweeper.
func (x *Ctx) ExpireIfNeeded(tx *tiering.Tx, key []byte) error {
	if !x.c.s.notifyEnabled(NotifyExpired) {
		return nil
	}
	exp, err := tx.KeyExpiredNow(x.c.db, key)
	if err == nil && exp {
		_, err = tx.Delete(x.c.db, key) // an expired key: deletes nothing live
	}
	return err
}

// KeyIsMissing reports whether key does not exist (or has expired) in
// database db, without side effects: no expiry, promotion or keyspace
// statistics.
func KeyIsMissing(tx *tiering.Tx, db int, key []byte) (bool, error) {
	stored, err := tx.KeyStored(db, key)
	if err != nil || !stored {
		return !stored, err
	}
	return tx.KeyExpiredNow(db, key)
}

// PopOrBlock runs op on the first of keys that holds something to pop or,
// if none does, blocks the client on keys for timeoutMs (0: for ever)
// until a push serves it, it times out (a null reply), it is unblocked or
// it disconnects. Inside a group it does not block: it replies a null at
// once, as Redis does (a null bulk when nullBulk is set: BLMOVE,
// BRPOPLPUSH). Before it blocks, the client waits for the other clients'
// earlier input (awaitOthers), then tries again: a blocking command sent
// earlier on another connection blocks first, as in Redis. op must not
// alias the request's buffers: a blocked client's op outlives them.
func (x *Ctx) PopOrBlock(op PopOp, keys [][]byte, timeoutMs int64, nullBulk bool) error {
	c := x.c
	var w *waiter
	awaited, wouldBlock := false, false
	fn := func(tx *tiering.Tx) error {
		done, err := runPop(x, tx, op, keys)
		if done || err != nil {
			return err
		}
		if c.group != nil || c.noBlock {
			if nullBulk {
				x.W.Null()
			} else {
				x.W.NullArray()
			}
			return nil
		}
		if !awaited {
			// Others' earlier commands first (awaitOthers), then again.
			wouldBlock = true
			return nil
		}
		w = &waiter{c: c, db: c.db, op: op, proto: c.w.Proto, done: make(chan struct{})}
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
		return nil
	}
	err := x.Update(fn)
	if err == nil && wouldBlock {
		c.awaitOthers()
		awaited = true
		err = x.Update(fn)
	}
	if err != nil {
		if w != nil {
			c.s.blocking.cancel(w, nil)
		}
		return err
	}
	if w != nil && !c.block(w, timeoutMs) {
		c.quit = true
	}
	return nil
}

// RunPop runs op within tx on the first of keys that holds something to
// pop, replying to x. It reports false if none does (nothing replied).
func (x *Ctx) RunPop(tx *tiering.Tx, op PopOp, keys [][]byte) (bool, error) {
	return runPop(x, tx, op, keys)
}

func runPop(x *Ctx, tx *tiering.Tx, op PopOp, keys [][]byte) (bool, error) {
	for _, k := range keys {
		done, err := op.Run(x.Events(), tx, x.c.db, k, x.W)
		if err != nil || done {
			return true, err
		}
	}
	return false, nil
}
