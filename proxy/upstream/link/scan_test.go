package link

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/spillway/spillway/proxy/resp"
)

// scanCases are single replies and malformed input; err nil means the
// whole input is one reply.
var scanCases = []struct {
	name string
	in   string
	err  error
}{
	{"simple", "+OK\r\n", nil},
	{"error", "-ERR x\r\n", nil},
	{"int", ":-12\r\n", nil},
	{"bulk", "$3\r\nabc\r\n", nil},
	{"empty bulk", "$0\r\n\r\n", nil},
	{"null bulk", "$-1\r\n", nil},
	{"null array", "*-1\r\n", nil},
	{"empty array", "*0\r\n", nil},
	{"binary bulk", "$4\r\n\r\n\r\n\r\n", nil},
	{"array", "*2\r\n$1\r\na\r\n:1\r\n", nil},
	{"nested", "*2\r\n*1\r\n+x\r\n*0\r\n", nil},
	{"nested nulls", "*3\r\n*-1\r\n$-1\r\n*1\r\n*2\r\n:1\r\n$0\r\n\r\n", nil},
	{"resp3 null", "_\r\n", nil},
	{"double", ",1.5\r\n", nil},
	{"bool", "#t\r\n", nil},
	{"big number", "(123456789012345678901234567890\r\n", nil},
	{"map", "%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n", nil},
	{"set", "~2\r\n+a\r\n+b\r\n", nil},
	{"verbatim", "=8\r\ntxt:abcd\r\n", nil},
	{"blob error", "!3\r\nERR\r\n", nil},
	{"push", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$1\r\nm\r\n", nil},
	{"attribute with its reply", "|1\r\n+ttl\r\n:5\r\n$1\r\nv\r\n", nil},
	{"attribute inside an array", "*2\r\n|1\r\n+a\r\n+b\r\n:1\r\n:2\r\n", nil},
	{"big bulk", "$100000\r\n" + strings.Repeat("x", 100000) + "\r\n", nil},
	{"truncated bulk", "$5\r\nab", io.ErrUnexpectedEOF},
	{"truncated header", "*2\r\n$1", io.ErrUnexpectedEOF},
	{"truncated array", "*2\r\n+a\r\n", io.ErrUnexpectedEOF},
	{"no crlf after bulk", "$1\r\nabc\r\n", resp.ErrBadReply},
	{"unknown type", "?x\r\n", resp.ErrBadReply},
	{"bad length", "$x\r\n", resp.ErrBadReply},
	// Headers the bulk fast path (bulkHeader) leaves to the general one.
	{"bulk length with a leading zero", "$01\r\na\r\n", resp.ErrBadReply},
	{"bulk length with a sign", "$+1\r\na\r\n", resp.ErrBadReply},
	{"bulk length of 19 digits", "$1000000000000000000\r\n", resp.ErrBadReply},
	{"bulk length then a letter", "$1x\r\na\r\n", resp.ErrBadReply},
	{"bulk header with a bare CR", "$1\ra\r\n", resp.ErrBadReply},
	{"bulk of CRLFs in an array", "*2\r\n$2\r\n\r\n\r\n$10\r\n0123456789\r\n", nil},
	{"negative length", "*-2\r\n", resp.ErrBadReply},
	{"null map", "%-1\r\n", resp.ErrBadReply},
	{"null verbatim", "=-1\r\n", resp.ErrBadReply},
	{"bad bool", "#x\r\n", resp.ErrBadReply},
	{"bad null", "_x\r\n", resp.ErrBadReply},
	{"bare LF", "+OK\n", resp.ErrBadReply},
	{"empty line", "\r\n", resp.ErrBadReply},
	{"empty", "", io.EOF},
}

// TestScannerFrames checks each case as resp.ReplyReader reads it, one
// byte at a time and whole.
func TestScannerFrames(t *testing.T) {
	for _, tt := range scanCases {
		t.Run(tt.name, func(t *testing.T) {
			for _, oneByte := range []bool{true, false} {
				var rd io.Reader = strings.NewReader(tt.in)
				if oneByte {
					rd = iotest.OneByteReader(rd)
				}
				s := newScanner(rd)
				got, err := s.Read()
				ref, refErr := resp.NewReplyReader(strings.NewReader(tt.in)).Read()
				if tt.err != nil {
					if !errors.Is(err, tt.err) || !errors.Is(refErr, tt.err) {
						t.Fatalf("Read(%q) = %q, %v (ReplyReader: %v); want error %v", tt.in, got, err, refErr, tt.err)
					}
					continue
				}
				if err != nil || string(got) != tt.in || string(ref) != tt.in {
					t.Fatalf("Read(%q) = %q, %v (ReplyReader: %q, %v)", tt.in, got, err, ref, refErr)
				}
				if _, err := s.Read(); !errors.Is(err, io.EOF) {
					t.Fatalf("after the reply: %v, want EOF", err)
				}
			}
		})
	}
}

func TestScannerLimits(t *testing.T) {
	s := newScanner(strings.NewReader("$100\r\n" + strings.Repeat("x", 100) + "\r\n"))
	s.maxBulk = 10
	if _, err := s.Read(); !errors.Is(err, resp.ErrBadReply) {
		t.Fatalf("bulk over maxBulk: %v", err)
	}
	deep := strings.Repeat("*1\r\n", 100) + "+x\r\n"
	s = newScanner(strings.NewReader(deep))
	s.maxDepth = 64
	if _, err := s.Read(); !errors.Is(err, resp.ErrBadReply) {
		t.Fatalf("100 levels over maxDepth 64: %v", err)
	}
	deep = strings.Repeat("*1\r\n", resp.DefaultMaxDepth) + "+x\r\n"
	if _, err := newScanner(strings.NewReader(deep)).Read(); !errors.Is(err, resp.ErrBadReply) {
		t.Fatalf("%d levels: %v", resp.DefaultMaxDepth, err)
	}
	deep = strings.Repeat("*1\r\n", resp.DefaultMaxDepth-1) + "+x\r\n"
	if got, err := newScanner(strings.NewReader(deep)).Read(); err != nil || string(got) != deep {
		t.Fatalf("%d levels (Redis's deepest is about 8,000): %v", resp.DefaultMaxDepth-1, err)
	}
	long := "+" + strings.Repeat("x", 70<<10) + "\r\n"
	if _, err := newScanner(strings.NewReader(long)).Read(); !errors.Is(err, resp.ErrBadReply) {
		t.Fatalf("a 70 KB line: %v", err)
	}
}

// randomReply appends a random well-formed RESP2 or RESP3 reply.
func randomReply(b []byte, rng *rand.Rand, depth int) []byte {
	k := rng.IntN(14)
	if depth >= 3 && k >= 9 {
		k = rng.IntN(9)
	}
	switch k {
	case 0:
		return append(b, "+OK\r\n"...)
	case 1:
		return append(b, "-ERR wrong\r\n"...)
	case 2:
		return append(strconv.AppendInt(append(b, ':'), rng.Int64N(1<<40)-1<<39, 10), '\r', '\n')
	case 3, 4:
		n := rng.IntN(100)
		if depth == 0 && rng.IntN(20) == 0 {
			n = rng.IntN(200 << 10)
		}
		b = strconv.AppendInt(append(b, '$'), int64(n), 10)
		b = append(b, '\r', '\n')
		for i := 0; i < n; i++ {
			b = append(b, "ab\r\n$*:"[rng.IntN(7)])
		}
		return append(b, '\r', '\n')
	case 5:
		return append(b, "$-1\r\n"...)
	case 6:
		return append(b, "_\r\n"...)
	case 7:
		return append(b, ",3.25\r\n"...)
	case 8:
		return append(b, "=7\r\ntxt:a\r\n\r\n"...)
	default:
		t := "*~>%|"[k-9]
		n := rng.IntN(6)
		if depth == 0 && rng.IntN(10) == 0 {
			n = rng.IntN(300)
		}
		b = strconv.AppendInt(append(b, t), int64(n), 10)
		b = append(b, '\r', '\n')
		elems := n
		if t == '%' || t == '|' {
			elems *= 2
		}
		for i := 0; i < elems; i++ {
			b = randomReply(b, rng, depth+1)
		}
		if t == '|' {
			b = randomReply(b, rng, depth)
		}
		return b
	}
}

// chunkReader returns its input in reads of random sizes.
type chunkReader struct {
	b   []byte
	rng *rand.Rand
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.b), 1+c.rng.IntN(9000))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

// TestScannerRandomStreams reads streams of random replies cut at random
// points: every frame is the one written, and the same as ReplyReader's.
func TestScannerRandomStreams(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		var in []byte
		var ends []int
		for i := 0; i < 1+rng.IntN(60); i++ {
			in = randomReply(in, rng, 0)
			ends = append(ends, len(in))
		}
		s := newScanner(&chunkReader{b: in, rng: rng})
		ref := resp.NewReplyReader(bytes.NewReader(in))
		start := 0
		for i, end := range ends {
			got, err := s.Read()
			want, refErr := ref.Read()
			if err != nil || refErr != nil || !bytes.Equal(got, in[start:end]) || !bytes.Equal(got, want) {
				t.Fatalf("round %d, reply %d: %.60q, %v (ReplyReader %v); want %.60q", round, i, got, err, refErr, in[start:end])
			}
			start = end
		}
		if _, err := s.Read(); !errors.Is(err, io.EOF) {
			t.Fatalf("round %d: after the last reply: %v", round, err)
		}
	}
}

// TestScannerAgainstRedis reads a real redis-server's replies, RESP2 and
// RESP3, pipelined, Redis's deepest reply included: each is one frame, the
// last is PING's.
func TestScannerAgainstRedis(t *testing.T) {
	srv := startServer(t, 0)
	for _, proto := range []string{"2", "3"} {
		t.Run("resp"+proto, func(t *testing.T) {
			c, err := net.Dial("tcp", srv.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(hangLimit))
			cmds := []string{
				"HELLO " + proto, "FLUSHALL", "SET s v", "GET s", "GET missing", "HSET h a 1 b 2", "HGETALL h",
				"SADD set x y", "SMEMBERS set", "ZADD z 1.5 m", "ZRANGE z 0 -1 WITHSCORES", "ZSCORE z m",
				"LPOP nolist 2", "INFO server", "CLIENT INFO", "COMMAND INFO get set", "CONFIG GET maxmemory*",
				"NOSUCH", "DEBUG PROTOCOL attrib", "DEBUG PROTOCOL bignum", "DEBUG PROTOCOL verbatim",
				"DEBUG PROTOCOL true", "DEBUG PROTOCOL null", "DEBUG PROTOCOL double", "COMMAND",
			}
			req := encode(cmds...)
			req = AppendCommandStrings(req, []string{"EVAL", "local a = {}; local b = {a}; a[1] = b; return a", "0"})
			req = AppendCommandStrings(req, []string{"PING"})
			if _, err := c.Write(req); err != nil {
				t.Fatal(err)
			}
			s := newScanner(c)
			var last []byte
			for i := 0; i < len(cmds)+2; i++ {
				got, err := s.Read()
				if err != nil {
					t.Fatalf("reply %d: %v", i, err)
				}
				last = append(last[:0], got...)
			}
			if string(last) != "+PONG\r\n" {
				t.Fatalf("the last reply is %q, want PING's: a frame boundary was misread", last)
			}
		})
	}
}

// FuzzScanner: arbitrary bytes never panic, errors are classified, and a
// frame is whatever ReplyReader reads from the same bytes.
func FuzzScanner(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		s := newScanner(iotest.HalfReader(bytes.NewReader(in)))
		s.maxBulk = 1 << 20
		ref := resp.NewReplyReader(bytes.NewReader(in))
		ref.MaxBulkLen = 1 << 20
		for range 8 {
			got, err := s.Read()
			want, refErr := ref.Read()
			if err != nil {
				if !errors.Is(err, resp.ErrBadReply) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("unclassified error %v", err)
				}
				if refErr == nil {
					t.Fatalf("scanner: %v; ReplyReader read %q", err, want)
				}
				return
			}
			if refErr != nil || !bytes.Equal(got, want) {
				t.Fatalf("scanner read %q; ReplyReader %q, %v", got, want, refErr)
			}
		}
	})
}

// BenchmarkScannerArray reads LRANGE_100's replies as make bench makes
// them (100 elements of 64 bytes), 16 to a read as at -P 16.
func BenchmarkScannerArray(b *testing.B) {
	one := []byte("*100\r\n")
	for range 100 {
		one = append(one, "$64\r\n"...)
		one = append(one, strings.Repeat("x", 64)...)
		one = append(one, "\r\n"...)
	}
	batch := bytes.Repeat(one, 16)
	rd := bytes.NewReader(batch)
	s := newScanner(rd)
	b.SetBytes(int64(len(one)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%16 == 0 {
			rd.Reset(batch)
		}
		if _, err := s.Read(); err != nil {
			b.Fatal(err)
		}
	}
}
