package resp

import (
	"math"
	"testing"
)

func TestWriterEncodings(t *testing.T) {
	tests := []struct {
		name  string
		write func(w *Writer)
		resp2 string
		resp3 string
	}{
		{"simple", func(w *Writer) { w.Simple("PONG") }, "+PONG\r\n", "+PONG\r\n"},
		{"ok", func(w *Writer) { w.OK() }, "+OK\r\n", "+OK\r\n"},
		{"error", func(w *Writer) { w.Error("ERR bad") }, "-ERR bad\r\n", "-ERR bad\r\n"},
		{"error newlines", func(w *Writer) { w.Error("ERR a\r\nb") }, "-ERR a  b\r\n", "-ERR a  b\r\n"},
		{"int", func(w *Writer) { w.Int(-42) }, ":-42\r\n", ":-42\r\n"},
		{"bulk", func(w *Writer) { w.Bulk([]byte("hi")) }, "$2\r\nhi\r\n", "$2\r\nhi\r\n"},
		{"empty bulk", func(w *Writer) { w.BulkString("") }, "$0\r\n\r\n", "$0\r\n\r\n"},
		{"bulk int", func(w *Writer) { w.BulkInt(1795278641) }, "$10\r\n1795278641\r\n", "$10\r\n1795278641\r\n"},
		{"null", func(w *Writer) { w.Null() }, "$-1\r\n", "_\r\n"},
		{"null array", func(w *Writer) { w.NullArray() }, "*-1\r\n", "_\r\n"},
		{"array", func(w *Writer) { w.Array(3) }, "*3\r\n", "*3\r\n"},
		{"map", func(w *Writer) { w.Map(2) }, "*4\r\n", "%2\r\n"},
		{"set", func(w *Writer) { w.Set(5) }, "*5\r\n", "~5\r\n"},
		{"push", func(w *Writer) { w.Push(3) }, "*3\r\n", ">3\r\n"},
		{"true", func(w *Writer) { w.Bool(true) }, ":1\r\n", "#t\r\n"},
		{"false", func(w *Writer) { w.Bool(false) }, ":0\r\n", "#f\r\n"},
		{"double", func(w *Writer) { w.Double(1.1) }, "$18\r\n1.1000000000000001\r\n", ",1.1000000000000001\r\n"},
		{"double int", func(w *Writer) { w.Double(3) }, "$1\r\n3\r\n", ",3\r\n"},
		{"double exp", func(w *Writer) { w.Double(1e17) }, "$5\r\n1e+17\r\n", ",1e+17\r\n"},
		{"inf", func(w *Writer) { w.Double(math.Inf(1)) }, "$3\r\ninf\r\n", ",inf\r\n"},
		{"-inf", func(w *Writer) { w.Double(math.Inf(-1)) }, "$4\r\n-inf\r\n", ",-inf\r\n"},
		{"-0", func(w *Writer) { w.Double(math.Copysign(0, -1)) }, "$2\r\n-0\r\n", ",-0\r\n"},
		{"verbatim", func(w *Writer) { w.Verbatim("txt", []byte("a:b")) }, "$3\r\na:b\r\n", "=7\r\ntxt:a:b\r\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, proto := range []int{2, 3} {
				w := &Writer{Proto: proto}
				tt.write(w)
				want := tt.resp2
				if proto == 3 {
					want = tt.resp3
				}
				if got := string(w.Buf); got != want {
					t.Errorf("RESP%d: got %q, want %q", proto, got, want)
				}
			}
		})
	}
}

func TestWriterTruncateAndReset(t *testing.T) {
	w := &Writer{Proto: 2}
	w.OK()
	mark := w.Len()
	w.Int(7)
	w.Truncate(mark)
	if got := string(w.Buf); got != "+OK\r\n" {
		t.Fatalf("after Truncate: %q", got)
	}
	w.Reset()
	if w.Len() != 0 {
		t.Fatalf("after Reset: %d bytes", w.Len())
	}
}

func TestWriterDoesNotAllocate(t *testing.T) {
	w := &Writer{Proto: 3, Buf: make([]byte, 0, 4096)}
	v := []byte("value")
	allocs := testing.AllocsPerRun(100, func() {
		w.Reset()
		w.Array(3)
		w.Bulk(v)
		w.Int(12345)
		w.Double(2.5)
		w.Null()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per reply, want 0", allocs)
	}
}
