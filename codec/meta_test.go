package codec

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"
)

func metaEqual(a, b *Meta) bool {
	return a.Type == b.Type && a.ExpireAt == b.ExpireAt && a.Version == b.Version &&
		a.Count == b.Count && a.Bytes == b.Bytes && a.Head == b.Head && a.Tail == b.Tail && a.Flags == b.Flags &&
		bytes.Equal(a.Value, b.Value)
}

func TestMetaRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		m       Meta
		wantLen int
	}{
		{"empty string", Meta{Type: TypeString}, 10},
		{"string", Meta{Type: TypeString, Value: []byte("hello")}, 15},
		{"binary string", Meta{Type: TypeString, ExpireAt: 1700000000123, Value: []byte{0, 0xff, 1}}, 13},
		{"hash", Meta{Type: TypeHash, Version: 7, Count: 3, Bytes: 40}, 34},
		{"set max", Meta{Type: TypeSet, ExpireAt: math.MaxInt64, Version: math.MaxUint64, Count: math.MaxUint64, Bytes: math.MaxUint64}, 34},
		{"zset", Meta{Type: TypeZSet, ExpireAt: 1, Version: 1 << 40, Count: 1}, 35},
		{"zset skiplist", Meta{Type: TypeZSet, Version: 2, Count: 200, Bytes: 3000, Flags: ZSetSkiplist}, 35},
		{"empty list", Meta{Type: TypeList, Version: 9, Head: ListStartIndex, Tail: ListStartIndex}, 50},
		{"list", Meta{Type: TypeList, Version: 9, Count: 5, Head: ListStartIndex - 2, Tail: ListStartIndex + 3}, 50},
		{"list at zero", Meta{Type: TypeList, Count: 1, Head: 0, Tail: 1}, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []byte("pre")
			b := AppendMeta(prefix, &tt.m)
			if !bytes.Equal(b[:3], prefix) {
				t.Fatalf("AppendMeta clobbered dst: %x", b)
			}
			b = b[3:]
			if len(b) != tt.wantLen {
				t.Fatalf("encoded length %d, want %d", len(b), tt.wantLen)
			}
			if b[0] != FormatVersion || Type(b[1]) != tt.m.Type {
				t.Fatalf("header %x", b[:2])
			}
			// Decode into a dirty Meta: every field must be overwritten.
			got := Meta{Type: TypeList, ExpireAt: 5, Version: 5, Count: 5, Head: 5, Tail: 5, Value: []byte("junk")}
			if err := DecodeMeta(b, &got); err != nil {
				t.Fatalf("DecodeMeta: %v", err)
			}
			if !metaEqual(&got, &tt.m) {
				t.Fatalf("round trip: got %+v, want %+v", got, tt.m)
			}
		})
	}
}

func TestMetaIgnoresUnusedFields(t *testing.T) {
	m := Meta{Type: TypeHash, Version: 1, Count: 2, Head: 3, Tail: 4, Value: []byte("x")}
	var got Meta
	if err := DecodeMeta(AppendMeta(nil, &m), &got); err != nil {
		t.Fatal(err)
	}
	if got.Head != 0 || got.Tail != 0 || got.Value != nil {
		t.Fatalf("hash meta carried list/string fields: %+v", got)
	}
	s := Meta{Type: TypeString, Version: 1, Count: 2, Value: []byte("v")}
	if err := DecodeMeta(AppendMeta(nil, &s), &got); err != nil {
		t.Fatal(err)
	}
	if got.Version != 0 || got.Count != 0 || string(got.Value) != "v" {
		t.Fatalf("string meta: %+v", got)
	}
}

func TestDecodeMetaValueAliases(t *testing.T) {
	b := AppendMeta(nil, &Meta{Type: TypeString, Value: []byte("abc")})
	var m Meta
	if err := DecodeMeta(b, &m); err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] = 'z'
	if string(m.Value) != "abz" {
		t.Fatalf("Value does not alias input: %q", m.Value)
	}
}

func TestDecodeMetaMalformed(t *testing.T) {
	hash := AppendMeta(nil, &Meta{Type: TypeHash, Version: 1, Count: 1})
	list := AppendMeta(nil, &Meta{Type: TypeList, Version: 1, Count: 1, Head: 10, Tail: 11})
	with := func(b []byte, i int, v byte) []byte {
		c := bytes.Clone(b)
		c[i] = v
		return c
	}
	listWith := func(count, head, tail uint64) []byte {
		return AppendMeta(nil, &Meta{Type: TypeList, Count: count, Head: head, Tail: tail})
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{"nil", nil},
		{"format only", []byte{FormatVersion}},
		{"short header", hash[:9]},
		{"type none", with(hash, 1, 0)},
		{"type 6", with(hash, 1, 6)},
		{"type 255", with(hash, 1, 255)},
		{"negative expiry", with(hash, 2, 0x80)},
		{"negative expiry string", with(AppendMeta(nil, &Meta{Type: TypeString}), 2, 0xff)},
		{"hash short", hash[:25]},
		{"hash header only", hash[:10]},
		{"hash long", append(bytes.Clone(hash), 0)},
		{"hash with list length", with(list, 1, byte(TypeHash))},
		{"list short", list[:41]},
		{"list long", append(bytes.Clone(list), 0)},
		{"list as hash length", with(hash, 1, byte(TypeList))},
		{"list head > tail", listWith(0, 11, 10)},
		{"list count too big", listWith(2, 10, 11)},
		{"list count too small", listWith(0, 10, 11)},
		{"list count wraps", listWith(1, math.MaxUint64, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m Meta
			err := DecodeMeta(tt.b, &m)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("DecodeMeta(%x) err = %v, want ErrCorrupt", tt.b, err)
			}
			if errors.Is(err, ErrUnknownFormat) {
				t.Fatalf("corrupt record reported as unknown format: %v", err)
			}
			if !metaEqual(&m, &Meta{}) {
				t.Fatalf("failed decode left %+v", m)
			}
		})
	}
}

func TestDecodeMetaUnknownFormat(t *testing.T) {
	for _, f := range []byte{0, 2, 0xff} {
		b := AppendMeta(nil, &Meta{Type: TypeString, Value: []byte("v")})
		b[0] = f
		var m Meta
		err := DecodeMeta(b, &m)
		if !errors.Is(err, ErrUnknownFormat) {
			t.Fatalf("format %d: err = %v, want ErrUnknownFormat", f, err)
		}
		var fe *FormatError
		if !errors.As(err, &fe) || fe.Format != f {
			t.Fatalf("format %d: err = %#v, want *FormatError{%d}", f, err, f)
		}
		if errors.Is(err, ErrCorrupt) {
			t.Fatalf("unknown format also matches ErrCorrupt")
		}
	}
	// A lone unknown format byte is still reported as a format error.
	var m Meta
	if err := DecodeMeta([]byte{2}, &m); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("short unknown format: %v", err)
	}
}

// TestKeyHash checks that KeyHash (also the cold index's hash in upstream
// mode) is deterministic and tells keys apart.
func TestKeyHash(t *testing.T) {
	if KeyHash([]byte("a")) != KeyHash([]byte("a")) {
		t.Fatal("KeyHash is not deterministic")
	}
	seen := map[uint64]string{}
	for i := range 10000 {
		k := fmt.Sprintf("key:%d", i)
		h := KeyHash([]byte(k))
		if o, dup := seen[h]; dup {
			t.Fatalf("KeyHash(%q) == KeyHash(%q)", k, o)
		}
		seen[h] = k
	}
}

func TestKeyHashPinned(t *testing.T) {
	// KeyHash is part of the on-disk format: these values must never change.
	tests := []struct {
		key  string
		want uint64
	}{
		{"", 0xef46db3751d8e999}, // the published xxHash64 of the empty input
		{"a", 0xd24ec4f1a98c6e5b},
		{"foo", 0x33bf00a859c4ba3f},
	}
	for _, tt := range tests {
		if got := KeyHash([]byte(tt.key)); got != tt.want {
			t.Errorf("KeyHash(%q) = %#016x, want %#016x", tt.key, got, tt.want)
		}
	}
}

func TestMetaKey(t *testing.T) {
	hashBytes := func(k string) string { return string(AppendUint64Value(nil, KeyHash([]byte(k)))) }
	tests := []struct {
		db  uint8
		key string
	}{
		{0, ""}, {0, "foo"}, {15, "a\x00b"}, {255, "\xff"},
	}
	for _, tt := range tests {
		b := AppendMetaKey([]byte("pre"), tt.db, []byte(tt.key))[3:]
		want := "m" + string([]byte{tt.db}) + hashBytes(tt.key) + tt.key
		if string(b) != want {
			t.Errorf("AppendMetaKey(%d, %q) = %q, want %q", tt.db, tt.key, b, want)
		}
		if !bytes.HasPrefix(b, AppendMetaHashPrefix(nil, tt.db, KeyHash([]byte(tt.key)))) {
			t.Errorf("meta key %q outside its hash prefix", b)
		}
		if !bytes.HasPrefix(b, AppendMetaPrefix(nil, tt.db)) {
			t.Errorf("meta key %q outside its db prefix", b)
		}
		if h := MetaKeyHash(b); h != KeyHash([]byte(tt.key)) {
			t.Errorf("MetaKeyHash(%q) = %#x", b, h)
		}
		db, key, err := ParseMetaKey(b)
		if err != nil || db != tt.db || string(key) != tt.key {
			t.Errorf("ParseMetaKey(%q) = %d, %q, %v", b, db, key, err)
		}
	}
	good := AppendMetaKey(nil, 0, []byte("key"))
	wrongHash := bytes.Clone(good)
	wrongHash[9] ^= 1
	wrongKey := append(bytes.Clone(good), 'x')
	for _, bad := range [][]byte{nil, []byte("m"), []byte("m\x00"), good[:9], wrongHash, wrongKey,
		append([]byte{'d'}, good[1:]...)} {
		if _, _, err := ParseMetaKey(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ParseMetaKey(%q) err = %v", bad, err)
		}
	}
	if h := MetaKeyHash([]byte("m\x00")); h != 0 {
		t.Errorf("MetaKeyHash of a short key = %#x, want 0", h)
	}
}

func TestMetaKeyOrder(t *testing.T) {
	// Within a db, meta keys sort by (hash, key); dbs never interleave; a
	// hash prefix is a seek target for that hash (the SCAN cursor).
	keys := []string{"", "\x00", "a", "a\x00", "ab", "b", "\xff", "\xff\xff"}
	for i := range 200 {
		keys = append(keys, fmt.Sprintf("key:%d", i))
	}
	for _, db := range []uint8{0, 1, 255} {
		end := PrefixEnd(AppendMetaPrefix(nil, db))
		for _, a := range keys {
			ka := AppendMetaKey(nil, db, []byte(a))
			ha := KeyHash([]byte(a))
			if bytes.Compare(ka, end) >= 0 || bytes.Compare(ka, AppendMetaPrefix(nil, db)) < 0 {
				t.Fatalf("db %d key %q outside db range", db, a)
			}
			if db < 255 && bytes.Compare(ka, AppendMetaPrefix(nil, db+1)) >= 0 {
				t.Fatalf("db %d key %q sorts into db %d", db, a, db+1)
			}
			if bytes.Compare(ka, AppendMetaHashPrefix(nil, db, ha)) < 0 {
				t.Fatalf("key %q sorts before its own hash prefix", a)
			}
			if ha < math.MaxUint64 && bytes.Compare(ka, AppendMetaHashPrefix(nil, db, ha+1)) >= 0 {
				t.Fatalf("key %q not before the next hash prefix", a)
			}
			for _, b := range keys[:12] {
				hb := KeyHash([]byte(b))
				want := cmpUint64(ha, hb)
				if want == 0 {
					want = bytes.Compare([]byte(a), []byte(b))
				}
				if got := bytes.Compare(ka, AppendMetaKey(nil, db, []byte(b))); got != want {
					t.Fatalf("meta keys %q vs %q: %d, want %d", a, b, got, want)
				}
			}
		}
	}
}

func cmpUint64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestTypeString(t *testing.T) {
	tests := map[Type]string{
		TypeNone: "none", TypeString: "string", TypeList: "list", TypeSet: "set",
		TypeZSet: "zset", TypeHash: "hash", TypeStream: "stream", 7: "unknown(7)",
	}
	for typ, want := range tests {
		if got := typ.String(); got != want {
			t.Errorf("Type(%d).String() = %q, want %q", uint8(typ), got, want)
		}
		if valid := typ >= 1 && typ <= 6; typ.Valid() != valid {
			t.Errorf("Type(%d).Valid() = %v", uint8(typ), typ.Valid())
		}
	}
	// The numbers are part of the format.
	if TypeString != 1 || TypeList != 2 || TypeSet != 3 || TypeZSet != 4 || TypeHash != 5 {
		t.Fatal("type numbers changed: that breaks the on-disk format")
	}
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestKeyCountsRoundTrip(t *testing.T) {
	keys, exps := make([]int64, 256), make([]int64, 256)
	keys[0], exps[0] = 10, 3
	keys[7] = 1
	keys[255], exps[255] = 1<<40, 1<<40
	b := AppendKeyCounts(nil, keys, exps)
	gk, gx := make([]int64, 256), make([]int64, 256)
	gk[3] = 99 // cleared by the parse
	if err := ParseKeyCounts(b, gk, gx); err != nil {
		t.Fatal(err)
	}
	for db := range 256 {
		if gk[db] != keys[db] || gx[db] != exps[db] {
			t.Fatalf("db %d: got %d/%d, want %d/%d", db, gk[db], gx[db], keys[db], exps[db])
		}
	}
	for _, bad := range [][]byte{
		b[:len(b)-1], // truncated
		append(append([]byte{}, b[17:34]...), b[:17]...),       // out of order
		append([]byte{1}, make([]byte, 7)...),                  // short entry
		{2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2},    // more expiries than keys
		{2, 0x80, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, // negative
	} {
		if err := ParseKeyCounts(bad, gk, gx); err == nil {
			t.Fatalf("ParseKeyCounts(%x) accepted a corrupt value", bad)
		}
	}
}
