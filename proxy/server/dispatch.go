package server

import (
	"bytes"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/script"
)

// registerBuiltins adds the server's own commands to t: connection state,
// transactions, Pub/Sub, scripting, COMMAND, INFO and administration. They
// are Handlers like the command library's; those that work on the
// connection's state reach the client through x.c.
func registerBuiltins(t *Table) {
	registerConn(t)
	registerMulti(t)
	registerPubSub(t)
	registerScripting(t)
	registerCommand(t)
	registerInfo(t)
	registerAdmin(t)
	registerModule(t)
	registerTestHooks(t)
}

// unknownCommand writes Redis 7.0's reply to an unknown command: the name
// as "%.128s", then arguments as "'%.*s' " while the argument list is
// shorter than 128 bytes, each cut to what is left of those 128.
func unknownCommand(c *Client, args [][]byte) {
	var list []byte
	for _, a := range args[1:] {
		if len(list) >= cstr.MaxErrArgLen {
			break
		}
		a = cstr.CString(a)
		if room := cstr.MaxErrArgLen - len(list); len(a) > room {
			a = a[:room]
		}
		list = append(list, '\'')
		list = append(list, a...)
		list = append(list, '\'', ' ')
	}
	c.err("ERR unknown command '" + cstr.ErrArg(args[0]) + "', with args beginning with: " + string(list))
}

// execute runs one command: lookup, arity, authentication, pause, then the
// handler; it applies CLIENT REPLY's mode to the reply.
func (c *Client) execute(args [][]byte) {
	if invariants {
		defer c.checkInvariants() // runs after recoverPanic (invariants_on.go)
	}
	defer c.recoverPanic(args)
	if c.fwd != nil && !c.fwd.BeforeCommand() {
		c.quit = true
		return
	}
	start := time.Now()
	c.lastIO.Store(start.UnixMilli())
	if c.fwd != nil && c.replyMode != replyOn {
		// Replies are truncated by position: forwarded ones must be in.
		c.fwd.Drain()
		defer c.fwd.Drain()
	}
	c.mark = c.w.Len()
	if c.replyMode == replySkipNext {
		c.replyMode = replySkipThis
	}
	trackOn := c.fwd == nil && c.s.trk.Active() // tracking's one atomic load
	if trackOn {
		c.trackBefore()    // notify.go
		c.mark = c.w.Len() // its pushes are not the command's reply
	}
	c.dispatch(args, start)
	if c.fwd != nil && c.replyMode != replyOn {
		c.fwd.Drain()
	}
	switch c.replyMode {
	case replyOff:
		c.w.Truncate(c.mark)
	case replySkipThis:
		c.w.Truncate(c.mark)
		c.replyMode = replyOn
	}
	if trackOn || c.trkPending != nil {
		c.trackAfter() // invalidations are pushes: sent under CLIENT REPLY OFF
	}
}

// dispatch looks args up and runs the command; start is when it began
// (its duration counts in INFO commandstats).
func (c *Client) dispatch(args [][]byte, start time.Time) {
	c.inRun = false // set below for a command that joins the pipeline's run
	base := c.lookup(args[0])
	if base == nil && c.fwd != nil && c.authed {
		c.fwd.ForwardUnknown(args) // perhaps a newer upstream's command
		return
	}
	if base == nil {
		c.failMulti()
		unknownCommand(c, args)
		return
	}
	cmd := base
	if base.Subcommands != nil && len(args) >= 2 {
		cmd = base.Sub(args[1])
		if cmd == nil && base.Name == "client" && cstr.EqualFold(args[1], "setinfo") {
			// CLIENT SETINFO is Redis 7.2's; clients send it on connect.
			c.call(cmdClientSetInfo, args)
			return
		}
		if cmd == nil && c.fwd != nil && c.authed {
			c.fwd.ForwardUnknown(args)
			return
		}
		if cmd == nil {
			c.failMulti()
			c.err("ERR unknown subcommand '" + cstr.ErrArg(args[1]) + "'. Try " + strings.ToUpper(string(cstr.CString(args[0]))) + " HELP.")
			return
		}
	}
	if !c.s.pipelined[cmd.ID()] {
		c.endRun() // a command that may take the lock otherwise, or wait
	}
	if !cmd.ArityOK(len(args)) {
		if c.fwd != nil && c.fwd.InTransaction() && c.authed {
			c.fwd.ForwardUnknown(args) // the upstream's error marks the transaction failed
			return
		}
		c.countRejected(cmd)
		c.rejectInMulti("ERR wrong number of arguments for '" + cmd.Name + "' command")
		return
	}
	if c.fwd == nil {
		if msg := c.protectedRefusal(cmd); msg != "" {
			c.countRejected(cmd)
			c.rejectInMulti(msg)
			return
		}
	}
	if !c.authed && !cmd.Is(cmdtable.FlagNoAuth) && !defaultNeedsNoAuth(c.s.acl) {
		c.countRejected(cmd)
		c.rejectInMulti("NOAUTH Authentication required.")
		return
	}
	if c.aclOn.Load() && c.fwd == nil && !c.permitted(cmd, args) {
		return
	}
	if c.subscribedContextReject(cmd) {
		c.countRejected(cmd)
		return
	}
	h := c.s.table.Handler(cmd)
	if h == nil && c.fwd == nil {
		c.failMulti()
		unknownCommand(c, args)
		return
	}
	if c.ml != nil {
		c.lastCmd.Store(cmd) // the master client: no refusal applies
		if c.fwd != nil {
			// Upstream mode: the front applies it (proxy/upstream's
			// REPLICAOF), no refusal applying.
			c.s.stats.commands.Add(1)
			c.fwd.Dispatch(cmd, args)
			return
		}
		if c.multi.active && !runsInMulti(cmd) {
			c.queueCommand(cmd, args)
			return
		}
		c.callCounted(cmd, h, args, start)
		return
	}
	if c.fwd == nil && c.group == nil && !c.busyCheck(cmd) {
		c.countRejected(cmd)
		return
	}
	if c.preOOM = c.s.oom.Load(); c.preOOM && c.group == nil {
		c.endRun() // eviction takes the lock
		if c.s.evictPending.Load() {
			// Not during a busy script, which holds the engine's lock
			// (Redis skips eviction then too).
			if _, _, busy := c.s.scripts.Busy(); !busy {
				c.s.evictIfPending()
			}
		}
		if c.refuse(cmd, args, oomRule) {
			return
		}
	}
	// A forwarded transaction's commands are the upstream's to refuse (the
	// front makes it refuse them: proxy/upstream's oom.go); as Redis's
	// checkGoodReplicasStatus, a replica refuses nothing for this.
	if c.s.RefusesForReplicas() && c.group == nil && (c.fwd == nil || !c.fwd.InTransaction()) &&
		c.refuse(cmd, args, noReplicasRule) {
		return
	}
	// A forwarded transaction's queued commands are refused by the front
	// (which fails the transaction).
	if c.s.replica.Active() && c.group == nil && (c.fwd == nil || !c.fwd.InTransaction()) &&
		(c.refuse(cmd, args, readOnlyRule) || c.refuse(cmd, args, masterDownRule)) {
		return
	}
	if c.s.rdb.Loading() && c.refuse(cmd, args, loadingRule) {
		return
	}
	// As Redis, CLIENT PAUSE holds a command before MULTI queues it, and
	// CLIENT LIST shows the command a postponed or queueing client sent.
	c.lastCmd.Store(cmd)
	if c.s.paused.Load() {
		c.endRun() // the pause may wait
		if !c.postponeIfPaused(c.mayWrite(cmd, args)) {
			return
		}
		// Timed from when it runs, as Redis times a postponed command it
		// processes again: the pause is not its latency.
		start = time.Now()
	}
	if c.multi.active && !runsInMulti(cmd) {
		c.queueCommand(cmd, args)
		return
	}
	if c.fwd != nil {
		if c.s.fresh.n.Load() != 0 && freshWrite(cmd) {
			c.awaitFresh()
		}
		c.s.stats.commands.Add(1)
		// The front keeps MULTI's queue: note whether it holds a write,
		// for CLIENT PAUSE WRITE to hold its EXEC (mayWrite).
		inTx := c.fwd.InTransaction()
		if inTx && cmd.Name != "exec" && !c.fwdTxWrites && c.mayWrite(cmd, args) {
			c.fwdTxWrites = true
		}
		c.fwd.Dispatch(cmd, args) // upstream mode forwards MONITOR itself
		if inTx && c.fwdTxWrites && !c.fwd.InTransaction() {
			c.fwdTxWrites = false
		}
		return
	}
	if c.inRun = c.runsInPipeline(cmd); !c.inRun {
		c.endRun()
	}
	if c.awaitIfWaking(cmd, args) {
		start = time.Now() // the wait is not the command's time
	} else if c.s.fresh.n.Load() != 0 && c.group == nil && freshWrite(cmd) && c.awaitFresh() {
		start = time.Now()
	}
	c.callCounted(cmd, h, args, start)
}

// lookup returns the command named name (any case) or nil, as
// cmdtable.Lookup; the client's previous command is checked first.
func (c *Client) lookup(name []byte) *cmdtable.Command {
	if last := c.ctx.base; last != nil && len(name) == len(last.Name) && cstr.EqualFold(name, last.Name) {
		return last
	}
	base := cmdtable.Lookup(name)
	if base != nil {
		c.ctx.base = base
	}
	return base
}

// callCounted runs h for cmd, as call does (shown to monitors:
// monitoredCall), and counts it as Redis's
// call() does (INFO commandstats, total_commands_processed): one call, its
// duration since start less the time it was blocked, and a failure if it
// replied an error of its own. Errors of the commands it ran inside
// (EXEC's queue) were counted for those: Redis's prev_err_count, per
// client. The counters are the command's entry of a slice indexed by its
// ID: no map lookup, no lock, no allocation. A command at least as slow as
// the slow log's or the latency monitor's threshold is recorded there
// (noteSlow); any other pays one comparison.
func (c *Client) callCounted(cmd *cmdtable.Command, h Handler, args [][]byte, start time.Time) {
	c.stat.errMark = c.stat.errs
	c.stat.blocked, c.stat.evKey = 0, nil
	scriptErrs := c.stat.scriptErrs
	mark := c.mark // EXEC's queued commands move c.mark
	st := &c.s.info.cmds[cmd.ID()]
	c.writeLookups = st.writeLookups
	if c.trk.On() {
		c.trkCmd, c.trkArgs = cmd, args // a read remembers its keys (withLock)
	}
	c.ctx.nowMs = start.UnixMilli() // the command's time (withLock)
	c.monitoredCall(cmd, h, args)
	c.ctx.nowMs = 0
	if c.trkCmd != nil {
		c.trkCmd, c.trkArgs = nil, nil // args are the reader's: not kept
	}
	d := time.Since(start) - c.stat.blocked
	st.nanos.Add(int64(d))
	st.calls.Add(1)
	if c.s.info.latency.Load() {
		st.record(d)
	}
	if int64(d) >= c.s.watchNs.Load() { // the slow log's or the latency monitor's
		c.noteSlow(cmd, args, d)
	}
	if c.stat.errs != c.stat.errMark {
		st.failed.Add(1)
	} else if c.stat.blocked == 0 && mark < c.w.Len() && c.w.Buf[mark] == '-' {
		// An error reply the handler wrote itself: a script's (a blocked
		// command's was counted as it was handed over). It counts
		// in errorstats unless it carries the error of a command the
		// script called, counted already (as Redis's
		// ERR_REPLY_FLAG_NO_STATS_UPDATE).
		st.failed.Add(1)
		if c.stat.scriptErrs == scriptErrs {
			c.countRawError(c.w.Buf[mark:])
		}
	}
	c.stat.errMark = c.stat.errs
	c.s.stats.commands.Add(1)
}

// countRejected counts a command refused before it ran (arity,
// authentication, a busy script...): INFO commandstats' rejected_calls.
func (c *Client) countRejected(cmd *cmdtable.Command) {
	c.s.info.cmds[cmd.ID()].rejected.Add(1)
}

// A refusalRule is one of the checks Redis's processCommand makes before
// running (or queueing) a command while the server refuses some work.
type refusalRule struct {
	msg string // the error reply, without "-"
	// applies reports whether the rule refuses cmd (args as received), a
	// queued command included (EXEC is refused when one applies).
	applies func(s *Server, cmd *cmdtable.Command, args [][]byte) bool
	// inMulti: every command but EXEC, DISCARD, QUIT and RESET is refused
	// inside MULTI (queueing takes memory).
	inMulti bool
}

// oomRule: the memory budget cannot be met (Server.SetOutOfMemory):
// commands that may grow memory, and scripts that declared flags without
// allow-oom or no-writes.
var oomRule = refusalRule{msg: script.ErrOOM[1:], inMulti: true,
	applies: func(s *Server, cmd *cmdtable.Command, args [][]byte) bool {
		return cmd.Is(cmdtable.FlagDenyOOM) || isScriptCall(cmd) && s.scripts.DenyOOM(args)
	}}

// noReplicasRule: min-replicas-to-write asks for more good replicas than
// there are (Spillway has none): write commands, and scripts that
// declared flags without no-writes.
var noReplicasRule = refusalRule{msg: errNoReplicas[1:],
	applies: func(s *Server, cmd *cmdtable.Command, args [][]byte) bool {
		if isScriptCall(cmd) {
			_, w := s.scripts.DeclaredWrites(args)
			return w
		}
		return cmd.Is(cmdtable.FlagWrite)
	}}

// readOnlyRule: a replica under replica-read-only refuses writes (and
// scripts that declared flags without no-writes) from every client but
// its master.
var readOnlyRule = refusalRule{msg: "READONLY You can't write against a read only replica.",
	applies: func(s *Server, cmd *cmdtable.Command, args [][]byte) bool {
		return s.configValue("replica-read-only") == "yes" && noReplicasRule.applies(s, cmd, args)
	}}

// masterDownRule: a replica whose link is not up, under
// replica-serve-stale-data no, refuses the commands without the stale flag.
var masterDownRule = refusalRule{
	msg: "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
	applies: func(s *Server, cmd *cmdtable.Command, args [][]byte) bool {
		if s.replica.LinkUp() || s.configValue("replica-serve-stale-data") != "no" {
			return false
		}
		if isScriptCall(cmd) {
			return !s.scripts.AllowStale(args) // a script runs only if it declared allow-stale
		}
		return !cmd.Is(cmdtable.FlagStale)
	}}

// errNoReplicas is Redis's reply to a write without enough good replicas.
const errNoReplicas = "-NOREPLICAS Not enough good replicas to write."

// refuse applies rule to cmd and reports whether it refused it, as Redis's
// rejectCommand does: EXEC of a transaction holding a refused command
// answers EXECABORT and drops it; any other refusal inside MULTI fails the
// transaction.
func (c *Client) refuse(cmd *cmdtable.Command, args [][]byte, rule refusalRule) bool {
	deny := rule.applies(c.s, cmd, args)
	switch cmd.Name {
	case "exec":
		for _, q := range c.multi.queue {
			deny = deny || rule.applies(c.s, q.cmd, q.args)
		}
	case "discard", "quit", "reset":
	default:
		deny = deny || rule.inMulti && c.multi.active
	}
	if !deny {
		return false
	}
	c.countRejected(cmd)
	if cmd.Name == "exec" {
		c.abortExec(rule.msg)
	} else {
		c.rejectInMulti(rule.msg)
	}
	return true
}

// updateNoReplicas follows min-replicas-to-write and min-replicas-max-lag
// (and, once a second, the replicas' ACKs: repl.Master's OnTick): writes
// are refused while fewer replicas than asked acknowledged within the max
// lag (Redis's checkGoodReplicasStatus; a max lag of 0 turns it off).
func (s *Server) updateNoReplicas(string) {
	nv, _ := s.cfg.Value("min-replicas-to-write")
	lv, _ := s.cfg.Value("min-replicas-max-lag")
	n, _ := strconv.Atoi(nv)
	lag, _ := strconv.ParseInt(lv, 10, 64)
	refuse := n > 0 && lag > 0 && s.repl.GoodReplicas(lag) < n
	if s.noReplicas.Swap(refuse) != refuse {
		if fn := s.noReplicasHook.Load(); fn != nil {
			(*fn)()
		}
	}
}

// RefusesForReplicas reports whether writes are refused with NOREPLICAS
// now: min-replicas-to-write asks for more good replicas than Spillway has
// (its own replicas), and Spillway is not a replica itself.
func (s *Server) RefusesForReplicas() bool {
	return s.noReplicas.Load() && !s.replica.Active()
}

// OnNoReplicasChange sets fn, called (on the goroutine that noticed it: a
// CONFIG SET's, or the replication tick's, so fn must not block) each time
// the min-replicas-to-write condition changes.
func (s *Server) OnNoReplicasChange(fn func()) { s.noReplicasHook.Store(&fn) }

// err writes an error reply and counts it (INFO errorstats,
// total_error_replies, and the running command's failure).
func (c *Client) err(msg string) {
	c.s.countError(msg)
	c.stat.errs++
	c.w.Error(msg)
}

// countRawError counts an error reply written as raw RESP (a blocked
// client's, handed over by the client that served or unblocked it).
func (c *Client) countRawError(reply []byte) {
	if len(reply) > 2 && reply[0] == '-' {
		end := bytes.IndexByte(reply, '\r')
		if end < 0 {
			end = len(reply)
		}
		c.s.countError(string(reply[1:end]))
		c.stat.errs++
	}
}

// recoverPanic turns a panic in a command (a bug) into an error reply and
// a closed connection instead of a dead server: the transaction the
// command held is aborted (nothing it wrote is kept; the hot tier is
// rebuilt from the store) and the panic is logged with its stack.
func (c *Client) recoverPanic(args [][]byte) {
	r := recover()
	if r == nil {
		return
	}
	c.ctx.nowMs = 0 // the command's time is not another's
	mark := c.mark
	if c.group != nil {
		mark = c.groupMark // the whole EXEC or script reply goes
	}
	c.group, c.groupErr = nil, nil
	aborted := c.s.engine.AbortIfHeld(c.txID)
	c.endRun()
	c.s.log.Error("command panicked; its transaction was aborted and the connection is closed",
		"client", c.id, "command", cstr.ErrArg(args[0]), "panic", fmt.Sprint(r), "aborted", aborted,
		"stack", string(debug.Stack()))
	c.w.Truncate(min(mark, c.w.Len()))
	c.err("ERR internal error; see the server log")
	c.quit = true
}

// errWrongType is the reply to a command on a key of another type.
const errWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// bytesOfString returns s's bytes without copying; they must not be
// modified.
func bytesOfString(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// freshWrite reports whether cmd waits for fresh clients' input before it
// runs (awaitFresh): a write or EXEC that does not block. A blocking
// command waits for others itself when it is about to block (awaitOthers),
// in the order the commands were read.
func freshWrite(cmd *cmdtable.Command) bool {
	return (cmd.Is(cmdtable.FlagWrite) || cmd.Name == "exec") && !cmd.Is(cmdtable.FlagBlocking)
}
