package upstream

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/upstream/link"
)

// Latency figures of the commands Spillway answers itself in upstream
// mode. The upstream's LATENCY HISTOGRAM covers the commands it ran;
// the commands that never reach it (AUTH, HELLO, CLIENT ID, CLIENT LIST,
// ACL..., those MONITOR shows from Spillway: monitorLocal) are timed by
// Spillway, in its own histograms (and slow log), and LATENCY HISTOGRAM
// answers with the upstream's rows for every other command and
// Spillway's rows for those: what one redis-server would report.

// forwardedToo are local commands whose work also reaches the upstream
// as the client's command (the upstream records them itself).
var forwardedToo = map[string]bool{"config|set": true, "config|get": true, "config|resetstat": true,
	"client|unblock": true}

// localOnly reports whether cmd, in upstream mode, never reaches the
// upstream as a client's command.
func (f *Front) localOnly(cmd *cmdtable.Command) bool {
	return f.monitorLocal[cmd] && !forwardedToo[cmd.Name]
}

// countLocal records the duration of a local command that started at
// start, if only Spillway ran it.
func (f *Front) countLocal(c *client, cmd *cmdtable.Command, args [][]byte, start time.Time) {
	if f.localOnly(cmd) {
		if id := c.CountLocal(cmd, args, time.Since(start)); id >= 0 {
			f.anchorLocal(id) // slowlog.go
		}
	}
}

// histRow is one command's LATENCY HISTOGRAM entry: its calls and the
// histogram's (bucket, cumulative count) pairs.
type histRow struct {
	name  string
	calls int64
	pairs []int64
}

// upLatencyHistogram is LATENCY HISTOGRAM: the upstream's rows, less the
// local-only commands (the upstream ran those for Spillway itself), and
// Spillway's rows of the local-only commands.
func upLatencyHistogram(c *client, args [][]byte) {
	r, err := c.f.ctlDo(c.DB(), args)
	if err != nil {
		c.Err(link.ErrorReply(err))
		return
	}
	if link.IsError(r) {
		c.CountErrorReply()
		c.w.Raw(r)
		return
	}
	up, err := parseHistRows(r)
	if err != nil {
		c.Err("ERR spillway: the upstream's LATENCY HISTOGRAM reply: " + err.Error())
		return
	}
	mark := c.w.Len()
	c.Call(c.f.latencyHistogram, args)
	local, err := parseHistRows(c.w.Buf[mark:])
	c.w.Truncate(mark)
	if err != nil {
		c.Err("ERR spillway: LATENCY HISTOGRAM: " + err.Error())
		return
	}
	rows := local[:0]
	for _, row := range local {
		if cmd := cmdtable.LookupFullName([]byte(row.name)); cmd != nil && c.f.localOnly(cmd) {
			rows = append(rows, row)
		}
	}
	for _, row := range up {
		if cmd := cmdtable.LookupFullName([]byte(row.name)); cmd == nil || !c.f.localOnly(cmd) {
			rows = append(rows, row)
		}
	}
	c.w.Map(len(rows))
	for _, row := range rows {
		c.w.BulkString(row.name)
		c.w.Map(2)
		c.w.BulkString("calls")
		c.w.Int(row.calls)
		c.w.BulkString("histogram_usec")
		c.w.Map(len(row.pairs) / 2)
		for _, n := range row.pairs {
			c.w.Int(n)
		}
	}
}

// parseHistRows reads a LATENCY HISTOGRAM reply, RESP2 (arrays) or RESP3
// (maps).
func parseHistRows(b []byte) ([]histRow, error) {
	p := respParser{b: b}
	n := p.aggregate()
	var rows []histRow
	for i := 0; i < n && p.err == nil; i++ {
		row := histRow{name: p.bulk()}
		fields := p.aggregate()
		for j := 0; j < fields && p.err == nil; j++ {
			switch p.bulk() {
			case "calls":
				row.calls = p.integer()
			case "histogram_usec":
				m := p.aggregate()
				for k := 0; k < 2*m && p.err == nil; k++ {
					row.pairs = append(row.pairs, p.integer())
				}
			default:
				p.err = errors.New("unexpected field")
			}
		}
		rows = append(rows, row)
	}
	return rows, p.err
}

// respParser reads the few RESP2/RESP3 types a histogram reply has.
type respParser struct {
	b   []byte
	err error
}

// line returns the next line's type byte and the rest of it.
func (p *respParser) line() (byte, string) {
	if p.err != nil {
		return 0, ""
	}
	for i := 0; i+1 < len(p.b); i++ {
		if p.b[i] == '\r' && p.b[i+1] == '\n' {
			if i == 0 {
				break
			}
			t, s := p.b[0], string(p.b[1:i])
			p.b = p.b[i+2:]
			return t, s
		}
	}
	p.err = errors.New("truncated reply")
	return 0, ""
}

// aggregate reads an array's length, or a map's number of pairs doubled
// into entries (a map of n pairs reads as n key-value steps).
func (p *respParser) aggregate() int {
	t, s := p.line()
	n, err := strconv.Atoi(s)
	switch {
	case p.err != nil:
		return 0
	case err != nil || (t != '*' && t != '%'):
		p.err = errors.New("not an array or map")
		return 0
	case t == '*':
		return n / 2 // pairs of entries in RESP2's flattened form
	}
	return n
}

// array reads an array's length.
func (p *respParser) array() int {
	t, s := p.line()
	n, err := strconv.Atoi(s)
	if p.err == nil && (t != '*' || err != nil || n < 0) {
		p.err = errors.New("not an array")
		return 0
	}
	return n
}

func (p *respParser) bulk() string {
	t, s := p.line()
	if p.err != nil {
		return ""
	}
	if t == '+' {
		return s
	}
	n, err := strconv.Atoi(s)
	if t != '$' || err != nil || n < 0 || n+2 > len(p.b) {
		p.err = errors.New("not a bulk string")
		return ""
	}
	v := string(p.b[:n])
	p.b = p.b[n+2:]
	return v
}

func (p *respParser) integer() int64 {
	t, s := p.line()
	n, err := strconv.ParseInt(s, 10, 64)
	if p.err == nil && (t != ':' || err != nil) {
		p.err = errors.New("not an integer")
	}
	return n
}

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
