package rdbfile_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/proxy/rdbfile"
)

// TestStreamWriteLoad: streams (nodes with tombstones, an emptied node,
// groups, consumers, pending entries, an empty stream with groups, an
// expiry) written from an engine whose hot tier holds nothing (every
// stream read from the store) load into another engine as they were,
// whole or in chunks of a node (ChunkBytes 64): XINFO STREAM FULL (seen
// and delivery times included), XRANGE and PEXPIRETIME answer the same
// bytes, the loaded engine writes a file of the same size again, and
// commands go on on the loaded streams as on the source's.
func TestStreamWriteLoad(t *testing.T) {
	s, e := openLocal(t, 0)
	l := s.NewLocal()
	defer l.Close()
	do := func(args ...string) []byte {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		out := l.Do(b...)
		if len(out) > 0 && out[0] == '-' {
			t.Fatalf("%v: %s", args, out)
		}
		return out
	}
	do("CONFIG", "SET", "stream-node-max-entries", "4")
	for i := 1; i <= 50; i++ {
		fields := []string{"f", strconv.Itoa(i), "g", strings.Repeat("v", i)}
		if i%5 == 0 {
			fields = []string{"other", "x"}
		}
		do(append([]string{"XADD", "s", strconv.Itoa(i) + "-1"}, fields...)...)
	}
	do("XDEL", "s", "2-1", "9-1", "10-1", "11-1", "12-1")
	do("XGROUP", "CREATE", "s", "g1", "0")
	do("XGROUP", "CREATE", "s", "g0", "$")
	do("XREADGROUP", "GROUP", "g1", "a", "COUNT", "5", "STREAMS", "s", ">")
	do("XREADGROUP", "GROUP", "g1", "b", "COUNT", "3", "STREAMS", "s", ">")
	do("XGROUP", "CREATECONSUMER", "s", "g1", "c")
	do("XCLAIM", "s", "g1", "c", "0", "4-1", "TIME", "1600000000000")
	do("XADD", "e", "1-1", "a", "b")
	do("XDEL", "e", "1-1")
	do("XGROUP", "CREATE", "e", "g", "0")
	do("PEXPIREAT", "s", "4102444800000")
	file := writeRDB(t, e, nil)

	queries := [][]string{
		{"XINFO", "STREAM", "s", "FULL"}, {"XRANGE", "s", "-", "+"}, {"XINFO", "STREAM", "e", "FULL"},
		{"XPENDING", "s", "g1"}, {"XLEN", "s"}, {"PEXPIRETIME", "s"}, {"DBSIZE"},
	}
	for _, chunk := range []int{1 << 20, 64} { // the chunked load last: the source then changes
		s2, e2 := openLocal(t, 0)
		st, err := rdbfile.Load(bytes.NewReader(file), e2, rdbfile.LoadOptions{ChunkBytes: chunk})
		if err != nil {
			t.Fatal(err)
		}
		if st.Keys != 2 {
			t.Errorf("chunk %d: %d keys loaded, want 2", chunk, st.Keys)
		}
		l2 := s2.NewLocal()
		compare := func(when string) {
			for _, q := range queries {
				args := make([][]byte, len(q))
				for i, a := range q {
					args[i] = []byte(a)
				}
				want, got := l.Do(args...), l2.Do(args...)
				if !bytes.Equal(want, got) {
					t.Errorf("chunk %d, %s, %v:\n got %q\nwant %q", chunk, when, q, got, want)
				}
			}
		}
		compare("after the load")
		if again := writeRDB(t, e2, nil); !bytes.Equal(again[:9], file[:9]) || len(again) != len(file) {
			t.Errorf("chunk %d: the loaded engine's file is %d bytes, the source's %d", chunk, len(again), len(file))
		}
		if chunk == 64 {
			for _, c := range []string{"XADD s 60-1 f x", "XTRIM s MINID 20-1", "XACK s g1 16-1", "XDEL s 30-1", "XADD e 7-1 a b"} {
				do(strings.Fields(c)...)
				args := make([][]byte, 0, 6)
				for _, a := range strings.Fields(c) {
					args = append(args, []byte(a))
				}
				l2.Do(args...)
			}
			compare("after more commands")
		}
		l2.Close()
	}
}
