package rdb

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// The writers' output reads back through the validating readers, entry
// for entry, across every integer width and string length class.
func TestListpackRoundTrip(t *testing.T) {
	entries := []string{"0", "127", "128", "-1", "4095", "-4096", "4096", "32767", "-32768",
		"32768", "8388607", "-8388608", "8388608", "2147483647", "-2147483648", "2147483648",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "007", "-0", "+1",
		"", "a", strings.Repeat("x", 63), strings.Repeat("y", 64), strings.Repeat("z", 4095),
		strings.Repeat("w", 4096), strings.Repeat("v", 70000)}
	var l Listpack
	for _, e := range entries {
		l.Append([]byte(e))
	}
	blob := l.Finish()
	if l.Size() != len(blob) {
		t.Fatalf("Size %d, blob %d bytes", l.Size(), len(blob))
	}
	got, err := listpackItems(blob)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(entries) {
		t.Fatalf("%d entries back, want %d", len(got), len(entries))
	}
	for i, e := range entries {
		if !bytes.Equal(got[i], []byte(e)) {
			t.Errorf("entry %d: got %.20q, want %.20q", i, got[i], e)
		}
	}
	l.Reset()
	if got, err := listpackItems(l.Finish()); err != nil || len(got) != 0 {
		t.Errorf("empty listpack: %v, %v", got, err)
	}
}

func TestIntsetRoundTrip(t *testing.T) {
	for _, vals := range [][]int64{{3, -1, 2}, {40000, -5}, {1 << 40, -7, 0}} {
		want := make([]string, len(vals))
		blob := AppendIntset(nil, append([]int64(nil), vals...))
		got, err := intsetItems(blob)
		if err != nil {
			t.Fatal(err)
		}
		sorted := append([]int64(nil), vals...)
		AppendIntset(nil, sorted) // sorts in place
		for i, v := range sorted {
			want[i] = strconv.FormatInt(v, 10)
		}
		for i := range want {
			if string(got[i]) != want[i] {
				t.Errorf("%v: member %d is %s, want %s", vals, i, got[i], want[i])
			}
		}
	}
}

// StringWriter writes what AppendString writes, call after call (its
// reused compressor memory holds no state between strings).
func TestStringWriterMatchesAppendString(t *testing.T) {
	var w StringWriter
	for _, s := range []string{"", "12", "-7", "short", strings.Repeat("ab", 30), "4294967296",
		strings.Repeat("xyz", 1000), strings.Repeat("q", 21), "abcdefghijklmnopqrstuvwxyz0123456789"} {
		if got, want := w.Append(nil, []byte(s)), AppendString(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Errorf("%.20q: Append %x, AppendString %x", s, got, want)
		}
	}
	w.Plain = true
	for _, s := range []string{"12", strings.Repeat("xyz", 100)} {
		if got, want := w.Append(nil, []byte(s)), AppendStringPlain(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Errorf("plain %.20q: Append %x, AppendStringPlain %x", s, got, want)
		}
	}
}
