package lualib

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/spillway/spillway/proxy/cstr"
)

// struct mirrors lua_struct.c (struct.c 1.4 with Redis's security fixes:
// overflow-checked sizes in getnum and bounds-checked offsets in unpack) as
// bundled with Redis 7.0 on x86-64: the integer type is a 64-bit long, the
// native byte order is little endian, int is 4 bytes and the maximum
// alignment is 8. Sizes and offsets use C's size_t (uint64) arithmetic.

const (
	structBig    = 0
	structLittle = 1

	structMaxIntSize = 32
	structMaxAlign   = 8
)

// OpenStruct registers the global table "struct" in L as Redis's script
// engine does (luaopen_struct).
func OpenStruct(L *lua.LState) {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	L.SetGlobal("struct", t)
}

type structHeader struct {
	endian int
	align  int32
}

// structFormat walks a format string as the C code's fmt pointer does.
type structFormat struct {
	s string
	i int
}

func (f *structFormat) more() bool { return f.i < len(f.s) }

func (f *structFormat) next() byte {
	c := f.s[f.i]
	f.i++
	return c
}

// getnum mirrors Redis's getnum: a decimal number that must fit in a C
// int, or df when no digit follows.
func (f *structFormat) getnum(L *lua.LState, df int32) int32 {
	if !f.more() || !cstr.IsDigit(f.s[f.i]) {
		return df
	}
	var a int32
	for f.more() && cstr.IsDigit(f.s[f.i]) {
		d := int32(f.s[f.i] - '0')
		if a > math.MaxInt32/10 || a*10 > math.MaxInt32-d {
			raise(L, "integral size overflow")
		}
		a = a*10 + d
		f.i++
	}
	return a
}

// optsize mirrors optsize; the result is a C size_t.
func optsize(L *lua.LState, opt byte, f *structFormat) uint64 {
	switch opt {
	case 'B', 'b', 'x':
		return 1
	case 'H', 'h':
		return 2
	case 'L', 'l', 'T', 'd':
		return 8
	case 'f':
		return 4
	case 'c':
		return uint64(f.getnum(L, 1))
	case 'i', 'I':
		sz := f.getnum(L, 4)
		if sz > structMaxIntSize {
			raise(L, "integral size "+strconv.Itoa(int(sz))+" is larger than limit of "+strconv.Itoa(structMaxIntSize))
		}
		return uint64(sz)
	}
	return 0
}

// gettoalign mirrors gettoalign.
func gettoalign(pos uint64, h *structHeader, opt byte, size uint64) uint64 {
	if size == 0 || opt == 'c' {
		return 0
	}
	if size > uint64(int64(h.align)) {
		size = uint64(int64(h.align))
	}
	return (size - (pos & (size - 1))) & (size - 1)
}

// controloptions mirrors controloptions: endianness, alignment, spaces.
func controloptions(L *lua.LState, opt byte, f *structFormat, h *structHeader) {
	switch opt {
	case ' ':
	case '>':
		h.endian = structBig
	case '<':
		h.endian = structLittle
	case '!':
		a := f.getnum(L, structMaxAlign)
		if a == 0 || a&(a-1) != 0 {
			raise(L, "alignment "+strconv.Itoa(int(a))+" is not a power of 2")
		}
		h.align = a
	default:
		argError(L, 1, "invalid format option '"+string([]byte{opt})+"'")
	}
}

// doubleToUint64 mirrors a C (unsigned long) cast of a double as GCC
// compiles it for x86-64.
func doubleToUint64(n float64) uint64 {
	if !(n >= 9223372036854775808.0) {
		return uint64(toInteger(n))
	}
	return uint64(toInteger(n-9223372036854775808.0)) ^ (1 << 63)
}

// checkFormat mirrors luaL_checkstring(L, 1) as C sees it (up to a NUL).
func checkFormat(L *lua.LState) *structFormat {
	s := checkLString(L, 1)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return &structFormat{s: s}
}

func structPack(L *lua.LState) int {
	f := checkFormat(L)
	// The C code pushes a nil to separate the arguments from its string
	// buffer, so a missing argument is reported as "got nil".
	L.Push(lua.LNil)
	h := structHeader{endian: structLittle, align: 1}
	arg := 2
	var buf []byte
	var total uint64
	for f.more() {
		opt := f.next()
		size := optsize(L, opt, f)
		toalign := gettoalign(total, &h, opt, size)
		total += toalign
		for ; toalign > 0; toalign-- {
			buf = append(buf, 0)
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			buf = putinteger(L, buf, arg, h.endian, int(size))
			arg++
		case 'x':
			buf = append(buf, 0)
		case 'f':
			v := math.Float32bits(float32(checkNumber(L, arg)))
			arg++
			if h.endian == structBig {
				buf = binary.BigEndian.AppendUint32(buf, v)
			} else {
				buf = binary.LittleEndian.AppendUint32(buf, v)
			}
		case 'd':
			v := math.Float64bits(checkNumber(L, arg))
			arg++
			if h.endian == structBig {
				buf = binary.BigEndian.AppendUint64(buf, v)
			} else {
				buf = binary.LittleEndian.AppendUint64(buf, v)
			}
		case 'c', 's':
			s := checkLString(L, arg)
			arg++
			if size == 0 {
				size = uint64(len(s))
			}
			if uint64(len(s)) < size {
				argError(L, arg, "string too short")
			}
			buf = append(buf, s[:size]...)
			if opt == 's' {
				buf = append(buf, 0)
				size++
			}
		default:
			controloptions(L, opt, f, &h)
		}
		total += size
	}
	L.Push(lua.LString(buf))
	return 1
}

// putinteger mirrors putinteger.
func putinteger(L *lua.LState, buf []byte, arg, endian, size int) []byte {
	n := checkNumber(L, arg)
	var value uint64
	if n < 0 {
		value = uint64(toInteger(n))
	} else {
		value = doubleToUint64(n)
	}
	b := make([]byte, size)
	if endian == structLittle {
		for i := 0; i < size; i++ {
			b[i] = byte(value)
			value >>= 8
		}
	} else {
		for i := size - 1; i >= 0; i-- {
			b[i] = byte(value)
			value >>= 8
		}
	}
	return append(buf, b...)
}

// getinteger mirrors getinteger, including its x86 shift-count masking
// for sign extension of sizes beyond 8 bytes.
func getinteger(b string, endian int, signed bool, size int) float64 {
	var l uint64
	if endian == structBig {
		for i := 0; i < size; i++ {
			l = l<<8 | uint64(b[i])
		}
	} else {
		for i := size - 1; i >= 0; i-- {
			l = l<<8 | uint64(b[i])
		}
	}
	if !signed {
		return float64(l)
	}
	mask := ^uint64(0) << (uint(size*8-1) & 63)
	if l&mask != 0 {
		l |= mask
	}
	return float64(int64(l))
}

func structUnpack(L *lua.LState) int {
	f := checkFormat(L)
	data := checkLString(L, 2)
	ld := uint64(len(data))
	pos := uint64(optInteger(L, 3, 1))
	if pos == 0 {
		argError(L, 3, "offset must be 1 or greater")
	}
	pos--
	nargs := L.GetTop()
	h := structHeader{endian: structLittle, align: 1}
	var results []lua.LValue
	fits := func(size uint64) {
		if !(size <= ld && pos <= ld-size) {
			argError(L, 2, "data string too short")
		}
	}
	for f.more() {
		opt := f.next()
		size := optsize(L, opt, f)
		pos += gettoalign(pos, &h, opt, size)
		fits(size)
		// luaL_checkstack(L, 2, ...): room for an item and the position.
		if nargs+len(results)+2 > maxCStack {
			raise(L, "stack overflow (too many results)")
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			v := getinteger(data[pos:pos+size], h.endian, opt >= 'a', int(size))
			results = append(results, lua.LNumber(v))
		case 'x':
		case 'f':
			b := []byte(data[pos : pos+4])
			var v uint32
			if h.endian == structBig {
				v = binary.BigEndian.Uint32(b)
			} else {
				v = binary.LittleEndian.Uint32(b)
			}
			results = append(results, lua.LNumber(math.Float32frombits(v)))
		case 'd':
			b := []byte(data[pos : pos+8])
			var v uint64
			if h.endian == structBig {
				v = binary.BigEndian.Uint64(b)
			} else {
				v = binary.LittleEndian.Uint64(b)
			}
			results = append(results, lua.LNumber(math.Float64frombits(v)))
		case 'c':
			if size == 0 {
				var n float64
				ok := false
				if len(results) > 0 {
					n, ok = toNumber(results[len(results)-1])
				}
				if !ok {
					raise(L, "format 'c0' needs a previous size")
				}
				size = doubleToUint64(n)
				results = results[:len(results)-1]
				fits(size)
			}
			results = append(results, lua.LString(data[pos:pos+size]))
		case 's':
			e := strings.IndexByte(data[pos:], 0)
			if e < 0 {
				raise(L, "unfinished string in data")
			}
			size = uint64(e) + 1
			results = append(results, lua.LString(data[pos:pos+size-1]))
		default:
			controloptions(L, opt, f, &h)
		}
		pos += size
	}
	for _, v := range results {
		L.Push(v)
	}
	L.Push(lua.LNumber(int64(pos + 1)))
	return len(results) + 1
}

func isAlnum(c byte) bool {
	return cstr.IsDigit(c) || ('a' <= c|0x20 && c|0x20 <= 'z')
}

func structSize(L *lua.LState) int {
	f := checkFormat(L)
	h := structHeader{endian: structLittle, align: 1}
	var pos uint64
	for f.more() {
		opt := f.next()
		size := optsize(L, opt, f)
		pos += gettoalign(pos, &h, opt, size)
		if opt == 's' {
			argError(L, 1, "option 's' has no fixed size")
		} else if opt == 'c' && size == 0 {
			argError(L, 1, "option 'c0' has no fixed size")
		}
		if !isAlnum(opt) {
			controloptions(L, opt, f, &h)
		}
		pos += size
	}
	L.Push(lua.LNumber(int64(pos)))
	return 1
}
