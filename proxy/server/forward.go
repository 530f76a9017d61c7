package server

import (
	"sync"

	"github.com/spillway/spillway/proxy/cmdtable"
)

// The forwarding extension point.
//
// A Forwarder is a front that hands clients' commands to another server
// instead of executing them on the engine: upstream mode (package
// proxy/upstream), which fronts a real Redis. The server keeps what every
// connection has (the socket, the request parser, authentication, the
// reply buffer and CLIENT REPLY, CLIENT LIST and KILL, the table's checks
// of arity, authentication and the subscribed context) and calls the
// connection's ForwardConn at the few points where the modes differ. With
// no Forwarder (embedded mode) each of those points costs one nil check.

// Forwarder is a forwarding front. Set it with SetForwarder before Serve.
type Forwarder interface {
	// NewConn returns the front's state for a new client connection, c,
	// before the connection's first command. The server drives it through
	// its hooks from the connection's goroutine until Close.
	NewConn(c *Conn) ForwardConn
	// DefaultDB is the database new clients start in.
	DefaultDB() int
}

// ForwardConn is a forwarding front's state of one client connection.
// The server calls its methods from the connection's goroutine only.
type ForwardConn interface {
	// BeforeCommand runs before each command. It reports false when the
	// replies of commands still in flight could not be written to the
	// client: the connection is then closed without running the command.
	BeforeCommand() bool
	// Dispatch runs a command the table resolved (cmd: the subcommand
	// when there is one) once the server's checks passed: arity,
	// authentication, the subscribed context, CLIENT PAUSE. It writes the
	// command's reply, now or (for a forwarded command) by the next
	// Drain or Flush.
	Dispatch(cmd *cmdtable.Command, args [][]byte)
	// ForwardUnknown forwards a command the server would refuse itself:
	// a command or subcommand its table does not know (a newer Redis's),
	// or one with a wrong number of arguments inside a transaction
	// (InTransaction), whose error the other server gives. It is called
	// for authenticated clients only.
	ForwardUnknown(args [][]byte)
	// InTransaction reports whether the client's commands are being
	// queued by the other server (MULTI).
	InTransaction() bool
	// Drain sends the commands forwarded so far and appends their replies
	// to the reply buffer, in order. The server calls it around commands
	// whose replies CLIENT REPLY OFF or SKIP cut from the buffer by
	// position.
	Drain()
	// Flush runs first when the server sends the buffered replies.
	// unbuffered reports that the server has nothing of its own to send
	// (no buffered reply, CLIENT REPLY ON, no write awaiting durability):
	// the front may then have the replies of its forwarded commands
	// written by another goroutine and report done, and the server sends
	// nothing. Otherwise it appends them to the reply buffer (as Drain)
	// and the server sends the buffer. ok false closes the connection: a
	// reply could not be written.
	Flush(unbuffered bool) (done, ok bool)
	// WriteLock returns the mutex the front's own goroutines hold while
	// they write the client's socket (relayed Pub/Sub or MONITOR frames),
	// which the server then holds while it writes, or nil if there are
	// none.
	WriteLock() *sync.Mutex
	// Close releases what the connection holds in the front. The server
	// calls it once, when the connection ends, before closing the socket.
	Close()
}

// SetForwarder makes the server forward its clients' commands through f
// (upstream mode). Call it before Serve; nil is embedded mode. With a
// forwarder, the server publishes no keyspace notifications (the other
// server does) and SHUTDOWN does not wait on scripts.
func (s *Server) SetForwarder(f Forwarder) { s.fwd = f }

// Handler returns the handler the server's table binds to cmd, or nil: a
// front runs the server's own commands (AUTH, CLIENT, CONFIG...) through
// it with Conn.Call.
func (s *Server) Handler(cmd *cmdtable.Command) Handler { return s.table.Handler(cmd) }
