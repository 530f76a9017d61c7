package link

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spillway/spillway/codec"
	"github.com/spillway/spillway/coldstore"
	"github.com/spillway/spillway/tiering"
	"github.com/spillway/spillway/tiering/uptier"
)

// openColdEngine opens a cold store and a tiering engine without a hot
// tier in a temporary directory, as upstream mode does.
func openColdEngine(t *testing.T) *tiering.Engine {
	t.Helper()
	cold, err := coldstore.Open(coldstore.Options{Dir: t.TempDir(), CacheBytes: 4 << 20, MemTableBytes: 4 << 20,
		Fsync: coldstore.FsyncNo, Logger: quietLog})
	if err != nil {
		t.Fatalf("coldstore.Open: %v", err)
	}
	eng, err := tiering.Open(cold, tiering.Options{Databases: 16, HotBudget: 0, PromoteMinHits: 1,
		ColdReadMaxBytes: 1 << 20, Logger: quietLog})
	if err != nil {
		cold.Close()
		t.Fatalf("tiering.Open: %v", err)
	}
	t.Cleanup(func() {
		eng.Close()
		if err := cold.Close(); err != nil {
			t.Errorf("coldstore.Close: %v", err)
		}
	})
	return eng
}

func bs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

func genStrings(n int, f func(i int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// coldSizeOf is the size ColdSize must report: a string's length; the
// total length of a structure's fields and values (8 bytes a score).
func coldSizeOf(v *uptier.Value) int64 {
	switch v.Type {
	case codec.TypeString:
		return int64(len(v.Str))
	case codec.TypeZSet:
		n := int64(0)
		for _, m := range v.Members {
			n += int64(len(m)) + 8
		}
		return n
	}
	n := int64(0)
	for _, e := range v.Elems {
		n += int64(len(e))
	}
	return n
}

// restoreAndRead RESTOREs payload under key (with ABSTTL when expireAt is
// set) and reads the value back as readValue does.
func restoreAndRead(t *testing.T, c *Conn, key string, payload []byte, expireAt int64) (string, int64) {
	t.Helper()
	args := [][]byte{[]byte("RESTORE"), []byte(key), []byte(strconv.FormatInt(expireAt, 10)), payload}
	if expireAt != 0 {
		args = append(args, []byte("ABSTTL"))
	}
	c.SendArgs(args)
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	r, err := c.Read()
	if err != nil || string(r) != "+OK\r\n" {
		t.Fatalf("RESTORE %s = %q, %v", key, r, err)
	}
	return readValue(t, c, key)
}

// buildNative creates v under key in the server with ordinary commands
// (one command for the whole content, as a client would), so that the
// server decides its encoding.
func buildNative(t *testing.T, c *Conn, key string, v *uptier.Value) {
	t.Helper()
	var args []string
	switch v.Type {
	case codec.TypeString:
		args = []string{"SET", key, string(v.Str)}
	case codec.TypeHash:
		args = []string{"HSET", key}
	case codec.TypeSet:
		args = []string{"SADD", key}
	case codec.TypeList:
		args = []string{"RPUSH", key}
	case codec.TypeZSet:
		// Members scored -0 go last: added once a big set is a skiplist
		// (Redis 7.0 starts every set compact), they keep their sign.
		args = []string{"ZADD", key}
		var negZero []string
		for i, m := range v.Members {
			if sc := v.Scores[i]; sc == 0 && math.Signbit(sc) {
				negZero = append(negZero, "-0", string(m))
			} else {
				args = append(args, strconv.FormatFloat(sc, 'g', -1, 64), string(m))
			}
		}
		args = append(args, negZero...)
	}
	if v.Type != codec.TypeString && v.Type != codec.TypeZSet {
		for _, e := range v.Elems {
			args = append(args, string(e))
		}
	}
	mustDo(t, c, args...)
	if v.ExpireAt != 0 {
		mustDo(t, c, "PEXPIREAT", key, strconv.FormatInt(v.ExpireAt, 10))
	}
}

// readValue reads key's value as the canonical text valueText gives, and
// its expiry (unix ms, 0 for none).
func readValue(t *testing.T, c *Conn, key string) (string, int64) {
	t.Helper()
	exp, ok := IntReply(mustDo(t, c, "PEXPIRETIME", key))
	if !ok {
		t.Fatalf("PEXPIRETIME %s: not an integer", key)
	}
	if exp == -1 {
		exp = 0
	}
	typ := ReplyText(mustDo(t, c, "TYPE", key))
	var items [][]byte
	var err error
	switch typ {
	case "string":
		return "string " + strconv.Quote(ReplyText(mustDo(t, c, "GET", key))), exp
	case "hash":
		items, err = ParseBulks(mustDo(t, c, "HGETALL", key))
	case "set":
		items, err = ParseBulks(mustDo(t, c, "SMEMBERS", key))
	case "list":
		items, err = ParseBulks(mustDo(t, c, "LRANGE", key, "0", "-1"))
	case "zset":
		items, err = ParseBulks(mustDo(t, c, "ZRANGE", key, "0", "-1", "WITHSCORES"))
	default:
		t.Fatalf("restored %s has type %q", key, typ)
	}
	if err != nil {
		t.Fatal(err)
	}
	v := &uptier.Value{Type: uptier.TypeByName(typ)}
	switch v.Type {
	case codec.TypeZSet:
		for i := 0; i+1 < len(items); i += 2 {
			s, err := strconv.ParseFloat(string(items[i+1]), 64)
			if err != nil {
				t.Fatalf("score %q: %v", items[i+1], err)
			}
			v.Members = append(v.Members, items[i])
			v.Scores = append(v.Scores, s)
		}
	default:
		v.Elems = items
	}
	return valueText(v), exp
}

// valueText renders a value canonically: sets and hashes sorted, lists in
// order, zset members sorted with their scores' exact bits (so -0 and 0
// differ).
func valueText(v *uptier.Value) string {
	var parts []string
	switch v.Type {
	case codec.TypeString:
		return "string " + strconv.Quote(string(v.Str))
	case codec.TypeHash:
		for i := 0; i+1 < len(v.Elems); i += 2 {
			parts = append(parts, strconv.Quote(string(v.Elems[i]))+"="+strconv.Quote(string(v.Elems[i+1])))
		}
		slices.Sort(parts)
	case codec.TypeSet:
		for _, e := range v.Elems {
			parts = append(parts, strconv.Quote(string(e)))
		}
		slices.Sort(parts)
	case codec.TypeList:
		for _, e := range v.Elems {
			parts = append(parts, strconv.Quote(string(e)))
		}
	case codec.TypeZSet:
		for i, m := range v.Members {
			parts = append(parts, fmt.Sprintf("%q=%v(%#x)", m, v.Scores[i], math.Float64bits(v.Scores[i])))
		}
		slices.Sort(parts)
	}
	return v.Type.String() + " " + strings.Join(parts, " ")
}

// TestColdCopyRoundTrip imports every type, dumps it back, RESTOREs the
// payload into a real redis-server and compares with what was imported.
func TestColdCopyRoundTrip(t *testing.T) {
	eng := openColdEngine(t)
	s := startServer(t, 0)
	c := s.admin(t, 0)
	future := time.Now().Add(time.Hour).UnixMilli()

	vals := []*uptier.Value{
		{Key: []byte("str:ttl"), Type: codec.TypeString, ExpireAt: future, Str: []byte("hello")},
		{Key: []byte("str:empty"), Type: codec.TypeString, Str: []byte{}},
		{Key: []byte("str:int"), Type: codec.TypeString, Str: []byte("12345")},
		{Key: []byte("str:binary\r\n\x00"), Type: codec.TypeString, Str: []byte(strings.Repeat("\x00\xff\r\n", 30000))},
		{Key: []byte("hash:small"), Type: codec.TypeHash, ExpireAt: future + 1,
			Elems: bs("f1", "v1", "", "empty field", "bin\x00\r\n", "", "n", "42")},
		{Key: []byte("hash:big"), Type: codec.TypeHash,
			Elems: bs(slices.Concat(genStrings(3000, func(i int) string {
				if i%2 == 0 {
					return "field:" + strconv.Itoa(i/2)
				}
				return strings.Repeat("v", i%100)
			}))...)},
		{Key: []byte("set:ints"), Type: codec.TypeSet, Elems: bs("1", "2", "3", "-7", "100000")},
		{Key: []byte("set:small"), Type: codec.TypeSet, ExpireAt: future + 2, Elems: bs("a", "", "b\r\n", "\x00")},
		{Key: []byte("set:big"), Type: codec.TypeSet, Elems: bs(genStrings(2500, func(i int) string { return "m" + strconv.Itoa(i) })...)},
		{Key: []byte("list:small"), Type: codec.TypeList, Elems: bs("x", "", "x", "y\x00", "x")},
		{Key: []byte("list:big"), Type: codec.TypeList, ExpireAt: future + 3,
			Elems: bs(genStrings(6000, func(i int) string { return strconv.Itoa(i) + strings.Repeat("e", i%50) })...)},
		{Key: []byte("zset:special"), Type: codec.TypeZSet, ExpireAt: future + 4,
			Members: bs("negzero", "inf", "ninf", "pi", "huge", "tiny", "neg", "zero"),
			Scores:  []float64{math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.Pi, 1e308, 5e-324, -2.5, 0}},
		// Held as skiplists by Redis (over 128 members; a member over 64
		// bytes), where -0 keeps its sign. Members are in score order, as
		// the demoter reads them (ZRANGE): the -0 member comes first.
		{Key: []byte("zset:skiplist-negzero"), Type: codec.TypeZSet,
			Members: bs(genStrings(200, func(i int) string { return "s" + strconv.Itoa(1000+i) })...),
			Scores: func() []float64 {
				f := make([]float64, 200)
				for i := range f {
					f[i] = float64(i)
				}
				f[0] = math.Copysign(0, -1)
				return f
			}()},
		{Key: []byte("zset:long-member-negzero"), Type: codec.TypeZSet,
			Members: bs("nz", "a", strings.Repeat("L", 100)),
			Scores:  []float64{math.Copysign(0, -1), 1, 5}},
		{Key: []byte("zset:big"), Type: codec.TypeZSet,
			Members: bs(genStrings(1500, func(i int) string { return "z" + strconv.Itoa(i) })...),
			Scores: func() []float64 {
				f := make([]float64, 1500)
				for i := range f {
					f[i] = float64(i%37) / 3
				}
				return f
			}()},
	}
	if err := uptier.Import(eng, 0, vals); err != nil {
		t.Fatalf("Import: %v", err)
	}
	var d Dump // reused for every key
	for _, v := range vals {
		t.Run(string(v.Key), func(t *testing.T) {
			size, ok, err := uptier.ColdSize(eng, 0, v.Key)
			if err != nil || !ok || size != coldSizeOf(v) {
				t.Errorf("ColdSize = %d, %v, %v; want %d, true", size, ok, err, coldSizeOf(v))
			}
			exp, ok, err := DumpKey(eng, 0, v.Key, &d)
			if err != nil || !ok {
				t.Fatalf("DumpKey = %v, %v", ok, err)
			}
			if exp != v.ExpireAt {
				t.Errorf("DumpKey expiry %d; want %d", exp, v.ExpireAt)
			}
			got, gotExp := restoreAndRead(t, c, string(v.Key), d.Finish(), exp)
			// What Redis holds when the value is built by commands: the
			// imported value, except that a compact sorted set has no -0.
			buildNative(t, c, "native:"+string(v.Key), v)
			want, wantExp := readValue(t, c, "native:"+string(v.Key))
			if v.Type != codec.TypeZSet && want != valueText(v) {
				t.Fatalf("test bug: native %s differs from the imported value", v.Key)
			}
			if gotExp != v.ExpireAt || wantExp != v.ExpireAt {
				t.Errorf("restored PEXPIRETIME %d (native %d); want %d", gotExp, wantExp, v.ExpireAt)
			}
			if got != want {
				t.Errorf("restored value differs from the same value built by commands:\n got %.600s\nwant %.600s", got, want)
			}
		})
	}
	// -0 as the server prints it: kept in a skiplist only.
	for _, tt := range []struct{ key, member, want string }{
		{"zset:special", "negzero", "0"},
		{"zset:skiplist-negzero", "s1000", "-0"},
		{"zset:long-member-negzero", "nz", "-0"},
	} {
		native := ReplyText(mustDo(t, c, "ZSCORE", "native:"+tt.key, tt.member))
		got := ReplyText(mustDo(t, c, "ZSCORE", tt.key, tt.member))
		if got != tt.want || native != tt.want {
			t.Errorf("ZSCORE %s %s = %q (built by ZADD: %q); want %q", tt.key, tt.member, got, native, tt.want)
		}
	}

	// DropKey removes the cold copy; dropping a missing key is no error.
	for _, key := range []string{"hash:big", "str:ttl", "zset:special", "never-there"} {
		if err := uptier.DropKey(eng, 0, []byte(key)); err != nil {
			t.Fatalf("DropKey %s: %v", key, err)
		}
		if _, ok, err := DumpKey(eng, 0, []byte(key), &d); ok || err != nil {
			t.Errorf("DumpKey %s after DropKey = %v, %v; want no copy", key, ok, err)
		}
		if _, ok, err := uptier.ColdSize(eng, 0, []byte(key)); ok || err != nil {
			t.Errorf("ColdSize %s after DropKey = %v, %v; want no copy", key, ok, err)
		}
	}
	if _, ok, _ := DumpKey(eng, 0, []byte("list:big"), &d); !ok {
		t.Error("DropKey of other keys dropped list:big")
	}
}

// TestColdCopyImportSemantics checks replacement, databases, expiry,
// empty structures and that a failed Import writes nothing.
func TestColdCopyImportSemantics(t *testing.T) {
	eng := openColdEngine(t)
	c := startServer(t, 0).admin(t, 0)
	var d Dump
	restored := 0
	// dump returns key's cold copy as RESTOREd into the server (rendered
	// by valueText) and its expiry; ok is false when there is none.
	dump := func(db int, key string) (string, int64, bool) {
		t.Helper()
		exp, ok, err := DumpKey(eng, db, []byte(key), &d)
		if err != nil {
			t.Fatalf("DumpKey %s: %v", key, err)
		}
		if !ok {
			return "", 0, false
		}
		restored++
		got, gotExp := restoreAndRead(t, c, fmt.Sprintf("r%d:%s", restored, key), d.Finish(), exp)
		if gotExp != exp {
			t.Fatalf("restored %s has expiry %d; DumpKey said %d", key, gotExp, exp)
		}
		return got, exp, true
	}
	imp := func(db int, vals ...*uptier.Value) {
		t.Helper()
		if err := uptier.Import(eng, db, vals); err != nil {
			t.Fatalf("Import: %v", err)
		}
	}

	// Each Import replaces what the key held, whatever its type.
	future := time.Now().Add(time.Hour).UnixMilli()
	seq := []*uptier.Value{
		{Key: []byte("k"), Type: codec.TypeHash, ExpireAt: future, Elems: bs("a", "1", "b", "2")},
		{Key: []byte("k"), Type: codec.TypeHash, Elems: bs("c", "3")},
		{Key: []byte("k"), Type: codec.TypeSet, Elems: bs("x", "y", "w")},
		{Key: []byte("k"), Type: codec.TypeSet, Elems: bs("z")},
		{Key: []byte("k"), Type: codec.TypeList, ExpireAt: future, Elems: bs("1", "2", "3")},
		{Key: []byte("k"), Type: codec.TypeList, Elems: bs("4")},
		{Key: []byte("k"), Type: codec.TypeZSet, Members: bs("p", "q"), Scores: []float64{1, 2}},
		{Key: []byte("k"), Type: codec.TypeZSet, ExpireAt: future, Members: bs("r"), Scores: []float64{3}},
		{Key: []byte("k"), Type: codec.TypeString, Str: []byte("s")},
		{Key: []byte("k"), Type: codec.TypeHash, Elems: bs("h", "v", "i", "w")},
	}
	for i, v := range seq {
		imp(0, v)
		got, exp, ok := dump(0, "k")
		if !ok || got != valueText(v) || exp != v.ExpireAt {
			t.Fatalf("import %d (%s): cold copy %q exp %d ok %v; want %q exp %d", i, v.Type, got, exp, ok, valueText(v), v.ExpireAt)
		}
	}

	// Databases are separate.
	imp(2, &uptier.Value{Key: []byte("only2"), Type: codec.TypeString, Str: []byte("two")})
	if _, _, ok := dump(0, "only2"); ok {
		t.Error("a key imported into db 2 is in db 0")
	}
	if _, _, ok := dump(2, "only2"); !ok {
		t.Error("a key imported into db 2 is not there")
	}
	if _, ok, _ := uptier.ColdSize(eng, 3, []byte("only2")); ok {
		t.Error("ColdSize finds a db 2 key in db 3")
	}

	// Expired copies are not live.
	past := time.Now().Add(-time.Minute).UnixMilli()
	imp(0,
		&uptier.Value{Key: []byte("old:s"), Type: codec.TypeString, ExpireAt: past, Str: []byte("x")},
		&uptier.Value{Key: []byte("old:h"), Type: codec.TypeHash, ExpireAt: past, Elems: bs("f", "v")},
	)
	for _, k := range []string{"old:s", "old:h"} {
		if _, _, ok := dump(0, k); ok {
			t.Errorf("DumpKey of expired %s found a copy", k)
		}
		if _, ok, _ := uptier.ColdSize(eng, 0, []byte(k)); ok {
			t.Errorf("ColdSize of expired %s found a copy", k)
		}
	}

	// An empty structure leaves no copy.
	for _, typ := range []codec.Type{codec.TypeHash, codec.TypeSet, codec.TypeList, codec.TypeZSet} {
		key := "empty:" + typ.String()
		imp(0, &uptier.Value{Key: []byte(key), Type: typ})
		if _, _, ok := dump(0, key); ok {
			t.Errorf("an empty %s has a cold copy", typ)
		}
	}

	// A failed Import writes none of its values.
	err := uptier.Import(eng, 0, []*uptier.Value{
		{Key: []byte("atomic"), Type: codec.TypeString, Str: []byte("v")},
		{Key: []byte("k"), Type: codec.TypeString, Str: []byte("overwritten?")},
		{Key: []byte("stream"), Type: codec.TypeNone},
	})
	if err == nil || !strings.Contains(err.Error(), `"stream"`) {
		t.Fatalf("Import of an unsupported type = %v; want an error naming the key", err)
	}
	if _, _, ok := dump(0, "atomic"); ok {
		t.Error("a failed Import wrote a value")
	}
	if got, _, ok := dump(0, "k"); !ok || got != valueText(seq[len(seq)-1]) {
		t.Error("a failed Import changed an existing value")
	}
}
