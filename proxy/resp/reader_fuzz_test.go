package resp

import (
	"bytes"
	"reflect"
	"strconv"
	"testing"
	"testing/iotest"
)

// refParse is a plain, whole-input model of Redis 7.0's request parsing,
// written independently of Reader. It gives the result Redis reaches when
// the input arrives one byte per read (the "too big" checks then fire as
// soon as a line without its terminator exceeds MaxInlineLen).
func refParse(data []byte, lim Limits) parsed {
	lim = lim.normalized()
	var p parsed
	// strchr finds c from i on, stopping at a NUL as C's strchr does.
	strchr := func(i int, c byte) int {
		for ; i < len(data); i++ {
			switch data[i] {
			case c:
				return i
			case 0:
				return -1
			}
		}
		return -1
	}
	end := func(msg string) parsed { p.end = msg; return p }
	// header finds the '\r' of the line at i, which must be followed by one
	// more byte. It returns -1 and a message (or "EOF") if there is none.
	header := func(i int, tooBig string) (int, string) {
		cr := strchr(i, '\r')
		switch {
		case cr < 0 && len(data)-i > lim.MaxInlineLen, cr >= 0 && cr-i > lim.MaxInlineLen:
			return -1, tooBig
		case cr < 0 || cr+1 >= len(data):
			return -1, "EOF"
		}
		return cr, ""
	}
	pos := 0
	for pos < len(data) {
		if data[pos] != '*' {
			nl := strchr(pos, '\n')
			if nl < 0 && len(data)-pos > lim.MaxInlineLen || nl >= 0 && nl-pos > lim.MaxInlineLen {
				return end("ERR Protocol error: too big inline request")
			}
			if nl < 0 {
				break
			}
			stop := nl
			if stop > pos && data[stop-1] == '\r' {
				stop--
			}
			args, ok := refSplit(string(data[pos:stop]))
			if !ok {
				return end("ERR Protocol error: unbalanced quotes in request")
			}
			pos = nl + 1
			if len(args) > 0 {
				p.cmds = append(p.cmds, args)
				p.inline = append(p.inline, true)
			}
			continue
		}
		cr, msg := header(pos, "ERR Protocol error: too big mbulk count string")
		if cr < 0 {
			return end(msg)
		}
		count, err := strconv.ParseInt(string(data[pos+1:cr]), 10, 64)
		if !refNumber(data[pos+1:cr]) || err != nil || count > lim.MaxMultibulkLen {
			return end("ERR Protocol error: invalid multibulk length")
		}
		if count > 10 && lim.Unauthenticated {
			return end("ERR Protocol error: unauthenticated multibulk length")
		}
		pos = cr + 2
		var cmd []string
		for ; count > 0; count-- {
			cr, msg := header(pos, "ERR Protocol error: too big bulk count string")
			if cr < 0 {
				return end(msg)
			}
			if c := data[pos]; c != '$' {
				if c == '\r' || c == '\n' {
					c = ' '
				}
				return end("ERR Protocol error: expected '$', got '" + string([]byte{c}) + "'")
			}
			n, err := strconv.ParseInt(string(data[pos+1:cr]), 10, 64)
			if !refNumber(data[pos+1:cr]) || err != nil || n < 0 || n > lim.MaxBulkLen {
				return end("ERR Protocol error: invalid bulk length")
			}
			if n > 16384 && lim.Unauthenticated {
				return end("ERR Protocol error: unauthenticated bulk length")
			}
			pos = cr + 2
			if int64(len(data)-pos) < n+2 {
				return end("EOF")
			}
			cmd = append(cmd, string(data[pos:pos+int(n)]))
			pos += int(n) + 2
		}
		if len(cmd) > 0 {
			p.cmds = append(p.cmds, cmd)
			p.inline = append(p.inline, false)
		}
	}
	return end("EOF")
}

// refNumber reports whether b is spelled as string2ll accepts: "0", or an
// optional '-' and a digit 1-9 then digits, 20 characters at most.
func refNumber(b []byte) bool {
	s := string(b)
	if s == "0" {
		return true
	}
	if len(s) > 20 {
		return false
	}
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// refSplit splits an inline line as sdssplitargs does.
func refSplit(s string) ([]string, bool) {
	get := func(k int) byte {
		if k < len(s) {
			return s[k]
		}
		return 0
	}
	space := func(c byte) bool { return c != 0 && bytes.IndexByte([]byte(" \t\n\v\f\r"), c) >= 0 }
	// closes reports whether a quote at k may close (space or end after it).
	closes := func(k int) bool { return get(k+1) == 0 || space(get(k+1)) }
	out := []string{}
	i := 0
	for {
		for space(get(i)) {
			i++
		}
		if get(i) == 0 {
			return out, true
		}
		var tok []byte
		var quote byte
	token:
		for {
			c := get(i)
			switch {
			case quote == 0 && (c == 0 || c == ' ' || c == '\t' || c == '\n' || c == '\r'):
				if c != 0 {
					i++
				}
				break token
			case quote == 0 && (c == '"' || c == '\''):
				quote = c
				i++
			case quote == 0:
				tok = append(tok, c)
				i++
			case c == 0:
				return nil, false
			case c == quote:
				if !closes(i) {
					return nil, false
				}
				i++
				break token
			case quote == '\'' && c == '\\' && get(i+1) == '\'':
				tok = append(tok, '\'')
				i += 2
			case quote == '"' && c == '\\' && get(i+1) == 'x' && i+4 <= len(s) && refHex(s[i+2:i+4]) >= 0:
				tok = append(tok, byte(refHex(s[i+2:i+4])))
				i += 4
			case quote == '"' && c == '\\' && get(i+1) != 0:
				e := get(i + 1)
				if k := bytes.IndexByte([]byte("nrtba"), e); k >= 0 {
					e = "\n\r\t\b\a"[k]
				}
				tok = append(tok, e)
				i += 2
			default:
				tok = append(tok, c)
				i++
			}
		}
		out = append(out, string(tok))
	}
}

// refHex parses two hex digits, or returns -1.
func refHex(s string) int {
	if len(s) != 2 || s[0] == '+' || s[0] == '-' {
		return -1
	}
	v, err := strconv.ParseUint(s, 16, 8)
	if err != nil {
		return -1
	}
	return int(v)
}

var fuzzLimits = []Limits{
	{MaxBulkLen: 1 << 16},
	{MaxBulkLen: 100, MaxMultibulkLen: 8, MaxInlineLen: 32},
	{MaxBulkLen: 1 << 16, Unauthenticated: true},
}

// FuzzReadCommand checks that on any input the Reader never panics, agrees
// with refParse, gives the same result however the input is split into
// reads, respects its limits and never returns more bytes than it was given.
func FuzzReadCommand(f *testing.F) {
	f.Add([]byte("PING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n"))
	f.Add([]byte(`ECHO "a\x41" 'b\'c'` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, lim := range fuzzLimits {
			want := refParse(data, lim)
			got := readAll(t, iotest.OneByteReader(bytes.NewReader(data)), 1, lim)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("limits %+v, one byte per read:\n got %.500q %q\nwant %.500q %q", lim, got.cmds, got.end, want.cmds, want.end)
			}
			// Bigger reads only change when a "too big" error fires.
			if len(data) <= lim.normalized().MaxInlineLen {
				chunk := len(data)%13 + 1
				for _, g := range []parsed{
					readAll(t, bytes.NewReader(data), 0, lim),
					readAll(t, &chunkReader{data, chunk}, chunk, lim),
				} {
					if !reflect.DeepEqual(g, want) {
						t.Fatalf("limits %+v, chunked reads:\n got %.500q %q\nwant %.500q %q", lim, g.cmds, g.end, want.cmds, want.end)
					}
				}
			}
			checkLimits(t, data, got, lim.normalized())
		}
	})
}

func checkLimits(t *testing.T, data []byte, p parsed, lim Limits) {
	total := 0
	for i, cmd := range p.cmds {
		if !p.inline[i] {
			maxArgs, maxLen := lim.MaxMultibulkLen, lim.MaxBulkLen
			if lim.Unauthenticated {
				maxArgs, maxLen = 10, 16384
			}
			if int64(len(cmd)) > maxArgs {
				t.Fatalf("%d arguments over the limit %d", len(cmd), maxArgs)
			}
			for _, a := range cmd {
				if int64(len(a)) > maxLen {
					t.Fatalf("argument of %d bytes over the limit %d", len(a), maxLen)
				}
				if !bytes.Contains(data, []byte(a)) {
					t.Fatalf("argument %.100q is not in the input", a)
				}
			}
		}
		for _, a := range cmd {
			total += len(a)
		}
	}
	if total > len(data) {
		t.Fatalf("returned %d bytes of arguments from %d bytes of input", total, len(data))
	}
}
