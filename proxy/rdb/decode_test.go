package rdb

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// encode writes o with Dump, the encoder of DUMP.
func encode(o *Object) []byte {
	var d Dump
	switch o.Kind {
	case KindString:
		d.String(o.Str)
	case KindList:
		d.BeginList(len(o.Items))
		for _, v := range o.Items {
			d.Elem(v)
		}
	case KindSet:
		d.BeginSet(len(o.Items))
		for _, v := range o.Items {
			d.Elem(v)
		}
	case KindHash:
		d.BeginHash(len(o.Items) / 2)
		for i := 0; i < len(o.Items); i += 2 {
			d.Pair(o.Items[i], o.Items[i+1])
		}
	case KindZSet:
		d.BeginZSet(len(o.Items))
		for i, m := range o.Items {
			d.ZElem(m, o.Scores[i])
		}
	}
	return slices.Clone(d.Finish())
}

func sameObject(a, b *Object) bool {
	if a.Kind != b.Kind || !bytes.Equal(a.Str, b.Str) || len(a.Items) != len(b.Items) || len(a.Scores) != len(b.Scores) {
		return false
	}
	for i := range a.Items {
		if !bytes.Equal(a.Items[i], b.Items[i]) {
			return false
		}
	}
	for i := range a.Scores {
		if math.Float64bits(a.Scores[i]) != math.Float64bits(b.Scores[i]) {
			return false
		}
	}
	return true
}

// TestDecodeRoundTrip decodes what Dump encodes, for every kind, with
// strings that take the integer, LZF and plain encodings.
func TestDecodeRoundTrip(t *testing.T) {
	strs := [][]byte{{}, []byte("0"), []byte("-128"), []byte("32767"), []byte("-2147483648"), []byte("2147483648"),
		[]byte("007"), []byte("-0"), []byte(strings.Repeat("ab", 500)), []byte("\x00\xff\r\n"), bytes.Repeat([]byte{7}, 70000)}
	var items [][]byte
	for i, s := range strs {
		items = append(items, append([]byte(strconv.Itoa(i)+":"), s...))
	}
	var pairs [][]byte
	for i, s := range strs {
		pairs = append(pairs, []byte("f"+strconv.Itoa(i)), s)
	}
	scores := []float64{0, math.Copysign(0, -1), 1.5, math.Inf(1), math.Inf(-1), 1e300, -5e-324, 3, 4, 5, 6}
	objs := []*Object{
		{Kind: KindList, Items: strs},
		{Kind: KindSet, Items: items},
		{Kind: KindHash, Items: pairs},
		{Kind: KindZSet, Items: items, Scores: scores},
	}
	for _, s := range strs {
		objs = append(objs, &Object{Kind: KindString, Str: s})
	}
	for _, o := range objs {
		p := encode(o)
		got, err := Decode(p)
		if err != nil {
			t.Fatalf("kind %d: %v", o.Kind, err)
		}
		if !sameObject(o, got) {
			t.Errorf("kind %d: decoded %+v, want %+v", o.Kind, got, o)
		}
	}
}

// TestDecodeErrors checks the class of error of bad payloads.
func TestDecodeErrors(t *testing.T) {
	good := encode(&Object{Kind: KindString, Str: []byte("hello")})
	for _, c := range []struct {
		name string
		p    []byte
		want error
	}{
		{"short", good[:9], ErrChecksum},
		{"crc", append(slices.Clone(good[:len(good)-1]), good[len(good)-1]^1), ErrChecksum},
		{"version", AppendFooter([]byte{0, 1, 'a'}, Version+1), ErrChecksum},
		{"type 8", AppendFooter([]byte{8, 1, 'a'}, Version), ErrBadFormat},
		{"module", AppendFooter([]byte{typeModule2, 0}, Version), ErrUnsupported},
		{"empty set", AppendFooter([]byte{typeSet, 0}, Version), ErrBadFormat},
		{"lzf bomb", AppendFooter([]byte{0, 0xc3, 0x01, 0x80, 0x10, 0, 0, 0, 0}, Version), ErrBadFormat},
		{"huge count", AppendFooter([]byte{typeList, 0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, Version), ErrBadFormat},
	} {
		_, err := Decode(c.p)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
	}
}

// FuzzDecode feeds the decoder arbitrary payloads (and the same bytes
// given a valid footer, to get past the checksum). It must never panic;
// an error is ErrChecksum or matches ErrBadFormat; a decoded value
// encodes and decodes back to itself. The seed corpus in
// testdata/fuzz/FuzzDecode is the payloads of ../commands/testdata/dump.txt
// (redis-server 7.0.15's DUMPs of every encoding, older forms, corrupt
// ones, and the payloads of Redis's integration/corrupt-dump.tcl).
func FuzzDecode(f *testing.F) {
	f.Add(encode(&Object{Kind: KindZSet, Items: [][]byte{[]byte("m")}, Scores: []float64{1}}))
	f.Fuzz(func(t *testing.T, p []byte) {
		for _, payload := range [][]byte{p, AppendFooter(slices.Clone(p), Version)} {
			o, err := Decode(payload)
			if err != nil {
				if err != ErrChecksum && !errors.Is(err, ErrBadFormat) {
					t.Fatalf("error of unexpected class: %v", err)
				}
				continue
			}
			switch {
			case o.Kind == KindString:
			case len(o.Items) == 0:
				t.Fatalf("decoded an empty collection")
			case o.Kind == KindZSet && len(o.Scores) != len(o.Items):
				t.Fatalf("%d members, %d scores", len(o.Items), len(o.Scores))
			case o.Kind == KindHash && len(o.Items)%2 != 0:
				t.Fatalf("hash of %d items", len(o.Items))
			}
			again, err := Decode(encode(o))
			if err != nil || !sameObject(o, again) {
				t.Fatalf("re-encoded value decodes to %+v, %v", again, err)
			}
		}
	})
}
