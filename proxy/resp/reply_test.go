package resp

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func TestReplyReaderFrames(t *testing.T) {
	tests := []struct {
		name string
		in   string
		err  error // nil: the whole input is one reply
	}{
		{"simple", "+OK\r\n", nil},
		{"error", "-ERR x\r\n", nil},
		{"int", ":-12\r\n", nil},
		{"bulk", "$3\r\nabc\r\n", nil},
		{"empty bulk", "$0\r\n\r\n", nil},
		{"null bulk", "$-1\r\n", nil},
		{"null array", "*-1\r\n", nil},
		{"binary bulk", "$4\r\n\r\n\r\n\r\n", nil},
		{"array", "*2\r\n$1\r\na\r\n:1\r\n", nil},
		{"nested", "*2\r\n*1\r\n+x\r\n*0\r\n", nil},
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
		{"truncated bulk", "$5\r\nab", io.ErrUnexpectedEOF},
		{"truncated array", "*2\r\n+a\r\n", io.ErrUnexpectedEOF},
		{"no crlf after bulk", "$1\r\nabc\r\n", ErrBadReply},
		{"unknown type", "?x\r\n", ErrBadReply},
		{"bad length", "$x\r\n", ErrBadReply},
		{"negative length", "*-2\r\n", ErrBadReply},
		{"null map", "%-1\r\n", ErrBadReply},
		{"bad bool", "#x\r\n", ErrBadReply},
		{"bare LF", "+OK\n", ErrBadReply},
		{"empty", "", io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One byte at a time: frames must not depend on read sizes.
			r := NewReplyReader(iotest.OneByteReader(strings.NewReader(tt.in)))
			got, err := r.Read()
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Read(%q) = %q, %v; want error %v", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.in {
				t.Fatalf("Read(%q) = %q, %v", tt.in, got, err)
			}
			if _, err := r.Read(); !errors.Is(err, io.EOF) {
				t.Fatalf("after the reply: %v, want EOF", err)
			}
		})
	}
}

func TestReplyReaderLimits(t *testing.T) {
	r := NewReplyReader(strings.NewReader("$100\r\n" + strings.Repeat("x", 100) + "\r\n"))
	r.MaxBulkLen = 10
	if _, err := r.Read(); !errors.Is(err, ErrBadReply) {
		t.Fatalf("bulk over MaxBulkLen: %v", err)
	}
	deep := strings.Repeat("*1\r\n", 100) + "+x\r\n"
	r = NewReplyReader(strings.NewReader(deep))
	r.MaxDepth = 64
	if _, err := r.Read(); !errors.Is(err, ErrBadReply) {
		t.Fatalf("100 levels of nesting over MaxDepth 64: %v", err)
	}
	deep = strings.Repeat("*1\r\n", DefaultMaxDepth) + "+x\r\n"
	if _, err := NewReplyReader(strings.NewReader(deep)).Read(); !errors.Is(err, ErrBadReply) {
		t.Fatalf("%d levels of nesting: %v", DefaultMaxDepth, err)
	}
}

// TestReplyReaderAgainstRedis reads every reply of a real redis-server,
// RESP2 and RESP3, pipelined: each must be exactly one frame, so that the
// reply after the last command is that command's (PING's) and nothing is
// left over.
func TestReplyReaderAgainstRedis(t *testing.T) {
	addr := startRedis(t)
	for _, proto := range []string{"2", "3"} {
		t.Run("resp"+proto, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			cmds := [][]string{
				{"HELLO", proto}, {"FLUSHALL"}, {"SET", "s", "v"}, {"GET", "s"}, {"GET", "missing"},
				{"HSET", "h", "a", "1", "b", "2"}, {"HGETALL", "h"}, {"SADD", "set", "x", "y"},
				{"SMEMBERS", "set"}, {"ZADD", "z", "1.5", "m"}, {"ZRANGE", "z", "0", "-1", "WITHSCORES"},
				{"ZSCORE", "z", "m"}, {"INCRBYFLOAT", "f", "0.1"}, {"LPOP", "nolist", "2"},
				{"INFO", "server"}, {"CLIENT", "INFO"}, {"COMMAND", "INFO", "get", "set"},
				{"CONFIG", "GET", "maxmemory*"}, {"NOSUCH"}, {"XINFO", "HELP"}, {"DEBUG", "PROTOCOL", "attrib"},
				{"DEBUG", "PROTOCOL", "bignum"}, {"DEBUG", "PROTOCOL", "verbatim"}, {"DEBUG", "PROTOCOL", "true"},
				{"DEBUG", "PROTOCOL", "null"}, {"DEBUG", "PROTOCOL", "double"},
				// About 8,000 nested arrays, then an error (Redis's deepest reply).
				{"EVAL", "local a = {}; local b = {a}; a[1] = b; return a", "0"}, {"PING"},
			}
			var req bytes.Buffer
			for _, args := range cmds {
				req.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
				for _, a := range args {
					req.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
				}
			}
			if _, err := c.Write(req.Bytes()); err != nil {
				t.Fatal(err)
			}
			r := NewReplyReader(c)
			var last []byte
			for i := range cmds {
				got, err := r.Read()
				if err != nil {
					t.Fatalf("reply %d (%v): %v", i, cmds[i], err)
				}
				last = append(last[:0], got...)
			}
			if string(last) != "+PONG\r\n" {
				t.Fatalf("the last reply is %q, want PING's: a frame boundary was misread", last)
			}
		})
	}
}

// FuzzReadReply: arbitrary bytes never panic, errors are classified, and
// a reply read once reads back identically.
func FuzzReadReply(f *testing.F) {
	for _, s := range []string{"+OK\r\n", "*2\r\n$1\r\na\r\n:1\r\n", "%1\r\n+a\r\n_\r\n", "|1\r\n+a\r\n+b\r\n:1\r\n",
		">2\r\n+m\r\n,1e3\r\n", "$5\r\nab", "*-1\r\n", "=4\r\ntxt:\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReplyReader(bytes.NewReader(in))
		r.MaxBulkLen = 1 << 20
		got, err := r.Read()
		if err != nil {
			if !errors.Is(err, ErrBadReply) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if !bytes.HasPrefix(in, got) {
			t.Fatalf("reply %q is not a prefix of the input", got)
		}
		again, err := NewReplyReader(bytes.NewReader(got)).Read()
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("re-reading %q: %q, %v", got, again, err)
		}
	})
}
