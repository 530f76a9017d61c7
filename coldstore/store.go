// Package coldstore is Spillway's on-disk store: a Pebble database holding
// every key in the encoding of package codec (one meta record per key,
// versioned data records, an expiry index ordered by time, garbage records for
// stale versions, system records).
//
// The store knows nothing of hot and cold: tiering decides what to keep in
// memory. Store methods are safe for concurrent use; a Batch is not.
package coldstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/spillway/spillway/codec"
)

// Fsync is the WAL sync policy, as Redis's appendfsync.
type Fsync int

// The fsync policies.
const (
	// FsyncEverySec syncs the WAL once a second: at most about a second of
	// acknowledged writes is at risk on a crash.
	FsyncEverySec Fsync = iota
	// FsyncAlways syncs before a write is acknowledged.
	FsyncAlways
	// FsyncNo leaves syncing to the operating system.
	FsyncNo
)

// ParseFsync parses an appendfsync value.
func ParseFsync(s string) (Fsync, error) {
	switch s {
	case "always":
		return FsyncAlways, nil
	case "everysec":
		return FsyncEverySec, nil
	case "no":
		return FsyncNo, nil
	}
	return 0, fmt.Errorf("appendfsync %q: want always, everysec or no", s)
}

func (f Fsync) String() string {
	switch f {
	case FsyncAlways:
		return "always"
	case FsyncNo:
		return "no"
	}
	return "everysec"
}

// Options configure Open.
type Options struct {
	Dir string
	// CacheBytes is the block cache size, counted inside the memory budget.
	CacheBytes int64
	// MemTableBytes is the size of one memtable (at most two are held).
	MemTableBytes int64
	Fsync         Fsync
	Logger        *slog.Logger
	// Compression is the bottom levels' codec (cold-compression).
	Compression Compression

	// compression overrides defaultCompressionPlan (tests and benchmarks
	// compare plans).
	compression compressionPlan
}

// memTableCount is how many memtables Pebble may hold (one mutable, one
// flushing) before it stalls writes.
const memTableCount = 2

// versionBlock is how many versions are reserved per persisted counter write.
const versionBlock = 1 << 16

// Store is the Pebble-backed cold store.
type Store struct {
	db     *pebble.DB
	opts   Options
	fsync  atomic.Int32
	logger *slog.Logger

	versionMu    sync.Mutex
	nextVersion  uint64
	versionLimit uint64

	garbageSeq atomic.Uint64

	gets       atomic.Int64 // point lookups (see ReadStats)
	iterSteps  atomic.Int64 // records visited by iterators
	iterPoints atomic.Int64 // internal points visited by closed iterators
	readLat    readLatency  // point lookups' durations (see ReadLatency)
	metaMix    lookupMix    // Get or probe for meta records (lookupmix.go)
	fieldMix   lookupMix    // and for fields and members (GetField)

	// q orders the engine's committed batches until they are applied
	// (commitq.go); log is their durability record (wlog.go); app applies
	// them to Pebble (apply.go).
	q        commitQueue
	log      *wlog
	app      applier
	retireMu sync.Mutex // one retireLog at a time
	// floor keeps the log's frames that hold log-only records the engine
	// still needs (logonly.go).
	floor logFloor
	// gather is how long the log writer lets frames gather (logGather;
	// tests set it before the first write).
	gather time.Duration

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Open opens (creating if needed) the store in opts.Dir, replays its write
// log, checks its format version, and starts the log's syncer (for
// FsyncEverySec) and the applier.
func Open(opts Options) (*Store, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.CacheBytes <= 0 {
		opts.CacheBytes = 8 << 20
	}
	if opts.MemTableBytes <= 0 {
		opts.MemTableBytes = 4 << 20
	}
	// Pebble charges its memtables to the block cache (a reservation that
	// shrinks it), so the cache is sized for both: with only CacheBytes, a
	// small budget leaves no room for blocks at all and every read
	// decompresses its index and data blocks again.
	cache := pebble.NewCache(opts.CacheBytes + memTableCount*opts.MemTableBytes)
	defer cache.Unref()
	var logp atomic.Pointer[wlog]
	po := &pebble.Options{
		Cache:                       cache,
		MemTableSize:                uint64(opts.MemTableBytes),
		MemTableStopWritesThreshold: memTableCount,
		MaxOpenFiles:                1000,
		Logger:                      newPebbleLogger(opts.Logger),
		// The write log is the WAL (wlog.go). A flush makes applied
		// records durable in sstables; the log is synced first, so that
		// an sstable never holds a write the log could lose.
		DisableWAL: true,
		EventListener: &pebble.EventListener{FlushBegin: func(pebble.FlushInfo) {
			if l := logp.Load(); l != nil {
				if err := l.sync(); err != nil {
					opts.Logger.Error("write log sync before a flush failed", "err", err)
				}
			}
		}},
	}
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	plan := opts.compression
	if plan == nil {
		plan = opts.Compression.plan()
	}
	applyCompressionPlan(po, plan)
	po.EnsureDefaults()
	db, err := pebble.Open(opts.Dir, po)
	if err != nil {
		return nil, fmt.Errorf("coldstore: open %s: %w", opts.Dir, err)
	}
	s := &Store{db: db, opts: opts, logger: opts.Logger, gather: logGather, stop: make(chan struct{})}
	s.app.db, s.app.memBytes = db, int(opts.MemTableBytes/4)
	s.floor.floor = math.MaxUint64 // no log-only record yet
	if err := s.openLog(); err != nil {
		db.Close()
		return nil, err
	}
	logp.Store(s.log)
	s.q.init(s.log, applyBytes(opts.MemTableBytes), s.app.applyFrames)
	s.fsync.Store(int32(opts.Fsync))
	if err := s.checkFormat(); err != nil {
		s.log.close()
		db.Close()
		return nil, err
	}
	if err := s.loadCounters(); err != nil {
		s.log.close()
		db.Close()
		return nil, err
	}
	s.wg.Add(4)
	go s.onKick(s.q.ixKick, s.q.catchUpIndex)
	go s.walSyncer()
	go s.applyLoop()
	go s.logWriter()
	return s, nil
}

// applyBytes is how much pending writes an application round waits for
// (the coalescing window): a memtable's worth, between 1 and 8 MB. 2 MB
// coalesced too little (ZADD -P 16: 17 µs of CPU a command against 11-12
// with 8 MB, redis-benchmark -c 50). Larger windows, measured again with
// the lazy index (pendix.go; 16, 32 and 64 MB under --maxmemory 1gb),
// cut ZADD and INCR at -P 16 but not SET or HSET, and cost what the
// budget does not count: the pending buffers are Go heap outside
// maxmemory's split (peak RSS +240 MB at 64 MB), and a kill -9 leaves up
// to two windows of log to replay (5.9 s at 64 MB, 0.45 s at 8, applied
// batch by batch before the replay coalesced: replay.go): README,
// "Where the time goes". (The first read after a burst indexed the whole
// window under the queue's lock then, 0.5 s at 64 MB; the index now
// follows the window: commitq.go.)
func applyBytes(memtable int64) int { return int(min(max(memtable, 1<<20), 8<<20)) }

// segmentBytes is the size at which the write log starts a new segment:
// two memtables, between 1 and 128 MB. The log a restart replays, and the
// disk it takes beside the sstables, is at most about two segments: with
// a small budget (a 2 MB memtable under --maxmemory 32mb) that is 8 MB,
// where a floor of 8 MB a segment let it reach a quarter of the data at
// 1x the budget.
func segmentBytes(memtable int64) int64 { return min(max(2*memtable, 1<<20), 128<<20) }

// openLog replays the write log into Pebble, flushes what it applied and
// retires the replayed segments.
func (s *Store) openLog() error {
	r := replayer{db: s.db, memBytes: int(s.opts.MemTableBytes / 4)}
	defer r.close()
	l, err := openLog(filepath.Join(s.opts.Dir, logDirName), segmentBytes(s.opts.MemTableBytes), s.logger, &r)
	if err != nil {
		return err
	}
	s.log = l
	if r.n == 0 {
		return nil
	}
	if err := r.flush(); err != nil {
		l.close()
		return err
	}
	if err := s.db.Flush(); err != nil {
		l.close()
		return fmt.Errorf("coldstore: flush replayed log: %w", err)
	}
	if err := l.retireAll(); err != nil {
		l.close()
		return err
	}
	s.logger.Info("write log replayed", "batches", r.n, "records_applied", r.applied, "records_overwritten", r.dropped)
	return nil
}

func sysKey(name string) []byte { return codec.AppendSystemKey(nil, name) }

func (s *Store) checkFormat() error {
	key := sysKey(codec.SysFormat)
	v, closer, err := s.db.Get(key)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], codec.FormatVersion)
		if _, err := s.setDurable(key, b[:]); err != nil {
			return fmt.Errorf("coldstore: write format version: %w", err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("coldstore: read format version: %w", err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return fmt.Errorf("coldstore: corrupt format record (%d bytes)", len(v))
	}
	if got := binary.BigEndian.Uint64(v); got != codec.FormatVersion {
		return fmt.Errorf("coldstore: data directory has format %d, this build reads format %d", got, codec.FormatVersion)
	}
	return nil
}

func (s *Store) loadCounters() error {
	v, closer, err := s.db.Get(sysKey(codec.SysNextVersion))
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		s.nextVersion = 1
	case err != nil:
		return fmt.Errorf("coldstore: read version counter: %w", err)
	default:
		n, perr := codec.ParseUint64Value(v)
		closer.Close()
		if perr != nil || n == 0 {
			return fmt.Errorf("coldstore: corrupt version counter (%d bytes): %w", len(v), perr)
		}
		s.nextVersion = n
	}
	s.versionLimit = s.nextVersion
	// Garbage sequence: continue after the last garbage record (reclaimed
	// records are gone, so reuse of their numbers is harmless).
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{codec.NSGarbage}, UpperBound: []byte{codec.NSGarbage + 1}})
	if err != nil {
		return fmt.Errorf("coldstore: scan garbage: %w", err)
	}
	defer it.Close()
	if it.Last() && len(it.Key()) == 9 {
		s.garbageSeq.Store(binary.BigEndian.Uint64(it.Key()[1:]))
	}
	return nil
}

// NextVersion returns a version never returned before, in this or any earlier
// run. Versions come from a persisted counter reserved in blocks.
func (s *Store) NextVersion() (uint64, error) {
	s.versionMu.Lock()
	defer s.versionMu.Unlock()
	if s.nextVersion >= s.versionLimit {
		limit := s.nextVersion + versionBlock
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], limit)
		if _, err := s.setDurable(sysKey(codec.SysNextVersion), b[:]); err != nil {
			return 0, fmt.Errorf("coldstore: reserve versions: %w", err)
		}
		s.versionLimit = limit
	}
	v := s.nextVersion
	s.nextVersion++
	return v, nil
}

// SetFsync changes the sync policy at run time.
func (s *Store) SetFsync(f Fsync) { s.fsync.Store(int32(f)) }

// FsyncPolicy returns the current sync policy.
func (s *Store) FsyncPolicy() Fsync { return Fsync(s.fsync.Load()) }

func (s *Store) walSyncer() {
	defer s.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if s.FsyncPolicy() != FsyncEverySec {
				continue
			}
			if err := s.SyncWAL(); err != nil {
				s.logger.Error("write log sync failed", "err", err)
			}
		}
	}
}

// applyLoop runs application rounds when the pending buffer is full (the
// queue kicks it) and when the queue has been idle for a second, and
// retires the log segments Pebble no longer needs.
func (s *Store) applyLoop() {
	defer s.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var seen uint64
	idleTicks := 0
	for {
		select {
		case <-s.stop:
			return
		case <-s.q.kick:
		case <-t.C:
			n := s.q.queued.Load()
			if n != seen {
				seen, idleTicks = n, 0
				continue
			}
			if idleTicks++; s.q.idle() {
				// Idle for two seconds and applied: the log's current
				// segment goes too, so that a store at rest is its
				// sstables alone (and a restart replays nothing).
				if idleTicks != 2 {
					continue
				}
				if err := s.q.rotateIdle(); err != nil {
					s.logger.Error("closing the write log's segment failed", "err", err)
				}
				if err := s.retireLog(); err != nil {
					s.logger.Error("retiring write log segments failed", "err", err)
				}
				continue
			}
		}
		if err := s.q.round(); err != nil {
			s.logger.Error("applying writes to the store failed", "err", err)
			continue
		}
		if err := s.retireLog(); err != nil {
			s.logger.Error("retiring write log segments failed", "err", err)
		}
	}
}

// retireLog deletes the closed log segments whose batches are all applied,
// after flushing Pebble's memtables (which hold them).
func (s *Store) retireLog() error {
	s.retireMu.Lock()
	defer s.retireMu.Unlock()
	n := s.log.retirable(s.floor.retireLimit(s.q.applied.Load()))
	if n == 0 {
		return nil
	}
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("coldstore: flush: %w", err)
	}
	return s.log.retire(n)
}

// SyncWAL makes every write committed so far durable: it writes what is
// pending to the write log and syncs it.
func (s *Store) SyncWAL() error {
	if err := s.q.waitWritten(s.q.queued.Load()); err != nil {
		return err
	}
	return s.log.sync()
}

// setDurable writes one record in a batch of its own, durably (logged and
// synced), after everything queued before it, and returns the sequence
// number Pebble gave it.
func (s *Store) setDurable(key, value []byte) (uint64, error) {
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.Set(key, value, nil); err != nil {
		return 0, fmt.Errorf("coldstore: set: %w", err)
	}
	return s.commitDurable(b)
}

// commitDurable applies everything pending, then logs b, syncs the log and
// commits b to Pebble on its own: its sequence number is then Pebble's
// next, as the key counts' check needs (tiering's saveKeyCounts).
func (s *Store) commitDurable(b *pebble.Batch) (uint64, error) {
	q := &s.q
	if err := q.waitAll(); err != nil {
		return 0, err
	}
	q.applyMu.Lock()
	defer q.applyMu.Unlock()
	q.awaitWriter()
	if q.err != nil {
		err := q.err
		q.mu.Unlock()
		return 0, err
	}
	// Batches queued since waitAll are in pend; they touch other keys
	// (this path writes system records only), so their order against b
	// does not matter: b is written ahead of them.
	q.writing = true
	q.mu.Unlock()
	err := s.log.write(appendFrame(nil, b.Repr()), s.log.written.Load())
	if err == nil {
		err = s.log.sync()
	}
	q.releaseWriter(err)
	if err != nil {
		return 0, err
	}
	if err := commitNoWAL(b); err != nil {
		return 0, err
	}
	return uint64(b.SeqNum()), nil
}

// Close applies every pending write, flushes Pebble, empties the write log
// (the next start replays nothing) and closes the database. Nothing
// committed is lost; if applying fails, the synced log keeps every write
// for the next start. Calling it again returns the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.wg.Wait()
		err := s.q.waitAll()
		if err == nil {
			// Bounded: Pebble retries a failing flush (a full disk, a
			// directory removed) without end; the log keeps every write
			// for the next start instead.
			err = bounded(closeWait, "flush", s.db.Flush)
		}
		if err == nil {
			err = s.log.retireAll()
		}
		if err != nil {
			// Keep the log: sync what it holds.
			if werr := s.q.waitWritten(s.q.queued.Load()); werr == nil {
				s.log.sync()
			}
		}
		if cerr := s.log.close(); err == nil {
			err = cerr
		}
		s.closeErr = err
		if cerr := bounded(closeWait, "close", s.db.Close); cerr != nil && s.closeErr == nil {
			s.closeErr = cerr
		}
	})
	return s.closeErr
}

// closeWait bounds each of Close's steps in Pebble.
var closeWait = 10 * time.Second

// bounded runs fn, giving up waiting for it after d (it keeps running):
// Close must return, so that a server whose disk fails can still exit,
// with its write log synced.
func bounded(d time.Duration, what string, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("coldstore: %s: %w", what, err)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("coldstore: %s did not finish in %v", what, d)
	}
}

// SetSync durably writes one record in a batch of its own and returns the
// sequence number Pebble gave it. Sequence numbers count every record
// applied, so comparing them tells whether anything was written between
// two such calls (see tiering's key counts).
func (s *Store) SetSync(key, value []byte) (uint64, error) {
	return s.setDurable(key, value)
}

// DeleteSync durably deletes keys in one batch and returns the sequence
// number Pebble gave its first record.
func (s *Store) DeleteSync(keys ...[]byte) (uint64, error) {
	b := s.db.NewBatch()
	defer b.Close()
	for _, k := range keys {
		if err := b.Delete(k, nil); err != nil {
			return 0, fmt.Errorf("coldstore: delete: %w", err)
		}
	}
	return s.commitDurable(b)
}

// Get copies the value stored under key into buf (reusing its capacity) and
// reports whether the key exists.
func (s *Store) Get(key, buf []byte) ([]byte, bool, error) {
	return s.readPoint(s.db, key, buf, nil, false)
}

// getter is what a point lookup reads: the DB or an indexed batch.
type getter interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// readPoint is a point lookup through g (the DB, or own's indexed batch
// when own is the transaction's Batch) that sees the pending batches
// (commitq.go) without waiting for them to be applied wherever their
// records tell the answer. In order: when own's writes decide the key (a
// record of it, or a range deletion over it), g is read, as own's records
// hide whatever the store or the queue holds; else when a pending batch
// decides it, the queue answers (its last record of the key, or a later
// range deletion over it); else Pebble is current for the key and g is
// read. Only when an index cannot tell (a hash collision, more than
// maxPendingRanges pending range deletions, a failed store) does the read
// wait for an application round. probe picks probeInto over getInto for
// the Pebble read.
func (s *Store) readPoint(g getter, key, buf []byte, own *Batch, probe bool) ([]byte, bool, error) {
	if !s.q.idle() {
		h := maphash.Bytes(s.q.seed, key)
		st := notPending
		if own != nil {
			st = own.ownState(key, h)
		}
		if st == notPending {
			var v []byte
			switch v, st = s.q.lookup(key, h, buf); st {
			case pendingSet:
				s.gets.Add(1) // a lookup of the store, answered from its queue
				return v, true, nil
			case pendingDel:
				s.gets.Add(1)
				return v[:0], false, nil
			}
		}
		if st == pendingUnknown {
			if err := s.q.waitAll(); err != nil {
				return buf[:0], false, err
			}
		}
	}
	if probe {
		return s.probeInto(g, key, buf)
	}
	return s.getInto(g, key, buf)
}

// getInto is a point lookup for a key that probably exists: Pebble's Get,
// of what Pebble holds (readPoint sees the pending batches too).
func (s *Store) getInto(g getter, key, buf []byte) ([]byte, bool, error) {
	var start time.Time
	timed := sampled(s.gets.Add(1))
	if timed {
		start = time.Now()
	}
	v, closer, err := g.Get(key)
	if timed {
		s.readLat.observe(time.Since(start))
	}
	if errors.Is(err, pebble.ErrNotFound) {
		return buf[:0], false, nil
	}
	if err != nil {
		return buf[:0], false, fmt.Errorf("coldstore: get: %w", err)
	}
	buf = append(buf[:0], v...)
	closer.Close()
	return buf, true, nil
}

// probeOpts makes a lookup consult the bloom filters of every level.
var probeOpts = pebble.IterOptions{UseL6Filters: true}

// probeInto is a point lookup for a key that probably does not exist (a
// new field of a cold hash). Pebble's Get skips the bloom filters of the
// last level (L6), assuming lookups mostly find their key, so each miss
// there reads and decompresses a data block; a prefix seek with L6 filters
// answers most misses from the filter. It costs more than Get for a hit
// (an iterator is set up), so it is only for likely misses: loading 200,000
// new fields into a cold hash went from 5.7 s to 1.3 s in the store.
func (s *Store) probeInto(g getter, key, buf []byte) ([]byte, bool, error) {
	if sampled(s.gets.Add(1)) {
		start := time.Now()
		defer func() { s.readLat.observe(time.Since(start)) }()
	}
	it, err := g.NewIter(&probeOpts)
	if err != nil {
		return buf[:0], false, fmt.Errorf("coldstore: probe: %w", err)
	}
	found := it.SeekPrefixGE(key) && bytes.Equal(it.Key(), key)
	if found {
		var v []byte
		if v, err = it.ValueAndErr(); err == nil {
			buf = append(buf[:0], v...)
		}
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return buf[:0], false, fmt.Errorf("coldstore: probe: %w", err)
	}
	if !found {
		return buf[:0], false, nil
	}
	return buf, true, nil
}

// NewIter returns an iterator over [lower, upper) that sees committed data.
func (s *Store) NewIter(lower, upper []byte) (*Iter, error) {
	if err := s.q.waitRange(lower, upper); err != nil {
		return nil, err
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, fmt.Errorf("coldstore: iterator: %w", err)
	}
	return &Iter{Iterator: it, steps: &s.iterSteps, points: &s.iterPoints}, nil
}

// DiskUsage estimates the bytes the store occupies on disk, its write log
// included.
func (s *Store) DiskUsage() uint64 {
	return s.db.Metrics().DiskSpaceUsage() + uint64(s.log.diskBytes())
}

// Metrics exposes Pebble's metrics.
func (s *Store) Metrics() *pebble.Metrics { return s.db.Metrics() }

// Flush writes the memtable to an sstable (used by SAVE so that the data
// no longer depends on WAL replay).
func (s *Store) Flush() error {
	if err := s.q.waitAll(); err != nil {
		return err
	}
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("coldstore: flush: %w", err)
	}
	return s.retireLog()
}

// Compact compacts the whole key space (used after bulk reclamation in tests
// and by DEBUG-style maintenance).
func (s *Store) Compact() error {
	if err := s.q.waitAll(); err != nil {
		return err
	}
	if err := s.db.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
		return fmt.Errorf("coldstore: compact: %w", err)
	}
	return nil
}
