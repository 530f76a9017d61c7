package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spillway/spillway/integration/benchreport"
	"github.com/spillway/spillway/integration/harness"
)

func TestMain(m *testing.M) {
	code := m.Run()
	harness.CleanupBuild()
	if os.Getenv("SPILLWAY_BENCH") == "1" && !benchreport.Default.Empty() {
		if err := writeBenchResults(); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// writeBenchResults saves the run's report (Markdown, JSON figures, PNG
// chart) under SPILLWAY_BENCH_RESULTS, by default the repository's
// bench/results.
func writeBenchResults() error {
	dir := os.Getenv("SPILLWAY_BENCH_RESULTS")
	if dir == "" {
		dir = filepath.Join("..", "bench", "results")
	}
	r := benchreport.Default
	r.Machine = strings.TrimSpace(strings.TrimPrefix(machineNotes(), "machine: "))
	r.Command = "make bench"
	if os.Getenv("SPILLWAY_BENCH_FULL") == "1" {
		r.Command = "make bench-full"
	}
	paths, err := r.Write(dir)
	for _, p := range paths {
		fmt.Println("bench results:", p)
	}
	return err
}
