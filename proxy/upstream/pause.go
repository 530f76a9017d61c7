package upstream

import (
	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/upstream/link"
)

// CLIENT PAUSE in upstream mode. Spillway holds its clients' commands
// itself (the server's pause: postponed clients, counted in
// blocked_clients), and a WRITE pause is also sent to the upstream, so
// that the upstream does what Redis does while paused: it expires no key,
// neither in its expiry cycle nor on access (an expired key reads as
// missing and stays until the pause ends), and its keys stay as they
// are. CLIENT UNPAUSE goes to both. Meanwhile Spillway's own writes to
// the upstream wait (a demotion ends when the pause does); a read of a
// cold key is answered from the store rather than reloaded (cold.go).
// A pause of ALL commands stays Spillway's: on the upstream it would also
// hold Spillway's own reads (the demoter's polls, the metrics endpoint's
// INFO), so the upstream's expiry goes on during one.

// upClientPause is CLIENT PAUSE and CLIENT UNPAUSE: the server's, then the
// upstream's (on the control connection, not a client's) once it took.
func (f *Front) upClientPause(h localHandler) localHandler {
	return func(c *client, args [][]byte) {
		mark := c.w.Len()
		h(c, args)
		if !c.replyOK(mark) || !cstr.EqualFold(args[1], "unpause") && !writePause(args) {
			return
		}
		if r, err := f.ctlDo(f.defaultDB, args); err != nil || link.IsError(r) {
			msg := "upstream unreachable"
			if err == nil {
				msg = link.ReplyText(r)
			}
			f.log.Warn("CLIENT PAUSE: the upstream did not take it; its keys may expire meanwhile",
				"command", string(args[1]), "err", msg)
		}
	}
}

// writePause reports whether CLIENT PAUSE args pauses writes only.
func writePause(args [][]byte) bool {
	return len(args) > 3 && cstr.EqualFold(args[3], "write")
}

// pauseTable wraps the server's CLIENT PAUSE and UNPAUSE.
func (f *Front) pauseTable(t map[*cmdtable.Command]localHandler, lookup func(string) *cmdtable.Command) {
	for _, name := range []string{"client|pause", "client|unpause"} {
		if h := t[lookup(name)]; h != nil {
			t[lookup(name)] = f.upClientPause(h)
		}
	}
}
