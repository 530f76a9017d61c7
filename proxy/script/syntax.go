package script

import (
	"strconv"
	"strings"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/script/lualib"
)

// gopher-lua's parser reports errors in its own words ("syntax error"), and
// accepts a few things Lua 5.1 does not (goto, for instance). checkSyntax is
// a port of Lua 5.1.5's lexer (llex.c) and of the checking part of its
// parser (lparser.c): it produces exactly the message luaL_loadbuffer would,
// "user_script:1: unexpected symbol near '<eof>'", and scripts that pass it
// are then compiled by gopher-lua.

// Tokens: single characters are their byte value; the rest follow.
const (
	tkAnd = 257 + iota
	tkBreak
	tkDo
	tkElse
	tkElseif
	tkEnd
	tkFalse
	tkFor
	tkFunction
	tkIf
	tkIn
	tkLocal
	tkNil
	tkNot
	tkOr
	tkRepeat
	tkReturn
	tkThen
	tkTrue
	tkUntil
	tkWhile
	tkConcat
	tkDots
	tkEq
	tkGe
	tkLe
	tkNe
	tkNumber
	tkName
	tkString
	tkEOS
)

var tokenNames = [...]string{
	"and", "break", "do", "else", "elseif",
	"end", "false", "for", "function", "if",
	"in", "local", "nil", "not", "or", "repeat",
	"return", "then", "true", "until", "while",
	"..", "...", "==", ">=", "<=", "~=",
	"<number>", "<name>", "<string>", "<eof>",
}

var reserved = func() map[string]int {
	m := make(map[string]int)
	for i := tkAnd; i <= tkWhile; i++ {
		m[tokenNames[i-tkAnd]] = i
	}
	return m
}()

// Limits of Lua 5.1 (luaconf.h / llimits.h).
const (
	luaiMaxVars     = 200
	luaiMaxUpvalues = 60
	luaiMaxCCalls   = 200
)

type syntaxError struct{ msg string }

// srcFix replaces src[start:start+len(text)] with text.
type srcFix struct {
	start int
	text  string
}

type token struct {
	tok  int
	text string // for names, strings and numbers: the raw token text
}

// lexer mirrors LexState.
type lexer struct {
	src       string
	pos       int // index of current
	current   int // current character, -1 at end
	line      int
	lastline  int
	t         token
	lookahead token
	buff      []byte // luaZ_buffer: text of the last token lexed
	// fixes rewrite source ranges gopher-lua would lex differently (NUL
	// bytes C Lua's lexer swallows inside numbers and dots).
	fixes   []srcFix
	chunkid string
	nCcalls int
	fs      *funcState
}

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

const eoz = -1

// checkSyntax reports C Lua 5.1's syntax error for src, if any. Otherwise
// it returns src adjusted so that gopher-lua lexes it as C Lua does.
func checkSyntax(src, chunkid string) (fixed string, msg string, bad bool) {
	ls := &lexer{src: src, line: 1, lastline: 1, chunkid: chunkid}
	ls.lookahead.tok = tkEOS
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(syntaxError)
			if !ok {
				panic(r)
			}
			fixed, msg, bad = src, se.msg, true
		}
	}()
	if len(src) > 0 {
		ls.current = int(src[0])
	} else {
		ls.current = eoz
	}
	fs := &funcState{isVararg: true}
	ls.openFunc(fs)
	ls.next()
	ls.chunk()
	ls.check(tkEOS)
	if len(ls.fixes) == 0 {
		return src, "", false
	}
	b := []byte(src)
	for _, f := range ls.fixes {
		copy(b[f.start:], f.text)
	}
	return string(b), "", false
}

func (ls *lexer) nextChar() {
	ls.pos++
	if ls.pos < len(ls.src) {
		ls.current = int(ls.src[ls.pos])
	} else {
		ls.current = eoz
	}
}

func (ls *lexer) save(c int) { ls.buff = append(ls.buff, byte(c)) }

func (ls *lexer) saveAndNext() {
	ls.save(ls.current)
	ls.nextChar()
}

func (ls *lexer) currIsNewline() bool { return ls.current == '\n' || ls.current == '\r' }

func token2str(tok int) string {
	if tok < 257 {
		if tok < 32 || tok == 127 {
			return "char(" + strconv.Itoa(tok) + ")"
		}
		return string([]byte{byte(tok)})
	}
	return tokenNames[tok-tkAnd]
}

func (ls *lexer) txtToken(tok int) string {
	switch tok {
	case tkName, tkString, tkNumber:
		return cstr.CString(string(ls.buff))
	}
	return token2str(tok)
}

func (ls *lexer) lexError(msg string, tok int) {
	msg = ls.chunkid + ":" + strconv.Itoa(ls.line) + ": " + msg
	if tok != 0 {
		msg += " near '" + ls.txtToken(tok) + "'"
	}
	panic(syntaxError{msg})
}

func (ls *lexer) syntaxError(msg string) { ls.lexError(msg, ls.t.tok) }

func (ls *lexer) incLineNumber() {
	old := ls.current
	ls.nextChar()
	if ls.currIsNewline() && ls.current != old {
		ls.nextChar()
	}
	ls.line++
}

// checkNext is llex.c's check_next, strchr included: a NUL character
// matches every set (it finds the set's terminator).
func (ls *lexer) checkNext(set string) bool {
	if ls.current == 0 {
		ls.saveAndNext()
		return true
	}
	for i := 0; i < len(set); i++ {
		if ls.current == int(set[i]) {
			ls.saveAndNext()
			return true
		}
	}
	return false
}

func isLuaAlpha(c int) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isLuaDigit(c int) bool { return '0' <= c && c <= '9' }
func isLuaSpace(c int) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func (ls *lexer) readNumeral(start int) {
	for {
		ls.saveAndNext()
		if !(isLuaDigit(ls.current) || ls.current == '.') {
			break
		}
	}
	if ls.checkNext("Ee") {
		ls.checkNext("+-")
	}
	for isLuaAlpha(ls.current) || isLuaDigit(ls.current) || ls.current == '_' {
		ls.saveAndNext()
	}
	if _, ok := lualib.StrToNumber(string(ls.buff)); !ok {
		ls.lexError("malformed number", tkNumber)
	}
	if n := len(cstr.CString(string(ls.buff))); n < ls.pos-start {
		// C Lua converts the text up to the NUL and ignores the rest.
		ls.fixes = append(ls.fixes, srcFix{start + n, strings.Repeat(" ", ls.pos-start-n)})
	}
}

func (ls *lexer) skipSep() int {
	count := 0
	s := ls.current
	ls.saveAndNext()
	for ls.current == '=' {
		ls.saveAndNext()
		count++
	}
	if ls.current == s {
		return count
	}
	return -count - 1
}

func (ls *lexer) readLongString(isString bool, sep int) {
	ls.saveAndNext() // skip 2nd '['
	if ls.currIsNewline() {
		ls.incLineNumber()
	}
	for {
		switch ls.current {
		case eoz:
			if isString {
				ls.lexError("unfinished long string", tkEOS)
			}
			ls.lexError("unfinished long comment", tkEOS)
		case ']':
			if ls.skipSep() == sep {
				ls.saveAndNext()
				return
			}
		case '\n', '\r':
			ls.save('\n')
			ls.incLineNumber()
			if !isString {
				ls.buff = ls.buff[:0]
			}
		default:
			if isString {
				ls.saveAndNext()
			} else {
				ls.nextChar()
			}
		}
	}
}

func (ls *lexer) readString(del int) {
	ls.saveAndNext()
	for ls.current != del {
		switch ls.current {
		case eoz:
			ls.lexError("unfinished string", tkEOS)
		case '\n', '\r':
			ls.lexError("unfinished string", tkString)
		case '\\':
			ls.nextChar() // do not save the '\'
			var c int
			switch ls.current {
			case 'a':
				c = '\a'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'v':
				c = '\v'
			case '\n', '\r':
				ls.save('\n')
				ls.incLineNumber()
				continue
			case eoz:
				continue
			default:
				if !isLuaDigit(ls.current) {
					ls.saveAndNext()
				} else {
					i := 0
					c = 0
					for {
						c = 10*c + (ls.current - '0')
						ls.nextChar()
						i++
						if i >= 3 || !isLuaDigit(ls.current) {
							break
						}
					}
					if c > 255 {
						ls.lexError("escape sequence too large", tkString)
					}
					ls.save(c)
				}
				continue
			}
			ls.save(c)
			ls.nextChar()
		default:
			ls.saveAndNext()
		}
	}
	ls.saveAndNext()
}

// llex returns the next token; names, strings and numbers leave their text
// in buff.
func (ls *lexer) llex() int {
	ls.buff = ls.buff[:0]
	for {
		switch c := ls.current; c {
		case '\n', '\r':
			ls.incLineNumber()
		case '-':
			ls.nextChar()
			if ls.current != '-' {
				return '-'
			}
			ls.nextChar()
			if ls.current == '[' {
				sep := ls.skipSep()
				ls.buff = ls.buff[:0]
				if sep >= 0 {
					ls.readLongString(false, sep)
					ls.buff = ls.buff[:0]
					continue
				}
			}
			for !ls.currIsNewline() && ls.current != eoz {
				ls.nextChar()
			}
		case '[':
			sep := ls.skipSep()
			if sep >= 0 {
				ls.readLongString(true, sep)
				return tkString
			} else if sep == -1 {
				return '['
			}
			ls.lexError("invalid long string delimiter", tkString)
		case '=':
			ls.nextChar()
			if ls.current != '=' {
				return '='
			}
			ls.nextChar()
			return tkEq
		case '<':
			ls.nextChar()
			if ls.current != '=' {
				return '<'
			}
			ls.nextChar()
			return tkLe
		case '>':
			ls.nextChar()
			if ls.current != '=' {
				return '>'
			}
			ls.nextChar()
			return tkGe
		case '~':
			ls.nextChar()
			if ls.current != '=' {
				return '~'
			}
			ls.nextChar()
			return tkNe
		case '"', '\'':
			ls.readString(c)
			return tkString
		case '.':
			start := ls.pos
			ls.saveAndNext()
			if ls.checkNext(".") {
				tok := tkConcat
				if ls.checkNext(".") {
					tok = tkDots
				}
				if strings.IndexByte(ls.src[start:ls.pos], 0) >= 0 {
					ls.fixes = append(ls.fixes, srcFix{start, strings.Repeat(".", ls.pos-start)})
				}
				return tok
			}
			if !isLuaDigit(ls.current) {
				return '.'
			}
			ls.readNumeral(start)
			return tkNumber
		case eoz:
			return tkEOS
		default:
			switch {
			case isLuaSpace(c):
				ls.nextChar()
			case isLuaDigit(c):
				ls.readNumeral(ls.pos)
				return tkNumber
			case isLuaAlpha(c) || c == '_':
				for {
					ls.saveAndNext()
					if !(isLuaAlpha(ls.current) || isLuaDigit(ls.current) || ls.current == '_') {
						break
					}
				}
				if r, ok := reserved[string(ls.buff)]; ok {
					return r
				}
				return tkName
			default:
				ls.nextChar()
				return c
			}
		}
	}
}

func (ls *lexer) lex() token {
	tok := ls.llex()
	return token{tok: tok, text: string(ls.buff)}
}

// next is luaX_next.
func (ls *lexer) next() {
	ls.lastline = ls.line
	if ls.lookahead.tok != tkEOS {
		ls.t = ls.lookahead
		ls.lookahead.tok = tkEOS
		return
	}
	ls.t = ls.lex()
}

func (ls *lexer) lookAhead() { ls.lookahead = ls.lex() }

// Parser (lparser.c, checks only).

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
