package upstream

import (
	"bytes"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/upstream/link"
)

// MONITOR in upstream mode relays the upstream's MONITOR on the client's
// own connection (passthrough), less the lines of Spillway's internal
// connections. The commands Spillway answers itself never reach the
// upstream (AUTH, HELLO, the server's CLIENT and CONFIG subcommands...):
// their lines are written by Spillway, as redis-server writes them
// (redacted secrets included), into every monitor's relayed stream.
//
// A local line must take its place among the relayed ones: after the
// lines of the commands the upstream ran before it (the client's MIGRATE
// before its AUTH), which the relays may not have read yet. So the line
// waits in marks, and Spillway sends ECHO <token> to the upstream on a
// connection of its own (ownConn): every monitor's relay meets that command's line (an
// internal connection's, otherwise dropped) exactly where the local
// command falls in the upstream's order, and writes the waiting line
// there instead.

// markPrefix starts the token of a marker ECHO.
const markPrefix = "spillway-monitor-mark:"

// monitorMarks are the local lines waiting for their marker.
type monitorMarks struct {
	mu      sync.Mutex
	seq     uint64
	pending map[string]*markedLine
}

// markedLine is a local line, the relays yet to write it, and when it was
// made (lines whose monitors went away are dropped after markTTL).
type markedLine struct {
	line []byte
	left int
	at   time.Time
}

const markTTL = 30 * time.Second

// monitors is the set of upstream-mode clients running MONITOR.
type monitors struct {
	n  atomic.Int32
	mu sync.Mutex
	cs []*client
}

// add registers c (its MONITOR was sent).
func (m *monitors) add(c *client) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, x := range m.cs {
		if x == c {
			return
		}
	}
	m.cs = append(m.cs, c)
	m.n.Store(int32(len(m.cs)))
}

// remove forgets c (RESET, a dropped connection, disconnect).
func (m *monitors) remove(c *client) {
	if m.n.Load() == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, x := range m.cs {
		if x == c {
			m.cs = append(m.cs[:i], m.cs[i+1:]...)
			break
		}
	}
	m.n.Store(int32(len(m.cs)))
}

// feedLocal shows a command client c ran on Spillway alone to the
// monitors, unless Redis hides it. With no monitor it costs one atomic
// load.
func (f *Front) feedLocal(c *client, cmd *cmdtable.Command, args [][]byte) {
	if f.monitors.n.Load() == 0 || !f.monitorLocal[cmd] {
		return
	}
	line, ok := c.MonitorLine(cmd, args)
	if !ok {
		return
	}
	f.monitors.mu.Lock()
	others := 0
	for _, m := range f.monitors.cs {
		if m == c {
			c.w.Raw(line) // the monitor's own command: after its reply
		} else {
			others++
		}
	}
	f.monitors.mu.Unlock()
	if others == 0 {
		return
	}
	token := f.marks.add(line, others)
	ok = false
	err := f.own.do(f, []string{"ECHO", token}, func(r []byte) { ok = !link.IsError(r) })
	if err == nil && ok {
		return // each relay writes the line where it meets the marker
	}
	// The upstream did not take the marker: the line goes out now.
	if f.marks.take(token) == nil {
		return
	}
	f.monitors.mu.Lock()
	defer f.monitors.mu.Unlock()
	for _, m := range f.monitors.cs {
		if m != c {
			m.wmu.Lock()
			_, _ = m.WriteSocket(line) // a failed write closes m's relay too
			m.wmu.Unlock()
		}
	}
}

// add keeps line for n relays and returns its marker token.
func (mk *monitorMarks) add(line []byte, n int) string {
	mk.mu.Lock()
	defer mk.mu.Unlock()
	now := time.Now()
	if mk.pending == nil {
		mk.pending = map[string]*markedLine{}
	}
	for t, p := range mk.pending {
		if now.Sub(p.at) > markTTL {
			delete(mk.pending, t)
		}
	}
	mk.seq++
	token := markPrefix + strconv.FormatUint(mk.seq, 10)
	mk.pending[token] = &markedLine{line: line, left: n, at: now}
	return token
}

// take removes token's line and returns it (nil if gone).
func (mk *monitorMarks) take(token string) []byte {
	mk.mu.Lock()
	defer mk.mu.Unlock()
	p := mk.pending[token]
	delete(mk.pending, token)
	if p == nil {
		return nil
	}
	return p.line
}

// relayMark is called by a monitor's relay (c's) for a line of Spillway's
// internal connections, r: a marker's line gets its local line written in
// its place.
func (f *Front) relayMark(c *client, r []byte) {
	i := bytes.Index(r, []byte(markPrefix))
	if i < 0 {
		return
	}
	end := i + len(markPrefix)
	for end < len(r) && r[end] >= '0' && r[end] <= '9' {
		end++
	}
	token := string(r[i:end])
	mk := &f.marks
	mk.mu.Lock()
	p := mk.pending[token]
	var line []byte
	if p != nil {
		line = p.line
		if p.left--; p.left <= 0 {
			delete(mk.pending, token)
		}
	}
	mk.mu.Unlock()
	if line == nil {
		return
	}
	c.wmu.Lock()
	_, _ = c.WriteSocket(line)
	c.wmu.Unlock()
	c.AddNetOut(int64(len(line)))
}

// isMonitor reports whether args is MONITOR.
func isMonitor(args [][]byte) bool { return cstr.EqualFold(args[0], "monitor") }
