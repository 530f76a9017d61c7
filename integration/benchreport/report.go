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
	"errors"
	"fmt"
	"io/fs"
	"math"
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

// figureJSON is Figure as JSON, its Value raw so that it can be null.
type figureJSON struct {
	Section   string          `json:"section"`
	Workload  string          `json:"workload"`
	Target    string          `json:"target"`
	Metric    string          `json:"metric"`
	Value     json.RawMessage `json:"value"`
	Reference string          `json:"reference,omitempty"`
}

// MarshalJSON encodes f as its struct tags say, except that a NaN or
// infinite Value, which JSON cannot hold, is written as null.
func (f Figure) MarshalJSON() ([]byte, error) {
	v := figureJSON{f.Section, f.Workload, f.Target, f.Metric, json.RawMessage("null"), f.Reference}
	if !math.IsNaN(f.Value) && !math.IsInf(f.Value, 0) {
		num, err := json.Marshal(f.Value)
		if err != nil {
			return nil, fmt.Errorf("figure value: %w", err)
		}
		v.Value = num
	}
	return json.Marshal(v)
}

// UnmarshalJSON decodes what MarshalJSON encodes: a null value becomes NaN,
// a missing one 0.
func (f *Figure) UnmarshalJSON(data []byte) error {
	var v figureJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	value := 0.0
	switch s := strings.TrimSpace(string(v.Value)); s {
	case "":
	case "null":
		value = math.NaN()
	default:
		if err := json.Unmarshal(v.Value, &value); err != nil {
			return fmt.Errorf("figure value %s: %w", s, err)
		}
	}
	*f = Figure{v.Section, v.Workload, v.Target, v.Metric, value, v.Reference}
	return nil
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
	fmt.Fprintf(&b, "# Spillway benchmark, %s\n\n", r.Started.UTC().Format("2006-01-02 15:04 UTC"))
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
// latest.json and latest.png. Without a chart no PNG is written and a
// latest.png left by an earlier run is removed. It returns the paths
// written, each name's .md, .json and .png in that order. If only the
// chart fails, the Markdown and JSON are still written and the error says
// so.
func (r *Report) Write(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench results: %w", err)
	}
	stamp := r.Started.UTC().Format("2006-01-02T150405Z")
	md := []byte(r.Markdown())
	r.mu.Lock()
	js, err := json.MarshalIndent(r, "", "  ")
	figs := append([]Figure(nil), r.Figures...)
	r.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("bench results: encode JSON: %w", err)
	}
	png, chartErr := Chart(figs)
	if chartErr != nil {
		png = nil // still save the numbers
		chartErr = fmt.Errorf("bench results: chart: %w", chartErr)
	}
	if png == nil {
		err := os.Remove(filepath.Join(dir, "latest.png"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("bench results: stale chart: %w", err)
		}
	}
	var written []string
	for _, name := range []string{stamp, "latest"} {
		for _, f := range []struct {
			ext  string
			data []byte
		}{{".md", md}, {".json", js}, {".png", png}} {
			if f.data == nil {
				continue
			}
			p := filepath.Join(dir, name+f.ext)
			if err := os.WriteFile(p, f.data, 0o644); err != nil {
				return written, fmt.Errorf("bench results: %w", err)
			}
			written = append(written, p)
		}
	}
	return written, chartErr
}

// Table renders a Markdown table: the first column left-aligned, the others
// right-aligned. Cells are written as given, except that "|" is escaped and
// line breaks become spaces; a row shorter than the header is padded with
// empty cells and a longer one is cut to the header's width. Without header
// cells it returns "".
func Table(header []string, rows [][]string) string {
	if len(header) == 0 {
		return ""
	}
	cell := strings.NewReplacer("|", `\|`, "\r\n", " ", "\n", " ", "\r", " ")
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for i := range header {
			c := ""
			if i < len(cells) {
				c = cell.Replace(cells[i])
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

// Ratio formats v/ref as "1.23x", or "-" when either is missing (zero,
// negative, NaN or infinite) or the ratio is out of range.
func Ratio(v, ref float64) string {
	ok := func(x float64) bool { return x > 0 && !math.IsInf(x, 0) }
	if !ok(v) || !ok(ref) || !ok(v/ref) {
		return "-"
	}
	return fmt.Sprintf("%.2fx", v/ref)
}
