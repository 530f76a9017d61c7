package server

import (
	"strconv"
	"time"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
)

// MONITOR, as Redis 7.0's replicationFeedMonitors: every command a client
// runs is shown to the monitors once it has run, as one status line
//
//	+<unix seconds>.<microseconds> [<db> <client addr>] "cmd" "arg" ...
//
// with the arguments quoted as sdscatrepr quotes them, secrets redacted
// (AUTH, HELLO's AUTH option, MIGRATE's AUTH and AUTH2 options), and
// neither administrative nor skip_monitor commands shown. EVAL, EVALSHA
// and FCALL (skip_monitor) are shown before they run, so that the
// commands their script runs, shown as "[<db> lua]", come after them.
// Commands MULTI queued are shown when EXEC runs them, between MULTI and
// EXEC. With no monitor attached, the command path pays one atomic load.

func cmdMonitor(x *Ctx, _ [][]byte) error {
	c := x.c
	if c.group != nil || c.noBlock {
		// Redis's CLIENT_DENY_BLOCKING: inside EXEC, or a client that
		// expects one reply per command.
		return resp.Err("ERR MONITOR isn't allowed for DENY BLOCKING client")
	}
	if c.monitoring.Load() {
		return nil // already monitoring: no reply, as in Redis
	}
	c.ensurePushOut()
	s := c.s
	s.monitorMu.Lock()
	s.monitors = append(s.monitors, c)
	s.nMonitors.Store(int32(len(s.monitors)))
	s.monitorMu.Unlock()
	c.monitoring.Store(true)
	c.w.OK()
	return nil
}

// stopMonitor takes the client out of the monitors (RESET, disconnect).
func (c *Client) stopMonitor() {
	if !c.monitoring.Load() {
		return
	}
	s := c.s
	s.monitorMu.Lock()
	s.monitors = withoutClient(s.monitors, c)
	s.nMonitors.Store(int32(len(s.monitors)))
	s.monitorMu.Unlock()
	c.monitoring.Store(false)
}

// monitoredCall runs a command's handler and shows it to the monitors.
func (c *Client) monitoredCall(cmd *cmdtable.Command, h Handler, args [][]byte) {
	if c.s.nMonitors.Load() == 0 {
		c.call(h, args)
		return
	}
	if isScriptCall(cmd) {
		c.feedMonitors(args)
	}
	c.call(h, args)
	c.feedMonitorsAfter(cmd, args)
}

// isScriptCall reports whether cmd runs a script or function (EVAL,
// EVALSHA, FCALL and their _RO forms): it is shown before it runs, as
// their handlers in Redis feed the monitors first, and whether it may
// write depends on the script's flags.
func isScriptCall(cmd *cmdtable.Command) bool {
	switch cmd.Name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		return true
	}
	return false
}

// feedMonitorsAfter shows a command that has run to the monitors, unless
// Redis hides it (admin and skip_monitor commands).
func (c *Client) feedMonitorsAfter(cmd *cmdtable.Command, args [][]byte) {
	if c.s.nMonitors.Load() == 0 || cmd.Is(cmdtable.FlagAdmin) || cmd.Is(cmdtable.FlagSkipMonitor) {
		return
	}
	c.feedMonitors(args)
}

// feedMonitors sends one command line to every monitor.
func (c *Client) feedMonitors(args [][]byte) {
	line := c.monitorLine(time.Now(), args)
	s := c.s
	s.monitorMu.Lock()
	defer s.monitorMu.Unlock()
	for _, m := range s.monitors {
		if m == c {
			// The monitor's own command: the line follows its reply.
			c.w.Raw(line)
			continue
		}
		m.out.deliverRaw(line)
	}
}

// monitorLine formats one command as replicationFeedMonitors does.
func (c *Client) monitorLine(now time.Time, args [][]byte) []byte {
	b := make([]byte, 0, 64)
	b = append(b, '+')
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, '.')
	us := strconv.AppendInt(nil, int64(now.Nanosecond()/1000), 10)
	for range 6 - len(us) {
		b = append(b, '0')
	}
	b = append(b, us...)
	b = append(b, " ["...)
	b = strconv.AppendInt(b, int64(c.db), 10)
	if c == c.s.luaClient {
		b = append(b, " lua] "...)
	} else {
		b = append(b, ' ')
		b = append(b, c.nc.RemoteAddr().String()...)
		b = append(b, "] "...)
	}
	redacted := redactedArgs(args)
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		if i < 64 && redacted&(1<<i) != 0 {
			a = []byte("(redacted)")
		}
		b = cstr.AppendRepr(b, a)
	}
	return append(b, '\r', '\n')
}

// redactedArgs returns the bit set of the arguments Redis redacts before
// showing a command (MONITOR, SLOWLOG GET): AUTH's (in its two- and
// three-argument forms), HELLO's AUTH username and password, MIGRATE's
// AUTH password and AUTH2 username and password, as far as the command's
// own parsing reaches; CONFIG SET's values of sensitive settings
// (masteruser, masterauth, requirepass) and every argument of ACL SETUSER
// after the subcommand (MONITOR never shows these admin commands).
func redactedArgs(args [][]byte) uint64 {
	var set uint64
	mark := func(i int) {
		if i < 64 {
			set |= 1 << i
		}
	}
	name := args[0]
	switch {
	case cstr.EqualFold(name, "auth"):
		if len(args) <= 3 {
			for i := 1; i < len(args); i++ {
				mark(i)
			}
		}
	case cstr.EqualFold(name, "hello"):
		if len(args) < 2 {
			return 0
		}
		if v, ok := cstr.ParseInt(args[1]); !ok || v < 2 || v > 3 {
			return 0
		}
		for j := 2; j < len(args); j++ {
			more := len(args) - 1 - j
			switch {
			case cstr.EqualFold(args[j], "auth") && more >= 2:
				mark(j + 1)
				mark(j + 2)
				j += 2
			case cstr.EqualFold(args[j], "setname") && more >= 1:
				j++
			default:
				return set
			}
		}
	case cstr.EqualFold(name, "config") && len(args) >= 4 && len(args)%2 == 0 && cstr.EqualFold(args[1], "set"):
		for j := 2; j+1 < len(args); j += 2 {
			if cstr.EqualFold(args[j], "masteruser") || cstr.EqualFold(args[j], "masterauth") || cstr.EqualFold(args[j], "requirepass") {
				mark(j + 1)
			}
		}
	case cstr.EqualFold(name, "acl") && len(args) >= 3 && cstr.EqualFold(args[1], "setuser"):
		for j := 2; j < len(args); j++ {
			mark(j)
		}
	case cstr.EqualFold(name, "migrate"):
		for j := 6; j < len(args); j++ {
			more := len(args) - 1 - j
			switch {
			case cstr.EqualFold(args[j], "copy"), cstr.EqualFold(args[j], "replace"):
			case cstr.EqualFold(args[j], "auth") && more >= 1:
				j++
				mark(j)
			case cstr.EqualFold(args[j], "auth2") && more >= 2:
				mark(j + 1)
				mark(j + 2)
				j += 2
			default:
				return set // KEYS (the rest are keys) or a syntax error
			}
		}
	}
	return set
}

// deliverRaw queues line, already encoded, for a monitor: like a Pub/Sub
// message, it never waits for the monitor's socket, and a monitor over
// its output buffer limit is closed.
func (q *pushOut) deliverRaw(line []byte) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	if q.hold {
		q.held = append(q.held, line...)
	} else {
		q.buf = append(q.buf, line...)
	}
	q.checkLimitLocked()
	q.mu.Unlock()
	q.cond.Signal()
}
