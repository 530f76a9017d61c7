package upstream

import (
	"strconv"
	"sync"
)

// INFO stats' keyspace_hits and keyspace_misses in upstream mode. A
// client's command forwarded to the upstream is counted there, by Redis's
// own rules; a read Spillway answers from a cold key's copy is counted by
// the engine (tiering.Stats), with the same rules. The upstream's figures
// also hold the lookups Spillway made itself (the demoter's reads, the
// start-up check: link.OwnLookups), which no client made. So INFO shows
//
//	upstream's count - Spillway's own lookups + the cold reads' count
//
// which is what a redis-server holding the whole dataset would have
// counted for the same clients. CONFIG RESETSTAT zeroes all three; when
// the upstream restarts (its run_id changes) its counters start again from
// zero, and Spillway's own count is dropped with them.

// ownStatsRun is the upstream's run_id that the own lookups were counted
// against.
type ownStatsRun struct {
	mu    sync.Mutex
	runID string
}

// keyspaceStats rewrites the keyspace_hits and keyspace_misses of body,
// the upstream's INFO text, as described above.
func (f *Front) keyspaceStats(body string) string {
	own := f.pool.OwnLookups()
	if start, end, ok := infoFieldSpan(body, "run_id"); ok {
		id := body[start:end]
		f.ownRun.mu.Lock()
		if f.ownRun.runID != id {
			if f.ownRun.runID != "" {
				own.Reset() // a new upstream process: its counters restarted
			}
			f.ownRun.runID = id
		}
		f.ownRun.mu.Unlock()
	}
	hits, misses := own.Load()
	st := &f.engine.Stats
	body = addInfoInt(body, "keyspace_hits", st.KeyspaceHits.Load()-hits)
	return addInfoInt(body, "keyspace_misses", st.KeyspaceMisses.Load()-misses)
}

// addInfoInt adds d to an integer field of an INFO body (never below 0),
// if the field is there.
func addInfoInt(body, field string, d int64) string {
	start, end, ok := infoFieldSpan(body, field)
	if !ok || d == 0 {
		return body
	}
	v, err := strconv.ParseInt(body[start:end], 10, 64)
	if err != nil {
		return body
	}
	return body[:start] + strconv.FormatInt(max(v+d, 0), 10) + body[end:]
}
