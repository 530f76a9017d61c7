package codec

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestPrefixEnd(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"", "", false},
		{"\xff", "", false},
		{"\xff\xff", "", false},
		{"a", "b", true},
		{"a\xff", "b", true},
		{"a\xff\xff", "b", true},
		{"m\x00", "m\x01", true},
		{"m\xff", "n", true},
		{"ab\x00", "ab\x01", true},
		{"\x00", "\x01", true},
		{"\xfe\xff", "\xff", true},
	}
	for _, tt := range tests {
		got := PrefixEnd([]byte(tt.in))
		if (got != nil) != tt.ok || string(got) != tt.want {
			t.Errorf("PrefixEnd(%q) = %q, want %q (ok=%v)", tt.in, got, tt.want, tt.ok)
		}
		dst := []byte("pre")
		app, ok := AppendPrefixEnd(dst, []byte(tt.in))
		if ok != tt.ok || string(app) != "pre"+tt.want {
			t.Errorf("AppendPrefixEnd(%q) = %q, %v", tt.in, app, ok)
		}
		// In place, reusing the prefix's own buffer.
		in := []byte(tt.in)
		if inPlace, ok := AppendPrefixEnd(in[:0], in); ok && string(inPlace) != tt.want {
			t.Errorf("in-place AppendPrefixEnd(%q) = %q", tt.in, inPlace)
		}
	}
	// The input is not modified.
	in := []byte("a\xff")
	PrefixEnd(in)
	if string(in) != "a\xff" {
		t.Fatalf("PrefixEnd modified its input: %q", in)
	}
}

func TestPrefixEndBoundsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	alphabet := []byte{0, 1, 0xfe, 0xff}
	gen := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return b
	}
	for range 5000 {
		p, k := gen(1+r.IntN(3)), gen(r.IntN(5))
		end := PrefixEnd(p)
		below := end == nil || bytes.Compare(k, end) < 0
		if bytes.HasPrefix(k, p) && !below {
			t.Fatalf("key %x has prefix %x but is not below PrefixEnd %x", k, p, end)
		}
		if !bytes.HasPrefix(k, p) && bytes.Compare(k, p) > 0 && below {
			t.Fatalf("key %x is after prefix %x without it, yet below PrefixEnd %x", k, p, end)
		}
	}
}

func TestExpiryKeyRoundTrip(t *testing.T) {
	tests := []struct {
		at  int64
		db  uint8
		key string
	}{
		{0, 0, ""}, {1, 0, "k"}, {1700000000123, 15, "a\x00b"}, {math.MaxInt64, 255, "\xff"},
	}
	for _, tt := range tests {
		b := AppendExpiryKey([]byte("pre"), tt.at, tt.db, []byte(tt.key))[3:]
		if len(b) != 10+len(tt.key) || b[0] != NSExpiry {
			t.Fatalf("expiry key %q", b)
		}
		if !bytes.HasPrefix(b, AppendExpiryTimePrefix(nil, tt.at)) {
			t.Fatalf("%q lacks its time prefix", b)
		}
		at, db, key, err := ParseExpiryKey(b)
		if err != nil || at != tt.at || db != tt.db || string(key) != tt.key {
			t.Errorf("ParseExpiryKey(%q) = %d %d %q %v", b, at, db, key, err)
		}
	}
	for _, bad := range [][]byte{
		nil, []byte("x"), []byte("x\x00\x00\x00\x00\x00\x00\x00\x01"), // no db byte
		AppendExpiryKey(nil, -1, 0, []byte("k")),
		AppendExpiryKey(nil, math.MinInt64, 0, nil),
		append([]byte{'m'}, AppendExpiryKey(nil, 1, 0, []byte("k"))[1:]...),
	} {
		if _, _, _, err := ParseExpiryKey(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ParseExpiryKey(%q) err = %v", bad, err)
		}
	}
}

func TestExpiryKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	times := []int64{0, 1, 255, 256, 1 << 32, 1700000000000, math.MaxInt64 - 1, math.MaxInt64}
	for range 300 {
		times = append(times, r.Int64(), int64(r.IntN(1<<20)))
	}
	keys := []string{"", "a", "\xff\xff"}
	for _, a := range times {
		for _, b := range times[:30] {
			// Time dominates whatever the db and key.
			ka := AppendExpiryKey(nil, a, uint8(r.IntN(256)), []byte(keys[r.IntN(3)]))
			kb := AppendExpiryKey(nil, b, uint8(r.IntN(256)), []byte(keys[r.IntN(3)]))
			if a != b && bytes.Compare(ka, kb) != cmpInt64(a, b) {
				t.Fatalf("expiry %d vs %d: keys %q %q out of order", a, b, ka, kb)
			}
		}
		// Every key due at or before a sorts below the time prefix of a+1.
		if a < math.MaxInt64 {
			k := AppendExpiryKey(nil, a, 255, []byte("\xff\xff\xff"))
			if bytes.Compare(k, AppendExpiryTimePrefix(nil, a+1)) >= 0 {
				t.Fatalf("expiry at %d not below prefix of %d", a, a+1)
			}
			if bytes.Compare(AppendExpiryTimePrefix(nil, a+1), AppendExpiryKey(nil, a+1, 0, nil)) > 0 {
				t.Fatalf("time prefix of %d above its first key", a+1)
			}
		}
	}
	start, end := ExpiryStart(), PrefixEnd(ExpiryStart())
	for _, at := range times {
		k := AppendExpiryKey(nil, at, 255, []byte("\xff"))
		if bytes.Compare(k, start) < 0 || bytes.Compare(k, end) >= 0 {
			t.Fatalf("expiry key %q outside [%q, %q)", k, start, end)
		}
	}
}

func TestGarbageRoundTrip(t *testing.T) {
	for _, seq := range []uint64{0, 1, math.MaxUint64} {
		k := AppendGarbageKey(nil, seq)
		if len(k) != 9 || k[0] != NSGarbage {
			t.Fatalf("garbage key %q", k)
		}
		got, err := ParseGarbageKey(k)
		if err != nil || got != seq {
			t.Fatalf("ParseGarbageKey(%q) = %d, %v", k, got, err)
		}
		if end := PrefixEnd(GarbageStart()); bytes.Compare(k, GarbageStart()) <= 0 || bytes.Compare(k, end) >= 0 {
			t.Fatalf("garbage key %q outside the garbage namespace", k)
		}
	}
	if bytes.Compare(AppendGarbageKey(nil, 255), AppendGarbageKey(nil, 256)) >= 0 {
		t.Fatal("garbage keys not in seq order")
	}
	tests := []Garbage{
		{DB: 0, Key: nil, Version: 0, Count: 0},
		{DB: 15, Key: []byte("hash"), Version: 42, Count: 1_000_000},
		{DB: 255, Key: bytes.Repeat([]byte{0xff}, 70), Version: math.MaxUint64, Count: math.MaxUint64},
	}
	for _, g := range tests {
		v := AppendGarbageValue(nil, g.DB, g.Key, g.Version, g.Count)
		if len(v) != 1+4+len(g.Key)+16 {
			t.Fatalf("garbage value length %d", len(v))
		}
		got, err := ParseGarbageValue(v)
		if err != nil || got.DB != g.DB || !bytes.Equal(got.Key, g.Key) || got.Version != g.Version || got.Count != g.Count {
			t.Fatalf("ParseGarbageValue = %+v, %v; want %+v", got, err, g)
		}
		if want := AppendDataPrefix(nil, g.DB, g.Key, g.Version); !bytes.Equal(got.AppendDataPrefix(nil), want) {
			t.Fatalf("Garbage.AppendDataPrefix = %q, want %q", got.AppendDataPrefix(nil), want)
		}
	}
	v := AppendGarbageValue(nil, 1, []byte("key"), 2, 3)
	for _, bad := range [][]byte{nil, v[:4], v[:5], v[:len(v)-1], append(bytes.Clone(v), 0)} {
		if _, err := ParseGarbageValue(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ParseGarbageValue(%q) err = %v", bad, err)
		}
	}
	for _, bad := range [][]byte{nil, []byte("g"), append(AppendGarbageKey(nil, 1), 0), []byte("s\x00\x00\x00\x00\x00\x00\x00\x01")} {
		if _, err := ParseGarbageKey(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ParseGarbageKey(%q) err = %v", bad, err)
		}
	}
}

func TestSystemRecords(t *testing.T) {
	if got := AppendSystemKey(nil, SysFormat); string(got) != "sformat" {
		t.Fatalf("format key %q", got)
	}
	if got := AppendSystemKey(nil, SysNextVersion); string(got) != "snextversion" {
		t.Fatalf("nextversion key %q", got)
	}
	for _, v := range []uint64{0, FormatVersion, math.MaxUint64} {
		b := AppendUint64Value(nil, v)
		got, err := ParseUint64Value(b)
		if err != nil || got != v {
			t.Fatalf("uint64 value %d -> %x -> %d, %v", v, b, got, err)
		}
	}
	for _, n := range []int{0, 7, 9} {
		if _, err := ParseUint64Value(make([]byte, n)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("ParseUint64Value(%d bytes) err = %v", n, err)
		}
	}
}

// TestNamespacesDisjoint checks that records of different kinds never share
// a namespace range.
func TestNamespacesDisjoint(t *testing.T) {
	k := []byte("\xff\xff")
	recs := map[byte][]byte{
		NSMeta:    AppendMetaKey(nil, 255, k),
		NSData:    AppendFieldKey(nil, 255, k, math.MaxUint64, k),
		NSExpiry:  AppendExpiryKey(nil, math.MaxInt64, 255, k),
		NSGarbage: AppendGarbageKey(nil, math.MaxUint64),
		NSSystem:  AppendSystemKey(nil, "\xff"),
	}
	for ns := range recs {
		end := PrefixEnd([]byte{ns})
		for rns, r := range recs {
			in := bytes.Compare(r, []byte{ns}) >= 0 && bytes.Compare(r, end) < 0
			if in != (ns == rns) {
				t.Errorf("record %q inside namespace %c = %v", r, ns, in)
			}
		}
	}
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
