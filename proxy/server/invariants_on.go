//go:build invariants

package server

import "fmt"

// invariants: built with the invariants tag, every command is followed by
// checkInvariants.
const invariants = true

// checkInvariants verifies, after a command (and after its panic
// recovery), what must hold between commands: the command released the
// transaction it began (no group is left open) and the engine's lock is
// free, and the hot tier's byte accounting matches its contents
// (tiering.Engine.CheckInvariants). On a violation it panics, outside the
// command's panic recovery, so a test cannot miss it: the goroutine
// running the command (a Local's caller, or a connection's) dies with the
// message.
func (c *Client) checkInvariants() {
	e := c.s.engine
	if e == nil || c.s.fwd != nil {
		return
	}
	if held, _ := c.run.Held(); held {
		return // a pipeline's run holds the lock between its commands
	}
	if c.group != nil {
		panic(fmt.Sprintf("invariants: client %d: a command left its group transaction open", c.id))
	}
	if e.HeldBy(c.txID) {
		panic(fmt.Sprintf("invariants: client %d: a command left its transaction %d open (the engine lock is held)", c.id, c.txID))
	}
	if err := e.CheckInvariants(); err != nil {
		panic(fmt.Sprintf("invariants: client %d, after a command: %v", c.id, err))
	}
}
