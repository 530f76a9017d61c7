package tracking

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func args(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

func all(int64) bool { return true }

// The parse errors, worded and ordered as Redis 7.0.15's (checked against
// redis-server by integration/tracking_test.go).
func TestParse(t *testing.T) {
	cases := []struct{ in, err string }{
		{"client tracking on", ""},
		{"client tracking OFF", ""},
		{"client tracking maybe", "ERR syntax error"},
		{"client tracking on foo", "ERR syntax error"},
		{"client tracking on prefix", "ERR syntax error"},
		{"client tracking on redirect", "ERR syntax error"},
		{"client tracking on redirect x", "ERR value is not an integer or out of range"},
		{"client tracking on redirect 5 redirect 6", "ERR A client can only redirect to a single other client"},
		{"client tracking maybe redirect x", "ERR value is not an integer or out of range"},
		{"client tracking", "ERR wrong number of arguments for 'client|tracking' command"},
	}
	for _, c := range cases {
		_, err := Parse(args(c.in), all)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != c.err {
			t.Errorf("Parse(%q) = %q, want %q", c.in, got, c.err)
		}
	}
	_, err := Parse(args("client tracking on redirect 7"), func(id int64) bool { return id != 7 })
	if err == nil || err.Error() != "ERR The client ID you want redirect to does not exist" {
		t.Errorf("missing redirect: %v", err)
	}
	o, err := Parse(args("client tracking on bcast prefix a PREFIX b noloop redirect 3"), all)
	if err != nil || !o.On || o.Redirect != 3 || o.Flags != BCast|NoLoop || !slices.Equal(o.Prefixes, []string{"a", "b"}) {
		t.Errorf("Parse = %+v, %v", o, err)
	}
}

func enable(t *testing.T, tb *Table, c *Client, s string) error {
	t.Helper()
	o, err := Parse(args("client tracking "+s), all)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	if !o.On {
		tb.Disable(c)
		return nil
	}
	_, err = tb.Enable(c, o)
	return err
}

func TestEnableChecks(t *testing.T) {
	tb := NewTable()
	c := NewClient(1)
	steps := []struct{ cmd, err string }{
		{"on prefix a", "ERR PREFIX option requires BCAST mode to be enabled"},
		{"on bcast optin", "ERR OPTIN and OPTOUT are not compatible with BCAST"},
		{"on optin optout", "ERR You can't specify both OPTIN mode and OPTOUT mode"},
		{"on optin", ""},
		{"on optout", "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."},
		{"on bcast", "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."},
		{"off", ""},
		{"on bcast prefix FOOBAR prefix FOO", "ERR Prefix 'FOOBAR' overlaps with another provided prefix 'FOO'. Prefixes for a single client must not overlap."},
		{"on bcast prefix FOO prefix BAR", ""},
		{"on bcast prefix FO", "ERR Prefix 'FO' overlaps with an existing prefix 'FOO'. Prefixes for a single client must not overlap."},
		{"on bcast prefix BARB", "ERR Prefix 'BARB' overlaps with an existing prefix 'BAR'. Prefixes for a single client must not overlap."},
		{"on bcast prefix BAZ", ""},
	}
	for _, s := range steps {
		err := enable(t, tb, c, s.cmd)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != s.err {
			t.Errorf("%q: %q, want %q", s.cmd, got, s.err)
		}
	}
	flags, redir, prefixes := tb.Info(c)
	if fmt.Sprint(flags, redir, prefixes) != "[on bcast] 0 [BAR BAZ FOO]" {
		t.Errorf("Info = %v %v %v", flags, redir, prefixes)
	}
	if st := tb.Stats(); st.Clients != 1 || st.Prefixes != 3 {
		t.Errorf("Stats = %+v", st)
	}
	tb.Disable(c)
	if st := tb.Stats(); st.Clients != 0 || st.Prefixes != 0 || tb.Active() {
		t.Errorf("Stats after Disable = %+v", st)
	}
}

// A prefix overlapping a later one, other than the first, is Redis's
// quirk: reported and still enabled.
func TestOverlapQuirk(t *testing.T) {
	tb := NewTable()
	c := NewClient(1)
	o, _ := Parse(args("client tracking on bcast prefix a prefix b prefix bc"), all)
	overlap, err := tb.Enable(c, o)
	if err != nil || overlap == nil || !c.Has(BCast) {
		t.Fatalf("Enable = %v, %v; bcast %v", overlap, err, c.Has(BCast))
	}
	_, _, prefixes := tb.Info(c)
	if !slices.Equal(prefixes, []string{"a", "b", "bc"}) {
		t.Errorf("prefixes %q", prefixes)
	}
}

func TestRememberAndInvalidate(t *testing.T) {
	tb := NewTable()
	a, b := NewClient(1), NewClient(2)
	enable(t, tb, a, "on")
	enable(t, tb, b, "on noloop")
	tb.Remember(a, args("k1 k2"))
	tb.Remember(b, args("k1"))
	tb.Remember(a, args("k1"))
	if st := tb.Stats(); st.Keys != 2 || st.Items != 3 {
		t.Fatalf("Stats = %+v", st)
	}
	var told []int64
	send := func(c *Client) { told = append(told, c.ID()) }
	tb.Invalidate([]byte("k1"), b, b, send) // b modifies: NOLOOP skips it
	if !slices.Equal(told, []int64{1}) {
		t.Errorf("told %v", told)
	}
	told = nil
	tb.Invalidate([]byte("k1"), nil, nil, send) // forgotten already
	if len(told) != 0 {
		t.Errorf("told again %v", told)
	}
	// A client that stopped tracking is skipped, and its ids dropped.
	tb.Disable(a)
	tb.Invalidate([]byte("k2"), nil, nil, send)
	if st := tb.Stats(); len(told) != 0 || st.Keys != 0 || st.Items != 0 {
		t.Errorf("told %v, stats %+v", told, tb.Stats())
	}
}

func TestOptInOptOut(t *testing.T) {
	tb := NewTable()
	c := NewClient(1)
	enable(t, tb, c, "on optin")
	if c.RemembersReads() {
		t.Error("OPTIN remembers without CLIENT CACHING yes")
	}
	if err := tb.SetCaching(c, false); err == nil {
		t.Error("CACHING no accepted in OPTIN mode")
	}
	if err := tb.SetCaching(c, true); err != nil || !c.RemembersReads() {
		t.Errorf("CACHING yes: %v", err)
	}
	tb.EndCommand(c, true) // CLIENT or MULTI: kept
	if !c.Caching() {
		t.Error("CACHING dropped by a CLIENT command")
	}
	tb.EndCommand(c, false)
	if c.Caching() {
		t.Error("CACHING kept after the next command")
	}
	tb.Disable(c)
	if err := tb.SetCaching(c, true); err == nil {
		t.Error("CACHING accepted while off")
	}
	enable(t, tb, c, "on optout")
	tb.SetCaching(c, false)
	if c.RemembersReads() {
		t.Error("OPTOUT remembers after CLIENT CACHING no")
	}
}

func TestBroadcast(t *testing.T) {
	tb := NewTable()
	a, b := NewClient(1), NewClient(2)
	enable(t, tb, a, "on bcast prefix p: prefix q:")
	enable(t, tb, b, "on bcast noloop")
	for _, k := range []string{"p:2", "q:1", "p:1", "z"} {
		tb.Invalidate([]byte(k), b, b, func(*Client) { t.Error("BCAST client told as a tracker") })
	}
	var got []string
	tb.Broadcast(func(c *Client, keys [][]byte) {
		got = append(got, fmt.Sprintf("%d%q", c.ID(), keys))
	})
	// Prefixes in order ("" first); b modified them all (NOLOOP).
	want := []string{`1["p:1" "p:2"]`, `1["q:1"]`}
	if !slices.Equal(got, want) {
		t.Errorf("Broadcast = %v, want %v", got, want)
	}
	got = nil
	tb.Invalidate([]byte("x"), nil, nil, func(*Client) {}) // an expiry: b is told
	tb.Broadcast(func(c *Client, keys [][]byte) { got = append(got, fmt.Sprintf("%d%q", c.ID(), keys)) })
	if !slices.Equal(got, []string{`2["x"]`}) {
		t.Errorf("Broadcast = %v", got)
	}
}

func TestFlushAll(t *testing.T) {
	tb := NewTable()
	a, b := NewClient(2), NewClient(1)
	enable(t, tb, a, "on")
	enable(t, tb, b, "on bcast")
	tb.Remember(a, args("k1 k2"))
	var told []int64
	tb.FlushAll(func(c *Client) { told = append(told, c.ID()) })
	if st := tb.Stats(); !slices.Equal(told, []int64{1, 2}) || st.Keys != 0 || st.Items != 0 {
		t.Errorf("told %v, stats %+v", told, st)
	}
}

// Limit evicts exactly down to the limit, raising its effort while a run
// could not get there.
func TestLimit(t *testing.T) {
	tb := NewTable()
	c := NewClient(1)
	enable(t, tb, c, "on")
	for i := range 250 {
		tb.Remember(c, [][]byte{fmt.Appendf(nil, "key%d", i)})
	}
	n := 0
	send := func(*Client, []byte) { n++ }
	tb.Limit(1, nil, send)
	if n != 100 || tb.Stats().Keys != 150 {
		t.Fatalf("first run evicted %d, %d keys left", n, tb.Stats().Keys)
	}
	tb.Limit(1, nil, send) // effort 200: enough
	if n != 249 || tb.Stats().Keys != 1 {
		t.Errorf("evicted %d, %d keys left", n, tb.Stats().Keys)
	}
	tb.Limit(0, nil, send) // no limit
	if n != 249 {
		t.Errorf("no limit evicted %d", n)
	}
}

func TestListFlagsAndRedirection(t *testing.T) {
	tb := NewTable()
	c := NewClient(1)
	if tb.ListFlags(c) != "" || tb.Redirection(c) != -1 || tb.ListFlags(nil) != "" {
		t.Error("off client has flags or a redirection")
	}
	enable(t, tb, c, "on bcast redirect 9")
	c.MarkBroken()
	if tb.ListFlags(c) != "tRB" || tb.Redirection(c) != 9 {
		t.Errorf("flags %q redir %d", tb.ListFlags(c), tb.Redirection(c))
	}
	flags, _, _ := tb.Info(c)
	if !slices.Contains(flags, "broken_redirect") {
		t.Errorf("Info flags %v", flags)
	}
	enable(t, tb, c, "on bcast redirect 9") // re-enabling clears it
	if tb.ListFlags(c) != "tB" {
		t.Errorf("flags %q", tb.ListFlags(c))
	}
}
