package server

import (
	"fmt"
	"runtime/debug"
	"strings"
	"time"
	"unsafe"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
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
	s := c.s
	s.stats.commands.Add(1)
	c.lastIO.Store(time.Now().UnixMilli())
	if c.fwd != nil && c.replyMode != replyOn {
		// Replies are truncated by position: forwarded ones must be in.
		c.fwd.Drain()
		defer c.fwd.Drain()
	}
	c.mark = c.w.Len()
	if c.replyMode == replySkipNext {
		c.replyMode = replySkipThis
	}
	c.dispatch(args)
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
}

func (c *Client) dispatch(args [][]byte) {
	base := cmdtable.Lookup(args[0])
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
	if !cmd.ArityOK(len(args)) {
		if c.fwd != nil && c.fwd.InTransaction() && c.authed {
			c.fwd.ForwardUnknown(args) // the upstream's error marks the transaction failed
			return
		}
		c.rejectInMulti("ERR wrong number of arguments for '" + cmd.Name + "' command")
		return
	}
	if c.fwd == nil {
		if msg := c.protectedRefusal(cmd); msg != "" {
			c.rejectInMulti(msg)
			return
		}
	}
	if !c.authed && !cmd.Is(cmdtable.FlagNoAuth) {
		c.rejectInMulti("NOAUTH Authentication required.")
		return
	}
	if c.subscribedContextReject(cmd) {
		return
	}
	h := c.s.table.Handler(cmd)
	if h == nil && c.fwd == nil {
		c.failMulti()
		unknownCommand(c, args)
		return
	}
	if c.fwd == nil && c.group == nil && !c.busyCheck(cmd) {
		return
	}
	// As Redis, CLIENT PAUSE holds a command before MULTI queues it, and
	// CLIENT LIST shows the command a postponed or queueing client sent.
	c.lastCmd.Store(cmd)
	if c.s.paused.Load() && !c.postponeIfPaused(c.mayWrite(cmd, args)) {
		return
	}
	if c.multi.active && !runsInMulti(cmd) {
		c.queueCommand(cmd, args)
		return
	}
	if c.fwd != nil {
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
	c.monitoredCall(cmd, h, args)
}

// err writes an error reply and counts it.
func (c *Client) err(msg string) {
	c.s.stats.errorReplies.Add(1)
	c.w.Error(msg)
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
	mark := c.mark
	if c.group != nil {
		mark = c.groupMark // the whole EXEC or script reply goes
	}
	c.group, c.groupErr = nil, nil
	aborted := c.s.engine.AbortIfHeld(c.txID)
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
