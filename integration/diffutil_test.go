package integration

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// unorderedCommands are commands whose array replies Redis leaves in an
// unspecified order; their replies are compared after sorting. (SRANDMEMBER,
// SPOP and HRANDFIELD, see canonicalFor, return random elements in random
// order: sorted, equal replies mean the same elements; the random runs check
// differing ones with randomCheck.)
var unorderedCommands = map[string]bool{
	"keys": true, "smembers": true, "sinter": true, "sunion": true, "sdiff": true,
	"hkeys": true, "hvals": true, "srandmember": true, "spop": true,
}

// pairCommands reply with flat (field, value) arrays in unspecified order.
var pairCommands = map[string]bool{"hgetall": true, "config": true}

// ttlTolerance is how far apart two positive replies of a time-dependent
// command may be: the same command reaches the two servers a few
// microseconds apart, and TTLs set with relative forms differ by as much.
var ttlTolerance = map[string]int64{"ttl": 2, "expiretime": 2, "pttl": 2000, "pexpiretime": 2000}

// compareReplies reports whether a and b, the two servers' replies to args,
// are equivalent: byte-identical after canonicalising replies whose order is
// unspecified (RESP3 sets and maps always), or, for TTL-like commands, both
// the same negative code or both non-negative within tolerance.
func compareReplies(args []string, a, b harness.Reply) (bool, string) {
	if a.Err != nil || b.Err != nil {
		return false, "transport error"
	}
	if string(a.Raw) == string(b.Raw) {
		return true, ""
	}
	name := ""
	if len(args) > 0 {
		name = strings.ToLower(args[0])
	}
	if tol, ok := ttlTolerance[name]; ok && a.Type == ':' && b.Type == ':' {
		if a.Int < 0 || b.Int < 0 {
			return false, "TTL codes differ"
		}
		d := a.Int - b.Int
		if d < 0 {
			d = -d
		}
		if d <= tol {
			return true, ""
		}
		return false, fmt.Sprintf("TTL values differ by %d (tolerance %d)", d, tol)
	}
	ca, cb := canonicalFor(args, a), canonicalFor(args, b)
	if string(ca.Raw) == string(cb.Raw) {
		return true, ""
	}
	return false, "bytes differ"
}

func canonicalFor(args []string, r harness.Reply) harness.Reply {
	name := ""
	if len(args) > 0 {
		name = strings.ToLower(args[0])
	}
	switch {
	case r.Type == '~' || r.Type == '%':
		return harness.Canonical(r)
	case name == "hrandfield" && r.Type == '*':
		// With WITHVALUES (a valid reply means args[3] was it), RESP2
		// sends flat field/value pairs, which must stay paired; RESP3
		// sends [field, value] arrays, which Canonical keeps whole.
		if len(args) == 4 && len(r.Elems) > 0 && r.Elems[0].Type != '*' {
			return harness.CanonicalPairs(r)
		}
		return harness.Canonical(r)
	case unorderedCommands[name]:
		return harness.Canonical(r)
	case pairCommands[name] && r.Type == '*':
		return harness.CanonicalPairs(r)
	}
	return r
}

// fmtArgs renders a command for failure messages, long arguments shortened.
func fmtArgs(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if len(a) > 60 {
			fmt.Fprintf(&b, "%q...(%d bytes)", a[:40], len(a))
			continue
		}
		if a != "" && !strings.ContainsAny(a, " \"'\\") && strconv.Quote(a) == `"`+a+`"` {
			b.WriteString(a)
		} else {
			b.WriteString(strconv.Quote(a))
		}
	}
	return b.String()
}

// fmtRaw renders raw reply bytes, quoted and shortened.
func fmtRaw(raw []byte) string {
	s := strconv.Quote(string(raw))
	if len(s) > 400 {
		s = s[:400] + fmt.Sprintf("...(%d bytes)", len(raw))
	}
	return s
}

// history keeps the last few commands of a run for failure context.
type history struct {
	lines []string
	max   int
}

func (h *history) add(format string, a ...any) {
	h.lines = append(h.lines, fmt.Sprintf(format, a...))
	if len(h.lines) > h.max {
		h.lines = h.lines[1:]
	}
}

func (h *history) String() string {
	if len(h.lines) == 0 {
		return "  (none)\n"
	}
	return "  " + strings.Join(h.lines, "\n  ") + "\n"
}

// exchange sends args to both servers, then reads both replies, so the two
// servers handle the command at nearly the same moment.
func exchange(ref, sub *harness.Conn, args []string) (harness.Reply, harness.Reply) {
	errA := ref.Send(args...)
	errB := sub.Send(args...)
	var a, b harness.Reply
	if errA != nil {
		a = harness.Reply{Err: errA}
	}
	if errB != nil {
		b = harness.Reply{Err: errB}
	}
	if errA == nil {
		if err := ref.Flush(); err != nil {
			a = harness.Reply{Err: err}
		}
	}
	if errB == nil {
		if err := sub.Flush(); err != nil {
			b = harness.Reply{Err: err}
		}
	}
	if a.Err == nil {
		a = ref.Read()
	}
	if b.Err == nil {
		b = sub.Read()
	}
	return a, b
}

// setupPair prepares a fresh connection pair: HELLO 3 for RESP3 (its reply,
// which names the server, is only checked to be a map), then FLUSHALL.
func setupPair(t *testing.T, ref, sub *harness.Conn, proto int) {
	t.Helper()
	if proto == 3 {
		for _, c := range []*harness.Conn{ref, sub} {
			if r := c.Do("HELLO", "3"); r.Type != '%' {
				t.Fatalf("HELLO 3: want a map, got %s", r.String())
			}
		}
	}
	for _, c := range []*harness.Conn{ref, sub} {
		if r := c.Do("FLUSHALL"); r.Str != "OK" {
			t.Fatalf("FLUSHALL: %s", r.String())
		}
	}
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}

// spillwayHasLists says whether Spillway implements lists yet; generated and
// hand-written commands that create lists run only when it does (always
// against two redis-servers). SPILLWAY_DIFF_LISTS=1/0 overrides.
const spillwayHasLists = true

func listsForSpillway(t *testing.T) bool {
	switch os.Getenv("SPILLWAY_DIFF_LISTS") {
	case "1":
		return true
	case "0":
		return false
	case "":
		return spillwayHasLists
	}
	t.Fatalf("SPILLWAY_DIFF_LISTS must be 0 or 1")
	return false
}

// spillwayHasZSets says whether Spillway implements sorted sets yet; the
// sorted-set differential runs and the @zsets case lines run against it
// only when it does (always against two redis-servers).
// SPILLWAY_DIFF_ZSETS=1/0 overrides.
const spillwayHasZSets = true

func zsetsForSpillway(t *testing.T) bool {
	switch os.Getenv("SPILLWAY_DIFF_ZSETS") {
	case "1":
		return true
	case "0":
		return false
	case "":
		return spillwayHasZSets
	}
	t.Fatalf("SPILLWAY_DIFF_ZSETS must be 0 or 1")
	return false
}

// splitArgs splits a command line the way redis-cli does: words separated by
// blanks; "double quotes" with \n \r \t \b \a \\ \" and \xHH escapes;
// 'single quotes' with only \' escaped. A closing quote must be followed by
// a blank or the end of the line.
func splitArgs(line string) ([]string, error) {
	var args []string
	i := 0
	for {
		for i < len(line) && isBlank(line[i]) {
			i++
		}
		if i == len(line) {
			return args, nil
		}
		var cur []byte
		inDq, inSq := false, false
		for done := false; !done; {
			if inDq {
				if i == len(line) {
					return nil, errors.New("unbalanced double quotes")
				}
				c := line[i]
				switch {
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					v, _ := strconv.ParseUint(line[i+2:i+4], 16, 8)
					cur = append(cur, byte(v))
					i += 3
				case c == '\\' && i+1 < len(line):
					i++
					switch line[i] {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, line[i])
					}
				case c == '"':
					if i+1 < len(line) && !isBlank(line[i+1]) {
						return nil, errors.New("closing quote must be followed by a space")
					}
					done = true
				default:
					cur = append(cur, c)
				}
				i++
				continue
			}
			if inSq {
				if i == len(line) {
					return nil, errors.New("unbalanced single quotes")
				}
				c := line[i]
				switch {
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					cur = append(cur, '\'')
					i++
				case c == '\'':
					if i+1 < len(line) && !isBlank(line[i+1]) {
						return nil, errors.New("closing quote must be followed by a space")
					}
					done = true
				default:
					cur = append(cur, c)
				}
				i++
				continue
			}
			if i == len(line) {
				break
			}
			switch c := line[i]; {
			case isBlank(c):
				done = true
			case c == '"':
				inDq = true
			case c == '\'':
				inSq = true
			default:
				cur = append(cur, c)
			}
			i++
		}
		args = append(args, string(cur))
	}
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// pause sleeps for d; it exists so a step's sleep shows in one place.
func pause(d time.Duration) { time.Sleep(d) }
