package server

import (
	"errors"

	"github.com/spillway/spillway/proxy/acl"
	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/config"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/tiering"
)

// The handler contract.
//
// A Handler executes one command (args[0] is its name). It writes its
// reply to x.W, or returns an error and writes nothing that must be kept:
//
//   - a *resp.Error (resp.Err, resp.ErrWrongType, or tiering.ErrWrongType,
//     which is translated) is Redis's error reply for the command;
//   - any other error is a storage or internal failure, replied as
//     "ERR <err>" and logged.
//
// On an error the server discards what the handler wrote of its reply and
// writes the error in its place, so a reply is always either whole or one
// error line.
//
// A handler never takes the engine's lock itself: it reads and writes the
// keyspace inside x.Update or x.View, which take the lock, run the function
// and always release it, whatever the function returns or panics with. A
// function that returns nil or a Redis error commits (a read may have
// removed expired keys); one that returns any other error aborts, so
// nothing it wrote is kept. Inside MULTI/EXEC or a script (a group), the
// functions of every command run in the group's one transaction, which the
// group commits or aborts as a whole; a handler does not need to know.
type Handler func(x *Ctx, args [][]byte) error

// Table binds command table entries (commands and subcommands) to their
// handlers. A command in cmdtable without a handler answers as Redis
// answers an unknown command. Build it once, before the server starts;
// it is read-only after.
type Table struct {
	h []Handler // indexed by the command's ID: no map lookup per command
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{h: make([]Handler, cmdtable.NumIDs())} }

// Register binds h to the command with Redis's full name ("get",
// "client|kill"). A name Redis 7.0 does not have is a programming error:
// Register panics, at wiring time, before any client connects.
func (t *Table) Register(name string, h Handler) {
	c := cmdtable.LookupFullName([]byte(name))
	if c == nil {
		panic("server: Register: no command " + name + " in the Redis 7.0 table")
	}
	t.h[c.ID()] = h
}

// Handler returns cmd's handler, or nil.
func (t *Table) Handler(cmd *cmdtable.Command) Handler { return t.h[cmd.ID()] }

// Has reports whether cmd has a handler.
func (t *Table) Has(cmd *cmdtable.Command) bool { return t.h[cmd.ID()] != nil }

// Ctx is a command's context: the client's state a handler may use, the
// reply writer and the engine, through which it takes the engine's lock.
// It is valid only during the handler's call.
type Ctx struct {
	c *Client
	// W is the reply writer, in the client's protocol (W.Proto).
	W *resp.Writer
	// nowMs is the running command's time (unix ms, from when dispatch
	// began it), the time its first transaction runs at (withLock): one
	// clock read per command, as Redis takes one time per command. 0 once
	// used, so a later transaction of the command (after a wait, a
	// block) reads the clock.
	nowMs int64
	// base is the latest command (not subcommand) the client sent
	// (dispatch.go's lookup): a pipeline of one command looks its name up
	// in the command table once.
	base *cmdtable.Command
}

// reset points x at c for one command.
func (x *Ctx) reset(c *Client) {
	x.c = c
	x.W = &c.w
}

// DB returns the client's selected database.
func (x *Ctx) DB() int { return x.c.db }

// Engine returns the tiering engine (for what needs no lock: ReadCold,
// statistics).
func (x *Ctx) Engine() *tiering.Engine { return x.c.s.engine }

// Config returns the server's settings.
func (x *Ctx) Config() *config.Config { return x.c.s.cfg }

// ColdBuffers returns the client's buffers for lock-free cold reads
// (tiering.Engine.ReadCold).
func (x *Ctx) ColdBuffers() *tiering.ColdBuffers { return &x.c.coldBufs }

// InGroup reports whether the command runs inside MULTI/EXEC or a script:
// its Update and View functions share the group's transaction, so it may
// not release the lock in between (a lock-free cold read must read under
// the lock instead) and a blocking command must not block.
func (x *Ctx) InGroup() bool { return x.c.group != nil }

// AfterUnlock runs fn once the client no longer holds the engine's lock:
// now, outside a group and a pipeline run; when the group (MULTI/EXEC, a
// script) or the run ends otherwise, after its commit. It is for what
// takes the engine's lock itself (CONFIG SET's callbacks: a new budget
// demotes), which would wait for ever on the client's own hold.
func (x *Ctx) AfterUnlock(fn func()) {
	c := x.c
	if held, _ := c.run.Held(); c.group == nil && !held {
		fn()
		return
	}
	c.afterUnlock = append(c.afterUnlock, fn)
}

// InScript reports whether the command was called by a script or a
// function (redis.call), Redis's CLIENT_SCRIPT: SORT ... BY <constant> of
// a set then sorts, so that the script's effects are deterministic. Call
// it inside Update or View (the script's client is set up under the lock).
func (x *Ctx) InScript() bool { return x.c == x.c.s.luaClient }

// Update runs fn in a transaction over the keyspace, holding the engine's
// lock for the whole call, and commits what fn wrote when it returns nil
// or a Redis error (*resp.Error, tiering.ErrWrongType); any other error
// aborts the transaction. A commit serves the clients blocked on keys fn
// filled and, under appendfsync always, makes the client wait for the
// write to be durable before its replies are sent. If fn panics, the
// transaction is aborted and the panic goes on. Update returns fn's error,
// or the commit's.
func (x *Ctx) Update(fn func(tx *tiering.Tx) error) error { return x.c.withLock(fn) }

// View is Update for a function that only reads. Reads may still write
// (an expired key found is deleted), so it commits as Update does; it
// exists so that a handler states its intent.
func (x *Ctx) View(fn func(tx *tiering.Tx) error) error { return x.Update(fn) }

// isReplyError reports whether err is a Redis error reply rather than a
// failure of the store.
func isReplyError(err error) bool {
	var re *resp.Error
	return errors.As(err, &re) || errors.Is(err, tiering.ErrWrongType)
}

// call runs h for the client's current command and writes the error it
// returns in place of its reply.
func (c *Client) call(h Handler, args [][]byte) {
	x := &c.ctx
	x.reset(c)
	c.prop = propCmd{args: args, changes: c.stat.changes} // commit.go
	if err := h(x, args); err != nil {
		c.fail(err)
	}
	if c.group != nil && c.s.repl.Active() {
		c.propEnd() // the group's unit is fed when it ends
	}
}

// fail replaces the current command's reply (from c.mark) by err's.
func (c *Client) fail(err error) {
	var re *resp.Error
	switch {
	case errors.As(err, &re):
		c.w.Truncate(min(c.mark, c.w.Len()))
		c.err(re.Msg)
	case errors.Is(err, tiering.ErrWrongType):
		c.w.Truncate(min(c.mark, c.w.Len()))
		c.err(resp.ErrWrongType.Msg)
	default:
		c.replyError(err)
	}
}

// Propagation to replicas (commit.go). Call these inside Update or View:
// what they record is fed to the replication stream before the lock is
// released. With no replica ever attached (Replicating false) they record
// nothing; a handler that must build arguments for them checks
// Replicating first, so the common case allocates nothing.

// Replicating reports whether the server records what commands propagate
// (a replica attached once). One atomic load.
func (x *Ctx) Replicating() bool { return x.c.s.repl.Active() }

// FromMaster reports whether the command comes from this replica's master
// (Redis's mustObeyClient): the master's rewritten forms are accepted as
// they are, where a client's would be refused (XADD ... MAXLEN = n LIMIT).
func (x *Ctx) FromMaster() bool { return x.c.ml != nil }

// RewriteArgs sets the form the command propagates as, when it changes
// the dataset (Redis's rewriteClientCommandVector): SET ... PXAT for SET
// EX, PEXPIREAT for EXPIRE... The arguments are kept until the command
// ends: pass memory the handler owns.
func (x *Ctx) RewriteArgs(args ...[]byte) {
	if x.Replicating() {
		x.c.prop.rewrite = args
	}
}

// Propagate records args as a command to propagate in the client's
// database, before the command's own form (Redis's alsoPropagate).
func (x *Ctx) Propagate(args ...[]byte) { x.PropagateIn(x.c.db, args...) }

// PropagateIn is Propagate in database db.
func (x *Ctx) PropagateIn(db int, args ...[]byte) {
	if x.Replicating() {
		x.c.s.prop.Add(db, args...)
	}
}

// PreventPropagation keeps the command itself from being propagated
// (Redis's preventCommandPropagation): it propagates only what it records
// with Propagate.
func (x *Ctx) PreventPropagation() { x.c.prop.prevent = true }

// ForcePropagation propagates the command even if it changed nothing
// (Redis's forceCommandPropagation: FLUSHALL, PUBLISH...).
func (x *Ctx) ForcePropagation() { x.c.prop.force = true }

// ACL returns the server's ACL users and log (the ACL command).
func (x *Ctx) ACL() *acl.Registry { return x.c.s.acl }

// User returns the user the calling client is authenticated as.
func (x *Ctx) User() *acl.User { return x.c.userOf() }

// UserChanged applies a change of u's rules (old: before it; nil if u was
// created) to its connections: their permission checks, and Pub/Sub
// clients subscribed to a channel the change took away are disconnected
// (the caller after its reply).
func (x *Ctx) UserChanged(u *acl.User, old *acl.Rules) { x.c.s.refreshACL(x.c, u, old) }

// FullKeyReadAccess reports whether the calling user may run the command
// args (the current one) with read access to every key, as Redis's
// ACLUserCheckCmdWithUnrestrictedKeyAccess (SORT's BY and GET patterns).
func (x *Ctx) FullKeyReadAccess(args [][]byte) bool {
	c := x.c
	if !c.aclOn.Load() {
		return true
	}
	cmd := cmdtable.LookupArgs(args)
	return cmd == nil || c.userOf().Rules().FullKeyAccess(cmd, args, cmdtable.KeyAccess)
}

// UsersDeleted disconnects the clients of users just removed (the caller
// after its reply).
func (x *Ctx) UsersDeleted(gone []*acl.User) { x.c.s.dropUsers(x.c, gone) }
