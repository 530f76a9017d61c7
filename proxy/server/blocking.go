package server

import (
	"errors"
	"math"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/rawio"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/tiering"
)

// Blocking pops (BLPOP, BRPOP, BLMPOP, BLMOVE, BRPOPLPUSH, BZPOPMIN,
// BZPOPMAX, BZMPOP).
//
// A client whose keys are all empty registers a waiter while it still
// holds the engine's lock, so no push can slip between its check and its
// registration. A transaction that creates a list or a sorted set notes
// the key as ready (tiering.Tx.TakeReady); before it commits, the pushing
// client serves the
// waiters of every ready key in the order they blocked, inside the same
// transaction: the pops are atomic with the push, as in Redis, where a
// served client gets its element before any other command runs. The
// waiter's reply is built in its own protocol and handed to its goroutine
// once the transaction has committed.
//
// A blocked client's goroutine sleeps on a channel (no CPU), its timer,
// and a reader goroutine that notices a disconnect at once (and keeps any
// commands the client pipelines meanwhile for later): a client that goes
// away leaves the registry immediately, so a push is never handed to it.

// PopOp is what a blocked client waits to do: pop from key (database db)
// within tx, writing the reply to w and publishing the keyspace events
// through ev. It reports false, having written nothing, when key holds
// nothing to pop; ErrWrongType when it holds another type.
type PopOp interface {
	Run(ev Events, tx *tiering.Tx, db int, key []byte, w *resp.Writer) (bool, error)
}

// IndependentOp is a PopOp whose waiters do not all want the same thing
// (a stream reader waits for entries after its own ID, or for its group):
// when one cannot be served, the next on the key is still tried.
type IndependentOp interface {
	PopOp
	Independent()
}

// waiterState is where a waiter is in its life.
type waiterState uint8

const (
	waiting   waiterState = iota
	served                // popped for; reply ready, delivered after commit
	cancelled             // timed out, unblocked or disconnected
)

// waiter is one blocked client.
type waiter struct {
	c     *Client
	db    int
	keys  [][]byte // distinct, copied
	op    PopOp
	proto int
	state waiterState
	reply []byte
	done  chan struct{} // closed when reply is final
}

type blockKey struct {
	db  int
	key string
}

// blockRegistry holds the blocked clients. Lock order: the engine's lock,
// then mu.
type blockRegistry struct {
	engine *tiering.Engine
	// n is how many clients are blocked: read without mu.
	n        atomic.Int32
	mu       sync.Mutex
	byKey    map[blockKey][]*waiter // FIFO per key
	byClient map[int64]*waiter
}

func newBlockRegistry(e *tiering.Engine) *blockRegistry {
	return &blockRegistry{engine: e, byKey: map[blockKey][]*waiter{}, byClient: map[int64]*waiter{}}
}

// add registers w on its keys. The caller holds the engine's lock.
func (r *blockRegistry) add(w *waiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range w.keys {
		bk := blockKey{w.db, string(k)}
		r.byKey[bk] = append(r.byKey[bk], w)
	}
	r.byClient[w.c.id] = w
	w.c.blocked.Store(true)
	r.n.Add(1)
	r.engine.AddBlockedClients(1)
}

// removeLocked takes w out of the registry.
func (r *blockRegistry) removeLocked(w *waiter) {
	for _, k := range w.keys {
		bk := blockKey{w.db, string(k)}
		q := r.byKey[bk]
		for i, x := range q {
			if x == w {
				q = append(q[:i:i], q[i+1:]...)
				break
			}
		}
		if len(q) == 0 {
			delete(r.byKey, bk)
		} else {
			r.byKey[bk] = q
		}
	}
	delete(r.byClient, w.c.id)
	w.c.blocked.Store(false)
	r.n.Add(-1)
	r.engine.AddBlockedClients(-1)
}

// cancel ends w's wait with reply (nil: the timeout reply) unless it was
// served or cancelled already. It reports whether it cancelled.
func (r *blockRegistry) cancel(w *waiter, reply []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.state != waiting {
		return false
	}
	r.removeLocked(w)
	if reply == nil {
		rw := resp.Writer{Proto: w.proto}
		rw.NullArray()
		reply = rw.Buf
	}
	w.state, w.reply = cancelled, reply
	close(w.done)
	return true
}

// unblock is CLIENT UNBLOCK: it ends client id's wait with the timeout
// reply, or with an error if withError. It reports whether id was blocked.
func (r *blockRegistry) unblock(id int64, withError bool) bool {
	r.mu.Lock()
	w := r.byClient[id]
	r.mu.Unlock()
	if w == nil {
		return false
	}
	var reply []byte
	if withError {
		rw := resp.Writer{Proto: w.proto}
		rw.Error("UNBLOCKED client unblocked via CLIENT UNBLOCK")
		reply = rw.Buf
	}
	return r.cancel(w, reply)
}

// count returns the number of blocked clients.
func (r *blockRegistry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byClient)
}

// noteBlockedKeys marks every key clients wait on in the given logical
// databases as ready (SWAPDB changed what they hold).
func (r *blockRegistry) noteBlockedKeys(tx *tiering.Tx, dbs ...int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for bk := range r.byKey {
		for _, db := range dbs {
			if bk.db == db {
				tx.NoteReady(db, []byte(bk.key))
			}
		}
	}
}

// serveReadyFrom serves, within tx, the waiters of the keys tx made ready,
// in the order they blocked, while the keys hold elements; pushes made by
// serving (BLMOVE) make further keys ready. It returns the waiters served;
// their replies are delivered by deliver once tx has committed. from is
// the client whose command (or EXEC) made the keys ready, calling in its
// goroutine once its reply is written: if it subscribes to the pops'
// keyspace events, they come after that reply, as in Redis.
func (r *blockRegistry) serveReadyFrom(from *Client, tx *tiering.Tx) []*waiter {
	ready := tx.TakeReady()
	if len(ready) == 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*waiter
	for len(ready) > 0 {
		rk := ready[0]
		ready = ready[1:]
		bk := blockKey{rk.DB, string(rk.Key)}
		for i := 0; i < len(r.byKey[bk]); {
			w := r.byKey[bk][i]
			rw := resp.Writer{Proto: w.proto}
			// The events of the served client's pop go to from's reply
			// buffer if from subscribes to them (this is its goroutine).
			s := w.c.s
			s.trkCur = w.c // its invalidations follow its reply
			done, err := w.op.Run(Events{s: s, from: from}, tx, rk.DB, rk.Key, &rw)
			if s.repl.Active() {
				s.propFlush(nil) // the served pop is a unit of its own (commit.go)
			}
			s.trkCur = from
			if errors.Is(err, tiering.ErrWrongType) {
				i++ // waits for another type: the next waiter may want this one
				continue
			}
			if err == nil && !done {
				if _, ok := w.op.(IndependentOp); ok {
					i++ // stream readers wait for different IDs: try the next
					continue
				}
				break // nothing to pop there (any more)
			}
			if err != nil {
				rw.Reset()
				rw.Error("ERR " + err.Error())
			}
			for _, k := range w.c.trkPending {
				s.sendTracking(w.c, &rw, w.c.trk, [][]byte{k}, k == nil)
			}
			w.c.trkPending = nil
			r.removeLocked(w)
			w.state, w.reply = served, rw.Buf
			out = append(out, w)
			ready = append(ready, tx.TakeReady()...)
		}
	}
	return out
}

// deliver hands served waiters their replies after the commit; if the
// commit failed, they get its error instead (nothing was popped).
func deliver(ws []*waiter, commitErr error) {
	for _, w := range ws {
		if commitErr != nil {
			rw := resp.Writer{Proto: w.proto}
			rw.Error("ERR " + commitErr.Error())
			w.reply = rw.Buf
		}
		close(w.done)
	}
}

// maxBlockedInput bounds what a blocked client may pipeline while it
// waits (Redis's default client-query-buffer-limit).
const maxBlockedInput = 1 << 30

// block waits until w is served, times out (timeoutMs > 0), is unblocked,
// or the client disconnects, then appends w's reply to the client's
// output. It reports false if the connection is gone.
func (c *Client) block(w *waiter, timeoutMs int64) bool {
	reg := c.s.blocking
	if !c.flush() {
		reg.cancel(w, nil)
		<-w.done
		return false
	}
	c.mark = c.w.Len() // the flush sent what came before this reply
	var timer <-chan time.Time
	// A timeout too long for a time.Duration (292 years) never fires.
	if timeoutMs > 0 && timeoutMs < math.MaxInt64/int64(time.Millisecond) {
		t := time.NewTimer(time.Duration(timeoutMs) * time.Millisecond)
		defer t.Stop()
		timer = t.C
	}
	gone, exited := make(chan struct{}), make(chan struct{})
	c.startWatch(gone, exited)
	alive := true
	blockedAt := time.Now()
	select {
	case <-w.done:
	case <-timer:
		reg.cancel(w, nil)
	case <-gone:
		reg.cancel(w, nil)
		alive = false
	}
	<-w.done
	c.nc.SetReadDeadline(time.Now()) // stops the watcher
	<-exited
	c.nc.SetReadDeadline(time.Time{})
	c.stat.blocked += time.Since(blockedAt) // not the command's own time
	c.countRawError(w.reply)
	c.in.armed = false // serve sets the idle deadline again
	c.w.Raw(w.reply)
	return alive
}

// startWatch starts watchConn (the client's goroutine): it ends the
// client's open read, which the watcher's reads would wait for, and
// clears the read deadline.
func (c *Client) startWatch(gone, exited chan struct{}) {
	c.releaseRead()
	c.nc.SetReadDeadline(time.Time{})
	go c.watchConn(gone, exited)
}

// watchConn reads the connection while its client is blocked, keeping
// what arrives for later, and closes gone if the connection fails or
// closes. It returns when the read deadline passes (block stops it).
func (c *Client) watchConn(gone, exited chan struct{}) {
	defer close(exited)
	buf := make([]byte, 4096)
	for {
		n, err := c.nc.Read(buf)
		c.src.pending = append(c.src.pending, buf[:n]...)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				close(gone)
			}
			return
		}
		if len(c.src.pending) > maxBlockedInput {
			c.s.log.Warn("blocked client sent too much; closing it", "client", c.id)
			c.nc.Close()
		}
	}
}

// connSource is the connection as the request parser reads it: what a
// blocked client sent while it waited first, then the socket.
type connSource struct {
	nc      net.Conn
	raw     *rawio.Conn // nc's raw reads (nil: read nc)
	pending []byte
	in      *atomic.Int64 // counts the bytes read (INFO total_net_input_bytes)

	// rc peeks at the socket for input not read yet (nil: no descriptor);
	// peekMu guards peekFn's result and buffer.
	rc      syscall.RawConn
	peekFn  func(fd uintptr)
	peekMu  sync.Mutex
	peeked  bool
	peekBuf [1]byte
	// readAt is when the last read returned input (nanoseconds on the
	// monotonic clock since epoch; the client's goroutine only).
	readAt int64
	// ticket is nonzero while the client waits for others' input
	// (awaitOthers, awaitSubscribers): readAt+1, when its command was read,
	// its place in line among the clients waiting so (see inputPending).
	ticket atomic.Int64
	// ran is raw's read count (ReadState) when the client last had run
	// every command it read: while it is unchanged, the client is only
	// sending replies (inputPending).
	ran atomic.Uint64
}

// epoch is the origin of readAt.
var epoch = time.Now()

// await starts a wait for others' input and returns its ticket; done ends
// it.
func (s *connSource) await() int64 {
	t := s.readAt + 1
	s.ticket.Store(t)
	return t
}

func (s *connSource) done() { s.ticket.Store(0) }

// newConnSource returns the source of a connection (raw nil: read nc).
func newConnSource(nc net.Conn, raw *rawio.Conn) *connSource {
	s := &connSource{nc: nc, raw: raw}
	if sc, ok := nc.(syscall.Conn); ok && raw != nil {
		if rc, err := sc.SyscallConn(); err == nil {
			s.rc = rc
			s.peekFn = s.peek
		}
	}
	return s
}

// peek is rc.Control's function: it sets peeked if the socket holds
// input the client has not read.
func (s *connSource) peek(fd uintptr) {
	n, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&s.peekBuf[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	s.peeked = e == 0 && n > 0
}

// Ordering across connections. Redis runs commands one at a time, in the
// order their bytes reach it: a client that sends UNSUBSCRIBE on one
// connection, then PUBLISH on another, reaches nobody; two BLPOPs sent one
// after the other on two connections are served in that order. Here each
// connection runs in its own goroutine, and a command can run before
// another whose bytes arrived first has even been read. So the commands
// whose outcome depends on that order wait, before they act, until the
// clients concerned have run the input they have: a PUBLISH waits for its
// recipients (awaitSubscribers), a client about to block for the other
// clients (awaitOthers). Each wait is bounded by orderWaitMax; a client
// running a slow command delays them (as in Redis, where it delays every
// command).
const (
	orderWaitMax  = 50 * time.Millisecond
	orderWaitPoll = 50 * time.Microsecond
	// orderWaitClients is the most clients a blocking client waits for:
	// with more connected, it does not wait.
	orderWaitClients = 64
)

// inputPending reports whether the client has sent commands it has not
// run yet, for a client waiting with ticket and rank id (a fresh
// client's is negative: it does not wait for a writer deferring to fresh
// clients, awaitFresh): it is not waiting for input (it is running what
// it read; with replying, a client that has run all it read and only
// sends its replies or forwards its batch does not count), or its socket
// holds input it has not read. A client waiting for others itself (ticket) counts if it goes
// first (goesFirst against ticket and id, the waiting client's), not
// otherwise (no two clients wait for each other). A blocked client and a connection without a descriptor (a
// pipe in a test) report false.
func (c *Client) inputPending(ticket, id int64, replying bool) bool {
	s := c.src
	if s.rc == nil || c.blocked.Load() || c.killed.Load() || id < 0 && c.deferring.Load() {
		return false
	}
	if t := s.ticket.Load(); t != 0 {
		// A writer deferring to fresh clients waits for none but them:
		// an asker that is not fresh never waits in return.
		return id >= 0 && c.deferring.Load() || goesFirst(t, c.orderID(), ticket, id)
	}
	reads, waiting := s.raw.ReadState()
	ran := replying && reads == s.ran.Load()
	if !waiting && !ran {
		return true
	}
	s.peekMu.Lock()
	s.peeked = false
	s.rc.Control(s.peekFn)
	p := s.peeked
	s.peekMu.Unlock()
	if p {
		return true
	}
	// Read between the two looks: what it read has not been run.
	again, waiting := s.raw.ReadState()
	return again != reads || !waiting && !ran
}

// orderTie is how close two clients' reads are for their order to be
// taken as unknown: the order the connection goroutines read in need not
// be the order the commands arrived in (two commands sent 10 µs apart on
// two connections are often read the other way round). Within it a
// client running its first command goes first (see orderID), then the
// client connected first, as a test or an application that opens its
// connections in order and sends on them in order expects.
const orderTie = int64(2 * time.Millisecond)

// freshOrderTie is orderTie between two fresh clients (see orderID):
// connections opened one after the other and sent on in that order (a
// test's blocked clients, a pool's first commands) are read up to a few
// milliseconds the other way round when the machine is loaded (measured:
// 2.9 and 5.5 ms with two BRPOPLPUSHes on new connections); their
// connection order is the better guess for longer.
const freshOrderTie = int64(10 * time.Millisecond)

// goesFirst reports whether the client with ticket t1 and rank id1
// (orderID) goes before the one with t2 and id2 among clients waiting for
// each other's input: the one read first, unless they were read within
// orderTie of each other, freshOrderTie if both are fresh (then the one
// connected first: freshness does not count here; a client connected
// later and read within the tie, as a test's second blocked client sent
// just after the first, goes second).
// Three clients within orderTie of each other can make a cycle; the waits
// are bounded (orderWaitMax), so a cycle costs time, never a hang.
func goesFirst(t1, id1, t2, id2 int64) bool {
	tie := orderTie
	if id1 < 0 && id2 < 0 {
		tie = freshOrderTie
	}
	if d := t1 - t2; d > tie || d < -tie {
		return t1 < t2
	}
	return clientID(id1) < clientID(id2)
}

// clientID is the client id of a rank (orderID).
func clientID(rank int64) int64 {
	if rank < 0 {
		return rank + freshRank
	}
	return rank
}

// freshRank offsets a fresh client's rank below every other (orderID).
const freshRank = 1 << 62

// awaitOthers waits, before c blocks, until no other client has input it
// has not run (see inputPending), so that a blocking command sent earlier
// on another connection blocks (or pops) first, as in Redis. It does not
// wait with more than orderWaitClients clients connected.
func (c *Client) awaitOthers() {
	clients := c.s.clientList()
	if len(clients) > orderWaitClients {
		return
	}
	ticket := c.src.await()
	defer c.src.done()
	var deadline time.Time
	for {
		busy := false
		for _, o := range clients {
			if o != c && o.inputPending(ticket, c.orderID(), false) {
				busy = true
				break
			}
		}
		if !busy || !orderWait(&deadline) {
			return
		}
	}
}

// freshWindow is how long after its connection a client counts as fresh
// (see awaitFresh), until it has run freshCommands commands.
const freshWindow = time.Second

// freshCommands is how many commands a client runs fresh: a test's or an
// application's new connection often sends one command first (Redis's
// deferring clients a PING or SELECT, a pool AUTH or HELLO) and then the
// one that races an older connection's.
const freshCommands = 2

// freshClients are the connections accepted in the last freshWindow that
// have not finished freshCommands commands.
type freshClients struct {
	n    atomic.Int32 // len(list): the writers' one-load test
	mu   sync.Mutex
	list []*Client
}

// add registers c, just accepted.
func (f *freshClients) add(c *Client) {
	c.freshLeft = freshCommands
	c.fresh.Store(true)
	f.mu.Lock()
	f.list = append(f.list, c)
	f.n.Store(int32(len(f.list)))
	f.mu.Unlock()
}

// end takes c out (its first commands are done, or it is gone); a no-op
// for a client no longer fresh.
func (f *freshClients) end(c *Client) {
	if !c.fresh.Swap(false) {
		return
	}
	f.mu.Lock()
	f.list = withoutClient(f.list, c)
	f.n.Store(int32(len(f.list)))
	f.mu.Unlock()
}

// withoutClient removes c's first occurrence from list, in place.
func withoutClient(list []*Client, c *Client) []*Client {
	if i := slices.Index(list, c); i >= 0 {
		return slices.Delete(list, i, i+1)
	}
	return list
}

// snapshot appends the fresh clients to buf, first ending those past
// freshWindow.
func (f *freshClients) snapshot(buf []*Client) []*Client {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	kept := f.list[:0]
	for _, c := range f.list {
		if now.Sub(c.created) > freshWindow {
			c.fresh.Store(false)
			continue
		}
		kept = append(kept, c)
		buf = append(buf, c)
	}
	clear(f.list[len(kept):])
	f.list = kept
	f.n.Store(int32(len(kept)))
	return buf
}

// orderID is c's rank among clients waiting for each other's input: its
// id, made negative (less freshRank) while c is fresh, which tells
// inputPending that the asker is fresh (it does not wait for a writer
// deferring to fresh clients); goesFirst compares the ids (clientID).
func (c *Client) orderID() int64 {
	if c.fresh.Load() {
		return c.id - freshRank
	}
	return c.id
}

// awaitFresh waits, before a write command, until the fresh connections
// (opened in the last freshWindow, within their first freshCommands
// commands) have run the input they have sent (see inputPending): a
// client that connects and sends a blocking read just before another
// client deletes or overwrites the key (Redis's XREADGROUP BLOCK then DEL,
// SET, FLUSHALL, SWAPDB) then blocks first and is unblocked by the write,
// as in Redis's single thread, instead of finding the key already gone. A
// fresh writer waits only for fresh clients connected before it. Bounded
// by orderWaitMax; with no fresh connection it costs one atomic load (the
// caller's).
func (c *Client) awaitFresh() bool {
	var buf [8]*Client
	fresh := c.s.fresh.snapshot(buf[:0])
	if len(fresh) == 0 {
		return false
	}
	self := c.fresh.Load()
	c.src.await() // older clients waiting for input order against it
	defer c.src.done()
	// Fresh clients about to block do not wait for this one (see
	// inputPending): it waits for them.
	c.deferring.Store(true)
	c.deferLast.Store(c.rd.Buffered() == 0)
	defer func() { c.deferring.Store(false); c.deferLast.Store(false) }()
	waited := false
	var deadline time.Time
	for {
		busy := false
		for _, o := range fresh {
			// Not for another fresh writer waiting here with no input read
			// after its write: else writers on connections opened together
			// wait in a chain, a poll (1 ms when idle) per link.
			if o == c || self && o.id > c.id || o.deferLast.Load() {
				continue
			}
			// A fresh client waiting for others goes first whatever its
			// ticket (its goroutine may have read its command late).
			if o.fresh.Load() && o.inputPending(math.MaxInt64, math.MaxInt64, true) {
				busy = true
				break
			}
		}
		if !busy || !orderWait(&deadline) {
			return waited
		}
		waited = true
	}
}

// awaitIfWaking waits, before a write command one of whose keys has
// blocked clients (it may serve them), until the other clients have run
// the input they have, as a client about to block does (awaitOthers): a
// command another client sent first (an EXEC watching the key a served
// BRPOPLPUSH pushes to) then runs first, as in Redis's single thread. It
// reports whether it waited. With no client blocked it costs one atomic
// load.
func (c *Client) awaitIfWaking(cmd *cmdtable.Command, args [][]byte) bool {
	r := c.s.blocking
	if r == nil || r.n.Load() == 0 || c.group != nil || !cmd.Is(cmdtable.FlagWrite) {
		return false
	}
	var buf [8]int
	pos, _ := cmd.KeyPositions(args, buf[:0])
	hit := false
	r.mu.Lock()
	for _, p := range pos {
		if _, ok := r.byKey[blockKey{c.db, string(args[p])}]; ok {
			hit = true
			break
		}
	}
	r.mu.Unlock()
	if hit {
		c.awaitOthers()
	}
	return hit
}

// orderWait sleeps a poll interval, and reports false instead once
// orderWaitMax has passed since the first call (deadline zero).
func orderWait(deadline *time.Time) bool {
	now := time.Now()
	if deadline.IsZero() {
		*deadline = now.Add(orderWaitMax)
	} else if now.After(*deadline) {
		return false
	}
	time.Sleep(orderWaitPoll)
	return true
}

func (s *connSource) Read(p []byte) (int, error) { return s.read(p, false) }

// read is Read; once reads without keeping a raw read open
// (rawio.Conn.ReadOnce): an idle client's wait holds nothing but the
// socket (waitInput).
func (s *connSource) read(p []byte, once bool) (int, error) {
	if len(s.pending) > 0 {
		n := copy(p, s.pending)
		s.pending = s.pending[n:]
		if len(s.pending) == 0 {
			s.pending = nil
		}
		if s.in != nil {
			s.in.Add(int64(n)) // read while blocked (watchConn), not counted then
		}
		return n, nil
	}
	var n int
	var err error
	switch {
	case s.raw == nil:
		n, err = s.nc.Read(p)
	case once:
		n, err = s.raw.ReadOnce(p)
	default:
		n, err = s.raw.Read(p)
	}
	if n > 0 {
		s.readAt = int64(time.Since(epoch))
		if s.in != nil {
			s.in.Add(int64(n))
		}
	}
	return n, err
}
