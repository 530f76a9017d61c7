package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var build struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// BuildSpillway returns the path of a spillway binary: $SPILLWAY_BIN if set,
// otherwise ./cmd/spillway of this module built once per test binary with
// `go build -o` into a temporary directory (removed by CleanupBuild). A
// failed build fails every test that asks for the binary.
func BuildSpillway(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("SPILLWAY_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("harness: SPILLWAY_BIN: %v", err)
		}
		return p
	}
	build.once.Do(func() { build.bin, build.err = buildSpillway() })
	if build.err != nil {
		t.Fatalf("harness: build spillway: %v", build.err)
	}
	return build.bin
}

func buildSpillway() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "spillway-itest-")
	if err != nil {
		return "", fmt.Errorf("temp dir: %w", err)
	}
	build.dir = dir
	bin := filepath.Join(dir, "spillway")
	cmd := exec.Command(goTool(), "build", "-o", bin, "./cmd/spillway")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build ./cmd/spillway in %s: %w\n%s", root, err, out)
	}
	return bin, nil
}

// CleanupBuild removes the directory of the binary built by BuildSpillway.
// Call it from TestMain after m.Run.
func CleanupBuild() {
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
}

// moduleRoot walks up from the working directory to the directory holding
// go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("getwd: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}
