package server

import (
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/proxy/acl"
	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/script"
	"github.com/spillway/spillway/tiering"
)

// Scripting (EVAL family, SCRIPT, FUNCTION, FCALL) in embedded mode. The
// Lua side lives in package script; this file runs it atomically:
//
//   - A script runs as a group (commit.go): the caller holds the engine's
//     lock from the script's start to its end, and every redis.call runs in
//     that one transaction, whichever tier the keys are in. A script inside
//     MULTI joins EXEC's group.
//   - redis.call runs the command as the script's client: a client of its
//     own whose database starts as the caller's (SELECT in a script does not
//     change the caller's, as in Redis 7.0) and whose replies are captured.
//   - Other clients wait while a script runs; once it has run for
//     busy-reply-threshold they get BUSY instead (EXEC gets EXECABORT and
//     ends the transaction, a command queued in MULTI fails it), except for
//     the commands Redis allows then (SCRIPT KILL, FUNCTION KILL, MULTI,
//     DISCARD, WATCH, UNWATCH, RESET, ...), which must not wait for the
//     engine's lock the script holds: WATCH is queued (busyWatches) and
//     dropped WATCHes are removed later (dropWatches, multi.go).
//   - FUNCTION libraries are stored with the command that changed them (in
//     its batch) and loaded at start.

func registerScripting(t *Table) {
	for _, name := range []string{"eval", "evalsha", "eval_ro", "evalsha_ro"} {
		t.Register(name, cmdEval)
	}
	t.Register("fcall", cmdFCall)
	t.Register("fcall_ro", cmdFCall)
	for _, name := range []string{"script|load", "script|exists", "script|flush", "script|kill",
		"script|help", "script|debug"} {
		t.Register(name, cmdScript)
	}
	for _, name := range []string{"function|load", "function|delete", "function|flush", "function|restore"} {
		t.Register(name, cmdFunction)
	}
	// These change nothing; FUNCTION STATS and KILL run while a script is
	// busy, so they must not wait for the engine's lock.
	for _, name := range []string{"function|list", "function|dump", "function|stats", "function|kill",
		"function|help"} {
		t.Register(name, cmdFunctionReadOnly)
	}
}

// The scripting handlers write their own error replies (package script
// writes them, and the errors a script raises, into the reply); only a
// storage error that fails the script's transaction is returned.

func cmdEval(x *Ctx, args [][]byte) error {
	s := x.c.s
	return x.c.runScript(args, func(h script.Host) { s.scripts.Eval(h, x.W, args) })
}

func cmdFCall(x *Ctx, args [][]byte) error {
	s := x.c.s
	return x.c.runScript(args, func(h script.Host) { s.scripts.FCall(h, x.W, args) })
}

func cmdScript(x *Ctx, args [][]byte) error {
	x.c.s.scripts.Script(x.W, args)
	return nil
}

// cmdFunctionReadOnly runs a FUNCTION subcommand that changes nothing,
// without the engine's lock.
func cmdFunctionReadOnly(x *Ctx, args [][]byte) error {
	x.c.s.scripts.Function(x.W, args)
	return nil
}

// cmdFunction runs a FUNCTION subcommand; one that changed the libraries
// stores them in the same transaction.
func cmdFunction(x *Ctx, args [][]byte) error {
	s := x.c.s
	return x.Update(func(tx *tiering.Tx) error {
		if !s.scripts.Function(x.W, args) {
			return nil
		}
		x.ForcePropagation() // a change of the libraries replicates as is
		return tx.PutSystem(codec.SysFunctions, s.scripts.Libraries())
	})
}

// loadFunctions loads the stored FUNCTION libraries (at start).
func (s *Server) loadFunctions() error {
	payload, ok, err := s.engine.SystemRecord(codec.SysFunctions)
	if err != nil || !ok {
		return err
	}
	if err := s.scripts.LoadLibraries(payload); err != nil {
		return fmt.Errorf("load stored FUNCTION libraries: %w", err)
	}
	return nil
}

// runScript runs a script as a group: in its own transaction, or in the
// one EXEC holds. It returns the storage error that failed the group (the
// caller's reply is replaced by it), or nil: the script's reply is
// written, or, if SHUTDOWN NOSAVE killed the script, no reply at all and
// the connection closes.
func (c *Client) runScript(args [][]byte, run func(script.Host)) error {
	start := c.w.Len()
	shutdown := false
	err := c.runGroup(func(tx *tiering.Tx) error {
		busy := &c.s.watches.busy
		busy.begin()
		ended := false
		defer func() {
			if !ended { // a panic: fail the WATCHes made meanwhile
				busy.end(c.s, nil)
			}
		}()
		h := c.s.scriptHost(c)
		h.args = args
		run(h)
		busy.end(c.s, tx)
		ended = true
		err := h.sc.groupErr
		h.sc.group, h.sc.groupErr = nil, nil
		shutdown = c.s.abortScript.CompareAndSwap(true, false)
		if shutdown && err == nil {
			err = errScriptAborted
		}
		return err
	})
	if err == nil {
		return nil
	}
	c.w.Truncate(start)
	c.mark = start
	if shutdown {
		// The server is going away: as Redis, the caller gets no reply.
		c.quit = true
		return nil
	}
	return err // a storage failure (runGroup's errors are never Redis errors)
}

// errScriptAborted fails the group of a script SHUTDOWN NOSAVE killed.
var errScriptAborted = errors.New("script killed by SHUTDOWN NOSAVE; its writes were discarded")

// scriptHost runs a script's redis.call commands (script.Host).
type scriptHost struct {
	sc     *Client  // the script's client
	caller *Client  // the client running the script
	args   [][]byte // the caller's command (EVAL, FCALL...)
}

// scriptHost readies the server's script client for a script c runs: c's
// database and transaction. Scripts run one at a time (under the engine's
// lock), so one client and one host serve them all.
func (s *Server) scriptHost(c *Client) *scriptHost {
	sc := s.luaClient
	if sc == nil {
		sc = &Client{s: s, id: s.nextID.Add(1), authed: true, user: s.acl.Default(), created: time.Now()}
		s.luaClient = sc
	}
	sc.db = c.db
	// As Redis, the script's commands run as the caller's user.
	sc.mu.Lock()
	sc.user = c.userOf()
	sc.mu.Unlock()
	sc.aclOn.Store(c.aclOn.Load())
	sc.group, sc.groupErr, sc.txID = c.group, nil, c.txID
	h := &s.luaHost // one script runs at a time: no allocation per script
	*h = scriptHost{sc: sc, caller: c}
	return h
}

// OutOfMemory implements script.Host: the server's memory state when the
// caller's command started.
func (h *scriptHost) OutOfMemory() bool { return h.caller.preOOM }

// Rejected implements script.Host: a call the script's checks refused
// counts as Redis's scriptCall counts it (the command's rejected_calls,
// the error's errorstat), and the script's error reply, which carries it,
// is not counted again (callCounted).
func (h *scriptHost) Rejected(cmd *cmdtable.Command, msg string) {
	if cmd != nil {
		h.sc.countRejected(cmd)
	}
	if strings.HasPrefix(msg, "-") {
		msg = msg[1:]
	} else {
		msg = "ERR " + msg
	}
	h.sc.s.countError(msg)
	h.caller.stat.scriptErrs++
}

// ACLCheck implements script.Host: the call against the permissions of
// the caller's user; a refusal logged is in the lua context and names
// the caller's client.
func (h *scriptHost) ACLCheck(cmd *cmdtable.Command, args [][]byte, log bool) string {
	c := h.caller
	if !c.aclOn.Load() {
		return ""
	}
	reason, pos := c.userOf().Rules().Check(cmd, args)
	if reason == acl.OK {
		return ""
	}
	if log {
		c.logDenial(c, reason, acl.CtxLua, denialObject(reason, cmd, args, pos), "", h.args)
	}
	return "The user executing the script " + reason.Message()
}

// WriteRefusal implements script.Host: READONLY on a read-only replica
// (but for its master client), NOREPLICAS while min-replicas-to-write
// cannot be met.
func (h *scriptHost) WriteRefusal() string {
	if s := h.sc.s; s.replica.Active() && h.caller.ml == nil && s.configValue("replica-read-only") == "yes" {
		return "-" + readOnlyRule.msg
	}
	if h.sc.s.RefusesForReplicas() {
		return errNoReplicas
	}
	return ""
}

// Call implements script.Host: it runs args as the script's client and
// returns the reply. A panicking command fails the script's group (its
// writes are aborted) and replies an error to the script.
func (h *scriptHost) Call(cmd *cmdtable.Command, args [][]byte, proto int) (reply []byte) {
	sc := h.sc
	sc.w.Proto = proto
	sc.w.Reset()
	sc.mark = 0
	handler := sc.s.table.Handler(cmd)
	if handler == nil {
		sc.err("ERR unknown command '" + cstr.ErrArg(args[0]) + "'")
		return sc.w.Buf
	}
	defer func() {
		if r := recover(); r != nil {
			sc.s.log.Error("command called by a script panicked; the script's transaction will be aborted",
				"command", cstr.ErrArg(args[0]), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			if sc.groupErr == nil {
				sc.groupErr = fmt.Errorf("internal error in %s called by a script; see the server log", cmd.Name)
			}
			sc.w.Reset()
			sc.err("ERR internal error; see the server log")
			reply = sc.w.Buf
		}
	}()
	sc.lastCmd.Store(cmd)
	errs := sc.stat.errs
	sc.callCounted(cmd, handler, args, time.Now())
	h.caller.stat.scriptErrs += sc.stat.errs - errs // counted already (callCounted)
	if cl := h.caller; cl.trk.On() && cl.trkCmd != nil && cmd.Is(cmdtable.FlagReadonly) {
		cl.rememberKeys(cl.trkCmd, cl.trkArgs) // a read: the script's declared keys
	}
	return sc.w.Buf
}

// busyCheck is run before a command while a script may be running: it
// waits for the script to end, at most until busy-reply-threshold after it
// started, and then rejects the command with BUSY unless Redis allows it
// during a busy script (EXEC then aborts the transaction, as in Redis). It
// reports whether the command may run.
func (c *Client) busyCheck(cmd *cmdtable.Command) bool {
	since, function, ok := c.s.scripts.Busy()
	if !ok || cmd.Is(cmdtable.FlagAllowBusy) {
		return true
	}
	limit := c.s.cfg.BusyReplyThreshold()
	if c.s.scripts.WaitIdle(since.Add(limit)) {
		return true
	}
	msg := "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	if function {
		msg = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	}
	if cmd.Name == "exec" {
		c.abortExec(msg)
	} else {
		c.rejectInMulti(msg)
	}
	return false
}

// busyWatches are the WATCHes made while a script, past
// busy-reply-threshold, holds the engine's lock: Redis serves WATCH then,
// and the script's later writes to the key fail the watcher's EXEC. The
// registry is the lock's, so such a WATCH is queued here (with its own
// mutex), the script's key events mark the queued keys modified, and the
// script's end, still under the lock, moves them into the registry.
type busyWatches struct {
	mu      sync.Mutex
	open    bool // a script holds the engine's lock
	pending []*busyWatch
	n       atomic.Int32 // len(pending), for keyEvent's fast path
}

type busyWatch struct {
	wk       *watchedKey
	modified bool // the script wrote or deleted the key after the WATCH
}

// begin marks a script's start (the caller holds the engine's lock).
func (b *busyWatches) begin() {
	b.mu.Lock()
	b.open = true
	b.mu.Unlock()
}

// queue records c's WATCH of keys in db while a busy script runs; it
// reports false, queueing nothing, when no script holds the lock (any
// more).
func (b *busyWatches) queue(s *Server, c *Client, keys [][]byte) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.open {
		return false
	}
	for _, k := range keys {
		if c.watching(c.db, k) {
			continue
		}
		wk := &watchedKey{c: c, db: c.db, key: string(k)}
		c.multi.watched = append(c.multi.watched, wk)
		b.pending = append(b.pending, &busyWatch{wk: wk})
	}
	b.n.Store(int32(len(b.pending)))
	s.engine.SetObserving(true) // the script's key events are needed now
	return true
}

// touched marks the queued WATCHes of key modified (from keyEvent, under
// the engine's lock).
func (b *busyWatches) touched(db int, key []byte) {
	b.mu.Lock()
	for _, p := range b.pending {
		if p.wk.db == db && p.wk.key == string(key) {
			p.modified = true
		}
	}
	b.mu.Unlock()
}

// touchedDB marks modified the queued WATCHes of keys stored in db, or in
// replacedWith (>= 0), which a FLUSHDB, FLUSHALL or SWAPDB the script runs
// is about to remove or replace (the caller holds the engine's lock).
func (b *busyWatches) touchedDB(tx *tiering.Tx, db, replacedWith int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.pending {
		if p.wk.db != db || p.modified {
			continue
		}
		key := []byte(p.wk.key)
		stored, err := tx.KeyStored(db, key)
		if err == nil && !stored && replacedWith >= 0 {
			stored, err = tx.KeyStored(replacedWith, key)
		}
		if err != nil {
			return err
		}
		p.modified = stored
	}
	return nil
}

// end moves the queued WATCHes into the registry at the script's end (the
// caller holds the engine's lock; tx is nil after a panic, when every
// watcher is failed rather than trusted).
func (b *busyWatches) end(s *Server, tx *tiering.Tx) {
	b.mu.Lock()
	pending := b.pending
	b.open, b.pending = false, nil
	b.n.Store(0)
	b.mu.Unlock()
	if len(pending) == 0 {
		return
	}
	for _, p := range pending {
		wk := p.wk
		if tx != nil {
			// Whether the key had expired: as of now rather than of the
			// WATCH, which is the same unless the script touched it.
			exp, err := tx.KeyExpiredNow(wk.db, []byte(wk.key))
			wk.expired = exp && err == nil
		}
		if p.modified || tx == nil {
			wk.c.multi.dirty = true
		}
		id := watchKey{wk.db, wk.key}
		s.watches.byKey[id] = append(s.watches.byKey[id], wk)
	}
	s.updateObserving()
}

// watchDuringBusy serves WATCH while a script has run past
// busy-reply-threshold (Redis serves it then) without waiting for the
// engine's lock; it reports false when the WATCH must take the lock as
// usual (no busy script, or WATCHes dropped earlier still to be removed).
func (c *Client) watchDuringBusy(keys [][]byte) bool {
	since, _, busy := c.s.scripts.Busy()
	if !busy || c.multi.unwatchPending || time.Since(since) < c.s.cfg.BusyReplyThreshold() {
		return false
	}
	if !c.s.watches.busy.queue(c.s, c, keys) {
		return false
	}
	c.w.OK()
	return true
}
