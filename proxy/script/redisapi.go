package script

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"log/slog"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/script/lualib"
)

// The version scripts see in redis.REDIS_VERSION and REDIS_VERSION_NUM.
const (
	redisVersion    = "7.0.15"
	redisVersionNum = 0x0007000f
)

// Log levels of redis.log (Redis's LL_*).
const (
	llDebug = iota
	llVerbose
	llNotice
	llWarning
)

// Propagation flags of redis.set_repl (Redis's PROPAGATE_*).
const (
	propagateNone = 0
	propagateAOF  = 1
	propagateRepl = 2
)

// newRedisTable builds the redis table of the runtime globals: for EVAL with
// breakpoint, debug and replicate_commands, for functions without them.
func (v *luaVM) newRedisTable() *lua.LTable {
	L := v.L
	t := L.NewTable()
	fn := func(name string, f lua.LGFunction) { t.RawSetString(name, L.NewFunction(f)) }
	fn("call", func(L *lua.LState) int { return v.redisCall(L, true) })
	fn("pcall", func(L *lua.LState) int { return v.redisCall(L, false) })
	v.registerLog(t)
	registerVersion(t)
	fn("setresp", v.setResp)
	fn("sha1hex", sha1hexFn)
	fn("error_reply", errorReply)
	fn("status_reply", statusReply)
	fn("set_repl", v.setRepl)
	t.RawSetString("REPL_NONE", lua.LNumber(propagateNone))
	t.RawSetString("REPL_AOF", lua.LNumber(propagateAOF))
	t.RawSetString("REPL_SLAVE", lua.LNumber(propagateRepl))
	t.RawSetString("REPL_REPLICA", lua.LNumber(propagateRepl))
	t.RawSetString("REPL_ALL", lua.LNumber(propagateAOF|propagateRepl))
	fn("acl_check_cmd", v.aclCheckCmd)
	if v.kind == evalVM {
		fn("breakpoint", func(L *lua.LState) int {
			L.Push(lua.LFalse) // no debugging session is ever active
			return 1
		})
		fn("debug", func(L *lua.LState) int { return 0 })
		fn("replicate_commands", func(L *lua.LState) int {
			L.Push(lua.LTrue)
			return 1
		})
	}
	return t
}

func (v *luaVM) registerLog(t *lua.LTable) {
	t.RawSetString("log", v.L.NewFunction(v.redisLog))
	t.RawSetString("LOG_DEBUG", lua.LNumber(llDebug))
	t.RawSetString("LOG_VERBOSE", lua.LNumber(llVerbose))
	t.RawSetString("LOG_NOTICE", lua.LNumber(llNotice))
	t.RawSetString("LOG_WARNING", lua.LNumber(llWarning))
}

func registerVersion(t *lua.LTable) {
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(redisVersionNum))
	t.RawSetString("REDIS_VERSION", lua.LString(redisVersion))
}

// raiseError raises Redis's error table for msg (luaPushError + luaError).
func raiseError(L *lua.LState, msg string) {
	L.Error(errorTable(L, msg, false), 0)
}

// scriptArgs converts the arguments of redis.call and acl_check_cmd as
// luaArgsToRedisArgv does; on failure it returns the error message. The
// arguments live in the interpreter's scratch buffers (no allocation once
// they have grown): they are valid until the next call of scriptArgs, which
// is after the command has run (a command cannot run a script). Each
// argument's capacity ends at its length, so appending to one copies it.
func (v *luaVM) scriptArgs(L *lua.LState) ([][]byte, string) {
	argc := L.GetTop()
	if argc == 0 {
		return nil, "Please specify at least one argument for this redis lib call"
	}
	buf, ends := v.argBuf[:0], v.argEnds[:0]
	for j := 1; j <= argc; j++ {
		switch x := L.Get(j).(type) {
		case lua.LNumber:
			buf = cstr.AppendG(buf, float64(x), 17)
		case lua.LString:
			buf = append(buf, x...)
		default:
			return nil, "Lua redis lib command arguments must be strings or integers"
		}
		ends = append(ends, len(buf))
	}
	args := v.argv[:0]
	start := 0
	for _, end := range ends {
		args = append(args, buf[start:end:end])
		start = end
	}
	v.argBuf, v.argEnds, v.argv = buf, ends, args
	return args, ""
}

// maxArgScratch bounds the argument buffer an interpreter keeps between
// runs: a script that passed a large value once does not hold its memory.
const maxArgScratch = 64 << 10

// releaseArgs drops the arguments of the last call (at a run's end), and
// the buffer if it grew large.
func (v *luaVM) releaseArgs() {
	clear(v.argv[:cap(v.argv)])
	v.argv = v.argv[:0]
	if cap(v.argBuf) > maxArgScratch {
		v.argBuf = nil
	}
}

// redisCall is redis.call (raise true) and redis.pcall.
func (v *luaVM) redisCall(L *lua.LState, raise bool) int {
	rc := v.run
	if rc == nil {
		raiseError(L, "redis.call/pcall can only be called inside a script invocation")
	}
	args, msg := v.scriptArgs(L)
	if msg != "" {
		t := errorTable(L, msg, false)
		if raise {
			L.Error(t, 0)
		}
		L.Push(t)
		return 1
	}
	L.SetTop(0)
	cmd, msg := v.checkCall(rc, args)
	if msg != "" {
		rc.host.Rejected(cmd, msg)
		t := errorTable(L, msg, true)
		if raise {
			L.Error(t, 0)
		}
		L.Push(t)
		return 1
	}
	// Once dirty, a script cannot be killed (Kill refuses it) and stays
	// dirty: only its first write takes Engine.mu. (dirty is written by
	// this goroutine only.)
	if cmd.Is(cmdtable.FlagWrite) && !rc.dirty && v.eng.beforeWrite(rc) {
		L.Error(errorTable(L, "-"+errKilled, false), 0)
	}
	reply := rc.host.Call(cmd, args, rc.proto)
	val, n, err := replyToLua(L, reply, v.recordOrder)
	if err != nil || n != len(reply) {
		v.eng.log.Warn("script: malformed reply from host", "command", string(args[0]), "reply", truncate(reply, 64))
		val = errorTable(L, "Unexpected reply to command called from script", false)
		if raise {
			L.Error(val, 0)
		}
	}
	if raise && len(reply) > 0 && reply[0] == '-' {
		L.Error(val, 0)
	}
	L.Push(val)
	return 1
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

// checkCall performs scriptCall's checks on a command a script calls and
// returns its table entry (nil if unknown) and, if it is refused, the
// error message.
func (v *luaVM) checkCall(rc *runCtx, args [][]byte) (*cmdtable.Command, string) {
	cmd := cmdtable.LookupArgs(args)
	if cmd == nil {
		return nil, "Unknown Redis command called from script"
	}
	if !cmd.ArityOK(len(args)) {
		return cmd, "Wrong number of args calling Redis command from script"
	}
	if cmd.Is(cmdtable.FlagNoScript) {
		return cmd, "This Redis command is not allowed from script"
	}
	// As scriptVerifyACL: the calling user's permissions.
	if msg := rc.host.ACLCheck(cmd, args, true); msg != "" {
		return cmd, msg
	}
	// As scriptVerifyWriteCommandAllow: a read-only script may not call a
	// may-replicate command (PUBLISH, ...) any more than a write, so that
	// it can run during CLIENT PAUSE WRITE.
	if rc.readOnly && cmd.MayReplicate() {
		return cmd, "Write commands are not allowed from read-only scripts."
	}
	if cmd.Is(cmdtable.FlagWrite) && rc.readOnly {
		return cmd, "Write commands are not allowed from read-only scripts."
	}
	if cmd.Is(cmdtable.FlagWrite) {
		if msg := rc.host.WriteRefusal(); msg != "" {
			return cmd, msg
		}
	}
	// As scriptVerifyOOM: only before the script's first write, so that
	// a script is never cut in half. (dirty is written by this goroutine.)
	if cmd.Is(cmdtable.FlagDenyOOM) && !rc.allowOOM && !rc.dirty && rc.host.OutOfMemory() {
		return cmd, ErrOOM
	}
	return cmd, ""
}

// ErrOOM is Redis's reply to a command that may grow memory while the
// server is over its memory budget.
const ErrOOM = "-OOM command not allowed when used memory > 'maxmemory'."

// DenyOOM reports whether EVAL, EVALSHA, FCALL or their _RO forms (args as
// received, arity checked) are refused while the server is out of memory,
// as Redis's getCommandFlags says: a script that declared flags is denyoom
// unless it declared allow-oom or no-writes; a script without a shebang,
// or one not found, is not (its calls are checked one by one instead).
// It waits for a running script (it reads the caches under runMu).
func (e *Engine) DenyOOM(args [][]byte) bool {
	flags, declared := e.declaredFlags(args)
	return declared && flags&(flagAllowOOM|flagNoWrites) == 0
}

// AllowStale reports whether EVAL, EVALSHA, FCALL or their _RO forms
// (args as received) may run on a stale replica, as Redis's
// getCommandFlags says: only a script that declared allow-stale.
func (e *Engine) AllowStale(args [][]byte) bool {
	flags, declared := e.declaredFlags(args)
	return declared && flags&flagAllowStale != 0
}

// declaredFlags returns the flags the script args run declared, and false
// if it declared none (no shebang, or not found).
func (e *Engine) declaredFlags(args [][]byte) (scriptFlags, bool) {
	if len(args) < 2 {
		return 0, false
	}
	name := asciiLower(string(args[0]))
	switch {
	case strings.HasPrefix(name, "fcall"):
		e.runMu.Lock()
		defer e.runMu.Unlock()
		if f := e.funcs[asciiLower(cstr.CString(string(args[1])))]; f != nil {
			return f.flags, true
		}
		return 0, false
	case strings.HasPrefix(name, "eval"):
		evalsha := strings.HasPrefix(name, "evalsha")
		if evalsha && len(args[1]) != 40 {
			return 0, false
		}
		sha := asciiLower(string(args[1]))
		if !evalsha {
			sha = sha1hex(args[1])
		}
		e.runMu.Lock()
		sc := e.scripts[sha]
		e.runMu.Unlock()
		switch {
		case sc != nil:
			return sc.flags, !sc.compat
		case evalsha:
			return 0, false
		}
		f, compat, _, msg := parseShebang(args[1])
		return f, msg == "" && !compat
	}
	return 0, false
}

// redisLog is redis.log(level, message...).
func (v *luaVM) redisLog(L *lua.LState) int {
	argc := L.GetTop()
	if argc < 2 {
		raiseError(L, "redis.log() requires two arguments or more.")
	}
	lv, ok := toNumber(L.Get(1))
	if !ok {
		raiseError(L, "First argument must be a number (log level).")
	}
	level := int(lv)
	if level < llDebug || level > llWarning {
		raiseError(L, "Invalid debug level.")
	}
	var msg []byte
	for j := 2; j <= argc; j++ {
		if s, ok := toStringValue(L.Get(j)); ok {
			if j != 2 {
				msg = append(msg, ' ')
			}
			msg = append(msg, s...)
		}
	}
	var sl slog.Level
	switch level {
	case llDebug, llVerbose:
		sl = slog.LevelDebug
	case llNotice:
		sl = slog.LevelInfo
	default:
		sl = slog.LevelWarn
	}
	v.eng.log.Log(context.Background(), sl, string(msg), "source", "redis.log")
	return 0
}

// toNumber is lua_tonumber: numbers and numeric strings.
func toNumber(v lua.LValue) (float64, bool) {
	switch x := v.(type) {
	case lua.LNumber:
		return float64(x), true
	case lua.LString:
		return lualib.StrToNumber(string(x))
	}
	return 0, false
}

// setResp is redis.setresp(2|3).
func (v *luaVM) setResp(L *lua.LState) int {
	rc := v.run
	if rc == nil {
		raiseError(L, "redis.setresp can only be called inside a script invocation")
	}
	if L.GetTop() != 1 {
		raiseError(L, "redis.setresp() requires one argument.")
	}
	n, _ := toNumber(L.Get(1))
	p := int(toLongLong(n))
	if p != 2 && p != 3 {
		raiseError(L, "RESP version must be 2 or 3.")
	}
	rc.proto = p
	return 0
}

// setRepl is redis.set_repl(flags): validated, then ignored (Spillway does
// not replicate scripts' effects).
func (v *luaVM) setRepl(L *lua.LState) int {
	if v.run == nil {
		raiseError(L, "redis.set_repl can only be called inside a script invocation")
	}
	if L.GetTop() != 1 {
		raiseError(L, "redis.set_repl() requires two arguments.")
	}
	n, _ := toNumber(L.Get(1))
	if int(toLongLong(n))&^(propagateAOF|propagateRepl) != 0 {
		raiseError(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
	}
	return 0
}

// aclCheckCmd is redis.acl_check_cmd: whether the calling user may run
// the command (nothing is logged); unknown commands raise.
func (v *luaVM) aclCheckCmd(L *lua.LState) int {
	if v.run == nil {
		raiseError(L, "redis.acl_check_cmd can only be called inside a script invocation")
	}
	args, msg := v.scriptArgs(L)
	if msg != "" {
		raiseError(L, msg)
	}
	cmd := cmdtable.LookupArgs(args)
	if cmd == nil {
		raiseError(L, "Invalid command passed to redis.acl_check_cmd()")
	}
	L.Push(lua.LBool(v.run.host.ACLCheck(cmd, args, false) == ""))
	return 1
}

// sha1hexFn is redis.sha1hex(s).
func sha1hexFn(L *lua.LState) int {
	if L.GetTop() != 1 {
		raiseError(L, "wrong number of arguments")
	}
	s, _ := toStringValue(L.Get(1))
	L.Push(lua.LString(sha1hex([]byte(s))))
	return 1
}

// sha1hex returns the lower-case hex SHA1 of b.
func sha1hex(b []byte) string {
	h := sha1.Sum(b)
	return hex.EncodeToString(h[:])
}

// sha1Into writes the lower-case hex SHA1 of b into dst.
func sha1Into(dst *[40]byte, b []byte) {
	h := sha1.Sum(b)
	hex.Encode(dst[:], h[:])
}

// lowerInto copies src into dst (of the same length) with its ASCII
// letters lower-cased, as asciiLower does.
func lowerInto(dst, src []byte) {
	for i, c := range src {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
}

// errorReply is redis.error_reply(msg): {err=msg} with Redis's code rules.
func errorReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errorTable(L, "wrong number or type of arguments", false))
		return 1
	}
	msg := string(s)
	if len(msg) == 0 || msg[0] != '-' {
		msg = "-" + msg
	}
	L.Push(errorTable(L, msg, false))
	return 1
}

// statusReply is redis.status_reply(msg): {ok=msg}.
func statusReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errorTable(L, "wrong number or type of arguments", false))
		return 1
	}
	t := L.CreateTable(0, 1)
	t.RawSetString("ok", s)
	L.Push(t)
	return 1
}

// recordOrder remembers the insertion order of a table built from a reply.
func (v *luaVM) recordOrder(t *lua.LTable, keys []lua.LValue) {
	if len(keys) > 1 {
		v.insertOrder[t] = keys
	}
}
