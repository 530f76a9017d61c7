package rdbfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spillway/spillway/tiering"
)

// ViewFunc runs fn under the engine lock: Engine.View, or a command's
// Ctx.View (which, inside MULTI or a script, runs in the group's
// transaction).
type ViewFunc func(fn func(tx *tiering.Tx) error) error

// Host is what a Saver needs from the server it saves for (embedded mode).
type Host struct {
	Engine *tiering.Engine
	// Setting returns a setting's current value, as CONFIG GET shows it.
	Setting func(name string) string
	// Functions returns FUNCTION DUMP's payload (the libraries).
	Functions func() []byte
	// Dirty is the change counter (rdb_changes_since_last_save); Saved is
	// told that a save covering dirty of those changes succeeded (reset
	// the counter by them, set LASTSAVE); LastSave is LASTSAVE.
	Dirty    func() int64
	Saved    func(dirty int64)
	LastSave func() time.Time
	// FunctionsLoaded is called after a load stored function libraries.
	FunctionsLoaded func() error
}

// SetHost binds the saver to its server; call it before any other method
// but Status.
func (s *Saver) SetHost(h Host) { s.host = h }

// Path is the RDB file: dbfilename in the store's directory (dir).
func (s *Saver) Path() string {
	return filepath.Join(s.host.Engine.Cold().Dir(), s.host.Setting("dbfilename"))
}

// Options are the writer's options from the settings: the compact
// encodings' limits, rdbcompression, rdbchecksum and the function
// libraries. A full resync writes its RDB with them (adding Repl).
func (s *Saver) Options() Options {
	o := DefaultOptions()
	for _, f := range []struct {
		name string
		v    *int64
	}{
		{"hash-max-listpack-entries", &o.HashMaxListpackEntries},
		{"hash-max-listpack-value", &o.HashMaxListpackValue},
		{"zset-max-listpack-entries", &o.ZSetMaxListpackEntries},
		{"zset-max-listpack-value", &o.ZSetMaxListpackValue},
		{"set-max-intset-entries", &o.SetMaxIntsetEntries},
		{"list-max-listpack-size", &o.ListMaxListpackSize},
	} {
		if n, err := strconv.ParseInt(s.host.Setting(f.name), 10, 64); err == nil {
			*f.v = n
		}
	}
	o.NoCompression = s.host.Setting("rdbcompression") == "no"
	o.NoChecksum = s.host.Setting("rdbchecksum") == "no"
	if libs := s.host.Functions(); len(libs) > 10 {
		o.Functions = libs[:len(libs)-10] // FUNCTION DUMP's payload without its footer
	}
	return o
}

// job is a save of the whole dataset to Path, its snapshot taken by view.
func (s *Saver) job(view ViewFunc) Job {
	opts := s.Options()
	return Job{
		Snapshot: func() (snap *tiering.Snapshot, dirty int64, err error) {
			err = view(func(tx *tiering.Tx) (err error) {
				dirty = s.host.Dirty()
				opts.UsedMem = tx.Engine().Hot().UsedBytes()
				snap, err = tx.Snapshot()
				return err
			})
			return snap, dirty, err
		},
		Path:    s.Path(),
		Options: &opts,
		Done: func(dirty int64, err error) {
			if err == nil {
				s.host.Saved(dirty)
			}
		},
	}
}

// SaveNow is SAVE: the file is written before it returns.
func (s *Saver) SaveNow(view ViewFunc) error { return s.Save(s.job(view)) }

// BackgroundSave is BGSAVE: the snapshot is taken under the engine lock
// (after a MULTI or script holding it ends) and the file written in the
// background.
func (s *Saver) BackgroundSave() error { return s.Background(s.job(s.host.Engine.View)) }

// SavePoints reports whether the save setting holds any save point.
func (s *Saver) SavePoints() bool { return strings.TrimSpace(s.host.Setting("save")) != "" }

// RunSavePoints starts a background save whenever a `save` point is
// reached (checked every second, as Redis's serverCron does), until stop
// is closed.
func (s *Saver) RunSavePoints(stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			points, err := ParseSavePoints(s.host.Setting("save"))
			if err != nil || len(points) == 0 {
				continue
			}
			dirty := s.host.Dirty()
			p, due := s.Due(points, dirty, s.host.LastSave(), now)
			if !due {
				continue
			}
			s.log().Info("save point reached, saving", "changes", dirty, "seconds", p.Seconds)
			if err := s.BackgroundSave(); err != nil && !errors.Is(err, ErrInProgress) {
				s.log().Error("background save failed to start", "err", err)
			}
		}
	}
}

// ShutdownSave is a shutdown's save: a running background save is
// canceled, then the file is written with view's snapshot.
func (s *Saver) ShutdownSave(view ViewFunc) error {
	s.Cancel()
	s.log().Info("saving the final RDB snapshot before exiting")
	return s.SaveNow(view)
}

// AfterFlushAll is FLUSHALL's save: as Redis, with save points configured
// it rewrites the file (now without keys) so that a restart does not bring
// the old dataset back, canceling a background save first. Inside MULTI
// or a script (inGroup) the save runs in the background once the group
// commits. A failure is only logged.
func (s *Saver) AfterFlushAll(view ViewFunc, inGroup bool) {
	if !s.SavePoints() {
		return
	}
	s.Cancel()
	if inGroup {
		if err := s.BackgroundSave(); err != nil && !errors.Is(err, ErrInProgress) {
			s.log().Error("saving after FLUSHALL failed", "err", err)
		}
		return
	}
	s.SaveNow(view) // logs its failure
}

// SetLoading marks a load as under way (true) before the server listens,
// so that no client sees the dataset before LoadFile has filled it.
func (s *Saver) SetLoading(on bool) { s.loading.Store(on) }

// Loading reports whether an RDB file is loading: commands without the
// loading flag are then refused.
func (s *Saver) Loading() bool { return s.loading.Load() }

// loadState is a load's progress while it runs, then its outcome.
type loadState struct {
	progress *Progress
	stats    LoadStats
}

// LoadFile loads the RDB file at path into the engine (whose store must be
// empty), then has the host load the function libraries it held. Loading
// reports true meanwhile; progress is logged and shown by WriteInfo.
// Closing stop cancels it (ErrLoadCanceled). On error nothing of the file
// is kept.
func (s *Saver) LoadFile(path string, stop <-chan struct{}) (LoadStats, error) {
	s.loading.Store(true)
	defer s.loading.Store(false)
	f, err := os.Open(path)
	if err != nil {
		return LoadStats{}, fmt.Errorf("load RDB: %w", err)
	}
	defer f.Close()
	st := &loadState{progress: &Progress{Start: time.Now()}}
	if fi, err := f.Stat(); err == nil {
		st.progress.Total = fi.Size()
	}
	s.load.Store(st)
	s.log().Info("loading RDB file", "path", path, "bytes", st.progress.Total)
	stats, err := Load(f, s.host.Engine, LoadOptions{Logger: s.log(), Size: st.progress.Total, Progress: st.progress, Stop: stop})
	s.load.Store(&loadState{stats: stats})
	if err != nil {
		return stats, fmt.Errorf("load RDB %s: %w", path, err)
	}
	if stats.Functions > 0 && s.host.FunctionsLoaded != nil {
		if err := s.host.FunctionsLoaded(); err != nil {
			return stats, err
		}
	}
	return stats, nil
}

// WriteInfo writes INFO persistence's RDB fields, rdb_changes_since_last_save
// to rdb_last_load_keys_loaded, in Redis's order.
func (s *Saver) WriteInfo(sb *strings.Builder) {
	st := s.Status()
	status := "ok"
	if !st.LastBgsaveOK {
		status = "err"
	}
	var last LoadStats
	if l := s.load.Load(); l != nil {
		last = l.stats
	}
	lastSave := s.host.LastSave().Unix()
	fmt.Fprintf(sb, "rdb_changes_since_last_save:%d\r\nrdb_bgsave_in_progress:%d\r\n"+
		"rdb_last_save_time:%d\r\nrdb_last_bgsave_status:%s\r\nrdb_last_bgsave_time_sec:%d\r\n"+
		"rdb_current_bgsave_time_sec:%d\r\nrdb_saves:%d\r\nrdb_last_cow_size:0\r\n"+
		"rdb_last_load_keys_expired:%d\r\nrdb_last_load_keys_loaded:%d\r\n",
		s.host.Dirty(), b2i(st.InProgress), lastSave, status, st.LastBgsaveSecs,
		st.CurrentBgsaveSecs, st.Saves, last.Expired, last.Keys)
}

// WriteLoadingInfo writes INFO persistence's loading_* fields while a load
// runs (nothing otherwise).
func (s *Saver) WriteLoadingInfo(sb *strings.Builder) {
	l := s.load.Load()
	if l == nil || l.progress == nil || !s.loading.Load() {
		return
	}
	p := l.progress
	done := p.Bytes.Load()
	perc, eta := 0.0, int64(1)
	if p.Total > 0 {
		perc = float64(done) * 100 / float64(p.Total)
		if done > 0 {
			eta = int64(time.Since(p.Start).Seconds() * float64(p.Total-done) / float64(done))
		}
	}
	fmt.Fprintf(sb, "loading_start_time:%d\r\nloading_total_bytes:%d\r\nloading_rdb_used_mem:0\r\n"+
		"loading_loaded_bytes:%d\r\nloading_loaded_perc:%.2f\r\nloading_eta_seconds:%d\r\n",
		p.Start.Unix(), p.Total, done, perc, eta)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
