package harness

import (
	"net"
	"strings"
	"testing"
	"time"
)

// feed returns a Conn reading the given server bytes.
func feed(t *testing.T, data string) *Conn {
	t.Helper()
	client, server := net.Pipe()
	go func() {
		server.Write([]byte(data))
		server.Close()
	}()
	c := NewConn(client)
	c.Timeout = 2 * time.Second
	t.Cleanup(func() { c.Close() })
	return c
}

func TestReadEveryType(t *testing.T) {
	replies := []string{
		"+OK\r\n",
		"-ERR bad\r\n",
		":-42\r\n",
		"$3\r\na\r\n\r\n",
		"$0\r\n\r\n",
		"$-1\r\n",
		"*-1\r\n",
		"*0\r\n",
		"*2\r\n$1\r\na\r\n*1\r\n:1\r\n",
		"_\r\n",
		",3.14\r\n",
		",inf\r\n",
		"#t\r\n",
		"!5\r\nERR x\r\n",
		"=7\r\ntxt:abc\r\n",
		"(12345678901234567890\r\n",
		"%2\r\n+a\r\n:1\r\n+b\r\n:2\r\n",
		"~2\r\n+x\r\n+y\r\n",
		">2\r\n+message\r\n+hi\r\n",
		"|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n",
	}
	c := feed(t, strings.Join(replies, ""))
	for _, want := range replies {
		raw, err := c.ReadRaw()
		if err != nil {
			t.Fatalf("reading %q: %v", want, err)
		}
		if string(raw) != want {
			t.Fatalf("raw = %q, want %q", raw, want)
		}
	}
}

func TestReadParsedFields(t *testing.T) {
	c := feed(t, ":7\r\n$-1\r\n=7\r\ntxt:abc\r\n|1\r\n+k\r\n+v\r\n*1\r\n#f\r\n%1\r\n$1\r\nk\r\n*1\r\n:1\r\n")
	if r := c.Read(); r.Type != ':' || r.Int != 7 {
		t.Errorf("int: %+v", r)
	}
	if r := c.Read(); !r.Null || r.Type != '$' {
		t.Errorf("null bulk: %+v", r)
	}
	if r := c.Read(); r.Str != "abc" {
		t.Errorf("verbatim: %+v", r)
	}
	r := c.Read()
	if r.Type != '*' || r.Attr == nil || string(r.Attr.Raw) != "|1\r\n+k\r\n+v\r\n" || len(r.Elems) != 1 || r.Elems[0].Str != "f" {
		t.Errorf("attribute: %+v", r)
	}
	if r := c.Read(); r.Type != '%' || len(r.Elems) != 2 || string(r.Elems[1].Raw) != "*1\r\n:1\r\n" {
		t.Errorf("map: %+v", r)
	}
}

func TestReadRejectsGarbage(t *testing.T) {
	for _, in := range []string{"?x\r\n", ":abc\r\n", "$5\r\nab\r\n", "+OK\n", "#x\r\n", "$3\r\nabcde"} {
		if r := feed(t, in).Read(); r.Err == nil {
			t.Errorf("%q parsed as %s, want an error", in, r.String())
		}
	}
}

func TestCanonical(t *testing.T) {
	c := feed(t, "*3\r\n$1\r\nc\r\n$1\r\na\r\n$1\r\nb\r\n%2\r\n+z\r\n:1\r\n+a\r\n:2\r\n*4\r\n$1\r\nk\r\n$1\r\n2\r\n$1\r\na\r\n$1\r\n1\r\n")
	if got := string(Canonical(c.Read()).Raw); got != "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n" {
		t.Errorf("array: %q", got)
	}
	if got := string(Canonical(c.Read()).Raw); got != "%2\r\n+a\r\n:2\r\n+z\r\n:1\r\n" {
		t.Errorf("map: %q", got)
	}
	if got := string(CanonicalPairs(c.Read()).Raw); got != "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nk\r\n$1\r\n2\r\n" {
		t.Errorf("pairs: %q", got)
	}
}
