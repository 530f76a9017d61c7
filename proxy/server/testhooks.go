package server

import "os"

// Test hooks: with SPILLWAY_TEST_HOOKS=1 in its environment the server
// answers DEBUG PANIC-IN-TX, which writes a key inside a transaction and
// then panics, so that tests can check a command's panic is contained, and
// DEBUG DEMOTE key..., which demotes those keys of the selected database
// now and replies how many were hot. Without it DEBUG stays an unknown
// command, as documented.
func init() {
	if os.Getenv("SPILLWAY_TEST_HOOKS") == "1" {
		register("debug", cmdDebugTestHook)
	}
}

func cmdDebugTestHook(c *Client, args [][]byte) {
	if eqFold(args[1], "demote") {
		tx := c.begin()
		n := 0
		for _, k := range args[2:] {
			if tx.Demote(c.db, k) {
				n++
			}
		}
		c.w.Int(int64(n))
		c.release(tx)
		return
	}
	if !eqFold(args[1], "panic-in-tx") {
		c.err("ERR unknown DEBUG test hook")
		return
	}
	tx := c.begin()
	if err := tx.SetString(c.db, []byte("debug:panic"), []byte("written before the panic"), 0); err != nil {
		c.txErr(tx, err)
		return
	}
	panic("DEBUG PANIC-IN-TX test hook")
}
