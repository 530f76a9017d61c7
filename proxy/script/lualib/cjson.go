package lualib

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/spillway/spillway/proxy/cstr"
)

// cjson mirrors lua_cjson.c 2.1.0 as bundled with Redis 7.0.

const (
	cjsonName    = "cjson"
	cjsonVersion = "2.1.0"
)

// registryNullKey is the registry field holding this state's cjson.null.
const registryNullKey = "spillway.lualib.cjson.null"

// jsonConfig mirrors json_config_t: the settings of one cjson module table.
type jsonConfig struct {
	sparseConvert   int
	sparseRatio     int32
	sparseSafe      int32
	encodeMaxDepth  int32
	decodeMaxDepth  int32
	encodeInvalid   int // 0 off, 1 on, 2 null
	decodeInvalid   int // 0 off, 1 on
	keepBuffer      int
	numberPrecision int32
}

func newJSONConfig() *jsonConfig {
	return &jsonConfig{
		sparseRatio:     2,
		sparseSafe:      10,
		encodeMaxDepth:  1000,
		decodeMaxDepth:  1000,
		decodeInvalid:   1,
		keepBuffer:      1,
		numberPrecision: 14,
	}
}

// OpenCJSON registers the global table "cjson" in L as Redis's script
// engine does (luaopen_cjson with ENABLE_CJSON_GLOBAL).
func OpenCJSON(L *lua.LState) {
	L.SetGlobal(cjsonName, newCJSONTable(L))
}

// cjsonNull returns the value standing for JSON null (C's NULL light
// userdata). There is one per state, shared by every cjson.new() table, so
// that decoded nulls compare equal to cjson.null.
func cjsonNull(L *lua.LState) *lua.LUserData {
	reg := L.Get(lua.RegistryIndex).(*lua.LTable)
	if ud, ok := reg.RawGetString(registryNullKey).(*lua.LUserData); ok {
		return ud
	}
	ud := L.NewUserData()
	mt := L.NewTable()
	// tostring() of a NULL light userdata in C Lua on glibc.
	mt.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LString("userdata: (nil)"))
		return 1
	}))
	ud.Metatable = mt
	reg.RawSetString(registryNullKey, ud)
	return ud
}

func isJSONNull(L *lua.LState, v lua.LValue) bool {
	ud, ok := v.(*lua.LUserData)
	return ok && ud == cjsonNull(L)
}

// newCJSONTable mirrors lua_cjson_new: a module table with its own config.
func newCJSONTable(L *lua.LState) *lua.LTable {
	cfg := newJSONConfig()
	t := L.NewTable()
	fns := []struct {
		name string
		fn   lua.LGFunction
	}{
		{"encode", cfg.encode},
		{"decode", cfg.decode},
		{"encode_sparse_array", cfg.cfgEncodeSparseArray},
		{"encode_max_depth", cfg.cfgEncodeMaxDepth},
		{"decode_max_depth", cfg.cfgDecodeMaxDepth},
		{"encode_number_precision", cfg.cfgEncodeNumberPrecision},
		{"encode_keep_buffer", cfg.cfgEncodeKeepBuffer},
		{"encode_invalid_numbers", cfg.cfgEncodeInvalidNumbers},
		{"decode_invalid_numbers", cfg.cfgDecodeInvalidNumbers},
		{"new", func(L *lua.LState) int { L.Push(newCJSONTable(L)); return 1 }},
	}
	for _, f := range fns {
		t.RawSetString(f.name, L.NewFunction(f.fn))
	}
	t.RawSetString("null", cjsonNull(L))
	t.RawSetString("_NAME", lua.LString(cjsonName))
	t.RawSetString("_VERSION", lua.LString(cjsonVersion))
	return t
}

// ===== Configuration =====

// argInit mirrors json_arg_init: at most n arguments, padded with nil so
// that the option handlers' results land above them.
func argInit(L *lua.LState, n int) {
	if L.GetTop() > n {
		argError(L, n+1, "found too many arguments")
	}
	for L.GetTop() < n {
		L.Push(lua.LNil)
	}
}

// integerOption mirrors json_integer_option. Like the C code it reports a
// range error against argument #1 whatever the option's position.
func integerOption(L *lua.LState, idx int, setting *int32, min, max int32) {
	if L.Get(idx) != lua.LNil {
		v := int32(checkInteger(L, idx))
		if v < min || v > max {
			argError(L, 1, "expected integer between "+strconv.Itoa(int(min))+" and "+strconv.Itoa(int(max)))
		}
		*setting = v
	}
	L.Push(lua.LNumber(*setting))
}

// enumOption mirrors json_enum_option.
func enumOption(L *lua.LState, idx int, setting *int, options []string, boolTrue int) {
	if options == nil {
		options = []string{"off", "on"}
		boolTrue = 1
	}
	if v := L.Get(idx); v != lua.LNil {
		if b, ok := v.(lua.LBool); ok && boolTrue != 0 {
			*setting = 0
			if b {
				*setting = boolTrue
			}
		} else {
			name := checkLString(L, idx)
			found := -1
			for i, o := range options {
				if o == name {
					found = i
					break
				}
			}
			if found < 0 {
				argError(L, idx, "invalid option '"+cstr.CString(name)+"'")
			}
			*setting = found
		}
	}
	if boolTrue != 0 && (*setting == 0 || *setting == boolTrue) {
		L.Push(lua.LBool(*setting != 0))
	} else {
		L.Push(lua.LString(options[*setting]))
	}
}

func (c *jsonConfig) cfgEncodeSparseArray(L *lua.LState) int {
	argInit(L, 3)
	enumOption(L, 1, &c.sparseConvert, nil, 1)
	integerOption(L, 2, &c.sparseRatio, 0, math.MaxInt32)
	integerOption(L, 3, &c.sparseSafe, 0, math.MaxInt32)
	return 3
}

func (c *jsonConfig) cfgEncodeMaxDepth(L *lua.LState) int {
	argInit(L, 1)
	integerOption(L, 1, &c.encodeMaxDepth, 1, math.MaxInt32)
	return 1
}

func (c *jsonConfig) cfgDecodeMaxDepth(L *lua.LState) int {
	argInit(L, 1)
	integerOption(L, 1, &c.decodeMaxDepth, 1, math.MaxInt32)
	return 1
}

func (c *jsonConfig) cfgEncodeNumberPrecision(L *lua.LState) int {
	argInit(L, 1)
	integerOption(L, 1, &c.numberPrecision, 1, 14)
	return 1
}

func (c *jsonConfig) cfgEncodeKeepBuffer(L *lua.LState) int {
	argInit(L, 1)
	enumOption(L, 1, &c.keepBuffer, nil, 1)
	return 1
}

func (c *jsonConfig) cfgEncodeInvalidNumbers(L *lua.LState) int {
	argInit(L, 1)
	enumOption(L, 1, &c.encodeInvalid, []string{"off", "on", "null"}, 1)
	return 1
}

func (c *jsonConfig) cfgDecodeInvalidNumbers(L *lua.LState) int {
	argInit(L, 1)
	enumOption(L, 1, &c.decodeInvalid, nil, 1)
	return 1
}

// ===== Encoding =====

// char2escape mirrors the escape table of lua_cjson.c: control characters,
// '"', '\\', '/' and DEL are escaped.
var char2escape = func() [256]string {
	var t [256]string
	for i := 0; i < 32; i++ {
		t[i] = "\\u00" + string("0123456789abcdef"[i>>4]) + string("0123456789abcdef"[i&15])
	}
	t['\b'], t['\t'], t['\n'], t['\f'], t['\r'] = "\\b", "\\t", "\\n", "\\f", "\\r"
	t['"'], t['\\'], t['/'], t[0x7f] = "\\\"", "\\\\", "\\/", "\\u007f"
	return t
}()

type jsonEncoder struct {
	L   *lua.LState
	cfg *jsonConfig
	buf []byte
}

func (c *jsonConfig) encode(L *lua.LState) int {
	if L.GetTop() != 1 {
		argError(L, 1, "expected 1 argument")
	}
	e := &jsonEncoder{L: L, cfg: c}
	// One stack slot (the argument) is in use when encoding starts.
	e.appendData(L.Get(1), 0, 1)
	L.Push(lua.LString(e.buf))
	return 1
}

// exception mirrors json_encode_exception.
func (e *jsonEncoder) exception(v lua.LValue, reason string) {
	raise(e.L, "Cannot serialise "+TypeName(v)+": "+reason)
}

func (e *jsonEncoder) appendString(s string) {
	e.buf = append(e.buf, '"')
	for i := 0; i < len(s); i++ {
		if esc := char2escape[s[i]]; esc != "" {
			e.buf = append(e.buf, esc...)
		} else {
			e.buf = append(e.buf, s[i])
		}
	}
	e.buf = append(e.buf, '"')
}

func (e *jsonEncoder) appendNumber(n float64) {
	switch e.cfg.encodeInvalid {
	case 0:
		if math.IsInf(n, 0) || n != n {
			e.exception(lua.LNumber(n), "must not be NaN or Inf")
		}
	case 1:
		if n != n {
			e.buf = append(e.buf, "nan"...)
			return
		}
	default:
		if math.IsInf(n, 0) || n != n {
			e.buf = append(e.buf, "null"...)
			return
		}
	}
	e.buf = append(e.buf, cstr.FormatG(n, int(e.cfg.numberPrecision))...)
}

// appendData mirrors json_append_data. used counts the Lua stack slots the
// C encoder would occupy, to reproduce its lua_checkstack failure.
func (e *jsonEncoder) appendData(v lua.LValue, depth int32, used int) {
	switch x := v.(type) {
	case lua.LString:
		e.appendString(string(x))
	case lua.LNumber:
		e.appendNumber(float64(x))
	case lua.LBool:
		if x {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
	case *lua.LTable:
		depth++
		if depth > e.cfg.encodeMaxDepth || used+3 > maxCStack {
			raise(e.L, "Cannot serialise, excessive nesting ("+strconv.Itoa(int(depth))+")")
		}
		keys := tableKeys(x)
		if n := e.arrayLength(x, keys); n > 0 {
			e.appendArray(x, n, depth, used)
		} else {
			e.appendObject(x, keys, depth, used)
		}
	default:
		if v == lua.LNil || isJSONNull(e.L, v) {
			e.buf = append(e.buf, "null"...)
			return
		}
		e.exception(v, "type not supported")
	}
}

// arrayLength mirrors lua_array_length: the array size, or -1 for an object.
func (e *jsonEncoder) arrayLength(t *lua.LTable, keys []lua.LValue) int32 {
	var max, items int32
	for _, k := range keys {
		n, ok := k.(lua.LNumber)
		f := float64(n)
		if !ok || f == 0 || math.Floor(f) != f || f < 1 {
			return -1
		}
		if f > float64(max) {
			max = toCInt(f)
		}
		items++
	}
	if e.cfg.sparseRatio > 0 && max > items*e.cfg.sparseRatio && max > e.cfg.sparseSafe {
		if e.cfg.sparseConvert == 0 {
			e.exception(t, "excessively sparse array")
		}
		return -1
	}
	return max
}

func (e *jsonEncoder) appendArray(t *lua.LTable, n int32, depth int32, used int) {
	e.buf = append(e.buf, '[')
	for i := int32(1); i <= n; i++ {
		if i > 1 {
			e.buf = append(e.buf, ',')
		}
		e.appendData(t.RawGetInt(int(i)), depth, used+1)
	}
	e.buf = append(e.buf, ']')
}

func (e *jsonEncoder) appendObject(t *lua.LTable, keys []lua.LValue, depth int32, used int) {
	e.buf = append(e.buf, '{')
	for i, k := range keys {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		switch kv := k.(type) {
		case lua.LNumber:
			e.buf = append(e.buf, '"')
			e.appendNumber(float64(kv))
			e.buf = append(e.buf, '"', ':')
		case lua.LString:
			e.appendString(string(kv))
			e.buf = append(e.buf, ':')
		default:
			e.exception(k, "table key must be a number or string")
		}
		e.appendData(t.RawGet(k), depth, used+2)
	}
	e.buf = append(e.buf, '}')
}

// ===== Decoding =====

type jsonTokenType int

const (
	tObjBegin jsonTokenType = iota
	tObjEnd
	tArrBegin
	tArrEnd
	tString
	tNumber
	tBoolean
	tNull
	tColon
	tComma
	tEnd
	tWhitespace
	tError
	tUnknown
)

var jsonTokenNames = [...]string{
	"T_OBJ_BEGIN", "T_OBJ_END", "T_ARR_BEGIN", "T_ARR_END", "T_STRING",
	"T_NUMBER", "T_BOOLEAN", "T_NULL", "T_COLON", "T_COMMA", "T_END",
	"T_WHITESPACE", "T_ERROR", "T_UNKNOWN",
}

// ch2token mirrors the character classification of json_create_config.
var ch2token = func() [256]jsonTokenType {
	var t [256]jsonTokenType
	for i := range t {
		t[i] = tError
	}
	t['{'], t['}'], t['['], t[']'] = tObjBegin, tObjEnd, tArrBegin, tArrEnd
	t[','], t[':'], t[0] = tComma, tColon, tEnd
	t[' '], t['\t'], t['\n'], t['\r'] = tWhitespace, tWhitespace, tWhitespace, tWhitespace
	for _, c := range "fiInNt\"+-0123456789" {
		t[c] = tUnknown
	}
	return t
}()

var escape2char = func() [256]byte {
	var t [256]byte
	t['"'], t['\\'], t['/'], t['b'] = '"', '\\', '/', '\b'
	t['t'], t['n'], t['f'], t['r'], t['u'] = '\t', '\n', '\f', '\r', 'u'
	return t
}()

type jsonToken struct {
	typ    jsonTokenType
	index  int
	str    string // T_STRING value, or the error text for T_ERROR
	number float64
	b      bool
}

// jsonParser mirrors json_parse_t. data is read as a NUL-terminated C
// string: at() returns 0 past the end.
type jsonParser struct {
	L     *lua.LState
	cfg   *jsonConfig
	data  string
	ptr   int
	depth int32
	used  int // Lua stack slots the C decoder would occupy
	tmp   []byte
}

func (p *jsonParser) at(i int) byte {
	if i < len(p.data) {
		return p.data[i]
	}
	return 0
}

func (c *jsonConfig) decode(L *lua.LState) int {
	if L.GetTop() != 1 {
		argError(L, 1, "expected 1 argument")
	}
	s := checkLString(L, 1)
	p := &jsonParser{L: L, cfg: c, data: s, used: 1}
	if len(s) >= 2 && (s[0] == 0 || s[1] == 0) {
		raise(L, "JSON parser does not support UTF-16 or UTF-32")
	}
	var tok jsonToken
	p.nextToken(&tok)
	v := p.processValue(&tok)
	p.nextToken(&tok)
	if tok.typ != tEnd {
		p.throwParseError("the end", &tok)
	}
	L.Push(v)
	return 1
}

func (p *jsonParser) setTokenError(tok *jsonToken, msg string) {
	tok.typ = tError
	tok.index = p.ptr
	tok.str = msg
}

func hexDigit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c|0x20 && c|0x20 <= 'f':
		return int(c|0x20-'a') + 10
	}
	return -1
}

func (p *jsonParser) decodeHex4(i int) int {
	v := 0
	for j := 0; j < 4; j++ {
		d := hexDigit(p.at(i + j))
		if d < 0 {
			return -1
		}
		v = v<<4 | d
	}
	return v
}

// appendUnicodeEscape mirrors json_append_unicode_escape; p.ptr is at '\'.
func (p *jsonParser) appendUnicodeEscape() bool {
	escapeLen := 6
	cp := p.decodeHex4(p.ptr + 2)
	if cp < 0 {
		return false
	}
	if cp&0xF800 == 0xD800 {
		if cp&0x400 != 0 {
			return false
		}
		if p.at(p.ptr+escapeLen) != '\\' || p.at(p.ptr+escapeLen+1) != 'u' {
			return false
		}
		low := p.decodeHex4(p.ptr + 2 + escapeLen)
		if low < 0 || low&0xFC00 != 0xDC00 {
			return false
		}
		cp = ((cp&0x3FF)<<10 | low&0x3FF) + 0x10000
		escapeLen = 12
	}
	switch {
	case cp <= 0x7F:
		p.tmp = append(p.tmp, byte(cp))
	case cp <= 0x7FF:
		p.tmp = append(p.tmp, byte(cp>>6|0xC0), byte(cp&0x3F|0x80))
	case cp <= 0xFFFF:
		p.tmp = append(p.tmp, byte(cp>>12|0xE0), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	default:
		p.tmp = append(p.tmp, byte(cp>>18|0xF0), byte(cp>>12&0x3F|0x80), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	}
	p.ptr += escapeLen
	return true
}

func (p *jsonParser) nextStringToken(tok *jsonToken) {
	p.ptr++ // skip '"'
	p.tmp = p.tmp[:0]
	for {
		ch := p.at(p.ptr)
		if ch == '"' {
			break
		}
		if ch == 0 {
			p.setTokenError(tok, "unexpected end of string")
			return
		}
		if ch == '\\' {
			ch = escape2char[p.at(p.ptr+1)]
			if ch == 'u' {
				if p.appendUnicodeEscape() {
					continue
				}
				p.setTokenError(tok, "invalid unicode escape code")
				return
			}
			if ch == 0 {
				p.setTokenError(tok, "invalid escape code")
				return
			}
			p.ptr++
		}
		p.tmp = append(p.tmp, ch)
		p.ptr++
	}
	p.ptr++ // eat final quote
	tok.typ = tString
	tok.str = string(p.tmp)
}

// isInvalidNumber mirrors json_is_invalid_number: forms strtod accepts but
// strict JSON does not (leading '+', hex, leading zeros, inf, nan).
func (p *jsonParser) isInvalidNumber() bool {
	i := p.ptr
	if p.at(i) == '+' {
		return true
	}
	if p.at(i) == '-' {
		i++
	}
	if c := p.at(i); c == '0' {
		c2 := p.at(i + 1)
		return c2|0x20 == 'x' || ('0' <= c2 && c2 <= '9')
	} else if c <= '9' {
		return false
	}
	rest := p.data[min(i, len(p.data)):]
	return cstr.HasPrefixFold(rest, "inf") || cstr.HasPrefixFold(rest, "nan")
}

func (p *jsonParser) nextNumberToken(tok *jsonToken) {
	tok.typ = tNumber
	// strtod sees a NUL-terminated string.
	v, n := cstr.Strtod(cstr.CString(p.data[p.ptr:]))
	if n == 0 {
		p.setTokenError(tok, "invalid number")
		return
	}
	tok.number = v
	p.ptr += n
}

// nextToken mirrors json_next_token.
func (p *jsonParser) nextToken(tok *jsonToken) {
	var ch byte
	for {
		ch = p.at(p.ptr)
		tok.typ = ch2token[ch]
		if tok.typ != tWhitespace {
			break
		}
		p.ptr++
	}
	tok.index = p.ptr
	switch tok.typ {
	case tError:
		p.setTokenError(tok, "invalid token")
		return
	case tEnd:
		return
	case tUnknown:
	default:
		p.ptr++
		return
	}
	rest := p.data[p.ptr:]
	switch {
	case ch == '"':
		p.nextStringToken(tok)
	case ch == '-' || ('0' <= ch && ch <= '9'):
		if p.cfg.decodeInvalid == 0 && p.isInvalidNumber() {
			p.setTokenError(tok, "invalid number")
			return
		}
		p.nextNumberToken(tok)
	case strings.HasPrefix(rest, "true"):
		tok.typ, tok.b = tBoolean, true
		p.ptr += 4
	case strings.HasPrefix(rest, "false"):
		tok.typ, tok.b = tBoolean, false
		p.ptr += 5
	case strings.HasPrefix(rest, "null"):
		tok.typ = tNull
		p.ptr += 4
	case p.cfg.decodeInvalid != 0 && p.isInvalidNumber():
		p.nextNumberToken(tok)
	default:
		p.setTokenError(tok, "invalid token")
	}
}

// throwParseError mirrors json_throw_parse_error.
func (p *jsonParser) throwParseError(expected string, tok *jsonToken) {
	found := jsonTokenNames[tok.typ]
	if tok.typ == tError {
		found = tok.str
	}
	raise(p.L, "Expected "+expected+" but found "+found+" at character "+strconv.Itoa(tok.index+1))
}

// descend mirrors json_decode_descend: the depth limit and lua_checkstack.
func (p *jsonParser) descend(slots int) {
	p.depth++
	if p.depth <= p.cfg.decodeMaxDepth && p.used+slots <= maxCStack {
		return
	}
	raise(p.L, "Found too many nested data structures ("+strconv.Itoa(int(p.depth))+") at character "+strconv.Itoa(p.ptr))
}

func (p *jsonParser) parseObject() *lua.LTable {
	p.descend(3)
	t := p.L.NewTable()
	p.used++ // the table
	var tok jsonToken
	p.nextToken(&tok)
	if tok.typ == tObjEnd {
		p.depth--
		p.used--
		return t
	}
	for {
		if tok.typ != tString {
			p.throwParseError("object key string", &tok)
		}
		key := tok.str
		p.used++ // the key
		p.nextToken(&tok)
		if tok.typ != tColon {
			p.throwParseError("colon", &tok)
		}
		p.nextToken(&tok)
		v := p.processValue(&tok)
		t.RawSetString(key, v)
		p.used--
		p.nextToken(&tok)
		if tok.typ == tObjEnd {
			p.depth--
			p.used--
			return t
		}
		if tok.typ != tComma {
			p.throwParseError("comma or object end", &tok)
		}
		p.nextToken(&tok)
	}
}

func (p *jsonParser) parseArray() *lua.LTable {
	p.descend(2)
	t := p.L.NewTable()
	p.used++
	var tok jsonToken
	p.nextToken(&tok)
	if tok.typ == tArrEnd {
		p.depth--
		p.used--
		return t
	}
	for i := 1; ; i++ {
		t.RawSetInt(i, p.processValue(&tok))
		p.nextToken(&tok)
		if tok.typ == tArrEnd {
			p.depth--
			p.used--
			return t
		}
		if tok.typ != tComma {
			p.throwParseError("comma or array end", &tok)
		}
		p.nextToken(&tok)
	}
}

func (p *jsonParser) processValue(tok *jsonToken) lua.LValue {
	switch tok.typ {
	case tString:
		return lua.LString(tok.str)
	case tNumber:
		return lua.LNumber(tok.number)
	case tBoolean:
		return lua.LBool(tok.b)
	case tObjBegin:
		return p.parseObject()
	case tArrBegin:
		return p.parseArray()
	case tNull:
		return cjsonNull(p.L)
	}
	p.throwParseError("value", tok)
	return lua.LNil
}
