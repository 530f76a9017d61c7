// Package latency is Redis 7.0's latency monitor: for each event class
// ("command", "fast-command", "expire-cycle"...) the latest 160 samples
// at or above latency-monitor-threshold milliseconds, one per second (the
// highest), and the highest ever (LATENCY LATEST, HISTORY, RESET, GRAPH,
// DOCTOR).
//
// The monitor does not time anything: callers measure, check Monitor.Over
// (one comparison) and call Monitor.Add for the samples it reports over.
package latency

import (
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// HistoryLen is how many samples an event keeps (Redis's LATENCY_TS_LEN).
const HistoryLen = 160

// Sample is one second's highest latency of an event.
type Sample struct {
	Time    int64 // unix seconds
	Latency int64 // milliseconds
}

// series is one event's samples: a ring of HistoryLen, next the slot the
// next second's sample takes; a zero Time is an empty slot.
type series struct {
	samples [HistoryLen]Sample
	next    int
	max     int64
}

// Monitor holds the events' samples. The zero value is not ready: use New.
type Monitor struct {
	// threshold is latency-monitor-threshold in ms, math.MaxInt64 while it
	// is 0 (the monitor is off), so that Over is one comparison.
	threshold atomic.Int64

	mu     sync.Mutex
	events map[string]*series
}

// New returns a monitor with no events, off (threshold 0).
func New() *Monitor {
	m := &Monitor{events: map[string]*series{}}
	m.threshold.Store(math.MaxInt64)
	return m
}

// SetThreshold applies latency-monitor-threshold (ms; 0 turns the monitor
// off, keeping what it recorded).
func (m *Monitor) SetThreshold(ms int64) {
	if ms <= 0 {
		ms = math.MaxInt64
	}
	m.threshold.Store(ms)
}

// Threshold returns latency-monitor-threshold in ms (0: off).
func (m *Monitor) Threshold() int64 {
	if v := m.threshold.Load(); v != math.MaxInt64 {
		return v
	}
	return 0
}

// Over reports whether a latency of ms milliseconds is to be recorded
// (Redis's latencyAddSampleIfNeeded): the monitor is on and ms is at or
// above its threshold.
func (m *Monitor) Over(ms int64) bool { return ms >= m.threshold.Load() }

// Add records a latency of ms milliseconds for event at unix time now:
// a new sample, or the second's sample raised to ms if one was taken in
// the same second. Callers check Over first.
func (m *Monitor) Add(event string, ms, now int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := m.events[event]
	if ts == nil {
		ts = &series{}
		m.events[event] = ts
	}
	ts.max = max(ts.max, ms)
	prev := &ts.samples[(ts.next+HistoryLen-1)%HistoryLen]
	if prev.Time == now {
		prev.Latency = max(prev.Latency, ms)
		return
	}
	ts.samples[ts.next] = Sample{Time: now, Latency: ms}
	ts.next = (ts.next + 1) % HistoryLen
}

// Latest is one event's line of LATENCY LATEST.
type Latest struct {
	Event         string
	Time, Latency int64 // the latest sample
	Max           int64 // the highest latency ever recorded
}

// Latest returns every event's latest sample, by event name.
func (m *Monitor) Latest() []Latest {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Latest, 0, len(m.events))
	for _, name := range m.namesLocked() {
		ts := m.events[name]
		s := ts.samples[(ts.next+HistoryLen-1)%HistoryLen]
		out = append(out, Latest{Event: name, Time: s.Time, Latency: s.Latency, Max: ts.max})
	}
	return out
}

// History returns event's samples, oldest first (nil if the event has
// none); the name is matched exactly, as Redis does.
func (m *Monitor) History(event string) []Sample {
	m.mu.Lock()
	defer m.mu.Unlock()
	ts := m.events[event]
	if ts == nil {
		return nil
	}
	return ts.history()
}

func (ts *series) history() []Sample {
	out := make([]Sample, 0, HistoryLen)
	for j := 0; j < HistoryLen; j++ {
		if s := ts.samples[(ts.next+j)%HistoryLen]; s.Time != 0 {
			out = append(out, s)
		}
	}
	return out
}

// Reset drops the events named (any case), or every event if none is
// named, and returns how many it dropped (LATENCY RESET).
func (m *Monitor) Reset(events ...string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(events) == 0 {
		n := len(m.events)
		clear(m.events)
		return n
	}
	n := 0
	for _, e := range events {
		for name := range m.events {
			if strings.EqualFold(name, e) {
				delete(m.events, name)
				n++
			}
		}
	}
	return n
}

// namesLocked returns the events' names, sorted; m.mu is held.
func (m *Monitor) namesLocked() []string {
	names := make([]string, 0, len(m.events))
	for name := range m.events {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
