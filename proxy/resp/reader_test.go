package resp

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// parsed is everything a Reader produced from one input.
type parsed struct {
	cmds   [][]string
	inline []bool
	end    string // protocol error text, or "EOF"
}

// readAll parses rd to its end with the given buffer size and limits.
func readAll(t testing.TB, rd io.Reader, size int, lim Limits) parsed {
	t.Helper()
	r := NewReader(rd, size)
	r.SetLimits(lim)
	var p parsed
	for i := 0; ; i++ {
		if i > 1e6 {
			t.Fatal("reader did not stop")
		}
		args, err := r.ReadCommand()
		if err != nil {
			var pe *ProtocolError
			switch {
			case errors.As(err, &pe):
				p.end = pe.Error()
			case err == io.EOF:
				p.end = "EOF"
			default:
				t.Fatalf("unexpected error %v", err)
			}
			// Errors are sticky.
			if _, err2 := r.ReadCommand(); err2 != err {
				t.Fatalf("second call returned %v, want %v", err2, err)
			}
			return p
		}
		if len(args) == 0 {
			t.Fatal("empty command returned")
		}
		cmd := make([]string, len(args))
		for j, a := range args {
			cmd[j] = string(a)
		}
		p.cmds = append(p.cmds, cmd)
		p.inline = append(p.inline, r.Inline())
	}
}

// chunkReader returns at most n bytes per Read.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.data))
	copy(p, c.data[:k])
	c.data = c.data[k:]
	return k, nil
}

// readers returns ways of delivering data: whole, one byte per Read, and in
// small chunks, each with several buffer sizes.
func readers(data string) map[string]func() (io.Reader, int) {
	return map[string]func() (io.Reader, int){
		"whole":      func() (io.Reader, int) { return strings.NewReader(data), 0 },
		"whole-buf4": func() (io.Reader, int) { return strings.NewReader(data), 4 },
		"onebyte":    func() (io.Reader, int) { return iotest.OneByteReader(strings.NewReader(data)), 0 },
		"onebyte-buf1": func() (io.Reader, int) {
			return iotest.OneByteReader(strings.NewReader(data)), 1
		},
		"chunk7-buf16": func() (io.Reader, int) { return &chunkReader{[]byte(data), 7}, 16 },
		"dataerr":      func() (io.Reader, int) { return iotest.DataErrReader(strings.NewReader(data)), 0 },
	}
}

func cmds(c ...[]string) [][]string { return c }
func args(a ...string) []string     { return a }

func TestReadCommand(t *testing.T) {
	big := strings.Repeat("x", 100000)
	big2 := strings.Repeat("y", 40000)
	var pipe strings.Builder
	var pipeWant [][]string
	for i := range 300 {
		k, v := fmt.Sprintf("key:%d", i), strings.Repeat("v", i%50)
		if i%3 == 0 {
			fmt.Fprintf(&pipe, "SET %s '%s'\r\n", k, v)
		} else {
			fmt.Fprintf(&pipe, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(v), v)
		}
		pipeWant = append(pipeWant, args("SET", k, v))
	}
	tests := []struct {
		name string
		in   string
		lim  Limits
		want [][]string
		end  string
	}{
		{name: "empty", in: "", end: "EOF"},
		{name: "inline crlf", in: "PING\r\n", want: cmds(args("PING"))},
		{name: "inline lf", in: "PING\nECHO a\n", want: cmds(args("PING"), args("ECHO", "a"))},
		{name: "inline partial", in: "PING", end: "EOF"},
		{name: "empty lines", in: "\r\n\n   \r\n\t\nPING\n", want: cmds(args("PING"))},
		{name: "multibulk", in: "*2\r\n$4\r\nECHO\r\n$3\r\nfoo\r\n", want: cmds(args("ECHO", "foo"))},
		{name: "binary bulk", in: "*1\r\n$6\r\na\x00\r\nb\xff\r\n", want: cmds(args("a\x00\r\nb\xff"))},
		{name: "empty bulk", in: "*2\r\n$0\r\n\r\n$0\r\n\r\n", want: cmds(args("", ""))},
		{name: "skipped arrays", in: "*0\r\n*-1\r\n*-100\r\nPING\r\n", want: cmds(args("PING"))},
		{name: "crlf after bulk unchecked", in: "*1\r\n$4\r\nPINGxy*1\r\n$1\r\nazz", want: cmds(args("PING"), args("a"))},
		{name: "lf after cr unchecked", in: "*1\rx$4\rxPING\r\n", want: cmds(args("PING"))},
		{name: "partial multibulk", in: "PING\r\n*2\r\n$4\r\nECHO\r\n$3\r\nfo", want: cmds(args("PING")), end: "EOF"},
		{name: "partial header", in: "*2\r", end: "EOF"},
		{name: "nul hides inline end", in: "PING\x00\r\nPING\r\n", end: "EOF"},
		{name: "nul hides header end", in: "*1\x00\r\n$4\r\nPING\r\n", end: "EOF"},
		{name: "nul in bulk data", in: "*1\r\n$3\r\n\x00\x00\x00\r\n", want: cmds(args("\x00\x00\x00"))},
		{name: "pipeline", in: pipe.String(), want: pipeWant},
		{name: "big bulk", in: "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000\r\n" + big + "\r\nPING\r\n",
			want: cmds(args("SET", "k", big), args("PING"))},
		{name: "mixed big bulks", in: "*4\r\n$40000\r\n" + big2 + "\r\n$1\r\na\r\n$100000\r\n" + big + "\r\n$40000\r\n" + big2 + "\r\n",
			want: cmds(args(big2, "a", big, big2))},
		{name: "max len digits", in: "*1\r\n$00000000000000000001\r\n", end: "ERR Protocol error: invalid bulk length"},

		// sdssplitargs.
		{name: "spaces", in: "  ECHO \t  a  \r\n", want: cmds(args("ECHO", "a"))},
		{name: "vt and ff", in: "\vECHO a\vb\f\r\n", want: cmds(args("ECHO", "a\vb\f"))},
		{name: "cr inside line", in: "ECHO a\rb\r\r\n", want: cmds(args("ECHO", "a", "b"))},
		{name: "double quotes", in: `ECHO "a b" "" c` + "\r\n", want: cmds(args("ECHO", "a b", "", "c"))},
		{name: "escapes", in: `ECHO "\x41\x4a\x4\n\r\t\b\a\\\"\q"` + "\n", want: cmds(args("ECHO", "AJx4\n\r\t\b\a\\\"q"))},
		{name: "hex case", in: `ECHO "\xfF\xZZ"` + "\n", want: cmds(args("ECHO", "\xffxZZ"))},
		{name: "single quotes", in: `ECHO 'it\'s \n "x"'` + "\n", want: cmds(args("ECHO", `it's \n "x"`))},
		{name: "quote mid token", in: `ECHO a"b c" d'e f'` + "\n", want: cmds(args("ECHO", "ab c", "de f"))},
		{name: "quote then vt", in: "ECHO \"a\"\v'b'\f\n", want: cmds(args("ECHO", "a", "b"))},
		{name: "closing quote then text", in: `ECHO "a"b` + "\n", end: "ERR Protocol error: unbalanced quotes in request"},
		{name: "closing single quote then text", in: `ECHO 'a'b` + "\n", end: "ERR Protocol error: unbalanced quotes in request"},
		{name: "unterminated", in: `ECHO "abc` + "\r\n", end: "ERR Protocol error: unbalanced quotes in request"},
		{name: "unterminated escaped", in: `ECHO "abc\"` + "\r\n", end: "ERR Protocol error: unbalanced quotes in request"},
		{name: "unterminated backslash", in: `ECHO "abc\` + "\n", end: "ERR Protocol error: unbalanced quotes in request"},
		{name: "unterminated single", in: `ECHO 'abc\'` + "\n", end: "ERR Protocol error: unbalanced quotes in request"},
		{name: "lone quote", in: "\"\n", end: "ERR Protocol error: unbalanced quotes in request"},
		{name: "error after commands", in: "PING\r\nPING\r\n*1\r\nx\r\n", want: cmds(args("PING"), args("PING")),
			end: "ERR Protocol error: expected '$', got 'x'"},

		// Header errors.
		{name: "count too big", in: "*2147483648\r\n", end: "ERR Protocol error: invalid multibulk length"},
		{name: "count int max", in: "*2147483647\r\n", end: "EOF"},
		{name: "count minus zero", in: "*-0\r\n", end: "ERR Protocol error: invalid multibulk length"},
		{name: "count plus", in: "*+1\r\n", end: "ERR Protocol error: invalid multibulk length"},
		{name: "count leading zero", in: "*01\r\n", end: "ERR Protocol error: invalid multibulk length"},
		{name: "count empty", in: "*\r\n", end: "ERR Protocol error: invalid multibulk length"},
		{name: "count junk", in: "*1 \r\n", end: "ERR Protocol error: invalid multibulk length"},
		{name: "count 21 chars", in: "*-12345678901234567890\r\n", end: "ERR Protocol error: invalid multibulk length"},
		{name: "count overflow", in: "*99999999999999999999\r\n", end: "ERR Protocol error: invalid multibulk length"},
		{name: "expected dollar", in: "*1\r\n:1\r\n", end: "ERR Protocol error: expected '$', got ':'"},
		{name: "expected dollar cr", in: "*1\r\n\r\n", end: "ERR Protocol error: expected '$', got ' '"},
		{name: "expected dollar lf", in: "*1\r\n\n\r\n", end: "ERR Protocol error: expected '$', got ' '"},
		{name: "expected dollar high", in: "*1\r\n\xff4\r\n", end: "ERR Protocol error: expected '$', got '\xff'"},
		{name: "bulk negative", in: "*1\r\n$-1\r\n", end: "ERR Protocol error: invalid bulk length"},
		{name: "bulk empty", in: "*1\r\n$\r\n", end: "ERR Protocol error: invalid bulk length"},
		{name: "bulk over limit", in: "*1\r\n$101\r\n", lim: Limits{MaxBulkLen: 100}, end: "ERR Protocol error: invalid bulk length"},
		{name: "bulk at limit", in: "*1\r\n$100\r\n" + strings.Repeat("z", 100) + "\r\n", lim: Limits{MaxBulkLen: 100},
			want: cmds(args(strings.Repeat("z", 100)))},
		{name: "bulk over default", in: "*1\r\n$536870913\r\n", end: "ERR Protocol error: invalid bulk length"},
		{name: "count over custom limit", in: "*6\r\n", lim: Limits{MaxMultibulkLen: 5}, end: "ERR Protocol error: invalid multibulk length"},
		{name: "too big inline", in: strings.Repeat("a", 70000), end: "ERR Protocol error: too big inline request"},
		{name: "too big inline nul", in: "PING\x00" + strings.Repeat("\r\n", 35000), end: "ERR Protocol error: too big inline request"},
		{name: "too big mbulk count", in: "*" + strings.Repeat("1", 70000), end: "ERR Protocol error: too big mbulk count string"},
		{name: "too big bulk count", in: "*1\r\n$" + strings.Repeat("1", 70000), end: "ERR Protocol error: too big bulk count string"},
		{name: "small inline limit", in: "PING\r\n" + strings.Repeat("b", 11), lim: Limits{MaxInlineLen: 10},
			want: cmds(args("PING")), end: "ERR Protocol error: too big inline request"},

		// Unauthenticated clients.
		{name: "unauth count", in: "*11\r\n", lim: Limits{Unauthenticated: true}, end: "ERR Protocol error: unauthenticated multibulk length"},
		{name: "unauth count ok", in: "*10\r\n", lim: Limits{Unauthenticated: true}, end: "EOF"},
		{name: "unauth invalid count first", in: "*2147483648\r\n", lim: Limits{Unauthenticated: true}, end: "ERR Protocol error: invalid multibulk length"},
		{name: "unauth bulk", in: "*1\r\n$16385\r\n", lim: Limits{Unauthenticated: true}, end: "ERR Protocol error: unauthenticated bulk length"},
		{name: "unauth bulk ok", in: "*1\r\n$16384\r\n", lim: Limits{Unauthenticated: true}, end: "EOF"},
		{name: "unauth invalid bulk first", in: "*1\r\n$536870913\r\n", lim: Limits{Unauthenticated: true}, end: "ERR Protocol error: invalid bulk length"},
		{name: "unauth inline unlimited", in: "a b c d e f g h i j k l " + strings.Repeat("q", 20000) + "\n", lim: Limits{Unauthenticated: true},
			want: cmds(args("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", strings.Repeat("q", 20000)))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			end := tc.end
			if end == "" {
				end = "EOF"
			}
			for how, mk := range readers(tc.in) {
				rd, size := mk()
				got := readAll(t, rd, size, tc.lim)
				if !reflect.DeepEqual(got.cmds, tc.want) {
					t.Errorf("%s: commands\n got %.300q\nwant %.300q", how, got.cmds, tc.want)
				}
				if got.end != end {
					t.Errorf("%s: ended with %q, want %q", how, got.end, end)
				}
			}
		})
	}
}

// TestInlineFlag checks Inline follows the format of each command.
func TestInlineFlag(t *testing.T) {
	got := readAll(t, strings.NewReader("PING\r\n*1\r\n$4\r\nPING\r\n\r\n*0\r\nPING\n"), 0, Limits{})
	if want := []bool{true, false, true}; !reflect.DeepEqual(got.inline, want) {
		t.Fatalf("inline flags %v, want %v", got.inline, want)
	}
}

// TestEveryByteBoundary splits a pipeline at every byte boundary into two
// reads and checks the result never changes.
func TestEveryByteBoundary(t *testing.T) {
	in := "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nva\r\nl\r\n" +
		`ECHO "a\x41" 'b c'` + "\r\n\r\n*0\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\nPING\n*1\r\n$4\r\nPINGxy*1\r\n:1\r\n"
	want := readAll(t, strings.NewReader(in), 0, Limits{})
	if len(want.cmds) != 5 || want.end != "ERR Protocol error: expected '$', got ':'" {
		t.Fatalf("unexpected baseline %+q", want.cmds)
	}
	for i := 0; i <= len(in); i++ {
		for _, size := range []int{0, 3} {
			rd := io.MultiReader(strings.NewReader(in[:i]), strings.NewReader(in[i:]))
			if got := readAll(t, rd, size, Limits{}); !reflect.DeepEqual(got, want) {
				t.Fatalf("split at %d, size %d: got %q %q, want %q %q", i, size, got.cmds, got.end, want.cmds, want.end)
			}
		}
	}
}

// TestInlineLimitReadChunks checks the inline limit is checked after each
// read of at most 16 KB, as Redis does: a 79 KB line sent at once is accepted
// (its end comes in the read that crosses 64 KB), one sent byte by byte is not.
func TestInlineLimitReadChunks(t *testing.T) {
	in := "ECHO " + strings.Repeat("j", 79000) + "\r\n"
	got := readAll(t, strings.NewReader(in), 0, Limits{})
	if len(got.cmds) != 1 || len(got.cmds[0][1]) != 79000 || got.end != "EOF" {
		t.Fatalf("whole: %d commands, end %q", len(got.cmds), got.end)
	}
	got = readAll(t, iotest.OneByteReader(strings.NewReader(in)), 0, Limits{})
	if len(got.cmds) != 0 || got.end != "ERR Protocol error: too big inline request" {
		t.Fatalf("one byte per read: %d commands, end %q", len(got.cmds), got.end)
	}
}

// TestSetLimitsBetweenCommands lifts the unauthenticated limits after the
// first command, as a server does after AUTH, with the next command buffered.
func TestSetLimitsBetweenCommands(t *testing.T) {
	in := "AUTH pw\r\n*11\r\n" + strings.Repeat("$1\r\nx\r\n", 11) + "*11\r\n"
	r := NewReader(strings.NewReader(in), 0)
	r.SetLimits(Limits{Unauthenticated: true})
	if a, err := r.ReadCommand(); err != nil || len(a) != 2 {
		t.Fatalf("AUTH: %q, %v", a, err)
	}
	r.SetLimits(Limits{})
	if a, err := r.ReadCommand(); err != nil || len(a) != 11 {
		t.Fatalf("after AUTH: %d args, %v", len(a), err)
	}
	r.SetLimits(Limits{Unauthenticated: true})
	_, err := r.ReadCommand()
	var pe *ProtocolError
	if !errors.As(err, &pe) || pe.Error() != "ERR Protocol error: unauthenticated multibulk length" {
		t.Fatalf("got %v", err)
	}
}

// TestReadError checks read errors come back as is, after the commands
// buffered before them.
func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(iotest.TimeoutReader(strings.NewReader("PING\r\nPI")), 0)
	if a, err := r.ReadCommand(); err != nil || string(a[0]) != "PING" {
		t.Fatalf("got %q, %v", a, err)
	}
	if _, err := r.ReadCommand(); err != iotest.ErrTimeout {
		t.Fatalf("got %v, want %v", err, iotest.ErrTimeout)
	}
	r = NewReader(io.MultiReader(strings.NewReader("PING\r\n"), iotest.ErrReader(boom)), 0)
	if _, err := r.ReadCommand(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadCommand(); err != boom {
		t.Fatalf("got %v, want boom", err)
	}
}

// TestBufferedAndReady checks what a server uses to decide when to flush.
func TestBufferedAndReady(t *testing.T) {
	pr, pw := io.Pipe()
	r := NewReader(pr, 0)
	go func() { _, _ = pw.Write([]byte("PING\r\nECHO a\r\n*2\r\n$4\r\nECHO\r\n")) }()
	if a, err := r.ReadCommand(); err != nil || string(a[0]) != "PING" {
		t.Fatalf("got %q, %v", a, err)
	}
	if r.Buffered() != len("ECHO a\r\n*2\r\n$4\r\nECHO\r\n") || !r.Ready() {
		t.Fatalf("Buffered %d, Ready %v", r.Buffered(), r.Ready())
	}
	if a, err := r.ReadCommand(); err != nil || string(a[1]) != "a" {
		t.Fatalf("got %q, %v", a, err)
	}
	if r.Buffered() == 0 || r.Ready() {
		t.Fatalf("partial command: Buffered %d, Ready %v", r.Buffered(), r.Ready())
	}
	go func() { _, _ = pw.Write([]byte("$1\r\nb\r\n")); _ = pw.Close() }()
	if a, err := r.ReadCommand(); err != nil || string(a[1]) != "b" {
		t.Fatalf("got %q, %v", a, err)
	}
	if r.Buffered() != 0 {
		t.Fatalf("Buffered %d, want 0", r.Buffered())
	}
	if _, err := r.ReadCommand(); err != io.EOF {
		t.Fatalf("got %v, want EOF", err)
	}
}

// TestArgsCapped checks appending to a returned argument cannot overwrite
// the next one in the buffer.
func TestArgsCapped(t *testing.T) {
	r := NewReader(strings.NewReader("*2\r\n$1\r\na\r\n$1\r\nb\r\nECHO x y\n"), 0)
	for range 2 {
		a, err := r.ReadCommand()
		if err != nil {
			t.Fatal(err)
		}
		for _, arg := range a {
			if cap(arg) != len(arg) {
				t.Fatalf("arg %q has cap %d", arg, cap(arg))
			}
		}
	}
}

// recordReader records the size of each Read's buffer.
type recordReader struct {
	rd    io.Reader
	sizes []int
}

func (r *recordReader) Read(p []byte) (int, error) {
	r.sizes = append(r.sizes, len(p))
	return r.rd.Read(p)
}

// TestBigBulkReadDirect checks a big bulk is read in one Read into a buffer
// sized exactly for it, not through the 16 KB read chunks.
func TestBigBulkReadDirect(t *testing.T) {
	const n = 1 << 20
	head := fmt.Sprintf("*2\r\n$3\r\nSET\r\n$%d\r\n", n)
	rec := &recordReader{rd: io.MultiReader(strings.NewReader(head), strings.NewReader(strings.Repeat("v", n)+"\r\n"))}
	r := NewReader(rec, 0)
	a, err := r.ReadCommand()
	if err != nil || len(a) != 2 || len(a[1]) != n {
		t.Fatalf("got %d args, %v", len(a), err)
	}
	if len(rec.sizes) != 2 || rec.sizes[1] != n+2 {
		t.Fatalf("read sizes %v, want [16384 %d]", rec.sizes, n+2)
	}
}

// TestLargeCommandIsLinear feeds a command of 200k arguments one byte per
// Read; re-scanning from the start on each read would take minutes.
func TestLargeCommandIsLinear(t *testing.T) {
	const n = 200000
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", n)
	for range n {
		b.WriteString("$2\r\nab\r\n")
	}
	r := NewReader(iotest.OneByteReader(&b), 0)
	a, err := r.ReadCommand()
	if err != nil || len(a) != n || string(a[n-1]) != "ab" {
		t.Fatalf("got %d args, %v", len(a), err)
	}
}

// loopReader returns data over and over.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := copy(p, l.data[l.off:])
	l.off = (l.off + n) % len(l.data)
	return n, nil
}

func pipelineOfSets(n, valueLen int) []byte {
	var b bytes.Buffer
	v := strings.Repeat("v", valueLen)
	for i := range n {
		k := fmt.Sprintf("key:%06d", i)
		fmt.Fprintf(&b, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(v), v)
	}
	return b.Bytes()
}

// TestZeroAllocs checks steady-state parsing of small commands, and of
// commands with big arguments of a steady size, allocates nothing.
func TestZeroAllocs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		data     []byte
		valueLen int
	}{
		{"small", pipelineOfSets(1000, 10), 10},
		{"big", pipelineOfSets(3, 100000), 100000},
	} {
		r := NewReader(&loopReader{data: tc.data}, 0)
		allocs := testing.AllocsPerRun(2000, func() {
			a, err := r.ReadCommand()
			if err != nil || len(a) != 3 || len(a[2]) != tc.valueLen {
				t.Fatalf("got %d args, %v", len(a), err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per command, want 0", tc.name, allocs)
		}
	}
}

func BenchmarkReadCommandPipeline(b *testing.B) {
	data := pipelineOfSets(1000, 10)
	r := NewReader(&loopReader{data: data}, 0)
	b.SetBytes(int64(len(data) / 1000))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadCommand(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadCommandInline(b *testing.B) {
	data := bytes.Repeat([]byte("SET key:000001 \"some value\"\r\n"), 1000)
	r := NewReader(&loopReader{data: data}, 0)
	b.SetBytes(int64(len(data) / 1000))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadCommand(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadCommandBigValue(b *testing.B) {
	data := pipelineOfSets(4, 1<<20)
	r := NewReader(&loopReader{data: data}, 0)
	b.SetBytes(int64(len(data) / 4))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ReadCommand(); err != nil {
			b.Fatal(err)
		}
	}
}
