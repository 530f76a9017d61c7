package script

import (
	"context"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/script/lualib"
)

// vmKind tells the EVAL interpreter from the FUNCTION one: they differ in
// the globals and in the redis table, exactly as Redis's two Lua states do.
type vmKind int

const (
	evalVM vmKind = iota
	funcVM
)

// luaVM is one Lua interpreter set up as Redis sets up its own: the standard
// libraries Redis keeps, the redis API, and every table reachable from the
// globals made read-only.
//
// gopher-lua has no read-only tables, so each protected table is replaced by
// an empty proxy whose metatable reads from the real ("content") table and
// raises Redis's error on writes. The functions that bypass metatables
// (rawget, rawset, next, pairs, ipairs, unpack, getmetatable, setmetatable and
// the table library) are replaced by versions that see through proxies.
type luaVM struct {
	L    *lua.LState
	kind vmKind
	eng  *Engine

	// globals is the proxy of the globals table; gcontent its content.
	globals  *lua.LTable
	gcontent *lua.LTable
	// env is the environment of every compiled script or library: globals
	// for EVAL; for functions an empty read-only table whose metatable's
	// __index is loadAPI while FUNCTION LOAD runs a library and globals
	// otherwise (Redis swaps the __index the same way).
	env     *lua.LTable
	envMT   *lua.LTable
	loadAPI *lua.LTable

	proxies  map[*lua.LTable]*lua.LTable // content -> proxy
	contents map[*lua.LTable]roTable     // proxy -> content

	// insertOrder records the key order of the map and set tables built
	// from replies during the current run (see luaNextOrder).
	insertOrder map[*lua.LTable][]lua.LValue
	// iterOrder caches, per table, the C Lua order next() walks (see
	// next); it is emptied after every run.
	iterOrder map[*lua.LTable]*iterState
	// chunkNames maps the chunk ids of loadstring chunks to their names
	// (the "source" error handlers report).
	chunkNames map[string]string

	run  *runCtx  // the running script or function, or nil
	load *loadCtx // the library FUNCTION LOAD is running (funcVM), or nil

	// ciSize models the size of C Lua's CallInfo array (see runContext).
	ciSize int
	// overflowAt is the frame runContext raised "stack overflow" in.
	overflowAt *frameMirror

	handler *lua.LFunction // the error handler of top-level calls
	pcallH  *lua.LFunction // the error handler of pcall

	// Reused by every run (the Engine's runMu serializes them): the run
	// context (see newRun) and redis.call's argument scratch (scriptArgs).
	rcBuf   runCtx
	argBuf  []byte
	argEnds []int
	argv    [][]byte
	// keysT and argvT are EVAL's KEYS and ARGV tables, reset to new
	// tables' state before every run (see argTable.fill).
	keysT, argvT argTable
	// cctx is the cancellation context of runs, kept from one run to the
	// next until it is cancelled (SCRIPT KILL) or a run created a
	// coroutine (each coroutine registers a child context in it that
	// gopher-lua never removes: only cancelling frees them).
	cctx    *runContext
	cancel  context.CancelFunc
	threads bool // a coroutine was created in this run
}

// roTable describes a proxy: its content and the metatable scripts see.
type roTable struct {
	content *lua.LTable
	mt      lua.LValue // proxy of the content's metatable, or LNil
}

const readonlyErr = "Attempt to modify a readonly table"

// gopher-lua's stack sizes: room for LUAI_MAXCALLS nested calls (runContext
// raises "stack overflow" beyond them) plus what error handlers need; the
// value stack is bounded by memory only, so allow it to grow generously.
// It grows by a fixed step, copying the whole stack each time: gopher-lua's
// default step (32 slots) made a recursion to the call limit cost about
// 2,000 copies of a stack of up to 60,000 values (50 ms idle, 0.5 s on a
// loaded machine, past FUNCTION LOAD's 500 ms limit, so the script was
// reported as timed out instead of overflowing); registryGrowStep makes it
// about 15 for at most 64 KB of slack.
const (
	callStack        = maxCalls + 256
	maxRegistry      = 1 << 22
	registryGrowStep = 4096
)

// newVM builds an interpreter of the given kind.
func newVM(eng *Engine, kind vmKind) *luaVM {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       callStack,
		MinimizeStackMemory: true,
		RegistrySize:        1024,
		RegistryMaxSize:     maxRegistry,
		RegistryGrowStep:    registryGrowStep,
	})
	v := &luaVM{
		L:        L,
		kind:     kind,
		eng:      eng,
		proxies:  make(map[*lua.LTable]*lua.LTable),
		contents: make(map[*lua.LTable]roTable),
		ciSize:   basicCISize,
	}
	v.insertOrder = make(map[*lua.LTable][]lua.LValue)
	v.chunkNames = make(map[string]string)
	v.iterOrder = make(map[*lua.LTable]*iterState)
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{
		{"", lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.CoroutineLibName, lua.OpenCoroutine},
	} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	v.gcontent = g
	v.watchThreads(g)
	for _, name := range []string{"dofile", "loadfile", "print", "require", "module",
		"setfenv", "getfenv", "newproxy", "_printregs", "_GOPHER_LUA_VERSION", "package", "channel"} {
		g.RawSetString(name, lua.LNil)
	}
	if st, ok := g.RawGetString("string").(*lua.LTable); ok {
		st.RawSetString("__index", lua.LNil) // gopher-lua's string metatable trick
	}
	v.installBase(g)
	v.installTableLib(g.RawGetString("table").(*lua.LTable))
	v.installStdlib(g)
	v.installMath(g.RawGetString("math").(*lua.LTable))
	v.openExtraLibs()

	redisTable := v.newRedisTable()
	g.RawSetString("redis", redisTable)
	if kind == evalVM {
		g.RawSetString("__redis__err__handler", L.NewFunction(v.luaErrHandler))
	}
	v.handler = L.NewFunction(v.luaErrHandler)

	// The globals get Redis's error metatable (reading a missing global
	// raises), then everything reachable from them becomes read-only.
	v.setErrorMetatable(g)
	v.globals = v.protect(g)

	// Strings index the string library through their metatable, which in
	// Redis is reachable (getmetatable("")) and read-only. gopher-lua reads
	// the metatable's content directly; scripts get its proxy.
	strMT := L.NewTable()
	strMT.RawSetString("__index", g.RawGetString("string"))
	v.protect(strMT)
	L.SetMetatable(lua.LString(""), strMT)

	switch kind {
	case evalVM:
		v.env = v.globals
	case funcVM:
		v.env = L.NewTable()
		v.envMT = L.NewTable()
		v.envMT.RawSetString("__index", v.globals)
		v.envMT.RawSetString("__newindex", L.NewFunction(roNewIndex))
		v.env.Metatable = v.envMT
		v.loadAPI = v.newLoadAPI()
	}
	L.Env = v.env
	v.setGoEnv(g, map[*lua.LTable]bool{})
	return v
}

// openExtraLibs registers cjson, cmsgpack, struct and bit (package lualib).
// The functions of cjson and cmsgpack walk tables themselves, so they are
// given the content of read-only proxies (cjson.encode(redis) must see the
// redis table's functions).
func (v *luaVM) openExtraLibs() {
	lualib.OpenCJSON(v.L)
	lualib.OpenCMsgpack(v.L)
	lualib.OpenStruct(v.L)
	lualib.OpenBit(v.L)
	for _, name := range []string{"cjson", "cmsgpack"} {
		t, ok := v.L.G.Global.RawGetString(name).(*lua.LTable)
		if !ok {
			continue
		}
		var fns []string
		t.ForEach(func(k, val lua.LValue) {
			if f, ok := val.(*lua.LFunction); ok && f.IsG {
				if s, ok := k.(lua.LString); ok {
					fns = append(fns, string(s))
				}
			}
		})
		for _, fname := range fns {
			orig := t.RawGetString(fname).(*lua.LFunction).GFunction
			t.RawSetString(fname, v.L.NewFunction(func(L *lua.LState) int {
				for i := 1; i <= L.GetTop(); i++ {
					if tb, ok := L.Get(i).(*lua.LTable); ok && v.isReadonly(tb) {
						L.Replace(i, v.unwrap(tb))
					}
				}
				return orig(L)
			}))
		}
	}
}

// setGoEnv points the environment of every Go function reachable from t at
// the scripts' environment, so that loadstring and friends compile chunks
// that see the protected globals.
func (v *luaVM) setGoEnv(t *lua.LTable, seen map[*lua.LTable]bool) {
	if seen[t] {
		return
	}
	seen[t] = true
	t.ForEach(func(_, val lua.LValue) {
		switch x := val.(type) {
		case *lua.LFunction:
			x.Env = v.env
		case *lua.LTable:
			if ro, ok := v.contents[x]; ok {
				v.setGoEnv(ro.content, seen)
			} else {
				v.setGoEnv(x, seen)
			}
		}
	})
}

// protect returns the read-only proxy of t, creating it (and protecting
// every table reachable from t, metatables included) on first use. The
// content's table values are replaced by their proxies.
func (v *luaVM) protect(t *lua.LTable) *lua.LTable {
	if _, ok := v.contents[t]; ok {
		return t // already a proxy
	}
	if p, ok := v.proxies[t]; ok {
		return p
	}
	L := v.L
	p := L.NewTable()
	v.proxies[t] = p
	ro := roTable{content: t, mt: lua.LNil}
	var keys []lua.LValue
	t.ForEach(func(k, val lua.LValue) {
		if _, ok := val.(*lua.LTable); ok {
			keys = append(keys, k)
		}
	})
	for _, k := range keys {
		t.RawSet(k, v.protect(t.RawGet(k).(*lua.LTable)))
	}
	if mt, ok := t.Metatable.(*lua.LTable); ok {
		// The content keeps its real metatable (lookups that miss in the
		// content go through its __index); scripts see its proxy.
		ro.mt = v.protect(mt)
	}
	v.contents[p] = ro
	pm := L.NewTable()
	pm.RawSetString("__index", t)
	pm.RawSetString("__newindex", L.NewFunction(roNewIndex))
	pm.RawSetString("__len", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LNumber(t.Len()))
		return 1
	}))
	p.Metatable = pm
	return p
}

// roNewIndex is the __newindex of every proxy: writing raises Redis's error,
// positioned at the Lua code doing the assignment.
func roNewIndex(L *lua.LState) int {
	L.RaiseError(readonlyErr)
	return 0
}

// unwrap returns the content of a proxy, or t itself.
func (v *luaVM) unwrap(t *lua.LTable) *lua.LTable {
	if ro, ok := v.contents[t]; ok {
		return ro.content
	}
	return t
}

// isReadonly reports whether t is a proxy.
func (v *luaVM) isReadonly(t *lua.LTable) bool {
	_, ok := v.contents[t]
	return ok
}

// raiseReadonly raises the error Redis's patched lua_rawset and
// lua_setmetatable raise: no position, since it comes from a C function.
func raiseReadonly(L *lua.LState) {
	L.Error(lua.LString(readonlyErr), 0)
}

// setErrorMetatable gives t Redis's luaSetErrorMetatable: reading a missing
// key raises "Script attempted to access nonexistent global variable".
func (v *luaVM) setErrorMetatable(t *lua.LTable) {
	mt := v.L.NewTable()
	mt.RawSetString("__index", v.L.NewFunction(protectedTableError))
	t.Metatable = mt
}

// protectedTableError is Redis's luaProtectedTableError.
func protectedTableError(L *lua.LState) int {
	if L.GetTop() != 2 {
		L.RaiseError("Wrong number of arguments to luaProtectedTableError")
	}
	k := L.Get(2)
	var name string
	switch x := k.(type) {
	case lua.LString:
		name = string(x)
	case lua.LNumber:
		name = fmtNumber(float64(x))
	default:
		L.RaiseError("Second argument to luaProtectedTableError must be a string or number")
	}
	if i := strings.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	L.RaiseError("Script attempted to access nonexistent global variable '%s'", name)
	return 0
}

// fmtNumber formats n as Lua 5.1 converts numbers to strings ("%.14g").
func fmtNumber(n float64) string {
	return cstr.FormatG(n, 14)
}

// toStringValue converts v as lua_tolstring does: strings as they are,
// numbers with "%.14g"; ok is false for any other type.
func toStringValue(v lua.LValue) (string, bool) {
	switch x := v.(type) {
	case lua.LString:
		return string(x), true
	case lua.LNumber:
		return fmtNumber(float64(x)), true
	}
	return "", false
}

// installBase replaces the base functions whose behaviour must match C
// Lua 5.1 as patched by Redis.
func (v *luaVM) installBase(g *lua.LTable) {
	L := v.L
	orig := func(name string) lua.LGFunction {
		if f, ok := g.RawGetString(name).(*lua.LFunction); ok && f.IsG {
			return f.GFunction
		}
		return func(L *lua.LState) int { return 0 }
	}
	set := func(name string, fn lua.LGFunction) { g.RawSetString(name, L.NewFunction(fn)) }

	origToString := orig("tostring")

	set("tostring", func(L *lua.LState) int {
		if L.GetTop() == 0 {
			argError(L, 1, "value expected")
		}
		if n, ok := L.Get(1).(lua.LNumber); ok {
			L.Push(lua.LString(fmtNumber(float64(n))))
			return 1
		}
		return origToString(L)
	})
	set("error", v.luaError)
	set("pcall", v.luaPcall)
	set("xpcall", v.luaXpcall)
	set("gcinfo", func(L *lua.LState) int {
		L.Push(lua.LNumber(v.memoryKB()))
		return 1
	})
	set("collectgarbage", func(L *lua.LState) int {
		// Go's collector does the work; report plausible values.
		opt := optLString(L, 1, "collect")
		optInt(L, 2, 0)
		switch opt {
		case "count":
			L.Push(lua.LNumber(float64(v.memoryKB())))
		case "step":
			L.Push(lua.LFalse)
		case "setpause", "setstepmul":
			L.Push(lua.LNumber(200))
		case "collect", "stop", "restart":
			L.Push(lua.LNumber(0))
		default:
			argError(L, 1, "invalid option '"+cstr.CString(opt)+"'")
		}
		return 1
	})
	set("rawget", func(L *lua.LState) int {
		t := checkTable(L, 1)
		L.Push(v.unwrap(t).RawGet(L.CheckAny(2)))
		return 1
	})
	set("rawset", func(L *lua.LState) int {
		t := checkTable(L, 1)
		L.CheckAny(2)
		L.CheckAny(3)
		if v.isReadonly(t) {
			raiseReadonly(L)
		}
		switch k := L.Get(2).(type) {
		case *lua.LNilType:
			L.Error(lua.LString("table index is nil"), 0)
		case lua.LNumber:
			if k != k {
				L.Error(lua.LString("table index is NaN"), 0)
			}
		}
		L.RawSet(t, L.Get(2), L.Get(3))
		L.SetTop(1)
		return 1
	})
	nextFn := L.NewFunction(func(L *lua.LState) int {
		t := v.unwrap(checkTable(L, 1))
		k, val := v.next(L, t, L.Get(2))
		if k == lua.LNil {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(k)
		L.Push(val)
		return 2
	})
	g.RawSetString("next", nextFn)
	set("pairs", func(L *lua.LState) int {
		t := checkTable(L, 1)
		L.Push(nextFn)
		L.Push(t)
		L.Push(lua.LNil)
		return 3
	})
	ipairsAux := L.NewFunction(func(L *lua.LState) int {
		t := v.unwrap(checkTable(L, 1))
		i := L.CheckInt(2) + 1
		val := t.RawGetInt(i)
		if val == lua.LNil {
			return 0
		}
		L.Push(lua.LNumber(i))
		L.Push(val)
		return 2
	})
	set("ipairs", func(L *lua.LState) int {
		t := checkTable(L, 1)
		L.Push(ipairsAux)
		L.Push(t)
		L.Push(lua.LNumber(0))
		return 3
	})
	set("unpack", v.luaUnpack)
	set("getmetatable", func(L *lua.LState) int {
		obj := L.CheckAny(1)
		if t, ok := obj.(*lua.LTable); ok {
			if ro, ok := v.contents[t]; ok {
				L.Push(ro.mt)
				return 1
			}
		}
		mt := L.GetMetatable(obj)
		if t, ok := mt.(*lua.LTable); ok {
			if p, ok := v.proxies[t]; ok {
				mt = p
			} else if f := t.RawGetString("__metatable"); f != lua.LNil {
				mt = f
			}
		}
		L.Push(mt)
		return 1
	})
	set("setmetatable", func(L *lua.LState) int {
		t := checkTable(L, 1)
		mt := L.Get(2)
		if mt != lua.LNil {
			if _, ok := mt.(*lua.LTable); !ok {
				typeError(L, 2, "nil or table")
			}
		}
		if cur, ok := t.Metatable.(*lua.LTable); ok && !v.isReadonly(t) && cur.RawGetString("__metatable") != lua.LNil {
			raiseLua(L, "cannot change a protected metatable")
		}
		if v.isReadonly(t) {
			raiseReadonly(L)
		}
		L.SetMetatable(t, mt)
		L.SetTop(1)
		return 1
	})
	// Chunks compiled at run time see the same globals as the script.
	set("loadstring", func(L *lua.LState) int {
		s := checkLString(L, 1)
		return v.loadChunk(L, s, optLString(L, 2, s))
	})
	set("load", func(L *lua.LState) int {
		name := optLString(L, 2, "=(load)")
		reader, ok := L.Get(1).(*lua.LFunction)
		if !ok {
			typeError(L, 1, "function")
		}
		var src strings.Builder
		for {
			L.Push(reader)
			L.Call(0, 1)
			piece := L.Get(-1)
			L.Pop(1)
			if piece == lua.LNil {
				break
			}
			s, ok := toStringValue(piece)
			if !ok {
				raiseLua(L, "reader function must return a string")
			}
			if s == "" {
				break
			}
			src.WriteString(s)
		}
		return v.loadChunk(L, src.String(), name)
	})
}

// loadChunk compiles s for loadstring, returning (function) or (nil,
// message) as Lua 5.1 does.
func (v *luaVM) loadChunk(L *lua.LState, s, chunkname string) int {
	fn, msg := compileChunk(L, s, chunkname, stringChunkID(chunkname))
	if fn == nil {
		L.Push(lua.LNil)
		L.Push(lua.LString(msg))
		return 2
	}
	fn.Env = v.env
	if len(v.chunkNames) > 1024 {
		clear(v.chunkNames)
	}
	v.chunkNames[stringChunkID(chunkname)] = chunkname
	L.Push(fn)
	return 1
}

// installTableLib makes the table library see through proxies.
func (v *luaVM) installTableLib(t *lua.LTable) {
	L := v.L
	orig := func(name string) lua.LGFunction {
		if f, ok := t.RawGetString(name).(*lua.LFunction); ok && f.IsG {
			return f.GFunction
		}
		return func(L *lua.LState) int { return 0 }
	}
	origSort := orig("sort")
	t.RawSetString("sort", L.NewFunction(func(L *lua.LState) int {
		if tb := checkTable(L, 1); v.isReadonly(tb) && v.length(tb) >= 2 {
			raiseReadonly(L)
		}
		return origSort(L)
	}))
	o := orig("maxn")
	t.RawSetString("maxn", L.NewFunction(func(L *lua.LState) int {
		L.Replace(1, v.unwrap(checkTable(L, 1)))
		return o(L)
	}))
	t.RawSetString("getn", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LNumber(v.unwrap(checkTable(L, 1)).Len()))
		return 1
	}))
	t.RawSetString("setn", L.NewFunction(func(L *lua.LState) int {
		checkTable(L, 1)
		L.RaiseError("'setn' is obsolete")
		return 0
	}))
	t.RawSetString("foreachi", L.NewFunction(func(L *lua.LState) int {
		tb := v.unwrap(checkTable(L, 1))
		fn := L.CheckFunction(2)
		n := tb.Len()
		for i := 1; i <= n; i++ {
			L.Push(fn)
			L.Push(lua.LNumber(i))
			L.Push(tb.RawGetInt(i))
			L.Call(2, 1)
			if r := L.Get(-1); r != lua.LNil {
				return 1
			}
			L.Pop(1)
		}
		return 0
	}))
	t.RawSetString("foreach", L.NewFunction(func(L *lua.LState) int {
		tb := v.unwrap(checkTable(L, 1))
		fn := L.CheckFunction(2)
		for k, val := v.next(L, tb, lua.LNil); k != lua.LNil; k, val = v.next(L, tb, k) {
			L.Push(fn)
			L.Push(k)
			L.Push(val)
			L.Call(2, 1)
			if r := L.Get(-1); r != lua.LNil {
				return 1
			}
			L.Pop(1)
		}
		return 0
	}))
}

// installMath replaces math.random and math.randomseed with Redis's
// versions (its own rand48, shared by every script of the server) and fixes
// math.huge.
func (v *luaVM) installMath(m *lua.LTable) {
	L := v.L
	m.RawSetString("huge", lua.LNumber(math.Inf(1)))
	m.RawSetString("random", L.NewFunction(func(L *lua.LState) int {
		r := float64(v.eng.rand.lrand48()%randMax) / float64(randMax)
		switch L.GetTop() {
		case 0:
			L.Push(lua.LNumber(r))
		case 1:
			u := checkInt(L, 1)
			if u < 1 {
				argError(L, 1, "interval is empty")
			}
			L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
		case 2:
			l := checkInt(L, 1)
			u := checkInt(L, 2)
			if l > u {
				argError(L, 2, "interval is empty")
			}
			L.Push(lua.LNumber(math.Floor(r*float64(u-l+1)) + float64(l)))
		default:
			L.RaiseError("wrong number of arguments")
		}
		return 1
	}))
	m.RawSetString("randomseed", L.NewFunction(func(L *lua.LState) int {
		v.eng.rand.srand48(int32(checkInt(L, 1)))
		return 0
	}))
}

// memoryKB estimates the interpreter's memory in kilobytes (gcinfo).
func (v *luaVM) memoryKB() int64 {
	return v.eng.vmMemory() / 1024
}

// iterState is the key order of a table as C Lua's lua_next walks it.
type iterState struct {
	alen, klen int // tableShape when computed
	keys       []lua.LValue
	pos        map[lua.LValue]int
}

// next is lua_next with C Lua's order (luaNextOrder) for tables with hash
// keys; arrays are walked as gopher-lua stores them, which is the same.
func (v *luaVM) next(L *lua.LState, t *lua.LTable, k lua.LValue) (lua.LValue, lua.LValue) {
	alen, klen, ok := tableShape(t)
	if !ok || klen == 0 {
		return t.Next(k)
	}
	st := v.iterOrder[t]
	if st == nil || st.alen != alen || st.klen != klen {
		keys := luaNextOrder(t, v.insertOrder[t])
		st = &iterState{alen: alen, klen: klen, keys: keys, pos: make(map[lua.LValue]int, len(keys))}
		for i, key := range keys {
			st.pos[key] = i
		}
		v.iterOrder[t] = st
	}
	i := 0
	if k != lua.LNil {
		p, ok := st.pos[k]
		if !ok {
			L.Error(lua.LString("invalid key to 'next'"), 0)
		}
		i = p + 1
	}
	for ; i < len(st.keys); i++ {
		if val := t.RawGet(st.keys[i]); val != lua.LNil {
			return st.keys[i], val
		}
	}
	return lua.LNil, lua.LNil
}

// maxCStack is C Lua 5.1's LUAI_MAXCSTACK: lua_checkstack refuses to grow a
// C function's stack beyond it.
const maxCStack = 8000

// luaUnpack is Lua 5.1's unpack as patched by Redis: a range that would not
// fit the C stack (counting the arguments already on it) raises "too many
// results to unpack" instead of pushing billions of values.
func (v *luaVM) luaUnpack(L *lua.LState) int {
	t := v.unwrap(checkTable(L, 1))
	i := optInt(L, 2, 1)
	var e int
	if L.GetTop() < 3 || L.Get(3) == lua.LNil {
		e = t.Len()
	} else {
		e = checkInt(L, 3)
	}
	if i > e {
		return 0
	}
	n := uint32(e) - uint32(i) // the number of elements minus 1
	if n >= math.MaxInt32 || int(n)+1+L.GetTop() > maxCStack {
		raiseLua(L, "too many results to unpack")
	}
	for ; i <= e; i++ {
		L.Push(t.RawGetInt(i))
	}
	return int(n) + 1
}
