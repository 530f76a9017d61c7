package script

import (
	"context"
	"sort"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
)

// library is a loaded function library.
type library struct {
	name  string
	code  string               // the code given to FUNCTION LOAD, shebang included
	funcs map[string]*function // by exact name
}

// function is a function registered by a library.
type function struct {
	name    string
	desc    string
	hasDesc bool
	flags   scriptFlags
	fn      *lua.LFunction
	lib     *library
}

// libCtx is a set of libraries with its function index (Redis's
// functionsLibCtx): the current one, or a temporary one FUNCTION RESTORE
// fills before joining it to the current one.
type libCtx struct {
	libs  map[string]*library
	funcs map[string]*function // lower-case name (Redis's dict is case-insensitive)
}

func newLibCtx() *libCtx {
	return &libCtx{libs: make(map[string]*library), funcs: make(map[string]*function)}
}

func (lc *libCtx) link(l *library) {
	lc.libs[l.name] = l
	for _, name := range sortedFuncNames(l) {
		f := l.funcs[name]
		k := asciiLower(f.name)
		if lc.funcs[k] == nil {
			lc.funcs[k] = f
		}
	}
}

func (lc *libCtx) unlink(l *library) {
	delete(lc.libs, l.name)
	for _, f := range l.funcs {
		k := asciiLower(f.name)
		if lc.funcs[k] != nil && lc.funcs[k].lib == l {
			delete(lc.funcs, k)
		}
	}
}

// loadCtx is the library FUNCTION LOAD is running.
type loadCtx struct {
	lib *library
	ctx context.Context
}

func (l *loadCtx) timedOut() bool { return l.ctx.Err() != nil }

// loadTimeout bounds the run of a library's code (Redis's LOAD_TIMEOUT_MS).
const loadTimeout = 500 * time.Millisecond

const errLibName = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"

// validName is functionsVerifyName.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// libMetadata is functionExtractLibMetaData: the engine and name of the
// "#!<engine> name=<name>" first line, and the code after it (which starts
// with the line feed, keeping line numbers).
func libMetadata(code string) (engine, name, body, msg string) {
	if !strings.HasPrefix(code, "#!") {
		return "", "", "", "Missing library metadata"
	}
	end := strings.IndexByte(cstr.CString(code), '\n')
	if end < 0 {
		return "", "", "", "Invalid library metadata"
	}
	parts, ok := splitArgs(code[:end])
	if !ok || len(parts) == 0 {
		return "", "", "", "Invalid library metadata"
	}
	engine = parts[0]
	if len(engine) >= 2 {
		engine = engine[2:]
	} else {
		engine = ""
	}
	haveName := false
	for _, p := range parts[1:] {
		if len(p) >= 5 && strings.EqualFold(p[:5], "name=") {
			if haveName {
				return "", "", "", "Invalid metadata value, name argument was given multiple times"
			}
			haveName = true
			name = p[5:]
			continue
		}
		return "", "", "", "Invalid metadata value given: " + cstr.CString(p)
	}
	if !haveName {
		return "", "", "", "Library name was not given"
	}
	return engine, name, code[end:], ""
}

// createLibrary is functionsCreateWithLibraryCtx: it compiles and runs the
// library code in the function interpreter and links the library into lc.
// It returns the library name, or the error message (without "ERR ").
func (e *Engine) createLibrary(code string, replace bool, lc *libCtx) (string, string) {
	engine, name, body, msg := libMetadata(code)
	if msg != "" {
		return "", msg
	}
	if !validName(cstr.CString(name)) {
		return "", errLibName
	}
	if !strings.EqualFold(cstr.CString(engine), "LUA") {
		return "", "Engine '" + engine + "' not found"
	}
	old := lc.libs[name]
	if old != nil && !replace {
		return "", "Library '" + name + "' already exists"
	}
	if old != nil {
		lc.unlink(old)
	}
	lib, msg := e.loadLibraryCode(name, code, body)
	if msg == "" && len(lib.funcs) == 0 {
		msg = "No functions registered"
	}
	if msg == "" {
		for _, fname := range sortedFuncNames(lib) {
			if lc.funcs[asciiLower(fname)] != nil {
				msg = "Function " + cstr.CString(fname) + " already exists"
				break
			}
		}
	}
	if msg != "" {
		if old != nil {
			lc.link(old)
		}
		return "", msg
	}
	lc.link(lib)
	return name, ""
}

func sortedFuncNames(l *library) []string {
	names := make([]string, 0, len(l.funcs))
	for n := range l.funcs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// loadLibraryCode runs body with the load-time globals and collects the
// functions it registers (luaEngineCreate).
func (e *Engine) loadLibraryCode(name, code, body string) (*library, string) {
	v := e.fvm
	L := v.L
	lib := &library{name: name, code: code, funcs: make(map[string]*function)}
	fn, msg := compileChunk(L, body, "@"+funcChunk, funcChunk)
	if fn == nil {
		return nil, "Error compiling function: " + msg
	}
	fn.Env = v.env
	ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
	defer cancel()
	v.load = &loadCtx{lib: lib, ctx: ctx}
	v.envMT.RawSetString("__index", v.loadAPI)
	L.SetContext(newRunContext(ctx, v))
	defer func() {
		L.RemoveContext()
		v.envMT.RawSetString("__index", v.globals)
		v.load = nil
		clear(v.insertOrder)
		clear(v.iterOrder)
		L.SetTop(0)
	}()
	L.Push(fn)
	if err := L.PCall(0, 0, v.pcallHandler()); err != nil {
		obj := errorObject(err)
		var m string
		if s, ok := toStringValue(obj); ok {
			m = "ERR " + s
		} else if t, ok := obj.(*lua.LTable); ok {
			m, _ = toStringValue(t.RawGetString("err"))
		}
		return nil, "Error registering functions: " + cstr.CString(m)
	}
	return lib, ""
}

// newLoadAPI builds the globals a library's code sees while FUNCTION LOAD
// runs it: only redis.register_function, redis.log, the log levels and the
// version, each missing name raising Redis's error.
func (v *luaVM) newLoadAPI() *lua.LTable {
	L := v.L
	r := L.NewTable()
	r.RawSetString("register_function", L.NewFunction(v.registerFunction))
	v.registerLog(r)
	registerVersion(r)
	v.setErrorMetatable(r)
	g := L.NewTable()
	g.RawSetString("redis", r)
	v.setErrorMetatable(g)
	p := v.protect(g)
	v.setGoEnv(g, map[*lua.LTable]bool{})
	return p
}

// registerFunction is redis.register_function, positional (name, callback)
// or named ({function_name=, callback=, flags=, description=}).
func (v *luaVM) registerFunction(L *lua.LState) int {
	ld := v.load
	if ld == nil {
		raiseError(L, "redis.register_function can only be called on FUNCTION LOAD command")
	}
	argc := L.GetTop()
	if argc < 1 || argc > 2 {
		raiseError(L, "wrong number of arguments to redis.register_function")
	}
	f := &function{lib: ld.lib}
	if argc == 2 {
		name, ok := toStringValue(L.Get(1))
		if !ok {
			raiseError(L, "first argument to redis.register_function must be a string")
		}
		cb, ok := L.Get(2).(*lua.LFunction)
		if !ok {
			raiseError(L, "second argument to redis.register_function must be a function")
		}
		f.name, f.fn = name, cb
	} else {
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			raiseError(L, "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		t = v.unwrap(t)
		haveName := false
		for _, k := range luaNextOrder(t, nil) {
			key, ok := toStringValue(k)
			if !ok {
				raiseError(L, "named argument key given to redis.register_function is not a string")
			}
			val := t.RawGet(k)
			switch strings.ToLower(cstr.CString(key)) {
			case "function_name":
				name, ok := toStringValue(val)
				if !ok {
					raiseError(L, "function_name argument given to redis.register_function must be a string")
				}
				f.name, haveName = name, true
			case "description":
				desc, ok := toStringValue(val)
				if !ok {
					raiseError(L, "description argument given to redis.register_function must be a string")
				}
				f.desc, f.hasDesc = desc, true
			case "callback":
				cb, ok := val.(*lua.LFunction)
				if !ok {
					raiseError(L, "callback argument given to redis.register_function must be a function")
				}
				f.fn = cb
			case "flags":
				ft, ok := val.(*lua.LTable)
				if !ok {
					raiseError(L, "flags argument to redis.register_function must be a table representing function flags")
				}
				flags, ok := v.readFlags(L, ft)
				if !ok {
					raiseError(L, "unknown flag given")
				}
				f.flags = flags
			default:
				raiseError(L, "unknown argument given to redis.register_function")
			}
		}
		if !haveName {
			raiseError(L, "redis.register_function must get a function name argument")
		}
		if f.fn == nil {
			raiseError(L, "redis.register_function must get a callback argument")
		}
	}
	if !validName(f.name) { // the whole Lua string, NUL bytes included (luaGetStringSds)
		raiseError(L, errLibName)
	}
	if ld.lib.funcs[f.name] != nil {
		raiseError(L, "Function already exists in the library")
	}
	ld.lib.funcs[f.name] = f
	return 0
}

// readFlags reads the flags array of register_function (1..n until nil,
// each a known flag name in any case).
func (v *luaVM) readFlags(L *lua.LState, t *lua.LTable) (scriptFlags, bool) {
	var flags scriptFlags
	for j := 1; ; j++ {
		val := L.GetTable(t, lua.LNumber(j))
		if val == lua.LNil {
			return flags, true
		}
		s, ok := toStringValue(val)
		if !ok {
			return 0, false
		}
		bit, ok := flagByName(s, true)
		if !ok {
			return 0, false
		}
		flags |= bit
	}
}

// FCall runs FCALL and FCALL_RO (args as received, arity already checked).
func (e *Engine) FCall(host Host, w *resp.Writer, args [][]byte) {
	if len(args) < 3 {
		w.Error("ERR wrong number of arguments for '" + strings.ToLower(string(args[0])) + "' command")
		return
	}
	ro := strings.EqualFold(string(args[0]), "fcall_ro")
	e.runMu.Lock()
	defer e.runMu.Unlock()
	f := e.funcs[asciiLower(cstr.CString(string(args[1])))]
	if f == nil {
		w.Error("ERR Function not found")
		return
	}
	numkeys, ok := cstr.ParseInt(args[2])
	if !ok {
		w.Error("ERR Bad number of keys provided")
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
	if f.flags&flagNoWrites == 0 && ro {
		w.Error("ERR Can not execute a script with write flag using *_ro command.")
		return
	}
	rc := e.fvm.newRun()
	*rc = runCtx{
		host:     host,
		proto:    2,
		readOnly: ro || f.flags&flagNoWrites != 0,
		allowOOM: f.flags&(flagAllowOOM|flagNoWrites) != 0,
		name:     f.name,
		args:     cloneArgs(args),
	}
	e.run(e.fvm, rc, f.fn, args[3:3+numkeys], args[3+numkeys:], w)
}

// current returns the current library context (the caller holds runMu).
func (e *Engine) current() *libCtx { return &libCtx{libs: e.libs, funcs: e.funcs} }

// Function runs FUNCTION LOAD, DELETE, FLUSH, LIST, DUMP, RESTORE, STATS
// (and KILL, delegated to Kill, and HELP); changed reports whether the set of
// libraries changed (the caller then persists Libraries()).
func (e *Engine) Function(w *resp.Writer, args [][]byte) (changed bool) {
	if len(args) < 2 {
		w.Error("ERR wrong number of arguments for 'function' command")
		return false
	}
	sub, msg := subcommand("function", args)
	if sub == nil {
		w.Error(msg)
		return false
	}
	switch sub.Name {
	case "function|stats":
		e.functionStats(w)
		return false
	case "function|kill":
		e.Kill(w, true)
		return false
	case "function|dump":
		w.Bulk(e.Libraries())
		return false
	case "function|help":
		writeHelp(w, args[0], functionHelp)
		return false
	}
	e.runMu.Lock()
	defer e.runMu.Unlock()
	switch sub.Name {
	case "function|load":
		return e.functionLoad(w, args)
	case "function|delete":
		l := e.libs[string(args[2])]
		if l == nil {
			w.Error("ERR Library not found")
			return false
		}
		e.current().unlink(l)
		e.librariesChanged()
		w.OK()
		return true
	case "function|flush":
		if len(args) > 3 {
			w.Error(subcommandSyntaxError("function", args))
			return false
		}
		if len(args) == 3 && !strings.EqualFold(string(args[2]), "sync") && !strings.EqualFold(string(args[2]), "async") {
			w.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
			return false
		}
		e.flushFunctions()
		w.OK()
		return true
	case "function|list":
		e.functionList(w, args)
		return false
	case "function|restore":
		return e.functionRestore(w, args)
	}
	w.Error(subcommandSyntaxError("function", args))
	return false
}

// subcommandSyntaxError is addReplySubcommandSyntaxError.
func subcommandSyntaxError(container string, args [][]byte) string {
	return "ERR unknown subcommand or wrong number of arguments for '" + truncateName(cstr.CString(string(args[1]))) + "'. Try " + strings.ToUpper(container) + " HELP."
}

func (e *Engine) functionLoad(w *resp.Writer, args [][]byte) bool {
	replace := false
	pos := 2
	for ; pos < len(args)-1; pos++ {
		if strings.EqualFold(string(args[pos]), "replace") {
			replace = true
			continue
		}
		w.Error("ERR Unknown option given: " + cstr.CString(string(args[pos])))
		return false
	}
	if pos >= len(args) {
		w.Error("ERR Function code is missing")
		return false
	}
	name, msg := e.createLibrary(string(args[pos]), replace, e.current())
	if msg != "" {
		w.Error("ERR " + msg)
		return false
	}
	e.librariesChanged()
	w.BulkString(name)
	return true
}

// flushFunctions drops every library and starts a fresh function
// interpreter (the caller holds runMu).
func (e *Engine) flushFunctions() {
	e.libs = make(map[string]*library)
	e.funcs = make(map[string]*function)
	old := e.fvm
	e.fvm = newVM(e, funcVM)
	old.close()
	e.librariesChanged()
}

// librariesChanged refreshes the snapshot read by FUNCTION STATS, DUMP and
// Libraries (the caller holds runMu).
func (e *Engine) librariesChanged() {
	snap := make([]libSnapshot, 0, len(e.libs))
	var size int64
	for _, l := range e.libs {
		snap = append(snap, libSnapshot{name: l.name, code: l.code, nfuncs: len(l.funcs)})
		size += int64(len(l.code))
	}
	sort.Slice(snap, func(i, j int) bool { return snap[i].name < snap[j].name })
	e.mu.Lock()
	e.snapshot = snap
	e.mu.Unlock()
	e.libraryMem.Store(size)
}

// functionList is FUNCTION LIST [WITHCODE] [LIBRARYNAME pattern]. Libraries
// and functions are listed by name (Redis lists them in hash-table order,
// which varies between runs).
func (e *Engine) functionList(w *resp.Writer, args [][]byte) {
	withCode := false
	var pattern []byte
	havePattern := false
	for i := 2; i < len(args); i++ {
		a := string(args[i])
		if !withCode && strings.EqualFold(a, "withcode") {
			withCode = true
			continue
		}
		if !havePattern && strings.EqualFold(a, "libraryname") {
			if i >= len(args)-1 {
				w.Error("ERR library name argument was not given")
				return
			}
			i++
			pattern, havePattern = []byte(cstr.CString(string(args[i]))), true
			continue
		}
		w.Error("ERR Unknown argument " + cstr.CString(a))
		return
	}
	names := make([]string, 0, len(e.libs))
	for n := range e.libs {
		if !havePattern || cstr.Match(pattern, []byte(n), true) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	w.Array(len(names))
	for _, n := range names {
		l := e.libs[n]
		if withCode {
			w.Map(4)
		} else {
			w.Map(3)
		}
		w.BulkString("library_name")
		w.BulkString(l.name)
		w.BulkString("engine")
		w.BulkString("LUA")
		w.BulkString("functions")
		fnames := sortedFuncNames(l)
		w.Array(len(fnames))
		for _, fn := range fnames {
			f := l.funcs[fn]
			w.Map(3)
			w.BulkString("name")
			w.BulkString(f.name)
			w.BulkString("description")
			if f.hasDesc {
				w.BulkString(f.desc)
			} else {
				w.Null()
			}
			w.BulkString("flags")
			n := 0
			for _, fl := range scriptFlagNames {
				if f.flags&fl.flag != 0 {
					n++
				}
			}
			w.Set(n)
			for _, fl := range scriptFlagNames {
				if f.flags&fl.flag != 0 {
					w.Simple(fl.name)
				}
			}
		}
		if withCode {
			w.BulkString("library_code")
			w.BulkString(l.code)
		}
	}
}

// functionStats is FUNCTION STATS; it never waits for a running script.
func (e *Engine) functionStats(w *resp.Writer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rc := e.cur
	if rc != nil && rc.eval {
		w.Error(errBusyEval)
		return
	}
	w.Map(2)
	w.BulkString("running_script")
	if rc == nil {
		w.Null()
	} else {
		w.Map(3)
		w.BulkString("name")
		w.BulkString(rc.name)
		w.BulkString("command")
		w.Array(len(rc.args))
		for _, a := range rc.args {
			w.Bulk(a)
		}
		w.BulkString("duration_ms")
		w.Int(time.Since(rc.start).Milliseconds())
	}
	nlibs, nfuncs := len(e.snapshot), 0
	for _, l := range e.snapshot {
		nfuncs += l.nfuncs
	}
	w.BulkString("engines")
	w.Map(1)
	w.BulkString("LUA")
	w.Map(2)
	w.BulkString("libraries_count")
	w.Int(int64(nlibs))
	w.BulkString("functions_count")
	w.Int(int64(nfuncs))
}
