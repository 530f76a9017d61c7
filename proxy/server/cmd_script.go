package server

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/spillway/spillway/codec"
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
//     busy-reply-threshold they get BUSY instead, except for the commands
//     Redis allows then (SCRIPT KILL, FUNCTION KILL, ...).
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
	return x.c.runScript(func(h script.Host) { s.scripts.Eval(h, x.W, args) })
}

func cmdFCall(x *Ctx, args [][]byte) error {
	s := x.c.s
	return x.c.runScript(func(h script.Host) { s.scripts.FCall(h, x.W, args) })
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
func (c *Client) runScript(run func(script.Host)) error {
	start := c.w.Len()
	shutdown := false
	err := c.runGroup(func(*tiering.Tx) error {
		h := c.s.scriptHost(c)
		run(h)
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
	sc *Client // the script's client
}

// scriptHost readies the server's script client for a script c runs: c's
// database and transaction. Scripts run one at a time (under the engine's
// lock), so one client serves them all.
func (s *Server) scriptHost(c *Client) *scriptHost {
	sc := s.luaClient
	if sc == nil {
		sc = &Client{s: s, id: s.nextID.Add(1), authed: true, user: "default", created: time.Now()}
		s.luaClient = sc
	}
	sc.db = c.db
	sc.group, sc.groupErr, sc.txID = c.group, nil, c.txID
	return &scriptHost{sc: sc}
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
	sc.call(handler, args)
	sc.feedMonitorsAfter(cmd, args)
	return sc.w.Buf
}

// busyCheck is run before a command while a script may be running: it
// waits for the script to end, at most until busy-reply-threshold after it
// started, and then rejects the command with BUSY unless Redis allows it
// during a busy script. It reports whether the command may run.
func (c *Client) busyCheck(cmd *cmdtable.Command) bool {
	since, function, ok := c.s.scripts.Busy()
	if !ok || cmd.Is(cmdtable.FlagAllowBusy) {
		return true
	}
	limit := c.s.cfg.BusyReplyThreshold()
	if c.s.scripts.WaitIdle(since.Add(limit)) {
		return true
	}
	if function {
		c.rejectInMulti("BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.")
	} else {
		c.rejectInMulti("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
	}
	return false
}
