package script

import (
	"errors"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
)

// This file converts between RESP and Lua values exactly as Redis 7.0's
// script_lua.c does (redisProtocolToLuaType and luaReplyToRedisReply).

// errBadReply reports a reply from the Host that is not one whole RESP value.
var errBadReply = errors.New("script: malformed reply from host")

// maxReplyDepth bounds the nesting of a Host reply converted to Lua.
const maxReplyDepth = 512

// replyToLua converts one RESP2/RESP3 reply into a Lua value:
// integers become numbers, bulk strings strings, null bulk strings and null
// arrays false, RESP3 nulls nil, status replies {ok=...}, errors
// {err=..., ignore_error_stats_update=true} (see pushErrorTable), arrays
// tables, maps {map={...}}, sets {set={...}}, doubles {double=n}, big
// numbers {big_number=s}, verbatim strings {verbatim_string={format=...,
// string=...}} and booleans booleans; attributes are skipped. It returns
// the value and the bytes consumed.
//
// rec, if not nil, is told the keys of every map and set table in the order
// they were inserted, which decides C Lua's iteration order (see
// luaNextOrder).
func replyToLua(L *lua.LState, b []byte, rec func(*lua.LTable, []lua.LValue)) (lua.LValue, int, error) {
	return parseReply(L, b, 0, rec)
}

func parseLine(b []byte) ([]byte, int, error) {
	i := strings.Index(string(b), "\r\n")
	if i < 1 {
		return nil, 0, errBadReply
	}
	return b[1:i], i + 2, nil
}

func parseCount(l []byte) (int, error) {
	n, err := strconv.ParseInt(string(l), 10, 64)
	if err != nil || n < -1 || n > math.MaxInt32 {
		return 0, errBadReply
	}
	return int(n), nil
}

func parseReply(L *lua.LState, b []byte, depth int, rec func(*lua.LTable, []lua.LValue)) (lua.LValue, int, error) {
	if depth > maxReplyDepth || len(b) == 0 {
		return nil, 0, errBadReply
	}
	line, n, err := parseLine(b)
	if err != nil {
		return nil, 0, err
	}
	switch b[0] {
	case ':':
		v, ok := cstr.ParseInt(line)
		if !ok {
			return nil, 0, errBadReply
		}
		return lua.LNumber(float64(v)), n, nil
	case '+':
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString(line))
		return t, n, nil
	case '-':
		return errorTable(L, "-"+string(line), true), n, nil
	case '$', '=':
		size, err := parseCount(line)
		if err != nil {
			return nil, 0, err
		}
		if size < 0 {
			if b[0] == '$' {
				return lua.LFalse, n, nil
			}
			return nil, 0, errBadReply
		}
		if len(b) < n+size+2 || b[n+size] != '\r' || b[n+size+1] != '\n' {
			return nil, 0, errBadReply
		}
		s := b[n : n+size]
		if b[0] == '$' {
			return lua.LString(s), n + size + 2, nil
		}
		if size < 4 {
			return nil, 0, errBadReply
		}
		inner := L.CreateTable(0, 2)
		inner.RawSetString("string", lua.LString(s[4:]))
		inner.RawSetString("format", lua.LString(s[:3]))
		t := L.CreateTable(0, 1)
		t.RawSetString("verbatim_string", inner)
		return t, n + size + 2, nil
	case '*', '~', '%', '>', '|':
		count, err := parseCount(line)
		if err != nil {
			return nil, 0, err
		}
		if count < 0 {
			if b[0] == '*' {
				return lua.LFalse, n, nil
			}
			return nil, 0, errBadReply
		}
		switch b[0] {
		case '|': // attribute: skip it, then parse the reply it annotates
			for i := 0; i < 2*count; i++ {
				_, m, err := parseReply(L, b[n:], depth+1, rec)
				if err != nil {
					return nil, 0, err
				}
				n += m
			}
			v, m, err := parseReply(L, b[n:], depth, rec)
			return v, n + m, err
		case '%':
			inner := L.NewTable()
			var keys []lua.LValue
			for i := 0; i < count; i++ {
				k, m, err := parseReply(L, b[n:], depth+1, rec)
				if err != nil {
					return nil, 0, err
				}
				n += m
				val, m, err := parseReply(L, b[n:], depth+1, rec)
				if err != nil {
					return nil, 0, err
				}
				n += m
				keys = setField(L, inner, k, val, keys)
			}
			if rec != nil {
				rec(inner, keys)
			}
			t := L.CreateTable(0, 1)
			t.RawSetString("map", inner)
			return t, n, nil
		case '~':
			inner := L.NewTable()
			var keys []lua.LValue
			for i := 0; i < count; i++ {
				k, m, err := parseReply(L, b[n:], depth+1, rec)
				if err != nil {
					return nil, 0, err
				}
				n += m
				keys = setField(L, inner, k, lua.LTrue, keys)
			}
			if rec != nil {
				rec(inner, keys)
			}
			t := L.CreateTable(0, 1)
			t.RawSetString("set", inner)
			return t, n, nil
		}
		// Every element takes at least 3 bytes: do not trust the count
		// for preallocation.
		t := L.CreateTable(min(count, (len(b)-n)/3), 0)
		for i := 1; i <= count; i++ {
			val, m, err := parseReply(L, b[n:], depth+1, rec)
			if err != nil {
				return nil, 0, err
			}
			n += m
			t.RawSetInt(i, val)
		}
		return t, n, nil
	case '_':
		return lua.LNil, n, nil
	case '#':
		if len(line) != 1 || line[0] != 't' && line[0] != 'f' {
			return nil, 0, errBadReply
		}
		return lua.LBool(line[0] == 't'), n, nil
	case ',':
		d := 0.0
		if len(line) <= maxLongDoubleChars {
			d = parseDouble(string(line))
		}
		t := L.CreateTable(0, 1)
		t.RawSetString("double", lua.LNumber(d))
		return t, n, nil
	case '(':
		t := L.CreateTable(0, 1)
		t.RawSetString("big_number", lua.LString(line))
		return t, n, nil
	}
	return nil, 0, errBadReply
}

// maxLongDoubleChars is Redis's MAX_LONG_DOUBLE_CHARS.
const maxLongDoubleChars = 5 * 1024

// setField stores t[k] = v as lua_settable does for the tables Redis builds
// (nil keys and NaN keys would raise there; they cannot come from a valid
// reply, so they are dropped).
// It appends new keys to keys.
func setField(L *lua.LState, t *lua.LTable, k, v lua.LValue, keys []lua.LValue) []lua.LValue {
	if k == lua.LNil {
		return keys
	}
	if n, ok := k.(lua.LNumber); ok && math.IsNaN(float64(n)) {
		return keys
	}
	if t.RawGet(k) == lua.LNil {
		keys = append(keys, k)
	}
	t.RawSet(k, v)
	return keys
}

// parseDouble parses a RESP3 double as strtod does, for the forms Redis
// emits (decimal, exponent, inf, -inf, nan).
func parseDouble(s string) float64 {
	switch strings.ToLower(s) {
	case "inf", "+inf", "infinity", "+infinity":
		return math.Inf(1)
	case "-inf", "-infinity":
		return math.Inf(-1)
	case "nan", "+nan":
		return math.NaN()
	case "-nan":
		return math.Copysign(math.NaN(), -1)
	}
	// strtod stops at the first character it cannot use.
	end := len(s)
	for end > 0 {
		if f, err := strconv.ParseFloat(s[:end], 64); err == nil || errors.Is(err, strconv.ErrRange) {
			return f
		}
		end--
	}
	return 0
}

// errorTable builds the error table of luaPushErrorBuff: "-CODE msg" gives
// {err="CODE msg"}, anything else {err="ERR msg"}; CR and LF are trimmed
// from both ends of the message. withStats adds the
// ignore_error_stats_update field Redis adds to errors of commands.
func errorTable(L *lua.LState, buf string, withStats bool) *lua.LTable {
	t := L.CreateTable(0, 2)
	t.RawSetString("err", lua.LString(errorText(buf)))
	if withStats {
		t.RawSetString("ignore_error_stats_update", lua.LTrue)
	}
	return t
}

// errorText is the message luaPushErrorBuff stores for buf.
func errorText(buf string) string {
	buf = cstr.CString(buf)
	code, msg := "ERR", buf
	if strings.HasPrefix(buf, "-") {
		if i := strings.IndexByte(buf, ' '); i >= 0 {
			code, msg = buf[1:i], buf[i+1:]
		} else {
			msg = buf[1:]
		}
	}
	msg = strings.Trim(msg, "\r\n")
	return code + " " + msg
}

// writeLuaReply writes v to w as luaReplyToRedisReply does. scriptProto is
// the protocol the script selected with redis.setresp (it decides how
// booleans are sent); w.Proto is the caller's.
func writeLuaReply(w *resp.Writer, v lua.LValue, scriptProto int, vm *luaVM) {
	writeLuaValue(w, v, scriptProto, vm, 0)
}

// maxReplyNesting mirrors the Lua stack limit that stops Redis from
// converting tables nested deeper than this.
const maxReplyNesting = 7994

func writeLuaValue(w *resp.Writer, v lua.LValue, scriptProto int, vm *luaVM, depth int) {
	if depth > maxReplyNesting {
		w.Error("ERR reached lua stack limit")
		return
	}
	switch x := v.(type) {
	case lua.LString:
		w.Bulk([]byte(x))
	case lua.LBool:
		if scriptProto == 2 {
			if x {
				w.Int(1)
			} else {
				w.Null()
			}
			return
		}
		w.Bool(bool(x))
	case lua.LNumber:
		w.Int(toLongLong(float64(x)))
	case *lua.LTable:
		writeLuaTable(w, vm.unwrap(x), scriptProto, vm, depth)
	default:
		w.Null()
	}
}

// toLongLong converts like C's (long long) cast on x86-64: out-of-range
// values and NaN become the minimum int64.
func toLongLong(f float64) int64 {
	if math.IsNaN(f) || f >= 9223372036854775808.0 || f < -9223372036854775808.0 {
		return math.MinInt64
	}
	return int64(f)
}

func mapCRLF(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	b := []byte(s)
	for i, c := range b {
		if c == '\r' || c == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}

func writeLuaTable(w *resp.Writer, t *lua.LTable, scriptProto int, vm *luaVM, depth int) {
	if s, ok := t.RawGetString("err").(lua.LString); ok {
		w.Error(cstr.CString(string(s)))
		return
	}
	if s, ok := t.RawGetString("ok").(lua.LString); ok {
		w.Simple(mapCRLF(cstr.CString(string(s))))
		return
	}
	if n, ok := t.RawGetString("double").(lua.LNumber); ok {
		writeDouble(w, float64(n))
		return
	}
	if s, ok := t.RawGetString("big_number").(lua.LString); ok {
		big := mapCRLF(string(s))
		if w.Proto == 3 {
			w.Raw([]byte("(" + big + "\r\n"))
		} else {
			w.BulkString(big)
		}
		return
	}
	if vt, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		vt = vm.unwrap(vt)
		if f, ok := vt.RawGetString("format").(lua.LString); ok {
			if s, ok := vt.RawGetString("string").(lua.LString); ok {
				format := []byte("   ")
				fs := cstr.CString(string(f))
				for i := 0; i < 3 && i < len(fs); i++ {
					format[i] = fs[i]
				}
				w.Verbatim(string(format), []byte(s))
				return
			}
		}
	}
	if m, ok := t.RawGetString("map").(*lua.LTable); ok {
		m = vm.unwrap(m)
		keys := luaNextOrder(m, vm.insertOrder[m])
		w.Map(len(keys))
		for _, k := range keys {
			writeLuaValue(w, k, scriptProto, vm, depth+1)
			writeLuaValue(w, m.RawGet(k), scriptProto, vm, depth+1)
		}
		return
	}
	if s, ok := t.RawGetString("set").(*lua.LTable); ok {
		s = vm.unwrap(s)
		keys := luaNextOrder(s, vm.insertOrder[s])
		w.Set(len(keys))
		for _, k := range keys {
			writeLuaValue(w, k, scriptProto, vm, depth+1)
		}
		return
	}
	n := 0
	for t.RawGetInt(n+1) != lua.LNil {
		n++
	}
	w.Array(n)
	for i := 1; i <= n; i++ {
		writeLuaValue(w, t.RawGetInt(i), scriptProto, vm, depth+1)
	}
}

// writeDouble is addReplyDouble: "%.17g" (glibc spells NaN "nan" or
// "-nan"), a bulk string in RESP2.
func writeDouble(w *resp.Writer, d float64) {
	s := cstr.FormatG(d, 17)
	if w.Proto == 3 {
		w.Raw([]byte("," + s + "\r\n"))
		return
	}
	w.BulkString(s)
}
