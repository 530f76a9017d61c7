package script

import (
	"regexp"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/spillway/spillway/proxy/script/lualib"
)

// This file makes runtime errors read as they do in C Lua 5.1 (which Redis
// embeds): gopher-lua words them differently ("attempt to call a
// non-function object", "bad argument #1 to rep (...)"). Errors are
// rewritten while the failing frame is still on the stack, in the error
// handlers of top-level calls and of pcall/xpcall, using C Lua's own
// algorithm (getobjname/symbexec of ldebug.c) on gopher-lua's bytecode,
// which follows Lua 5.1's instruction set.

// gopher-lua opcodes (opcode.go).
const (
	opMove = iota
	opMoveN
	opLoadK
	opLoadBool
	opLoadNil
	opGetUpval
	opGetGlobal
	opGetTable
	opGetTableKS
	opSetGlobal
	opSetUpval
	opSetTable
	opSetTableKS
	opNewTable
	opSelf
	opAdd
	opSub
	opMul
	opDiv
	opMod
	opPow
	opUnm
	opNot
	opLen
	opConcat
	opJmp
	opEq
	opLt
	opLe
	opTest
	opTestSet
	opCall
	opTailCall
	opReturn
	opForLoop
	opForPrep
	opTForLoop
	opSetList
	opClose
	opClosure
	opVararg
	opNop
)

func instOp(i uint32) int  { return int(i >> 26) }
func instA(i uint32) int   { return int(i>>18) & 0xff }
func instB(i uint32) int   { return int(i & 0x1ff) }
func instC(i uint32) int   { return int(i>>9) & 0x1ff }
func instBx(i uint32) int  { return int(i & 0x3ffff) }
func instSBx(i uint32) int { return instBx(i) - (1<<18-1)>>1 }

const rkBit = 1 << 8

func isK(x int) bool { return x&rkBit != 0 }

// setsA reports whether an opcode writes register A (testAMode of lopcodes.c).
func setsA(op int) bool {
	switch op {
	case opSetGlobal, opSetUpval, opSetTable, opSetTableKS, opJmp, opEq, opLt, opLe,
		opReturn, opTForLoop, opSetList, opClose, opNop:
		return false
	}
	return true
}

// symbexec returns the last instruction before lastpc that wrote reg, as
// ldebug.c's symbexec does (following forward jumps that do not skip
// lastpc), or the final RETURN when none did.
func symbexec(p *lua.FunctionProto, lastpc, reg int) uint32 {
	code := p.Code
	if len(code) == 0 {
		return 0
	}
	last := len(code) - 1
	for pc := 0; pc < lastpc && pc < len(code); pc++ {
		i := code[pc]
		op := instOp(i)
		a := instA(i)
		if setsA(op) && a == reg {
			last = pc
		}
		switch op {
		case opLoadNil:
			if a <= reg && reg <= instB(i) {
				last = pc
			}
		case opSelf:
			if reg == a+1 {
				last = pc
			}
		case opTForLoop:
			if reg >= a+2 {
				last = pc
			}
		case opForLoop, opForPrep, opJmp:
			sbx := instSBx(i)
			dest := pc + 1 + sbx
			if pc < dest && dest <= lastpc {
				pc += sbx
			}
		case opCall, opTailCall:
			if reg >= a {
				last = pc
			}
		case opSetList:
			if instC(i) == 0 {
				pc++
			}
		case opClosure:
			if bx := instBx(i); bx < len(p.FunctionPrototypes) {
				pc += int(p.FunctionPrototypes[bx].NumUpvalues)
			}
		}
	}
	return code[last]
}

// constName returns constant c (an RK operand) when it is a string, else "?".
func constName(p *lua.FunctionProto, c int) string {
	if isK(c) {
		if k := c &^ rkBit; k < len(p.Constants) {
			if s, ok := p.Constants[k].(lua.LString); ok {
				return string(s)
			}
		}
	}
	return "?"
}

// localName is luaF_getlocalname: the name of the n-th local variable
// active at pc, or "".
func localName(p *lua.FunctionProto, n, pc int) string {
	for _, l := range p.DbgLocals {
		if l.StartPc > pc {
			break
		}
		if pc < l.EndPc {
			n--
			if n == 0 {
				return l.Name
			}
		}
	}
	return ""
}

// objName is ldebug.c's getobjname: what register reg holds at pc ("local",
// "global", "field", "upvalue" or "method") and its name; kind is empty
// when nothing useful is known.
func objName(fn *lua.LFunction, pc, reg int, depth int) (kind, name string) {
	if depth > 32 || fn == nil || fn.IsG || fn.Proto == nil {
		return "", ""
	}
	p := fn.Proto
	if n := localName(p, reg+1, pc); n != "" {
		return "local", n
	}
	i := symbexec(p, pc, reg)
	switch instOp(i) {
	case opGetGlobal:
		if bx := instBx(i); bx < len(p.Constants) {
			if s, ok := p.Constants[bx].(lua.LString); ok {
				return "global", string(s)
			}
		}
	case opMove, opMoveN:
		if a, b := instA(i), instB(i); b < a {
			return objName(fn, pc, b, depth+1)
		}
	case opGetTable, opGetTableKS:
		return "field", constName(p, instC(i))
	case opGetUpval:
		if b := instB(i); b < len(p.DbgUpvalues) {
			return "upvalue", p.DbgUpvalues[b]
		}
		return "upvalue", "?"
	case opSelf:
		return "method", constName(p, instC(i))
	}
	return "", ""
}

// typeErrorMsg is luaG_typeerror's message for the operand in register reg
// of f (reg < 0: an operand that is not in a register).
func typeErrorMsg(f *frameMirror, reg int, val lua.LValue, op string) string {
	t := lualib.TypeName(val)
	if reg >= 0 {
		if kind, name := objName(f.Fn, f.Pc-1, reg, 0); kind != "" {
			return "attempt to " + op + " " + kind + " '" + name + "' (a " + t + " value)"
		}
	}
	return "attempt to " + op + " a " + t + " value"
}

// rkOperand returns the value of RK operand x of f and its register (-1 for
// a constant).
func rkOperand(L *lua.LState, f *frameMirror, x int) (lua.LValue, int) {
	if isK(x) {
		k := x &^ rkBit
		if k < len(f.Fn.Proto.Constants) {
			return f.Fn.Proto.Constants[k], -1
		}
		return lua.LNil, -1
	}
	return register(L, f.LocalBase+x), x
}

// convertibleToNumber reports whether Lua's arithmetic accepts v.
func convertibleToNumber(v lua.LValue) bool {
	switch x := v.(type) {
	case lua.LNumber:
		return true
	case lua.LString:
		_, ok := lualib.StrToNumber(string(x))
		return ok
	}
	return false
}

// gopherPrefix is the position gopher-lua put in front of a message raised
// while f ran: the first Lua frame from f up, "source:line: ".
func gopherPrefix(f *frameMirror) string {
	for ; f != nil; f = f.Parent {
		if f.isLua() {
			return f.Fn.Proto.SourceName + ":" + strconv.Itoa(f.currentLine()) + ": "
		}
	}
	return ""
}

// luaWhere is luaL_where for the frame f: "source:line: " when f runs Lua
// code, "" otherwise.
func luaWhere(f *frameMirror) string {
	if f.isLua() {
		if line := f.currentLine(); line > 0 {
			return f.Fn.Proto.SourceName + ":" + strconv.Itoa(line) + ": "
		}
	}
	return ""
}

var badArgRe = regexp.MustCompile(`^bad argument #(\d+) to (\S+) \((.*)\)$`)
var cmpRe = regexp.MustCompile(`^attempt to compare (\w+) with (\w+)$`)

// translate rewrites err, raised in the frame one level above the running
// error handler, into C Lua 5.1's wording. Errors raised by the kill
// mechanism become Redis's kill error table.
func (v *luaVM) translate(L *lua.LState, err lua.LValue) lua.LValue {
	if rc := v.run; rc != nil && v.eng.wasKilled(rc) {
		return errorTable(L, "-"+errKilled, false)
	}
	if ld := v.load; ld != nil && ld.timedOut() {
		return errorTable(L, "-"+errLoadTimeout, false)
	}
	s, ok := err.(lua.LString)
	if !ok {
		return err
	}
	f := frameAt(L, 1)
	if f == nil {
		return err
	}
	msg := string(s)
	prefix := gopherPrefix(f)
	if prefix == "" || !strings.HasPrefix(msg, prefix) {
		return err
	}
	body := msg[len(prefix):]
	if f.isLua() && f == v.overflowAt && body == errStackOverflow.Error() {
		// runContext raised it as the callee started; C Lua raises it in
		// the caller, at the call.
		return lua.LString(luaWhere(f.Parent) + body)
	}
	if f.isLua() {
		if out, ok := vmError(L, f, body); ok {
			return lua.LString(prefix + out)
		}
		return err
	}
	if m := badArgRe.FindStringSubmatch(body); m != nil && !strings.HasPrefix(m[2], "'") {
		narg, _ := strconv.Atoi(m[1])
		extra := m[3]
		if strings.HasSuffix(extra, "got nil") && narg > f.NArgs {
			extra = strings.TrimSuffix(extra, "nil") + "no value"
		}
		return lua.LString(luaWhere(f.Parent) + argErrorMsg(f, narg, extra))
	}
	return lua.LString(luaWhere(f.Parent) + body)
}

// vmError translates an error the VM raised in Lua frame f.
func vmError(L *lua.LState, f *frameMirror, body string) (string, bool) {
	p := f.Fn.Proto
	pc := f.Pc - 1
	if pc < 0 || pc >= len(p.Code) {
		return "", false
	}
	i := p.Code[pc]
	op := instOp(i)
	switch {
	case strings.HasPrefix(body, "attempt to index a non-table object("):
		reg := -1
		switch op {
		case opGetTable, opGetTableKS, opSelf:
			reg = instB(i)
		case opSetTable, opSetTableKS:
			reg = instA(i)
		}
		t := body[len("attempt to index a non-table object("):]
		t = t[:strings.IndexByte(t+")", ')')]
		if reg >= 0 {
			val := register(L, f.LocalBase+reg)
			if lualib.TypeName(val) == t {
				return typeErrorMsg(f, reg, val, "index"), true
			}
		}
		return "attempt to index a " + t + " value", true
	case body == "attempt to call a non-function object":
		switch op {
		case opCall, opTailCall:
			reg := instA(i)
			return typeErrorMsg(f, reg, register(L, f.LocalBase+reg), "call"), true
		case opTForLoop:
			return typeErrorMsg(f, -1, register(L, f.LocalBase+instA(i)), "call"), true
		}
	case strings.HasPrefix(body, "cannot perform concat operation"):
		if op == opConcat {
			return concatError(L, f, instB(i), instC(i)), true
		}
	case strings.HasPrefix(body, "cannot perform "):
		if op >= opAdd && op <= opPow {
			val, reg := rkOperand(L, f, instB(i))
			if convertibleToNumber(val) {
				val, reg = rkOperand(L, f, instC(i))
			}
			return typeErrorMsg(f, reg, val, "perform arithmetic on"), true
		}
	case strings.HasPrefix(body, "for statement "):
		switch body {
		case "for statement init must be a number":
			return "'for' initial value must be a number", true
		case "for statement limit must be a number":
			return "'for' limit must be a number", true
		case "for statement step must be a number":
			return "'for' step must be a number", true
		}
	case body == "__unm undefined":
		if op == opUnm {
			reg := instB(i)
			return typeErrorMsg(f, reg, register(L, f.LocalBase+reg), "perform arithmetic on"), true
		}
	case body == "__len undefined":
		if op == opLen {
			reg := instB(i)
			return typeErrorMsg(f, reg, register(L, f.LocalBase+reg), "get length of"), true
		}
	case cmpRe.MatchString(body):
		if op == opLt || op == opLe {
			l, _ := rkOperand(L, f, instB(i))
			r, _ := rkOperand(L, f, instC(i))
			t1, t2 := lualib.TypeName(l), lualib.TypeName(r)
			if t1 == t2 {
				return "attempt to compare two " + t1 + " values", true
			}
			return "attempt to compare " + t1 + " with " + t2, true
		}
	}
	return "", false
}

// concatError finds the operand of R(b)..R(c) that luaV_concat reports.
func concatError(L *lua.LState, f *frameMirror, b, c int) string {
	isStr := func(v lua.LValue) bool {
		return v.Type() == lua.LTString || v.Type() == lua.LTNumber
	}
	reg := c
	if isStr(register(L, f.LocalBase+c)) {
		for reg = c - 1; reg > b && isStr(register(L, f.LocalBase+reg)); reg-- {
		}
	} else if !isStr(register(L, f.LocalBase+c-1)) {
		reg = c - 1
	}
	return typeErrorMsg(f, reg, register(L, f.LocalBase+reg), "concatenate")
}

// funcName is getfuncname for the Go function running in frame f: how its
// Lua caller named it.
func funcName(f *frameMirror) (kind, name string) {
	if f == nil {
		return "", ""
	}
	parent := f.Parent
	if !parent.isLua() {
		return "", ""
	}
	pc := parent.Pc - 1
	code := parent.Fn.Proto.Code
	if pc < 0 || pc >= len(code) {
		return "", ""
	}
	switch i := code[pc]; instOp(i) {
	case opCall, opTailCall, opTForLoop:
		return objName(parent.Fn, pc, instA(i), 0)
	}
	return "", ""
}

// argErrorMsg is luaL_argerror's message (without position) for argument
// narg of the Go function in frame f.
func argErrorMsg(f *frameMirror, narg int, extra string) string {
	kind, name := funcName(f)
	if kind == "method" {
		narg--
		if narg == 0 {
			return "calling '" + name + "' on bad self (" + extra + ")"
		}
	}
	if kind == "" {
		name = "?"
	}
	return "bad argument #" + strconv.Itoa(narg) + " to '" + name + "' (" + extra + ")"
}

// raiseLua raises msg as luaL_error does from a Go function: prefixed with
// the position of the calling Lua function, if any.
func raiseLua(L *lua.LState, msg string) {
	f := currentFrame(L)
	pos := ""
	if f != nil {
		pos = luaWhere(f.Parent)
	}
	L.Error(lua.LString(pos+msg), 0)
}

// argError is luaL_argerror.
func argError(L *lua.LState, narg int, extra string) {
	f := currentFrame(L)
	if f == nil {
		L.RaiseError("bad argument #%d (%s)", narg, extra)
		return
	}
	L.Error(lua.LString(luaWhere(f.Parent)+argErrorMsg(f, narg, extra)), 0)
}

// typeError is luaL_typerror.
func typeError(L *lua.LState, narg int, tname string) {
	got := "no value"
	if narg <= L.GetTop() {
		got = lualib.TypeName(L.Get(narg))
	}
	argError(L, narg, tname+" expected, got "+got)
}

// checkTable is luaL_checktype(L, n, LUA_TTABLE).
func checkTable(L *lua.LState, n int) *lua.LTable {
	if t, ok := L.Get(n).(*lua.LTable); ok && n <= L.GetTop() {
		return t
	}
	typeError(L, n, "table")
	return nil
}

// checkNumber is luaL_checknumber.
func checkNumber(L *lua.LState, n int) float64 {
	if n <= L.GetTop() {
		switch x := L.Get(n).(type) {
		case lua.LNumber:
			return float64(x)
		case lua.LString:
			if f, ok := lualib.StrToNumber(string(x)); ok {
				return f
			}
		}
	}
	typeError(L, n, "number")
	return 0
}

// checkInt is luaL_checkint: on x86-64 C Lua truncates the number to
// lua_Integer, then to int.
func checkInt(L *lua.LState, n int) int {
	return int(int32(toLongLong(checkNumber(L, n))))
}

// luaToString is tostring() of C Lua for the values error handlers see.
func luaToString(v lua.LValue) string {
	switch x := v.(type) {
	case lua.LNumber:
		return fmtNumber(float64(x))
	case lua.LString:
		return string(x)
	case lua.LBool:
		if x {
			return "true"
		}
		return "false"
	}
	if v == lua.LNil {
		return "nil"
	}
	return v.String()
}
