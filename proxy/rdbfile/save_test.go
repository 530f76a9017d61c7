package rdbfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spillway/spillway/proxy/rdbfile"
	"github.com/spillway/spillway/tiering"
)

// TestSaverOneAtATime: while a background save runs, SAVE and BGSAVE are
// refused with ErrInProgress; Cancel stops it, its temporary file removed
// and the previous file kept.
func TestSaverOneAtATime(t *testing.T) {
	s, e := openLocal(t, 256<<20)
	l := s.NewLocal()
	defer l.Close()
	l.Do([]byte("SET"), []byte("k"), []byte("v"))
	dir := t.TempDir()
	path := filepath.Join(dir, "dump.rdb")
	if err := os.WriteFile(path, []byte("previous"), 0o644); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var saver rdbfile.Saver
	opts := rdbfile.DefaultOptions()
	var doneErr error
	ended := make(chan struct{})
	job := rdbfile.Job{
		Snapshot: func() (snap *tiering.Snapshot, dirty int64, err error) {
			<-release // held until the test lets it go
			err = e.View(func(tx *tiering.Tx) (err error) {
				snap, err = tx.Snapshot()
				return err
			})
			return snap, 0, err
		},
		Path:    path,
		Options: &opts,
		Done:    func(_ int64, err error) { doneErr = err; close(ended) },
	}
	if err := saver.Background(job); err != nil {
		t.Fatal(err)
	}
	if !saver.Status().InProgress {
		t.Errorf("Status while a background save runs: %+v", saver.Status())
	}
	if err := saver.Background(job); !errors.Is(err, rdbfile.ErrInProgress) {
		t.Errorf("second Background = %v", err)
	}
	if err := saver.Save(job); !errors.Is(err, rdbfile.ErrInProgress) {
		t.Errorf("Save during Background = %v", err)
	}
	// Cancel before the file is written: the save fails, nothing changes
	// (and, as a save Redis kills, the last status stays ok).
	go func() {
		for !saverCanceling(&saver) {
			time.Sleep(time.Millisecond)
		}
		close(release)
	}()
	saver.Cancel()
	<-ended
	if !errors.Is(doneErr, rdbfile.ErrCanceled) {
		t.Errorf("canceled save ended with %v", doneErr)
	}
	if st := saver.Status(); st.InProgress || !st.LastBgsaveOK || st.Saves != 0 {
		t.Errorf("Status after a canceled save: %+v", st)
	}
	if b, _ := os.ReadFile(path); string(b) != "previous" {
		t.Errorf("a canceled save replaced the file: %q", b)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "temp-*.rdb")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// saverCanceling reports whether Cancel has been called on the running
// save (it then waits for the save to end).
func saverCanceling(s *rdbfile.Saver) bool { return rdbfile.CancelRequested(s) }

func TestSavePoints(t *testing.T) {
	sp, err := rdbfile.ParseSavePoints("3600 1 300 100 60 10000")
	if err != nil || len(sp) != 3 || sp[1] != (rdbfile.SavePoint{Seconds: 300, Changes: 100}) {
		t.Fatalf("ParseSavePoints: %v %v", sp, err)
	}
	if _, err := rdbfile.ParseSavePoints("3600"); err == nil {
		t.Errorf("odd save setting accepted")
	}
	var s rdbfile.Saver
	last := time.Unix(1000, 0)
	for _, c := range []struct {
		dirty int64
		after time.Duration
		due   bool
	}{
		{0, 2 * time.Hour, false},
		{1, 3601 * time.Second, true},
		{1, 3600 * time.Second, false}, // more than the seconds, as Redis
		{100, 301 * time.Second, true},
		{99, 301 * time.Second, false},
		{10000, 61 * time.Second, true},
	} {
		if _, due := s.Due(sp, c.dirty, last, last.Add(c.after)); due != c.due {
			t.Errorf("%d changes after %v: due %v, want %v", c.dirty, c.after, due, c.due)
		}
	}
}
