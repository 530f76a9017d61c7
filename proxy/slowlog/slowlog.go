// Package slowlog is Redis 7.0's slow log: the commands that ran for at
// least slowlog-log-slower-than microseconds, newest first, at most
// slowlog-max-len of them, each with its arguments trimmed as Redis trims
// them (SLOWLOG GET, LEN, RESET).
//
// The log does not time commands: the server measures each one and calls
// Log.Slow, a single comparison, then Log.Add for those it reports slow.
package slowlog

import (
	"math"
	"strconv"
	"sync"
	"sync/atomic"
)

const (
	// MaxArgs is how many arguments an entry keeps (Redis's
	// SLOWLOG_ENTRY_MAX_ARGC): a longer command keeps its first
	// MaxArgs-1 and, last, "... (N more arguments)".
	MaxArgs = 32
	// MaxArgLen is how many bytes of an argument an entry keeps (Redis's
	// SLOWLOG_ENTRY_MAX_STRING), followed by "... (N more bytes)".
	MaxArgLen = 128
)

// Redacted replaces an argument Redis hides (a password...).
var Redacted = []byte("(redacted)")

// Entry is one logged command, as SLOWLOG GET replies it. An entry is
// never modified once logged: readers may keep it.
type Entry struct {
	ID       int64    // 0 for the first command logged since the server started
	Time     int64    // unix seconds when the command was logged
	Duration int64    // microseconds the command ran
	Args     [][]byte // trimmed copies, never the caller's buffers
	Addr     string   // the client's "ip:port" ("?:0" for a script's calls)
	Name     string   // the client's name, "" if it has none
}

// Log is the slow log. The zero value is not ready: use New.
type Log struct {
	// slower is the threshold in µs; math.MaxInt64 while the log is
	// disabled (slowlog-log-slower-than -1), so that Slow is one
	// comparison.
	slower atomic.Int64

	mu       sync.Mutex
	disabled bool
	maxLen   int64
	nextID   int64
	// entries[start:] are the logged entries, oldest first.
	entries []Entry
	start   int
}

// New returns an empty log with Redis's defaults (10000 µs, 128 entries).
func New() *Log {
	l := &Log{maxLen: 128}
	l.slower.Store(10000)
	return l
}

// Slow reports whether a command that ran for us microseconds must be
// logged (call Add then). It is one atomic load and one comparison.
func (l *Log) Slow(us int64) bool { return us >= l.slower.Load() }

// Threshold returns the threshold in µs, -1 while the log is disabled.
func (l *Log) Threshold() int64 {
	if v := l.slower.Load(); v != math.MaxInt64 {
		return v
	}
	return -1
}

// SetThreshold applies slowlog-log-slower-than: µs, -1 disables the log
// (entries are kept), 0 logs every command. Enabling it applies the
// maximum length, as Redis's next logging attempt does.
func (l *Log) SetThreshold(us int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.disabled = us < 0
	if l.disabled {
		l.slower.Store(math.MaxInt64)
		return
	}
	l.slower.Store(us)
	l.trim()
}

// SetMaxLen applies slowlog-max-len: the oldest entries beyond n go at
// once, unless the log is disabled (Redis trims it when it next tries to
// log a command, which it does not while disabled).
func (l *Log) SetMaxLen(n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.maxLen = max(n, 0)
	if !l.disabled {
		l.trim()
	}
}

// Add logs a command that ran for us microseconds at unix time now: its
// arguments (copied and trimmed, those whose bit is set in redacted
// replaced by Redacted), the client's address and name. Call it only when
// Slow(us) holds; it then drops the oldest entries beyond the maximum
// length. It returns the entry's ID.
func (l *Log) Add(args [][]byte, redacted uint64, us, now int64, addr, name string) int64 {
	e := Entry{Time: now, Duration: us, Args: trimArgs(args, redacted), Addr: addr, Name: name}
	l.mu.Lock()
	defer l.mu.Unlock()
	e.ID = l.nextID
	l.nextID++
	l.entries = append(l.entries, e)
	l.trim()
	return e.ID
}

// trim drops the oldest entries beyond maxLen; l.mu is held.
func (l *Log) trim() {
	for int64(len(l.entries)-l.start) > l.maxLen {
		l.entries[l.start] = Entry{}
		l.start++
	}
	if l.start > 0 && l.start >= len(l.entries)/2 {
		n := copy(l.entries, l.entries[l.start:])
		clear(l.entries[n:])
		l.entries = l.entries[:n]
		l.start = 0
	}
}

// Len returns the number of entries (SLOWLOG LEN).
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries) - l.start
}

// Get returns up to count entries, newest first; count < 0 means all
// (SLOWLOG GET).
func (l *Log) Get(count int64) []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := int64(len(l.entries) - l.start)
	if count >= 0 && count < n {
		n = count
	}
	out := make([]Entry, 0, n)
	for i := len(l.entries) - 1; int64(len(out)) < n; i-- {
		out = append(out, l.entries[i])
	}
	return out
}

// Reset empties the log (SLOWLOG RESET); ids go on from where they were.
func (l *Log) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	clear(l.entries)
	l.entries, l.start = l.entries[:0], 0
}

// trimArgs copies args as Redis's slowlogCreateEntry keeps them: at most
// MaxArgs, the last of them then "... (N more arguments)", each cut to
// MaxArgLen bytes followed by "... (N more bytes)"; an argument whose bit
// is set in redacted (bits 0 to 63) is Redacted.
func trimArgs(args [][]byte, redacted uint64) [][]byte {
	n := min(len(args), MaxArgs)
	out := make([][]byte, n)
	for i := 0; i < n; i++ {
		a := args[i]
		switch {
		case n != len(args) && i == n-1:
			out[i] = []byte("... (" + strconv.Itoa(len(args)-n+1) + " more arguments)")
		case i < 64 && redacted&(1<<i) != 0:
			out[i] = Redacted
		case len(a) > MaxArgLen:
			b := make([]byte, 0, MaxArgLen+32)
			b = append(b, a[:MaxArgLen]...)
			b = append(b, "... ("...)
			b = strconv.AppendInt(b, int64(len(a)-MaxArgLen), 10)
			out[i] = append(b, " more bytes)"...)
		default:
			out[i] = append([]byte(nil), a...)
		}
	}
	return out
}
