package rdb

import (
	"bytes"
	"errors"
	"testing"
)

func testStream() *Stream {
	return &Stream{
		Nodes: []StreamNode{
			{Master: StreamID{1, 0}, Fields: [][]byte{[]byte("f")}, Entries: []StreamEntry{
				{ID: StreamID{1, 0}, Fields: [][]byte{[]byte("f"), []byte("v1")}},
				{ID: StreamID{2, 0}, Fields: [][]byte{[]byte("f"), []byte("-77")}},
				{ID: StreamID{2, 5}, Fields: [][]byte{[]byte("g"), bytes.Repeat([]byte("x"), 5000)}},
			}},
			{Master: StreamID{9, 0}, Fields: [][]byte{[]byte("a"), []byte("b")}, Entries: []StreamEntry{
				{ID: StreamID{9, 0}, Fields: [][]byte{[]byte("a"), []byte("1"), []byte("b"), []byte("2")}},
			}},
		},
		Length: 4, Last: StreamID{9, 0}, First: StreamID{1, 0}, MaxDeleted: StreamID{0, 3}, EntriesAdded: 7,
		Groups: []StreamGroup{
			{Name: []byte("g1"), LastID: StreamID{2, 0}, EntriesRead: -1,
				PEL:       []StreamNACK{{ID: StreamID{1, 0}, DeliveryTime: 1700000000000, DeliveryCount: 3, Consumer: 1}, {ID: StreamID{2, 0}, DeliveryTime: 5, DeliveryCount: 1, Consumer: 0}},
				Consumers: []StreamConsumer{{Name: []byte("alice"), SeenTime: 10}, {Name: []byte("bob"), SeenTime: 20}}},
			{Name: []byte("g2"), EntriesRead: 0},
		},
	}
}

// A stream written by Dump decodes to the same value, and no prefix or
// corruption of its payload makes Decode panic.
func TestStreamRoundTrip(t *testing.T) {
	var d Dump
	d.Stream(testStream())
	payload := append([]byte(nil), d.Finish()...)
	o, err := Decode(payload)
	if err != nil || o.Kind != KindStream {
		t.Fatalf("Decode: %v %v", o, err)
	}
	var again Dump
	again.Stream(o.Stream)
	if !bytes.Equal(again.Finish(), payload) {
		t.Fatal("re-encoding the decoded stream differs")
	}
	if e := o.Stream.Nodes[0].Entries[2]; string(e.Fields[0]) != "g" || len(e.Fields[1]) != 5000 {
		t.Fatalf("entry with other fields decoded as %q", e.Fields[0])
	}
	body := payload[:len(payload)-10]
	for i := range body {
		if _, err := decodeBody(body[: i+1 : i+1]); err == nil && i+1 < len(body) {
			t.Fatalf("truncated at %d: decoded", i)
		}
		flip := append([]byte(nil), body...)
		flip[i] ^= 0x5a
		_, _ = decodeBody(flip) // must not panic
	}
}

// decodeBody decodes a payload body without its footer check.
func decodeBody(b []byte) (o *Object, err error) {
	if len(b) == 0 {
		return nil, ErrTruncated
	}
	c := &cursor{b: b[1:]}
	o, err = c.object(b[0])
	if err != nil && !errors.Is(err, ErrBadFormat) && !errors.Is(err, ErrTruncated) {
		return nil, wrapBad(err.Error())
	}
	return o, err
}
