package rdbfile_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/proxy/rdbfile"
)

// TestStreamWriteLoad: streams (nodes with tombstones, an emptied node,
// groups, consumers, pending entries, an empty stream with groups) written
// from an engine whose hot tier holds nothing (every stream read from the
// store) load into another engine as they were: XINFO STREAM FULL (seen
// and delivery times included) and XRANGE answer the same bytes, and the
// loaded engine writes the same file again.
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
	file := writeRDB(t, e, nil)

	s2, e2 := openLocal(t, 0)
	if _, err := rdbfile.Load(bytes.NewReader(file), e2, rdbfile.LoadOptions{ChunkBytes: 64}); err != nil {
		t.Fatal(err)
	}
	l2 := s2.NewLocal()
	defer l2.Close()
	for _, q := range [][]string{
		{"XINFO", "STREAM", "s", "FULL"}, {"XRANGE", "s", "-", "+"}, {"XINFO", "STREAM", "e", "FULL"},
		{"XPENDING", "s", "g1"}, {"XLEN", "s"},
	} {
		args := make([][]byte, len(q))
		for i, a := range q {
			args[i] = []byte(a)
		}
		want, got := l.Do(args...), l2.Do(args...)
		if !bytes.Equal(want, got) {
			t.Errorf("%v after the load:\n got %q\nwant %q", q, got, want)
		}
	}
	if again := writeRDB(t, e2, nil); !bytes.Equal(again[:9], file[:9]) || len(again) != len(file) {
		t.Errorf("the loaded engine's file is %d bytes, the source's %d", len(again), len(file))
	}
}
