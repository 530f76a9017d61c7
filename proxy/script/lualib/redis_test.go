package lualib

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// This file holds the test harness: a real redis-server 7.0 started once
// per test binary, a minimal RESP2 client, a gopher-lua state with this
// package's libraries, and the conversion of a script's result to a RESP2
// reply the way Redis converts it. Differential tests run the same script
// body on both sides and compare the replies.

// prelude is prepended (on the same line, so errors stay at line 1) to every
// script body run by the differential tests, on both sides. Its helpers turn
// values into strings that survive the trip through RESP unchanged:
// N formats a number exactly, H hex-encodes a string, T dumps any value
// (table keys sorted), R dumps all its arguments, P pcalls a function and
// dumps the outcome.
const prelude = `local N, H, T, R, P, PR ` +
	`N = function(x) if x ~= x then return 'nan' elseif x == 1/0 then return 'inf' elseif x == -1/0 then return '-inf' end return string.format('%.17g', x) end ` +
	`H = function(s) return (string.gsub(s, '.', function(c) return string.format('%02x', string.byte(c)) end)) end ` +
	`T = function(v) local t = type(v) ` +
	`if t == 'string' then return 's:' .. H(v) elseif t == 'number' then return 'n:' .. N(v) ` +
	`elseif t == 'boolean' then return 'b:' .. (v and 'true' or 'false') elseif t == 'nil' then return 'nil' ` +
	`elseif t == 'userdata' then if v == cjson.null then return 'null' end return 'userdata' ` +
	`elseif t == 'table' then local ks = {} for k in pairs(v) do ks[#ks + 1] = {T(k), k} end ` +
	`table.sort(ks, function(a, b) return a[1] < b[1] end) local out = {} ` +
	`for i = 1, #ks do out[i] = ks[i][1] .. '=' .. T(v[ks[i][2]]) end return '{' .. table.concat(out, ',') .. '}' end return t end ` +
	`R = function(...) local n = select('#', ...) local out = {} for i = 1, n do out[i] = T((select(i, ...))) end return n .. ':' .. table.concat(out, ',') end ` +
	`PR = function(ok, ...) if ok then return 'ok ' .. R(...) end return 'err ' .. tostring((...)) end ` +
	`P = function(f, ...) return PR(pcall(f, ...)) end `

// reply is a RESP2 reply.
type reply struct {
	kind byte // '+', '-', ':', '$', '*', or 'n' for a nil bulk/array
	str  string
	num  int64
	arr  []reply
}

func (r reply) String() string {
	switch r.kind {
	case '+':
		return "status:" + strconv.Quote(r.str)
	case '-':
		return "error:" + strconv.Quote(r.str)
	case ':':
		return "int:" + strconv.FormatInt(r.num, 10)
	case '$':
		return "bulk:" + strconv.Quote(r.str)
	case '*':
		parts := make([]string, len(r.arr))
		for i, e := range r.arr {
			parts[i] = e.String()
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return "nil"
}

// redisServer is a redis-server child process and one connection to it.
type redisServer struct {
	cmd  *exec.Cmd
	conn net.Conn
	rd   *bufio.Reader
	dir  string
}

var (
	redisOnce sync.Once
	redisInst *redisServer
	redisErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if redisInst != nil {
		redisInst.stop()
	}
	os.Exit(code)
}

// sharedRedis returns the test binary's redis-server, starting it on first
// use. A missing redis-server fails the test: the differential tests are
// the point of this package's suite and must not be skipped silently.
func sharedRedis(t testing.TB) *redisServer {
	t.Helper()
	redisOnce.Do(func() { redisInst, redisErr = startRedis() })
	if redisErr != nil {
		t.Fatalf("differential tests need redis-server 7.0 on PATH (apt-get install redis-server): %v", redisErr)
	}
	return redisInst
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startRedis() (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server not found: %w", err)
	}
	dir, err := os.MkdirTemp("", "lualib-redis-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start redis-server: %w", err)
		}
		s := &redisServer{cmd: cmd, dir: dir}
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			conn, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
			if err == nil {
				s.conn, s.rd = conn, bufio.NewReader(conn)
				break
			}
			lastErr = err
			time.Sleep(20 * time.Millisecond)
		}
		if s.conn != nil {
			r, err := s.do("PING")
			if err == nil && r.kind == '+' && r.str == "PONG" {
				if err := s.checkVersion(); err != nil {
					s.stop()
					return nil, err
				}
				return s, nil
			}
			lastErr = fmt.Errorf("PING: %v %v", r, err)
		}
		s.stopProcess()
	}
	os.RemoveAll(dir)
	return nil, fmt.Errorf("redis-server did not come up: %w", lastErr)
}

func (s *redisServer) checkVersion() error {
	r, err := s.do("EVAL", "return redis.REDIS_VERSION", "0")
	if err != nil {
		return fmt.Errorf("query version: %w", err)
	}
	if !strings.HasPrefix(r.str, "7.0.") {
		return fmt.Errorf("redis-server %q found; these tests compare against 7.0.x", r.str)
	}
	return nil
}

func (s *redisServer) stopProcess() {
	if s.conn != nil {
		s.conn.Close()
	}
	if s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
	}
}

func (s *redisServer) stop() {
	s.stopProcess()
	os.RemoveAll(s.dir)
}

// do sends one command and reads its reply.
func (s *redisServer) do(args ...string) (reply, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	s.conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(s.conn, b.String()); err != nil {
		return reply{}, fmt.Errorf("write command: %w", err)
	}
	return readReply(s.rd)
}

func readReply(rd *bufio.Reader) (reply, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return reply{}, fmt.Errorf("read reply: %w", err)
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return reply{}, fmt.Errorf("malformed reply line %q", line)
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+', '-':
		return reply{kind: kind, str: body}, nil
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		return reply{kind: ':', num: n}, err
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return reply{}, fmt.Errorf("bulk length %q: %w", body, err)
		}
		if n < 0 {
			return reply{kind: 'n'}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return reply{}, fmt.Errorf("read bulk: %w", err)
		}
		return reply{kind: '$', str: string(buf[:n])}, nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return reply{}, fmt.Errorf("array length %q: %w", body, err)
		}
		if n < 0 {
			return reply{kind: 'n'}, nil
		}
		r := reply{kind: '*', arr: make([]reply, 0, n)}
		for i := 0; i < n; i++ {
			e, err := readReply(rd)
			if err != nil {
				return reply{}, err
			}
			r.arr = append(r.arr, e)
		}
		return r, nil
	}
	return reply{}, fmt.Errorf("unknown reply type %q", line)
}

var scriptErrSuffix = regexp.MustCompile(` script: [0-9a-f]{40}, on @user_script:\d+\.$`)

// eval runs body (after the prelude) with EVAL and normalizes a script
// error to the error value the script raised (Redis adds "ERR " and a
// " script: <sha>, on @user_script:<line>." suffix).
func (s *redisServer) eval(body string, argv ...string) (reply, error) {
	// SCRIPT FLUSH recreates Redis's Lua state, so that settings such as
	// cjson.encode_max_depth() do not leak from one case to the next.
	if r, err := s.do("SCRIPT", "FLUSH"); err != nil || r.kind != '+' {
		return r, fmt.Errorf("SCRIPT FLUSH: %v %v", r, err)
	}
	args := append([]string{"EVAL", prelude + body, "0"}, argv...)
	r, err := s.do(args...)
	if err != nil {
		return r, err
	}
	if r.kind == '-' {
		msg := strings.TrimPrefix(r.str, "ERR ")
		r.str = scriptErrSuffix.ReplaceAllString(msg, "")
	}
	return r, nil
}

// newTestState returns a gopher-lua state set up like a Redis script
// environment as far as these libraries are concerned.
//
// The registry may grow: C Lua lets a C function return up to ~8000 values
// (LUAI_MAXCSTACK), and cmsgpack.unpack does; gopher-lua's default fixed
// registry holds fewer. The call stack is deeper than gopher-lua's default
// so that the prelude's T can walk 1000 levels of nesting, as C Lua can.
func newTestState() *lua.LState {
	L := lua.NewState(lua.Options{RegistrySize: 1024, RegistryMaxSize: 256 * 1024, CallStackSize: 4096})
	OpenCJSON(L)
	OpenCMsgpack(L)
	OpenStruct(L)
	OpenBit(L)
	return L
}

// runGo runs body (after the prelude) in a fresh gopher-lua state and
// converts its first return value as Redis does in RESP2.
func runGo(body string, argv ...string) reply {
	L := newTestState()
	defer L.Close()
	argt := L.NewTable()
	for i, a := range argv {
		argt.RawSetInt(i+1, lua.LString(a))
	}
	L.SetGlobal("ARGV", argt)
	L.SetGlobal("KEYS", L.NewTable())
	fn, err := L.Load(strings.NewReader(prelude+body), "user_script")
	if err != nil {
		return reply{kind: '-', str: "compile: " + err.Error()}
	}
	L.Push(fn)
	if err := L.PCall(0, 1, nil); err != nil {
		var apiErr *lua.ApiError
		if errors.As(err, &apiErr) {
			if s, ok := apiErr.Object.(lua.LString); ok {
				return reply{kind: '-', str: string(s)}
			}
			return reply{kind: '-', str: apiErr.Object.String()}
		}
		return reply{kind: '-', str: err.Error()}
	}
	v := L.Get(-1)
	return luaToReply(v)
}

// luaToReply converts a script's return value to RESP2 as Redis 7.0's
// luaReplyToRedisReply does: strings are bulk strings, numbers integers
// (truncated), true is 1, false and nil are nil, a table with an "err" or
// "ok" string field is an error or status, any other table is an array up to
// its first nil, and every other type is nil.
func luaToReply(v lua.LValue) reply {
	switch x := v.(type) {
	case lua.LString:
		return reply{kind: '$', str: string(x)}
	case lua.LNumber:
		return reply{kind: ':', num: toInteger(float64(x))}
	case lua.LBool:
		if x {
			return reply{kind: ':', num: 1}
		}
		return reply{kind: 'n'}
	case *lua.LTable:
		if e, ok := x.RawGetString("err").(lua.LString); ok {
			return reply{kind: '-', str: string(e)}
		}
		if s, ok := x.RawGetString("ok").(lua.LString); ok {
			return reply{kind: '+', str: string(s)}
		}
		r := reply{kind: '*', arr: []reply{}}
		for i := 1; ; i++ {
			e := x.RawGetInt(i)
			if e == lua.LNil {
				break
			}
			r.arr = append(r.arr, luaToReply(e))
		}
		return r
	}
	return reply{kind: 'n'}
}
