package coldstore

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/spillway/spillway/codec"
)

// Deferred, coalesced application. The engine commits each transaction
// under its lock, and the order of those commits is the order of the
// writes. Enqueue copies the batch into the queue's pending buffer, in
// that order, as the frame the write log (wlog.go) will hold; Drain,
// called after the lock is released, has the log writer write what is
// pending (one write for everything queued meanwhile; under appendfsync
// always the waiting connection writes it: drain). A logged batch is durable as the fsync policy promises;
// Pebble gets it later: an application round takes the whole pending
// buffer, drops every point record a later record of the same key
// overwrites (a counter incremented a thousand times is applied once) and
// commits the rest, without a WAL (the log is the WAL). Rounds run when
// the buffer reaches applyBytes (the applier goroutine), when the queue
// has been idle for a second, and when a reader needs them.
//
// Why: applying each batch to Pebble as it committed (its WAL record,
// its memtable inserts, and the flushes and compactions every overwritten
// version feeds) was most of a write's cost: with it removed, SET, HSET,
// LPUSH and ZADD at -P 16 ran 1.7x-5x faster (redis-benchmark -c 50, 2
// cores). Coalescing keeps the memtable inserts and the compactions in
// proportion to the keys written, not to the writes.
//
// Readers see every committed transaction as if it were applied, without
// waiting for a round wherever the pending records tell the answer: a
// point read of a key a pending batch writes is answered from the queue
// (its last record of the key, or a later range deletion over it), also
// when the reader's own transaction wrote other keys already (its own
// records of the key, if any, come first: Store.readPoint). What the
// pending batches write is indexed (pendix.go) off the engine's lock:
// enqueueing is a slice append under it. An iterator waits until
// everything queued before it is applied (waitRange) only when a pending record may change what it
// sees (inside one data structure: a record of that structure, or a
// range deletion overlapping it; elsewhere: a record of a namespace it
// spans), and so does a point read the index cannot answer (a hash
// collision, too many pending range deletions). The common cases cost one atomic comparison
// (nothing pending) or one hash lookup. Snapshots, flushes and the
// synchronous writes wait for everything.
//
// The index follows the pending buffer as it fills: the indexer goroutine
// (onKick with catchUpIndex) catches it up every indexChunk bytes queued, under ixMu and
// not the queue's mutex, so enqueueing never waits for indexing and no
// reader indexes more than the last chunk: a reader that built the index
// of a whole 8 MB window held the queue's lock for about 10 ms, and every
// writer queued behind it (README, "Write tails"). The CPU is the same
// (an application round coalesces with that index instead of building
// its own), spent as the window fills rather than at its first read.

// commitQueue holds the batches enqueued and not yet applied, in order.
type commitQueue struct {
	mu   sync.Mutex
	cond sync.Cond // on mu: writing ended, or applied advanced

	// pend holds the frames of the batches queued and not applied; the
	// first written bytes of it are in the log. spare is a previous
	// round's buffer, reused.
	pend    []byte
	written int
	spare   []byte
	// writing: a goroutine is writing pend to the log (one at a time, so
	// the log holds the batches in queue order).
	writing bool

	// What the pending batches write, for readers (pendix.go): pend's
	// index and that of the round being applied (applyingBuf). The
	// indexes are guarded by ixMu, not mu, so that indexing never holds
	// up enqueue; pend and applyingBuf are swapped holding both, so that
	// holding ixMu, each index stays paired with its buffer. Lock order:
	// ixMu before mu. A buffer's bytes below its length never change
	// (enqueue only appends), so an index holder may read a snapshot of
	// pend taken under mu after releasing mu.
	seed               maphash.Seed
	ixMu               sync.Mutex
	pendIx, applyingIx pendIndex
	applyingBuf        []byte
	// pendBorn and applyingBorn (under mu, swapped with their buffers)
	// are the offsets in pend and in applyingBuf of the records that
	// create their key (Batch.SetNew), in order: only appended to, as the
	// buffers, so a snapshot taken under mu stays valid.
	pendBorn, applyingBorn []int32
	// ixKickedAt is len(pend) when the indexer was last kicked (under
	// mu); wantStructs (under ixMu): an iterator inside a structure
	// asked for the structures' index once, so the indexer keeps it too.
	ixKickedAt  int
	wantStructs bool
	// pendNs and applyingNs (under mu) have the namespace bits of every
	// record in pend and in applyingBuf, from the batches' own accounts
	// (Batch.ns): an iterator none of whose namespaces they hold (the
	// expiry sweeper's, under the engine's lock, every 100 ms) starts
	// without touching the index.
	pendNs, applyingNs uint8
	ixChunk            int // indexChunk (tests make it smaller)

	// queued counts the batches ever enqueued (written under mu), applied
	// those applied (or dropped after a failure): equal when nothing is
	// pending.
	queued, applied atomic.Uint64
	// err is the first failed log write or application (failed: it is
	// set): the store then refuses every later commit and read, as Redis
	// refuses writes after an AOF write error.
	err    error
	failed atomic.Bool

	applyMu    sync.Mutex // one application round at a time
	apply      func(frames []byte, ix *pendIndex, seed maphash.Seed) error
	log        *wlog
	applyBytes int
	kick       chan struct{} // wakes the applier: pend reached applyBytes
	wake       chan struct{} // wakes the log writer: frames to write
	ixKick     chan struct{} // wakes the indexer: indexChunk more bytes queued
}

// indexChunk is how many bytes queued wake the indexer: what a reader
// may have to index itself, at most, besides what was queued while the
// indexer ran (about 0.3 ms of indexing for 256 KB of 512-byte SETs).
const indexChunk = 256 << 10

func (q *commitQueue) init(log *wlog, applyBytes int, apply func([]byte, *pendIndex, maphash.Seed) error) {
	q.cond.L = &q.mu
	q.seed = maphash.MakeSeed()
	q.log = log
	q.applyBytes = applyBytes
	q.apply = apply
	q.kick = make(chan struct{}, 1)
	q.wake = make(chan struct{}, 1)
	q.ixKick = make(chan struct{}, 1)
	q.ixChunk = indexChunk
}

// Namespace bits of what a pending batch touches.
const (
	nsBitData uint8 = 1 << iota
	nsBitGarbage
	nsBitMeta
	nsBitSystem
	nsBitExpiry
	nsBitOther
)

func nsBit(b byte) uint8 {
	switch b {
	case codec.NSData:
		return nsBitData
	case codec.NSGarbage:
		return nsBitGarbage
	case codec.NSMeta:
		return nsBitMeta
	case codec.NSSystem:
		return nsBitSystem
	case codec.NSExpiry:
		return nsBitExpiry
	}
	return nsBitOther
}

// nsSpan returns the namespace bits of every key in [lower, upper) (an
// empty upper: no bound): nsBitOther only when the span holds first bytes
// that are no namespace (a range inside the data namespace is nsBitData
// alone, so that a pending range deletion there leaves iterators of other
// structures alone: pendIndex.touches).
func nsSpan(lower, upper []byte) uint8 {
	lo, hi := 0, 0xff
	if len(lower) > 0 {
		lo = int(lower[0])
	}
	if len(upper) > 0 {
		hi = int(upper[0])
		if len(upper) == 1 {
			hi-- // upper itself is excluded, and every key after it
		}
	}
	if hi < lo {
		return 0
	}
	bits, known := uint8(0), 0
	for _, b := range [...]byte{codec.NSData, codec.NSGarbage, codec.NSMeta, codec.NSSystem, codec.NSExpiry} {
		if int(b) >= lo && int(b) <= hi {
			bits |= nsBit(b)
			known++
		}
	}
	if known < hi-lo+1 {
		bits |= nsBitOther
	}
	return bits
}

// enqueue copies pb into the pending buffer as the next batch and closes
// it: a slice append under the engine's lock (what the batch writes is
// indexed later, by the indexer: catchUpIndex); ns has the namespace bits
// of its records (Batch.ns). It returns the batch's number, or the sticky
// error.
func (q *commitQueue) enqueue(pb *pebble.Batch, ns uint8, born []int32) (uint64, error) {
	defer pb.Close()
	repr := pb.Repr()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return 0, q.err
	}
	if q.pend == nil {
		// Room for what may pend before a writer applies it itself (4
		// rounds' worth, drain): growing a buffer of megabytes by
		// doubling copied it again and again under the lock (with a
		// round's worth, 8% of a SET's CPU at -P 16 when the applier
		// lagged). Pages not written to take no memory.
		q.pend = make([]byte, 0, 4*q.applyBytes+q.applyBytes/4)
	}
	base := int32(len(q.pend) + frameHeader)
	for _, off := range born {
		q.pendBorn = append(q.pendBorn, base+off)
	}
	q.pend = appendFrame(q.pend, repr)
	q.pendNs |= ns
	return q.queued.Add(1), nil
}

// fail makes err the sticky error. mu is held.
func (q *commitQueue) fail(err error) {
	if q.err == nil {
		q.err = err
		q.failed.Store(true)
	}
}

// stickyErr returns the sticky error.
func (q *commitQueue) stickyErr() error {
	if !q.failed.Load() {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

// idle reports whether nothing is pending and nothing failed: the
// readers' fast path.
func (q *commitQueue) idle() bool {
	return q.applied.Load() >= q.queued.Load() && !q.failed.Load()
}

// drain has the pending frames written to the log: it wakes the log
// writer (onKick with Store.writeOut), which writes everything queued meanwhile in one
// write, as Pebble's own log writer did; unless waited is set: the caller
// is about to wait for its batch to be durable (Pending.Wait, under
// appendfsync always), and that wait writes the log itself, in one write
// for everyone's frames, so a wake-up of the log writer would only add a
// hand-off (writer woken, then the waiter woken by it). It applies itself
// when the applier cannot keep up (4 x applyBytes pending), so that
// writers feel a store that falls behind instead of queueing without
// bound, and kicks the applier when a round's worth is pending. It
// returns the sticky error.
func (q *commitQueue) drain(waited bool) error {
	q.mu.Lock()
	pending, unwritten, err := len(q.pend), q.written < len(q.pend) && !q.writing, q.err
	index := pending-q.ixKickedAt >= q.ixChunk
	if index {
		q.ixKickedAt = pending
	}
	q.mu.Unlock()
	if err != nil {
		return err
	}
	if index {
		kick(q.ixKick)
	}
	if unwritten && !waited {
		kick(q.wake)
	}
	switch {
	case pending >= 4*q.applyBytes:
		return q.round()
	case pending >= q.applyBytes:
		kick(q.kick)
	}
	return nil
}

// writeOut writes the pending frames to the log unless another goroutine
// is writing them (it writes until nothing is left). It returns the
// sticky error.
func (q *commitQueue) writeOut() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.writing || q.written == len(q.pend) {
		return q.err
	}
	q.writing = true
	for q.written < len(q.pend) && q.err == nil {
		chunk, end, last := q.pend[q.written:], len(q.pend), q.queued.Load()
		q.mu.Unlock()
		err := q.log.write(chunk, last)
		q.mu.Lock()
		if err != nil {
			q.fail(err)
			break
		}
		q.written = end
	}
	q.writing = false
	q.cond.Broadcast()
	return q.err
}

// round applies everything pending: it takes the pending buffer (a new
// one starts for later batches), writes what of it is not in the log yet,
// and applies it. It returns the sticky error.
func (q *commitQueue) round() error {
	q.applyMu.Lock()
	defer q.applyMu.Unlock()
	q.awaitWriter()
	if q.err != nil || len(q.pend) == 0 {
		err := q.err
		q.mu.Unlock()
		return err
	}
	q.writing = true
	q.mu.Unlock()
	// Swap the buffers and their indexes holding both locks (ixMu first).
	q.ixMu.Lock()
	q.mu.Lock()
	take, unwritten, last := q.pend, q.pend[q.written:], q.queued.Load()
	q.pend, q.written, q.spare = q.spare[:0], 0, nil
	q.pendIx, q.applyingIx = q.applyingIx, q.pendIx // the old applyingIx is reset
	q.applyingBuf = take
	// The previous round's born offsets are reused: no reader holds them
	// (a snapshot is used under ixMu).
	takeBorn := q.pendBorn
	q.applyingBorn, q.pendBorn = takeBorn, q.applyingBorn[:0]
	q.applyingNs, q.pendNs = q.pendNs, 0
	q.ixKickedAt = 0
	q.mu.Unlock()
	// The round coalesces with the index the indexer kept of its buffer,
	// completed here (the last chunk at most), so that readers of the
	// round's keys find it whole too; an odd buffer gets its own.
	q.catchUpAll(&q.applyingIx, take, takeBorn)
	var index *pendIndex
	if !q.applyingIx.odd {
		index = &q.applyingIx
	}
	q.ixMu.Unlock()

	var err error
	if len(unwritten) > 0 {
		err = q.log.write(unwritten, last)
	}
	q.releaseWriter(nil)
	if err == nil {
		err = q.apply(take, index, q.seed)
	}

	q.ixMu.Lock()
	defer q.ixMu.Unlock()
	q.mu.Lock()
	defer q.mu.Unlock()
	if err != nil {
		q.fail(err)
	}
	q.applied.Store(last)
	q.applyingIx.reset()
	q.applyingBuf, q.applyingNs = nil, 0
	if cap(take) <= 8*q.applyBytes {
		q.spare = take[:0]
	}
	q.cond.Broadcast()
	return q.err
}

// waitFor returns once batch n (and every one before it) is applied,
// running application rounds itself. It returns the sticky error.
func (q *commitQueue) waitFor(n uint64) error {
	for q.applied.Load() < n {
		if err := q.round(); err != nil {
			return err
		}
	}
	return q.stickyErr()
}

// waitAll returns once every batch queued so far is applied.
func (q *commitQueue) waitAll() error {
	if q.idle() {
		return nil
	}
	return q.waitFor(q.queued.Load())
}

// pendingState is what the pending batches say about a key.
type pendingState int

const (
	notPending     pendingState = iota // no pending record touches it: Pebble is current
	pendingSet                         // its last pending record sets it (the value returned)
	pendingDel                         // its last pending record, or a later range deletion, deletes it
	pendingUnknown                     // the index cannot tell (a hash collision...): apply first
)

// lookup tells what the pending batches hold for key (h: its hash with
// the queue's seed); for pendingSet the value is copied into buf. It
// catches the indexes up first.
func (q *commitQueue) lookup(key []byte, h uint64, buf []byte) ([]byte, pendingState) {
	q.ixMu.Lock()
	defer q.ixMu.Unlock()
	pend, applying, err := q.buffers()
	if err != nil {
		return buf, pendingUnknown
	}
	q.pendIx.catchUp(pend.b, pend.born, q.seed)
	v, st := q.pendIx.find(pend.b, key, h)
	if st == notPending && applying.b != nil {
		q.applyingIx.catchUp(applying.b, applying.born, q.seed)
		v, st = q.applyingIx.find(applying.b, key, h)
	}
	if st == pendingSet {
		return append(buf[:0], v...), st
	}
	return buf, st
}

// waitRange returns once an iterator over [lower, upper) sees every batch
// queued so far: at once unless a pending record may change what it sees
// (pendIndex.touches: a record of a namespace in that span, or, for an
// iterator inside one data structure, a record of that structure or a
// range deletion overlapping it).
func (q *commitQueue) waitRange(lower, upper []byte) error {
	if q.idle() {
		return nil
	}
	span := nsSpan(lower, upper)
	q.mu.Lock()
	ns, failed := q.pendNs|q.applyingNs, q.err != nil
	q.mu.Unlock()
	if ns&span == 0 && !failed {
		return nil
	}
	q.ixMu.Lock()
	pend, applying, err := q.buffers()
	hit := err != nil || q.pendIx.touches(pend.b, lower, upper, span, q.seed, &q.wantStructs) ||
		applying.b != nil && q.applyingIx.touches(applying.b, lower, upper, span, q.seed, &q.wantStructs)
	q.ixMu.Unlock()
	if !hit {
		return nil
	}
	return q.waitAll()
}

// buffers returns the pending buffer, the buffer of the round being
// applied (nil when none is), each with its born offsets, and the sticky
// error, as they are now. The caller holds ixMu, so neither buffer is
// swapped until it releases it.
func (q *commitQueue) buffers() (pend, applying queuedBuf, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return queuedBuf{q.pend, q.pendBorn}, queuedBuf{q.applyingBuf, q.applyingBorn}, q.err
}

// queuedBuf is a snapshot of a buffer of frames and of its born offsets.
type queuedBuf struct {
	b    []byte
	born []int32
}

// catchUpIndex indexes what was queued since the last catch-up (the
// indexer's work, off the queue's mutex): the point keys and the
// namespaces, and the structures once an iterator asked for them.
func (q *commitQueue) catchUpIndex() {
	q.ixMu.Lock()
	defer q.ixMu.Unlock()
	pend, _, err := q.buffers()
	if err != nil {
		return
	}
	q.catchUpAll(&q.pendIx, pend.b, pend.born)
}

// catchUpAll catches ix, the index of buf, up with it: the point keys,
// the namespaces, and the structures once an iterator asked for them
// (wantStructs). The caller holds ixMu.
func (q *commitQueue) catchUpAll(ix *pendIndex, buf []byte, born []int32) {
	ix.catchUp(buf, born, q.seed)
	ix.catchUpSpans(buf)
	if q.wantStructs {
		ix.catchUpStructs(buf, q.seed)
	}
}

// kick wakes the goroutine waiting on ch, unless a wake-up is pending.
func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// awaitWriter locks mu and waits until no goroutine is the log's writer;
// the caller may then become it (writing = true) before unlocking.
func (q *commitQueue) awaitWriter() {
	q.mu.Lock()
	for q.writing {
		q.cond.Wait()
	}
}

// releaseWriter ends the caller's turn as the log's writer (taken under
// awaitWriter), recording err, if any, as the sticky error. Batches
// queued during the turn, whose drains found the turn taken and left
// them, go to the log writer.
func (q *commitQueue) releaseWriter(err error) {
	q.mu.Lock()
	q.writing = false
	if err != nil {
		q.fail(err)
	}
	left := q.written < len(q.pend) && q.err == nil
	q.cond.Broadcast()
	q.mu.Unlock()
	if left {
		kick(q.wake)
	}
}

// rotateIdle closes the log's current segment if it holds anything and
// everything queued is applied, so that retireLog can delete it.
func (q *commitQueue) rotateIdle() error {
	q.awaitWriter()
	if len(q.pend) > 0 || q.err != nil || !q.idle() {
		q.mu.Unlock()
		return nil
	}
	q.writing = true
	q.mu.Unlock()
	err := q.log.rotate()
	q.releaseWriter(nil)
	return err
}

// waitWritten returns once batch n (and every one before it) is in the
// log, writing it itself when no one else is. It returns the sticky
// error.
func (q *commitQueue) waitWritten(n uint64) error {
	for q.log.written.Load() < n {
		if err := q.writeOut(); err != nil {
			return err
		}
		q.mu.Lock()
		for q.writing && q.log.written.Load() < n && q.err == nil {
			q.cond.Wait()
		}
		err := q.err
		q.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return q.stickyErr()
}

// Drain has the batches enqueued so far (Batch.Enqueue) written to the
// write log by the log writer (under FsyncAlways, by the Pending.Wait
// that follows: see drain); the engine calls it after releasing its
// lock. It returns the error of a
// failed log write or application, which is sticky: every later commit
// and read returns it too. When Pebble falls behind (4 x applyBytes
// pending), Drain applies before it returns, so that writers feel a
// stalled store instead of queueing without bound.
func (s *Store) Drain() error {
	if s.log.written.Load() >= s.q.queued.Load() && !s.q.failed.Load() {
		return nil
	}
	// Under appendfsync always the caller waits on its Pending, which
	// writes the log; a batch nobody waits on (the engine's own writes)
	// is written by the next wait, or by the round that applies it.
	return s.q.drain(s.FsyncPolicy() == FsyncAlways)
}

// onKick runs fn each time kick fires, until the store stops: the
// indexer (kicked by drain every indexChunk bytes queued: catchUpIndex)
// is such a loop.
func (s *Store) onKick(kick <-chan struct{}, fn func()) {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case <-kick:
			fn()
		}
	}
}

// logGather is how long the log writer, kicked, lets more frames gather
// before it writes, under appendfsync everysec and no: one write then
// carries the frames of every command committed meanwhile, as Redis's one
// AOF write per event loop does. Nobody waits for that write under these
// policies (the reply does not: a crash loses at most about a second of
// writes, and this adds logGather to it); under always the waiting
// connection writes the log itself (Pending.Wait), and a round writes
// what is not written yet before it applies it, so neither waits for
// the gathering either.
const logGather = time.Millisecond

// logWriter is the log writer: kicked by Drain, it writes what is
// pending, after s.gather (logGather) unless the policy is always.
func (s *Store) logWriter() {
	defer s.wg.Done()
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.q.wake:
		}
		if s.FsyncPolicy() != FsyncAlways {
			t.Reset(s.gather)
			select {
			case <-s.stop:
				t.Stop()
				return // Close writes what is pending
			case <-t.C:
			}
		}
		if err := s.q.writeOut(); err != nil {
			s.logger.Error("writing the write log failed", "err", err)
		}
	}
}
