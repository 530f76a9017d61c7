package cmdtable

import (
	"bytes"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/spillway/spillway/proxy/cmdtable/internal/rawredis"
	"github.com/spillway/spillway/proxy/resp"
)

// The tests in this file compare the package with a real redis-server 7.0,
// started once for the whole run. They fail (never skip) without one.

var (
	redisSrv *rawredis.Server
	redisErr error
)

func TestMain(m *testing.M) {
	redisSrv, redisErr = rawredis.Start()
	code := m.Run()
	if redisSrv != nil {
		redisSrv.Close()
	}
	os.Exit(code)
}

// dialRedis returns a connection speaking proto (2 or 3).
func dialRedis(t *testing.T, proto int) *rawredis.Conn {
	t.Helper()
	if redisErr != nil {
		t.Fatalf("these tests need a real Redis 7.0: install redis-server on PATH (%v)", redisErr)
	}
	c, err := rawredis.Dial(redisSrv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if proto == 3 {
		if _, err := c.Do("HELLO", "3"); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func do(t *testing.T, c *rawredis.Conn, args ...string) *rawredis.Value {
	t.Helper()
	v, err := c.Do(args...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func bargs(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// canonInfo sorts the subcommands of a COMMAND INFO element (index 9) by
// name, recursively, since Redis lists them in hash table order.
func canonInfo(v *rawredis.Value) {
	if v.Null || len(v.Elems) != 10 {
		return
	}
	subs := v.Elems[9].Elems
	sort.SliceStable(subs, func(i, j int) bool { return subs[i].Elems[0].Str < subs[j].Elems[0].Str })
	for _, s := range subs {
		canonInfo(s)
	}
}

// canonPairs sorts a map (or RESP2 flat array of pairs) of name -> docs by
// name and canonicalises every docs map.
func canonPairs(v *rawredis.Value) {
	sortPairs(v)
	canonDocsEntries(v)
}

// canonDocsEntries sorts the subcommands of every docs map in a map of
// name -> docs, keeping the outer order.
func canonDocsEntries(v *rawredis.Value) {
	for i := 1; i < len(v.Elems); i += 2 {
		d := v.Elems[i]
		for j := 0; j+1 < len(d.Elems); j += 2 {
			if d.Elems[j].Str == "subcommands" {
				canonPairs(d.Elems[j+1])
			}
		}
	}
}

func sortPairs(v *rawredis.Value) {
	type pair struct{ k, v *rawredis.Value }
	var ps []pair
	for i := 0; i+1 < len(v.Elems); i += 2 {
		ps = append(ps, pair{v.Elems[i], v.Elems[i+1]})
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].k.Str < ps[j].k.Str })
	for i, p := range ps {
		v.Elems[2*i], v.Elems[2*i+1] = p.k, p.v
	}
}

// sameBytes fails with the first difference between Redis's reply and ours.
func sameBytes(t *testing.T, what string, redis, ours []byte) {
	t.Helper()
	if bytes.Equal(redis, ours) {
		return
	}
	i := 0
	for i < len(redis) && i < len(ours) && redis[i] == ours[i] {
		i++
	}
	lo := max(0, i-120)
	t.Errorf("%s: reply differs from Redis at byte %d (redis %d bytes, ours %d)\nredis: %q\nours:  %q",
		what, i, len(redis), len(ours), redis[lo:min(len(redis), i+120)], ours[lo:min(len(ours), i+120)])
}

func TestInfoMatchesRedis(t *testing.T) {
	sample := []string{"get", "set", "mset", "zunionstore", "xread", "eval", "migrate", "client",
		"config", "object", "sort", "nosuch", "client|kill", "config|get", "GET", "get|x", "a|b|c", "spublish", "georadius"}
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := dialRedis(t, proto)
			got := do(t, c, append([]string{"COMMAND", "INFO"}, sample...)...)
			for _, e := range got.Elems {
				canonInfo(e)
			}
			w := &resp.Writer{Proto: proto}
			Full.WriteCommandInfo(w, bargs(sample))
			sameBytes(t, "COMMAND INFO sample", rawredis.Encode(nil, got), w.Buf)

			// Every command, through COMMAND.
			all := do(t, c, "COMMAND")
			sort.SliceStable(all.Elems, func(i, j int) bool { return all.Elems[i].Elems[0].Str < all.Elems[j].Elems[0].Str })
			for _, e := range all.Elems {
				canonInfo(e)
			}
			w.Reset()
			Full.WriteCommand(w)
			sameBytes(t, "COMMAND", rawredis.Encode(nil, all), w.Buf)

			cnt := do(t, c, "COMMAND", "COUNT")
			w.Reset()
			Full.WriteCommandCount(w)
			sameBytes(t, "COMMAND COUNT", cnt.Raw, w.Buf)
		})
	}
}

func TestDocsMatchesRedis(t *testing.T) {
	sample := []string{"get", "set", "client", "nosuch", "config|get", "migrate"}
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := dialRedis(t, proto)
			got := do(t, c, append([]string{"COMMAND", "DOCS"}, sample...)...)
			canonDocsEntries(got)
			w := &resp.Writer{Proto: proto}
			Full.WriteCommandDocs(w, bargs(sample))
			sameBytes(t, "COMMAND DOCS sample", rawredis.Encode(nil, got), w.Buf)

			all := do(t, c, "COMMAND", "DOCS")
			canonPairs(all)
			w.Reset()
			Full.WriteCommandDocs(w, nil)
			sameBytes(t, "COMMAND DOCS", rawredis.Encode(nil, all), w.Buf)
		})
	}
}

func TestListMatchesRedis(t *testing.T) {
	cases := [][]string{
		{},
		{"FILTERBY", "ACLCAT", "read"},
		{"filterby", "aclcat", "DANGEROUS"},
		{"FILTERBY", "ACLCAT", "nosuchcat"},
		{"FILTERBY", "PATTERN", "*GET*"},
		{"FILTERBY", "PATTERN", "client|*"},
		{"FILTERBY", "PATTERN", "[a-c]?[^x]*"},
		{"FILTERBY", "PATTERN", "x\\"},
		{"FILTERBY", "MODULE", "foo"},
		{"FILTERBY", "BOGUS", "x"},
		{"FILTERBY", "PATTERN"},
		{"FILTERBY", "PATTERN", "a", "b"},
		{"nope"},
	}
	for _, proto := range []int{2, 3} {
		c := dialRedis(t, proto)
		for _, tc := range cases {
			got := do(t, c, append([]string{"COMMAND", "LIST"}, tc...)...)
			w := &resp.Writer{Proto: proto}
			Full.WriteCommandList(w, bargs(tc))
			ours, err := rawredis.Parse(w.Buf)
			if err != nil {
				t.Fatalf("LIST %q: our reply does not parse: %v", tc, err)
			}
			if got.Type == '-' || ours.Type == '-' {
				sameBytes(t, fmt.Sprintf("RESP%d LIST %q", proto, tc), got.Raw, w.Buf)
				continue
			}
			// Redis's order is its hash table's: compare as sorted lists.
			a, b := got.Strings(), ours.Strings()
			sort.Strings(a)
			sort.Strings(b)
			if strings.Join(a, " ") != strings.Join(b, " ") || got.Type != ours.Type {
				t.Errorf("RESP%d LIST %q: redis %c%v\nours %c%v", proto, tc, got.Type, a, ours.Type, b)
			}
		}
	}
}

// getKeysCases are invocations whose keys COMMAND GETKEYS reports.
var getKeysCases = []string{
	"get k", "GET k", "get", "get a b", "nosuch a", "client nosuch", "config", "object",
	"set k v", "set k v get", "set k v EX 10 GET", "set k v gets", "mset a 1 b 2", "mset a 1 b",
	"del a b c", "exists a", "lcs a b", "smove a b m", "rename a b", "blpop a b 0", "brpoplpush a b 0",
	"zrangestore d s 0 1", "xadd s * f v", "touch a b", "unlink a", "watch a b",
	"zunionstore d 2 a b weights 1 2", "zunionstore d 0 a", "zunionstore d 3 a b",
	"zunionstore d 02 a b", "zunionstore d +2 a b", "zunionstore d -1 a", "zunionstore d 2a a b",
	"zunionstore d 1 a b c", "ZINTERSTORE d 1 a", "zdiffstore d 2 a b",
	"zunion 2 a b", "zinter 1 a withscores", "zdiff 2 a b", "zintercard 2 a b limit 1", "sintercard 2 a b",
	"sintercard 0 a", "sintercard 03 a b c",
	"eval s 0", "eval s 2 a b c", "eval s 3 a b", "eval s -1 a", "eval s x a", "evalsha h 1 k",
	"eval_ro s 1 k", "evalsha_ro h 2 a b", "fcall f 1 k a", "fcall f 0", "fcall_ro f 1 k",
	"xread streams a b 0 0", "xread count 1 block 0 streams a 0", "xread streams a", "xread streams a b c",
	"xread STREAMS streams 0 0", "xreadgroup group g c streams s >", "xreadgroup group g c count 1 noack streams a b 0 0",
	"xread count 1 foo streams a 0",
	"sort k", "sort k store d", "sort k by w get x limit 0 1 store d", "sort k store",
	"sort k limit 0 store d", "sort k store a store b", "sort_ro k by x get y",
	"migrate h p k 0 10", "migrate h p  0 10 keys a b c", "migrate h p  0 10 auth pw keys a b",
	"migrate h p  0 10 auth2 u pw keys a", "migrate h p k 0 10 keys a", "migrate h p  0 10 copy replace",
	"migrate h p  0 10 keys",
	"georadius k 0 0 1 km store d", "georadius k 0 0 1 km storedist d store e", "georadius k 0 0 1 km store",
	"georadiusbymember k m 1 km store d", "georadius_ro k 0 0 1 km", "georadius k 0 0 1 km",
	"lmpop 2 a b left", "lmpop 3 a b left", "blmpop 0 2 a b left", "zmpop 1 a min", "bzmpop 0 1 a min",
	"bitfield k get u8 0", "bitfield k set u8 0 1", "bitfield k overflow wrap get u8 0", "bitfield k get u8",
	"bitfield k", "bitfield_ro k get u8 0",
	"object encoding k", "OBJECT ENCODING k", "object help", "client kill x", "config get x",
	"memory usage k", "memory usage k samples 5", "xinfo stream k", "xinfo groups k",
	"publish ch m", "spublish ch m", "ssubscribe ch", "ping x", "pfcount a b", "pfmerge d a b",
	"bitop and d a b", "getex k persist", "restore k 0 v", "copy a b db 1", "expire k 10",
}

func TestGetKeysMatchesRedis(t *testing.T) {
	for _, proto := range []int{2, 3} {
		c := dialRedis(t, proto)
		for _, line := range getKeysCases {
			inv := strings.Split(line, " ")
			for _, sub := range []string{"GETKEYS", "GETKEYSANDFLAGS"} {
				compareGetKeys(t, c, proto, sub, inv)
			}
		}
	}
}

// TestGetKeysSweep compares every command and subcommand, invoked with
// arities around its own and two kinds of filler arguments.
func TestGetKeysSweep(t *testing.T) {
	c := dialRedis(t, 2)
	n := 0
	walkAll(func(cmd *Command) {
		base := strings.Split(cmd.Name, "|")
		need := cmd.Arity
		if need < 0 {
			need = -need
		}
		for _, argc := range []int{need, need + 1, need + 3} {
			for _, fill := range []string{"1", "k"} {
				inv := append([]string(nil), base...)
				for i := len(inv); i < argc; i++ {
					if fill == "1" {
						inv = append(inv, "1")
					} else {
						inv = append(inv, fmt.Sprintf("k%d", i))
					}
				}
				compareGetKeys(t, c, 2, "GETKEYSANDFLAGS", inv)
				n++
			}
		}
	})
	if n < 1000 {
		t.Fatalf("sweep covered only %d invocations", n)
	}
}

func compareGetKeys(t *testing.T, c *rawredis.Conn, proto int, sub string, inv []string) {
	t.Helper()
	got := do(t, c, append([]string{"COMMAND", sub}, inv...)...)
	w := &resp.Writer{Proto: proto}
	if sub == "GETKEYS" {
		Full.WriteCommandGetKeys(w, bargs(inv))
	} else {
		Full.WriteCommandGetKeysAndFlags(w, bargs(inv))
	}
	if got.Type == '-' && strings.HasPrefix(got.Str, "ERR wrong number of arguments for 'command|") {
		return // COMMAND GETKEYS's own arity: not ours to answer
	}
	sameBytes(t, fmt.Sprintf("RESP%d COMMAND %s %q", proto, sub, inv), got.Raw, w.Buf)

	// KeyPositions must agree with what the reply names.
	if cmd := LookupArgs(bargs(inv)); cmd != nil && sub == "GETKEYS" {
		pos, err := cmd.KeyPositions(bargs(inv), nil)
		switch {
		case got.Type == '-':
			if err == nil || "-"+err.Error()+"\r\n" != string(got.Raw) {
				t.Errorf("KeyPositions(%q) error = %v, redis %q", inv, err, got.Str)
			}
		case err != nil:
			t.Errorf("KeyPositions(%q) error %v, redis answered %q", inv, err, got.Raw)
		default:
			var names []string
			for _, p := range pos {
				names = append(names, inv[p])
			}
			if strings.Join(names, " ") != strings.Join(got.Strings(), " ") {
				t.Errorf("KeyPositions(%q) = %v (%v), redis %v", inv, pos, names, got.Strings())
			}
		}
	}
}
