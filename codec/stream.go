package codec

import (
	"encoding/binary"
)

// Streams. A stream's meta record is the collection layout (version, count
// = number of entries, bytes = total length of the entries' fields and
// values) followed by StreamMeta: 90 bytes in all.
//
//	34           50            66             82               90
//	| lastID(16) | firstID(16) | maxDelID(16) | entriesAdded(8) |
//
// An ID is ms(8) | seq(8). Its data records, under the key's DataPrefix:
//
//	entry     'e' | ms(8) | seq(8)               uvarint n | n × (uvarint len | bytes): field, value...
//	node      'n' | ms(8) | seq(8) (master ID)   live(8) | deleted(8) | lastID(16) | lpBytes(8)
//	                                               | uvarint n | n × (uvarint len | field)
//	group     'g' | name...to end                lastID(16) | entriesRead(8, -1: unknown)
//	                                               | pending(8) | pelMin(16) | pelMax(16)
//	consumer  'c' | glen(4) | group | name        seenTime(8) | pending(8) | pelMin(16)
//	pending   'p' | glen(4) | group | ms | seq     deliveryTime(8) | deliveryCount(8) | consumer...to end
//	cpending  'q' | glen(4) | group | nlen(4)     empty
//	            | name | ms | seq
//
// Entries sort by ID, so a range read is one seek. Nodes record the
// listpack nodes Redis would have split the stream into (their master
// entry's fields, live and deleted counts, last ID and entry bytes), which
// decide what "~" trimming removes.
//
// A group's pending entries list (PEL) is one 'p' record per entry, in ID
// order, plus one 'q' record per entry under its consumer (the consumer's
// own PEL in ID order), so an XACK is a point read and two deletes, and a
// consumer's pending history is a seek. The group record counts its PEL
// and holds its lowest and highest ID, the consumer record its own count
// and lowest ID (IDs are zero when the count is): XPENDING's summary and
// XINFO's counts read no pending record, and walks start at the lowest ID
// still pending, past the tombstones of the entries acknowledged before.
//
// Format history (FormatVersion 1 throughout): stores written before the
// PEL counters hold 24-byte group records, 8-byte consumer records and no
// 'q' records. The 24-byte group record marks such a stream: the engine
// reads its whole PEL once and rewrites its groups, consumers and pending
// entries in the current form (AppendStreamGroupPEL, AppendStreamConsumer,
// the 'q' records) in the batch of the command that opened it.

// StreamID is a stream entry ID.
type StreamID struct{ Ms, Seq uint64 }

// StreamMeta is the stream-specific part of a stream's meta record.
type StreamMeta struct {
	Last, First, MaxDeleted StreamID
	EntriesAdded            uint64
}

const metaStreamLen = metaCollectionLen + 16*3 + 8

func appendID(dst []byte, id StreamID) []byte {
	dst = binary.BigEndian.AppendUint64(dst, id.Ms)
	return binary.BigEndian.AppendUint64(dst, id.Seq)
}

// AppendStreamID appends id as ms(8) | seq(8), the suffix of the keys
// ordered by ID.
func AppendStreamID(dst []byte, id StreamID) []byte { return appendID(dst, id) }

// DecodeStreamID decodes 16 bytes as ms | seq.
func DecodeStreamID(b []byte) StreamID {
	return StreamID{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])}
}

func appendStreamMeta(dst []byte, s *StreamMeta) []byte {
	dst = appendID(dst, s.Last)
	dst = appendID(dst, s.First)
	dst = appendID(dst, s.MaxDeleted)
	return binary.BigEndian.AppendUint64(dst, s.EntriesAdded)
}

func decodeStreamMeta(b []byte, s *StreamMeta) {
	s.Last = DecodeStreamID(b)
	s.First = DecodeStreamID(b[16:])
	s.MaxDeleted = DecodeStreamID(b[32:])
	s.EntriesAdded = binary.BigEndian.Uint64(b[48:])
}

// AppendStreamTagPrefix appends DataPrefix | tag: the prefix of one kind
// of a stream's records.
func AppendStreamTagPrefix(dst []byte, db uint8, key []byte, version uint64, tag byte) []byte {
	return append(AppendDataPrefix(dst, db, key, version), tag)
}

// AppendStreamIDKey appends DataPrefix | tag | ms | seq: an entry's key
// (TagStreamEntry) or a node's (TagStreamNode, by its master ID).
func AppendStreamIDKey(dst []byte, db uint8, key []byte, version uint64, tag byte, id StreamID) []byte {
	return appendID(AppendStreamTagPrefix(dst, db, key, version, tag), id)
}

// AppendStreamGroupKey appends a consumer group's key.
func AppendStreamGroupKey(dst []byte, db uint8, key []byte, version uint64, group []byte) []byte {
	return append(AppendStreamTagPrefix(dst, db, key, version, TagStreamGroup), group...)
}

// AppendStreamInGroupPrefix appends DataPrefix | tag | glen | group: the
// prefix of a group's consumers (TagStreamConsumer) or pending entries
// (TagStreamPending).
func AppendStreamInGroupPrefix(dst []byte, db uint8, key []byte, version uint64, tag byte, group []byte) []byte {
	dst = AppendStreamTagPrefix(dst, db, key, version, tag)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(group)))
	return append(dst, group...)
}

// AppendStreamConsumerKey appends a consumer's key.
func AppendStreamConsumerKey(dst []byte, db uint8, key []byte, version uint64, group, name []byte) []byte {
	return append(AppendStreamInGroupPrefix(dst, db, key, version, TagStreamConsumer, group), name...)
}

// AppendStreamPendingKey appends a pending entry's key.
func AppendStreamPendingKey(dst []byte, db uint8, key []byte, version uint64, group []byte, id StreamID) []byte {
	return appendID(AppendStreamInGroupPrefix(dst, db, key, version, TagStreamPending, group), id)
}

// ParseStreamInGroup splits what follows TagStreamConsumer or
// TagStreamPending into the group and the rest (aliasing rest).
func ParseStreamInGroup(rest []byte) (group, tail []byte, err error) {
	if len(rest) < 4 {
		return nil, nil, corrupt("stream key", "length %d", len(rest))
	}
	n := uint64(binary.BigEndian.Uint32(rest))
	if uint64(len(rest)-4) < n {
		return nil, nil, corrupt("stream key", "group length %d overruns %d bytes", n, len(rest)-4)
	}
	return rest[4 : 4+n], rest[4+n:], nil
}

// AppendStreamValues appends the encoding of a list of strings (an
// entry's fields and values, a node's master fields).
func AppendStreamValues(dst []byte, vals [][]byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(vals)))
	for _, v := range vals {
		dst = binary.AppendUvarint(dst, uint64(len(v)))
		dst = append(dst, v...)
	}
	return dst
}

// ParseStreamValues decodes AppendStreamValues's encoding; the strings
// are copied.
func ParseStreamValues(b []byte) ([][]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, corrupt("stream values", "bad count")
	}
	b = b[k:]
	out := make([][]byte, 0, n)
	for range n {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, corrupt("stream values", "bad length")
		}
		out = append(out, append([]byte(nil), b[k:k+int(l)]...))
		b = b[k+int(l):]
	}
	if len(b) != 0 {
		return nil, corrupt("stream values", "%d trailing bytes", len(b))
	}
	return out, nil
}

// StreamNodeValue is a node record's value.
type StreamNodeValue struct {
	Live, Deleted int64
	Last          StreamID
	LPBytes       int64
	Fields        [][]byte
}

// AppendStreamNode appends a node record's value.
func AppendStreamNode(dst []byte, n *StreamNodeValue) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(n.Live))
	dst = binary.BigEndian.AppendUint64(dst, uint64(n.Deleted))
	dst = appendID(dst, n.Last)
	dst = binary.BigEndian.AppendUint64(dst, uint64(n.LPBytes))
	return AppendStreamValues(dst, n.Fields)
}

// ParseStreamNode decodes a node record's value.
func ParseStreamNode(b []byte) (StreamNodeValue, error) {
	if len(b) < 40 {
		return StreamNodeValue{}, corrupt("stream node", "length %d", len(b))
	}
	f, err := ParseStreamValues(b[40:])
	return StreamNodeValue{
		Live: int64(binary.BigEndian.Uint64(b)), Deleted: int64(binary.BigEndian.Uint64(b[8:])),
		Last: DecodeStreamID(b[16:]), LPBytes: int64(binary.BigEndian.Uint64(b[32:])), Fields: f,
	}, err
}

// AppendStreamGroup appends a group record's value in the format before
// the PEL counters (24 bytes): the engine no longer writes it, tests do,
// to build old stores.
func AppendStreamGroup(dst []byte, last StreamID, entriesRead int64) []byte {
	return binary.BigEndian.AppendUint64(appendID(dst, last), uint64(entriesRead))
}

// StreamGroupPEL is the PEL summary a group record holds: the number of
// pending entries and their lowest and highest IDs (zero when none).
type StreamGroupPEL struct {
	Pending  int64
	Min, Max StreamID
}

// AppendStreamGroupPEL appends a group record's value (64 bytes).
func AppendStreamGroupPEL(dst []byte, last StreamID, entriesRead int64, p StreamGroupPEL) []byte {
	dst = AppendStreamGroup(dst, last, entriesRead)
	dst = binary.BigEndian.AppendUint64(dst, uint64(p.Pending))
	return appendID(appendID(dst, p.Min), p.Max)
}

// ParseStreamGroup decodes a group record's value, of either format.
func ParseStreamGroup(b []byte) (last StreamID, entriesRead int64, err error) {
	if len(b) != 24 && len(b) != 64 {
		return StreamID{}, 0, corrupt("stream group", "length %d", len(b))
	}
	return DecodeStreamID(b), int64(binary.BigEndian.Uint64(b[16:])), nil
}

// ParseStreamGroupPEL decodes the PEL summary of a group record's value;
// counted is false for a record of the format before it (24 bytes).
func ParseStreamGroupPEL(b []byte) (p StreamGroupPEL, counted bool, err error) {
	switch len(b) {
	case 24:
		return StreamGroupPEL{}, false, nil
	case 64:
	default:
		return StreamGroupPEL{}, false, corrupt("stream group", "length %d", len(b))
	}
	p = StreamGroupPEL{Pending: int64(binary.BigEndian.Uint64(b[24:])), Min: DecodeStreamID(b[32:]), Max: DecodeStreamID(b[48:])}
	if p.Pending < 0 {
		return StreamGroupPEL{}, false, corrupt("stream group", "pending count %d", p.Pending)
	}
	return p, true, nil
}

// AppendStreamConsumer appends a consumer record's value (32 bytes): its
// seen time, number of pending entries and lowest pending ID.
func AppendStreamConsumer(dst []byte, seen, pending int64, pelMin StreamID) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(seen))
	dst = binary.BigEndian.AppendUint64(dst, uint64(pending))
	return appendID(dst, pelMin)
}

// ParseStreamConsumer decodes a consumer record's value, of either
// format: counted is false for one before the PEL counters (8 bytes, the
// seen time alone).
func ParseStreamConsumer(b []byte) (seen, pending int64, pelMin StreamID, counted bool, err error) {
	switch len(b) {
	case 8:
		return int64(binary.BigEndian.Uint64(b)), 0, StreamID{}, false, nil
	case 32:
		pending = int64(binary.BigEndian.Uint64(b[8:]))
		if pending < 0 {
			return 0, 0, StreamID{}, false, corrupt("stream consumer", "pending count %d", pending)
		}
		return int64(binary.BigEndian.Uint64(b)), pending, DecodeStreamID(b[16:]), true, nil
	}
	return 0, 0, StreamID{}, false, corrupt("stream consumer", "length %d", len(b))
}

// AppendStreamConsumerPendingPrefix appends DataPrefix | 'q' | glen |
// group | nlen | name: the prefix of a consumer's pending index.
func AppendStreamConsumerPendingPrefix(dst []byte, db uint8, key []byte, version uint64, group, name []byte) []byte {
	dst = AppendStreamInGroupPrefix(dst, db, key, version, TagStreamConsumerPending, group)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(name)))
	return append(dst, name...)
}

// AppendStreamConsumerPendingKey appends a consumer's pending index key
// for id.
func AppendStreamConsumerPendingKey(dst []byte, db uint8, key []byte, version uint64, group, name []byte, id StreamID) []byte {
	return appendID(AppendStreamConsumerPendingPrefix(dst, db, key, version, group, name), id)
}

// AppendStreamPending appends a pending entry's value.
func AppendStreamPending(dst []byte, deliveryTime, deliveryCount int64, consumer []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(deliveryTime))
	dst = binary.BigEndian.AppendUint64(dst, uint64(deliveryCount))
	return append(dst, consumer...)
}

// ParseStreamPending decodes a pending entry's value (consumer aliases b).
func ParseStreamPending(b []byte) (deliveryTime, deliveryCount int64, consumer []byte, err error) {
	if len(b) < 16 {
		return 0, 0, nil, corrupt("stream pending", "length %d", len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), int64(binary.BigEndian.Uint64(b[8:])), b[16:], nil
}

// validStreamRest checks the part of a stream data key after its tag.
func validStreamRest(tag byte, rest []byte) error {
	switch tag {
	case TagStreamEntry, TagStreamNode:
		if len(rest) != 16 {
			return corrupt("stream key", "ID length %d, want 16", len(rest))
		}
	case TagStreamConsumer, TagStreamPending:
		_, tail, err := ParseStreamInGroup(rest)
		if err == nil && tag == TagStreamPending && len(tail) != 16 {
			err = corrupt("stream key", "pending ID length %d", len(tail))
		}
		return err
	case TagStreamConsumerPending:
		_, tail, err := ParseStreamInGroup(rest)
		if err != nil {
			return err
		}
		if _, tail, err = ParseStreamInGroup(tail); err == nil && len(tail) != 16 {
			err = corrupt("stream key", "consumer pending ID length %d", len(tail))
		}
		return err
	}
	return nil
}
