package script

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/proxy/resp"
)

// The differential tests run each case twice against one redis-server:
// once as plain commands to the server (its own EVAL, FCALL, FUNCTION ...),
// once with the scripting commands handled by an Engine whose Host forwards
// redis.call to that server. The dataset and the server's script and
// function caches are flushed before each run; every reply must be
// byte-identical.

// step is one command of a case; the scripting commands (EVAL*, FCALL*,
// SCRIPT, FUNCTION) go to the Engine in the second run, the others to the
// server as they are.
type step []string

// diffCase is a sequence of commands run by a client speaking proto
// (0: run the case with RESP2 and with RESP3).
type diffCase struct {
	name  string
	proto int
	steps []step
}

// ev builds an EVAL; a first argument of N '#' characters makes the N
// following arguments keys.
func ev(script string, keysAndArgs ...string) step {
	n := 0
	var rest []string
	if len(keysAndArgs) > 0 && strings.HasPrefix(keysAndArgs[0], "#") {
		n = len(keysAndArgs[0])
		rest = keysAndArgs[1:]
	} else {
		rest = keysAndArgs
	}
	return append(step{"EVAL", script, itoa(n)}, rest...)
}

// differ runs cases against one server and one engine per run.
type differ struct {
	t    *testing.T
	srv  *redisServer
	data *rconn // resets the server between runs
	host *redisHost
	// keepEngine reuses one engine (and the server's state) across cases.
	eng *Engine
}

func newDiffer(t *testing.T) *differ {
	srv := startRedis(t)
	d := &differ{t: t, srv: srv, data: srv.dial(t, 2)}
	d.host = newRedisHost(t, srv)
	return d
}

func (d *differ) reset() {
	d.data.do("FLUSHALL")
	d.data.do("SCRIPT", "FLUSH")
	d.data.do("FUNCTION", "FLUSH")
}

func isScripting(name string) bool {
	switch strings.ToUpper(name) {
	case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO", "SCRIPT", "FUNCTION":
		return true
	}
	return false
}

// engineDo runs one command the way the proxy would route it.
func engineDo(e *Engine, h Host, proto int, args [][]byte) []byte {
	w := &resp.Writer{Proto: proto}
	switch strings.ToUpper(string(args[0])) {
	case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO":
		e.Eval(h, w, args)
	case "FCALL", "FCALL_RO":
		e.FCall(h, w, args)
	case "SCRIPT":
		e.Script(w, args)
	case "FUNCTION":
		e.Function(w, args)
	}
	return w.Buf
}

func toArgs(s step) [][]byte {
	out := make([][]byte, len(s))
	for i, a := range s {
		out[i] = []byte(a)
	}
	return out
}

func (d *differ) run(c diffCase) {
	d.t.Helper()
	protos := []int{2, 3}
	if c.proto != 0 {
		protos = []int{c.proto}
	}
	for _, proto := range protos {
		d.reset()
		caller := d.srv.dial(d.t, proto)
		want := make([][]byte, len(c.steps))
		for i, s := range c.steps {
			want[i] = caller.doBytes(toArgs(s))
		}
		caller.c.Close()
		d.reset()
		eng := d.eng
		if eng == nil {
			eng = New(Options{})
		}
		for i, s := range c.steps {
			args := toArgs(s)
			var got []byte
			if isScripting(s[0]) {
				// Like Redis's script client, the host starts every
				// script in the caller's database.
				d.host.conns[2].do("SELECT", "0")
				d.host.conns[3].do("SELECT", "0")
				got = engineDo(eng, d.host, proto, args)
			} else {
				got = d.host.conns[proto].doBytes(args)
			}
			if !bytes.Equal(got, want[i]) {
				d.t.Errorf("%s (RESP%d) step %d %q:\n redis: %q\n   ours: %q", c.name, proto, i, shorten(s), want[i], got)
			}
		}
	}
}

func shorten(s step) []string {
	out := make([]string, len(s))
	for i, a := range s {
		if len(a) > 120 {
			a = a[:120] + "..."
		}
		out[i] = a
	}
	return out
}

func TestDiffEvalBasics(t *testing.T) {
	d := newDiffer(t)
	cases := []diffCase{
		{name: "int", steps: []step{ev("return 1")}},
		{name: "string", steps: []step{ev("return 'hello'")}},
		{name: "array holes", steps: []step{ev("return {1,2,3,nil,4}")}},
		{name: "nested", steps: []step{ev("return {1,{2,{3,'x'}},'y'}")}},
		{name: "float truncation", steps: []step{ev("return {3.99, -3.99, 0.5, -0.5, 1e20, -1e20, 0/0, 1/0}")}},
		{name: "bools", steps: []step{ev("return {true, false, nil, 1}")}},
		{name: "true", steps: []step{ev("return true")}},
		{name: "false", steps: []step{ev("return false")}},
		{name: "nil", steps: []step{ev("return nil")}},
		{name: "no return", steps: []step{ev("local x = 1")}},
		{name: "status", steps: []step{ev("return {ok='fine'}")}},
		{name: "status crlf", steps: []step{ev("return {ok='a'..string.char(13,10)..'b'}")}},
		{name: "status nul", steps: []step{ev("return redis.status_reply('a'..string.char(0)..'b')")}},
		{name: "err table", steps: []step{ev("return {err='My error'}")}},
		{name: "err table dash", steps: []step{ev("return {err='-a b'}")}},
		{name: "err table empty", steps: []step{ev("return {err=''}")}},
		{name: "err table newline", steps: []step{ev("return {err='a'..string.char(10)..'b'}")}},
		{name: "err number", steps: []step{ev("return {err=1}")}},
		{name: "ok number", steps: []step{ev("return {ok=1}")}},
		{name: "err and ok", steps: []step{ev("return {err='x', ok='y'}")}},
		{name: "array with err", steps: []step{ev("return {1, err='x'}")}},
		{name: "keys argv", steps: []step{ev("return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}", "##", "k1", "k2", "a1", "a2")}},
		{name: "double", steps: []step{ev("return {double=1.5}")}},
		{name: "double string", steps: []step{ev("return {double='1.5'}")}},
		{name: "double special", steps: []step{ev("return {{double=0/0}, {double=1/0}, {double=-1/0}, {double=1e300}, {double=3}, {double=0.1}}")}},
		{name: "double neg zero", steps: []step{ev("return {double=-0.0}")}},
		{name: "big number", steps: []step{ev("return {big_number='123456789012345678901234567890'}")}},
		{name: "big number crlf", steps: []step{ev("return {big_number='1'..string.char(13,10)..'2'}")}},
		{name: "verbatim", steps: []step{ev("return {verbatim_string={format='txt', string='hi'}}")}},
		{name: "verbatim short format", steps: []step{ev("return {verbatim_string={format='x', string='hi'}}")}},
		{name: "map one", steps: []step{ev("return {map={a=1}}")}},
		{name: "map built", steps: []step{ev("local t = {} t.a=1 t.b='x' t.c={1,2} t[1]=5 t[2.5]=true t[true]=1 return {map=t}")}},
		// Known difference: constructors with several keys ({map={a=1,
		// b=2, c=3}}) preallocate C Lua's hash part, which can order
		// colliding keys differently from the one-by-one insertion
		// luaNextOrder models; integer keys are assumed inserted first.
		{name: "map many", steps: []step{ev("local t = {} for i=1,10 do t[i*3] = i end for i=1,40 do t['k'..i] = i end return {map=t}")}},
		{name: "pairs order", steps: []step{ev("local t = {} for i=1,30 do t['k'..i] = i end local r = {} for k, v in pairs(t) do r[#r+1] = k end return r")}},
		{name: "pairs mixed", steps: []step{ev("local t = {} for i=1,5 do t[i] = i end t[100] = 1 for i=1,10 do t['x'..i] = i end t[2.5] = 2 local r = {} for k, v in pairs(t) do r[#r+1] = tostring(k) end return r")}},
		{name: "next first", steps: []step{ev("local t = {} t.b = 1 t.a = 2 t.c = 3 return next(t)")}},
		{name: "pairs with nil assignment", steps: []step{ev("local t = {} for i=1,10 do t['k'..i] = i end for k in pairs(t) do t[k] = nil end return next(t) == nil")}},
		{name: "map constructor two", steps: []step{ev("return {map={alpha=1, beta='x'}}")}},
		{name: "set many", steps: []step{ev("local t = {} for i=1,40 do t['m'..(i*7)] = true end return {set=t}")}},
		{name: "set", steps: []step{ev("return {set={a=true, b=true, c=true}}")}},
		{name: "setresp bools", steps: []step{ev("redis.setresp(3) return {true, false}")}},
		{name: "setresp bool true", steps: []step{ev("redis.setresp(3) return true")}},
		{name: "setresp bool false", steps: []step{ev("redis.setresp(3) return false")}},
		{name: "neg zero", steps: []step{ev("return -0.0")}},
		{name: "binary", steps: []step{ev("return 'a'..string.char(0)..'b'")}},
	}
	for _, c := range cases {
		d.run(c)
	}
}

func TestDiffEvalErrors(t *testing.T) {
	d := newDiffer(t)
	scripts := []string{
		// error() with strings, numbers, tables, levels
		"error('boom')",
		"error('boom', 0)",
		"error('boom', 2)",
		"error(12)",
		"error()",
		"error(nil)",
		"error(true)",
		"error({err='MY x'})",
		"error({err='ERR a'}, 0)",
		"error({err='-X y'})",
		"error({err=12})",
		"error({err='x', source='s', line=5})",
		"error('a'..string.char(10)..'b')",
		"error('a'..string.char(0)..'b')",
		"error({err='X'..string.char(13,10)..'y'})",
		"error(redis.error_reply('MY e'))",
		"return error('x')",
		"local function f() error('in f') end f()",
		"local function f() error('in f', 2) end\nf()",
		"local function f()\n  local x = nil\n  return x.y\nend\nreturn f()",
		"\n\n\nerror('line 4')",
		// runtime errors
		"local a = nil; return a.b",
		"return nil + 1",
		"local a; return a()",
		"return xx()",
		"return 1 < 'a'",
		"return 1 > 'a'",
		"return {} .. 'a'",
		"local t = {} return t .. 'a'",
		"local s = 'x' local n = nil return s .. n",
		"return #nil",
		"local t = {} t.x.y = 1",
		"local t = {} return t.a.b",
		"local t = {} t.f()",
		"return redis.nofn()",
		"return ('x'):bad()",
		"local s='a' return s+1",
		"return KEYS[1]+1",
		"return -{}",
		"local t = {} return -t",
		"return 2^{}",
		"return {} < {}",
		"return 1 < {}",
		"local up = nil; local function f() return up.x end return f()",
		"local up = nil; local function f() return up() end return f()",
		"local t = {} t[nil] = 1",
		"for i = 1, 'x' do end",
		"for k, v in nil do end",
		"local a = {} return a < 1",
		"local x = 'abc' .. {} ",
		"local n = 5 return n.x",
		"local n = 5 n.x = 1",
		"return math.floor('x')",
		"return string.sub()",
		"return string.rep()",
		"return tostring()",
		"return ('x'):rep()",
		"return ('x'):rep('y')",
		"return table.concat({}, 1, 2, 3)",
		"return setmetatable(1, {})",
		"return rawget(1)",
		"return {pcall(string.rep)}",
		"return {pcall(error)}",
		"return {pcall()}",
		"return {pcall(1)}",
		"return select('#', pcall(error, 'x'))",
		"return {pcall(error,'x')}",
		"return {pcall(error,{err='e'})}",
		"return {pcall(error,{err=5})}",
		"return {pcall(function() local a; a.b=1 end)}",
		"local ok, e = pcall(error, {x=1}) return {tostring(ok), type(e)}",
		"return {xpcall(function() error('x') end, function(e) return 'h:'..e end)}",
		"return {xpcall(function() error({err='x'}) end, function(e) return e end)}",
		"local ok, e = xpcall(function() error({err='x'}) end, function(e) return e end) return type(e)",
		"local ok,e = pcall(function() local x; x() end) return e",
		"local ok, e = pcall(redis.call, 'nosuch') return {tostring(ok), type(e), e}",
		"assert(false)",
		"assert(false, 'custom')",
		"assert(nil, 12)",
		"return assert(1, 2)",
		"local x = 'a' + 1",
		"return ('10' + 5)",
		"return '3' * '4'",
		"return 10 % 3, 2^10",
		"return 7 / 2",
		"return math.huge",
		"return -math.huge",
		"return {math.max(1, 5, 3), math.min(4, 2), math.abs(-3), math.fmod(7, 3), math.floor(2.7), math.ceil(2.1)}",
		"return {string.format('%d %s %5.2f %x', 42, 'hi', 3.14159, 255)}",
		"return tostring(1/3)",
		"return tostring(1e15)",
		"return tostring(1e100)",
		"return tostring(123456789012)",
		"return tostring(0.1)",
		"return tostring(-0.0)",
		"return tostring(1/0) .. tostring(-1/0)",
		"return tonumber('0x10')",
		"return tonumber('  12  ')",
		"return tonumber('1e2')",
		"return tonumber('abc')",
		"return tonumber('10', 2)",
		"return type(tonumber('inf'))",
		"return string.len('hello')",
		"return {string.byte('ABC', 1, 3)}",
		"return string.char(72, 105)",
		"return string.upper('abc') .. string.lower('DEF')",
		"return {string.find('hello world', 'wor')}",
		"return {string.find('hello', 'l+')}",
		"return {string.match('key:123', '(%a+):(%d+)')}",
		"return string.gsub('hello world', 'o', '0')",
		"return {string.gsub('abc', '%w', '%0%0')}",
		"local t = {} for w in string.gmatch('one two three', '%a+') do t[#t+1] = w end return t",
		"local t = {} for w in string.gfind('one two', '%a+') do t[#t+1] = w end return t",
		"return string.reverse('abc')",
		"return string.rep('ab', 3)",
		"return string.sub('hello', 2, -2)",
		"return string.format('%q', 'a\\nb\"c')",
		"return string.format('%5s|%-5s|', 'a', 'b')",
		"return string.format('%g %g %g', 1e20, 0.1, 100)",
		"return string.format('%c%c', 65, 66)",
		"return string.format('%o %X %e', 8, 255, 12345.678)",
		"return string.format('%.3f', 2/3)",
		"return string.format('%s', 1/3)",
		"return string.format('%d', 3.7)",
		"return string.format('%i', -3)",
		"return string.format('%%')",
		"local t = {3,1,2} table.sort(t) return t",
		"local t = {3,1,2} table.sort(t, function(a,b) return a > b end) return t",
		"local t = {1,2,3} table.insert(t, 4) table.insert(t, 1, 0) return t",
		"local t = {1,2,3} return {table.remove(t), table.remove(t, 1), t[1]}",
		"return table.concat({1,2,3}, ',')",
		"return table.concat({'a','b','c'}, '-', 2, 3)",
		"return table.getn({1,2,3})",
		"return table.maxn({1,2,nil,4})",
		"local r = {} table.foreach({a=1}, function(k, v) r[#r+1] = k..v end) return r",
		"local r = {} table.foreachi({5,6}, function(i, v) r[#r+1] = i..':'..v end) return r",
		"return table.foreachi({5,6}, function(i, v) if v == 6 then return i end end)",
		"table.setn({}, 1)",
		"return {unpack({1,2,3})}",
		"return {unpack({1,2,3}, 2)}",
		"return select(2, 'a', 'b', 'c')",
		"return select('#', 1, nil, 3)",
		"return select(-1, 'a', 'b')",
		"return type(coroutine.create(function() end))",
		"local co = coroutine.create(function(a) local b = coroutine.yield(a+1) return b*2 end) local _, x = coroutine.resume(co, 1) local _, y = coroutine.resume(co, 10) return {x, y, coroutine.status(co)}",
		"local f = coroutine.wrap(function() coroutine.yield(1) coroutine.yield(2) end) return {f(), f()}",
		"return {rawequal(1, 1), rawequal({}, {})}",
		"local t = setmetatable({}, {__index=function(t,k) return k..'!' end}) return t.x",
		"local t = setmetatable({}, {__call=function(self, a) return a*2 end}) return t(21)",
		"local t = setmetatable({}, {__add=function(a, b) return 99 end}) return t + 1",
		"local t = setmetatable({}, {__concat=function(a, b) return 'cc' end}) return t .. 'x'",
		"local t = setmetatable({}, {__eq=function() return true end}) return t == setmetatable({}, getmetatable(t))",
		"local t = setmetatable({}, {__tostring=function() return 'T!' end}) return tostring(t)",
		"return getmetatable('').__index == string",
		"local f = loadstring('return 1 + 1') return f()",
		"local f = loadstring('return ...') return f(7)",
		"return {loadstring('x = ')}",
		"return {loadstring('error(\"in chunk\")')}",
		"local f = loadstring('local a = nil; return a.b') return f()",
		"local f, e = loadstring(1) return {type(f), e}",
		"return type(load(function() return nil end))",
		"return gcinfo() > 0",
		"return type(collectgarbage('count'))",
		"return collectgarbage()",
		"return _VERSION",
		"return redis.sha1hex('')",
		"return redis.sha1hex('abc')",
		"return redis.sha1hex(123)",
		"return redis.sha1hex()",
		"return redis.sha1hex(nil)",
		"return redis.sha1hex({})",
		"return redis.sha1hex('a', 'b')",
		"return redis.error_reply('x')",
		"return redis.error_reply('-x y')",
		"return redis.error_reply('')",
		"return redis.error_reply('-')",
		"return redis.error_reply('-ERR')",
		"return redis.error_reply('MY x y')",
		"return redis.error_reply(1)",
		"return redis.error_reply()",
		"return {redis.error_reply(1)}",
		"return redis.error_reply('a'..string.char(10)..'b')",
		"return redis.error_reply('x'..string.char(13,10))",
		"return redis.error_reply(string.char(13,10)..'x'..string.char(13,10))",
		"return redis.status_reply()",
		"return redis.status_reply('x')",
		"return redis.status_reply(1)",
		"local e = redis.error_reply('MY x') local t={} for k,v in pairs(e) do t[#t+1]=k..'='..tostring(v) end return t",
		"return redis.REDIS_VERSION",
		"return redis.REDIS_VERSION_NUM",
		"return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}",
		"return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}",
		"redis.log(redis.LOG_WARNING, 'hello', 'world', 1, {}) return 1",
		"redis.log(redis.LOG_DEBUG, 'dbg') return 1",
		"redis.log(redis.LOG_WARNING) return 1",
		"redis.log('x', 'y') return 1",
		"redis.log('3', 'y') return 1",
		"redis.log(7, 'y') return 1",
		"redis.log(-1, 'y') return 1",
		"return redis.setresp(2)",
		"redis.setresp() return 1",
		"redis.setresp(4) return 1",
		"redis.setresp('3') return 1",
		"redis.setresp(1, 2) return 1",
		"redis.setresp(2.9) return 1",
		"return redis.set_repl(redis.REPL_ALL)",
		"redis.set_repl() return 1",
		"redis.set_repl(8) return 1",
		"redis.set_repl('x') return 1",
		"return redis.replicate_commands()",
		"return redis.breakpoint()",
		"return redis.debug('x')",
		"return redis.acl_check_cmd('set', 'k', 'v')",
		"return redis.acl_check_cmd('nosuch')",
		"return redis.acl_check_cmd()",
		"return redis.acl_check_cmd({})",
		"return redis.acl_check_cmd('config', 'get')",
		"return redis.acl_check_cmd('config', 'nosub')",
	}
	for _, s := range scripts {
		d.run(diffCase{name: s, steps: []step{ev(s)}})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
