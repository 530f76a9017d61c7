package script

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/spillway/spillway/proxy/script/lualib"
)

// Redis walks tables with lua_next when it turns {map=...} and {set=...}
// into replies and when it reads register_function's named arguments, and
// scripts walk them with pairs and next: all of these see C Lua 5.1's
// hash-table order. gopher-lua iterates its array part and then its keys in
// insertion order.
// luaNextOrder replays the keys, in gopher-lua's order, into lualib's model
// of ltable.c (array sizing, main positions, collision chains, rehashing)
// and reads the model back in lua_next order. It equals C Lua's order whenever
// the C table was built by inserting the keys one by one into an empty
// table, as Redis does when it converts a RESP3 map or set; constructors with
// colliding keys may differ. Keys C Lua hashes by address (tables,
// functions) cannot be modelled: tables holding them keep gopher-lua's order.

// luaNextOrder returns the keys of t in the order C Lua's lua_next visits
// them (see above). inserted, when known, is the order in which the keys
// were inserted; it is used if t still holds exactly those keys. Otherwise
// the insertion order is taken to be gopher-lua's: integer keys ascending
// (gopher-lua keeps them in its array part), then the other keys in
// insertion order.
func luaNextOrder(t *lua.LTable, inserted []lua.LValue) []lua.LValue {
	keys := collectKeys(t)
	if len(inserted) == len(keys) {
		same := true
		for _, k := range inserted {
			if t.RawGet(k) == lua.LNil {
				same = false
				break
			}
		}
		if same {
			keys = inserted
		}
	}
	sequential := true
	for i, k := range keys {
		switch x := k.(type) {
		case lua.LString, lua.LBool:
		case lua.LNumber:
			if float64(x) == float64(i+1) {
				continue
			}
		default:
			return keys
		}
		sequential = false
	}
	if sequential {
		return keys
	}
	return lualib.NextOrder(keys)
}

func collectKeys(t *lua.LTable) []lua.LValue {
	var keys []lua.LValue
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		keys = append(keys, k)
	}
	return keys
}
