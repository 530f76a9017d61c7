package rdb

import (
	"encoding/binary"
	"math"
)

// Dump writes the plain RDB object forms (types 0, 1, 2, 4 and 5 of
// rdb.h), understood by every Redis from 5.0 through 7.x; Redis re-encodes
// the value on load (intset, listpack, quicklist, int/embstr strings)
// exactly as if it had been built by ordinary commands.

// Version is the RDB version of Redis 7.0 (RDB_VERSION), the one its DUMP
// writes in the footer and the newest its RESTORE accepts.
const Version = 10

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

// Dump builds one RESTORE payload. The zero value is ready; Reset reuses the
// buffer. Strings (values, elements, fields, members) are written as Redis's
// rdbSaveRawString writes them with rdbcompression yes (AppendString), so a
// string value's payload is byte for byte Redis 7.0's DUMP.
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
	// Version is the RDB version Finish writes in the footer; 0 means
	// Version (10). Redis rejects payloads newer than its own (9 is Redis
	// 5.0's). Reset keeps it.
	Version uint16

	lzf   *lzfState // allocated at the first compressible string
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
	d.start(typeString)
	d.appendString(val)
	d.state = dumpComplete
}

// BeginList starts a list of n elements; exactly n Elem calls must follow,
// head first.
func (d *Dump) BeginList(n int) { d.begin(typeList, itemElem, n) }

// BeginSet starts a set of n distinct members; exactly n Elem calls must follow.
func (d *Dump) BeginSet(n int) { d.begin(typeSet, itemElem, n) }

// BeginHash starts a hash of n distinct fields; exactly n Pair calls must follow.
func (d *Dump) BeginHash(n int) { d.begin(typeHash, itemPair, n) }

// BeginZSet starts a sorted set of n distinct members; exactly n ZElem calls
// must follow, in any order.
func (d *Dump) BeginZSet(n int) { d.begin(typeZSet2, itemZElem, n) }

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
		panic("rdb.Dump: Finish without a complete value")
	}
	v := d.Version
	if v == 0 {
		v = Version
	}
	d.buf = AppendFooter(d.buf, v)
	d.state = dumpFinished
	return d.buf
}

// start writes the type byte of the single value in the payload.
func (d *Dump) start(typ byte) {
	if d.state != dumpEmpty {
		panic("rdb.Dump: a payload holds one value; call Reset first")
	}
	d.buf = append(d.buf, typ)
}

func (d *Dump) begin(typ byte, item, n int) {
	if n < 0 {
		panic("rdb.Dump: negative collection length")
	}
	d.start(typ)
	d.buf = AppendLen(d.buf, uint64(n))
	d.item, d.left, d.state = item, n, dumpItems
	if n == 0 {
		d.state = dumpComplete
	}
}

// next accounts for one item of the given kind.
func (d *Dump) next(item int) {
	if d.state != dumpItems || d.item != item {
		panic("rdb.Dump: item call does not match the value begun or its count")
	}
	d.left--
	if d.left == 0 {
		d.state = dumpComplete
	}
}

// appendString writes b as AppendString does, with the Dump's reusable
// compressor memory.
func (d *Dump) appendString(b []byte) {
	if len(b) <= 20 {
		d.buf = AppendString(d.buf, b)
		return
	}
	if d.lzf == nil {
		d.lzf = new(lzfState)
	}
	if c := d.lzf.compress(b, len(b)-4); c != nil {
		d.buf = append(d.buf, encVal<<6|encLZF)
		d.buf = AppendLen(d.buf, uint64(len(c)))
		d.buf = AppendLen(d.buf, uint64(len(b)))
		d.buf = append(d.buf, c...)
		return
	}
	d.buf = AppendLen(d.buf, uint64(len(b)))
	d.buf = append(d.buf, b...)
}
