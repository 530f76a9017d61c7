// Package benchreport collects what `make bench` measures and writes it out:
// Markdown sections (printed as they are added, and saved under
// bench/results/), every figure as JSON, and a PNG chart of throughput and
// latency by workload.
//
// A benchmark section builds its Markdown with Table, records its numbers
// with Add, and the run's TestMain calls Write once at the end.
package benchreport

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Metric names the chart understands. Other metrics are kept in the JSON
// and tables only.
const (
	OpsPerSec = "ops/s" // throughput; charted
	P50ms     = "p50 ms"
	P99ms     = "p99 ms" // latency; charted
	P999ms    = "p999 ms"
	RSSMB     = "RSS MB"
	DiskMB    = "disk MB"
	Seconds   = "s"
)

// Figure is one measured number: the median of its runs.
type Figure struct {
	Section  string  `json:"section"`  // e.g. "Hot path, embedded"
	Workload string  `json:"workload"` // e.g. "SET -P 1"
	Target   string  `json:"target"`   // e.g. "redis", "spillway"
	Metric   string  `json:"metric"`   // one of the constants above, or another unit
	Value    float64 `json:"value"`
	// Reference names the target this figure is compared with in the
	// section's table ("" when it is a reference itself).
	Reference string `json:"reference,omitempty"`
}

// Section is one titled part of the report.
type Section struct {
	Title    string `json:"title"`
	Markdown string `json:"markdown"`
}

// Report is a whole `make bench` run. Its methods are safe for concurrent use.
type Report struct {
	mu       sync.Mutex
	Started  time.Time `json:"started"`
	Machine  string    `json:"machine"`
	Command  string    `json:"command"`
	Sections []Section `json:"sections"`
	Figures  []Figure  `json:"figures"`
}

// Default is the process's report, the one the benchmark sections add to.
var Default = &Report{Started: time.Now().UTC()}

// AddSection appends a section and prints it to stdout at once, so a long
// run shows its tables as they are measured.
func (r *Report) AddSection(title, markdown string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Sections = append(r.Sections, Section{Title: title, Markdown: markdown})
	fmt.Printf("\n## %s\n\n%s\n", title, strings.TrimRight(markdown, "\n"))
}

// Add records figures for the JSON file and the chart.
func (r *Report) Add(fs ...Figure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Figures = append(r.Figures, fs...)
}

// Empty reports whether nothing was recorded.
func (r *Report) Empty() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.Sections) == 0 && len(r.Figures) == 0
}

// Markdown renders the whole report: a heading with the machine and the
// command, then every section in the order added.
func (r *Report) Markdown() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "# Spillway benchmark, %s\n\n", r.Started.Format("2006-01-02 15:04 UTC"))
	if r.Machine != "" {
		fmt.Fprintf(&b, "Machine: %s\n\n", r.Machine)
	}
	if r.Command != "" {
		fmt.Fprintf(&b, "Reproduce: `%s`\n\n", r.Command)
	}
	for _, s := range r.Sections {
		fmt.Fprintf(&b, "## %s\n\n%s\n\n", s.Title, strings.TrimRight(s.Markdown, "\n"))
	}
	return b.String()
}

// Write saves the report under dir as <stamp>.md, <stamp>.json and
// <stamp>.png (stamp is the start time, UTC), and copies them to latest.md,
// latest.json and latest.png. It returns the paths written.
func (r *Report) Write(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench results: %w", err)
	}
	stamp := r.Started.Format("2006-01-02T150405Z")
	md := []byte(r.Markdown())
	r.mu.Lock()
	js, err := json.MarshalIndent(r, "", "  ")
	figs := append([]Figure(nil), r.Figures...)
	r.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("bench results: encode JSON: %w", err)
	}
	png, err := Chart(figs)
	if err != nil {
		return nil, fmt.Errorf("bench results: chart: %w", err)
	}
	var written []string
	for _, name := range []string{stamp, "latest"} {
		for ext, data := range map[string][]byte{".md": md, ".json": js, ".png": png} {
			if ext == ".png" && png == nil {
				continue
			}
			p := filepath.Join(dir, name+ext)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				return written, fmt.Errorf("bench results: %w", err)
			}
			written = append(written, p)
		}
	}
	return written, nil
}

// Table renders a Markdown table. Cells are written as given; a row shorter
// than the header is padded with empty cells.
func Table(header []string, rows [][]string) string {
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for i := range header {
			c := ""
			if i < len(cells) {
				c = strings.ReplaceAll(cells[i], "|", `\|`)
			}
			b.WriteString(" " + c + " |")
		}
		b.WriteString("\n")
	}
	line(header)
	b.WriteString("|")
	for i := range header {
		if i == 0 {
			b.WriteString("---|")
		} else {
			b.WriteString("--:|")
		}
	}
	b.WriteString("\n")
	for _, row := range rows {
		line(row)
	}
	return b.String()
}

// Ratio formats v/ref as "1.23x", or "-" when either is missing.
func Ratio(v, ref float64) string {
	if v <= 0 || ref <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", v/ref)
}
