package rdbfile

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/tiering"
)

// ErrInProgress is refused by a save while a background save runs.
var ErrInProgress = errors.New("rdbfile: background save already in progress")

// ErrCanceled ends a background save that Cancel stopped.
var ErrCanceled = errors.New("rdbfile: save canceled")

// WriteFile writes snap to path as Redis does: into a temporary file in the
// same directory ("temp-<pid>-<n>.rdb"), synced, then renamed over path and
// the directory synced, so that path always holds a complete file. A
// failed or canceled write removes the temporary file. canceled, if not
// nil, is polled between chunks. It returns the file's size.
func WriteFile(path string, snap *tiering.Snapshot, opts Options, canceled *atomic.Bool) (int64, error) {
	dir := filepath.Dir(path)
	tmp := filepath.Join(dir, fmt.Sprintf("temp-%d-%d.rdb", os.Getpid(), tempSeq.Add(1)))
	f, err := os.Create(tmp)
	if err != nil {
		return 0, fmt.Errorf("rdbfile: %w", err)
	}
	cw := &countingWriter{f: f, canceled: canceled}
	err = Write(cw, snap, opts)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("rdbfile: save %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return cw.n, nil
}

var tempSeq atomic.Int64

type countingWriter struct {
	f        *os.File
	n        int64
	canceled *atomic.Bool
}

func (w *countingWriter) Write(p []byte) (int, error) {
	if w.canceled != nil && w.canceled.Load() {
		return 0, ErrCanceled
	}
	n, err := w.f.Write(p)
	w.n += int64(n)
	return n, err
}

// SnapshotFunc takes the snapshot a save writes (under the engine lock)
// and reports the server's change counter at that moment.
type SnapshotFunc func() (snap *tiering.Snapshot, dirty int64, err error)

// Job is one save: what to snapshot and where and how to write it.
type Job struct {
	Snapshot SnapshotFunc
	Path     string
	// Options may be filled in by Snapshot (it runs first).
	Options *Options
	// Done, if set, is called when the save ends, with the change counter
	// the snapshot covered and the save's error.
	Done func(dirty int64, err error)
}

// Saver runs the RDB saves of one server: at most one background save at
// a time, foreground saves refused while one runs, and the status INFO
// persistence reports. The zero value is ready.
type Saver struct {
	mu        sync.Mutex
	bg        bool
	bgStart   time.Time
	bgDone    chan struct{}
	cancel    atomic.Bool
	lastBgErr bool
	lastBgDur int64 // seconds, -1 before the first
	lastTry   time.Time
	saves     int64
	started   bool
	fileMu    sync.Mutex // one file written at a time
	// Log gets the saves' and loads' lines (slog.Default if nil).
	Log *slog.Logger

	host    Host
	loading atomic.Bool
	load    atomic.Pointer[loadState]
}

// Status is the saves' state, as INFO persistence reports it.
type Status struct {
	InProgress        bool
	LastBgsaveOK      bool
	LastBgsaveSecs    int64 // -1 before the first background save
	CurrentBgsaveSecs int64 // -1 when none runs
	Saves             int64 // saves that succeeded since start
	LastTry           time.Time
}

// Status returns the current state.
func (s *Saver) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{InProgress: s.bg, LastBgsaveOK: !s.lastBgErr, LastBgsaveSecs: -1,
		CurrentBgsaveSecs: -1, Saves: s.saves, LastTry: s.lastTry}
	if s.started {
		st.LastBgsaveSecs = s.lastBgDur
	}
	if s.bg {
		st.CurrentBgsaveSecs = int64(time.Since(s.bgStart) / time.Second)
	}
	return st
}

func (s *Saver) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.Default()
}

// run takes the snapshot and writes the file.
func (s *Saver) run(j Job, canceled *atomic.Bool) (int64, error) {
	s.fileMu.Lock()
	defer s.fileMu.Unlock()
	snap, dirty, err := j.Snapshot()
	if err != nil {
		return 0, err
	}
	defer snap.Close()
	_, err = WriteFile(j.Path, snap, *j.Options, canceled)
	return dirty, err
}

// Save writes the file now, in the caller's goroutine (SAVE). It is
// refused with ErrInProgress while a background save runs.
func (s *Saver) Save(j Job) error {
	s.mu.Lock()
	if s.bg {
		s.mu.Unlock()
		return ErrInProgress
	}
	s.mu.Unlock()
	start := time.Now()
	dirty, err := s.run(j, nil)
	s.mu.Lock()
	if err == nil {
		s.saves++
	}
	s.mu.Unlock()
	if err != nil {
		s.log().Error("RDB save failed", "path", j.Path, "err", err)
	} else {
		s.log().Info("DB saved on disk", "path", j.Path, "took", time.Since(start).Round(time.Millisecond))
	}
	if j.Done != nil {
		j.Done(dirty, err)
	}
	return err
}

// Background starts the save in a goroutine (BGSAVE), or returns
// ErrInProgress if one runs.
func (s *Saver) Background(j Job) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bg {
		return ErrInProgress
	}
	s.bg, s.bgStart, s.lastTry = true, time.Now(), time.Now()
	s.bgDone = make(chan struct{})
	s.cancel.Store(false)
	s.log().Info("Background saving started", "path", j.Path)
	go func() {
		dirty, err := s.run(j, &s.cancel)
		s.mu.Lock()
		s.bg, s.started = false, true
		s.lastBgDur = int64(time.Since(s.bgStart) / time.Second)
		if !errors.Is(err, ErrCanceled) { // as Redis's SIGUSR1 kill: no error status
			s.lastBgErr = err != nil
		}
		if err == nil {
			s.saves++
		}
		done := s.bgDone
		s.mu.Unlock()
		if err != nil {
			s.log().Error("Background saving error", "path", j.Path, "err", err)
		} else {
			s.log().Info("Background saving terminated with success", "path", j.Path)
		}
		if j.Done != nil {
			j.Done(dirty, err)
		}
		close(done)
	}()
	return nil
}

// Cancel stops a running background save and waits for it to end (its
// temporary file removed), as Redis kills its child at shutdown.
func (s *Saver) Cancel() {
	s.mu.Lock()
	done := s.bgDone
	running := s.bg
	s.mu.Unlock()
	if !running {
		return
	}
	s.cancel.Store(true)
	<-done
}

// Wait waits for a running background save to end.
func (s *Saver) Wait() {
	s.mu.Lock()
	done, running := s.bgDone, s.bg
	s.mu.Unlock()
	if running {
		<-done
	}
}

// SavePoint is one `save` setting pair: save after Seconds if at least
// Changes changes were made.
type SavePoint struct {
	Seconds int64
	Changes int64
}

// ParseSavePoints reads the `save` setting ("3600 1 300 100"; "" for none).
func ParseSavePoints(v string) ([]SavePoint, error) {
	f := strings.Fields(v)
	if len(f)%2 != 0 {
		return nil, fmt.Errorf("rdbfile: save %q: odd number of arguments", v)
	}
	var sp []SavePoint
	for i := 0; i < len(f); i += 2 {
		secs, err1 := strconv.ParseInt(f[i], 10, 64)
		ch, err2 := strconv.ParseInt(f[i+1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("rdbfile: save %q: not integers", v)
		}
		sp = append(sp, SavePoint{Seconds: secs, Changes: ch})
	}
	return sp, nil
}

// bgsaveRetryDelay is how long a failed background save waits before a
// save point triggers another (Redis's CONFIG_BGSAVE_RETRY_DELAY).
const bgsaveRetryDelay = 5 * time.Second

// Due reports whether a save point is reached, as Redis's serverCron
// checks them: changes >= the point's, more than its seconds since the
// last successful save, and the last background save succeeded or was
// tried more than 5 seconds ago. It returns the point reached.
func (s *Saver) Due(points []SavePoint, dirty int64, lastSave, now time.Time) (SavePoint, bool) {
	st := s.Status()
	if st.InProgress {
		return SavePoint{}, false
	}
	for _, p := range points {
		if dirty >= p.Changes && now.Sub(lastSave) > time.Duration(p.Seconds)*time.Second &&
			(st.LastBgsaveOK || now.Sub(st.LastTry) > bgsaveRetryDelay) {
			return p, true
		}
	}
	return SavePoint{}, false
}
