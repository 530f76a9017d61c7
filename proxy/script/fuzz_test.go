package script

import (
	"bytes"
	"testing"

	"github.com/spillway/spillway/proxy/resp"
)

// FuzzReplyConversion feeds arbitrary bytes to the RESP-to-Lua conversion
// and writes the result back as a reply for each script and caller
// protocol. A reply that converts must yield exactly one well-formed RESP
// value. For RESP2 callers, converting that value again must give it back
// unchanged: after one round trip the conversion is a projection. (RESP3
// output is not: Redis turns a null inside an array into nil, which ends
// the array the next time round.)
func FuzzReplyConversion(f *testing.F) {
	for _, seed := range []string{
		":1\r\n", "$3\r\nabc\r\n", "$-1\r\n", "*-1\r\n", "+OK\r\n", "-ERR x\r\n", "-NOCODE\r\n",
		"*3\r\n:1\r\n$-1\r\n+x\r\n", "%1\r\n+a\r\n:1\r\n", "~2\r\n:1\r\n:2\r\n", ",1.5\r\n", ",-nan\r\n",
		"(123\r\n", "#t\r\n", "#f\r\n", "_\r\n", "=8\r\ntxt:abcd\r\n", "|1\r\n+a\r\n+b\r\n:5\r\n",
		"*2\r\n*1\r\n-E x\r\n%1\r\n*1\r\n:1\r\n~1\r\n_\r\n",
	} {
		f.Add([]byte(seed))
	}
	e := New(Options{})
	v := e.evm
	f.Fuzz(func(t *testing.T, data []byte) {
		val, n, err := replyToLua(v.L, data, v.recordOrder)
		if err != nil {
			return
		}
		if n > len(data) {
			t.Fatalf("consumed %d of %d bytes", n, len(data))
		}
		for _, scriptProto := range []int{2, 3} {
			for _, caller := range []int{2, 3} {
				w := &resp.Writer{Proto: caller}
				writeLuaReply(w, val, scriptProto, v)
				out := w.Buf
				rr := resp.NewReplyReader(bytes.NewReader(out))
				rr.MaxDepth = maxReplyNesting + 16
				one, err := rr.Read()
				if err != nil || len(one) != len(out) {
					t.Fatalf("reply for %q (script RESP%d, caller RESP%d) is not one RESP value: %q (%v)", data, scriptProto, caller, out, err)
				}
				val2, n2, err := replyToLua(v.L, out, v.recordOrder)
				if err != nil || n2 != len(out) {
					t.Fatalf("cannot convert our own reply %q: %v", out, err)
				}
				if caller == 3 {
					continue
				}
				w2 := &resp.Writer{Proto: 2}
				writeLuaReply(w2, val2, 2, v)
				if !bytes.Equal(w2.Buf, out) {
					t.Fatalf("second round trip of %q (script RESP%d, caller RESP%d) changed %q into %q", data, scriptProto, caller, out, w2.Buf)
				}
			}
		}
		clear(v.insertOrder)
	})
}
