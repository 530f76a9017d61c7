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

func benchEval(b *testing.B, script string) {
	e := New(Options{})
	args := toArgs(ev(script, "#", "key", "value"))
	w := &resp.Writer{Proto: 2}
	e.Eval(okHost{}, w, args)
	if len(w.Buf) == 0 || w.Buf[0] == '-' {
		b.Fatalf("script failed: %q", w.Buf)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w.Reset()
		e.Eval(okHost{}, w, args)
	}
}

func BenchmarkEvalReturn(b *testing.B) { benchEval(b, "return 1") }

func BenchmarkEvalCall(b *testing.B) {
	benchEval(b, "return redis.call('set', KEYS[1], ARGV[1])")
}

func BenchmarkEvalLoop(b *testing.B) {
	benchEval(b, "local n = 0 for i = 1, 1000 do n = n + i end return n")
}
