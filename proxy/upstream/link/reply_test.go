package link

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// encodeBulks writes items as a RESP2 array of bulk strings (a nil item
// as a null bulk, nil items as a null array).
func encodeBulks(dst []byte, items [][]byte) []byte {
	if items == nil {
		return append(dst, "*-1\r\n"...)
	}
	dst = fmt.Appendf(dst, "*%d\r\n", len(items))
	for _, it := range items {
		if it == nil {
			dst = append(dst, "$-1\r\n"...)
			continue
		}
		dst = fmt.Appendf(dst, "$%d\r\n", len(it))
		dst = append(dst, it...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// encodeScan writes a SCAN-family reply.
func encodeScan(cursor uint64, items [][]byte) []byte {
	c := strconv.FormatUint(cursor, 10)
	dst := fmt.Appendf(nil, "*2\r\n$%d\r\n%s\r\n", len(c), c)
	return encodeBulks(dst, items)
}

// parsedBulks renders ParseBulks-style results for comparison (nil and
// empty told apart).
func parsedBulks(items [][]byte) string {
	if items == nil {
		return "<nil>"
	}
	var b strings.Builder
	b.WriteString("[")
	for i, it := range items {
		if i > 0 {
			b.WriteString(" ")
		}
		if it == nil {
			b.WriteString("<null>")
		} else {
			b.WriteString(strconv.Quote(string(it)))
		}
	}
	b.WriteString("]")
	return b.String()
}

// TestParseBulks covers valid, null, truncated, nested and malformed
// arrays.
func TestParseBulks(t *testing.T) {
	tests := []struct {
		in      string
		want    string // parsedBulks of the result
		wantErr string // substring of the error, "" for none
	}{
		{in: "*0\r\n", want: "[]"},
		{in: "*-1\r\n", want: "<nil>"},
		{in: "*1\r\n$1\r\na\r\n", want: `["a"]`},
		{in: "*3\r\n$0\r\n\r\n$-1\r\n$4\r\na\r\nb\r\n", want: `["" <null> "a\r\nb"]`},
		{in: "*2\r\n$1\r\na\r\n$1\r\nb\r\ntrailing", want: `["a" "b"]`},
		{in: "*2\r\n$1\r\na\r\n", wantErr: "want $"}, // truncated between items
		{in: "*2\r\n$1\r\na\r\n$", wantErr: "short header"},
		{in: "*1\r\n$5\r\nab\r\n", wantErr: "short bulk"},
		{in: "*1\r\n$2\r\nab", wantErr: "short bulk"},
		{in: "*1\r", wantErr: "short header"},
		{in: "*1", wantErr: "short header"},
		{in: "", wantErr: "want *"},
		{in: "*1\r\n*1\r\n$1\r\na\r\n", wantErr: "want $"}, // nested
		{in: "*1\r\n:1\r\n", wantErr: "want $"},
		{in: "$1\r\na\r\n", wantErr: "want *"},
		{in: "-ERR no\r\n", wantErr: "want *"},
		{in: "*x\r\n", wantErr: "bad length"},
		{in: "*1\r\n$x\r\nab\r\n", wantErr: "bad length"},
		{in: "*99999999999999999999\r\n", wantErr: "bad length"},
		{in: "*1\r\n$99999999999\r\nab\r\n", wantErr: "short bulk"},
	}
	for _, tt := range tests {
		got, err := ParseBulks([]byte(tt.in))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseBulks(%q) = %s, %v; want an error with %q", tt.in, parsedBulks(got), err, tt.wantErr)
			}
			continue
		}
		if err != nil || parsedBulks(got) != tt.want {
			t.Errorf("ParseBulks(%q) = %s, %v; want %s", tt.in, parsedBulks(got), err, tt.want)
		}
	}

	// The items are copies: the reply buffer can be reused.
	buf := []byte("*1\r\n$3\r\nabc\r\n")
	got, _ := ParseBulks(buf)
	copy(buf, "*1\r\n$3\r\nxyz\r\n")
	if string(got[0]) != "abc" {
		t.Fatalf("ParseBulks item aliases the input: %q", got[0])
	}
}

// TestParseScan covers SCAN-family replies.
func TestParseScan(t *testing.T) {
	tests := []struct {
		in      string
		cursor  uint64
		want    string
		wantErr string
	}{
		{in: "*2\r\n$1\r\n0\r\n*0\r\n", want: "[]"},
		{in: "*2\r\n$2\r\n17\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n", cursor: 17, want: `["a" "b"]`},
		{in: "*2\r\n$20\r\n18446744073709551615\r\n*1\r\n$0\r\n\r\n", cursor: 1<<64 - 1, want: `[""]`},
		{in: "*3\r\n$1\r\n0\r\n*0\r\n", wantErr: "scan reply"},
		{in: "*1\r\n$1\r\n0\r\n", wantErr: "scan reply"},
		{in: "*2\r\n$1\r\n0\r\n", wantErr: "want *"},
		{in: "*2\r\n$1\r\n0\r\n*", wantErr: "short header"},
		{in: "*2\r\n$1\r\n0\r\n*2\r\n$1\r\na\r\n", wantErr: "want $"},
		{in: "*2\r\n:0\r\n*0\r\n", wantErr: "want $"},
		{in: "*2\r\n$1\r\n0\r\n$1\r\na\r\n", wantErr: "want *"},
		{in: "*2\r\n$3\r\nabc\r\n*0\r\n", wantErr: "invalid syntax"},
		{in: "*2\r\n$-1\r\n*0\r\n", wantErr: "invalid syntax"},
		{in: "*2\r\n$20\r\n18446744073709551616\r\n*0\r\n", wantErr: "out of range"},
		{in: "-ERR unknown command\r\n", wantErr: "want *"},
		{in: "", wantErr: "want *"},
	}
	for _, tt := range tests {
		cursor, got, err := ParseScan([]byte(tt.in))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseScan(%q) = %d, %s, %v; want an error with %q", tt.in, cursor, parsedBulks(got), err, tt.wantErr)
			}
			continue
		}
		if err != nil || cursor != tt.cursor || parsedBulks(got) != tt.want {
			t.Errorf("ParseScan(%q) = %d, %s, %v; want %d, %s", tt.in, cursor, parsedBulks(got), err, tt.cursor, tt.want)
		}
	}
}

// TestParseRealReplies parses what a real server sends: arrays with
// nulls, and whole SCAN, HSCAN, SSCAN and ZSCAN iterations.
func TestParseRealReplies(t *testing.T) {
	s := startServer(t, 0)
	c := s.admin(t, 0)
	mustDo(t, c, "RPUSH", "l", "a", "", "b\r\nc")
	mustDo(t, c, "SET", "s", "v")
	mustDo(t, c, "SET", "big", strings.Repeat("x", 40000))

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"LRANGE", "l", "0", "-1"}, `["a" "" "b\r\nc"]`},
		{[]string{"MGET", "s", "missing", "l"}, `["v" <null> <null>]`},
		{[]string{"LRANGE", "missing", "0", "-1"}, `[]`},
	} {
		got, err := ParseBulks(mustDo(t, c, tt.args...))
		if err != nil || parsedBulks(got) != tt.want {
			t.Errorf("ParseBulks(%v) = %s, %v; want %s", tt.args, parsedBulks(got), err, tt.want)
		}
	}
	got, err := ParseBulks(mustDo(t, c, "MGET", "big", "big"))
	if err != nil || len(got) != 2 || len(got[0]) != 40000 || len(got[1]) != 40000 {
		t.Fatalf("ParseBulks(MGET big big): %d items, %v", len(got), err)
	}

	// Enough members that the encodings are hashtables and SCAN pages.
	const n = 600
	wantKeys := map[string]bool{"l": true, "s": true, "big": true, "h": true, "set": true, "z": true}
	for i := range n {
		m := "m" + strconv.Itoa(i)
		c.Send("HSET", "h", m, "v"+strconv.Itoa(i))
		c.Send("SADD", "set", m)
		c.Send("ZADD", "z", strconv.Itoa(i), m)
		c.Send("SET", "k"+strconv.Itoa(i), "x")
		wantKeys["k"+strconv.Itoa(i)] = true
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 4 * n {
		if r, err := c.Read(); err != nil || IsError(r) {
			t.Fatalf("setup: %q %v", r, err)
		}
	}
	scanAll := func(args ...string) [][]byte {
		t.Helper()
		var all [][]byte
		cursor := uint64(0)
		for page := 0; ; page++ {
			if page > 10*n {
				t.Fatalf("%v: no end of iteration", args)
			}
			a := append(slices.Clone(args), strconv.FormatUint(cursor, 10)) // SCAN c, HSCAN key c
			next, items, err := ParseScan(mustDo(t, c, append(a, "COUNT", "50")...))
			if err != nil {
				t.Fatalf("ParseScan(%v): %v", a, err)
			}
			all = append(all, items...)
			if next == 0 {
				return all
			}
			cursor = next
		}
	}
	keys := map[string]bool{}
	for _, k := range scanAll("SCAN") {
		keys[string(k)] = true
	}
	if len(keys) != len(wantKeys) {
		t.Errorf("SCAN found %d distinct keys; want %d", len(keys), len(wantKeys))
	}
	for k := range wantKeys {
		if !keys[k] {
			t.Errorf("SCAN missed %q", k)
		}
	}
	for _, tt := range []struct {
		cmd, key string
		value    func(i int) string // "" for none (a set)
	}{
		{"HSCAN", "h", func(i int) string { return "v" + strconv.Itoa(i) }},
		{"SSCAN", "set", nil},
		{"ZSCAN", "z", strconv.Itoa},
	} {
		items := scanAll(tt.cmd, tt.key)
		step := 1
		if tt.value != nil {
			step = 2
		}
		if len(items)%step != 0 {
			t.Fatalf("%s: odd item count %d", tt.cmd, len(items))
		}
		seen := map[string]string{}
		for i := 0; i < len(items); i += step {
			v := ""
			if step == 2 {
				v = string(items[i+1])
			}
			seen[string(items[i])] = v
		}
		if len(seen) != n {
			t.Errorf("%s found %d distinct members; want %d", tt.cmd, len(seen), n)
		}
		for i := range n {
			want := ""
			if tt.value != nil {
				want = tt.value(i)
			}
			if v, ok := seen["m"+strconv.Itoa(i)]; !ok || v != want {
				t.Errorf("%s: m%d = %q, %v; want %q", tt.cmd, i, v, ok, want)
				break
			}
		}
	}
}

// TestInfoField reads fields from a real INFO reply in both protocols,
// and from hand-made bodies.
func TestInfoField(t *testing.T) {
	s := startServer(t, 0)
	a := s.admin(t, 0)
	mustDo(t, a, "SET", "a", "1")
	mustDo(t, a, "SET", "b", "2", "EX", "1000")
	mustDo(t, a, "SELECT", "3")
	mustDo(t, a, "SET", "c", "3")
	for _, proto := range []int{2, 3} {
		c, err := Dial(Target{Addr: s.addr}, proto, 0, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		info := BulkPayload(mustDo(t, c, "INFO"))
		if len(info) == 0 {
			t.Fatalf("RESP%d: INFO gave no payload", proto)
		}
		checks := []struct {
			field string
			match string // regexp for the value; "" when absent
		}{
			{"redis_version", `^7\.\d+\.\d+$`},
			{"tcp_port", "^" + strconv.Itoa(s.port) + "$"},
			{"used_memory", `^[1-9]\d*$`},
			{"used_memory_human", `^[\d.]+[KMG]?$`},
			{"maxmemory_policy", `^noeviction$`},
			{"db0", `^keys=2,expires=1,avg_ttl=\d+$`},
			{"db3", `^keys=1,expires=0,avg_ttl=0$`},
			{"db1", ""},
			{"used_memor", ""}, // a prefix of a field is not the field
			{"# Memory", ""},
			{"", ""},
		}
		for _, ck := range checks {
			v, ok := InfoField(info, ck.field)
			if ck.match == "" {
				if ok {
					t.Errorf("RESP%d: InfoField(%q) = %q; want absent", proto, ck.field, v)
				}
				continue
			}
			if !ok || !regexp.MustCompile(ck.match).MatchString(v) {
				t.Errorf("RESP%d: InfoField(%q) = %q, %v; want a match of %s", proto, ck.field, v, ok, ck.match)
			}
		}
	}

	body := []byte("# S\r\na:1\r\nab:2\nempty:\r\nx:y:z\r\nlast:end")
	for _, tt := range []struct {
		field, want string
		ok          bool
	}{
		{"a", "1", true},
		{"ab", "2", true},
		{"empty", "", true},
		{"x", "y:z", true},
		{"last", "end", true},
		{"b", "", false},
		{"S", "", false},
	} {
		if v, ok := InfoField(body, tt.field); v != tt.want || ok != tt.ok {
			t.Errorf("InfoField(body, %q) = %q, %v; want %q, %v", tt.field, v, ok, tt.want, tt.ok)
		}
	}
	if _, ok := InfoField(nil, "a"); ok {
		t.Error("InfoField(nil) found a field")
	}
}

// splitItems makes up to 64 array items out of fuzz input: split at 0x00,
// an item starting with 0x01 stands for a null.
func splitItems(data []byte) [][]byte {
	if len(data) == 0 {
		return [][]byte{}
	}
	parts := bytes.SplitN(data, []byte{0}, 64)
	items := make([][]byte, len(parts))
	for i, p := range parts {
		if len(p) > 0 && p[0] == 1 {
			items[i] = nil
		} else {
			items[i] = p // never nil: a subslice of data
		}
	}
	return items
}

// checkPrefixes checks that strict prefixes of a well-formed reply fail
// to parse (all of them for short replies, a sample for long ones).
func checkPrefixes(t *testing.T, enc []byte, parse func([]byte) error) {
	step := 1
	if len(enc) > 512 {
		step = len(enc)/64 + 1
	}
	for cut := 0; cut < len(enc); cut += step {
		if parse(enc[:cut]) == nil {
			t.Fatalf("the %d-byte prefix of %q parsed without error", cut, enc)
		}
	}
}

// FuzzParseBulks checks that ParseBulks never panics, that what it
// accepts is consistent, and that it round-trips well-formed arrays.
func FuzzParseBulks(f *testing.F) {
	for _, s := range []string{
		"*0\r\n", "*-1\r\n", "*2\r\n$1\r\na\r\n$-1\r\n", "*2\r\n$1\r\na\r\n",
		"*1\r\n*1\r\n$1\r\na\r\n", "*1\r\n$99999999999\r\nab\r\n", "a\x00\x01\x00b\r\nc",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		items, err := ParseBulks(data)
		if err == nil && items != nil {
			total := 0
			for _, it := range items {
				total += len(it)
			}
			// Each item takes at least 5 bytes ("$-1\r\n"), plus its payload.
			if 5*len(items)+total > len(data) {
				t.Fatalf("ParseBulks(%q) returned %d items (%d bytes) from %d bytes", data, len(items), total, len(data))
			}
		}

		want := splitItems(data)
		enc := encodeBulks(nil, want)
		got, err := ParseBulks(enc)
		if err != nil {
			t.Fatalf("ParseBulks(%q): %v", enc, err)
		}
		if len(got) != len(want) {
			t.Fatalf("ParseBulks(%q) = %d items; want %d", enc, len(got), len(want))
		}
		for i := range want {
			if w := want[i]; (got[i] == nil) != (w == nil) || !bytes.Equal(got[i], w) {
				t.Fatalf("ParseBulks(%q) item %d = %q; want %q", enc, i, got[i], w)
			}
		}
		checkPrefixes(t, enc, func(b []byte) error { _, err := ParseBulks(b); return err })
	})
}

// FuzzParseScan checks that ParseScan never panics, that what it accepts
// re-encodes to the same result, and that it round-trips well-formed
// replies.
func FuzzParseScan(f *testing.F) {
	for _, s := range []string{
		"*2\r\n$1\r\n0\r\n*0\r\n", "*2\r\n$2\r\n17\r\n*2\r\n$1\r\na\r\n$-1\r\n",
		"*2\r\n$1\r\n0\r\n", "*3\r\n$1\r\n0\r\n*0\r\n", "*2\r\n$-1\r\n*0\r\n",
		"\x07\x00\x00\x00\x00\x00\x00\x00a\x00b",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cursor, items, err := ParseScan(data)
		if err == nil {
			enc := encodeScan(cursor, items)
			c2, items2, err := ParseScan(enc)
			if err != nil || c2 != cursor || parsedBulks(items2) != parsedBulks(items) {
				t.Fatalf("ParseScan(%q) = %d %s, but its re-encoding %q gives %d %s, %v",
					data, cursor, parsedBulks(items), enc, c2, parsedBulks(items2), err)
			}
		}

		var cur uint64
		rest := data
		if len(data) >= 8 {
			cur, rest = binary.LittleEndian.Uint64(data), data[8:]
		}
		want := splitItems(rest)
		enc := encodeScan(cur, want)
		gotCur, got, err := ParseScan(enc)
		if err != nil || gotCur != cur || len(got) != len(want) {
			t.Fatalf("ParseScan(%q) = %d, %d items, %v; want %d, %d items", enc, gotCur, len(got), err, cur, len(want))
		}
		for i := range want {
			if w := want[i]; (got[i] == nil) != (w == nil) || !bytes.Equal(got[i], w) {
				t.Fatalf("ParseScan(%q) item %d = %q; want %q", enc, i, got[i], w)
			}
		}
		checkPrefixes(t, enc, func(b []byte) error { _, _, err := ParseScan(b); return err })
	})
}

// TestParseHugeLengths feeds the parsers lengths near the int range: they
// must fail, not panic, and never allocate by a hostile count.
func TestParseHugeLengths(t *testing.T) {
	tests := []struct {
		in   string
		scan bool // ParseScan, else ParseBulks
	}{
		{in: "*1\r\n$99999999999\r\nab\r\n"},
		{in: "*99999999999999999999\r\n"},
		{in: "*1\r\n$-99999999999\r\n"}, // a null
		{in: "*2\r\n$99999999999999999999\r\n0\r\n*0\r\n", scan: true},
		{in: "*1\r\n$9223372036854775807\r\n"},
		{in: "*1\r\n$9223372036854775806\r\nab"},
		{in: "*9223372036854775807\r\n"},
		{in: "*2\r\n$9223372036854775807\r\n", scan: true},
		{in: "*2\r\n$1\r\n0\r\n*9223372036854775807\r\n", scan: true},
	}
	for _, tt := range tests {
		var err error
		panicked := func() (v any) {
			defer func() { v = recover() }()
			if tt.scan {
				_, _, err = ParseScan([]byte(tt.in))
			} else {
				var items [][]byte
				items, err = ParseBulks([]byte(tt.in))
				if err == nil && (len(items) != 1 || items[0] != nil) {
					err = fmt.Errorf("parsed as %s", parsedBulks(items))
				}
			}
			return nil
		}()
		switch {
		case panicked != nil:
			t.Errorf("%q (scan %v) panicked: %v", tt.in, tt.scan, panicked)
		case err == nil && tt.in != "*1\r\n$-99999999999\r\n":
			t.Errorf("%q (scan %v) parsed without error", tt.in, tt.scan)
		case err != nil && tt.in == "*1\r\n$-99999999999\r\n":
			t.Errorf("%q: %v; want one null element", tt.in, err)
		}
	}
}
