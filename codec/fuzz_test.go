package codec

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// Seed corpora live in testdata/fuzz/<FuzzName>/ and run with plain go test.

// FuzzScoreOrder checks that encoded scores sort as the numbers do (with
// -0 == +0), decode back, and that NaN is refused.
func FuzzScoreOrder(f *testing.F) {
	f.Add(1.0, 2.0)
	f.Add(math.Inf(-1), -math.MaxFloat64)
	f.Fuzz(func(t *testing.T, a, b float64) {
		ea, errA := EncodeScore(a)
		eb, errB := EncodeScore(b)
		if math.IsNaN(a) != (errA != nil) || math.IsNaN(b) != (errB != nil) {
			t.Fatalf("NaN handling: EncodeScore(%v) err %v, EncodeScore(%v) err %v", a, errA, b, errB)
		}
		if errA != nil || errB != nil {
			return
		}
		ka, kb := AppendUint64Value(nil, ea), AppendUint64Value(nil, eb)
		if got, want := bytes.Compare(ka, kb), cmpFloat(a, b); got != want {
			t.Fatalf("%v vs %v: byte order %d, want %d (%x, %x)", a, b, got, want, ka, kb)
		}
		for _, x := range []struct {
			f float64
			u uint64
		}{{a, ea}, {b, eb}} {
			got, err := DecodeScore(x.u)
			if err != nil || got != x.f || math.Signbit(got) != (x.f < 0) {
				t.Fatalf("DecodeScore(EncodeScore(%v)) = %v, %v", x.f, got, err)
			}
		}
	})
}

// FuzzMetaRoundTrip checks that a valid Meta survives encode/decode and that
// an invalid one (bad type, negative expiry, inconsistent list) is refused.
func FuzzMetaRoundTrip(f *testing.F) {
	f.Add(uint8(TypeString), int64(0), uint64(0), uint64(0), uint64(0), uint64(0), uint64(0), []byte("v"))
	f.Add(uint8(TypeList), int64(5), uint64(1), uint64(2), uint64(9), ListStartIndex-1, ListStartIndex+1, []byte(nil))
	f.Fuzz(func(t *testing.T, typ uint8, expireAt int64, version, count, size, head, tail uint64, value []byte) {
		in := Meta{Type: Type(typ), ExpireAt: expireAt, Version: version, Count: count, Bytes: size, Head: head, Tail: tail, Value: value}
		want := Meta{Type: in.Type, ExpireAt: expireAt}
		switch in.Type {
		case TypeString:
			want.Value = value
		case TypeList:
			want.Head, want.Tail = head, tail
			fallthrough
		case TypeHash, TypeSet, TypeZSet, TypeStream:
			want.Version, want.Count, want.Bytes = version, count, size
		}
		if in.Type == TypeZSet {
			in.Flags, want.Flags = uint8(size)&ZSetSkiplist, uint8(size)&ZSetSkiplist
		}
		valid := in.Type.Valid() && expireAt >= 0 &&
			(in.Type != TypeList || (head <= tail && tail-head == count))

		b := AppendMeta(nil, &in)
		var got Meta
		err := DecodeMeta(b, &got)
		if !valid {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("invalid %+v decoded: err = %v", in, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("DecodeMeta(AppendMeta(%+v)): %v", in, err)
		}
		if !metaEqual(&got, &want) {
			t.Fatalf("round trip %+v -> %+v, want %+v", in, got, want)
		}
		if again := AppendMeta(nil, &got); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs: %x vs %x", again, b)
		}
	})
}

// FuzzDecodeMeta checks that arbitrary bytes never panic, that errors are
// classified, and that whatever decodes re-encodes to the same bytes.
func FuzzDecodeMeta(f *testing.F) {
	f.Add([]byte{FormatVersion, byte(TypeString), 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Meta
		err := DecodeMeta(b, &m)
		if err != nil {
			isFormat, isCorrupt := errors.Is(err, ErrUnknownFormat), errors.Is(err, ErrCorrupt)
			if isFormat == isCorrupt {
				t.Fatalf("DecodeMeta(%x) error %v: format=%v corrupt=%v", b, err, isFormat, isCorrupt)
			}
			if isFormat != (len(b) > 0 && b[0] != FormatVersion) {
				t.Fatalf("DecodeMeta(%x): misclassified format error %v", b, err)
			}
			return
		}
		if again := AppendMeta(nil, &m); !bytes.Equal(again, b) {
			t.Fatalf("DecodeMeta(%x) = %+v re-encodes to %x", b, m, again)
		}
	})
}

// FuzzParseDataKey checks that arbitrary bytes never panic and that every
// key that parses is exactly what the builders produce for its parts.
func FuzzParseDataKey(f *testing.F) {
	f.Add(AppendFieldKey(nil, 0, []byte("k"), 1, []byte("f")))
	f.Fuzz(func(t *testing.T, b []byte) {
		db, key, version, tag, rest, err := ParseDataKey(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("ParseDataKey(%x) error %v does not wrap ErrCorrupt", b, err)
			}
			return
		}
		var rebuilt []byte
		switch tag {
		case TagField:
			_, field, err := ParseFieldRest(rest)
			if err != nil {
				t.Fatalf("ParseDataKey accepted a bad field: %v", err)
			}
			rebuilt = AppendFieldKey(nil, db, key, version, field)
		case TagList:
			idx, err := ParseListRest(rest)
			if err != nil {
				t.Fatalf("ParseDataKey accepted a bad list index: %v", err)
			}
			rebuilt = AppendListKey(nil, db, key, version, idx)
		case TagScore:
			score, member, err := ParseScoreRest(rest)
			if err != nil {
				t.Fatalf("ParseDataKey accepted a bad score: %v", err)
			}
			if rebuilt, err = AppendScoreKey(nil, db, key, version, score, member); err != nil {
				t.Fatalf("AppendScoreKey(%v): %v", score, err)
			}
		default:
			t.Fatalf("ParseDataKey returned unknown tag %#x", tag)
		}
		if !bytes.Equal(rebuilt, b) {
			t.Fatalf("ParseDataKey(%x) rebuilds to %x", b, rebuilt)
		}
	})
}

// FuzzParseExpiryKey checks that arbitrary bytes never panic and that every
// key that parses rebuilds to itself with a non-negative time.
func FuzzParseExpiryKey(f *testing.F) {
	f.Add(AppendExpiryKey(nil, 1700000000000, 0, []byte("k")))
	f.Fuzz(func(t *testing.T, b []byte) {
		at, db, key, err := ParseExpiryKey(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("ParseExpiryKey(%x) error %v does not wrap ErrCorrupt", b, err)
			}
			return
		}
		if at < 0 {
			t.Fatalf("ParseExpiryKey(%x) returned negative time %d", b, at)
		}
		if rebuilt := AppendExpiryKey(nil, at, db, key); !bytes.Equal(rebuilt, b) {
			t.Fatalf("ParseExpiryKey(%x) rebuilds to %x", b, rebuilt)
		}
	})
}

// FuzzParseGarbageValue checks that arbitrary bytes never panic and that
// every value that parses rebuilds to itself.
func FuzzParseGarbageValue(f *testing.F) {
	f.Add(AppendGarbageValue(nil, 1, []byte("k"), 2, 3))
	f.Fuzz(func(t *testing.T, b []byte) {
		g, err := ParseGarbageValue(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("ParseGarbageValue(%x) error %v does not wrap ErrCorrupt", b, err)
			}
			return
		}
		if rebuilt := AppendGarbageValue(nil, g.DB, g.Key, g.Version, g.Count); !bytes.Equal(rebuilt, b) {
			t.Fatalf("ParseGarbageValue(%x) rebuilds to %x", b, rebuilt)
		}
	})
}

// FuzzParseMetaKey checks that arbitrary bytes never panic and that every
// key that parses rebuilds to itself (so its hash field is right).
func FuzzParseMetaKey(f *testing.F) {
	f.Add(AppendMetaKey(nil, 0, []byte("k")))
	f.Fuzz(func(t *testing.T, b []byte) {
		db, key, err := ParseMetaKey(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("ParseMetaKey(%x) error %v does not wrap ErrCorrupt", b, err)
			}
			return
		}
		if rebuilt := AppendMetaKey(nil, db, key); !bytes.Equal(rebuilt, b) {
			t.Fatalf("ParseMetaKey(%x) rebuilds to %x", b, rebuilt)
		}
		if MetaKeyHash(b) != KeyHash(key) {
			t.Fatalf("MetaKeyHash(%x) disagrees with KeyHash", b)
		}
	})
}
