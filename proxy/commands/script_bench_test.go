package commands_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Scripting's cost through the whole dispatch (EVAL's lookup, the script's
// group transaction, the Lua run, each redis.call as a command of the
// script's client): EVAL and EVALSHA of redis-benchmark's small script over
// 100,000 hot keys in a random order, and a script making 1,000 calls
// (reported per call, as calls/op is 1,000).

const scriptIncr = "return redis.call('INCR', KEYS[1])"

func benchScript(b *testing.B, sha bool) {
	const keys = 100_000
	l := hotLocal(b, keys)
	first := []byte("EVAL")
	body := []byte(scriptIncr)
	if sha {
		reply := l.DoString("SCRIPT", "LOAD", scriptIncr)
		if len(reply) < 45 || reply[0] != '$' {
			b.Fatalf("SCRIPT LOAD: %q", reply)
		}
		first, body = []byte("EVALSHA"), reply[5:45]
	}
	args := make([][][]byte, keys)
	for i := range args {
		args[i] = [][]byte{first, body, []byte("1"), fmt.Appendf(nil, "key:%06d", i)}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(args), func(i, j int) { args[i], args[j] = args[j], args[i] })
	if r := l.Do(args[0]...); r[0] != ':' {
		b.Fatalf("%s: %q", first, r)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		l.Do(args[i%keys]...)
	}
}

func BenchmarkScriptEvalIncr(b *testing.B)    { benchScript(b, false) }
func BenchmarkScriptEvalSHAIncr(b *testing.B) { benchScript(b, true) }

// BenchmarkScriptCallLoop runs a script of 1,000 SADD calls, each adding a
// member, then a DEL of the set (so every run writes 1,000 members to an
// empty set): ns/op divided by 1,001 is the cost of one redis.call.
func BenchmarkScriptCallLoop(b *testing.B) {
	s, _ := openLocal(b, modes[0])
	l := s.NewLocal()
	defer l.Close()
	args := [][]byte{[]byte("EVAL"), []byte("for i = 1, 1000 do redis.call('SADD', KEYS[1], i) end return redis.call('DEL', KEYS[1])"), []byte("1"), []byte("big")}
	if r := l.Do(args...); string(r) != ":1\r\n" {
		b.Fatalf("EVAL: %q", r)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		l.Do(args...)
	}
}
