package script

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// string.dump, which gopher-lua does not provide (it raises "GopherLua does
// not support the string.dump"). Scripts can dump a function but never load
// the result: loadstring in Redis treats a binary chunk as source text and
// fails, so "loadstring(string.dump(f))" yields nil, as in Redis.
//
// The dump has C Lua 5.1's layout (ldump.c: the header of an x86-64 build,
// then the function, its constants, nested functions and debug
// information); the instructions are gopher-lua's, which differ from luac's
// in places, so the bytes match Redis's only in shape.

// luaDumpHeader is luaU_header on x86-64: signature, version 5.1, official
// format, little endian, sizeof int, size_t, Instruction, lua_Number, and
// lua_Number not integral.
const luaDumpHeader = "\x1bLuaQ\x00\x01\x04\x08\x04\x08\x00"

// strDump is string.dump.
func strDump(L *lua.LState) int {
	fn, ok := L.Get(1).(*lua.LFunction)
	if !ok {
		typeError(L, 1, "function")
		return 0
	}
	if fn.IsG || fn.Proto == nil {
		raiseLua(L, "unable to dump given function")
		return 0
	}
	b := append([]byte(nil), luaDumpHeader...)
	b = dumpProto(b, fn.Proto, "")
	L.Push(lua.LString(b))
	return 1
}

// dumpProto appends DumpFunction's encoding of p; parentSource is the
// enclosing function's source, which a nested function does not repeat.
func dumpProto(b []byte, p *lua.FunctionProto, parentSource string) []byte {
	if p.SourceName == parentSource {
		b = dumpNullString(b)
	} else {
		b = dumpString(b, p.SourceName)
	}
	b = dumpInt(b, p.LineDefined)
	b = dumpInt(b, p.LastLineDefined)
	b = append(b, p.NumUpvalues, p.NumParameters, p.IsVarArg, p.NumUsedRegisters)
	b = dumpInt(b, len(p.Code))
	for _, ins := range p.Code {
		b = binary.LittleEndian.AppendUint32(b, ins)
	}
	b = dumpInt(b, len(p.Constants))
	for _, k := range p.Constants {
		switch k := k.(type) {
		case lua.LBool:
			b = append(b, 1, b2u8(bool(k)))
		case lua.LNumber:
			b = append(b, 3)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(float64(k)))
		case lua.LString:
			b = append(b, 4)
			b = dumpString(b, string(k))
		default:
			b = append(b, 0) // nil
		}
	}
	b = dumpInt(b, len(p.FunctionPrototypes))
	for _, c := range p.FunctionPrototypes {
		b = dumpProto(b, c, p.SourceName)
	}
	b = dumpInt(b, len(p.DbgSourcePositions))
	for _, line := range p.DbgSourcePositions {
		b = dumpInt(b, line)
	}
	b = dumpInt(b, len(p.DbgLocals))
	for _, l := range p.DbgLocals {
		b = dumpString(b, l.Name)
		b = dumpInt(b, l.StartPc)
		b = dumpInt(b, l.EndPc)
	}
	b = dumpInt(b, len(p.DbgUpvalues))
	for _, u := range p.DbgUpvalues {
		b = dumpString(b, u)
	}
	return b
}

func dumpInt(b []byte, n int) []byte { return binary.LittleEndian.AppendUint32(b, uint32(int32(n))) }

// dumpString is DumpString: size_t length including the NUL, the bytes,
// the NUL.
func dumpString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)+1))
	b = append(b, s...)
	return append(b, 0)
}

func dumpNullString(b []byte) []byte { return binary.LittleEndian.AppendUint64(b, 0) }

func b2u8(v bool) uint8 {
	if v {
		return 1
	}
	return 0
}
