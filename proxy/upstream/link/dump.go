package link

import (
	"encoding/binary"
	"math"

	"github.com/spillway/spillway/proxy/rdb"
)

// RDB object type bytes used in DUMP/RESTORE payloads. These plain forms are
// understood by every Redis from 2.x through 7.x; Redis re-encodes the value
// on load (intset, listpack, quicklist, int/embstr strings) exactly as if it
// had been built by ordinary commands.
const (
	rdbTypeString = 0
	rdbTypeList   = 1 // linked list of strings
	rdbTypeSet    = 2
	rdbTypeHash   = 4
	rdbTypeZSet2  = 5 // member string + 8-byte little-endian IEEE 754 double
)

// dumpRDBVersion is the RDB version written in the payload footer. Redis
// rejects payloads whose version is newer than its own; 9 is the version of
// Redis 5.0, so the payload loads on Redis 5.0 through 7.x.
const dumpRDBVersion = 9

// Dump states.
const (
	dumpEmpty    = iota // nothing written yet (the zero value)
	dumpItems           // a collection was begun; items still expected
	dumpComplete        // a whole value was written; Finish may be called
	dumpFinished        // Finish was called; only Reset is allowed
)

// Item kinds expected after a Begin call.
const (
	itemElem = iota + 1
	itemPair
	itemZElem
)

// Dump builds one RESTORE payload. The zero value is ready; Reset reuses the buffer.
//
// A payload holds exactly one value: either one String call, or one Begin*
// call followed by exactly n calls of the matching item method (Elem for
// lists and sets, Pair for hashes, ZElem for sorted sets), and then Finish.
// Calls out of that order panic, since they are programming errors.
//
// The caller must guarantee what the encoder does not check (behaviour of
// redis-server 7.0.15): a collection has n >= 1 (an empty one fails with
// "Bad data format"); scores are not NaN (rejected); set members, sorted-set
// members and hash fields are distinct. Duplicate set or sorted-set members
// are rejected, but a duplicate field in a small hash (listpack-sized) is
// accepted unless sanitize-dump-payload is yes, leaving a corrupt hash whose
// HLEN counts the duplicate.
//
// The payload is for `RESTORE key ttl payload [ABSTTL]`, which sets the value
// and TTL atomically and fails with BUSYKEY if key exists (without REPLACE).
type Dump struct {
	buf   []byte
	state int
	item  int // itemElem, itemPair or itemZElem while state == dumpItems
	left  int // items still expected while state == dumpItems
}

// Reset discards the payload being built, keeping the buffer for reuse. It
// invalidates the slice returned by the previous Finish.
func (d *Dump) Reset() {
	d.buf = d.buf[:0]
	d.state = dumpEmpty
	d.item = 0
	d.left = 0
}

// String writes a whole string value. val may be empty or hold any bytes.
func (d *Dump) String(val []byte) {
	d.start(rdbTypeString)
	d.appendString(val)
	d.state = dumpComplete
}

// BeginList starts a list of n elements; exactly n Elem calls must follow,
// head first.
func (d *Dump) BeginList(n int) { d.begin(rdbTypeList, itemElem, n) }

// BeginSet starts a set of n distinct members; exactly n Elem calls must follow.
func (d *Dump) BeginSet(n int) { d.begin(rdbTypeSet, itemElem, n) }

// BeginHash starts a hash of n distinct fields; exactly n Pair calls must follow.
func (d *Dump) BeginHash(n int) { d.begin(rdbTypeHash, itemPair, n) }

// BeginZSet starts a sorted set of n distinct members; exactly n ZElem calls
// must follow, in any order.
func (d *Dump) BeginZSet(n int) { d.begin(rdbTypeZSet2, itemZElem, n) }

// Elem writes one list element or set member.
func (d *Dump) Elem(b []byte) {
	d.next(itemElem)
	d.appendString(b)
}

// Pair writes one hash field and its value.
func (d *Dump) Pair(field, value []byte) {
	d.next(itemPair)
	d.appendString(field)
	d.appendString(value)
}

// ZElem writes one sorted-set member and its score (not NaN; -0 and ±Inf are
// kept exactly).
func (d *Dump) ZElem(member []byte, score float64) {
	d.next(itemZElem)
	d.appendString(member)
	d.buf = binary.LittleEndian.AppendUint64(d.buf, math.Float64bits(score))
}

// Finish appends the RDB version (2 bytes LE) and CRC64 (8 bytes LE) and
// returns the payload. The result aliases the Dump's buffer: it is valid until
// the next Reset. Finish panics unless a whole value has been written.
func (d *Dump) Finish() []byte {
	if d.state != dumpComplete {
		panic("upstream.Dump: Finish without a complete value")
	}
	d.buf = rdb.AppendFooter(d.buf, dumpRDBVersion)
	d.state = dumpFinished
	return d.buf
}

// start writes the type byte of the single value in the payload.
func (d *Dump) start(typ byte) {
	if d.state != dumpEmpty {
		panic("upstream.Dump: a payload holds one value; call Reset first")
	}
	d.buf = append(d.buf, typ)
}

func (d *Dump) begin(typ byte, item, n int) {
	if n < 0 {
		panic("upstream.Dump: negative collection length")
	}
	d.start(typ)
	d.buf = rdb.AppendLen(d.buf, uint64(n))
	d.item, d.left, d.state = item, n, dumpItems
	if n == 0 {
		d.state = dumpComplete
	}
}

// next accounts for one item of the given kind.
func (d *Dump) next(item int) {
	if d.state != dumpItems || d.item != item {
		panic("upstream.Dump: item call does not match the value begun or its count")
	}
	d.left--
	if d.left == 0 {
		d.state = dumpComplete
	}
}

// appendString writes b as a plain RDB string: its length, then its bytes.
func (d *Dump) appendString(b []byte) {
	d.buf = rdb.AppendLen(d.buf, uint64(len(b)))
	d.buf = append(d.buf, b...)
}
