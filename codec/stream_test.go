package codec

import (
	"bytes"
	"testing"
)

// The PEL records: group and consumer values of both formats, the
// consumer pending index keys and their validation.
func TestStreamPELRecords(t *testing.T) {
	last, lo, hi := StreamID{Ms: 9, Seq: 1}, StreamID{Ms: 2}, StreamID{Ms: 7, Seq: 3}
	g := AppendStreamGroupPEL(nil, last, -1, StreamGroupPEL{Pending: 5, Min: lo, Max: hi})
	if len(g) != 64 {
		t.Fatalf("group value of %d bytes, want 64", len(g))
	}
	if l, er, err := ParseStreamGroup(g); err != nil || l != last || er != -1 {
		t.Fatalf("ParseStreamGroup = %v %d %v", l, er, err)
	}
	if p, counted, err := ParseStreamGroupPEL(g); err != nil || !counted || p != (StreamGroupPEL{5, lo, hi}) {
		t.Fatalf("ParseStreamGroupPEL = %+v %v %v", p, counted, err)
	}
	old := AppendStreamGroup(nil, last, 4)
	if l, er, err := ParseStreamGroup(old); err != nil || l != last || er != 4 {
		t.Fatalf("ParseStreamGroup(old) = %v %d %v", l, er, err)
	}
	if _, counted, err := ParseStreamGroupPEL(old); err != nil || counted {
		t.Fatalf("ParseStreamGroupPEL(old): counted %v, %v", counted, err)
	}
	for _, n := range []int{0, 23, 25, 63, 65} {
		if _, _, err := ParseStreamGroup(make([]byte, n)); err == nil {
			t.Errorf("ParseStreamGroup of %d bytes: no error", n)
		}
		if _, _, err := ParseStreamGroupPEL(make([]byte, n)); err == nil {
			t.Errorf("ParseStreamGroupPEL of %d bytes: no error", n)
		}
	}
	neg := AppendStreamGroupPEL(nil, last, 0, StreamGroupPEL{Pending: -1})
	if _, _, err := ParseStreamGroupPEL(neg); err == nil {
		t.Errorf("a negative pending count parsed")
	}

	c := AppendStreamConsumer(nil, 1234, 3, lo)
	if seen, n, m, counted, err := ParseStreamConsumer(c); err != nil || !counted || seen != 1234 || n != 3 || m != lo {
		t.Fatalf("ParseStreamConsumer = %d %d %v %v %v", seen, n, m, counted, err)
	}
	if seen, n, _, counted, err := ParseStreamConsumer(c[:8]); err != nil || counted || seen != 1234 || n != 0 {
		t.Fatalf("ParseStreamConsumer(old) = %d %d %v %v", seen, n, counted, err)
	}
	for _, n := range []int{0, 7, 9, 31, 33} {
		if _, _, _, _, err := ParseStreamConsumer(make([]byte, n)); err == nil {
			t.Errorf("ParseStreamConsumer of %d bytes: no error", n)
		}
	}

	id := StreamID{Ms: 5, Seq: 6}
	k := AppendStreamConsumerPendingKey(nil, 3, []byte("key"), 7, []byte("grp"), []byte("alice"), id)
	prefix := AppendStreamConsumerPendingPrefix(nil, 3, []byte("key"), 7, []byte("grp"), []byte("alice"))
	if !bytes.HasPrefix(k, prefix) || len(k) != len(prefix)+16 || DecodeStreamID(k[len(prefix):]) != id {
		t.Fatalf("key %q does not extend prefix %q with the ID", k, prefix)
	}
	if !bytes.HasPrefix(prefix, AppendStreamInGroupPrefix(nil, 3, []byte("key"), 7, TagStreamConsumerPending, []byte("grp"))) {
		t.Fatalf("a consumer's index is not under its group's")
	}
	db, key, v, tag, rest, err := ParseDataKey(k)
	if err != nil || db != 3 || string(key) != "key" || v != 7 || tag != TagStreamConsumerPending {
		t.Fatalf("ParseDataKey = %d %q %d %c %v", db, key, v, tag, err)
	}
	grp, tail, err := ParseStreamInGroup(rest)
	if err != nil || string(grp) != "grp" {
		t.Fatalf("ParseStreamInGroup = %q %v", grp, err)
	}
	if name, idb, err := ParseStreamInGroup(tail); err != nil || string(name) != "alice" || DecodeStreamID(idb) != id {
		t.Fatalf("consumer %q id %x %v", name, idb, err)
	}
	if _, _, _, _, _, err := ParseDataKey(k[:len(k)-1]); err == nil {
		t.Errorf("a consumer pending key without its full ID parsed")
	}
	// IDs order the index: a consumer's pending entries seek in ID order.
	k2 := AppendStreamConsumerPendingKey(nil, 3, []byte("key"), 7, []byte("grp"), []byte("alice"), StreamID{Ms: 5, Seq: 7})
	if bytes.Compare(k, k2) >= 0 {
		t.Errorf("index keys out of ID order")
	}
}
