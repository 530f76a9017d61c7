package upstream

import (
	"sync"
	"sync/atomic"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
)

// MONITOR in upstream mode relays the upstream's MONITOR on the client's
// own connection (passthrough), less the lines of Spillway's internal
// connections. The commands Spillway answers itself never reach the
// upstream (AUTH, HELLO, the server's CLIENT and CONFIG subcommands...):
// their lines are written by Spillway, as redis-server writes them
// (redacted secrets included), into every monitor's relayed stream.

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
	defer f.monitors.mu.Unlock()
	for _, m := range f.monitors.cs {
		if m == c {
			c.w.Raw(line) // the monitor's own command: after its reply
			continue
		}
		m.wmu.Lock()
		_, _ = m.WriteSocket(line) // a failed write closes m's relay too
		m.wmu.Unlock()
	}
}

// isMonitor reports whether args is MONITOR.
func isMonitor(args [][]byte) bool { return cstr.EqualFold(args[0], "monitor") }
