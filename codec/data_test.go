package codec

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func mustScoreKey(t testing.TB, db uint8, key []byte, version uint64, score float64, member []byte) []byte {
	t.Helper()
	b, err := AppendScoreKey(nil, db, key, version, score, member)
	if err != nil {
		t.Fatalf("AppendScoreKey: %v", err)
	}
	return b
}

func TestDataKeyLayout(t *testing.T) {
	got := AppendFieldKey(nil, 3, []byte("ab"), 0x0102030405060708, []byte("f"))
	h := FieldHash([]byte("f"))
	want := "d\x03\x00\x00\x00\x02ab\x01\x02\x03\x04\x05\x06\x07\x08f" +
		string([]byte{byte(h >> 24), byte(h >> 16), byte(h >> 8), byte(h)}) + "f"
	if string(got) != want {
		t.Fatalf("field key %q, want %q", got, want)
	}
	got = AppendListKey(nil, 0, nil, 1, ListStartIndex)
	want = "d\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01l\x80\x00\x00\x00\x00\x00\x00\x00"
	if string(got) != want {
		t.Fatalf("list key %q, want %q", got, want)
	}
	got = mustScoreKey(t, 1, []byte("z"), 2, 1, []byte("m"))
	want = "d\x01\x00\x00\x00\x01z\x00\x00\x00\x00\x00\x00\x00\x02s\xbf\xf0\x00\x00\x00\x00\x00\x00m"
	if string(got) != want {
		t.Fatalf("score key %q, want %q", got, want)
	}
}

func TestDataKeyRoundTrip(t *testing.T) {
	type parsed struct {
		tag    byte
		field  string
		index  uint64
		score  float64
		member string
	}
	keys := []string{"", "k", "a\x00b", string(bytes.Repeat([]byte{0xff}, 300))}
	for _, db := range []uint8{0, 15, 255} {
		for _, k := range keys {
			for _, v := range []uint64{0, 1, math.MaxUint64} {
				score := func(f float64, m string) []byte { return mustScoreKey(t, db, []byte(k), v, f, []byte(m)) }
				cases := []struct {
					b    []byte
					want parsed
				}{
					{AppendFieldKey(nil, db, []byte(k), v, nil), parsed{tag: TagField}},
					{AppendFieldKey(nil, db, []byte(k), v, []byte("field\x00")), parsed{tag: TagField, field: "field\x00"}},
					{AppendListKey(nil, db, []byte(k), v, 0), parsed{tag: TagList}},
					{AppendListKey(nil, db, []byte(k), v, ListStartIndex-1), parsed{tag: TagList, index: ListStartIndex - 1}},
					{AppendListKey(nil, db, []byte(k), v, math.MaxUint64), parsed{tag: TagList, index: math.MaxUint64}},
					{score(math.Inf(-1), ""), parsed{tag: TagScore, score: math.Inf(-1)}},
					{score(-1.5, "m"), parsed{tag: TagScore, score: -1.5, member: "m"}},
					{score(math.Copysign(0, -1), "z"), parsed{tag: TagScore, score: 0, member: "z"}},
					{score(math.MaxFloat64, "\xff"), parsed{tag: TagScore, score: math.MaxFloat64, member: "\xff"}},
				}
				for _, c := range cases {
					gdb, gkey, gver, tag, rest, err := ParseDataKey(c.b)
					if err != nil {
						t.Fatalf("ParseDataKey(%q): %v", c.b, err)
					}
					if gdb != db || string(gkey) != k || gver != v || tag != c.want.tag {
						t.Fatalf("ParseDataKey(%q) = %d %q %d %q", c.b, gdb, gkey, gver, tag)
					}
					if !bytes.HasPrefix(c.b, AppendDataPrefix(nil, db, []byte(k), v)) {
						t.Fatalf("%q lacks its data prefix", c.b)
					}
					var got parsed
					got.tag = tag
					switch tag {
					case TagField:
						_, f, err := ParseFieldRest(rest)
						if err != nil {
							t.Fatalf("ParseFieldRest: %v", err)
						}
						got.field = string(f)
						if !bytes.HasPrefix(c.b, AppendFieldPrefix(nil, db, []byte(k), v)) {
							t.Fatalf("%q lacks field prefix", c.b)
						}
					case TagList:
						if got.index, err = ParseListRest(rest); err != nil {
							t.Fatal(err)
						}
						if !bytes.HasPrefix(c.b, AppendListPrefix(nil, db, []byte(k), v)) {
							t.Fatalf("%q lacks list prefix", c.b)
						}
					case TagScore:
						var m []byte
						if got.score, m, err = ParseScoreRest(rest); err != nil {
							t.Fatal(err)
						}
						got.member = string(m)
						if !bytes.HasPrefix(c.b, AppendScorePrefix(nil, db, []byte(k), v)) {
							t.Fatalf("%q lacks score prefix", c.b)
						}
					}
					if got != c.want || (got.score == 0 && math.Signbit(got.score)) {
						t.Fatalf("ParseDataKey(%q) rest decodes to %+v, want %+v", c.b, got, c.want)
					}
				}
			}
		}
	}
}

func TestParseDataKeyMalformed(t *testing.T) {
	good := AppendFieldKey(nil, 0, []byte("key"), 1, []byte("f"))
	with := func(i int, v byte) []byte {
		c := bytes.Clone(good)
		c[i] = v
		return c
	}
	list := AppendListKey(nil, 0, []byte("key"), 1, 5)
	score := mustScoreKey(t, 0, []byte("key"), 1, 2, []byte("m"))
	nanScore := AppendScorePrefix(nil, 0, []byte("key"), 1)
	nanScore = append(nanScore, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	tests := []struct {
		name string
		b    []byte
	}{
		{"nil", nil},
		{"namespace only", []byte{'d'}},
		{"no keylen", []byte{'d', 0, 0, 0, 0}},
		{"wrong namespace", with(0, 'm')},
		{"keylen too long", with(5, 6)},
		{"keylen huge", with(2, 0xff)},
		{"no tag", good[:len(good)-6]},
		{"field hash short", good[:len(good)-3]},
		{"field hash wrong", with(len(good)-2, good[len(good)-2]^1)},
		{"no version", good[:9]},
		{"unknown tag", with(len(good)-6, 'q')},
		{"list index short", list[:len(list)-1]},
		{"list index long", append(bytes.Clone(list), 0)},
		{"list no index", AppendListPrefix(nil, 0, []byte("key"), 1)},
		{"score short", score[:len(score)-2]},
		{"score NaN", nanScore},
		{"score -0", append(AppendScorePrefix(nil, 0, []byte("key"), 1), 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, _, _, _, err := ParseDataKey(tt.b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("ParseDataKey(%q) err = %v, want ErrCorrupt", tt.b, err)
			}
		})
	}
}

func TestParseDataKeyKeyCapped(t *testing.T) {
	b := AppendFieldKey(nil, 0, []byte("key"), 1, []byte("field"))
	_, key, _, _, _, err := ParseDataKey(b)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(key, 'X') // must not overwrite the version that follows
	if _, _, v, _, _, err := ParseDataKey(b); err != nil || v != 1 {
		t.Fatalf("appending to parsed key clobbered input: v=%d err=%v", v, err)
	}
}

// TestDataPrefixesDoNotInterleave checks that the DataPrefix range of one
// (db, key, version) never contains a record of another.
func TestDataPrefixesDoNotInterleave(t *testing.T) {
	type kv struct {
		db  uint8
		key string
		ver uint64
	}
	fixed := []kv{
		{0, "a", 1}, {0, "ab", 1}, {0, "a", 2}, {0, "", 1}, {1, "a", 1},
		{0, "a\x00", 1}, {0, "a\xff", 1}, {0, "b", 1}, {0, "a", 0x100}, {0, "\x00\x00\x00\x01a", 1},
	}
	r := rand.New(rand.NewPCG(3, 4))
	all := fixed
	for range 200 {
		k := make([]byte, r.IntN(4))
		for i := range k {
			k[i] = "a\x00\xff"[r.IntN(3)]
		}
		all = append(all, kv{uint8(r.IntN(2)), string(k), uint64(r.IntN(3))})
	}
	records := func(x kv) [][]byte {
		k := []byte(x.key)
		return [][]byte{
			AppendDataPrefix(nil, x.db, k, x.ver),
			AppendFieldKey(nil, x.db, k, x.ver, nil),
			AppendFieldKey(nil, x.db, k, x.ver, []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff")),
			AppendListKey(nil, x.db, k, x.ver, 0),
			AppendListKey(nil, x.db, k, x.ver, math.MaxUint64),
			mustScoreKey(t, x.db, k, x.ver, math.Inf(-1), nil),
			mustScoreKey(t, x.db, k, x.ver, math.Inf(1), []byte("\xff\xff\xff")),
		}
	}
	for _, a := range all {
		lo := AppendDataPrefix(nil, a.db, []byte(a.key), a.ver)
		hi := PrefixEnd(lo)
		for _, b := range all {
			same := a == b
			for _, rec := range records(b) {
				inside := bytes.Compare(rec, lo) >= 0 && bytes.Compare(rec, hi) < 0
				if inside != same {
					t.Fatalf("record %q of %+v inside range of %+v = %v", rec, b, a, inside)
				}
			}
		}
	}
}

func TestSubPrefixesSeparateKinds(t *testing.T) {
	k := []byte("k")
	prefixes := map[byte][]byte{
		TagField: AppendFieldPrefix(nil, 0, k, 1),
		TagList:  AppendListPrefix(nil, 0, k, 1),
		TagScore: AppendScorePrefix(nil, 0, k, 1),
	}
	recs := map[byte][][]byte{
		TagField: {AppendFieldKey(nil, 0, k, 1, nil), AppendFieldKey(nil, 0, k, 1, []byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff"))},
		TagList:  {AppendListKey(nil, 0, k, 1, 0), AppendListKey(nil, 0, k, 1, math.MaxUint64)},
		TagScore: {mustScoreKey(t, 0, k, 1, math.Inf(-1), nil), mustScoreKey(t, 0, k, 1, math.Inf(1), []byte("\xff"))},
	}
	for pt, p := range prefixes {
		end := PrefixEnd(p)
		for rt, rs := range recs {
			for _, r := range rs {
				inside := bytes.Compare(r, p) >= 0 && bytes.Compare(r, end) < 0
				if inside != (pt == rt) {
					t.Errorf("record %q (tag %c) inside prefix tag %c = %v", r, rt, pt, inside)
				}
			}
		}
	}
}

func TestListKeyOrder(t *testing.T) {
	idx := []uint64{0, 1, 255, 256, ListStartIndex - 1, ListStartIndex, ListStartIndex + 1, math.MaxUint64 - 1, math.MaxUint64}
	r := rand.New(rand.NewPCG(5, 6))
	for range 500 {
		idx = append(idx, r.Uint64(), ListStartIndex+uint64(r.IntN(1000))-500)
	}
	k := []byte("list")
	for _, a := range idx {
		for _, b := range idx[:40] {
			got := bytes.Compare(AppendListKey(nil, 2, k, 7, a), AppendListKey(nil, 2, k, 7, b))
			want := 0
			if a < b {
				want = -1
			} else if a > b {
				want = 1
			}
			if got != want {
				t.Fatalf("list index %d vs %d: byte order %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestScoreKeyOrder(t *testing.T) {
	// (score, member) order, with -0 == +0 so member breaks the tie.
	k := []byte("z")
	members := []string{"", "a", "b", "b\x00"}
	type sm struct {
		s float64
		m string
	}
	var items []sm
	for _, s := range orderedScores {
		for _, m := range members {
			items = append(items, sm{s, m})
		}
	}
	for _, a := range items {
		ka := mustScoreKey(t, 0, k, 1, a.s, []byte(a.m))
		for _, b := range items {
			want := cmpFloat(a.s, b.s)
			if want == 0 {
				want = bytes.Compare([]byte(a.m), []byte(b.m))
			}
			if got := bytes.Compare(ka, mustScoreKey(t, 0, k, 1, b.s, []byte(b.m))); got != want {
				t.Fatalf("(%v,%q) vs (%v,%q): %d, want %d", a.s, a.m, b.s, b.m, got, want)
			}
		}
	}
	// Seeking: the empty-member key of score s is the first key with score s,
	// and PrefixEnd of it is the first key with a greater score.
	lo := mustScoreKey(t, 0, k, 1, 2, nil)
	hi := PrefixEnd(lo)
	for _, c := range []struct {
		s      float64
		m      string
		inside bool
	}{{2, "", true}, {2, "\xff\xff", true}, {math.Nextafter(2, 3), "", false}, {math.Nextafter(2, 1), "\xff", false}} {
		kc := mustScoreKey(t, 0, k, 1, c.s, []byte(c.m))
		if in := bytes.Compare(kc, lo) >= 0 && bytes.Compare(kc, hi) < 0; in != c.inside {
			t.Errorf("score %v member %q inside [score 2] = %v", c.s, c.m, in)
		}
	}
}

func TestMaxKeyLenGuard(t *testing.T) {
	if MaxKeyLen != 1<<32-1 {
		t.Fatalf("MaxKeyLen = %d", uint64(MaxKeyLen))
	}
	// A real 4 GiB key is too big for a unit test: check the guard the
	// builders call (AppendDataPrefix, AppendGarbageValue) by length.
	panics := func(n int) (p bool) {
		defer func() { p = recover() != nil }()
		checkKeyLen(n)
		return false
	}
	if panics(0) || panics(MaxKeyLen) {
		t.Fatal("checkKeyLen refused a storable length")
	}
	if !panics(MaxKeyLen + 1) {
		t.Fatal("checkKeyLen accepted MaxKeyLen+1")
	}
}
