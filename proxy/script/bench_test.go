package script

import (
	"testing"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/resp"
)

// okHost answers every command with +OK.
type okHost struct{}

func (okHost) Call(*cmdtable.Command, [][]byte, int) []byte { return []byte("+OK\r\n") }

func (okHost) OutOfMemory() bool { return false }

func (okHost) WriteRefusal() string { return "" }

func (okHost) Rejected(*cmdtable.Command, string)                {}
func (okHost) ACLCheck(*cmdtable.Command, [][]byte, bool) string { return "" }

// intHost answers every command with :1 (as INCR or SADD would).
type intHost struct{ okHost }

func (intHost) Call(*cmdtable.Command, [][]byte, int) []byte { return []byte(":1\r\n") }

func benchEval(b *testing.B, script string) { benchEvalOn(b, okHost{}, script) }

// benchEvalOn measures the script package's own cost of EVAL (the host's
// commands cost nothing): lookup, run context, KEYS/ARGV, the Lua run,
// each redis.call's checks and conversions, the reply.
func benchEvalOn(b *testing.B, host Host, script string) {
	e := New(Options{})
	args := toArgs(ev(script, "#", "key", "value"))
	w := &resp.Writer{Proto: 2}
	e.Eval(host, w, args)
	if len(w.Buf) == 0 || w.Buf[0] == '-' {
		b.Fatalf("script failed: %q", w.Buf)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.Reset()
		e.Eval(host, w, args)
	}
}

func BenchmarkEvalReturn(b *testing.B) { benchEval(b, "return 1") }

func BenchmarkEvalCall(b *testing.B) {
	benchEval(b, "return redis.call('set', KEYS[1], ARGV[1])")
}

func BenchmarkEvalLoop(b *testing.B) {
	benchEval(b, "local n = 0 for i = 1, 1000 do n = n + i end return n")
}

// BenchmarkEvalIncr is redis-benchmark's small script.
func BenchmarkEvalIncr(b *testing.B) {
	benchEvalOn(b, intHost{}, "return redis.call('INCR', KEYS[1])")
}

// BenchmarkEvalCallLoop makes 1,000 calls per script (ns/op / 1,000 is one
// redis.call's cost in the script package), as the suite's
// unit/latency-monitor script of 1,000,000 SADDs does.
func BenchmarkEvalCallLoop(b *testing.B) {
	benchEvalOn(b, intHost{}, "for i = 1, 1000 do redis.call('SADD', KEYS[1], i) end")
}
