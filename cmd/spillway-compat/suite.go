package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// A patch is a change to the suite's harness (never to a test), applied
// to the run's copy of the suite and listed in the report.
type patch struct {
	File string // relative to the suite
	Old  string // must occur exactly once
	New  string
	Why  string
}

// harnessPatches are the run-time changes to the suite's harness. None is
// needed so far: the suite's external mode only sends FLUSHALL and
// FUNCTION FLUSH before each server block and wraps its DEBUG LOG call in
// catch. A change goes here, minimal, with its reason, and the report
// lists it.
var harnessPatches = []patch{}

// prepareSuite copies the suite's runtest and tests/ into work (the suite
// writes into tests/tmp, and runs must not share it) and applies the
// harness patches there; the cached source tree is never changed.
func prepareSuite(suite, work string) ([]patch, error) {
	if _, err := os.Stat(filepath.Join(suite, "tests", "test_helper.tcl")); err != nil {
		return nil, fmt.Errorf("no suite in %s: %w", suite, err)
	}
	if err := os.RemoveAll(work); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	// cp -a keeps the helpers' modes.
	cp := exec.Command("cp", "-a", filepath.Join(suite, "runtest"), filepath.Join(suite, "tests"), work)
	if out, err := cp.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copy the suite: %v: %s", err, out)
	}
	if err := linkSrc(suite, work); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(work, "tests", "tmp"), 0o755); err != nil {
		return nil, err
	}
	for _, p := range harnessPatches {
		path := filepath.Join(work, p.File)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if n := strings.Count(string(b), p.Old); n != 1 {
			return nil, fmt.Errorf("harness patch of %s: the text to replace occurs %d times (the suite changed?)", p.File, n)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(string(b), p.Old, p.New, 1)), 0o644); err != nil {
			return nil, err
		}
	}
	return harnessPatches, nil
}

// linkSrc makes work/src: links to the source tree's files (version.h...)
// and, in place of the binaries a build would leave there, the installed
// ones (the suite runs src/redis-cli, src/redis-benchmark...).
func linkSrc(suite, work string) error {
	dst := filepath.Join(work, "src")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(suite, "src"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(suite, "src", e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	for _, bin := range []string{"redis-server", "redis-cli", "redis-benchmark", "redis-check-aof", "redis-check-rdb"} {
		if p, err := exec.LookPath(bin); err == nil {
			os.Remove(filepath.Join(dst, bin))
			if err := os.Symlink(p, filepath.Join(dst, bin)); err != nil {
				return err
			}
		}
	}
	return nil
}
