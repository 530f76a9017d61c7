package upstream

import (
	"bytes"
	"strconv"

	"github.com/spillway/spillway/proxy/cmdtable"
)

// Spillway's own commands inside an upstream transaction. MULTI is the
// upstream's: the commands it queues run there at EXEC. The commands
// Spillway answers with the server's handlers (its CLIENT, CONFIG, ACL
// and COMMAND subcommands, AUTH, REPLICAOF, SLAVEOF and FAILOVER) would
// run at once instead, out of the transaction (CLIENT PAUSE in MULTI
// would start the pause before EXEC and hold the client's own EXEC). As
// Redis, they are queued (+QUEUED) and run when EXEC runs: after the
// upstream's transaction, their replies put in the EXEC reply where they
// were queued. A DISCARD, an aborted EXEC (a null or an error reply) or a
// dropped connection runs none. The upstream never sees them: a
// restricted user's mirror there needs no right to them.

// queuedLocal is a local command queued in MULTI: it runs at EXEC, its
// reply going after the first pos replies of the upstream's.
type queuedLocal struct {
	h    localHandler
	cmd  *cmdtable.Command
	args [][]byte
	pos  int
	// before, if not nil, runs (with args) just before an EXEC that is
	// not refused is sent upstream (beforeExec): what must precede the
	// transaction's commands (REPLICAOF's disconnection of Spillway's
	// replicas). It writes no reply.
	before localHandler
}

// beforeHooks are the queued commands' before hooks, by command name.
var beforeHooks = map[string]localHandler{
	"replicaof": replicaOfBeforeExec, "slaveof": replicaOfBeforeExec, // replicaof.go
}

// queueableLocal reports whether cmd, a local command, is queued in MULTI
// by Spillway (a server handler's: queueLocal).
func (f *Front) queueableLocal(cmd *cmdtable.Command) bool {
	switch cmd.Name {
	case "hello":
		return false // the pinned connection follows HELLO: answered at once
	case "replicaof", "slaveof", "failover":
		// Run at EXEC, as on Redis: REPLICAOF's replies in order, a
		// second one to the same master "Already connected" (replicaof.go).
		return true
	case "config|set", "config|get", "config|resetstat":
		// Spillway's, then the upstream's on a control connection: queued
		// as any CONFIG in Redis's MULTI (a failing CONFIG SET is an error
		// in EXEC's reply, not a refusal that leaves the client in MULTI).
		return true
	}
	return f.monitorLocal[cmd] && !forwardedToo[cmd.Name]
}

// queueLocal queues a local command of a client in MULTI.
func (c *client) queueLocal(h localHandler, cmd *cmdtable.Command, args [][]byte) {
	cp := make([][]byte, len(args))
	for i, a := range args {
		cp[i] = bytes.Clone(a)
	}
	c.localQ = append(c.localQ, queuedLocal{h: h, cmd: cmd, args: cp, pos: c.multiQueued, before: beforeHooks[cmd.Name]})
	c.w.Simple("QUEUED")
}

// beforeExec runs the queued commands' before hooks, in queue order, just
// before the upstream's EXEC (upEndTx; not for DISCARD or a refused EXEC).
func (c *client) beforeExec() {
	for _, l := range c.localQ {
		if l.before != nil {
			l.before(c, l.args)
		}
	}
}

// runQueuedLocal runs the local commands queued in the transaction EXEC
// ended (the EXEC reply at mark: an array of the upstream's replies), and
// puts their replies in it; any other end drops them.
func (c *client) runQueuedLocal(mark int, exec bool) {
	q := c.localQ
	c.localQ, c.multiQueued = nil, 0
	if len(q) == 0 {
		return
	}
	reply := bytes.Clone(c.w.Buf[mark:])
	n, hdr, ok := arrayHeader(reply)
	if !exec || !ok || n < 0 {
		return // DISCARD, an aborted transaction, an error
	}
	elems := make([][]byte, 0, n)
	rest := reply[hdr:]
	for i := 0; i < n; i++ {
		k, ok := skipReply(rest)
		if !ok {
			return // not a reply we can split: left as it is
		}
		elems = append(elems, rest[:k])
		rest = rest[k:]
	}
	// Each local command's reply is made at the buffer's end (a failure
	// replaces only its own: server.Conn.Call), then moved into place.
	c.w.Truncate(mark)
	local := make([][]byte, len(q))
	for i, l := range q {
		l.h(c, l.args)
		local[i] = bytes.Clone(c.w.Buf[mark:])
		c.w.Truncate(mark)
		c.f.feedLocal(c, l.cmd, l.args)
	}
	c.w.Array(n + len(q))
	next := 0
	for i, l := range q {
		for ; next < l.pos && next < n; next++ {
			c.w.Raw(elems[next])
		}
		c.w.Raw(local[i])
	}
	for ; next < n; next++ {
		c.w.Raw(elems[next])
	}
}

// arrayHeader reads an array header (*N): its count (-1: a null array)
// and length.
func arrayHeader(b []byte) (n, size int, ok bool) {
	if len(b) == 0 || b[0] != '*' {
		return 0, 0, false
	}
	end := bytes.Index(b, []byte("\r\n"))
	if end < 0 {
		return 0, 0, false
	}
	n, err := strconv.Atoi(string(b[1:end]))
	return n, end + 2, err == nil
}

// skipReply returns the length of the RESP2/RESP3 reply b starts with.
func skipReply(b []byte) (int, bool) {
	end := bytes.Index(b, []byte("\r\n"))
	if end < 1 {
		return 0, false
	}
	head := end + 2
	switch b[0] {
	case '+', '-', ':', ',', '#', '_', '(':
		return head, true
	case '$', '=', '!':
		n, err := strconv.Atoi(string(b[1:end]))
		if err != nil {
			return 0, false
		}
		if n < 0 {
			return head, true
		}
		if head+n+2 > len(b) {
			return 0, false
		}
		return head + n + 2, true
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(string(b[1:end]))
		if err != nil {
			return 0, false
		}
		if b[0] == '%' || b[0] == '|' {
			n *= 2
		}
		size := head
		for i := 0; i < n; i++ {
			k, ok := skipReply(b[size:])
			if !ok {
				return 0, false
			}
			size += k
		}
		if b[0] == '|' { // an attribute: the reply it annotates follows
			k, ok := skipReply(b[size:])
			if !ok {
				return 0, false
			}
			size += k
		}
		return size, true
	}
	return 0, false
}
