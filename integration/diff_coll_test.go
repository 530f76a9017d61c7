package integration

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/integration/harness"
)

// TestDifferentialHashesSets compares Spillway with Redis 7.0 on random hash,
// set and keyspace traffic (gen_coll_test.go) over RESP2, with the 4 KB hot
// tier of TestDifferentialStrings: big hashes and sets are served from disk
// and small ones move between tiers.
func TestDifferentialHashesSets(t *testing.T) {
	testDifferentialSpillway(t, 2, "TestDifferentialHashesSets", genConfig{Collections: true})
}

// TestDifferentialHashesSetsRESP3 is TestDifferentialHashesSets after
// HELLO 3 (maps, sets, doubles and nulls of RESP3).
func TestDifferentialHashesSetsRESP3(t *testing.T) {
	testDifferentialSpillway(t, 3, "TestDifferentialHashesSetsRESP3", genConfig{Collections: true})
}

// maxScanCalls bounds one server's calls in an opScan iteration. The
// generator uses COUNT 1 and 2 only on small structures, so a correct
// iteration needs far fewer.
const maxScanCalls = 10000

// scanIter is one server's side of an opScan iteration.
type scanIter struct {
	first harness.Reply // reply to the first call (cursor 0)
	items []string      // sorted, de-duplicated; "field\x00value" for HSCAN
	calls int
	bad   string // a malformed page or a runaway iteration
}

// iterate runs the SCAN-family command args (cursor "0" in it) on c until
// the cursor comes back as 0.
func iterate(c *harness.Conn, args []string) scanIter {
	name := strings.ToUpper(args[0])
	ci := 2 // HSCAN key cursor, SSCAN key cursor
	if name == "SCAN" {
		ci = 1
	}
	pairs := name == "HSCAN"
	call := append([]string(nil), args...)
	seen := map[string]bool{}
	values := map[string]string{}
	var it scanIter
	for {
		r := c.Do(call...)
		it.calls++
		if it.calls == 1 {
			it.first = r
			if r.IsError() {
				return it
			}
		}
		if r.Type != '*' || len(r.Elems) != 2 || r.Elems[0].Type != '$' || r.Elems[1].Type != '*' {
			it.bad = fmt.Sprintf("call %d (%s): not [cursor, array]: %s", it.calls, fmtArgs(call), r.String())
			return it
		}
		page := r.Elems[1].Elems
		if pairs && len(page)%2 != 0 {
			it.bad = fmt.Sprintf("call %d: odd field/value count %d", it.calls, len(page))
			return it
		}
		for i := 0; i < len(page); i++ {
			item := page[i].Str
			if pairs {
				f, v := page[i].Str, page[i+1].Str
				if old, ok := values[f]; ok && old != v {
					it.bad = fmt.Sprintf("call %d: field %q returned with values %q and %q", it.calls, f, old, v)
					return it
				}
				values[f] = v
				item = f + "\x00" + v
				i++
			}
			seen[item] = true
		}
		cursor := r.Elems[0].Str
		if cursor == "0" {
			break
		}
		if it.calls >= maxScanCalls {
			it.bad = fmt.Sprintf("cursor %s still not 0 after %d calls", cursor, it.calls)
			return it
		}
		call[ci] = cursor
	}
	for s := range seen {
		it.items = append(it.items, s)
	}
	sort.Strings(it.items)
	return it
}

// scanUnion runs an opScan step: each server iterates to cursor 0 on its
// own (cursor values and page boundaries legitimately differ: Spillway pages
// big structures by a hash-ordered cursor and may return a small one whole),
// and the de-duplicated unions must be equal. Error replies to the first
// call are compared byte for byte.
func scanUnion(ref, sub *harness.Conn, args []string, subName string) (a, b scanIter, ok bool, why string) {
	a, b = iterate(ref, args), iterate(sub, args)
	if a.first.IsError() || b.first.IsError() {
		ok, why = compareReplies(args, a.first, b.first)
		return a, b, ok, why
	}
	if a.bad != "" {
		return a, b, false, "redis: " + a.bad
	}
	if b.bad != "" {
		return a, b, false, subName + ": " + b.bad
	}
	onlyA, onlyB := diffSorted(a.items, b.items)
	if len(onlyA) == 0 && len(onlyB) == 0 {
		return a, b, true, ""
	}
	return a, b, false, fmt.Sprintf("iteration unions differ (%d vs %d items): only from redis: %s; only from %s: %s",
		len(a.items), len(b.items), fmtItems(onlyA), subName, fmtItems(onlyB))
}

// diffSorted returns the items of sorted lists a and b missing from the
// other.
func diffSorted(a, b []string) (onlyA, onlyB []string) {
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i] < b[j]):
			onlyA = append(onlyA, a[i])
			i++
		case i == len(a) || b[j] < a[i]:
			onlyB = append(onlyB, b[j])
			j++
		default:
			i++
			j++
		}
	}
	return onlyA, onlyB
}

func fmtItems(items []string) string {
	if len(items) == 0 {
		return "none"
	}
	var parts []string
	for i, s := range items {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("... %d more", len(items)-i))
			break
		}
		parts = append(parts, strconv.Quote(harness.Trunc(s, 60)))
	}
	return strings.Join(parts, ", ")
}

// randElem is one element of a random reply: a field or member, and for
// HRANDFIELD WITHVALUES its value.
type randElem struct{ name, value string }

// randElems unpacks a HRANDFIELD/SRANDMEMBER/SPOP reply: a bulk string (no
// count), or an array or set of names; with WITHVALUES a flat
// field/value array (RESP2) or an array of [field, value] arrays (RESP3).
func randElems(r harness.Reply, withValues bool) ([]randElem, error) {
	if r.Type == '$' {
		return []randElem{{name: r.Str}}, nil
	}
	if r.Type != '*' && r.Type != '~' {
		return nil, fmt.Errorf("unexpected reply type %q", r.Type)
	}
	var out []randElem
	for i := 0; i < len(r.Elems); i++ {
		e := r.Elems[i]
		switch {
		case !withValues && e.Type == '$':
			out = append(out, randElem{name: e.Str})
		case withValues && e.Type == '*' && len(e.Elems) == 2:
			out = append(out, randElem{name: e.Elems[0].Str, value: e.Elems[1].Str})
		case withValues && e.Type == '$' && i+1 < len(r.Elems) && r.Elems[i+1].Type == '$':
			out = append(out, randElem{name: e.Str, value: r.Elems[i+1].Str})
			i++
		default:
			return nil, fmt.Errorf("unexpected element %d: %s", i, e.String())
		}
	}
	return out, nil
}

func sortedElems(es []randElem) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.name + "\x00" + e.value
	}
	sort.Strings(out)
	return out
}

func hasDuplicates(es []randElem) bool {
	seen := map[string]bool{}
	for _, e := range es {
		if seen[e.name] {
			return true
		}
		seen[e.name] = true
	}
	return false
}

// randomCheck verifies the replies a (redis) and b (subject) to a random
// command (opRandom). Replies that are equal after canonicalisation pass;
// errors, nils and empty replies must be equal. Otherwise:
//
//   - both replies have the same type and length, and the length the count
//     asks for: min(count, cardinality) for a positive count, -count for a
//     negative one, one element without a count;
//   - a positive count returns distinct elements, and when it is at least
//     the cardinality (asked for with HLEN/SCARD on both), the whole
//     structure, so the sorted replies must be equal;
//   - every returned field or member is in the structure: HMGET or
//     SMISMEMBER of the union of both replies' names, sent to both servers,
//     must give equal replies with no nil and no 0; with WITHVALUES each
//     returned value must be the field's HMGET value.
//
// SPOP removes what it returns, so when the two servers popped different
// members they are added back (each server its own), and the set must then
// be the same on both: SCARD and SMISMEMBER of everything popped must match.
// The follow-up commands go into hist.
type randomCheck struct {
	ref, sub *harness.Conn
	subName  string
	hist     *history
}

func (rc randomCheck) check(args []string, a, b harness.Reply) (bool, string) {
	if ok, _ := compareReplies(args, a, b); ok {
		return true, ""
	}
	if a.IsError() || b.IsError() || a.Null || b.Null || a.Type != b.Type {
		return false, "bytes differ"
	}
	name := strings.ToLower(args[0])
	key := args[1]
	hasCount := len(args) >= 3
	var count int64 = 1
	if hasCount {
		n, err := strconv.ParseInt(args[2], 10, 64)
		if err != nil {
			// Redis accepted a count this harness cannot parse: the
			// generator's valid counts are plain decimal.
			return false, fmt.Sprintf("bytes differ (count %q not understood by the harness)", args[2])
		}
		count = n
	}
	withValues := name == "hrandfield" && len(args) == 4
	ea, err := randElems(a, withValues)
	if err != nil {
		return false, "redis reply: " + err.Error()
	}
	eb, err := randElems(b, withValues)
	if err != nil {
		return false, rc.subName + " reply: " + err.Error()
	}
	if len(ea) != len(eb) {
		return false, fmt.Sprintf("reply lengths differ: %d vs %d", len(ea), len(eb))
	}
	unique := !hasCount || count > 0
	if unique && hasDuplicates(eb) {
		return false, rc.subName + " returned a field or member twice for a positive count"
	}
	if unique && hasDuplicates(ea) {
		return false, "redis returned a field or member twice for a positive count"
	}
	sa, sb := sortedElems(ea), sortedElems(eb)
	if strings.Join(sa, "\x01") == strings.Join(sb, "\x01") {
		return true, "" // the same elements in another order
	}
	if name == "spop" {
		return rc.checkPop(key, ea, eb)
	}
	cardCmd := "SCARD"
	if name == "hrandfield" {
		cardCmd = "HLEN"
	}
	card, ok, why := rc.both(cardCmd, key)
	if !ok {
		return false, why
	}
	want := count
	switch {
	case !hasCount:
		want = 1
	case count < 0:
		want = -count
	case count > card.Int:
		want = card.Int
	}
	if int64(len(eb)) != want {
		return false, fmt.Sprintf("%d elements for count %d of a structure of %d", len(eb), count, card.Int)
	}
	if hasCount && count >= card.Int {
		return false, "the count covers the whole structure, but the sorted replies differ"
	}
	return rc.checkMembers(name, key, withValues, ea, eb)
}

// checkMembers asks both servers whether every returned name is in key, and
// for WITHVALUES whether the returned values are the stored ones.
func (rc randomCheck) checkMembers(name, key string, withValues bool, ea, eb []randElem) (bool, string) {
	names := unionNames(ea, eb)
	cmd := "SMISMEMBER"
	if name == "hrandfield" {
		cmd = "HMGET"
	}
	r, ok, why := rc.both(append([]string{cmd, key}, names...)...)
	if !ok {
		return false, why
	}
	stored := map[string]string{}
	for i, e := range r.Elems {
		if e.Null || (e.Type == ':' && e.Int != 1) {
			return false, fmt.Sprintf("%q was returned but is not in %q", names[i], key)
		}
		stored[names[i]] = e.Str
	}
	if withValues {
		for side, es := range map[string][]randElem{"redis": ea, rc.subName: eb} {
			for _, e := range es {
				if stored[e.name] != e.value {
					return false, fmt.Sprintf("%s returned %q => %q, but the field holds %q",
						side, e.name, e.value, stored[e.name])
				}
			}
		}
	}
	return true, ""
}

// checkPop handles SPOP replies that differ: each server gets back what it
// popped, after which both must hold the same set again.
func (rc randomCheck) checkPop(key string, ea, eb []randElem) (bool, string) {
	if _, ok, why := rc.both("SCARD", key); !ok {
		return false, "after SPOP: " + why
	}
	for _, side := range []struct {
		c    *harness.Conn
		name string
		es   []randElem
	}{{rc.ref, "redis", ea}, {rc.sub, rc.subName, eb}} {
		args := []string{"SADD", key}
		for _, e := range side.es {
			args = append(args, e.name)
		}
		r := side.c.Do(args...)
		rc.hist.add("  check on %s: %s -> %s", side.name, fmtArgs(args), fmtRaw(r.Raw))
		if r.Type != ':' || r.Int != int64(len(side.es)) {
			return false, fmt.Sprintf("%s: re-adding the %d popped members answered %s: they were not removed",
				side.name, len(side.es), r.String())
		}
	}
	if _, ok, why := rc.both("SCARD", key); !ok {
		return false, "after re-adding the popped members: " + why
	}
	names := unionNames(ea, eb)
	r, ok, why := rc.both(append([]string{"SMISMEMBER", key}, names...)...)
	if !ok {
		return false, "after re-adding the popped members: " + why
	}
	for i, e := range r.Elems {
		if e.Int != 1 {
			return false, fmt.Sprintf("%q was popped but was not in %q", names[i], key)
		}
	}
	return true, ""
}

// both sends a follow-up command to both servers; the replies must be
// equal.
func (rc randomCheck) both(args ...string) (harness.Reply, bool, string) {
	a, b := exchange(rc.ref, rc.sub, args)
	rc.hist.add("  check: %s -> %s", fmtArgs(args), fmtRaw(a.Raw))
	if ok, why := compareReplies(args, a, b); !ok {
		return a, false, fmt.Sprintf("follow-up %s: %s (redis %s, %s %s)", fmtArgs(args), why,
			errOr(a), rc.subName, errOr(b))
	}
	return a, true, ""
}

func unionNames(ea, eb []randElem) []string {
	seen := map[string]bool{}
	var names []string
	for _, es := range [][]randElem{ea, eb} {
		for _, e := range es {
			if !seen[e.name] {
				seen[e.name] = true
				names = append(names, e.name)
			}
		}
	}
	sort.Strings(names)
	return names
}

// parseReply parses raw RESP bytes with the harness reader.
func parseReply(t *testing.T, raw string) harness.Reply {
	t.Helper()
	client, server := net.Pipe()
	defer client.Close()
	go func() {
		server.Write([]byte(raw))
		server.Close()
	}()
	r := harness.NewConn(client).Read()
	if r.Err != nil {
		t.Fatalf("parse %q: %v", raw, r.Err)
	}
	return r
}

// TestCanonicalCollections pins how hash and set replies whose order Redis
// leaves unspecified are compared: RESP3 maps and sets and the RESP2 arrays
// of unordered commands compare equal in any order, but not with different
// contents.
func TestCanonicalCollections(t *testing.T) {
	tests := []struct {
		cmd   string
		a, b  string
		equal bool
	}{
		{"HGETALL", "%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n", "%2\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\na\r\n$1\r\n1\r\n", true},
		{"HGETALL", "%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n", "%2\r\n$1\r\na\r\n$1\r\n2\r\n$1\r\nb\r\n$1\r\n1\r\n", false},
		{"HGETALL", "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n", "*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\na\r\n$1\r\n1\r\n", true},
		{"HGETALL", "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n", "*4\r\n$1\r\na\r\n$1\r\n2\r\n$1\r\nb\r\n$1\r\n1\r\n", false},
		{"SMEMBERS", "~2\r\n$1\r\nx\r\n$1\r\ny\r\n", "~2\r\n$1\r\ny\r\n$1\r\nx\r\n", true},
		{"SMEMBERS", "~2\r\n$1\r\nx\r\n$1\r\ny\r\n", "*2\r\n$1\r\ny\r\n$1\r\nx\r\n", false},
		{"SINTER", "*2\r\n$1\r\nx\r\n$1\r\ny\r\n", "*2\r\n$1\r\ny\r\n$1\r\nx\r\n", true},
		{"SUNION", "~3\r\n$1\r\nx\r\n$1\r\ny\r\n$1\r\nz\r\n", "~2\r\n$1\r\ny\r\n$1\r\nx\r\n", false},
		{"SDIFF", "~2\r\n$1\r\nx\r\n$1\r\ny\r\n", "~2\r\n$1\r\ny\r\n$1\r\nx\r\n", true},
		{"HKEYS", "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nb\r\n$1\r\na\r\n", true},
		{"HVALS", "*2\r\n$1\r\n1\r\n$1\r\n1\r\n", "*2\r\n$1\r\n1\r\n$1\r\n2\r\n", false},
		{"HMGET", "*2\r\n$1\r\n1\r\n$1\r\n2\r\n", "*2\r\n$1\r\n2\r\n$1\r\n1\r\n", false},
		{"SMISMEMBER", "*2\r\n:1\r\n:0\r\n", "*2\r\n:0\r\n:1\r\n", false},
		{"SRANDMEMBER 2", "*2\r\n$1\r\nx\r\n$1\r\ny\r\n", "*2\r\n$1\r\ny\r\n$1\r\nx\r\n", true},
		{"SPOP 2", "*2\r\n$1\r\nx\r\n$1\r\ny\r\n", "*2\r\n$1\r\ny\r\n$1\r\nz\r\n", false},
		{"HRANDFIELD 2", "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nb\r\n$1\r\na\r\n", true},
		// RESP2 WITHVALUES pairs stay paired: a=>1 b=>2 is not a=>2 b=>1.
		{"HRANDFIELD 2 WITHVALUES", "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n", "*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\na\r\n$1\r\n1\r\n", true},
		{"HRANDFIELD 2 WITHVALUES", "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n", "*4\r\n$1\r\na\r\n$1\r\n2\r\n$1\r\nb\r\n$1\r\n1\r\n", false},
		// RESP3 WITHVALUES: an array of [field, value] arrays.
		{"HRANDFIELD 2 WITHVALUES", "*2\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n", "*2\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n", true},
		{"HRANDFIELD 2 WITHVALUES", "*2\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n", "*2\r\n*2\r\n$1\r\na\r\n$1\r\n2\r\n*2\r\n$1\r\nb\r\n$1\r\n1\r\n", false},
	}
	for _, tt := range tests {
		a, b := parseReply(t, tt.a), parseReply(t, tt.b)
		args := append(strings.Fields(tt.cmd)[:1], "k")
		args = append(args, strings.Fields(tt.cmd)[1:]...)
		if ok, why := compareReplies(args, a, b); ok != tt.equal {
			t.Errorf("%s: %q vs %q: equal=%v (%s), want %v", tt.cmd, tt.a, tt.b, ok, why, tt.equal)
		}
	}
}

// TestRandElems pins how random replies are unpacked in both protocols.
func TestRandElems(t *testing.T) {
	tests := []struct {
		raw        string
		withValues bool
		want       []randElem
	}{
		{"$1\r\na\r\n", false, []randElem{{name: "a"}}},
		{"*2\r\n$1\r\na\r\n$1\r\nb\r\n", false, []randElem{{name: "a"}, {name: "b"}}},
		{"~1\r\n$1\r\na\r\n", false, []randElem{{name: "a"}}},
		{"*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n", true, []randElem{{"a", "1"}, {"b", "2"}}},
		{"*2\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n*2\r\n$1\r\nb\r\n$1\r\n2\r\n", true, []randElem{{"a", "1"}, {"b", "2"}}},
	}
	for _, tt := range tests {
		got, err := randElems(parseReply(t, tt.raw), tt.withValues)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("randElems(%q) = %v, %v; want %v", tt.raw, got, err, tt.want)
		}
	}
	if _, err := randElems(parseReply(t, "*3\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n"), true); err == nil {
		t.Errorf("randElems accepted an odd WITHVALUES reply")
	}
}

// TestCollChecksDetectMismatches feeds scanUnion and randomCheck, against
// two redis-servers, states and replies that are wrong in the ways a server
// could be wrong, and checks each is reported (and that right ones pass).
func TestCollChecksDetectMismatches(t *testing.T) {
	ra, rb := harness.StartRedis(t), harness.StartRedis(t)
	ref, sub := harness.MustDial(t, ra.Addr()), harness.MustDial(t, rb.Addr())
	both := func(args ...string) {
		t.Helper()
		if a, b := exchange(ref, sub, args); a.IsError() || b.IsError() {
			t.Fatalf("%s: %s / %s", fmtArgs(args), a.String(), b.String())
		}
	}
	reply := func(raw string) harness.Reply { return parseReply(t, raw) }
	rc := randomCheck{ref: ref, sub: sub, subName: "sub", hist: &history{max: 50}}

	both("FLUSHALL")
	both("SADD", "s", "a", "b", "c", "d")
	both("HSET", "h", "f1", "v1", "f2", "v2", "f3", "v3")
	randomCases := []struct {
		name string
		args []string
		a, b string
		ok   bool
	}{
		{"members in another order", []string{"SRANDMEMBER", "s", "2"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nb\r\n$1\r\na\r\n", true},
		{"other members", []string{"SRANDMEMBER", "s", "2"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nc\r\n$1\r\nd\r\n", true},
		{"a non-member", []string{"SRANDMEMBER", "s", "2"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\na\r\n$1\r\nz\r\n", false},
		{"a repeat for a positive count", []string{"SRANDMEMBER", "s", "2"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\na\r\n$1\r\na\r\n", false},
		{"repeats for a negative count", []string{"SRANDMEMBER", "s", "-3"}, "*3\r\n$1\r\na\r\n$1\r\na\r\n$1\r\nb\r\n", "*3\r\n$1\r\nc\r\n$1\r\nc\r\n$1\r\nc\r\n", true},
		{"too short", []string{"SRANDMEMBER", "s", "-3"}, "*3\r\n$1\r\na\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nc\r\n$1\r\nc\r\n", false},
		{"not the whole set", []string{"SRANDMEMBER", "s", "4"}, "*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n", "*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nz\r\n", false},
		{"one member", []string{"SRANDMEMBER", "s"}, "$1\r\na\r\n", "$1\r\nd\r\n", true},
		{"one non-member", []string{"SRANDMEMBER", "s"}, "$1\r\na\r\n", "$1\r\nz\r\n", false},
		{"an error for a member", []string{"SRANDMEMBER", "s"}, "$1\r\na\r\n", "-ERR x\r\n", false},
		{"fields", []string{"HRANDFIELD", "h", "2"}, "*2\r\n$2\r\nf1\r\n$2\r\nf2\r\n", "*2\r\n$2\r\nf3\r\n$2\r\nf2\r\n", true},
		{"RESP2 values", []string{"HRANDFIELD", "h", "-2", "WITHVALUES"}, "*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf1\r\n$2\r\nv1\r\n", "*4\r\n$2\r\nf3\r\n$2\r\nv3\r\n$2\r\nf2\r\n$2\r\nv2\r\n", true},
		{"RESP2 wrong value", []string{"HRANDFIELD", "h", "-2", "WITHVALUES"}, "*4\r\n$2\r\nf1\r\n$2\r\nv1\r\n$2\r\nf1\r\n$2\r\nv1\r\n", "*4\r\n$2\r\nf3\r\n$2\r\nv2\r\n$2\r\nf2\r\n$2\r\nv2\r\n", false},
		{"RESP3 values", []string{"HRANDFIELD", "h", "1", "WITHVALUES"}, "*1\r\n*2\r\n$2\r\nf1\r\n$2\r\nv1\r\n", "*1\r\n*2\r\n$2\r\nf2\r\n$2\r\nv2\r\n", true},
		{"RESP3 wrong value", []string{"HRANDFIELD", "h", "1", "WITHVALUES"}, "*1\r\n*2\r\n$2\r\nf1\r\n$2\r\nv1\r\n", "*1\r\n*2\r\n$2\r\nf2\r\n$2\r\nv1\r\n", false},
		{"a missing field", []string{"HRANDFIELD", "h", "1"}, "*1\r\n$2\r\nf1\r\n", "*1\r\n$2\r\nf9\r\n", false},
	}
	for _, tc := range randomCases {
		if ok, why := rc.check(tc.args, reply(tc.a), reply(tc.b)); ok != tc.ok {
			t.Errorf("%s: %s: ok=%v (%s), want %v", tc.name, fmtArgs(tc.args), ok, why, tc.ok)
		}
	}

	// SPOP: the servers popped different members (as SREM fakes here);
	// both get theirs back and must agree again.
	popCases := []struct {
		name           string
		refRm, subRm   []string // what each server really removed
		claimA, claimB string   // what each replied
		ok             bool
	}{
		{name: "different members", refRm: []string{"a"}, subRm: []string{"b"}, claimA: "$1\r\na\r\n", claimB: "$1\r\nb\r\n", ok: true},
		{name: "claims a member it kept", refRm: []string{"a"}, subRm: nil, claimA: "$1\r\na\r\n", claimB: "$1\r\nb\r\n", ok: false},
		{name: "claims a non-member", refRm: []string{"a"}, subRm: []string{"b"}, claimA: "$1\r\na\r\n", claimB: "$1\r\nz\r\n", ok: false},
	}
	for _, pc := range popCases {
		both("DEL", "p")
		both("SADD", "p", "a", "b", "c", "d")
		if len(pc.refRm) > 0 {
			ref.Do(append([]string{"SREM", "p"}, pc.refRm...)...)
		}
		if len(pc.subRm) > 0 {
			sub.Do(append([]string{"SREM", "p"}, pc.subRm...)...)
		}
		if ok, why := rc.check([]string{"SPOP", "p"}, reply(pc.claimA), reply(pc.claimB)); ok != pc.ok {
			t.Errorf("SPOP %s: ok=%v (%s), want %v", pc.name, ok, why, pc.ok)
		}
	}

	// scanUnion: equal structures pass whatever the paging; a missing
	// field, a different value or a missing member fails.
	both("FLUSHALL")
	for i := 0; i < 300; i++ {
		both("HSET", "big", "f:"+strconv.Itoa(i), strconv.Itoa(i))
		both("SADD", "bigs", "m:"+strconv.Itoa(i))
	}
	for _, args := range [][]string{{"HSCAN", "big", "0", "COUNT", "7"}, {"SSCAN", "bigs", "0", "MATCH", "m:1*"}, {"SCAN", "0", "TYPE", "hash"}} {
		if _, _, ok, why := scanUnion(ref, sub, args, "sub"); !ok {
			t.Errorf("%s on equal data: %s", fmtArgs(args), why)
		}
	}
	sub.Do("HSET", "big", "f:5", "other")
	sub.Do("SREM", "bigs", "m:150")
	sub.Do("SET", "big2", "x")
	for _, args := range [][]string{{"HSCAN", "big", "0", "COUNT", "7"}, {"SSCAN", "bigs", "0", "MATCH", "m:1*"}, {"SCAN", "0"}} {
		if _, _, ok, _ := scanUnion(ref, sub, args, "sub"); ok {
			t.Errorf("%s: a difference went unnoticed", fmtArgs(args))
		}
	}
}
