package integration

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/integration/harness"
)

// TestDifferentialZSets compares Spillway with Redis 7.0 on random
// sorted-set, keyspace and cross-type traffic (gen_zset_test.go) over
// RESP2, with the 4 KB hot tier of TestDifferentialStrings: big zsets are
// served from disk and small ones move between tiers. It runs only when
// Spillway has sorted sets (spillwayHasZSets, or SPILLWAY_DIFF_ZSETS=1).
func TestDifferentialZSets(t *testing.T) {
	testDifferentialZSets(t, 2, "TestDifferentialZSets")
}

// TestDifferentialZSetsRESP3 is TestDifferentialZSets after HELLO 3 (RESP3
// doubles for scores, nested [member, score] arrays, nulls).
func TestDifferentialZSetsRESP3(t *testing.T) {
	testDifferentialZSets(t, 3, "TestDifferentialZSetsRESP3")
}

func testDifferentialZSets(t *testing.T, proto int, name string) {
	if !zsetsForSpillway(t) {
		t.Skip("Spillway sorted sets are off: spillwayHasZSets is false (SPILLWAY_DIFF_ZSETS=1 runs this anyway)")
	}
	testDifferentialSpillway(t, proto, name, genConfig{ZSetCommands: true})
}

// zscanUnion runs an opZScan step like scanUnion: each server iterates
// ZSCAN to cursor 0 on its own and the de-duplicated unions of
// "member\x00score" pairs must be equal; a member returned with two scores
// in one iteration is an error. Error replies to the first call are
// compared byte for byte.
func zscanUnion(ref, sub *harness.Conn, args []string, subName string) (a, b scanIter, ok bool, why string) {
	a, b = zscanIterate(ref, args), zscanIterate(sub, args)
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
	return a, b, false, fmt.Sprintf("iteration unions differ (%d vs %d pairs): only from redis: %s; only from %s: %s",
		len(a.items), len(b.items), fmtItems(onlyA), subName, fmtItems(onlyB))
}

// zscanIterate runs ZSCAN key cursor [options] (args, cursor "0") on c
// until the cursor comes back as 0.
func zscanIterate(c *harness.Conn, args []string) scanIter {
	call := append([]string(nil), args...)
	seen := map[string]bool{}
	scores := map[string]string{}
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
		if len(page)%2 != 0 {
			it.bad = fmt.Sprintf("call %d: odd member/score count %d", it.calls, len(page))
			return it
		}
		for i := 0; i < len(page); i += 2 {
			m, s := page[i], page[i+1]
			if m.Type != '$' || s.Type != '$' {
				it.bad = fmt.Sprintf("call %d: member/score not bulk strings: %s, %s", it.calls, m.String(), s.String())
				return it
			}
			if old, ok := scores[m.Str]; ok && old != s.Str {
				it.bad = fmt.Sprintf("call %d: member %q returned with scores %q and %q", it.calls, m.Str, old, s.Str)
				return it
			}
			scores[m.Str] = s.Str
			seen[m.Str+"\x00"+s.Str] = true
		}
		cursor := r.Elems[0].Str
		if cursor == "0" {
			break
		}
		if it.calls >= maxScanCalls {
			it.bad = fmt.Sprintf("cursor %s still not 0 after %d calls", cursor, it.calls)
			return it
		}
		call[2] = cursor
	}
	for s := range seen {
		it.items = append(it.items, s)
	}
	sort.Strings(it.items)
	return it
}

// checkZRandMember verifies the replies a (redis) and b (subject) to
// ZRANDMEMBER (opZRandom) the way check does HRANDFIELD's: equal replies
// (after sorting) pass; errors, nils and empty replies must be equal;
// otherwise the replies must have the same type and length, the length the
// count asks for, distinct members for a positive count, and the whole
// zset for a count at least its size (ZCARD on both); every returned member
// must be in the zset (ZMSCORE of all of them, equal on both servers, no
// nil), with WITHSCORES at the score ZMSCORE gives.
func (rc randomCheck) checkZRandMember(args []string, a, b harness.Reply) (bool, string) {
	if ok, _ := compareReplies(args, a, b); ok {
		return true, ""
	}
	if a.IsError() || b.IsError() || a.Null || b.Null || a.Type != b.Type {
		return false, "bytes differ"
	}
	key := args[1]
	hasCount := len(args) >= 3
	var count int64 = 1
	if hasCount {
		n, err := strconv.ParseInt(args[2], 10, 64)
		if err != nil {
			return false, fmt.Sprintf("bytes differ (count %q not understood by the harness)", args[2])
		}
		count = n
	}
	withScores := len(args) == 4
	ea, err := randElems(a, withScores)
	if err != nil {
		return false, "redis reply: " + err.Error()
	}
	eb, err := randElems(b, withScores)
	if err != nil {
		return false, rc.subName + " reply: " + err.Error()
	}
	if len(ea) != len(eb) {
		return false, fmt.Sprintf("reply lengths differ: %d vs %d", len(ea), len(eb))
	}
	unique := !hasCount || count > 0
	if unique && hasDuplicates(eb) {
		return false, rc.subName + " returned a member twice for a positive count"
	}
	if unique && hasDuplicates(ea) {
		return false, "redis returned a member twice for a positive count"
	}
	if strings.Join(sortedElems(ea), "\x01") == strings.Join(sortedElems(eb), "\x01") {
		return true, "" // the same members in another order
	}
	card, ok, why := rc.both("ZCARD", key)
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
		return false, fmt.Sprintf("%d members for count %d of a zset of %d", len(eb), count, card.Int)
	}
	if hasCount && count >= card.Int {
		return false, "the count covers the whole zset, but the sorted replies differ"
	}
	names := unionNames(ea, eb)
	r, ok, why := rc.both(append([]string{"ZMSCORE", key}, names...)...)
	if !ok {
		return false, why
	}
	stored := map[string]string{}
	for i, e := range r.Elems {
		if e.Null {
			return false, fmt.Sprintf("%q was returned but is not in %q", names[i], key)
		}
		stored[names[i]] = e.Str
	}
	if withScores {
		for _, side := range []struct {
			name string
			es   []randElem
		}{{"redis", ea}, {rc.subName, eb}} {
			for _, e := range side.es {
				if stored[e.name] != e.value {
					return false, fmt.Sprintf("%s returned %q with score %q, but ZMSCORE says %q",
						side.name, e.name, e.value, stored[e.name])
				}
			}
		}
	}
	return true, ""
}

// zgenBlockingSpec is where a blocking zset command keeps its first key
// and its timeout (negative: counted from the end).
type zgenBlockingSpec struct{ key, timeout int }

var zgenBlockingSpecs = map[string]zgenBlockingSpec{
	"BZPOPMIN": {1, -1}, "BZPOPMAX": {1, -1}, "BZMPOP": {3, 1},
}

// zgenBlockingWait reports, for a generated command, whether it is a
// blocking zset command that Redis would accept and so may wait: its first
// key, and its timeout in seconds (0: forever).
func zgenBlockingWait(args []string) (key string, timeout float64, waits bool) {
	name := strings.ToUpper(args[0])
	spec, ok := zgenBlockingSpecs[name]
	if !ok {
		return "", 0, false
	}
	if a := zgenArity[strings.ToLower(name)]; len(args) < -a {
		return "", 0, false // arity error
	}
	ti := spec.timeout
	if ti < 0 {
		ti += len(args)
	}
	timeout, ok = lgenTimeout(args[ti])
	if !ok {
		return "", 0, false
	}
	if name == "BZMPOP" {
		if n, err := strconv.Atoi(args[2]); err != nil || n <= 0 || n > len(args)-4 {
			return "", 0, false // numkeys error
		}
	}
	return args[spec.key], timeout, true
}

// zgenLexCommand reports whether args is a command whose reply reads a
// zset by lex order, and the key it reads.
func zgenLexCommand(args []string) (string, bool) {
	name := strings.ToUpper(args[0])
	if a, ok := zgenArity[strings.ToLower(name)]; ok && ((a > 0 && len(args) != a) || len(args) < -a) {
		return "", false // arity error
	}
	switch name {
	case "ZRANGEBYLEX", "ZREVRANGEBYLEX", "ZLEXCOUNT", "ZREMRANGEBYLEX":
		if len(args) > 1 {
			return args[1], true
		}
	case "ZRANGE", "ZRANGESTORE":
		src := 1
		if name == "ZRANGESTORE" {
			src = 2
		}
		for _, a := range args {
			if strings.EqualFold(a, "BYLEX") && len(args) > src {
				return args[src], true
			}
		}
	}
	return "", false
}

// TestZSetGenerator checks the sorted-set generator without servers: it is
// deterministic, covers every sorted-set command and the keyspace commands
// on zsets, sends lex commands only to the lex keys, and never emits a
// blocking command that could wait long: one with a timeout of 0 or above
// zgenMaxWait must follow a ZADD to its first key, and the short waits
// together stay well under a second per seed.
func TestZSetGenerator(t *testing.T) {
	const ops = defaultOps
	want := append([]string{}, zgenArityNames...)
	want = append(want, "type", "del", "exists", "rename", "renamenx", "copy", "move", "expire",
		"pexpire", "ttl", "persist", "object", "scan", "keys", "select", "set", "hset", "sadd",
		"rpush")
	for seed := int64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			cfg := genConfig{Lists: true, ZSetCommands: true}
			g1, g2 := newGen(seed, 1e9, cfg), newGen(seed, 1e9, cfg)
			seen := map[string]int{}
			var prev []string
			var waited float64
			var timedOut, immediate, lex, zscan, zrand int
			for i := 0; i < ops; i++ {
				o, o2 := g1.next(), g2.next()
				if fmt.Sprintf("%q %v %v", o.Args, o.Sleep, o.Kind) != fmt.Sprintf("%q %v %v", o2.Args, o2.Sleep, o2.Kind) {
					t.Fatalf("op %d differs between two generators of seed %d: %q vs %q", i, seed, o.Args, o2.Args)
				}
				if o.Sleep > 0 {
					continue
				}
				seen[strings.ToLower(o.Args[0])]++
				switch o.Kind {
				case opZScan:
					zscan++
					if strings.ToUpper(o.Args[0]) != "ZSCAN" || o.Args[2] != "0" {
						t.Errorf("op %d: opZScan for %s", i, fmtArgs(o.Args))
					}
				case opZRandom:
					zrand++
					if strings.ToUpper(o.Args[0]) != "ZRANDMEMBER" {
						t.Errorf("op %d: opZRandom for %s", i, fmtArgs(o.Args))
					}
				}
				if k, ok := zgenLexCommand(o.Args); ok {
					lex++
					if !zgenIsLex(k) {
						t.Errorf("op %d: lex command on %q, not a lex key: %s", i, k, fmtArgs(o.Args))
					}
				}
				if key, timeout, waits := zgenBlockingWait(o.Args); waits {
					added := len(prev) >= 4 && strings.EqualFold(prev[0], "ZADD") && prev[1] == key
					switch {
					case added:
						immediate++
					case timeout == 0 || timeout > zgenMaxWait:
						t.Errorf("op %d: %s may block %vs (0 = forever): no ZADD to %q before it (previous: %s)",
							i, fmtArgs(o.Args), timeout, key, fmtArgs(prev))
					default:
						timedOut++
						waited += timeout
					}
				}
				prev = o.Args
			}
			for _, name := range want {
				if seen[name] == 0 {
					t.Errorf("%d ops never emitted %s", ops, strings.ToUpper(name))
				}
			}
			if waited > 0.5 {
				t.Errorf("blocking commands on empty keys may wait %.2fs in all; keep them rarer", waited)
			}
			if immediate == 0 || timedOut == 0 {
				t.Errorf("blocking commands: %d return at once, %d time out; want both kinds", immediate, timedOut)
			}
			if lex == 0 || zscan == 0 || zrand == 0 {
				t.Errorf("lex commands %d, ZSCAN iterations %d, ZRANDMEMBER %d: want all", lex, zscan, zrand)
			}
			t.Logf("%d distinct commands; blocking: %d at once, %d timing out (%.2fs); %d lex commands",
				len(seen), immediate, timedOut, waited, lex)
		})
	}
}

// TestZSetGenBlockingWait pins zgenBlockingWait, on which the safety check
// of TestZSetGenerator rests.
func TestZSetGenBlockingWait(t *testing.T) {
	tests := []struct {
		cmd     string
		key     string
		timeout float64
		waits   bool
	}{
		{"BZPOPMIN k 0", "k", 0, true},
		{"BZPOPMAX k j 0.5", "k", 0.5, true},
		{"bzpopmin k 1", "k", 1, true},
		{"BZPOPMIN k abc", "", 0, false},
		{"BZPOPMIN k -1", "", 0, false},
		{"BZPOPMAX k nan", "", 0, false},
		{"BZPOPMIN k", "", 0, false},
		{"BZMPOP 0 1 k MIN", "k", 0, true},
		{"BZMPOP 0.01 2 k j MAX COUNT 2", "k", 0.01, true},
		{"BZMPOP 0 0 k MIN", "", 0, false},
		{"BZMPOP 0 abc k MIN", "", 0, false},
		{"BZMPOP 1 5 k MIN", "", 0, false},
		{"BZMPOP 1 1 k", "", 0, false},
		{"ZPOPMIN k 0", "", 0, false},
	}
	for _, tt := range tests {
		key, timeout, waits := zgenBlockingWait(strings.Fields(tt.cmd))
		if key != tt.key || timeout != tt.timeout || waits != tt.waits {
			t.Errorf("zgenBlockingWait(%s) = %q, %v, %v; want %q, %v, %v", tt.cmd, key, timeout, waits, tt.key, tt.timeout, tt.waits)
		}
	}
}

// TestZSetGenLexPools runs the generator against one redis-server and
// checks, every 100 commands and at the end, that every zset the lex
// commands may read (the lex keys, in each database the generator uses)
// holds only members of score 0: the condition under which Redis's lex
// replies do not depend on its skiplist's random levels, and so the
// redis-vs-redis runs prove nothing about it.
func TestZSetGenLexPools(t *testing.T) {
	s := harness.StartRedis(t)
	c := harness.MustDial(t, s.Addr())
	if r := c.Do("FLUSHALL"); r.Str != "OK" {
		t.Fatalf("FLUSHALL: %s", r.String())
	}
	lexKeys := append([]string{zgenLexStr, zgenLexNone}, zgenLexKeys...)
	for i := 0; i < zgenBigLex; i++ {
		lexKeys = append(lexKeys, "bzl:"+strconv.Itoa(i))
	}
	g := newGen(1, time.Now().Unix(), genConfig{Lists: true, ZSetCommands: true})
	var zsets, members int
	check := func(at int) {
		t.Helper()
		for db := 0; db <= 2; db++ {
			c.Do("SELECT", strconv.Itoa(db))
			for _, k := range lexKeys {
				if typ := c.Do("TYPE", k); typ.Str != "zset" {
					continue
				}
				zsets++
				r := c.Do("ZRANGE", k, "0", "-1", "WITHSCORES")
				for j := 1; j < len(r.Elems); j += 2 {
					members++
					if sc := r.Elems[j].Str; sc != "0" && sc != "-0" {
						t.Fatalf("after op %d: db %d: lex key %q holds %q with score %s", at, db, k, r.Elems[j-1].Str, sc)
					}
				}
			}
		}
		c.Do("SELECT", strconv.Itoa(g.db))
	}
	const ops = 3000
	for i := 0; i < ops; i++ {
		o := g.next()
		if o.Sleep > 0 {
			pause(o.Sleep)
			continue
		}
		if o.Kind == opZScan {
			zscanIterate(c, o.Args)
		} else if r := c.Do(o.Args...); r.Err != nil {
			t.Fatalf("op %d %s: %v", i, fmtArgs(o.Args), r.Err)
		}
		if i%100 == 99 {
			check(i)
		}
	}
	check(ops)
	if zsets == 0 || members == 0 {
		t.Fatalf("the lex keys never held a zset (%d checks found %d members)", zsets, members)
	}
	t.Logf("lex keys checked: %d zsets, %d members, all of score 0", zsets, members)
}

// TestZSetChecksDetectMismatches feeds zscanUnion and checkZRandMember,
// against two redis-servers, states and replies that are wrong in the ways
// a server could be wrong, and checks each is reported (and that right
// ones pass).
func TestZSetChecksDetectMismatches(t *testing.T) {
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
	both("ZADD", "z", "1", "a", "2.5", "b", "0.1", "c", "3", "d")
	cases := []struct {
		name string
		args []string
		a, b string
		ok   bool
	}{
		{"members in another order", []string{"ZRANDMEMBER", "z", "2"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nb\r\n$1\r\na\r\n", true},
		{"other members", []string{"ZRANDMEMBER", "z", "2"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nc\r\n$1\r\nd\r\n", true},
		{"a non-member", []string{"ZRANDMEMBER", "z", "2"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\na\r\n$1\r\nz\r\n", false},
		{"a repeat for a positive count", []string{"ZRANDMEMBER", "z", "2"}, "*2\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\na\r\n$1\r\na\r\n", false},
		{"repeats for a negative count", []string{"ZRANDMEMBER", "z", "-3"}, "*3\r\n$1\r\na\r\n$1\r\na\r\n$1\r\nb\r\n", "*3\r\n$1\r\nc\r\n$1\r\nc\r\n$1\r\nc\r\n", true},
		{"too short", []string{"ZRANDMEMBER", "z", "-3"}, "*3\r\n$1\r\na\r\n$1\r\na\r\n$1\r\nb\r\n", "*2\r\n$1\r\nc\r\n$1\r\nc\r\n", false},
		{"not the whole zset", []string{"ZRANDMEMBER", "z", "4"}, "*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n", "*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nz\r\n", false},
		{"one member", []string{"ZRANDMEMBER", "z"}, "$1\r\na\r\n", "$1\r\nd\r\n", true},
		{"one non-member", []string{"ZRANDMEMBER", "z"}, "$1\r\na\r\n", "$1\r\nz\r\n", false},
		{"an error for a member", []string{"ZRANDMEMBER", "z"}, "$1\r\na\r\n", "-ERR x\r\n", false},
		{"RESP2 scores", []string{"ZRANDMEMBER", "z", "-2", "WITHSCORES"}, "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\na\r\n$1\r\n1\r\n", "*4\r\n$1\r\nd\r\n$1\r\n3\r\n$1\r\nc\r\n$19\r\n0.10000000000000001\r\n", true},
		{"RESP2 wrong score", []string{"ZRANDMEMBER", "z", "-2", "WITHSCORES"}, "*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\na\r\n$1\r\n1\r\n", "*4\r\n$1\r\nd\r\n$1\r\n3\r\n$1\r\nc\r\n$3\r\n0.1\r\n", false},
		{"RESP3 scores", []string{"ZRANDMEMBER", "z", "1", "WITHSCORES"}, "*1\r\n*2\r\n$1\r\na\r\n,1\r\n", "*1\r\n*2\r\n$1\r\nb\r\n,2.5\r\n", true},
		{"RESP3 wrong score", []string{"ZRANDMEMBER", "z", "1", "WITHSCORES"}, "*1\r\n*2\r\n$1\r\na\r\n,1\r\n", "*1\r\n*2\r\n$1\r\nb\r\n,2\r\n", false},
	}
	for _, tc := range cases {
		if ok, why := rc.checkZRandMember(tc.args, reply(tc.a), reply(tc.b)); ok != tc.ok {
			t.Errorf("%s: %s: ok=%v (%s), want %v", tc.name, fmtArgs(tc.args), ok, why, tc.ok)
		}
	}
	// Over RESP3, ZMSCORE answers with doubles, whose payloads are what
	// the scores are compared with.
	for _, c := range []*harness.Conn{ref, sub} {
		if r := c.Do("HELLO", "3"); r.Type != '%' {
			t.Fatalf("HELLO 3: %s", r.String())
		}
	}
	for _, tc := range cases[len(cases)-2:] {
		if ok, why := rc.checkZRandMember(tc.args, reply(tc.a), reply(tc.b)); ok != tc.ok {
			t.Errorf("over RESP3: %s: %s: ok=%v (%s), want %v", tc.name, fmtArgs(tc.args), ok, why, tc.ok)
		}
	}
	for _, c := range []*harness.Conn{ref, sub} {
		if r := c.Do("HELLO", "2"); r.Type != '*' {
			t.Fatalf("HELLO 2: %s", r.String())
		}
	}

	// zscanUnion: equal zsets pass whatever the paging; a different score
	// or a missing member fails.
	both("FLUSHALL")
	args := []string{"ZADD", "big"}
	for i := 0; i < 300; i++ {
		args = append(args, strconv.Itoa(i%17)+".5", "m:"+strconv.Itoa(i))
	}
	both(args...)
	both("ZADD", "small", "1", "a", "0.1", "b")
	scans := [][]string{{"ZSCAN", "big", "0", "COUNT", "7"}, {"ZSCAN", "big", "0", "MATCH", "m:1*"}, {"ZSCAN", "small", "0"}}
	for _, args := range scans {
		if _, _, ok, why := zscanUnion(ref, sub, args, "sub"); !ok {
			t.Errorf("%s on equal data: %s", fmtArgs(args), why)
		}
	}
	sub.Do("ZADD", "big", "99", "m:10")
	sub.Do("ZREM", "big", "m:150")
	sub.Do("ZADD", "small", "2", "b")
	for _, args := range scans {
		if _, _, ok, _ := zscanUnion(ref, sub, args, "sub"); ok {
			t.Errorf("%s: a difference went unnoticed", fmtArgs(args))
		}
	}
	if _, _, ok, _ := zscanUnion(ref, sub, []string{"ZSCAN", "big", "abc"}, "sub"); !ok {
		t.Errorf("ZSCAN with a bad cursor: equal errors reported as a mismatch")
	}
}
