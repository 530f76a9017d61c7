package script

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/script/lualib"
)

// Standard library functions whose results or messages differ between
// gopher-lua and C Lua 5.1, reimplemented after lbaselib.c, ltablib.c and
// lstrlib.c.

// installStdlib replaces tonumber, assert, table.concat, table.insert,
// table.remove and string.format, and adds string.dump.
func (v *luaVM) installStdlib(g *lua.LTable) {
	L := v.L
	g.RawSetString("tonumber", L.NewFunction(luaTonumber))
	g.RawSetString("assert", L.NewFunction(luaAssert))
	g.RawSetString("select", L.NewFunction(luaSelect))
	if m, ok := g.RawGetString("math").(*lua.LTable); ok {
		m.RawSetString("max", L.NewFunction(func(L *lua.LState) int { return mathMinMax(L, 1) }))
		m.RawSetString("min", L.NewFunction(func(L *lua.LState) int { return mathMinMax(L, -1) }))
	}
	if t, ok := g.RawGetString("table").(*lua.LTable); ok {
		t.RawSetString("concat", L.NewFunction(v.tableConcat))
		t.RawSetString("insert", L.NewFunction(v.tableInsert))
		t.RawSetString("remove", L.NewFunction(v.tableRemove))
	}
	if s, ok := g.RawGetString("string").(*lua.LTable); ok {
		s.RawSetString("format", L.NewFunction(strFormat))
		s.RawSetString("dump", L.NewFunction(strDump))
	}
}

// checkAny is luaL_checkany.
func checkAny(L *lua.LState, n int) lua.LValue {
	if n > L.GetTop() {
		argError(L, n, "value expected")
	}
	return L.Get(n)
}

// checkLString is luaL_checklstring: strings, and numbers converted.
func checkLString(L *lua.LState, n int) string {
	if n <= L.GetTop() {
		if s, ok := toStringValue(L.Get(n)); ok {
			return s
		}
	}
	typeError(L, n, "string")
	return ""
}

// optLString is luaL_optlstring.
func optLString(L *lua.LState, n int, def string) string {
	if n > L.GetTop() || L.Get(n) == lua.LNil {
		return def
	}
	return checkLString(L, n)
}

// optInt is luaL_optint.
func optInt(L *lua.LState, n int, def int) int {
	if n > L.GetTop() || L.Get(n) == lua.LNil {
		return def
	}
	return checkInt(L, n)
}

func luaTonumber(L *lua.LState) int {
	base := optInt(L, 2, 10)
	if base == 10 {
		v := checkAny(L, 1)
		if f, ok := toNumber(v); ok {
			L.Push(lua.LNumber(f))
			return 1
		}
	} else {
		s := cstr.CString(checkLString(L, 1))
		if base < 2 || base > 36 {
			argError(L, 2, "base out of range")
		}
		if n, used, _ := cstr.Strtoull(s, base); used > 0 {
			for used < len(s) && cstr.IsSpace(s[used]) {
				used++
			}
			if used == len(s) {
				L.Push(lua.LNumber(float64(n)))
				return 1
			}
		}
	}
	L.Push(lua.LNil)
	return 1
}

func luaSelect(L *lua.LState) int {
	n := L.GetTop()
	if s, ok := L.Get(1).(lua.LString); ok && n >= 1 && strings.HasPrefix(string(s), "#") {
		L.Push(lua.LNumber(n - 1))
		return 1
	}
	i := checkInt(L, 1)
	if i < 0 {
		i = n + i
	} else if i > n {
		i = n
	}
	if i < 1 {
		argError(L, 1, "index out of range")
	}
	return n - i
}

// mathMinMax is math.max (sign 1) and math.min (sign -1).
func mathMinMax(L *lua.LState, sign float64) int {
	best := checkNumber(L, 1)
	for i := 2; i <= L.GetTop(); i++ {
		if d := checkNumber(L, i); (d-best)*sign > 0 {
			best = d
		}
	}
	L.Push(lua.LNumber(best))
	return 1
}

func luaAssert(L *lua.LState) int {
	checkAny(L, 1)
	if !lua.LVAsBool(L.Get(1)) {
		raiseLua(L, cstr.CString(optLString(L, 2, "assertion failed!")))
	}
	return L.GetTop()
}

// length is lua_objlen of a table (gopher-lua's border).
func (v *luaVM) length(t *lua.LTable) int { return v.unwrap(t).Len() }

func (v *luaVM) tableConcat(L *lua.LState) int {
	sep := optLString(L, 2, "")
	t := checkTable(L, 1)
	c := v.unwrap(t)
	i := optInt(L, 3, 1)
	last := optInt(L, 4, v.length(t))
	var b strings.Builder
	addField := func(i int) {
		s, ok := toStringValue(c.RawGetInt(i))
		if !ok {
			raiseLua(L, "invalid value ("+lualib.TypeName(c.RawGetInt(i))+") at index "+strconv.Itoa(i)+" in table for 'concat'")
		}
		b.WriteString(s)
	}
	for ; i < last; i++ {
		addField(i)
		b.WriteString(sep)
	}
	if i == last {
		addField(i)
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// rawSetInt is lua_rawseti, which raises on read-only tables.
func (v *luaVM) rawSetInt(L *lua.LState, t *lua.LTable, i int, val lua.LValue) {
	if v.isReadonly(t) {
		raiseReadonly(L)
	}
	t.RawSetInt(i, val)
}

func (v *luaVM) tableInsert(L *lua.LState) int {
	t := checkTable(L, 1)
	e := v.length(t) + 1
	var pos int
	switch L.GetTop() {
	case 2:
		pos = e
	case 3:
		pos = checkInt(L, 2)
		if pos > e {
			e = pos
		}
		c := v.unwrap(t)
		for i := e; i > pos; i-- {
			v.rawSetInt(L, t, i, c.RawGetInt(i-1))
		}
	default:
		raiseLua(L, "wrong number of arguments to 'insert'")
	}
	v.rawSetInt(L, t, pos, L.Get(L.GetTop()))
	return 0
}

func (v *luaVM) tableRemove(L *lua.LState) int {
	t := checkTable(L, 1)
	e := v.length(t)
	pos := optInt(L, 2, e)
	if !(1 <= pos && pos <= e) {
		return 0
	}
	c := v.unwrap(t)
	res := c.RawGetInt(pos)
	for ; pos < e; pos++ {
		v.rawSetInt(L, t, pos, c.RawGetInt(pos+1))
	}
	v.rawSetInt(L, t, e, lua.LNil)
	L.Push(res)
	return 1
}

// strFormat is Lua 5.1's string.format over glibc's printf.
func strFormat(L *lua.LState) int {
	top := L.GetTop()
	arg := 1
	fmtStr := checkLString(L, arg)
	var b []byte
	for i := 0; i < len(fmtStr); {
		c := fmtStr[i]
		if c != '%' {
			b = append(b, c)
			i++
			continue
		}
		i++
		if i < len(fmtStr) && fmtStr[i] == '%' {
			b = append(b, '%')
			i++
			continue
		}
		arg++
		if arg > top {
			argError(L, arg, "no value")
		}
		// scanformat
		p := i
		for p < len(fmtStr) && strings.IndexByte("-+ #0", fmtStr[p]) >= 0 {
			p++
		}
		if p-i >= 6 {
			raiseLua(L, "invalid format (repeated flags)")
		}
		flags := fmtStr[i:p]
		width, prec := -1, -1
		if p < len(fmtStr) && cstr.IsDigit(fmtStr[p]) {
			width = int(fmtStr[p] - '0')
			p++
			if p < len(fmtStr) && cstr.IsDigit(fmtStr[p]) {
				width = width*10 + int(fmtStr[p]-'0')
				p++
			}
		}
		if p < len(fmtStr) && fmtStr[p] == '.' {
			p++
			prec = 0
			if p < len(fmtStr) && cstr.IsDigit(fmtStr[p]) {
				prec = int(fmtStr[p] - '0')
				p++
				if p < len(fmtStr) && cstr.IsDigit(fmtStr[p]) {
					prec = prec*10 + int(fmtStr[p]-'0')
					p++
				}
			}
		}
		if p < len(fmtStr) && cstr.IsDigit(fmtStr[p]) {
			raiseLua(L, "invalid format (width or precision too long)")
		}
		var conv byte
		if p < len(fmtStr) {
			conv = fmtStr[p]
		}
		i = p + 1
		spec := cSpec{flags: flags, width: width, prec: prec, conv: conv}
		switch conv {
		case 'c':
			b = append(b, spec.pad(string([]byte{byte(int32(toLongLong(checkNumber(L, arg))))}), false)...)
		case 'd', 'i':
			b = append(b, spec.integer(toLongLong(checkNumber(L, arg)), false)...)
		case 'o', 'u', 'x', 'X':
			b = append(b, spec.integer(int64(toULong(checkNumber(L, arg))), true)...)
		case 'e', 'E', 'f', 'g', 'G':
			b = append(b, spec.float(checkNumber(L, arg))...)
		case 'q':
			b = appendQuoted(b, checkLString(L, arg))
		case 's':
			s := checkLString(L, arg)
			if prec < 0 && len(s) >= 100 {
				b = append(b, s...)
				continue
			}
			s = cstr.CString(s)
			if prec >= 0 && len(s) > prec {
				s = s[:prec]
			}
			b = append(b, spec.pad(s, false)...)
		default:
			raiseLua(L, "invalid option '%"+cstr.CString(string([]byte{conv}))+"' to 'format'")
		}
	}
	L.Push(lua.LString(b))
	return 1
}

// toULong is C's (unsigned long) cast of a double on x86-64.
func toULong(f float64) uint64 {
	if f >= 9223372036854775808.0 && f < 18446744073709551616.0 {
		return uint64(f-9223372036854775808.0) + 1<<63
	}
	return uint64(toLongLong(f))
}

// appendQuoted is lstrlib.c's addquoted (%q).
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '\n':
			b = append(b, '\\', c)
		case '\r':
			b = append(b, '\\', 'r')
		case 0:
			b = append(b, '\\', '0', '0', '0')
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// cSpec is one printf conversion.
type cSpec struct {
	flags       string
	width, prec int // -1: absent
	conv        byte
}

func (s cSpec) has(f byte) bool { return strings.IndexByte(s.flags, f) >= 0 }

// pad applies the field width (zero padding only for numbers).
func (s cSpec) pad(body string, numeric bool) string {
	if s.width <= len(body) {
		return body
	}
	n := s.width - len(body)
	switch {
	case s.has('-'):
		return body + strings.Repeat(" ", n)
	case numeric && s.has('0'):
		// zeros go after the sign or 0x prefix
		k := 0
		if k < len(body) && (body[k] == '-' || body[k] == '+' || body[k] == ' ') {
			k++
		}
		if k+1 < len(body) && body[k] == '0' && (body[k+1] == 'x' || body[k+1] == 'X') {
			k += 2
		}
		return body[:k] + strings.Repeat("0", n) + body[k:]
	}
	return strings.Repeat(" ", n) + body
}

// integer formats %d %i (signed) and %o %u %x %X (unsigned).
func (s cSpec) integer(n int64, unsigned bool) string {
	var digits string
	neg := false
	switch s.conv {
	case 'o':
		digits = strconv.FormatUint(uint64(n), 8)
	case 'x', 'X':
		digits = strconv.FormatUint(uint64(n), 16)
		if s.conv == 'X' {
			digits = strings.ToUpper(digits)
		}
	case 'u':
		digits = strconv.FormatUint(uint64(n), 10)
	default:
		if n < 0 {
			neg = true
			digits = strconv.FormatUint(uint64(-n), 10)
		} else {
			digits = strconv.FormatInt(n, 10)
		}
	}
	if s.prec >= 0 {
		if s.prec == 0 && n == 0 {
			digits = ""
		}
		for len(digits) < s.prec {
			digits = "0" + digits
		}
	}
	prefix := ""
	switch {
	case !unsigned && neg:
		prefix = "-"
	case !unsigned && s.has('+'):
		prefix = "+"
	case !unsigned && s.has(' '):
		prefix = " "
	}
	if s.has('#') {
		switch s.conv {
		case 'o':
			if !strings.HasPrefix(digits, "0") {
				digits = "0" + digits
			}
		case 'x':
			if n != 0 {
				prefix = "0x"
			}
		case 'X':
			if n != 0 {
				prefix = "0X"
			}
		}
	}
	body := prefix + digits
	if s.prec >= 0 {
		// the 0 flag is ignored when a precision is given
		return cSpec{flags: strings.ReplaceAll(s.flags, "0", ""), width: s.width}.pad(body, true)
	}
	return s.pad(body, true)
}

// float formats %e %E %f %g %G.
func (s cSpec) float(f float64) string {
	upper := s.conv == 'E' || s.conv == 'G'
	sign := ""
	switch {
	case math.Signbit(f):
		sign = "-"
	case s.has('+'):
		sign = "+"
	case s.has(' '):
		sign = " "
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		body := "inf"
		if math.IsNaN(f) {
			body = "nan"
		}
		if upper {
			body = strings.ToUpper(body)
		}
		return cSpec{flags: strings.ReplaceAll(s.flags, "0", ""), width: s.width}.pad(sign+body, false)
	}
	prec := s.prec
	if prec < 0 {
		prec = 6
	}
	verb := s.conv
	if verb == 'G' {
		verb = 'g'
	}
	if verb == 'E' {
		verb = 'e'
	}
	var body string
	if s.has('#') {
		body = fmtSprintf("%#."+strconv.Itoa(prec)+string(verb), math.Abs(f))
	} else {
		body = strconv.FormatFloat(math.Abs(f), verb, precFor(verb, prec), 64)
	}
	if upper {
		body = strings.ToUpper(body)
	}
	return s.pad(sign+body, true)
}

// precFor adapts C's precision to strconv's: %g with precision 0 means 1.
func precFor(verb byte, prec int) int {
	if verb == 'g' && prec == 0 {
		return 1
	}
	return prec
}

var fmtSprintf = fmt.Sprintf
