package coldstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// The write log. Every batch the store commits is appended to it, in commit
// order, before Pebble sees it; Pebble runs without a WAL of its own
// (Options.DisableWAL) and holds what was applied to it only once a
// memtable is flushed. The log is therefore the durability record: at Open,
// whatever it holds is applied again (replay), which is harmless for what
// Pebble already had: every record is a blind Set, Delete or DeleteRange,
// so applying a suffix of the order again, in order, ends in the same
// state.
//
// Decoupling the two lets a committed batch wait in memory before Pebble
// applies it (commitq.go): writes are durable once logged, and Pebble gets
// them later, coalesced (a key written a thousand times in the meantime is
// applied once).
//
// On disk: a directory of segments named by a decimal sequence number,
// each a run of frames: 4 bytes of length, 4 bytes of CRC-32C of the
// batch, the batch (Pebble's batch representation). A segment is closed
// (synced) once it exceeds segBytes and a new one started; a closed
// segment is retired (deleted) once every batch it holds is applied and
// Pebble has flushed them. A crash can leave a torn frame at the tail of
// the newest segment only: replay stops there and cuts it off.

// logDirName is the log's directory inside the store's.
const logDirName = "spillway-log"

// frameHeader is a frame's length and checksum.
const frameHeader = 8

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// appendFrame appends repr as one frame to dst.
func appendFrame(dst, repr []byte) []byte {
	var h [frameHeader]byte
	binary.LittleEndian.PutUint32(h[:4], uint32(len(repr)))
	binary.LittleEndian.PutUint32(h[4:], crc32.Checksum(repr, crcTable))
	return append(append(dst, h[:]...), repr...)
}

// nextFrame splits the first frame off p. ok is false when p holds no
// complete, intact frame (the end of a log, or a torn or corrupt tail).
func nextFrame(p []byte) (repr, rest []byte, ok bool) {
	repr, rest, ok = splitFrame(p)
	if !ok || crc32.Checksum(repr, crcTable) != binary.LittleEndian.Uint32(p[4:8]) {
		return nil, p, false
	}
	return repr, rest, true
}

// wlog is the open write log. write and rotation are called by one
// goroutine at a time (the commit queue's writer); sync and retire may run
// concurrently with them. A sync's fsync runs without mu, so that the
// writer keeps appending meanwhile: with mu held through it, the
// everysec fsync (hundreds of milliseconds under a write burst) held up
// the log writer, hence every application round (which waits for the
// writer) and every writer throttled behind a round (README, "Write
// tails"). Closing the file (rotation, close) takes syncMu first, so an
// fsync never meets a closed file. Lock order: syncMu before mu.
type wlog struct {
	dir      string
	segBytes int64
	logger   *slog.Logger

	mu     sync.Mutex // f, num, size, writes, closed (f's closing also holds syncMu)
	f      *os.File
	num    uint64
	size   int64
	writes int             // write calls made (tests count them)
	closed []closedSegment // oldest first

	// written is the number of the last batch written to the log, synced
	// that of the last batch made durable (fsync).
	written, synced atomic.Uint64
	// total counts the bytes ever written (LogWritten).
	total  atomic.Int64
	syncMu sync.Mutex // one fsync at a time, and f not closed during it
}

// closedSegment is a segment no longer written, with the number of the
// last batch it holds.
type closedSegment struct {
	num  uint64
	last uint64
	size int64
}

func (l *wlog) path(num uint64) string {
	return filepath.Join(l.dir, fmt.Sprintf("%016d.log", num))
}

// segments lists the log's segment numbers, oldest first.
func segments(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("coldstore: list log: %w", err)
	}
	var nums []uint64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(name, 10, 64)
		if err != nil {
			continue
		}
		nums = append(nums, n)
	}
	slices.Sort(nums)
	return nums, nil
}

// logReplay takes a log's replay: every intact batch in order (add), and
// the end of each segment (endSegment), after which the batches' bytes
// are released.
type logReplay interface {
	add(repr []byte) error
	endSegment() error
}

// openLog opens the log in dir (creating it), hands every intact batch it
// holds to replay in order, and returns the log ready for writing, with the
// replayed segments still on disk: the caller retires them (retireAll)
// once what replay wrote is flushed. A torn frame at the end of the last
// segment is cut off; one anywhere else is an error (the log was damaged,
// not interrupted).
func openLog(dir string, segBytes int64, logger *slog.Logger, replay logReplay) (*wlog, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("coldstore: create log directory: %w", err)
	}
	l := &wlog{dir: dir, segBytes: segBytes, logger: logger}
	nums, err := segments(dir)
	if err != nil {
		return nil, err
	}
	var batches, bytes int64
	for i, num := range nums {
		data, unmap, err := mapSegment(l.path(num))
		if err != nil {
			return nil, fmt.Errorf("coldstore: read log segment %d: %w", num, err)
		}
		n, size, err := replaySegment(data, replay)
		unmap()
		if err != nil {
			return nil, fmt.Errorf("coldstore: replay log segment %d: %w", num, err)
		}
		batches += n
		bytes += size
		if torn := int64(len(data)) - size; torn > 0 {
			if i != len(nums)-1 {
				return nil, fmt.Errorf("coldstore: log segment %d is damaged at offset %d (not the newest segment)", num, size)
			}
			logger.Warn("write log ends in a torn frame; cutting it off", "segment", num, "offset", size, "bytes", torn)
			if err := os.Truncate(l.path(num), size); err != nil {
				return nil, fmt.Errorf("coldstore: cut torn log tail: %w", err)
			}
		}
		l.closed = append(l.closed, closedSegment{num: num, size: size})
		if (i+1)%4 == 0 || i == len(nums)-1 {
			logger.Info("write log replay", "segments", i+1, "of", len(nums), "batches", batches, "bytes", bytes)
		}
	}
	next := uint64(1)
	if len(nums) > 0 {
		next = nums[len(nums)-1] + 1
	}
	if err := l.create(next); err != nil {
		return nil, err
	}
	return l, nil
}

// replaySegment hands the intact frames of a segment's bytes to replay,
// then ends the segment. It returns how many batches it replayed and the
// length of the frames they took (the segment's, unless its tail is
// torn).
func replaySegment(data []byte, replay logReplay) (batches, size int64, err error) {
	rest := data
	for len(rest) > 0 {
		repr, r, ok := nextFrame(rest)
		if !ok {
			break
		}
		if err := replay.add(repr); err != nil {
			return batches, 0, err
		}
		rest = r
		batches++
	}
	return batches, int64(len(data) - len(rest)), replay.endSegment()
}

// mapSegment maps the segment at path into memory, read only: a replay
// reads it once, and a copy (os.ReadFile) cost as much as checking its
// frames. unmap releases it (the bytes are invalid afterwards).
func mapSegment(path string) (data []byte, unmap func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.Size() == 0 {
		return nil, func() {}, nil
	}
	if st.Size() > math.MaxInt32 {
		return nil, nil, fmt.Errorf("segment of %d bytes", st.Size())
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED|syscall.MAP_POPULATE)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap: %w", err)
	}
	return data, func() { _ = syscall.Munmap(data) }, nil
}

// create starts segment num as the one written.
func (l *wlog) create(num uint64) error {
	f, err := os.OpenFile(l.path(num), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("coldstore: create log segment: %w", err)
	}
	if err := syncDir(l.dir); err != nil {
		f.Close()
		return err
	}
	l.f, l.num, l.size = f, num, 0
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("coldstore: open log directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("coldstore: sync log directory: %w", err)
	}
	return nil
}

// write appends frames (whole frames, the batches up to number last) to
// the log and rotates the segment once it is full.
func (l *wlog) write(frames []byte, last uint64) error {
	l.mu.Lock()
	if _, err := l.f.Write(frames); err != nil {
		l.mu.Unlock()
		return fmt.Errorf("coldstore: write log: %w", err)
	}
	l.size += int64(len(frames))
	l.total.Add(int64(len(frames)))
	l.writes++
	l.written.Store(last)
	full := l.size >= l.segBytes
	l.mu.Unlock()
	if !full {
		return nil
	}
	return l.rotate()
}

// rotate closes the current segment, if it holds anything, and starts a
// new one. It is called by the log's writer.
func (l *wlog) rotate() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.size == 0 {
		return nil
	}
	return l.rotateLocked()
}

// rotateLocked closes the current segment, synced, and starts the next.
// syncMu and mu are held.
func (l *wlog) rotateLocked() error {
	last := l.written.Load()
	// A closed segment is synced: later syncs only look at the current one.
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("coldstore: sync log: %w", err)
	}
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("coldstore: close log segment: %w", err)
	}
	l.closed = append(l.closed, closedSegment{num: l.num, last: last, size: l.size})
	return l.create(l.num + 1)
}

// sync makes every batch written so far durable; concurrent callers share
// one fsync. It returns at once when nothing new was written since the
// last sync.
func (l *wlog) sync() error {
	target := l.written.Load()
	if l.synced.Load() >= target {
		return nil
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	if l.synced.Load() >= target {
		return nil
	}
	l.mu.Lock()
	f := l.f
	target = l.written.Load() // under mu: what f holds
	l.mu.Unlock()
	if f == nil {
		return fmt.Errorf("coldstore: sync log: closed")
	}
	// Without mu: the writer appends meanwhile (what it appends is the
	// next sync's); f stays open, as closing it takes syncMu.
	if err := f.Sync(); err != nil {
		return fmt.Errorf("coldstore: sync log: %w", err)
	}
	l.synced.Store(target)
	return nil
}

// retirable returns how many closed segments hold only batches numbered at
// most applied.
func (l *wlog) retirable(applied uint64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for n < len(l.closed) && l.closed[n].last <= applied {
		n++
	}
	return n
}

// bytes is the size of the log's segments.
func (l *wlog) bytes() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.size
	for _, seg := range l.closed {
		n += seg.size
	}
	return n
}

// retire deletes the n oldest closed segments: the caller has made sure
// Pebble flushed every batch they hold.
func (l *wlog) retire(n int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	n = min(n, len(l.closed))
	var errs []error
	for _, seg := range l.closed[:n] {
		if err := os.Remove(l.path(seg.num)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("coldstore: retire log segment %d: %w", seg.num, err))
		}
	}
	l.closed = append(l.closed[:0], l.closed[n:]...)
	return errors.Join(errs...)
}

// retireAll deletes every segment, the current one included, and starts a
// new one: the caller has made sure every batch written is applied and
// flushed (after replay, and at Close).
func (l *wlog) retireAll() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	cur := l.num
	if err := l.f.Close(); err != nil {
		l.mu.Unlock()
		return fmt.Errorf("coldstore: close log segment: %w", err)
	}
	l.closed = append(l.closed, closedSegment{num: cur})
	l.mu.Unlock()
	if err := l.retire(len(l.closed)); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.synced.Store(l.written.Load())
	return l.create(cur + 1)
}

// close syncs and closes the current segment.
func (l *wlog) close() error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Sync()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	if err != nil {
		return fmt.Errorf("coldstore: close log: %w", err)
	}
	return nil
}

// diskBytes is the log's size on disk.
func (l *wlog) diskBytes() int64 {
	var n int64
	nums, err := segments(l.dir)
	if err != nil {
		return 0
	}
	for _, num := range nums {
		if fi, err := os.Stat(l.path(num)); err == nil {
			n += fi.Size()
		}
	}
	return n
}
