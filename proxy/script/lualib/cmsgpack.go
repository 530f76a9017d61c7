package lualib

import (
	"encoding/binary"
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// cmsgpack mirrors lua_cmsgpack.c (lua-cmsgpack 0.4.0) as bundled with
// Redis 7.0, built for Lua 5.1 on a 64-bit platform.

// msgpackMaxNesting mirrors LUACMSGPACK_MAX_NESTING: deeper tables encode
// as nil.
const msgpackMaxNesting = 16

// OpenCMsgpack registers the global table "cmsgpack" in L as Redis's script
// engine does (luaopen_cmsgpack).
func OpenCMsgpack(L *lua.LState) {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(mpPack))
	t.RawSetString("unpack", L.NewFunction(mpUnpack))
	t.RawSetString("unpack_one", L.NewFunction(mpUnpackOne))
	t.RawSetString("unpack_limit", L.NewFunction(mpUnpackLimit))
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	t.RawSetString("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"))
	t.RawSetString("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua"))
	L.SetGlobal("cmsgpack", t)
}

// ===== Encoding =====

type mpEncoder struct {
	buf []byte
}

func (e *mpEncoder) appendBytes(s string) {
	n := len(s)
	switch {
	case n < 32:
		e.buf = append(e.buf, 0xa0|byte(n))
	case n <= 0xff:
		e.buf = append(e.buf, 0xd9, byte(n))
	case n <= 0xffff:
		e.buf = append(e.buf, 0xda, byte(n>>8), byte(n))
	default:
		e.buf = append(e.buf, 0xdb, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	e.buf = append(e.buf, s...)
}

// appendDouble mirrors mp_encode_double: a float when exact, else a double.
func (e *mpEncoder) appendDouble(d float64) {
	f := float32(d)
	if float64(f) == d {
		e.buf = append(e.buf, 0xca)
		e.buf = binary.BigEndian.AppendUint32(e.buf, math.Float32bits(f))
		return
	}
	e.buf = append(e.buf, 0xcb)
	e.buf = binary.BigEndian.AppendUint64(e.buf, math.Float64bits(d))
}

// appendInt mirrors mp_encode_int: the smallest encoding of n.
func (e *mpEncoder) appendInt(n int64) {
	u := uint64(n)
	if n >= 0 {
		switch {
		case n <= 127:
			e.buf = append(e.buf, byte(n))
		case n <= 0xff:
			e.buf = append(e.buf, 0xcc, byte(n))
		case n <= 0xffff:
			e.buf = append(e.buf, 0xcd, byte(n>>8), byte(n))
		case n <= 0xffffffff:
			e.buf = append(e.buf, 0xce)
			e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(n))
		default:
			e.buf = append(e.buf, 0xcf)
			e.buf = binary.BigEndian.AppendUint64(e.buf, u)
		}
		return
	}
	switch {
	case n >= -32:
		e.buf = append(e.buf, byte(int8(n)))
	case n >= -128:
		e.buf = append(e.buf, 0xd0, byte(n))
	case n >= -32768:
		e.buf = append(e.buf, 0xd1, byte(n>>8), byte(n))
	case n >= -2147483648:
		e.buf = append(e.buf, 0xd2)
		e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(n))
	default:
		e.buf = append(e.buf, 0xd3)
		e.buf = binary.BigEndian.AppendUint64(e.buf, u)
	}
}

func (e *mpEncoder) appendArrayHeader(n uint64) {
	switch {
	case n <= 15:
		e.buf = append(e.buf, 0x90|byte(n))
	case n <= 65535:
		e.buf = append(e.buf, 0xdc, byte(n>>8), byte(n))
	default:
		e.buf = append(e.buf, 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
}

func (e *mpEncoder) appendMapHeader(n uint64) {
	switch {
	case n <= 15:
		e.buf = append(e.buf, 0x80|byte(n))
	case n <= 65535:
		e.buf = append(e.buf, 0xde, byte(n>>8), byte(n))
	default:
		e.buf = append(e.buf, 0xdf, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
}

// appendNumber mirrors mp_encode_lua_number: integers when the double holds
// an int64 exactly (as a C cast decides), doubles or floats otherwise.
func (e *mpEncoder) appendNumber(n float64) {
	if !math.IsInf(n, 0) && float64(toInteger(n)) == n {
		e.appendInt(toInteger(n))
		return
	}
	e.appendDouble(n)
}

// isArray mirrors table_is_an_array: keys exactly 1..N.
func isArray(keys []lua.LValue) bool {
	var count, max int32
	for _, k := range keys {
		n, ok := k.(lua.LNumber)
		f := float64(n)
		if !ok || f <= 0 || math.IsInf(f, 0) || float64(toCInt(f)) != f {
			return false
		}
		if f > float64(max) {
			max = toCInt(f)
		}
		count++
	}
	return max == count
}

// appendValue mirrors mp_encode_lua_type.
func (e *mpEncoder) appendValue(v lua.LValue, level int) {
	switch x := v.(type) {
	case lua.LString:
		e.appendBytes(string(x))
	case lua.LBool:
		if x {
			e.buf = append(e.buf, 0xc3)
		} else {
			e.buf = append(e.buf, 0xc2)
		}
	case lua.LNumber:
		e.appendNumber(float64(x))
	case *lua.LTable:
		if level == msgpackMaxNesting {
			e.buf = append(e.buf, 0xc0)
			return
		}
		keys := tableKeys(x)
		if isArray(keys) {
			e.appendArrayHeader(uint64(len(keys)))
			for i := 1; i <= len(keys); i++ {
				// lua_gettable: honours __index, which cannot fire here
				// since every key 1..N is present.
				e.appendValue(x.RawGetInt(i), level+1)
			}
			return
		}
		e.appendMapHeader(uint64(len(keys)))
		for _, k := range keys {
			e.appendValue(k, level+1)
			e.appendValue(x.RawGet(k), level+1)
		}
	default:
		e.buf = append(e.buf, 0xc0)
	}
}

func mpPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		argError(L, 0, "MessagePack pack needs input.")
	}
	if n > maxCStack-n {
		argError(L, 0, "Too many arguments for MessagePack pack.")
	}
	e := &mpEncoder{}
	for i := 1; i <= n; i++ {
		e.appendValue(L.Get(i), 0)
	}
	L.Push(lua.LString(e.buf))
	return 1
}

// ===== Decoding =====

const (
	mpErrNone = iota
	mpErrEOF
	mpErrBadFmt
)

// mpDecoder mirrors mp_cur plus the Lua stack accounting of the C decoder.
type mpDecoder struct {
	L    *lua.LState
	data string
	pos  int
	err  int
	used int // Lua stack slots the C decoder would occupy
}

func (d *mpDecoder) left() int { return len(d.data) - d.pos }

func (d *mpDecoder) need(n uint64) bool {
	if uint64(d.left()) < n {
		d.err = mpErrEOF
		return false
	}
	return true
}

// checkStack mirrors luaL_checkstack(L, 1, msg).
func (d *mpDecoder) checkStack(msg string) {
	if d.used+1 > maxCStack {
		raise(d.L, "stack overflow ("+msg+")")
	}
}

func (d *mpDecoder) u8(i int) uint64 { return uint64(d.data[d.pos+i]) }

// setField mirrors lua_settable on a fresh table, including its errors.
func (d *mpDecoder) setField(t *lua.LTable, k, v lua.LValue) {
	// luaG_runerror from inside a C function carries no position.
	if k == lua.LNil {
		d.L.Error(lua.LString("table index is nil"), 0)
	}
	if n, ok := k.(lua.LNumber); ok && n != n {
		d.L.Error(lua.LString("table index is NaN"), 0)
	}
	if v != lua.LNil {
		t.RawSet(k, v)
	}
}

func (d *mpDecoder) decodeArray(n uint64) lua.LValue {
	t := d.L.NewTable()
	d.used++ // the table
	d.checkStack("in function mp_decode_to_lua_array")
	for i := uint64(1); i <= n; i++ {
		d.used++ // the index
		v := d.decodeValue()
		if d.err != mpErrNone {
			return lua.LNil
		}
		d.used--
		if v != lua.LNil {
			t.RawSetInt(int(i), v)
		}
	}
	d.used--
	return t
}

func (d *mpDecoder) decodeMap(n uint64) lua.LValue {
	t := d.L.NewTable()
	d.used++
	for ; n > 0; n-- {
		k := d.decodeValue()
		if d.err != mpErrNone {
			return lua.LNil
		}
		d.used++
		v := d.decodeValue()
		if d.err != mpErrNone {
			return lua.LNil
		}
		d.used--
		d.setField(t, k, v)
	}
	d.used--
	return t
}

func (d *mpDecoder) str(hdr int, n uint64) lua.LValue {
	if !d.need(uint64(hdr) + n) {
		return lua.LNil
	}
	s := d.data[d.pos+hdr : d.pos+hdr+int(n)]
	d.pos += hdr + int(n)
	return lua.LString(s)
}

func (d *mpDecoder) be(off, n int) uint64 {
	var v uint64
	for i := 0; i < n; i++ {
		v = v<<8 | d.u8(off+i)
	}
	return v
}

// decodeValue mirrors mp_decode_to_lua_type. On error it sets d.err and
// returns nil.
func (d *mpDecoder) decodeValue() lua.LValue {
	if !d.need(1) {
		return lua.LNil
	}
	d.checkStack("too many return values at once; use unpack_one or unpack_limit instead.")
	c := d.data[d.pos]
	fixed := func(n int) bool { return d.need(uint64(n)) }
	switch c {
	case 0xcc: // uint 8
		if !fixed(2) {
			return lua.LNil
		}
		v := d.u8(1)
		d.pos += 2
		return lua.LNumber(v)
	case 0xd0: // int 8
		if !fixed(2) {
			return lua.LNil
		}
		v := int8(d.u8(1))
		d.pos += 2
		return lua.LNumber(v)
	case 0xcd: // uint 16
		if !fixed(3) {
			return lua.LNil
		}
		v := d.be(1, 2)
		d.pos += 3
		return lua.LNumber(v)
	case 0xd1: // int 16
		if !fixed(3) {
			return lua.LNil
		}
		v := int16(d.be(1, 2))
		d.pos += 3
		return lua.LNumber(v)
	case 0xce: // uint 32
		if !fixed(5) {
			return lua.LNil
		}
		v := d.be(1, 4)
		d.pos += 5
		return lua.LNumber(v)
	case 0xd2: // int 32
		if !fixed(5) {
			return lua.LNil
		}
		v := int32(d.be(1, 4))
		d.pos += 5
		return lua.LNumber(v)
	case 0xcf: // uint 64, pushed through lua_pushinteger (a signed int64)
		if !fixed(9) {
			return lua.LNil
		}
		v := int64(d.be(1, 8))
		d.pos += 9
		return lua.LNumber(v)
	case 0xd3: // int 64
		if !fixed(9) {
			return lua.LNil
		}
		v := int64(d.be(1, 8))
		d.pos += 9
		return lua.LNumber(v)
	case 0xc0:
		d.pos++
		return lua.LNil
	case 0xc3:
		d.pos++
		return lua.LTrue
	case 0xc2:
		d.pos++
		return lua.LFalse
	case 0xca: // float
		if !fixed(5) {
			return lua.LNil
		}
		v := math.Float32frombits(uint32(d.be(1, 4)))
		d.pos += 5
		return lua.LNumber(v)
	case 0xcb: // double
		if !fixed(9) {
			return lua.LNil
		}
		v := math.Float64frombits(d.be(1, 8))
		d.pos += 9
		return lua.LNumber(v)
	case 0xd9: // str 8
		if !fixed(2) {
			return lua.LNil
		}
		return d.str(2, d.u8(1))
	case 0xda: // str 16
		if !fixed(3) {
			return lua.LNil
		}
		return d.str(3, d.be(1, 2))
	case 0xdb: // str 32
		if !fixed(5) {
			return lua.LNil
		}
		n := d.be(1, 4)
		d.pos += 5
		return d.str(0, n)
	case 0xdc: // array 16
		if !fixed(3) {
			return lua.LNil
		}
		n := d.be(1, 2)
		d.pos += 3
		return d.decodeArray(n)
	case 0xdd: // array 32
		if !fixed(5) {
			return lua.LNil
		}
		n := d.be(1, 4)
		d.pos += 5
		return d.decodeArray(n)
	case 0xde: // map 16
		if !fixed(3) {
			return lua.LNil
		}
		n := d.be(1, 2)
		d.pos += 3
		return d.decodeMap(n)
	case 0xdf: // map 32
		if !fixed(5) {
			return lua.LNil
		}
		n := d.be(1, 4)
		d.pos += 5
		return d.decodeMap(n)
	}
	switch {
	case c&0x80 == 0: // positive fixnum
		d.pos++
		return lua.LNumber(c)
	case c&0xe0 == 0xe0: // negative fixnum
		d.pos++
		return lua.LNumber(int8(c))
	case c&0xe0 == 0xa0: // fix str
		return d.str(1, uint64(c&0x1f))
	case c&0xf0 == 0x90: // fix array
		d.pos++
		return d.decodeArray(uint64(c & 0xf))
	case c&0xf0 == 0x80: // fix map
		d.pos++
		return d.decodeMap(uint64(c & 0xf))
	}
	d.err = mpErrBadFmt
	return lua.LNil
}

// unpackFull mirrors mp_unpack_full. limit == 0 && offset == 0 decodes the
// whole input and returns only the values; otherwise the next offset (or
// -1 at the end of input) comes first.
func unpackFull(L *lua.LState, s string, limit, offset int64) int {
	if offset < 0 || limit < 0 {
		raise(L, "Invalid request to unpack with offset of "+strconv.Itoa(int(int32(offset)))+
			" and limit of "+strconv.Itoa(int(int32(len(s))))+".")
	}
	if offset > int64(len(s)) {
		raise(L, "Start offset "+strconv.Itoa(int(int32(offset)))+" greater than input length "+
			strconv.Itoa(int(int32(len(s))))+".")
	}
	decodeAll := limit == 0 && offset == 0
	if decodeAll {
		limit = math.MaxInt32
	}
	d := &mpDecoder{L: L, data: s, pos: int(offset), used: 1}
	var values []lua.LValue
	for cnt := int64(0); d.left() > 0 && cnt < limit; cnt++ {
		v := d.decodeValue()
		switch d.err {
		case mpErrEOF:
			raise(L, "Missing bytes in input.")
		case mpErrBadFmt:
			raise(L, "Bad data format in input.")
		}
		values = append(values, v)
		d.used++
	}
	if !decodeAll {
		next := int64(d.pos)
		if d.left() == 0 {
			next = -1
		}
		L.Push(lua.LNumber(next))
	}
	for _, v := range values {
		L.Push(v)
	}
	if decodeAll {
		return len(values)
	}
	return len(values) + 1
}

func mpUnpack(L *lua.LState) int {
	s := checkLString(L, 1)
	return unpackFull(L, s, 0, 0)
}

func mpUnpackOne(L *lua.LState) int {
	offset := optInteger(L, 2, 0)
	s := checkLString(L, 1)
	return unpackFull(L, s, 1, offset)
}

func mpUnpackLimit(L *lua.LState) int {
	limit := checkInteger(L, 2)
	offset := optInteger(L, 3, 0)
	s := checkLString(L, 1)
	return unpackFull(L, s, limit, offset)
}
