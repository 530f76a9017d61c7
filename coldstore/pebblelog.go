package coldstore

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// pebbleLogger routes Pebble's log lines into slog. Its error lines are
// rate-limited (errLimit): Pebble retries a failing flush or compaction at
// once, so a store whose directory was removed or whose disk is full
// would otherwise log the same error some 20,000 times a second.
type pebbleLogger struct {
	l   *slog.Logger
	lim *errLimit
}

func newPebbleLogger(l *slog.Logger) pebbleLogger {
	return pebbleLogger{l: l, lim: &errLimit{}}
}

func (p pebbleLogger) Infof(format string, args ...interface{}) {
	p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

func (p pebbleLogger) Errorf(format string, args ...interface{}) {
	ok, dropped := p.lim.allow(time.Now())
	if !ok {
		return
	}
	if dropped > 0 {
		p.l.Error(fmt.Sprintf(format, args...), "component", "pebble", "similar_lines_dropped", dropped)
		return
	}
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

func (p pebbleLogger) Fatalf(format string, args ...interface{}) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
	panic(fmt.Sprintf(format, args...))
}

// errLimitBurst is how many error lines errLimit lets through a second.
const errLimitBurst = 10

// errLimit lets errLimitBurst lines through per second and counts the
// others, which the next line let through reports.
type errLimit struct {
	mu      sync.Mutex
	window  time.Time // start of the current second
	n       int       // lines let through in it
	dropped int64     // lines dropped since the last one let through
}

// allow reports whether a line at now goes out, and how many were
// dropped before it.
func (e *errLimit) allow(now time.Time) (ok bool, dropped int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if now.Sub(e.window) >= time.Second {
		e.window, e.n = now, 0
	}
	if e.n >= errLimitBurst {
		e.dropped++
		return false, 0
	}
	e.n++
	dropped, e.dropped = e.dropped, 0
	return true, dropped
}
