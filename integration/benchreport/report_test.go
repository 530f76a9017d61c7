package benchreport

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestTable(t *testing.T) {
	tests := []struct {
		name   string
		header []string
		rows   [][]string
		want   string
	}{
		{
			name:   "plain",
			header: []string{"workload", "redis", "spillway"},
			rows:   [][]string{{"SET", "120,000", "118,000"}, {"GET", "130,000", "131,500"}},
			want: "| workload | redis | spillway |\n" +
				"|---|--:|--:|\n" +
				"| SET | 120,000 | 118,000 |\n" +
				"| GET | 130,000 | 131,500 |\n",
		},
		{
			name:   "pipes escaped",
			header: []string{"a|b", "c"},
			rows:   [][]string{{"ZADD | ZRANGE", "x|y|z"}},
			want: "| a\\|b | c |\n" +
				"|---|--:|\n" +
				"| ZADD \\| ZRANGE | x\\|y\\|z |\n",
		},
		{
			name:   "short rows padded, long rows cut",
			header: []string{"a", "b", "c"},
			rows:   [][]string{{"1"}, {}, {"1", "2", "3", "4"}},
			want: "| a | b | c |\n" +
				"|---|--:|--:|\n" +
				"| 1 |  |  |\n" +
				"|  |  |  |\n" +
				"| 1 | 2 | 3 |\n",
		},
		{
			name:   "line breaks become spaces",
			header: []string{"note"},
			rows:   [][]string{{"one\ntwo\r\nthree"}},
			want:   "| note |\n|---|\n| one two three |\n",
		},
		{
			name:   "no rows",
			header: []string{"a", "b"},
			want:   "| a | b |\n|---|--:|\n",
		},
		{
			name: "no header",
			rows: [][]string{{"1"}},
			want: "",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Table(tc.header, tc.rows); got != tc.want {
				t.Errorf("Table:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestRatio(t *testing.T) {
	tests := []struct {
		v, ref float64
		want   string
	}{
		{2, 1, "2.00x"},
		{118000, 120000, "0.98x"},
		{1, 3, "0.33x"},
		{0, 1, "-"},
		{1, 0, "-"},
		{-1, 1, "-"},
		{1, -1, "-"},
		{math.NaN(), 1, "-"},
		{1, math.NaN(), "-"},
		{math.Inf(1), 1, "-"},
		{1, math.Inf(1), "-"},
		{math.MaxFloat64, 1e-300, "-"},
	}
	for _, tc := range tests {
		if got := Ratio(tc.v, tc.ref); got != tc.want {
			t.Errorf("Ratio(%v, %v) = %q, want %q", tc.v, tc.ref, got, tc.want)
		}
	}
}

func TestMarkdown(t *testing.T) {
	started := time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name string
		r    *Report
		want string
	}{
		{
			name: "heading only",
			r:    &Report{Started: started},
			want: "# Spillway benchmark, 2025-03-04 04:06 UTC\n\n",
		},
		{
			name: "machine, command and sections in order",
			r: &Report{
				Started: started,
				Machine: "2 cores",
				Command: "make bench",
				Sections: []Section{
					{Title: "Zeta", Markdown: "first\n\n\n"},
					{Title: "Alpha", Markdown: "second"},
					{Title: "Mid", Markdown: "| a |\n|---|\n"},
				},
			},
			want: "# Spillway benchmark, 2025-03-04 04:06 UTC\n\n" +
				"Machine: 2 cores\n\n" +
				"Reproduce: `make bench`\n\n" +
				"## Zeta\n\nfirst\n\n" +
				"## Alpha\n\nsecond\n\n" +
				"## Mid\n\n| a |\n|---|\n\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Markdown(); got != tc.want {
				t.Errorf("Markdown:\n%q\nwant:\n%q", got, tc.want)
			}
		})
	}
}

func TestAddSectionOrderAndEmpty(t *testing.T) {
	r := &Report{Started: time.Now().UTC()}
	if !r.Empty() {
		t.Fatal("new report not empty")
	}
	for _, title := range []string{"c", "a", "b"} {
		r.AddSection(title, "body "+title)
	}
	if r.Empty() {
		t.Fatal("report with sections is empty")
	}
	md := r.Markdown()
	ic, ia, ib := strings.Index(md, "## c\n"), strings.Index(md, "## a\n"), strings.Index(md, "## b\n")
	if ic < 0 || !(ic < ia && ia < ib) {
		t.Errorf("sections not in the order added:\n%s", md)
	}

	r = &Report{}
	r.Add(Figure{Metric: OpsPerSec, Value: 1})
	if r.Empty() {
		t.Error("report with a figure is empty")
	}
}

func TestAddConcurrent(t *testing.T) {
	r := &Report{}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				r.Add(Figure{Value: float64(j)})
			}
		}()
	}
	wg.Wait()
	if len(r.Figures) != 400 {
		t.Errorf("%d figures, want 400", len(r.Figures))
	}
}

func TestFigureJSON(t *testing.T) {
	tests := []struct {
		name string
		in   Figure
		json string
	}{
		{
			name: "all fields",
			in:   Figure{Section: "s", Workload: "w", Target: "spillway", Metric: OpsPerSec, Value: 1.5, Reference: "redis"},
			json: `{"section":"s","workload":"w","target":"spillway","metric":"ops/s","value":1.5,"reference":"redis"}`,
		},
		{
			name: "no reference",
			in:   Figure{Section: "s", Workload: "w", Target: "redis", Metric: P99ms, Value: 0},
			json: `{"section":"s","workload":"w","target":"redis","metric":"p99 ms","value":0}`,
		},
		{
			name: "NaN",
			in:   Figure{Metric: P50ms, Value: math.NaN()},
			json: `{"section":"","workload":"","target":"","metric":"p50 ms","value":null}`,
		},
		{
			name: "infinite",
			in:   Figure{Metric: P50ms, Value: math.Inf(-1)},
			json: `{"section":"","workload":"","target":"","metric":"p50 ms","value":null}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			js, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(js) != tc.json {
				t.Errorf("JSON %s, want %s", js, tc.json)
			}
			var back Figure
			if err := json.Unmarshal(js, &back); err != nil {
				t.Fatal(err)
			}
			want := tc.in
			if math.IsInf(want.Value, 0) {
				want.Value = math.NaN()
			}
			if !sameFigure(back, want) {
				t.Errorf("round trip %+v, want %+v", back, want)
			}
		})
	}

	var f Figure
	if err := json.Unmarshal([]byte(`{"metric":"s"}`), &f); err != nil || f.Value != 0 || f.Metric != Seconds {
		t.Errorf("no value: %+v, %v; want value 0", f, err)
	}
	if err := json.Unmarshal([]byte(`{"value":"fast"}`), &f); err == nil {
		t.Error("string value decoded without error")
	}
}

// sameFigure compares figures, NaN equal to NaN.
func sameFigure(a, b Figure) bool {
	if math.IsNaN(a.Value) && math.IsNaN(b.Value) {
		a.Value, b.Value = 0, 0
	}
	return a == b
}

func TestWrite(t *testing.T) {
	started := time.Date(2025, 3, 4, 5, 6, 7, 0, time.FixedZone("CET", 3600))
	const stamp = "2025-03-04T040607Z"
	figs := loadFigures(t)
	figs = append(figs, Figure{Section: "odd", Workload: "w", Target: "t", Metric: P99ms, Value: math.NaN()})

	dir := filepath.Join(t.TempDir(), "results") // Write creates it
	r := &Report{Started: started, Machine: "test box", Command: "make bench"}
	r.AddSection("Hot path, embedded", Table([]string{"workload", "ops/s"}, [][]string{{"SET", "1"}}))
	r.Add(figs...)
	written, err := r.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, name := range []string{stamp, "latest"} {
		for _, ext := range []string{".md", ".json", ".png"} {
			want = append(want, filepath.Join(dir, name+ext))
		}
	}
	if !slices.Equal(written, want) {
		t.Errorf("written %q, want %q", written, want)
	}
	for _, ext := range []string{".md", ".json", ".png"} {
		a, errA := os.ReadFile(filepath.Join(dir, stamp+ext))
		b, errB := os.ReadFile(filepath.Join(dir, "latest"+ext))
		if errA != nil || errB != nil || !bytes.Equal(a, b) || len(a) == 0 {
			t.Errorf("%s: %s and latest differ or are missing (%v, %v)", ext, stamp, errA, errB)
		}
	}

	md, _ := os.ReadFile(filepath.Join(dir, "latest.md"))
	if string(md) != r.Markdown() {
		t.Errorf("latest.md is not the report's Markdown:\n%s", md)
	}

	js, _ := os.ReadFile(filepath.Join(dir, "latest.json"))
	var back Report
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatalf("decode JSON: %v", err)
	}
	if len(back.Figures) != len(figs) {
		t.Fatalf("JSON has %d figures, want %d", len(back.Figures), len(figs))
	}
	for i := range figs {
		if !sameFigure(back.Figures[i], figs[i]) {
			t.Errorf("figure %d: %+v, want %+v", i, back.Figures[i], figs[i])
		}
	}
	if !back.Started.Equal(started) || back.Machine != r.Machine || back.Command != r.Command ||
		len(back.Sections) != 1 || back.Sections[0] != r.Sections[0] {
		t.Errorf("JSON header or sections differ: %q %q %q %+v", back.Started, back.Machine, back.Command, back.Sections)
	}

	img, _ := os.ReadFile(filepath.Join(dir, "latest.png"))
	if cfg, err := png.DecodeConfig(bytes.NewReader(img)); err != nil || cfg.Width != chartWidthPx {
		t.Errorf("latest.png: %+v, %v", cfg, err)
	}

	// A later run without chartable figures leaves no stale latest.png.
	r2 := &Report{Started: started.Add(time.Hour)}
	r2.AddSection("Restart", "no chart here")
	r2.Add(Figure{Section: "Restart", Workload: "w", Target: "t", Metric: Seconds, Value: 2})
	written, err = r2.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 4 {
		t.Errorf("written %q, want .md and .json twice", written)
	}
	for _, p := range written {
		if strings.HasSuffix(p, ".png") {
			t.Errorf("wrote %s without a chart", p)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "latest.png")); !os.IsNotExist(err) {
		t.Errorf("stale latest.png kept: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, stamp+".png")); err != nil {
		t.Errorf("earlier run's chart removed: %v", err)
	}
}

func TestWriteBadDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Report{}
	r.AddSection("s", "x")
	if _, err := r.Write(filepath.Join(file, "sub")); err == nil {
		t.Error("Write under a file succeeded")
	}
}
