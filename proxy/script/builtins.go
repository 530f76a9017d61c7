package script

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/spillway/spillway/proxy/script/lualib"
)

// luaErrHandler is Redis's __redis__err__handler (and the error handler of
// function calls): it turns the error into a table {err=...} ("ERR " plus
// the message for non-table errors) and records the source and line of the
// Lua code that raised it, skipping a Go function that raised on behalf of
// its Lua caller.
func (v *luaVM) luaErrHandler(L *lua.LState) int {
	err := v.translate(L, L.Get(1))
	f := frameAt(L, 1)
	if f != nil && !f.isLua() {
		f = frameAt(L, 2)
	} else if f != nil && f == v.overflowAt {
		f = f.Parent // a stack overflow, raised at the call
	}
	t, ok := err.(*lua.LTable)
	if !ok {
		t = L.CreateTable(0, 3)
		t.RawSetString("err", lua.LString("ERR "+luaToString(err)))
	} else if v.isReadonly(t) {
		// A read-only table (error(redis)) must not be written to: report
		// its err field in a fresh table.
		c := L.CreateTable(0, 3)
		c.RawSetString("err", v.unwrap(t).RawGetString("err"))
		t = c
	}
	if f != nil {
		if f.isLua() {
			t.RawSetString("source", lua.LString(v.chunkSource(f.Fn.Proto.SourceName)))
			t.RawSetString("line", lua.LNumber(f.currentLine()))
		} else {
			t.RawSetString("source", lua.LString("=[C]"))
			t.RawSetString("line", lua.LNumber(-1))
		}
	}
	L.Push(t)
	return 1
}

// chunkSource returns the debug "source" of a chunk gopher-lua knows by
// name: "@user_script" for scripts, the chunk text for loadstring chunks.
func (v *luaVM) chunkSource(name string) string {
	switch name {
	case evalChunk, funcChunk:
		return "@" + name
	}
	if src, ok := v.chunkNames[name]; ok {
		return src
	}
	return name
}

// luaError is C Lua 5.1's error(): string (and number) messages get the
// position of the function at the given level.
func (v *luaVM) luaError(L *lua.LState) int {
	level := 1
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		level = checkInt(L, 2)
	}
	obj := L.Get(1)
	if s, ok := toStringValue(obj); ok && level > 0 {
		pos := ""
		if f := frameAt(L, level); f != nil {
			pos = luaWhere(f)
		}
		L.Error(lua.LString(pos+s), 0)
	}
	L.Error(obj, 0)
	return 0
}

// luaPcall is Redis's pcall: C Lua's pcall, except that an error table with
// an "err" field is replaced by that field, so that scripts written for
// Redis 6 (where errors were strings) keep working.
func (v *luaVM) luaPcall(L *lua.LState) int {
	argc := L.GetTop()
	if argc == 0 {
		L.Push(lua.LFalse)
		L.Push(lua.LString("attempt to call a boolean value"))
		return 2
	}
	if fn := L.Get(1); !callable(L, fn) {
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(lua.LString("attempt to call a " + lualib.TypeName(fn) + " value"))
		return 2
	}
	if err := L.PCall(argc-1, lua.MultRet, v.pcallHandler()); err != nil {
		obj := errorObject(err)
		if t, ok := obj.(*lua.LTable); ok {
			switch e := L.GetField(t, "err").(type) {
			case lua.LString, lua.LNumber:
				obj = e
			}
		}
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(obj)
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// luaXpcall is C Lua 5.1's xpcall(f, handler).
func (v *luaVM) luaXpcall(L *lua.LState) int {
	if L.GetTop() < 2 {
		argError(L, 2, "value expected")
	}
	L.SetTop(2)
	fn, handler := L.Get(1), L.Get(2)
	L.SetTop(0)
	eh := L.NewFunction(func(L *lua.LState) int {
		obj := v.translate(L, L.Get(1))
		if !callable(L, handler) {
			L.Push(lua.LString("error in error handling"))
			return 1
		}
		L.Push(handler)
		L.Push(obj)
		L.Call(1, 1)
		return 1
	})
	if !callable(L, fn) {
		var res lua.LValue = lua.LString("error in error handling")
		if callable(L, handler) {
			L.Push(handler)
			L.Push(lua.LString("attempt to call a " + lualib.TypeName(fn) + " value"))
			if err := L.PCall(1, 1, nil); err == nil {
				res = L.Get(-1)
			}
		}
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(res)
		return 2
	}
	L.Push(fn)
	if err := L.PCall(0, lua.MultRet, eh); err != nil {
		L.SetTop(0)
		L.Push(lua.LFalse)
		L.Push(errorObject(err))
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// pcallHandler returns the handler of pcall: it only translates messages.
func (v *luaVM) pcallHandler() *lua.LFunction {
	if v.pcallH == nil {
		v.pcallH = v.L.NewFunction(func(L *lua.LState) int {
			L.Push(v.translate(L, L.Get(1)))
			return 1
		})
	}
	return v.pcallH
}

// errorObject returns the Lua value an error from PCall carries;
// gopher-lua's call stack overflow (a Go panic) becomes "stack overflow".
func errorObject(err error) lua.LValue {
	if ae, ok := err.(*lua.ApiError); ok && ae.Type == lua.ApiErrorPanic && ae.Object != nil && ae.Object.String() == "lua callstack overflow" {
		return lua.LString("stack overflow")
	}
	if ae, ok := err.(*lua.ApiError); ok && ae.Object != nil {
		return ae.Object
	}
	return lua.LString(err.Error())
}

// callable reports whether v can be called.
func callable(L *lua.LState, v lua.LValue) bool {
	if _, ok := v.(*lua.LFunction); ok {
		return true
	}
	_, ok := L.GetMetaField(v, "__call").(*lua.LFunction)
	return ok
}
