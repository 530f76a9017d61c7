package script

import (
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/spillway/spillway/proxy/cstr"
)

// compileChunk compiles src as luaL_loadbuffer would with the given chunk
// name. chunkid is how messages name the chunk ("user_script", or
// [string "..."] for loadstring). On failure it returns C Lua 5.1's error
// message.
func compileChunk(L *lua.LState, src, chunkname, chunkid string) (*lua.LFunction, string) {
	src, msg, bad := checkSyntax(src, chunkID(chunkname, maxSrc))
	if bad {
		return nil, msg
	}
	fn, err := L.Load(strings.NewReader(src), chunkid)
	if err != nil {
		return nil, chunkid + ": " + strings.TrimSpace(err.Error())
	}
	// A main chunk is vararg but, in C Lua 5.1, has no implicit arg
	// table (luaY_parser sets VARARG_ISVARARG only); gopher-lua's
	// compiler marks it as needing one, and would build an unreachable
	// table on every call (it is a local only of nested functions).
	fn.Proto.IsVarArg &^= lua.VarArgNeedsArg
	return fn, ""
}

// stringChunkID is luaO_chunkid with Lua's runtime buffer (LUA_IDSIZE):
// how runtime errors name a chunk, [string "first line..."] for a chunk
// named by its source text.
func stringChunkID(source string) string { return chunkID(source, luaIDSize) }

// chunkID is luaO_chunkid(source, bufflen). The lexer uses a larger buffer
// (MAXSRC) than runtime errors.
func chunkID(source string, bufflen int) string {
	source = cstr.CString(source)
	switch {
	case strings.HasPrefix(source, "="):
		s := source[1:]
		if len(s) > bufflen-1 {
			s = s[:bufflen-1]
		}
		return s
	case strings.HasPrefix(source, "@"):
		s := source[1:]
		max := bufflen - len(" '...' ") - 1
		if len(s) > max {
			s = "..." + s[len(s)-max:]
		}
		return s
	}
	l := strings.IndexAny(source, "\n\r")
	if l < 0 {
		l = len(source)
	}
	max := bufflen - len(" [string \"...\"] ") - 1
	if l > max {
		l = max
	}
	if l < len(source) {
		return "[string \"" + source[:l] + "...\"]"
	}
	return "[string \"" + source + "\"]"
}

// luaIDSize is LUA_IDSIZE; maxSrc is llex.c's MAXSRC.
const (
	luaIDSize = 60
	maxSrc    = 80
)
