package lualib

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// bit mirrors LuaBitOp 1.0.2 (lua_bit.c) as bundled with Redis 7.0: every
// operation works on 32-bit integers and returns a signed 32-bit result as
// a Lua number.

// OpenBit registers the global table "bit" in L as Redis's script engine
// does (luaopen_bit).
func OpenBit(L *lua.LState) {
	t := L.NewTable()
	fns := []struct {
		name string
		fn   lua.LGFunction
	}{
		{"tobit", bitTobit},
		{"bnot", bitBnot},
		{"band", bitOp(func(a, b uint32) uint32 { return a & b })},
		{"bor", bitOp(func(a, b uint32) uint32 { return a | b })},
		{"bxor", bitOp(func(a, b uint32) uint32 { return a ^ b })},
		{"lshift", bitShift(func(b, n uint32) uint32 { return b << n })},
		{"rshift", bitShift(func(b, n uint32) uint32 { return b >> n })},
		{"arshift", bitShift(func(b, n uint32) uint32 { return uint32(int32(b) >> n) })},
		{"rol", bitShift(func(b, n uint32) uint32 { return b<<n | b>>((32-n)&31) })},
		{"ror", bitShift(func(b, n uint32) uint32 { return b<<((32-n)&31) | b>>n })},
		{"bswap", bitBswap},
		{"tohex", bitTohex},
	}
	for _, f := range fns {
		t.RawSetString(f.name, L.NewFunction(f.fn))
	}
	L.SetGlobal("bit", t)
}

// barg mirrors barg: the argument's number plus 2^52+2^51, whose low 32
// bits of the double's representation are the wrapped integer value. A
// non-number (that is not a numeric string) is a type error.
func barg(L *lua.LState, idx int) uint32 {
	n, isNum := toNumber(L.Get(idx))
	b := uint32(math.Float64bits(n + 6755399441055744.0))
	if b == 0 && !isNum {
		typeError(L, idx, "number")
	}
	return b
}

func bret(L *lua.LState, b uint32) int {
	L.Push(lua.LNumber(int32(b)))
	return 1
}

func bitTobit(L *lua.LState) int { return bret(L, barg(L, 1)) }

func bitBnot(L *lua.LState) int { return bret(L, ^barg(L, 1)) }

// bitOp mirrors BIT_OP: argument 1 first, then the rest from the last down.
func bitOp(op func(a, b uint32) uint32) lua.LGFunction {
	return func(L *lua.LState) int {
		b := barg(L, 1)
		for i := L.GetTop(); i > 1; i-- {
			b = op(b, barg(L, i))
		}
		return bret(L, b)
	}
}

// bitShift mirrors BIT_SH; the shift count is taken modulo 32. (In C a
// rotation by 0 shifts by 32, which x86 masks to 0; the masking above gives
// the same result.)
func bitShift(op func(b, n uint32) uint32) lua.LGFunction {
	return func(L *lua.LState) int {
		b := barg(L, 1)
		n := barg(L, 2) & 31
		return bret(L, op(b, n))
	}
}

func bitBswap(L *lua.LState) int {
	b := barg(L, 1)
	return bret(L, b>>24|(b>>8)&0xff00|(b&0xff00)<<8|b<<24)
}

func bitTohex(L *lua.LState) int {
	b := barg(L, 1)
	n := int32(8)
	if L.GetTop() >= 2 {
		n = int32(barg(L, 2))
	}
	digits := "0123456789abcdef"
	if n == math.MinInt32 {
		n = math.MinInt32 + 1 // Redis's fix: -INT32_MIN would overflow
	}
	if n < 0 {
		n = -n
		digits = "0123456789ABCDEF"
	}
	if n > 8 {
		n = 8
	}
	buf := make([]byte, n)
	for i := int(n) - 1; i >= 0; i-- {
		buf[i] = digits[b&15]
		b >>= 4
	}
	L.Push(lua.LString(buf))
	return 1
}
