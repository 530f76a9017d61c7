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
		return str2number(string(x))
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
	return formatG(n, 14)
}

// formatG formats f as glibc's printf("%.<prec>g") does.
func formatG(f float64, prec int) string {
	if prec < 1 {
		prec = 1
	}
	neg := math.Signbit(f)
	switch {
	case f != f:
		if neg {
			return "-nan"
		}
		return "nan"
	case math.IsInf(f, 0):
		if neg {
			return "-inf"
		}
		return "inf"
	}
	abs := math.Abs(f)
	e := strconv.FormatFloat(abs, 'e', prec-1, 64)
	ePos := strings.LastIndexByte(e, 'e')
	exp, _ := strconv.Atoi(e[ePos+1:])
	var out string
	if exp < -4 || exp >= prec {
		mant := trimFraction(e[:ePos])
		expDigits := e[ePos+2:]
		if len(expDigits) < 2 {
			expDigits = "0" + expDigits
		}
		out = mant + "e" + e[ePos+1:ePos+2] + expDigits
	} else {
		out = trimFraction(strconv.FormatFloat(abs, 'f', prec-1-exp, 64))
	}
	if neg {
		return "-" + out
	}
	return out
}

// trimFraction removes trailing zeros of a fraction, and the point if bare.
func trimFraction(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// str2number mirrors luaO_str2d of Lua 5.1 built against glibc: the whole
// string (up to a NUL byte, as C sees it) must be a number that strtod
// accepts, optionally surrounded by whitespace.
func str2number(s string) (float64, bool) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	v, n := strtod(s)
	if n == 0 {
		return 0, false
	}
	rest := s[n:]
	// A trailing 'x' sends Lua to strtoul(s, 16), which with glibc never
	// consumes more than strtod did, so the conversion fails.
	for _, c := range []byte(rest) {
		if !isSpace(c) {
			return 0, false
		}
	}
	return v, true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHexDigit(c byte) bool {
	return isDigit(c) || ('a' <= c|0x20 && c|0x20 <= 'f')
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// strtod mirrors glibc's strtod in the "C" locale: it parses the longest
// prefix of s that is a number (leading whitespace, sign, decimal or
// hexadecimal digits with optional exponent, "inf", "infinity", "nan",
// "nan(chars)") and returns its value and the number of bytes consumed, or
// (0, 0) when there is no number.
func strtod(s string) (float64, int) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	v, n := strtodUnsigned(s[i:])
	if n == 0 {
		return 0, 0
	}
	if neg {
		v = -v
	}
	return v, i + n
}

func strtodUnsigned(s string) (float64, int) {
	switch {
	case hasPrefixFold(s, "infinity"):
		return math.Inf(1), 8
	case hasPrefixFold(s, "inf"):
		return math.Inf(1), 3
	case hasPrefixFold(s, "nan"):
		return parseNaN(s)
	case len(s) >= 2 && s[0] == '0' && s[1]|0x20 == 'x':
		if v, n := parseHexFloat(s[2:]); n > 0 {
			return v, n + 2
		}
		return 0, 1 // just the "0"
	}
	return parseDecimal(s)
}

// parseNaN handles "nan" and "nan(n-char-sequence)"; glibc stores a numeric
// sequence in the mantissa of the quiet NaN it returns.
func parseNaN(s string) (float64, int) {
	bits := uint64(0x7ff8000000000000)
	n := 3
	if len(s) > 3 && s[3] == '(' {
		j := 4
		for j < len(s) && (isDigit(s[j]) || ('a' <= s[j]|0x20 && s[j]|0x20 <= 'z') || s[j] == '_') {
			j++
		}
		if j < len(s) && s[j] == ')' {
			if m, ok := parseNaNPayload(s[4:j]); ok {
				bits |= m & 0x000fffffffffffff
			}
			n = j + 1
		}
	}
	return math.Float64frombits(bits), n
}

// parseNaNPayload mirrors strtoull(seq, &end, 0) consuming all of seq.
func parseNaNPayload(seq string) (uint64, bool) {
	base := 10
	switch {
	case len(seq) > 2 && seq[0] == '0' && seq[1]|0x20 == 'x':
		base, seq = 16, seq[2:]
	case len(seq) > 1 && seq[0] == '0':
		base, seq = 8, seq[1:]
	}
	if seq == "" {
		return 0, false
	}
	m, err := strconv.ParseUint(seq, base, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return math.MaxUint64, true
		}
		return 0, false
	}
	return m, true
}

// parseHexFloat parses the part of a hexadecimal float after "0x". It needs
// at least one hex digit; the binary exponent is optional.
func parseHexFloat(s string) (float64, int) {
	i, digits := 0, 0
	for i < len(s) && isHexDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isHexDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0
	}
	mant := s[:i]
	exp := "0"
	if j := expEnd(s, i, 'p'); j > i {
		exp = s[i+1 : j]
		i = j
	}
	v, err := strconv.ParseFloat("0x"+strings.TrimSuffix(mant, ".")+"p"+clampExp(exp), 64)
	if err != nil && !isRangeErr(err) {
		return 0, 0
	}
	return v, i
}

// parseDecimal parses digits with an optional fraction and exponent.
func parseDecimal(s string) (float64, int) {
	i, digits := 0, 0
	for i < len(s) && isDigit(s[i]) {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i++
			digits++
		}
	}
	if digits == 0 {
		return 0, 0
	}
	mant := s[:i]
	exp := ""
	if j := expEnd(s, i, 'e'); j > i {
		exp = "e" + clampExp(s[i+1:j])
		i = j
	}
	if strings.HasSuffix(mant, ".") {
		mant = mant[:len(mant)-1]
	}
	if strings.HasPrefix(mant, ".") {
		mant = "0" + mant
	}
	v, err := strconv.ParseFloat(mant+exp, 64)
	if err != nil && !isRangeErr(err) {
		return 0, 0
	}
	return v, i
}

// expEnd returns the end of an exponent ("e-12", "p+3") starting at s[i], or
// i when there is none (the marker must be followed by at least one digit).
func expEnd(s string, i int, marker byte) int {
	if i >= len(s) || s[i]|0x20 != marker {
		return i
	}
	j := i + 1
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		j++
	}
	if j >= len(s) || !isDigit(s[j]) {
		return i
	}
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	return j
}

// clampExp keeps an exponent's sign but limits its magnitude, so strconv sees
// a value that overflows or underflows the same way without huge numbers.
func clampExp(e string) string {
	sign := ""
	if e != "" && (e[0] == '+' || e[0] == '-') {
		sign, e = e[:1], e[1:]
	}
	e = strings.TrimLeft(e, "0")
	if len(e) > 6 {
		e = "999999"
	}
	if e == "" {
		e = "0"
	}
	return sign + e
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
