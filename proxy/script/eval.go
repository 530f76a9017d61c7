package script

import (
	"bytes"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
)

// Chunk names, as Redis gives them to luaL_loadbuffer (without the '@').
const (
	evalChunk = "user_script"
	funcChunk = "user_function"
)

// scriptFlags are the shebang / register_function flags (SCRIPT_FLAG_*).
type scriptFlags uint8

const (
	flagNoWrites scriptFlags = 1 << iota
	flagAllowOOM
	flagAllowStale
	flagNoCluster
	flagAllowCrossSlot
)

// scriptFlagNames lists the flags in Redis's order (scripts_flags_def).
var scriptFlagNames = []struct {
	flag scriptFlags
	name string
}{
	{flagNoWrites, "no-writes"},
	{flagAllowOOM, "allow-oom"},
	{flagAllowStale, "allow-stale"},
	{flagNoCluster, "no-cluster"},
	{flagAllowCrossSlot, "allow-cross-slot-keys"},
}

// evalScript is a cached EVAL script.
type evalScript struct {
	body   []byte
	flags  scriptFlags
	compat bool // no shebang: Redis's SCRIPT_FLAG_EVAL_COMPAT_MODE
	fn     *lua.LFunction
	sha    string // lower-case hex SHA1 of body, the cache's key
}

const errNoScript = "NOSCRIPT No matching script. Please use EVAL."

// Eval runs EVAL, EVALSHA, EVAL_RO, EVALSHA_RO (args as received from the
// client, args[0] the command name in any case; arity already checked),
// writing exactly one reply to w (w.Proto is the caller's protocol, 2 or 3).
func (e *Engine) Eval(host Host, w *resp.Writer, args [][]byte) {
	if len(args) < 3 {
		w.Error("ERR wrong number of arguments for '" + strings.ToLower(string(args[0])) + "' command")
		return
	}
	evalsha, ro := evalVariant(args[0])
	if evalsha && len(args[1]) != 40 {
		w.Error(errNoScript)
		return
	}
	numkeys, ok := cstr.ParseInt(args[2])
	if !ok {
		w.Error("ERR value is not an integer or out of range")
		return
	}
	if numkeys > int64(len(args)-3) {
		w.Error("ERR Number of keys can't be greater than number of args")
		return
	}
	if numkeys < 0 {
		w.Error("ERR Number of keys can't be negative")
		return
	}

	e.runMu.Lock()
	defer e.runMu.Unlock()
	// The cache is looked up with the SHA in a stack buffer: no
	// allocation for a script already cached.
	var shaBuf [40]byte
	if evalsha {
		lowerInto(shaBuf[:], args[1])
	} else {
		sha1Into(&shaBuf, args[1])
	}
	sc := e.scripts[string(shaBuf[:])]
	if sc == nil {
		if evalsha {
			w.Error(errNoScript)
			return
		}
		var msg string
		if sc, msg = e.createScript(args[1], string(shaBuf[:])); sc == nil {
			w.Error(msg)
			return
		}
	}
	if !sc.compat && sc.flags&flagNoWrites == 0 && ro {
		w.Error("ERR Can not execute a script with write flag using *_ro command.")
		return
	}
	// The run context is the EVAL interpreter's own, reused: only this
	// goroutine (holding runMu) and, while it is e.cur, Engine.mu's
	// holders see it. EVAL needs no copy of its arguments: FUNCTION STATS
	// refuses to describe a running EVAL script.
	rc := e.evm.newRun()
	*rc = runCtx{
		host:     host,
		proto:    2,
		readOnly: ro || !sc.compat && sc.flags&flagNoWrites != 0,
		allowOOM: !sc.compat && sc.flags&(flagAllowOOM|flagNoWrites) != 0,
		eval:     true,
		name:     sc.sha,
	}
	keys := args[3 : 3+numkeys]
	argv := args[3+numkeys:]
	e.run(e.evm, rc, sc.fn, keys, argv, w)
}

// evalVariant tells EVAL, EVALSHA, EVAL_RO and EVALSHA_RO apart by the
// command's name (any case), without allocating.
func evalVariant(name []byte) (evalsha, ro bool) {
	n := len(name)
	evalsha = n >= 7 && (name[4]|0x20) == 's' // "evalsha", "evalsha_ro"
	ro = n >= 3 && name[n-3] == '_' && (name[n-2]|0x20) == 'r' && (name[n-1]|0x20) == 'o'
	return evalsha, ro
}

// DeclaredWrites answers Redis's getCommandFlags for EVAL, EVALSHA, their
// _RO forms, FCALL and FCALL_RO (args as received): declared reports
// whether the script or function declares its flags (a shebang, or any
// function), and then mayWrite whether it may write (no no-writes flag).
// An undeclared script (no shebang, an EVALSHA of an unknown script, an
// unknown function) keeps the command's own flags. CLIENT PAUSE WRITE
// holds the commands that may write.
func (e *Engine) DeclaredWrites(args [][]byte) (declared, mayWrite bool) {
	flags, declared := e.declaredFlags(args)
	return declared, declared && flags&flagNoWrites == 0
}

// cloneArgs copies the caller's command for FUNCTION STATS.
func cloneArgs(args [][]byte) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = bytes.Clone(a)
	}
	return out
}

// createScript compiles body into the EVAL interpreter and caches it (the
// caller holds runMu). On failure it returns the error reply.
func (e *Engine) createScript(body []byte, sha string) (*evalScript, string) {
	if sc := e.scripts[sha]; sc != nil {
		return sc, ""
	}
	flags, compat, shebangLen, msg := parseShebang(body)
	if msg != "" {
		return nil, "ERR " + msg
	}
	fn, msg := compileChunk(e.evm.L, string(body[shebangLen:]), "@"+evalChunk, evalChunk)
	if fn == nil {
		return nil, "ERR Error compiling script (new function): " + msg
	}
	fn.Env = e.evm.env
	sc := &evalScript{body: bytes.Clone(body), flags: flags, compat: compat, fn: fn, sha: sha}
	e.scripts[sha] = sc
	e.nScripts.Add(1)
	e.scriptMem.Add(int64(len(body)))
	return sc, ""
}

// parseShebang is evalExtractShebangFlags: it parses a "#!lua flags=..."
// first line. shebangLen is the length of that line without its line feed,
// so that compiling the rest keeps the script's line numbers.
func parseShebang(body []byte) (flags scriptFlags, compat bool, shebangLen int, msg string) {
	if !bytes.HasPrefix(body, []byte("#!")) {
		return 0, true, 0, ""
	}
	c := cstr.CString(string(body))
	end := strings.IndexByte(c, '\n')
	if end < 0 {
		return 0, false, 0, "Invalid script shebang"
	}
	parts, ok := splitArgs(c[:end])
	if !ok || len(parts) == 0 {
		return 0, false, 0, "Invalid engine in script shebang"
	}
	if parts[0] != "#!lua" {
		return 0, false, 0, "Unexpected engine in script shebang: " + cstr.CString(parts[0])
	}
	for _, p := range parts[1:] {
		if !strings.HasPrefix(p, "flags=") {
			return 0, false, 0, "Unknown lua shebang option: " + cstr.CString(p)
		}
		list := p[len("flags="):]
		if list == "" {
			continue
		}
		for _, f := range strings.Split(list, ",") {
			bit, ok := flagByName(f, false)
			if !ok {
				return 0, false, 0, "Unexpected flag in script shebang: " + cstr.CString(f)
			}
			flags |= bit
		}
	}
	return flags, false, end, ""
}

// flagByName looks a script flag up, case-insensitively for functions.
func flagByName(name string, fold bool) (scriptFlags, bool) {
	name = cstr.CString(name)
	for _, f := range scriptFlagNames {
		if f.name == name || fold && strings.EqualFold(f.name, name) {
			return f.flag, true
		}
	}
	return 0, false
}

// splitArgs is Redis's sdssplitargs (cstr.SplitArgs) over line up to its
// first NUL byte (Redis reads the shebang as a C string).
func splitArgs(line string) ([]string, bool) {
	return cstr.SplitArgs(cstr.CString(line))
}

// run calls fn (a script: no arguments, KEYS and ARGV as globals; a
// function: the keys and args tables as arguments) and writes its reply.
// The caller holds runMu.
func (e *Engine) run(v *luaVM, rc *runCtx, fn *lua.LFunction, keys, argv [][]byte, w *resp.Writer) {
	L := v.L
	rctx, cancel := v.runContext()
	rc.cancel = cancel
	rc.start = time.Now()
	e.setRunning(rc)
	v.run = rc
	L.SetContext(rctx)
	defer func() {
		L.RemoveContext()
		v.run = nil
		clear(v.insertOrder)
		clear(v.iterOrder)
		L.SetTop(0)
		v.releaseArgs()
		v.keysT.release()
		v.argvT.release()
		e.clearRunning()
		v.endRunContext() // after clearRunning: no Kill can cancel it any more
	}()
	nargs := 0
	L.Push(fn)
	if rc.eval {
		// The globals keep the reused tables from one run to the next.
		if kt := v.keysT.fill(L, keys); v.gcontent.RawGetString("KEYS") != kt {
			v.gcontent.RawSetString("KEYS", kt)
		}
		if at := v.argvT.fill(L, argv); v.gcontent.RawGetString("ARGV") != at {
			v.gcontent.RawSetString("ARGV", at)
		}
	} else {
		// A function can keep its arguments in an upvalue: new tables.
		L.Push(stringArray(L, keys))
		L.Push(stringArray(L, argv))
		nargs = 2
	}
	if err := L.PCall(nargs, 1, v.handler); err != nil {
		obj := errorObject(err)
		if _, isTable := obj.(*lua.LTable); !isTable {
			// The handler could not run (gopher-lua's own call stack
			// overflow, in a coroutine): report the bare error.
			t := L.CreateTable(0, 1)
			t.RawSetString("err", lua.LString("ERR "+luaToString(obj)))
			obj = t
		}
		writeScriptError(w, obj, rc.name)
		return
	}
	writeLuaReply(w, L.Get(-1), rc.proto, v)
}

// maxArgTable is the largest array argTable keeps from one run to the next.
const maxArgTable = 1024

// argTable is one of EVAL's KEYS and ARGV tables, reused by every run.
// An EVAL script has nowhere to keep a table once it returns (its globals
// are read-only and its main chunk has no upvalues), so the same table
// reset to a new table's state (fill) cannot be told from a new one,
// whatever the previous script did to it (a metatable, fields, elements
// set or removed).
type argTable struct {
	t     *lua.LTable
	fresh lua.LTable // *t as L.CreateTable(n, 0) made it, n = cap
	n     int        // the capacity of fresh's array
}

// fill returns the table holding items as L.CreateTable and RawSetInt
// would make it, without allocating when items fit the kept array.
func (a *argTable) fill(L *lua.LState, items [][]byte) *lua.LTable {
	if a.t == nil || len(items) > a.n {
		t := L.CreateTable(len(items), 0)
		if len(items) <= maxArgTable {
			a.t, a.fresh, a.n = t, *t, len(items)
		}
		for i, s := range items {
			t.RawSetInt(i+1, lua.LString(s))
		}
		return t
	}
	*a.t = a.fresh
	for i, s := range items {
		a.t.RawSetInt(i+1, lua.LString(s))
	}
	return a.t
}

// release drops what the table refers to (at a run's end): the kept
// array's elements are overwritten and the table is left new.
func (a *argTable) release() {
	if a.t == nil {
		return
	}
	*a.t = a.fresh
	for i := 1; i <= a.n; i++ {
		a.t.RawSetInt(i, lua.LNil)
	}
	*a.t = a.fresh
}

// stringArray makes a Lua array of strings.
func stringArray(L *lua.LState, items [][]byte) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for i, s := range items {
		t.RawSetInt(i+1, lua.LString(s))
	}
	return t
}

// writeScriptError writes the reply of a script that raised: the error
// table's message, followed by " script: <name>, on <source>:<line>." when
// the error handler located it.
func writeScriptError(w *resp.Writer, obj lua.LValue, name string) {
	t, ok := obj.(*lua.LTable)
	if !ok {
		msg := "execution failure"
		if s, ok := toStringValue(obj); ok {
			msg = cstr.CString(s)
		}
		if len(msg) > 100 {
			msg = msg[:100]
		}
		w.Error("ERR Error running script " + name + ", " + msg + " ")
		return
	}
	msg, ok := toStringValue(t.RawGetString("err"))
	if !ok {
		// Redis 7.0.15 crashes here (NULL message); report something sane.
		msg = "ERR unknown error"
	}
	out := cstr.CString(msg)
	source, okS := toStringValue(t.RawGetString("source"))
	line, okL := toStringValue(t.RawGetString("line"))
	if okS && okL {
		out += " script: " + name + ", on " + cstr.CString(source) + ":" + cstr.CString(line) + "."
	}
	w.Error(out)
}

// Script runs SCRIPT LOAD, EXISTS, FLUSH (args[0]=="script", args[1] the
// subcommand). It also answers SCRIPT HELP, SCRIPT KILL (delegated to Kill)
// and SCRIPT DEBUG NO; SCRIPT DEBUG YES|SYNC fails (no Lua debugger).
func (e *Engine) Script(w *resp.Writer, args [][]byte) {
	if len(args) < 2 {
		w.Error("ERR wrong number of arguments for 'script' command")
		return
	}
	sub, msg := subcommand("script", args)
	if sub == nil {
		w.Error(msg)
		return
	}
	switch sub.Name {
	case "script|load":
		e.runMu.Lock()
		defer e.runMu.Unlock()
		sha := sha1hex(args[2])
		if _, msg := e.createScript(args[2], sha); msg != "" {
			w.Error(msg)
			return
		}
		w.BulkString(sha)
	case "script|exists":
		e.runMu.Lock()
		defer e.runMu.Unlock()
		w.Array(len(args) - 2)
		for _, a := range args[2:] {
			if e.scripts[asciiLower(cstr.CString(string(a)))] != nil {
				w.Int(1)
			} else {
				w.Int(0)
			}
		}
	case "script|flush":
		if len(args) > 3 || len(args) == 3 && !strings.EqualFold(string(args[2]), "sync") && !strings.EqualFold(string(args[2]), "async") {
			w.Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
			return
		}
		e.runMu.Lock()
		defer e.runMu.Unlock()
		e.flushScripts()
		w.OK()
	case "script|kill":
		e.Kill(w, false)
	case "script|help":
		writeHelp(w, args[0], scriptHelp)
	case "script|debug":
		// The Lua debugger (ldb) is not implemented: only NO is accepted.
		switch strings.ToLower(string(args[2])) {
		case "no":
			w.OK()
		case "yes", "sync":
			w.Error("ERR SCRIPT DEBUG is not supported")
		default:
			w.Error("ERR Use SCRIPT DEBUG YES/SYNC/NO")
		}
	default:
		w.Error("ERR unknown subcommand or wrong number of arguments for '" + truncateName(string(args[1])) + "'. Try SCRIPT HELP.")
	}
}

// flushScripts empties the script cache and starts a fresh EVAL interpreter,
// as SCRIPT FLUSH does (the caller holds runMu).
func (e *Engine) flushScripts() {
	e.scripts = make(map[string]*evalScript)
	e.nScripts.Store(0)
	e.scriptMem.Store(0)
	old := e.evm
	e.evm = newVM(e, evalVM)
	old.close()
}

// subcommand resolves args[1] of a container command as Redis's command
// lookup does, returning its table entry or the error Redis sends for an
// unknown subcommand or a wrong number of arguments.
func subcommand(container string, args [][]byte) (*cmdtable.Command, string) {
	base := cmdtable.Lookup([]byte(container))
	if base == nil {
		return nil, "ERR unknown command '" + container + "'"
	}
	sub := base.Sub(args[1])
	if sub == nil {
		return nil, "ERR unknown subcommand '" + truncateName(cstr.CString(string(args[1]))) + "'. Try " + strings.ToUpper(container) + " HELP."
	}
	if !sub.ArityOK(len(args)) {
		return nil, "ERR wrong number of arguments for '" + sub.Name + "' command"
	}
	return sub, ""
}

// truncateName is the %.128s Redis uses to quote subcommand names.
func truncateName(s string) string {
	if len(s) > 128 {
		return s[:128]
	}
	return s
}

// asciiLower lower-cases the ASCII letters of s only, as Redis's
// case-insensitive dictionaries compare.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
