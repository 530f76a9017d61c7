package server

import (
	"time"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/tiering"
)

// Transactions (embedded mode): MULTI, EXEC, DISCARD, WATCH, UNWATCH with
// Redis 7.0's semantics.
//
// EXEC runs the queued commands as one group (commit.go): one hold of the
// engine's lock and one store batch, so no other client, no demotion and
// no promotion sees or changes anything between them. Demotion and
// promotion do not modify keys, so they never fail a WATCH: a key demoted
// between WATCH and EXEC is the same key it was.
//
// WATCH follows Redis's signalModifiedKey: the engine reports every key a
// transaction writes, deletes or expires (tiering.Observer), and each
// client watching the key is marked dirty. A key that had already expired
// when it was watched is not dirtied by its deletion (no logical change),
// and EXEC fails if a watched key expired since WATCH. FLUSHDB, FLUSHALL and
// SWAPDB dirty the watchers of keys they remove or replace.

// multiState is a client's MULTI queue and WATCHed keys.
type multiState struct {
	active bool // between MULTI and EXEC/DISCARD
	// failed: a command was rejected while queueing (EXEC replies
	// EXECABORT).
	failed bool
	queue  []queuedCommand
	// watched are the client's WATCHed keys; dirty: one was modified.
	watched []*watchedKey
	dirty   bool
	// unwatchPending: the WATCHes were dropped during a busy script
	// (dropWatches: DISCARD, UNWATCH, RESET, a refused EXEC), but watched
	// and the registry (under the engine's lock, which the script holds)
	// still list them, and dirty may be stale; the next WATCH or EXEC
	// removes them first.
	unwatchPending bool
}

// queuedCommand is a command MULTI queued (arguments copied).
type queuedCommand struct {
	cmd  *cmdtable.Command
	args [][]byte
}

// watchedKey is one client's WATCH of one key.
type watchedKey struct {
	c   *Client
	db  int
	key string
	// expired: the key existed but had expired when it was watched.
	expired bool
}

type watchKey struct {
	db  int
	key string
}

// watchRegistry maps keys to their watchers. It is guarded by the engine's
// lock: WATCH and UNWATCH take it, and the engine's observer runs under it.
type watchRegistry struct {
	byKey map[watchKey][]*watchedKey
	busy  busyWatches // WATCHes made during a busy script (cmd_script.go)
}

// initKeyEvents installs the engine observer that feeds WATCH and keyspace
// notifications (embedded mode only).
func (s *Server) initKeyEvents() {
	s.watches.byKey = map[watchKey][]*watchedKey{}
	if s.engine != nil {
		s.engine.SetObserver(s.keyEvent)
		s.initNotify()
	}
}

// keyEvent is the engine's observer (under the engine's lock): it feeds
// WATCH and the expired keyspace events.
func (s *Server) keyEvent(db int, key []byte, ev tiering.KeyEvent) {
	if (ev == tiering.KeyExpired || ev == tiering.KeyEvicted) && s.repl.Active() {
		s.propagateDeletion(db, key, ev) // cmd_server.go
	}
	switch ev {
	case tiering.KeyExpired:
		s.notifyExpired(db, key)
	case tiering.KeyEvicted:
		s.publishKeyEvent(nil, db, NotifyEvicted, "evicted", key)
	}
	if s.trk.Active() {
		s.trackModified(key, ev) // notify.go
	}
	if s.watches.busy.n.Load() > 0 {
		s.watches.busy.touched(db, key)
	}
	if ws := s.watches.byKey[watchKey{db, string(key)}]; len(ws) > 0 {
		exists := ev == tiering.KeyModified
		for _, wk := range ws {
			if wk.expired && !exists {
				// An expired key was deleted: no logical change.
				wk.expired = false
				continue
			}
			wk.c.multi.dirty = true
		}
	}
}

// updateObserving turns the engine's key events on while anything needs
// them. The caller holds the engine's lock.
func (s *Server) updateObserving() {
	s.engine.SetObserving(len(s.watches.byKey) > 0 || s.watches.busy.n.Load() > 0 || s.notifyWantsExpired() ||
		s.trk.Active() || s.repl.Active())
}

// touchWatchedInDB applies FLUSHDB/FLUSHALL (replacedWith -1) or SWAPDB
// (db's content replaced with replacedWith's) to the watchers of keys in
// db, as Redis's touchAllWatchedKeysInDb: a watched key that exists in db
// or in the replacing database dirties its watchers. The caller holds tx
// (the lock) and calls it before the flush or swap.
func (s *Server) touchWatchedInDB(tx *tiering.Tx, db, replacedWith int) error {
	if s.watches.busy.n.Load() > 0 {
		if err := s.watches.busy.touchedDB(tx, db, replacedWith); err != nil {
			return err
		}
	}
	for k, ws := range s.watches.byKey {
		if k.db != db {
			continue
		}
		key := []byte(k.key)
		inEmptied, err := tx.KeyStored(db, key)
		if err != nil {
			return err
		}
		inReplacing, replacingExpired := false, false
		if replacedWith >= 0 {
			if inReplacing, err = tx.KeyStored(replacedWith, key); err != nil {
				return err
			}
			if inReplacing {
				if replacingExpired, err = tx.KeyExpiredNow(replacedWith, key); err != nil {
					return err
				}
			}
		}
		if !inEmptied && !inReplacing {
			continue
		}
		for _, wk := range ws {
			switch {
			case wk.expired && !inReplacing:
				wk.expired = false // the expired key is gone: no change
				continue
			case wk.expired && replacingExpired:
				continue // an expired key stays expired
			case !wk.expired && !inEmptied && replacingExpired:
				wk.expired = true // a missing key replaced by an expired one
				continue
			}
			wk.c.multi.dirty = true
		}
	}
	return nil
}

func registerMulti(t *Table) {
	t.Register("multi", cmdMulti)
	t.Register("exec", cmdExec)
	t.Register("discard", cmdDiscard)
	t.Register("watch", cmdWatch)
	t.Register("unwatch", cmdUnwatch)
}

// runsInMulti reports whether cmd executes at once inside MULTI instead of
// being queued.
func runsInMulti(cmd *cmdtable.Command) bool {
	switch cmd.Name {
	case "exec", "discard", "multi", "watch", "quit", "reset":
		return true
	}
	return false
}

// queueCommand queues a command inside MULTI and replies QUEUED; a command
// that may not run in a transaction fails it.
func (c *Client) queueCommand(cmd *cmdtable.Command, args [][]byte) {
	if cmd.Is(cmdtable.FlagNoMulti) {
		c.countRejected(cmd)
		c.rejectInMulti("ERR Command not allowed inside a transaction")
		return
	}
	// A dirty transaction fails anyway: no need to keep its commands (but
	// dirty means nothing once the WATCHes are dropped, unwatchPending).
	if !c.multi.failed && (!c.multi.dirty || c.multi.unwatchPending) {
		q := queuedCommand{cmd: cmd, args: make([][]byte, len(args))}
		for i, a := range args {
			q.args[i] = append([]byte(nil), a...)
		}
		c.multi.queue = append(c.multi.queue, q)
		c.multiMem.Add(argvMem(args) + 8*int64(len(args)))
	}
	c.multiLen.Add(1)
	c.w.Simple("QUEUED")
}

// rejectInMulti replies msg; inside MULTI it also fails the transaction
// (EXEC will reply EXECABORT), as Redis's rejectCommand does.
func (c *Client) rejectInMulti(msg string) {
	if c.multi.active {
		c.multi.failed = true
	}
	c.err(msg)
}

// abortExec refuses EXEC as Redis's rejectCommand does (execCommandAbort):
// whether or not MULTI is open, the reply is EXECABORT with the reason, and
// the transaction and WATCHes are dropped. It takes no lock: while a busy
// script holds the engine's lock, the registry's entries are removed later
// (unwatchPending).
func (c *Client) abortExec(reason string) {
	c.discardMulti()
	c.dropWatches()
	c.err("EXECABORT Transaction discarded because of: " + reason)
}

// failMulti fails the open transaction (if any) after a rejected command.
func (c *Client) failMulti() {
	if c.multi.active {
		c.multi.failed = true
	}
}

func cmdMulti(x *Ctx, _ [][]byte) error {
	c := x.c
	if c.multi.active {
		return resp.Err("ERR MULTI calls can not be nested")
	}
	c.multi.active = true
	c.multiLen.Store(1)
	c.w.OK()
	return nil
}

func cmdDiscard(x *Ctx, _ [][]byte) error {
	c := x.c
	if !c.multi.active {
		return resp.Err("ERR DISCARD without MULTI")
	}
	c.discardMulti()
	c.dropWatches()
	c.w.OK()
	return nil
}

// cmdExec runs the queued commands as a group and replies their replies
// in one array; each command's error is an element of the array (its
// handler's error is written in its place by c.call, from its own mark).
// The transaction ends (MULTI state and WATCHes are dropped) whatever the
// reply. A storage error that fails the group replaces the whole array.
func cmdExec(x *Ctx, execArgs [][]byte) error {
	c := x.c
	if !c.multi.active {
		return resp.Err("ERR EXEC without MULTI")
	}
	queue, failed := c.multi.queue, c.multi.failed
	n, mem := c.multiLen.Load(), c.multiMem.Load()
	c.discardMulti()
	if failed {
		c.unwatchAll()
		return resp.Err("EXECABORT Transaction discarded because of previous errors.")
	}
	// As Redis, the client shows its transaction in CLIENT LIST (and ACL
	// LOG's client lines) until EXEC ends.
	c.multiLen.Store(n)
	c.multiMem.Store(mem)
	defer func() {
		c.multiLen.Store(0)
		c.multiMem.Store(0)
	}()
	start := c.w.Len()
	err := c.runGroup(func(tx *tiering.Tx) error {
		if c.multi.unwatchPending {
			c.unwatchLocked() // WATCHed before an aborted EXEC: not this one's
		}
		if err := c.checkWatchedExpired(tx); err != nil {
			return err
		}
		dirty := c.multi.dirty
		c.unwatchLocked()
		if dirty {
			c.w.NullArray()
			return nil
		}
		c.w.Array(len(queue))
		for _, q := range queue {
			c.mark = c.w.Len()
			if !c.execPermitted(q.cmd, q.args, execArgs) {
				continue
			}
			c.lastCmd.Store(q.cmd)
			c.callCounted(q.cmd, c.s.table.Handler(q.cmd), q.args, time.Now())
			if c.groupErr != nil {
				break
			}
		}
		return nil
	})
	if err != nil {
		// The queued commands moved c.mark; the error replaces EXEC's
		// whole reply. runGroup's errors are storage failures (replied
		// "ERR <err>" and logged), never Redis errors.
		c.mark = start
		return err
	}
	return nil
}

// checkWatchedExpired dirties the client if a key it watched while live
// has expired since (Redis's isWatchedKeyExpired).
func (c *Client) checkWatchedExpired(tx *tiering.Tx) error {
	if c.multi.dirty {
		return nil
	}
	for _, wk := range c.multi.watched {
		if wk.expired {
			continue
		}
		exp, err := tx.KeyExpiredNow(wk.db, []byte(wk.key))
		if err != nil {
			return err
		}
		if exp {
			c.multi.dirty = true
			return nil
		}
	}
	return nil
}

func cmdWatch(x *Ctx, args [][]byte) error {
	c := x.c
	if c.multi.active {
		return resp.Err("ERR WATCH inside MULTI is not allowed")
	}
	if c.multi.unwatchPending {
		c.unwatchAll()
	}
	if c.multi.dirty {
		// No point in watching more: EXEC fails anyway.
		c.w.OK()
		return nil
	}
	if c.watchDuringBusy(args[1:]) {
		return nil
	}
	return x.View(func(tx *tiering.Tx) error {
		for _, k := range args[1:] {
			if c.watching(c.db, k) {
				continue
			}
			exp, err := tx.KeyExpiredNow(c.db, k)
			if err != nil {
				return err
			}
			wk := &watchedKey{c: c, db: c.db, key: string(k), expired: exp}
			c.multi.watched = append(c.multi.watched, wk)
			id := watchKey{wk.db, wk.key}
			c.s.watches.byKey[id] = append(c.s.watches.byKey[id], wk)
		}
		c.s.updateObserving()
		c.w.OK()
		return nil
	})
}

// watching reports whether the client watches key in db already.
func (c *Client) watching(db int, key []byte) bool {
	for _, wk := range c.multi.watched {
		if wk.db == db && wk.key == string(key) {
			return true
		}
	}
	return false
}

func cmdUnwatch(x *Ctx, _ [][]byte) error {
	x.c.dropWatches()
	x.W.OK()
	return nil
}

// discardMulti leaves MULTI state, dropping the queue.
func (c *Client) discardMulti() {
	c.multi.active, c.multi.failed = false, false
	c.multi.queue = nil // EXEC may still be running the old queue
	c.multiLen.Store(0)
	c.multiMem.Store(0)
}

// unwatchAll forgets the client's WATCHed keys and clears its dirty flag.
func (c *Client) unwatchAll() {
	if len(c.multi.watched) == 0 || c.s.engine == nil {
		c.multi.dirty = false
		return
	}
	c.withLock(func(*tiering.Tx) error {
		c.unwatchLocked()
		return nil
	})
}

// dropWatches is unwatchAll for DISCARD, UNWATCH and a refused EXEC,
// which Redis serves during a busy script: while a script holds the
// engine's lock, the WATCHes are dropped at once and the registry's
// entries removed by the client's next WATCH or EXEC (unwatchPending).
func (c *Client) dropWatches() {
	if _, _, busy := c.s.scripts.Busy(); busy && len(c.multi.watched) > 0 {
		c.multi.unwatchPending = true
		return
	}
	c.unwatchAll()
}

// unwatchLocked is unwatchAll for a caller that holds the engine's lock.
func (c *Client) unwatchLocked() {
	c.multi.dirty, c.multi.unwatchPending = false, false
	reg := &c.s.watches
	for _, wk := range c.multi.watched {
		id := watchKey{wk.db, wk.key}
		ws := reg.byKey[id]
		for i, x := range ws {
			if x == wk {
				ws = append(ws[:i:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(reg.byKey, id)
		} else {
			reg.byKey[id] = ws
		}
	}
	clear(c.multi.watched)
	c.multi.watched = c.multi.watched[:0]
	c.s.updateObserving()
}
