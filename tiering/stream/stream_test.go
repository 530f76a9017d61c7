package stream

import (
	"fmt"
	"testing"
)

func TestParseID(t *testing.T) {
	cases := []struct {
		in              string
		strict, autoSeq bool
		want            string // "" for invalid
		seqGiven        bool
	}{
		{"1-2", true, false, "1-2", true},
		{"5", true, false, "5-0", true},
		{"-", false, false, "0-0", true},
		{"+", false, false, "18446744073709551615-18446744073709551615", true},
		{"-", true, false, "", false},
		{"3-*", true, true, "3-0", false},
		{"3-*", true, false, "", false},
		{"18446744073709551616-0", true, false, "", false},
		{"01-1", true, false, "", false},
		{"1--1", true, false, "", false},
		{"", true, false, "", false},
		{"1-", true, false, "", false},
	}
	for _, c := range cases {
		id, seq, ok := ParseID([]byte(c.in), 0, c.strict, c.autoSeq)
		got := ""
		if ok {
			got = Format(id)
		}
		if got != c.want || ok && seq != c.seqGiven {
			t.Errorf("ParseID(%q, strict %v, auto %v) = %q seq %v, want %q seq %v", c.in, c.strict, c.autoSeq, got, seq, c.want, c.seqGiven)
		}
	}
}

func TestIncrDecrEdges(t *testing.T) {
	if id, ok := Incr(MaxID); ok || !IsZero(id) {
		t.Fatalf("Incr(max) = %v %v", id, ok)
	}
	if id, ok := Decr(ID{}); ok || id != MaxID {
		t.Fatalf("Decr(0-0) = %v %v", id, ok)
	}
	if id, _ := Incr(ID{Ms: 1, Seq: MaxID.Seq}); id != (ID{Ms: 2}) {
		t.Fatalf("Incr rolls over to %v", id)
	}
}

// fill appends n entries "xitem v" with IDs 1..n under maxEntries.
func fill(n int, maxEntries int64) *Stream {
	s := New(nop{})
	for i := 1; i <= n; i++ {
		s.Append(ID{Ms: uint64(i)}, [][]byte{[]byte("xitem"), []byte("v")}, maxEntries, 4096)
	}
	return s
}

// The trimming outcomes of Redis's own suite (unit/type/stream), which
// depend on where Redis splits its listpack nodes.
func TestTrimByNodesAsRedis(t *testing.T) {
	s := fill(100, 10)
	s.Append(ID{Ms: 101}, [][]byte{[]byte("xitem"), []byte("v")}, 10, 4096)
	s.Trim(TrimArgs{Strategy: TrimMaxLen, Approx: true, MaxLen: 55, Limit: 30})
	if s.Len() != 71 {
		t.Fatalf("MAXLEN ~ 55 LIMIT 30: %d left, want 71", s.Len())
	}
	s = fill(102, 1)
	s.Trim(TrimArgs{Strategy: TrimMaxLen, Approx: true, MaxLen: 1, Limit: 100})
	if s.Len() != 2 {
		t.Fatalf("~ is limited: %d left, want 2", s.Len())
	}
	s = fill(3, 2)
	if n := s.Trim(TrimArgs{Strategy: TrimMaxLen, Approx: true, Limit: 1}); n != 0 {
		t.Fatalf("LIMIT 1 trimmed %d, want 0", n)
	}
	if n := s.Trim(TrimArgs{Strategy: TrimMaxLen, Approx: true, Limit: 2}); n != 2 {
		t.Fatalf("LIMIT 2 trimmed %d, want 2", n)
	}
	s = fill(1000, 100)
	s.Trim(TrimArgs{Strategy: TrimMaxLen, MaxLen: 666})
	s.Trim(TrimArgs{Strategy: TrimMaxLen, Approx: true, MaxLen: 444, Limit: 10000})
	if s.Len() != 500 {
		t.Fatalf("MAXLEN 666 then ~ 444: %d left, want 500", s.Len())
	}
	if s.First != (ID{Ms: 501}) {
		t.Fatalf("first %v, want 501-0", s.First)
	}
}

// Nodes split at stream-node-max-bytes as Redis's listpacks do: the
// listpack sizes of Redis 7.0.15 for these entries.
func TestNodesSplitByBytes(t *testing.T) {
	s := New(nop{})
	for i := 1; i <= 5; i++ {
		s.Append(ID{Ms: uint64(i)}, [][]byte{[]byte("field"), []byte("value")}, 100, 50)
	}
	if s.Nodes() != 3 || s.RadixNodes() != 8 {
		t.Fatalf("nodes %d rax %d, want 3 and 8 (redis-server)", s.Nodes(), s.RadixNodes())
	}
	for _, c := range []struct {
		b    string
		size int64
	}{{"7", 2}, {"-1", 3}, {"12345", 4}, {"abc", 5}, {"007", 5}, {string(make([]byte, 100)), 103}} {
		if got := lpStrSize([]byte(c.b)); got != c.size {
			t.Errorf("lpStrSize(%q) = %d, want %d", c.b, got, c.size)
		}
	}
}

func TestDeleteFreesEmptyNodes(t *testing.T) {
	s := fill(4, 2)
	for _, ms := range []uint64{1, 2} {
		if !s.Delete(ID{Ms: ms}) {
			t.Fatalf("delete %d", ms)
		}
	}
	if s.Nodes() != 1 || s.First != (ID{Ms: 3}) || s.MaxDeleted != (ID{Ms: 2}) {
		t.Fatal(fmt.Sprintf("nodes %d first %v maxdel %v", s.Nodes(), s.First, s.MaxDeleted))
	}
}
