package benchreport

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	stdfnt "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Chart layout. Sizes are in pixels of the PNG (vgimg draws at 96 dpi).
const (
	chartDPI        = vgimg.DefaultDPI
	chartWidthPx    = 1400
	chartMarginPx   = 12  // around the whole image
	panelGapPx      = 24  // between panels
	panelOverheadPx = 100 // title, x axis, tick and axis labels
	minDataPx       = 90  // smallest data area, room for the legend
	barPx           = 15  // one bar
	groupGapPx      = 10  // between workloads
	maxRowsPerPanel = 40  // more workloads are split over several panels
	maxNameRunes    = 40  // longer workload and target names are shortened
)

// chartFont is the typeface of every text in the chart.
var chartFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// chartPalette gives each target its colour, by first appearance.
var chartPalette = []color.RGBA{
	{0x4e, 0x79, 0xa7, 0xff}, // blue
	{0xf2, 0x8e, 0x2b, 0xff}, // orange
	{0x59, 0xa1, 0x4f, 0xff}, // green
	{0xe1, 0x57, 0x59, 0xff}, // red
	{0xb0, 0x7a, 0xa1, 0xff}, // purple
	{0x76, 0xb7, 0xb2, 0xff}, // teal
	{0x9c, 0x75, 0x5f, 0xff}, // brown
	{0xed, 0xc9, 0x48, 0xff}, // yellow
	{0xff, 0x9d, 0xa7, 0xff}, // pink
	{0x79, 0x70, 0x6e, 0xff}, // grey
}

// Chart draws the figures' throughput (OpsPerSec) and latency (P99ms, with
// P50ms as a narrower inner bar) by workload as one PNG image, nil when there
// is nothing to draw.
//
// Each Section (in first-seen order) gets a throughput panel if it has
// OpsPerSec figures and a latency panel if it has P99ms figures. A panel
// has one group of horizontal bars per Workload and one bar per Target;
// a target keeps its colour in every panel. Figures with other metrics, or
// with a negative, NaN or infinite value, are left out; when a workload,
// target and metric repeat in a section the last figure counts. The image
// is 1400 px wide and grows in height with the panels and workloads.
func Chart(figs []Figure) (png []byte, err error) {
	panels, targets := chartPanels(figs)
	if len(panels) == 0 {
		return nil, nil
	}
	// gonum/plot panics on some states it considers programming errors;
	// report them rather than take the benchmark run down.
	defer func() {
		if r := recover(); r != nil {
			png, err = nil, fmt.Errorf("draw chart: %v", r)
		}
	}()

	colours := make(map[string]color.RGBA, len(targets))
	for i, t := range targets {
		colours[t] = chartPalette[i%len(chartPalette)]
	}

	heightPx := 2*chartMarginPx + panelGapPx*(len(panels)-1)
	for _, pn := range panels {
		heightPx += pn.heightPx()
	}
	img := vgimg.New(pxLen(chartWidthPx), pxLen(float64(heightPx)))
	dc := draw.New(img)

	top := dc.Max.Y - pxLen(chartMarginPx)
	for _, pn := range panels {
		h := pxLen(float64(pn.heightPx()))
		c := draw.Canvas{Canvas: dc.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: dc.Min.X + pxLen(chartMarginPx), Y: top - h},
			Max: vg.Point{X: dc.Max.X - pxLen(chartMarginPx), Y: top},
		}}
		if err := pn.draw(c, colours); err != nil {
			return nil, fmt.Errorf("draw chart panel %q: %w", pn.title, err)
		}
		top -= h + pxLen(panelGapPx)
	}

	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encode chart PNG: %w", err)
	}
	return buf.Bytes(), nil
}

// pxLen converts pixels of the PNG to a vg length.
func pxLen(px float64) vg.Length {
	return vg.Length(px) * vg.Inch / chartDPI
}

// cell names one bar of a panel.
type cell struct{ workload, target string }

// chartPanel is one plot of the chart: bars of one metric by workload and
// target, and optionally an inner bar of a second metric.
type chartPanel struct {
	title     string
	axis      string
	workloads []string // top to bottom
	targets   []string // top to bottom within a group; first-seen order
	bars      map[cell]float64
	inner     map[cell]float64 // nil when there is no inner bar
	innerName string           // legend entry of the inner bars
}

// heightPx is the panel's height in pixels.
func (pn chartPanel) heightPx() int {
	rowPx := len(pn.targets)*barPx + groupGapPx
	return panelOverheadPx + max(len(pn.workloads)*rowPx, minDataPx)
}

// chartPanels sorts the chartable figures into panels, in drawing order,
// and lists every charted target in first-seen order.
func chartPanels(figs []Figure) ([]chartPanel, []string) {
	var sections, targets []string
	seenSection := map[string]bool{}
	seenTarget := map[string]bool{}
	bySection := map[string][]Figure{}
	for _, f := range figs {
		switch f.Metric {
		case OpsPerSec, P99ms, P50ms:
		default:
			continue
		}
		if math.IsNaN(f.Value) || math.IsInf(f.Value, 0) || f.Value < 0 {
			continue
		}
		if !seenSection[f.Section] {
			seenSection[f.Section] = true
			sections = append(sections, f.Section)
		}
		if !seenTarget[f.Target] {
			seenTarget[f.Target] = true
			targets = append(targets, f.Target)
		}
		bySection[f.Section] = append(bySection[f.Section], f)
	}

	var panels []chartPanel
	charted := map[string]bool{}
	for _, s := range sections {
		fs := bySection[s]
		title := chartName(s, "(untitled)")
		thr := collect(fs, targets, OpsPerSec)
		thr.title = title + ": throughput"
		thr.axis = "throughput, ops/s (higher is better)"
		lat := collect(fs, targets, P99ms, P50ms)
		lat.title = title + ": latency"
		lat.axis = "p99 latency, ms (lower is better)"
		if lat.inner != nil {
			lat.axis = "p99 latency, ms (lower is better); darker inner bar: p50"
			lat.innerName = "p50"
		}
		for _, pn := range []chartPanel{thr, lat} {
			if len(pn.bars) == 0 {
				continue // no throughput, or no p99 (p50 alone is not charted)
			}
			for _, t := range pn.targets {
				charted[t] = true
			}
			panels = append(panels, pn.split()...)
		}
	}
	var used []string
	for _, t := range targets {
		if charted[t] {
			used = append(used, t)
		}
	}
	return panels, used
}

// collect gathers one section's figures of metric (and of inner, if given)
// into a panel without title or axis. allTargets orders the targets.
func collect(fs []Figure, allTargets []string, metric string, inner ...string) chartPanel {
	pn := chartPanel{bars: map[cell]float64{}, inner: map[cell]float64{}}
	seenWorkload := map[string]bool{}
	present := map[string]bool{}
	for _, f := range fs {
		var into map[cell]float64
		switch {
		case f.Metric == metric:
			into = pn.bars
		case len(inner) > 0 && f.Metric == inner[0]:
			into = pn.inner
		default:
			continue
		}
		into[cell{f.Workload, f.Target}] = f.Value
		if !seenWorkload[f.Workload] {
			seenWorkload[f.Workload] = true
			pn.workloads = append(pn.workloads, f.Workload)
		}
		present[f.Target] = true
	}
	for _, t := range allTargets {
		if present[t] {
			pn.targets = append(pn.targets, t)
		}
	}
	if len(pn.inner) == 0 {
		pn.inner = nil
	}
	return pn
}

// split cuts a panel with many workloads into several of at most
// maxRowsPerPanel workloads each.
func (pn chartPanel) split() []chartPanel {
	n := (len(pn.workloads) + maxRowsPerPanel - 1) / maxRowsPerPanel
	if n <= 1 {
		return []chartPanel{pn}
	}
	parts := make([]chartPanel, 0, n)
	for i := 0; i < n; i++ {
		part := pn
		part.title = fmt.Sprintf("%s (part %d of %d)", pn.title, i+1, n)
		part.workloads = pn.workloads[i*maxRowsPerPanel : min((i+1)*maxRowsPerPanel, len(pn.workloads))]
		parts = append(parts, part)
	}
	return parts
}

// draw plots the panel onto c.
func (pn chartPanel) draw(c draw.Canvas, colours map[string]color.RGBA) error {
	rows, cols := len(pn.workloads), len(pn.targets)
	if rows == 0 || cols == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = pn.title
	p.Title.TextStyle.Font = font.From(chartFont, 14)
	p.Title.TextStyle.Font.Weight = stdfnt.WeightBold
	p.Title.Padding = pxLen(8)
	p.X.Label.Text = pn.axis
	p.X.Label.TextStyle.Font = font.From(chartFont, 11)
	p.X.Label.Padding = pxLen(4)
	p.X.Tick.Label.Font = font.From(chartFont, 10)
	p.Y.Tick.Label.Font = font.From(chartFont, 10)
	p.Legend.TextStyle.Font = font.From(chartFont, 10)
	p.Legend.Top = true
	p.Legend.Padding = pxLen(2)
	p.Legend.ThumbnailWidth = pxLen(18)

	// Workload i is drawn at y = rows-1-i so that the first is on top.
	names := make([]string, rows)
	for i, w := range pn.workloads {
		names[rows-1-i] = chartName(w, "(none)")
	}
	p.NominalY(names...)
	p.Y.Padding = 0

	maxV := 0.0
	for _, w := range pn.workloads {
		for _, t := range pn.targets {
			maxV = math.Max(maxV, pn.bars[cell{w, t}])
			maxV = math.Max(maxV, pn.inner[cell{w, t}])
		}
	}
	if maxV <= 0 {
		maxV = 1
	}
	xMax := maxV * 1.22 // room for the value labels and the legend
	p.X.Tick.Marker = plot.TickerFunc(niceTicks)

	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil
	grid.Vertical.Color = color.Gray{Y: 0xdd}
	p.Add(grid)

	// Fix the ranges before measuring the data area, then size the bars
	// to fill most of each workload's row.
	setRanges := func() {
		p.X.Min, p.X.Max = 0, xMax
		p.Y.Min, p.Y.Max = -0.5, float64(rows)-0.5
	}
	setRanges()
	data := p.DataCanvas(c)
	rowLen := (data.Max.Y - data.Min.Y) / vg.Length(rows)
	barW := rowLen * vg.Length(cols*barPx) / vg.Length(cols*barPx+groupGapPx) / vg.Length(cols)
	barW = max(min(barW, pxLen(barPx*1.4)), pxLen(1))

	valueStyle := text.Style{
		Color:   color.Gray{Y: 0x33},
		Font:    font.From(chartFont, 9),
		XAlign:  draw.XLeft,
		YAlign:  draw.YCenter,
		Handler: p.TextHandler,
	}
	missingStyle := valueStyle
	missingStyle.Color = color.Gray{Y: 0x99}
	present := map[string]int{} // workload: targets with a bar
	for c := range pn.bars {
		present[c.workload]++
	}

	for k, t := range pn.targets {
		offset := barW * vg.Length(float64(cols-1)/2-float64(k))
		vals := make(plotter.Values, rows)
		xys := make(plotter.XYs, rows)
		labels := make([]string, rows)
		styles := make([]text.Style, rows)
		for i, w := range pn.workloads {
			y := rows - 1 - i
			v, ok := pn.bars[cell{w, t}]
			vals[y] = v
			xys[y] = plotter.XY{X: v, Y: float64(y)}
			switch {
			case ok:
				labels[y], styles[y] = formatValue(v), valueStyle
			case 2*present[w] >= cols:
				// Missing where most targets were measured: say so.
				labels[y], styles[y] = "n/a", missingStyle
			default:
				styles[y] = valueStyle
			}
		}
		bars, err := plotter.NewBarChart(vals, barW)
		if err != nil {
			return fmt.Errorf("bars of %q: %w", t, err)
		}
		bars.Horizontal = true
		bars.Offset = offset
		bars.Color = colours[t]
		bars.LineStyle.Width = 0
		p.Add(bars)
		p.Legend.Add(chartName(t, "(none)"), bars)

		if pn.inner != nil {
			inner := make(plotter.Values, rows)
			for i, w := range pn.workloads {
				inner[rows-1-i] = pn.inner[cell{w, t}]
			}
			ib, err := plotter.NewBarChart(inner, max(barW*0.4, pxLen(1)))
			if err != nil {
				return fmt.Errorf("inner bars of %q: %w", t, err)
			}
			ib.Horizontal = true
			ib.Offset = offset
			ib.Color = darker(colours[t])
			ib.LineStyle.Width = 0
			p.Add(ib)
		}

		lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
		if err != nil {
			return fmt.Errorf("labels of %q: %w", t, err)
		}
		lbl.TextStyle = styles
		lbl.Offset = vg.Point{X: pxLen(4), Y: offset}
		p.Add(lbl)
	}
	if pn.inner != nil {
		key, err := plotter.NewBarChart(plotter.Values{0}, pxLen(1))
		if err != nil {
			return fmt.Errorf("legend: %w", err)
		}
		key.Color = color.Gray{Y: 0x55}
		key.LineStyle.Width = 0
		p.Legend.Add(pn.innerName+" (inner bar)", key)
	}
	setRanges() // Add widened them to the data
	p.Draw(c)
	return nil
}

// darker returns c with less light, for the inner bars.
func darker(c color.RGBA) color.RGBA {
	const f = 0.55
	return color.RGBA{
		R: uint8(float64(c.R) * f),
		G: uint8(float64(c.G) * f),
		B: uint8(float64(c.B) * f),
		A: c.A,
	}
}

// chartName is s made fit for a label: trimmed, shortened, or empty
// replaced by def.
func chartName(s, def string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return def
	}
	if utf8.RuneCountInString(s) > maxNameRunes {
		r := []rune(s)
		s = string(r[:maxNameRunes-3]) + "..."
	}
	return s
}

// niceTicks returns about eight evenly spaced, round, labelled ticks
// between lo and hi; none for an empty or non-finite range.
func niceTicks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return nil
	}
	raw := (hi - lo) / 8
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	scale, suffix := 1.0, ""
	switch {
	case hi >= 1e6 && step >= 1e5:
		scale, suffix = 1e6, "M"
	case step >= 1e3:
		scale, suffix = 1e3, "k"
	}
	dec := decimals(step / scale)
	var ticks []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi+step*1e-9 && len(ticks) < 20; i++ {
		v := i * step
		p := math.Pow10(dec)
		label := strconv.FormatFloat(math.Round(v/scale*p)/p, 'f', -1, 64)
		if v != 0 {
			label += suffix
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: label})
	}
	return ticks
}

// decimals is how many decimal places show step exactly (at most 9).
func decimals(step float64) int {
	for d := 0; d < 9; d++ {
		m := step * math.Pow10(d)
		if math.Abs(m-math.Round(m)) <= 1e-6*m {
			return d
		}
	}
	return 9
}

// formatValue renders a bar's value with three significant digits and a
// k or M suffix: 123456 as "123k", 1234 as "1.23k", 0.0123 as "0.0123".
func formatValue(v float64) string {
	scale, suffix := 1.0, ""
	switch a := math.Abs(v); {
	case a >= 999.5e3:
		scale, suffix = 1e6, "M"
	case a >= 999.5:
		scale, suffix = 1e3, "k"
	}
	s := strconv.FormatFloat(v/scale, 'g', 3, 64)
	if strings.ContainsAny(s, "e") { // very large or very small
		s = strconv.FormatFloat(v/scale, 'f', -1, 64)
		if len(s) > 10 {
			s = strconv.FormatFloat(v/scale, 'e', 2, 64)
		}
	}
	return s + suffix
}
