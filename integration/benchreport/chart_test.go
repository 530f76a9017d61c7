package benchreport

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadFigures reads testdata/figures.json: two sections of 10 workloads x
// 2 targets with ops/s, p50 and p99, plus figures the chart leaves out.
func loadFigures(t *testing.T) []Figure {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "figures.json"))
	if err != nil {
		t.Fatal(err)
	}
	var figs []Figure
	if err := json.Unmarshal(data, &figs); err != nil {
		t.Fatalf("decode testdata: %v", err)
	}
	if len(figs) == 0 {
		t.Fatal("testdata has no figures")
	}
	return figs
}

// decodePNG decodes a chart and returns its size.
func decodePNG(t *testing.T, data []byte) image.Point {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("chart is not a PNG: %v", err)
	}
	return img.Bounds().Size()
}

// only keeps the figures of the given sections and metrics.
func only(figs []Figure, sections []string, metrics ...string) []Figure {
	var out []Figure
	for _, f := range figs {
		sOK := false
		for _, s := range sections {
			sOK = sOK || f.Section == s
		}
		mOK := false
		for _, m := range metrics {
			mOK = mOK || f.Metric == m
		}
		if sOK && mOK {
			out = append(out, f)
		}
	}
	return out
}

func TestChartNothingToDraw(t *testing.T) {
	tests := []struct {
		name string
		figs []Figure
	}{
		{"nil", nil},
		{"empty", []Figure{}},
		{"other metrics", []Figure{
			{Section: "s", Workload: "w", Target: "t", Metric: RSSMB, Value: 10},
			{Section: "s", Workload: "w", Target: "t", Metric: Seconds, Value: 1},
			{Section: "s", Workload: "w", Target: "t", Metric: P999ms, Value: 1},
		}},
		{"p50 without p99", []Figure{{Section: "s", Workload: "w", Target: "t", Metric: P50ms, Value: 1}}},
		{"only unusable values", []Figure{
			{Section: "s", Workload: "w", Target: "t", Metric: OpsPerSec, Value: math.NaN()},
			{Section: "s", Workload: "w", Target: "t", Metric: OpsPerSec, Value: math.Inf(1)},
			{Section: "s", Workload: "w", Target: "t", Metric: P99ms, Value: -1},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Chart(tc.figs)
			if err != nil || got != nil {
				t.Fatalf("Chart = %d bytes, %v; want nil, nil", len(got), err)
			}
		})
	}
}

func TestChartTestdata(t *testing.T) {
	figs := loadFigures(t)
	emb, tcp := "Hot path, embedded", "Hot path, over TCP"
	tests := []struct {
		name   string
		figs   []Figure
		panels int
	}{
		{"one throughput panel", only(figs, []string{emb}, OpsPerSec), 1},
		{"throughput and latency", only(figs, []string{emb}, OpsPerSec, P50ms, P99ms), 2},
		{"p99 without p50", only(figs, []string{emb}, OpsPerSec, P99ms), 2},
		{"two sections", only(figs, []string{emb, tcp}, OpsPerSec, P50ms, P99ms), 4},
		{"everything", figs, 4},
	}
	heights := map[int]int{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := len(mustPanels(tc.figs)); got != tc.panels {
				t.Fatalf("%d panels, want %d", got, tc.panels)
			}
			data, err := Chart(tc.figs)
			if err != nil {
				t.Fatal(err)
			}
			size := decodePNG(t, data)
			if size.X != chartWidthPx {
				t.Errorf("width %d, want %d", size.X, chartWidthPx)
			}
			if h, ok := heights[tc.panels]; ok && h != size.Y {
				t.Errorf("height %d, want %d like the other %d-panel chart", size.Y, h, tc.panels)
			}
			heights[tc.panels] = size.Y
		})
	}
	if !(heights[1] < heights[2] && heights[2] < heights[4]) {
		t.Errorf("height does not grow with panels: %v", heights)
	}
	if out := os.Getenv("BENCHREPORT_CHART_OUT"); out != "" {
		data, err := Chart(figs)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// mustPanels returns the panels Chart would draw.
func mustPanels(figs []Figure) []chartPanel {
	p, _ := chartPanels(figs)
	return p
}

func TestChartPanels(t *testing.T) {
	figs := []Figure{
		{Section: "B", Workload: "w1", Target: "spillway", Metric: OpsPerSec, Value: 1},
		{Section: "A", Workload: "w2", Target: "redis", Metric: P99ms, Value: 2},
		{Section: "A", Workload: "w1", Target: "redis", Metric: OpsPerSec, Value: 3},
		{Section: "A", Workload: "w2", Target: "spillway", Metric: OpsPerSec, Value: 4},
		{Section: "A", Workload: "w2", Target: "spillway", Metric: OpsPerSec, Value: 5}, // last wins
		{Section: "A", Workload: "w3", Target: "redis", Metric: P50ms, Value: 1},
		{Section: "C", Workload: "w", Target: "other", Metric: RSSMB, Value: 1},
	}
	panels, targets := chartPanels(figs)
	if got, want := strings.Join(targets, ","), "spillway,redis"; got != want {
		t.Errorf("targets %q, want %q", got, want)
	}
	var got []string
	for _, p := range panels {
		got = append(got, p.title+" ["+strings.Join(p.workloads, ",")+"] ["+strings.Join(p.targets, ",")+"]")
	}
	want := []string{
		"B: throughput [w1] [spillway]",
		"A: throughput [w1,w2] [spillway,redis]",
		"A: latency [w2,w3] [redis]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("panels:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if v := panels[1].bars[cell{"w2", "spillway"}]; v != 5 {
		t.Errorf("repeated figure: value %v, want the last one, 5", v)
	}
	if panels[0].inner != nil || panels[2].inner == nil {
		t.Errorf("inner bars: throughput %v, latency %v; want only latency", panels[0].inner, panels[2].inner)
	}
}

func TestChartSplitsLongPanels(t *testing.T) {
	var figs []Figure
	for i := 0; i < maxRowsPerPanel+5; i++ {
		figs = append(figs, Figure{Section: "s", Workload: strings.Repeat("w", i+1), Target: "t", Metric: OpsPerSec, Value: float64(i)})
	}
	panels := mustPanels(figs)
	if len(panels) != 2 || len(panels[0].workloads) != maxRowsPerPanel || len(panels[1].workloads) != 5 {
		t.Fatalf("got %d panels, want 2 of %d and 5 workloads", len(panels), maxRowsPerPanel)
	}
	data, err := Chart(figs)
	if err != nil {
		t.Fatal(err)
	}
	decodePNG(t, data)
}

func TestChartOddInput(t *testing.T) {
	long := strings.Repeat("very long workload name ", 10)
	tests := []struct {
		name string
		figs []Figure
	}{
		{"single figure", []Figure{{Section: "s", Workload: "w", Target: "t", Metric: OpsPerSec, Value: 1000}}},
		{"single latency figure", []Figure{{Section: "s", Workload: "w", Target: "t", Metric: P99ms, Value: 0.5}}},
		{"empty names", []Figure{
			{Metric: OpsPerSec, Value: 1},
			{Metric: P99ms, Value: 2},
			{Metric: P50ms, Value: 1},
		}},
		{"all zero", []Figure{
			{Section: "s", Workload: "a", Target: "t", Metric: OpsPerSec},
			{Section: "s", Workload: "b", Target: "u", Metric: OpsPerSec},
			{Section: "s", Workload: "a", Target: "t", Metric: P99ms},
		}},
		{"mixed bad values", []Figure{
			{Section: "s", Workload: "a", Target: "t", Metric: OpsPerSec, Value: math.NaN()},
			{Section: "s", Workload: "b", Target: "t", Metric: OpsPerSec, Value: -5},
			{Section: "s", Workload: "c", Target: "t", Metric: OpsPerSec, Value: math.Inf(-1)},
			{Section: "s", Workload: "d", Target: "t", Metric: OpsPerSec, Value: 7},
			{Section: "s", Workload: "d", Target: "t", Metric: P99ms, Value: math.NaN()},
			{Section: "s", Workload: "d", Target: "t", Metric: P50ms, Value: 3},
		}},
		{"tiny and huge", []Figure{
			{Section: "s", Workload: "a", Target: "t", Metric: OpsPerSec, Value: 1e-9},
			{Section: "s", Workload: "b", Target: "t", Metric: OpsPerSec, Value: 1e15},
			{Section: "s", Workload: "a", Target: "t", Metric: P99ms, Value: math.SmallestNonzeroFloat64},
			{Section: "s", Workload: "b", Target: "t", Metric: P99ms, Value: math.MaxFloat64 / 4},
		}},
		{"p50 above p99, missing cells", []Figure{
			{Section: "s", Workload: "a", Target: "t", Metric: P99ms, Value: 1},
			{Section: "s", Workload: "a", Target: "t", Metric: P50ms, Value: 5},
			{Section: "s", Workload: "b", Target: "u", Metric: P50ms, Value: 2},
		}},
		{"long names, many targets", func() []Figure {
			var fs []Figure
			for i := 0; i < 13; i++ {
				fs = append(fs, Figure{Section: long, Workload: long + string(rune('a'+i)), Target: long + string(rune('A'+i)), Metric: OpsPerSec, Value: float64(i * 1000)})
			}
			return fs
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := Chart(tc.figs)
			if err != nil {
				t.Fatal(err)
			}
			if data == nil {
				t.Fatal("no chart")
			}
			if size := decodePNG(t, data); size.X != chartWidthPx {
				t.Errorf("width %d, want %d", size.X, chartWidthPx)
			}
		})
	}
}

func TestNiceTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		want   string
	}{
		{0, 122000, "0 20k 40k 60k 80k 100k 120k"},
		{0, 1.22, "0 0.2 0.4 0.6 0.8 1 1.2"},
		{0, 1220, "0 200 400 600 800 1000 1200"},
		{0, 9000, "0 2k 4k 6k 8k"},
		{0, 800e3, "0 100k 200k 300k 400k 500k 600k 700k 800k"},
		{0, 0.3, "0 0.05 0.1 0.15 0.2 0.25 0.3"},
		{0, 2.5e6, "0 0.5M 1M 1.5M 2M 2.5M"},
		{0, 0, ""},
		{1, 0, ""},
		{0, math.Inf(1), ""},
		{math.NaN(), 1, ""},
	}
	for _, tc := range tests {
		var got []string
		for _, tk := range niceTicks(tc.lo, tc.hi) {
			got = append(got, tk.Label)
		}
		if s := strings.Join(got, " "); s != tc.want {
			t.Errorf("niceTicks(%v, %v) = %q, want %q", tc.lo, tc.hi, s, tc.want)
		}
	}
}

func TestFormatValue(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{0, "0"},
		{0.0123, "0.0123"},
		{1.5, "1.5"},
		{12.345, "12.3"},
		{999, "999"},
		{1234, "1.23k"},
		{123456, "123k"},
		{999999, "1M"},
		{2_500_000, "2.5M"},
		{1e-7, "0.0000001"},
	}
	for _, tc := range tests {
		if got := formatValue(tc.v); got != tc.want {
			t.Errorf("formatValue(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}
