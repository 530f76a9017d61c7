package slowlog

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func args(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i, a := range s {
		out[i] = []byte(a)
	}
	return out
}

func render(e Entry) string {
	var parts []string
	for _, a := range e.Args {
		parts = append(parts, string(a))
	}
	return fmt.Sprintf("%d %s [%s %q]", e.ID, strings.Join(parts, " "), e.Addr, e.Name)
}

// Arguments are trimmed as Redis trims them: 32 at most, the last one
// then counting the rest; 128 bytes each, then the count of bytes left;
// redacted ones replaced; and copied, never the caller's buffers.
func TestTrim(t *testing.T) {
	l := New()
	many := []string{"sadd", "set"}
	for i := 3; i <= 33; i++ {
		many = append(many, strconv.Itoa(i))
	}
	l.Add(args(many...), 0, 1, 100, "a:1", "n")
	l.Add(args(many[:32]...), 0, 1, 100, "a:1", "n")
	long := args("sadd", "set", "foo", strings.Repeat("A", 129), strings.Repeat("B", 128))
	l.Add(long, 0, 1, 100, "a:1", "n")
	l.Add(args("auth", "user", "pw"), 1<<1|1<<2, 1, 100, "a:1", "")
	long[0][0] = 'X'

	got := l.Get(-1)
	want := []string{
		`3 auth (redacted) (redacted) [a:1 ""]`,
		`2 sadd set foo ` + strings.Repeat("A", 128) + `... (1 more bytes) ` + strings.Repeat("B", 128) + ` [a:1 "n"]`,
		`1 ` + strings.Join(many[:32], " ") + ` [a:1 "n"]`,
		`0 ` + strings.Join(many[:31], " ") + ` ... (2 more arguments) [a:1 "n"]`,
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if r := render(got[i]); r != want[i] {
			t.Errorf("entry %d:\n got %s\nwant %s", i, r, want[i])
		}
	}
}

// The threshold: -1 disables (Slow never holds), 0 logs everything;
// slowlog-max-len drops the oldest, at once unless the log is disabled,
// then when it is enabled again; ids go on across RESET.
func TestThresholdAndLength(t *testing.T) {
	l := New()
	if l.Slow(9999) || !l.Slow(10000) || l.Threshold() != 10000 {
		t.Fatal("default threshold 10000 µs")
	}
	l.SetThreshold(-1)
	if l.Slow(1<<62) || l.Threshold() != -1 {
		t.Fatal("-1 disables")
	}
	l.SetThreshold(0)
	if !l.Slow(0) {
		t.Fatal("0 logs every command")
	}
	l.SetMaxLen(10)
	for i := 0; i < 100; i++ {
		l.Add(args("ping"), 0, 0, 1, "a:1", "")
	}
	if l.Len() != 10 || l.Get(-1)[0].ID != 99 || l.Get(-1)[9].ID != 90 {
		t.Fatalf("len %d after 100 with max 10", l.Len())
	}
	if n := len(l.Get(5)); n != 5 {
		t.Errorf("GET 5: %d", n)
	}
	if n := len(l.Get(0)); n != 0 {
		t.Errorf("GET 0: %d", n)
	}
	l.SetThreshold(-1)
	l.SetMaxLen(3)
	if l.Len() != 10 {
		t.Errorf("disabled: %d entries, want the 10 kept", l.Len())
	}
	l.SetThreshold(0)
	if l.Len() != 3 || l.Get(1)[0].ID != 99 {
		t.Errorf("enabled again: %d entries", l.Len())
	}
	l.Reset()
	l.Add(args("ping"), 0, 0, 1, "a:1", "")
	if e := l.Get(-1); l.Len() != 1 || e[0].ID != 100 {
		t.Errorf("after RESET: %d entries, %v", l.Len(), e)
	}
	l.SetMaxLen(0)
	if l.Len() != 0 {
		t.Errorf("max 0: %d entries", l.Len())
	}
}

// Logging is allocation-free until an entry is logged: Slow is a load and
// a comparison.
func TestSlowDoesNotAllocate(t *testing.T) {
	l := New()
	if n := testing.AllocsPerRun(100, func() { _ = l.Slow(5) }); n != 0 {
		t.Errorf("Slow allocates %v times", n)
	}
}
