package script

import (
	"strconv"
)

// The parser half of checkSyntax (see syntax.go for the lexer): the
// checking part of Lua 5.1.5's lparser.c, which generates no code but
// tracks blocks, locals and upvalues to report C Lua's errors and limits.

// Limits of Lua 5.1 (luaconf.h / llimits.h).
const (
	luaiMaxVars     = 200
	luaiMaxUpvalues = 60
	luaiMaxCCalls   = 200
)

type funcState struct {
	prev     *funcState
	actvar   []string // active local variables
	upvalues []string
	isVararg bool
	line     int // linedefined
	blocks   []blockInfo
}

type blockInfo struct {
	nactvar     int
	isbreakable bool
}

func (ls *lexer) errorExpected(tok int) {
	ls.syntaxError("'" + token2str(tok) + "' expected")
}

func (ls *lexer) testNext(c int) bool {
	if ls.t.tok == c {
		ls.next()
		return true
	}
	return false
}

func (ls *lexer) check(c int) {
	if ls.t.tok != c {
		ls.errorExpected(c)
	}
}

func (ls *lexer) checkNextTok(c int) {
	ls.check(c)
	ls.next()
}

func (ls *lexer) checkMatch(what, who, where int) {
	if !ls.testNext(what) {
		if where == ls.line {
			ls.errorExpected(what)
		}
		ls.syntaxError("'" + token2str(what) + "' expected (to close '" + token2str(who) + "' at line " + strconv.Itoa(where) + ")")
	}
}

func (ls *lexer) strCheckName() string {
	ls.check(tkName)
	name := ls.t.text
	ls.next()
	return name
}

func (ls *lexer) enterLevel() {
	ls.nCcalls++
	if ls.nCcalls > luaiMaxCCalls {
		ls.lexError("chunk has too many syntax levels", 0)
	}
}

func (ls *lexer) leaveLevel() { ls.nCcalls-- }

func (ls *lexer) errorLimit(limit int, what string) {
	var msg string
	if ls.fs.line == 0 {
		msg = "main function has more than " + strconv.Itoa(limit) + " " + what
	} else {
		msg = "function at line " + strconv.Itoa(ls.fs.line) + " has more than " + strconv.Itoa(limit) + " " + what
	}
	ls.lexError(msg, 0)
}

func (ls *lexer) openFunc(fs *funcState) {
	fs.prev = ls.fs
	ls.fs = fs
}

func (ls *lexer) closeFunc() { ls.fs = ls.fs.prev }

func (ls *lexer) newLocalVar(name string, n int) {
	fs := ls.fs
	if len(fs.actvar)+n+1 > luaiMaxVars {
		ls.errorLimit(luaiMaxVars, "local variables")
	}
	_ = name
}

func (ls *lexer) adjustLocalVars(names []string) {
	ls.fs.actvar = append(ls.fs.actvar, names...)
}

func (ls *lexer) enterBlock(breakable bool) {
	fs := ls.fs
	fs.blocks = append(fs.blocks, blockInfo{nactvar: len(fs.actvar), isbreakable: breakable})
}

func (ls *lexer) leaveBlock() {
	fs := ls.fs
	b := fs.blocks[len(fs.blocks)-1]
	fs.blocks = fs.blocks[:len(fs.blocks)-1]
	fs.actvar = fs.actvar[:b.nactvar]
}

// singleVar resolves a name, creating upvalues as Lua does (to enforce the
// upvalue limit).
func (ls *lexer) singleVar(name string) {
	ls.resolve(ls.fs, name)
}

// resolve reports whether name is a local of fs or of an enclosing
// function, adding upvalues on the way.
func (ls *lexer) resolve(fs *funcState, name string) bool {
	if fs == nil {
		return false
	}
	for i := len(fs.actvar) - 1; i >= 0; i-- {
		if fs.actvar[i] == name {
			return true
		}
	}
	if !ls.resolve(fs.prev, name) {
		return false
	}
	for _, u := range fs.upvalues {
		if u == name {
			return true
		}
	}
	if len(fs.upvalues)+1 > luaiMaxUpvalues {
		ls.fs = fs // errorLimit names the function that has too many; it panics
		ls.errorLimit(luaiMaxUpvalues, "upvalues")
	}
	fs.upvalues = append(fs.upvalues, name)
	return true
}

func blockFollow(tok int) bool {
	switch tok {
	case tkElse, tkElseif, tkEnd, tkUntil, tkEOS:
		return true
	}
	return false
}

func (ls *lexer) chunk() {
	islast := false
	ls.enterLevel()
	for !islast && !blockFollow(ls.t.tok) {
		islast = ls.statement()
		ls.testNext(';')
	}
	ls.leaveLevel()
}

func (ls *lexer) block() {
	ls.enterBlock(false)
	ls.chunk()
	ls.leaveBlock()
}

func (ls *lexer) statement() bool {
	line := ls.line
	switch ls.t.tok {
	case tkIf:
		ls.ifStat(line)
	case tkWhile:
		ls.whileStat(line)
	case tkDo:
		ls.next()
		ls.block()
		ls.checkMatch(tkEnd, tkDo, line)
	case tkFor:
		ls.forStat(line)
	case tkRepeat:
		ls.repeatStat(line)
	case tkFunction:
		ls.next()
		needself := ls.funcName()
		ls.body(needself, line)
	case tkLocal:
		ls.next()
		if ls.testNext(tkFunction) {
			ls.localFunc()
		} else {
			ls.localStat()
		}
	case tkReturn:
		ls.retStat()
		return true
	case tkBreak:
		ls.next()
		ls.breakStat()
		return true
	default:
		ls.exprStat()
	}
	return false
}

func (ls *lexer) ifStat(line int) {
	ls.testThenBlock()
	for ls.t.tok == tkElseif {
		ls.testThenBlock()
	}
	if ls.t.tok == tkElse {
		ls.next()
		ls.block()
	}
	ls.checkMatch(tkEnd, tkIf, line)
}

func (ls *lexer) testThenBlock() {
	ls.next()
	ls.expr()
	ls.checkNextTok(tkThen)
	ls.block()
}

func (ls *lexer) whileStat(line int) {
	ls.next()
	ls.expr()
	ls.enterBlock(true)
	ls.checkNextTok(tkDo)
	ls.block()
	ls.checkMatch(tkEnd, tkWhile, line)
	ls.leaveBlock()
}

func (ls *lexer) repeatStat(line int) {
	ls.enterBlock(true)
	ls.enterBlock(false)
	ls.next()
	ls.chunk()
	ls.checkMatch(tkUntil, tkRepeat, line)
	ls.expr()
	ls.leaveBlock()
	ls.leaveBlock()
}

func (ls *lexer) forStat(line int) {
	ls.enterBlock(true)
	ls.next()
	name := ls.strCheckName()
	switch ls.t.tok {
	case '=':
		ls.forNum(name)
	case ',', tkIn:
		ls.forList(name)
	default:
		ls.syntaxError("'=' or 'in' expected")
	}
	ls.checkMatch(tkEnd, tkFor, line)
	ls.leaveBlock()
}

func (ls *lexer) forNum(name string) {
	ls.newLocalVar("(for index)", 0)
	ls.newLocalVar("(for limit)", 1)
	ls.newLocalVar("(for step)", 2)
	ls.newLocalVar(name, 3)
	ls.checkNextTok('=')
	ls.expr()
	ls.checkNextTok(',')
	ls.expr()
	if ls.testNext(',') {
		ls.expr()
	}
	ls.forBody([]string{"(for index)", "(for limit)", "(for step)"}, []string{name})
}

func (ls *lexer) forList(first string) {
	ls.newLocalVar("(for generator)", 0)
	ls.newLocalVar("(for state)", 1)
	ls.newLocalVar("(for control)", 2)
	ls.newLocalVar(first, 3)
	names := []string{first}
	for ls.testNext(',') {
		n := ls.strCheckName()
		ls.newLocalVar(n, len(names)+3)
		names = append(names, n)
	}
	ls.checkNextTok(tkIn)
	ls.exprList1()
	ls.forBody([]string{"(for generator)", "(for state)", "(for control)"}, names)
}

func (ls *lexer) forBody(hidden, vars []string) {
	ls.adjustLocalVars(hidden)
	ls.checkNextTok(tkDo)
	ls.enterBlock(false)
	ls.adjustLocalVars(vars)
	ls.block()
	ls.leaveBlock()
}

func (ls *lexer) funcName() bool {
	ls.singleVar(ls.strCheckName())
	for ls.t.tok == '.' {
		ls.next()
		ls.strCheckName()
	}
	if ls.t.tok == ':' {
		ls.next()
		ls.strCheckName()
		return true
	}
	return false
}

func (ls *lexer) body(needself bool, line int) {
	fs := &funcState{line: line}
	ls.openFunc(fs)
	ls.checkNextTok('(')
	if needself {
		ls.newLocalVar("self", 0)
		ls.adjustLocalVars([]string{"self"})
	}
	ls.parList()
	ls.checkNextTok(')')
	ls.chunk()
	ls.checkMatch(tkEnd, tkFunction, line)
	ls.closeFunc()
}

func (ls *lexer) parList() {
	fs := ls.fs
	var names []string
	if ls.t.tok != ')' {
		for {
			switch ls.t.tok {
			case tkName:
				n := ls.strCheckName()
				ls.newLocalVar(n, len(names))
				names = append(names, n)
			case tkDots:
				ls.next()
				ls.newLocalVar("arg", len(names))
				names = append(names, "arg")
				fs.isVararg = true
			default:
				ls.syntaxError("<name> or '...' expected")
			}
			if fs.isVararg || !ls.testNext(',') {
				break
			}
		}
	}
	ls.adjustLocalVars(names)
}

func (ls *lexer) localFunc() {
	name := ls.strCheckName()
	ls.newLocalVar(name, 0)
	ls.adjustLocalVars([]string{name})
	ls.body(false, ls.line)
}

func (ls *lexer) localStat() {
	var names []string
	for {
		n := ls.strCheckName()
		ls.newLocalVar(n, len(names))
		names = append(names, n)
		if !ls.testNext(',') {
			break
		}
	}
	if ls.testNext('=') {
		ls.exprList1()
	}
	ls.adjustLocalVars(names)
}

func (ls *lexer) retStat() {
	ls.next()
	if blockFollow(ls.t.tok) || ls.t.tok == ';' {
		return
	}
	ls.exprList1()
}

func (ls *lexer) breakStat() {
	fs := ls.fs
	for i := len(fs.blocks) - 1; i >= 0; i-- {
		if fs.blocks[i].isbreakable {
			return
		}
	}
	ls.syntaxError("no loop to break")
}

// Expression kinds, as far as the checks need them.
const (
	expOther = iota
	expVar   // VLOCAL, VUPVAL, VGLOBAL, VINDEXED
	expCall  // VCALL
)

func (ls *lexer) exprStat() {
	k := ls.primaryExp()
	if k == expCall {
		return
	}
	ls.assignment(k, 1)
}

func (ls *lexer) assignment(k int, nvars int) {
	if k != expVar {
		ls.syntaxError("syntax error")
	}
	if ls.testNext(',') {
		nk := ls.primaryExp()
		if nvars > luaiMaxCCalls-ls.nCcalls {
			ls.errorLimit(luaiMaxCCalls-ls.nCcalls, "variables in assignment")
		}
		ls.assignment(nk, nvars+1)
		return
	}
	ls.checkNextTok('=')
	ls.exprList1()
}

func (ls *lexer) exprList1() {
	ls.expr()
	for ls.testNext(',') {
		ls.expr()
	}
}

func (ls *lexer) prefixExp() int {
	switch ls.t.tok {
	case '(':
		line := ls.line
		ls.next()
		ls.expr()
		ls.checkMatch(')', '(', line)
		return expOther
	case tkName:
		name := ls.t.text
		ls.next()
		ls.singleVar(name)
		return expVar
	}
	ls.syntaxError("unexpected symbol")
	return expOther
}

func (ls *lexer) primaryExp() int {
	k := ls.prefixExp()
	for {
		switch ls.t.tok {
		case '.':
			ls.next()
			ls.strCheckName()
			k = expVar
		case '[':
			ls.next()
			ls.expr()
			ls.checkNextTok(']')
			k = expVar
		case ':':
			ls.next()
			ls.strCheckName()
			ls.funcArgs()
			k = expCall
		case '(', tkString, '{':
			ls.funcArgs()
			k = expCall
		default:
			return k
		}
	}
}

func (ls *lexer) funcArgs() {
	line := ls.line
	switch ls.t.tok {
	case '(':
		if line != ls.lastline {
			ls.syntaxError("ambiguous syntax (function call x new statement)")
		}
		ls.next()
		if ls.t.tok != ')' {
			ls.exprList1()
		}
		ls.checkMatch(')', '(', line)
	case '{':
		ls.constructor()
	case tkString:
		ls.next()
	default:
		ls.syntaxError("function arguments expected")
	}
}

func (ls *lexer) constructor() {
	line := ls.line
	ls.checkNextTok('{')
	for {
		if ls.t.tok == '}' {
			break
		}
		switch ls.t.tok {
		case tkName:
			ls.lookAhead()
			if ls.lookahead.tok != '=' {
				ls.expr()
			} else {
				ls.next()
				ls.checkNextTok('=')
				ls.expr()
			}
		case '[':
			ls.next()
			ls.expr()
			ls.checkNextTok(']')
			ls.checkNextTok('=')
			ls.expr()
		default:
			ls.expr()
		}
		if !ls.testNext(',') && !ls.testNext(';') {
			break
		}
	}
	ls.checkMatch('}', '{', line)
}

func (ls *lexer) simpleExp() {
	switch ls.t.tok {
	case tkNumber, tkString, tkNil, tkTrue, tkFalse:
	case tkDots:
		if !ls.fs.isVararg {
			ls.syntaxError("cannot use '...' outside a vararg function")
		}
	case '{':
		ls.constructor()
		return
	case tkFunction:
		ls.next()
		ls.body(false, ls.line)
		return
	default:
		ls.primaryExp()
		return
	}
	ls.next()
}

func isUnOp(tok int) bool { return tok == tkNot || tok == '-' || tok == '#' }

// binary operators with their left and right priorities.
func binPriority(tok int) (left, right int, ok bool) {
	switch tok {
	case '+', '-':
		return 6, 6, true
	case '*', '/', '%':
		return 7, 7, true
	case '^':
		return 10, 9, true
	case tkConcat:
		return 5, 4, true
	case tkNe, tkEq, '<', tkLe, '>', tkGe:
		return 3, 3, true
	case tkAnd:
		return 2, 2, true
	case tkOr:
		return 1, 1, true
	}
	return 0, 0, false
}

const unaryPriority = 8

func (ls *lexer) expr() { ls.subExpr(0) }

func (ls *lexer) subExpr(limit int) int {
	ls.enterLevel()
	if isUnOp(ls.t.tok) {
		ls.next()
		ls.subExpr(unaryPriority)
	} else {
		ls.simpleExp()
	}
	op := ls.t.tok
	for {
		left, right, ok := binPriority(op)
		if !ok || left <= limit {
			break
		}
		ls.next()
		op = ls.subExpr(right)
	}
	ls.leaveLevel()
	return op
}
