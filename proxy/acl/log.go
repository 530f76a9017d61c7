package acl

import "sync"

// Context is where a refused command or authentication came from.
type Context uint8

// Contexts of ACL LOG entries.
const (
	CtxTopLevel Context = iota
	CtxMulti
	CtxLua
)

// String returns the context as ACL LOG shows it.
func (c Context) String() string {
	switch c {
	case CtxTopLevel:
		return "toplevel"
	case CtxMulti:
		return "multi"
	case CtxLua:
		return "lua"
	}
	return "unknown"
}

// groupWindow is ACL_LOG_GROUPING_MAX_TIME_DELTA: entries this close in
// time (ms) with the same reason, context, object and user are one entry.
const groupWindow = 60000

// LogEntry is one ACL LOG entry.
type LogEntry struct {
	Count    int64
	Reason   Reason
	Context  Context
	Object   string // the command, key, channel or AUTH/HELLO as sent
	Username string
	// Millis is the Unix time in milliseconds of the latest occurrence.
	Millis int64
	// ClientInfo is the CLIENT LIST line of the client, as of the latest
	// occurrence.
	ClientInfo string
}

// Log is the ACL LOG: newest entry first. It is safe for concurrent use.
type Log struct {
	mu      sync.Mutex
	entries []*LogEntry
}

// Add records e (its Count is ignored): as Redis's addACLLogEntry, an
// entry among the 10 newest that matches it is bumped and moved first;
// otherwise e is added and the log trimmed to maxLen entries.
func (l *Log) Add(e LogEntry, maxLen int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, cur := range l.entries {
		if i == 10 {
			break
		}
		delta := cur.Millis - e.Millis
		if delta < 0 {
			delta = -delta
		}
		if cur.Reason == e.Reason && cur.Context == e.Context && delta <= groupWindow &&
			cur.Object == e.Object && cur.Username == e.Username {
			cur.Count++
			cur.Millis, cur.ClientInfo = e.Millis, e.ClientInfo
			copy(l.entries[1:i+1], l.entries[:i])
			l.entries[0] = cur
			return
		}
	}
	e.Count = 1
	l.entries = append([]*LogEntry{&e}, l.entries...)
	if len(l.entries) > maxLen {
		l.entries = l.entries[:maxLen]
	}
}

// Entries returns copies of the n newest entries (fewer if the log is
// shorter).
func (l *Log) Entries(n int) []LogEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	n = max(0, min(n, len(l.entries)))
	out := make([]LogEntry, n)
	for i := range out {
		out[i] = *l.entries[i]
	}
	return out
}

// Reset empties the log.
func (l *Log) Reset() {
	l.mu.Lock()
	l.entries = nil
	l.mu.Unlock()
}
