package server

import (
	"os"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
	"github.com/spillway/spillway/tiering"
)

// Test hooks: with SPILLWAY_TEST_HOOKS=1 in its environment the server
// answers DEBUG PANIC-IN-TX, which writes a key inside a transaction and
// then panics, so that tests can check a command's panic is contained, and
// DEBUG DEMOTE key..., which demotes those keys of the selected database
// now and replies how many were hot. Without it DEBUG is refused as a
// stock redis-server refuses it (protected.go).
func registerTestHooks(t *Table) {
	if os.Getenv("SPILLWAY_TEST_HOOKS") == "1" {
		t.Register("debug", cmdDebugTestHook)
	}
}

func cmdDebugTestHook(x *Ctx, args [][]byte) error {
	if cstr.EqualFold(args[1], "demote") {
		return x.Update(func(tx *tiering.Tx) error {
			n := 0
			for _, k := range args[2:] {
				ok, err := tx.Demote(x.DB(), k)
				if err != nil {
					return err
				}
				if ok {
					n++
				}
			}
			x.W.Int(int64(n))
			return nil
		})
	}
	if !cstr.EqualFold(args[1], "panic-in-tx") {
		return resp.Err("ERR unknown DEBUG test hook")
	}
	return x.Update(func(tx *tiering.Tx) error {
		if err := tx.SetString(x.DB(), []byte("debug:panic"), []byte("written before the panic"), 0); err != nil {
			return err
		}
		panic("DEBUG PANIC-IN-TX test hook")
	})
}
