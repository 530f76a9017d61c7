package latency

import (
	"strconv"
	"strings"
)

// graphCols is the width of LATENCY GRAPH's chart (LATENCY_GRAPH_COLS);
// graphRows its height in rows of characters.
const (
	graphCols = 80
	graphRows = 4
)

// Graph returns LATENCY GRAPH's text for event at unix time now: a header
// with the samples' highest and lowest latency and the all-time high, a
// rule, then Redis's filled sparkline of the samples, oldest first, each
// labelled below with how long ago it was taken ("12s", "3m", "2h", "1d"),
// written vertically. false if the event has no samples.
func (m *Monitor) Graph(event string, now int64) (string, bool) {
	m.mu.Lock()
	ts := m.events[event]
	var samples []Sample
	var allTime int64
	if ts != nil {
		samples, allTime = ts.history(), ts.max
	}
	m.mu.Unlock()
	if ts == nil {
		return "", false
	}
	var lo, hi int64
	labels := make([]string, len(samples))
	values := make([]float64, len(samples))
	for i, s := range samples {
		if i == 0 || s.Latency > hi {
			hi = s.Latency
		}
		if i == 0 || s.Latency < lo {
			lo = s.Latency
		}
		values[i] = float64(s.Latency)
		labels[i] = ago(now - s.Time)
	}
	var b strings.Builder
	b.WriteString(event)
	b.WriteString(" - high " + strconv.FormatInt(hi, 10) + " ms, low " + strconv.FormatInt(lo, 10) +
		" ms (all time high " + strconv.FormatInt(allTime, 10) + " ms)\n")
	b.WriteString(strings.Repeat("-", graphCols))
	b.WriteByte('\n')
	sparkline(&b, values, labels)
	return b.String(), true
}

// ago formats an age in seconds as Redis's graph labels do.
func ago(sec int64) string {
	switch {
	case sec < 60:
		return strconv.FormatInt(sec, 10) + "s"
	case sec < 3600:
		return strconv.FormatInt(sec/60, 10) + "m"
	case sec < 24*3600:
		return strconv.FormatInt(sec/3600, 10) + "h"
	}
	return strconv.FormatInt(sec/(24*3600), 10) + "d"
}

// sparkline draws values as Redis's sparklineRender does with
// SPARKLINE_FILL: graphCols samples per chart (charts separated by an
// empty line), graphRows rows of "_o#" steps scaled between the lowest
// and the highest value, '|' below a step, then after one blank row each
// sample's label, one character per row.
func sparkline(b *strings.Builder, values []float64, labels []string) {
	if len(values) == 0 {
		return
	}
	lo, hi := values[0], values[0]
	for _, v := range values {
		lo, hi = min(lo, v), max(hi, v)
	}
	for j := 0; j < len(values); j += graphCols {
		if j != 0 {
			b.WriteByte('\n')
		}
		end := min(j+graphCols, len(values))
		sparkRange(b, values[j:end], labels[j:end], lo, hi)
	}
}

const fillChars = "_o#"

func sparkRange(b *strings.Builder, values []float64, labels []string, lo, hi float64) {
	span := hi - lo
	if span == 0 {
		span = 1
	}
	steps := len(fillChars) * graphRows
	line := make([]byte, len(values))
	for row := 0; ; row++ {
		more := false
		for j := range line {
			line[j] = ' '
		}
		if row < graphRows {
			for j, v := range values {
				// The step is truncated twice, as Redis computes it.
				step := int(float64(int((v-lo)*float64(steps))) / span)
				step = min(max(step, 0), steps-1)
				more = true
				switch idx := step - (graphRows-row-1)*len(fillChars); {
				case idx >= 0 && idx < len(fillChars):
					line[j] = fillChars[idx]
				case idx >= len(fillChars):
					line[j] = '|'
				}
			}
		} else if row == graphRows {
			more = true // the blank row above the labels
		} else {
			k := row - graphRows - 1
			for j, l := range labels {
				if k < len(l) {
					more = true
					line[j] = l[k]
				}
			}
		}
		if !more {
			return
		}
		b.Write(line)
		b.WriteByte('\n')
	}
}
