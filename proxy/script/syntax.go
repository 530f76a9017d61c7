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
// parser (lparser.c, in syntax_parse.go): it produces exactly the message
// luaL_loadbuffer would, "user_script:1: unexpected symbol near '<eof>'",
// and scripts that pass it are then compiled by gopher-lua.

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
