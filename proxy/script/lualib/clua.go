// Package lualib implements, on top of gopher-lua, the Lua libraries that
// Redis 7.0 preloads into its scripting environment: cjson (lua-cjson 2.1.0
// as patched by Redis), cmsgpack (lua-cmsgpack 0.4.0), struct (Roberto
// Ierusalimschy's struct library) and bit (LuaBitOp 1.0.2).
//
// The goal is byte-for-byte compatibility with redis-server 7.0.15: the
// values the functions return, the bytes they produce and the error messages
// a script sees. gopher-lua differs from the C Lua 5.1 VM Redis embeds in a
// few ways that matter here, so this file carries small emulations of the C
// Lua API the original libraries were written against (luaL_error's position
// prefix, luaL_argerror's function names, lua_tonumber's string conversion,
// the "%.14g" number format and glibc's strtod).
//
// Notes for the script engine that embeds these libraries:
//   - Errors are raised as C Lua raises them: a string value prefixed with
//     "<chunkname>:<line>: " of the calling Lua function (a leading '@' or
//     '=' of the chunk name is dropped), or unprefixed when the caller is a Go
//     function such as pcall. Load scripts with the chunk name "user_script"
//     to get Redis's "user_script:1: ..." texts.
//   - cjson.null is a userdata (one per LState) standing for C's NULL light
//     userdata; Redis turns it into a nil reply like any other userdata.
//   - cmsgpack.unpack and struct.unpack may return up to ~8000 values, as in
//     Redis; gopher-lua's registry must be allowed to grow that far
//     (lua.Options.RegistryMaxSize), or it fails with "registry overflow".
//   - gopher-lua stores positive integer keys below lua.MaxArrayIndex (64 Mi)
//     in a dense slice: t[0x3ffffff] = 1, or cmsgpack.unpack of the 7-byte
//     map {[0x3ffffff] = 1}, allocates about 1 GB. Lowering MaxArrayIndex
//     bounds that.
package lualib

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/spillway/spillway/proxy/cstr"
)

// maxCStack mirrors LUAI_MAXCSTACK of Redis's Lua 5.1: the number of stack
// slots a C function may use. lua_checkstack fails beyond it, and the C
// libraries turn that into errors this package reproduces.
const maxCStack = 8000

// raise throws msg as luaL_error does: prefixed with the position of the
// calling Lua function ("user_script:1: "), or with nothing when the caller is
// not a Lua function (for example when called through pcall).
func raise(L *lua.LState, msg string) {
	L.Error(lua.LString(where(L)+msg), 0)
}

// where mirrors luaL_where(L, 1) for a Go function called from Lua.
func where(L *lua.LState) string {
	dbg, ok := L.GetStack(1)
	if !ok {
		return ""
	}
	if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
		return ""
	}
	if dbg.What == "G" || dbg.CurrentLine <= 0 {
		return ""
	}
	src := dbg.Source
	if strings.HasPrefix(src, "@") || strings.HasPrefix(src, "=") {
		src = src[1:]
	}
	return src + ":" + strconv.Itoa(dbg.CurrentLine) + ": "
}

// funcName returns the name C Lua's luaL_argerror would print for the running
// Go function: the name used at the call site, or "?" when there is none
// (called from a Go function such as pcall, or through an unnamed expression).
func funcName(L *lua.LState) string {
	dbg, ok := L.GetStack(0)
	if !ok {
		return "?"
	}
	if _, err := L.GetInfo("n", dbg, lua.LNil); err != nil {
		return "?"
	}
	switch n := dbg.Name; {
	case n == "", n == "(anonymous)", n == "main chunk", n == "corountine", strings.HasPrefix(n, "<"):
		return "?"
	default:
		return n
	}
}

// argError mirrors luaL_argerror: "bad argument #n to 'name' (msg)".
func argError(L *lua.LState, narg int, msg string) {
	raise(L, "bad argument #"+strconv.Itoa(narg)+" to '"+funcName(L)+"' ("+msg+")")
}

// typeError mirrors luaL_typerror: "<tname> expected, got <type of arg>".
func typeError(L *lua.LState, narg int, tname string) {
	argError(L, narg, tname+" expected, got "+argTypeName(L, narg))
}

// argTypeName mirrors luaL_typename, which says "no value" past the top.
func argTypeName(L *lua.LState, narg int) string {
	if narg > L.GetTop() {
		return "no value"
	}
	return TypeName(L.Get(narg))
}

// TypeName mirrors lua_typename for gopher-lua values (the script engine
// uses it too).
func TypeName(v lua.LValue) string {
	switch v.Type() {
	case lua.LTNil:
		return "nil"
	case lua.LTBool:
		return "boolean"
	case lua.LTNumber:
		return "number"
	case lua.LTString:
		return "string"
	case lua.LTTable:
		return "table"
	case lua.LTFunction:
		return "function"
	case lua.LTThread:
		return "thread"
	default:
		return "userdata"
	}
}

// toNumber mirrors lua_tonumber/lua_isnumber: numbers as they are, strings
// converted as C Lua 5.1 converts them (strtod, surrounding spaces allowed).
func toNumber(v lua.LValue) (float64, bool) {
	switch x := v.(type) {
	case lua.LNumber:
		return float64(x), true
	case lua.LString:
		return StrToNumber(string(x))
	}
	return 0, false
}

// toInteger mirrors lua_Number to lua_Integer conversion on x86-64 (a C cast:
// truncation, and INT64_MIN for NaN and values out of range).
func toInteger(f float64) int64 {
	if f != f || f >= 9223372036854775808.0 || f < -9223372036854775808.0 {
		return math.MinInt64
	}
	return int64(f)
}

// toCInt mirrors a double to int cast on x86-64 (INT_MIN when out of range).
func toCInt(f float64) int32 {
	if f != f || f >= 2147483648.0 || f <= -2147483649.0 {
		return math.MinInt32
	}
	return int32(f)
}

// checkNumber mirrors luaL_checknumber.
func checkNumber(L *lua.LState, narg int) float64 {
	f, ok := toNumber(L.Get(narg))
	if !ok {
		typeError(L, narg, "number")
	}
	return f
}

// checkInteger mirrors luaL_checkinteger.
func checkInteger(L *lua.LState, narg int) int64 {
	return toInteger(checkNumber(L, narg))
}

// optInteger mirrors luaL_optinteger.
func optInteger(L *lua.LState, narg int, def int64) int64 {
	if L.Get(narg) == lua.LNil {
		return def
	}
	return checkInteger(L, narg)
}

// toLString mirrors lua_tolstring: strings as they are, numbers formatted with
// "%.14g"; ok is false for every other type.
func toLString(v lua.LValue) (string, bool) {
	switch x := v.(type) {
	case lua.LString:
		return string(x), true
	case lua.LNumber:
		return numberToString(float64(x)), true
	}
	return "", false
}

// checkLString mirrors luaL_checklstring.
func checkLString(L *lua.LState, narg int) string {
	s, ok := toLString(L.Get(narg))
	if !ok {
		typeError(L, narg, "string")
	}
	return s
}

// numberToString formats n as C Lua 5.1 does (LUA_NUMBER_FMT "%.14g").
func numberToString(n float64) string {
	return cstr.FormatG(n, 14)
}

// StrToNumber mirrors luaO_str2d of Lua 5.1 built against glibc (what
// tonumber, lua_tonumber and arithmetic on strings use): the whole string,
// up to a NUL byte as C sees it, must be a number cstr.Strtod accepts
// ("inf", "nan" and hexadecimal included), optionally surrounded by isspace
// blanks.
func StrToNumber(s string) (float64, bool) {
	s = cstr.CString(s)
	v, n := cstr.Strtod(s)
	if n == 0 {
		return 0, false
	}
	// A trailing 'x' sends Lua to strtoul(s, 16), which with glibc never
	// consumes more than strtod did, so the conversion fails.
	for i := n; i < len(s); i++ {
		if !cstr.IsSpace(s[i]) {
			return 0, false
		}
	}
	return v, true
}
