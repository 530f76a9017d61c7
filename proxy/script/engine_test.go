package script

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/resp"
)

// recordingHost records the calls it receives and answers from a table.
type recordingHost struct {
	mu      sync.Mutex
	calls   []string // cmd.Name, protocol and arguments
	replies map[string]string
	oom     bool   // OutOfMemory's answer
	refusal string // WriteRefusal's answer
}

func (h *recordingHost) OutOfMemory() bool { return h.oom }

func (h *recordingHost) WriteRefusal() string { return h.refusal }

func (h *recordingHost) Rejected(*cmdtable.Command, string)                {}
func (h *recordingHost) ACLCheck(*cmdtable.Command, [][]byte, bool) string { return "" }

func (h *recordingHost) Call(cmd *cmdtable.Command, args [][]byte, proto int) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	parts := []string{cmd.Name, itoa(proto)}
	for _, a := range args {
		parts = append(parts, string(a))
	}
	h.calls = append(h.calls, strings.Join(parts, " "))
	if r, ok := h.replies[strings.ToLower(string(args[0]))]; ok {
		return []byte(r)
	}
	return []byte("+OK\r\n")
}

func TestHostCalls(t *testing.T) {
	e := New(Options{})
	h := &recordingHost{replies: map[string]string{"get": "$1\r\nv\r\n"}}
	w := &resp.Writer{Proto: 3}
	e.Eval(h, w, toArgs(ev("redis.call('OBJECT', 'ENCODING', 'x') redis.setresp(3) redis.call('get', KEYS[1]) return redis.pcall('Set', 'k', 1.5)", "#", "key")))
	if got := string(w.Buf); got != "+OK\r\n" {
		t.Fatalf("reply = %q", got)
	}
	want := []string{"object|encoding 2 OBJECT ENCODING x", "get 3 get key", "set 3 Set k 1.5"}
	if strings.Join(h.calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("host calls:\n%s\nwant:\n%s", strings.Join(h.calls, "\n"), strings.Join(want, "\n"))
	}
	// Refused commands never reach the host.
	h.calls = nil
	for _, s := range []string{"redis.call('nosuch')", "redis.call('get')", "redis.call('eval', 'x', '0')", "redis.call('subscribe', 'c')"} {
		w.Reset()
		e.Eval(h, w, toArgs(ev(s)))
		if !bytes.HasPrefix(w.Buf, []byte("-ERR ")) {
			t.Errorf("%s: reply %q, want an error", s, w.Buf)
		}
	}
	w.Reset()
	e.Eval(h, w, toArgs(step{"EVAL_RO", "redis.call('set', 'a', 'b')", "0"}))
	if len(h.calls) != 0 {
		t.Errorf("refused commands reached the host: %q", h.calls)
	}
}

func TestCountersAndFlush(t *testing.T) {
	e := New(Options{})
	h := &recordingHost{}
	base := e.MemoryBytes()
	if base <= 0 || e.NumScripts() != 0 {
		t.Fatalf("fresh engine: memory %d, scripts %d", base, e.NumScripts())
	}
	for i := 0; i < 3; i++ {
		w := &resp.Writer{Proto: 2}
		e.Eval(h, w, toArgs(ev("return "+itoa(i))))
	}
	w := &resp.Writer{Proto: 2}
	e.Script(w, toArgs(step{"SCRIPT", "LOAD", "return 'x'"}))
	e.Script(w, toArgs(step{"SCRIPT", "LOAD", "return 'x'"}))
	if e.NumScripts() != 4 {
		t.Errorf("NumScripts = %d, want 4", e.NumScripts())
	}
	if e.MemoryBytes() <= base {
		t.Errorf("MemoryBytes did not grow with cached scripts")
	}
	w.Reset()
	e.Script(w, toArgs(step{"SCRIPT", "FLUSH"}))
	if e.NumScripts() != 0 || e.MemoryBytes() != base {
		t.Errorf("after SCRIPT FLUSH: %d scripts, memory %d (base %d)", e.NumScripts(), e.MemoryBytes(), base)
	}
}

func TestFunctionChanged(t *testing.T) {
	e := New(Options{})
	lib1 := "#!lua name=l1\nredis.register_function('f1', function() return 1 end)"
	cases := []struct {
		args    step
		changed bool
	}{
		{step{"FUNCTION", "LOAD", lib1}, true},
		{step{"FUNCTION", "LOAD", lib1}, false},
		{step{"FUNCTION", "LOAD", "REPLACE", lib1}, true},
		{step{"FUNCTION", "LIST"}, false},
		{step{"FUNCTION", "STATS"}, false},
		{step{"FUNCTION", "DUMP"}, false},
		{step{"FUNCTION", "DELETE", "nosuch"}, false},
		{step{"FUNCTION", "DELETE", "l1"}, true},
		{step{"FUNCTION", "RESTORE", "bad"}, false},
		{step{"FUNCTION", "FLUSH"}, true},
	}
	for _, c := range cases {
		w := &resp.Writer{Proto: 2}
		if got := e.Function(w, toArgs(c.args)); got != c.changed {
			t.Errorf("%q: changed = %v, want %v (reply %q)", c.args, got, c.changed, w.Buf)
		}
	}
}

// TestRedisLog checks that redis.log reaches the Options.Logger.
func TestRedisLog(t *testing.T) {
	var buf bytes.Buffer
	e := New(Options{Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	w := &resp.Writer{Proto: 2}
	e.Eval(&recordingHost{}, w, toArgs(ev("redis.log(redis.LOG_WARNING, 'hello', 42, {}, 'world') redis.log(redis.LOG_DEBUG, 'dbg') return 1")))
	out := buf.String()
	if !strings.Contains(out, `level=WARN msg="hello 42 world"`) || !strings.Contains(out, "level=DEBUG msg=dbg") {
		t.Errorf("log output:\n%s", out)
	}
}

// TestNoHalfState checks that a script failing midway leaves nothing
// behind for the next one.
func TestNoHalfState(t *testing.T) {
	e := New(Options{})
	h := &recordingHost{}
	run := func(s string, args ...string) string {
		w := &resp.Writer{Proto: 2}
		e.Eval(h, w, toArgs(ev(s, args...)))
		return string(w.Buf)
	}
	run("local t = {} for i = 1, 10 do t[i] = i end string.x = 1")
	run("rawset(_G, 'leak', 1)")
	run("redis.call = function() return 1 end")
	if got := run("return {type(string.x), type(rawget(_G, 'leak')), type(redis.call)}"); got != "*3\r\n$3\r\nnil\r\n$3\r\nnil\r\n$8\r\nfunction\r\n" {
		t.Errorf("state leaked between scripts: %q", got)
	}
	if got := run("return #KEYS + #ARGV", "#", "k", "a", "b"); got != ":3\r\n" {
		t.Errorf("KEYS/ARGV = %q", got)
	}
	if got := run("return #KEYS + #ARGV"); got != ":0\r\n" {
		t.Errorf("KEYS/ARGV not reset: %q", got)
	}
}

// TestOutOfMemory checks Redis's OOM rules for scripts: until its first
// write, a script's call of a denyoom command fails while the host says it
// is out of memory, unless the script declared allow-oom (or no-writes);
// DenyOOM says which script commands the server refuses up front.
func TestOutOfMemory(t *testing.T) {
	e := New(Options{})
	h := &recordingHost{oom: true}
	run := func(args step) string {
		w := &resp.Writer{Proto: 2}
		e.Eval(h, w, toArgs(args))
		return string(w.Buf)
	}
	const oom = "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
	for _, tc := range []struct {
		script, want string
	}{
		// Compat mode: checked per call; the raised error names the script.
		{"return redis.call('set', 'x', 1)", oom[:len(oom)-2] + " script: d3e59a42ddbf0bf90f4688baf7dec06c274f4dfe, on @user_script:1.\r\n"},
		{"return redis.call('get', 'x')", "+OK\r\n"},                           // not denyoom
		{"redis.call('del', 'y') return redis.call('set', 'x', 1)", "+OK\r\n"}, // after the first write
		{"#!lua flags=allow-oom\nreturn redis.call('set', 'x', 1)", "+OK\r\n"},
		{"#!lua\nreturn redis.pcall('set', 'x', 1)['err']", "$" + itoa(len(oom)-3) + "\r\n" + oom[1:len(oom)-2] + "\r\n"},
	} {
		if got := run(ev(tc.script)); got != tc.want {
			t.Errorf("%q while out of memory = %q; want %q", tc.script, got, tc.want)
		}
	}
	h.oom = false
	if got := run(ev("return redis.call('set', 'x', 1)")); got != "+OK\r\n" {
		t.Errorf("SET from a script with memory available = %q", got)
	}

	w := &resp.Writer{Proto: 2}
	e.Function(w, toArgs(step{"FUNCTION", "LOAD", "#!lua name=lib\n" +
		"redis.register_function('w', function() return 1 end)\n" +
		"redis.register_function{function_name='ro', callback=function() return 1 end, flags={'no-writes'}}\n" +
		"redis.register_function{function_name='oomok', callback=function() return 1 end, flags={'allow-oom'}}"}))
	if string(w.Buf) != "$3\r\nlib\r\n" {
		t.Fatalf("FUNCTION LOAD = %q", w.Buf)
	}
	for _, tc := range []struct {
		args step
		deny bool
	}{
		{ev("return 1"), false},       // no shebang
		{ev("#!lua\nreturn 1"), true}, // flags declared, none
		{ev("#!lua flags=no-writes\nreturn 1"), false},
		{ev("#!lua flags=allow-oom\nreturn 1"), false},
		{step{"EVALSHA", strings.Repeat("0", 40), "0"}, false}, // unknown script
		{step{"FCALL", "w", "0"}, true},
		{[]string{"FCALL_RO", "ro", "0"}, false},
		{step{"FCALL", "oomok", "0"}, false},
		{step{"FCALL", "nosuch", "0"}, false},
	} {
		if got := e.DenyOOM(toArgs(tc.args)); got != tc.deny {
			t.Errorf("DenyOOM(%q) = %v; want %v", tc.args, got, tc.deny)
		}
	}
}
