package script

import (
	"reflect"
	"sync"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// gopher-lua keeps the call frames and the register file of a running
// function unexported. Reproducing C Lua's error messages ("attempt to call
// local 'f' (a nil value)", "bad argument #1 to 'rep' (... got no value)")
// needs the program counter of the failing instruction, the argument count
// of a failing Go function and the values in registers, so this file reads
// them through mirror structs checked field by field against gopher-lua's
// own types at start-up. If gopher-lua's layout ever changes, the check fails
// and error messages degrade to gopher-lua's wording instead of reading
// garbage.

// frameMirror mirrors gopher-lua's callFrame.
type frameMirror struct {
	Idx        int
	Fn         *lua.LFunction
	Parent     *frameMirror
	Pc         int
	Base       int
	LocalBase  int
	ReturnBase int
	NArgs      int
	NRet       int
	TailCall   int
}

// registryMirror mirrors the first field of gopher-lua's registry.
type registryMirror struct {
	array []lua.LValue
}

var (
	internalsOnce sync.Once
	internalsOK   bool
)

// internalsUsable reports whether the mirrors match gopher-lua's types.
func internalsUsable() bool {
	internalsOnce.Do(func() { internalsOK = checkInternals() })
	return internalsOK
}

func checkInternals() bool {
	st := reflect.TypeOf((*lua.LState)(nil)).Elem()
	cf, ok := st.FieldByName("currentFrame")
	if !ok || cf.Type.Kind() != reflect.Pointer {
		return false
	}
	if !sameLayout(cf.Type.Elem(), reflect.TypeOf(frameMirror{})) {
		return false
	}
	rf, ok := st.FieldByName("reg")
	if !ok || rf.Type.Kind() != reflect.Pointer {
		return false
	}
	rt := rf.Type.Elem()
	if rt.NumField() < 1 || rt.Field(0).Name != "array" || rt.Field(0).Type != reflect.TypeOf([]lua.LValue(nil)) || rt.Field(0).Offset != 0 {
		return false
	}
	df, ok := reflect.TypeOf(lua.Debug{}).FieldByName("frame")
	return ok && df.Type == cf.Type
}

// sameLayout reports whether two struct types have the same field names,
// offsets and (for the non-recursive fields) types.
func sameLayout(real, mirror reflect.Type) bool {
	if real.Kind() != reflect.Struct || real.NumField() != mirror.NumField() || real.Size() != mirror.Size() {
		return false
	}
	for i := 0; i < real.NumField(); i++ {
		a, b := real.Field(i), mirror.Field(i)
		if a.Name != b.Name || a.Offset != b.Offset || a.Type.Size() != b.Type.Size() {
			return false
		}
		if a.Name == "Parent" {
			if a.Type.Kind() != reflect.Pointer || a.Type.Elem() != real {
				return false
			}
			continue
		}
		if a.Type != b.Type {
			return false
		}
	}
	return true
}

// currentFrameOffset is the offset of LState.currentFrame.
var currentFrameOffset = func() uintptr {
	f, ok := reflect.TypeOf((*lua.LState)(nil)).Elem().FieldByName("currentFrame")
	if !ok {
		return 0
	}
	return f.Offset
}()

// currentFrame returns L's running frame, or nil.
func currentFrame(L *lua.LState) *frameMirror {
	if !internalsUsable() {
		return nil
	}
	return *(**frameMirror)(unsafe.Add(unsafe.Pointer(L), currentFrameOffset))
}

// debugFrame returns the frame a lua.Debug from GetStack describes, or nil.
func debugFrame(d *lua.Debug) *frameMirror {
	if d == nil || !internalsUsable() {
		return nil
	}
	v := reflect.ValueOf(d).Elem().FieldByName("frame")
	return (*frameMirror)(unsafe.Pointer(v.Pointer()))
}

// register returns the value in slot i of L's register file (LNil when out
// of range).
func register(L *lua.LState, i int) lua.LValue {
	if !internalsUsable() || i < 0 {
		return lua.LNil
	}
	v := reflect.ValueOf(L).Elem().FieldByName("reg")
	rg := (*registryMirror)(unsafe.Pointer(v.Pointer()))
	if rg == nil || i >= len(rg.array) || rg.array[i] == nil {
		return lua.LNil
	}
	return rg.array[i]
}

// frameAt returns the frame level levels above L's running one, counting as
// lua.LState.GetStack does, or nil.
func frameAt(L *lua.LState, level int) *frameMirror {
	d, ok := L.GetStack(level)
	if !ok {
		return nil
	}
	return debugFrame(d)
}

// currentLine returns the line f executes, or -1 for Go functions.
func (f *frameMirror) currentLine() int {
	if f == nil || f.Fn == nil || f.Fn.IsG || f.Fn.Proto == nil || f.Pc <= 0 {
		return -1
	}
	pos := f.Fn.Proto.DbgSourcePositions
	if f.Pc-1 >= len(pos) {
		return -1
	}
	return pos[f.Pc-1]
}

// isLua reports whether f runs a Lua (not Go) function.
func (f *frameMirror) isLua() bool { return f != nil && f.Fn != nil && !f.Fn.IsG && f.Fn.Proto != nil }

// Offsets of LTable.array and LTable.keys (0 when unusable).
var tableArrayOffset, tableKeysOffset = func() (uintptr, uintptr) {
	t := reflect.TypeOf(lua.LTable{})
	a, okA := t.FieldByName("array")
	k, okK := t.FieldByName("keys")
	slice := reflect.TypeOf([]lua.LValue(nil))
	if !okA || !okK || a.Type != slice || k.Type != slice {
		return 0, 0
	}
	return a.Offset, k.Offset
}()

// tableShape returns the lengths of t's array part and of its list of hash
// keys (gopher-lua never removes keys from that list), which change
// whenever a key is added. ok is false if gopher-lua's layout is unknown.
func tableShape(t *lua.LTable) (alen, klen int, ok bool) {
	if tableKeysOffset == 0 {
		return 0, 0, false
	}
	p := unsafe.Pointer(t)
	return len(*(*[]lua.LValue)(unsafe.Add(p, tableArrayOffset))), len(*(*[]lua.LValue)(unsafe.Add(p, tableKeysOffset))), true
}
