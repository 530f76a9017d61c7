package replica

import (
	"bufio"
	"strings"
	"testing"
)

// The stream parser returns each command's arguments and its exact bytes:
// the offset advances by len(raw), so the bytes must be the master's,
// whatever the read boundaries.
func TestParserKeepsExactBytes(t *testing.T) {
	cmds := []string{
		"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n",
		"*3\r\n$3\r\nSET\r\n$3\r\nk\r\n\r\n$0\r\n\r\n", // a key holding CRLF, an empty value
		"*1\r\n$4\r\nPING\r\n",
		"\n", // an empty inline line
		"*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n",
	}
	want := [][]string{{"SELECT", "0"}, {"SET", "k\r\n", ""}, {"PING"}, nil, {"REPLCONF", "GETACK", "*"}}
	// A 16-byte buffer: commands and arguments span several reads.
	br := bufio.NewReaderSize(strings.NewReader(strings.Join(cmds, "")), 16)
	var p parser
	for i, c := range cmds {
		args, raw, err := p.read(br)
		if err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
		if string(raw) != c {
			t.Errorf("command %d raw %q, want %q", i, raw, c)
		}
		if len(args) != len(want[i]) {
			t.Fatalf("command %d: %d args, want %d", i, len(args), len(want[i]))
		}
		for j, a := range args {
			if string(a) != want[i][j] {
				t.Errorf("command %d arg %d: %q, want %q", i, j, a, want[i][j])
			}
		}
	}
	if _, _, err := p.read(br); err == nil {
		t.Error("no error at the end of the stream")
	}
}

func TestParserRejectsGarbage(t *testing.T) {
	for _, in := range []string{"*x\r\n", "*1\r\n+OK\r\n", "*1\r\n$-5\r\n", "*1\r\n$3\r\nab"} {
		var p parser
		if _, _, err := p.read(bufio.NewReader(strings.NewReader(in))); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// The stream's database is read from the RDB's auxiliary fields without
// consuming them (the loader reads the RDB from the same buffer).
func TestStreamDBOf(t *testing.T) {
	aux := func(k, v string) string { return "\xfa" + string(rune(len(k))) + k + v }
	head := "REDIS0010" + aux("redis-ver", "\x067.0.15") + aux("repl-id", "\x28"+strings.Repeat("a", 40)) +
		aux("repl-stream-db", "\xc0\x03") + "\xfe\x00"
	br := bufio.NewReader(strings.NewReader(head))
	if db := streamDBOf(br); db != 3 {
		t.Errorf("repl-stream-db: %d, want 3", db)
	}
	if b, _ := br.Peek(9); string(b) != "REDIS0010" {
		t.Errorf("the RDB was consumed: %q", b)
	}
	noAux := bufio.NewReader(strings.NewReader("REDIS0010\xfe\x00\xff"))
	if db := streamDBOf(noAux); db != 0 {
		t.Errorf("without the field: %d", db)
	}
}
