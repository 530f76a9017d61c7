//go:build !invariants

package server

// invariants: built without the invariants tag, nothing is checked after
// commands (the call in execute is compiled out).
const invariants = false

// checkInvariants is checked only with the invariants tag
// (invariants_on.go).
func (c *Client) checkInvariants() {}
