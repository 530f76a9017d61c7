// Package codec is the on-disk format of Spillway's cold store: pure
// functions between Redis structures and the keys and values of an ordered
// key-value store (Pebble). It does no I/O.
//
// # Key space
//
// The first byte of every key is its namespace. All integers are big-endian
// and fixed-width, so byte order is numeric order. "key" is the Redis key,
// raw. db is the physical database byte: SELECT n maps to it through the
// "dbmap" system record, so SWAPDB is O(1). "...to end" means the rest of
// the bytes.
//
//	record   key                                            value
//	-------  ---------------------------------------------  -----------------------------------
//	meta     'm' | db(1) | hash(8) | key...to end           meta value (below)
//	field    'd' | db(1) | keylen(4) | key | version(8)     hash: field value
//	           | 'f' | fhash(4) | field...to end            set:  empty
//	                                                        zset: the score's IEEE-754 bits(8)
//	list     'd' | db(1) | keylen(4) | key | version(8)     element
//	           | 'l' | index(8)
//	score    'd' | db(1) | keylen(4) | key | version(8)     empty, or "-" if the score is -0
//	           | 's' | score(8) | member...to end             (zset score index)
//	stream   'd' | db(1) | keylen(4) | key | version(8)     (stream.go: entries by ID, listpack
//	           | 'e'/'n'/'g'/'c'/'p'/'q' | ...                nodes, groups, consumers, pending)
//	expiry   'x' | expireAt(8) | db(1) | key...to end       empty
//	garbage  'g' | seq(8)                                   db(1) | keylen(4) | key
//	                                                          | version(8) | count(8)
//	system   's' | name...to end                            uint64(8) ("format", "nextversion");
//	                                                          "dbmap": raw bytes
//
// Meta value, one per Redis key; its first byte is the format (FormatVersion).
// Byte offsets on top:
//
//	           0        1      2             10           18          26         34         42         50
//	           +--------+------+-------------+------------+-----------+----------+----------+----------+
//	string     | format | type | expireAt(8) | value...to end
//	           +--------+------+-------------+------------+-----------+----------+
//	hash, set  | format | type | expireAt(8) | version(8) | count(8)  | bytes(8) |  exactly 34 bytes
//	           +--------+------+-------------+------------+-----------+----------+--------+
//	zset       | format | type | expireAt(8) | version(8) | count(8)  | bytes(8) | flags  |  35 bytes
//	           +--------+------+-------------+------------+-----------+----------+--------+-+----------+
//	list       | format | type | expireAt(8) | version(8) | count(8)  | bytes(8) | head(8)  | tail(8)  |  50
//	           +--------+------+-------------+------------+-----------+----------+----------+----------+
//	stream     | format | type | expireAt(8) | version(8) | count(8)  | bytes(8) | last, first, max-deleted
//	           +--------+------+-------------+------------+-----------+----------+ IDs (16 each), entries
//	                                                                               added(8): 90 bytes
//
// type: 1 string, 2 list, 3 set, 4 zset, 5 hash, 6 stream. expireAt: Unix milliseconds,
// 0 for no expiry, never negative. bytes: total length of the fields and
// values (members, elements), which the promotion policy weighs. fhash:
// FieldHash(field), so a structure's fields sort by hash and HSCAN/SSCAN
// cursors are hashes, like SCAN's. A list's elements are at indexes
// head..tail-1 (count == tail-head; head == tail when empty); a new list
// starts at head = tail = ListStartIndex (1<<63), LPUSH decrements head and
// RPUSH increments tail.
//
// Score encoding (score index keys): the IEEE-754 bits of the double, all
// bits flipped for negatives, only the sign bit flipped otherwise, after
// normalising -0 to +0. Byte order is then numeric order, -inf < finite <
// +inf, and -0 sorts with 0 by member, as in Redis. NaN cannot be stored.
// Member records hold the plain bits, and an index record's value marks
// -0, so that the sign of zero survives where Redis keeps it. zset flags:
// bit 0 (ZSetSkiplist) records that Redis would hold the set in its
// skiplist encoding.
//
// # Properties the layout guarantees
//
//   - Meta keys of a database sort by hash = KeyHash(key) (xxHash64 of the
//     key, fixed forever), then key. A scan of 'm' | db walks that database
//     in hash order, and a SCAN cursor is simply the hash to resume from
//     (AppendMetaHashPrefix): stateless and stable across restarts.
//   - Each key's data records sit under DataPrefix = 'd' | db | keylen | key |
//     version. The length before the key means the DataPrefix range of one key
//     never contains a record of another ("a" is never inside "ab"'s range),
//     so one DeleteRange reclaims a stale version. Within it, FieldPrefix,
//     ListPrefix and ScorePrefix ('f', 'l', 's') separate the kinds.
//   - Data keys are grouped by key length, not in user-key order; iterate
//     keys through the meta namespace.
//   - The expiry index sorts by time first. It is a hint: the meta record is
//     the authority, and stale entries are dropped by the sweeper.
//   - Versions and garbage sequence numbers come from persisted counters
//     (system records), never from the clock.
//
// # API conventions
//
// Builders are append-style (AppendXxx(dst, ...) []byte) and do not allocate
// when dst has room. Parsers return sub-slices aliasing their input and
// errors, never panics, on malformed input: errors wrap ErrCorrupt, and a
// meta value of another format yields a *FormatError matching
// ErrUnknownFormat.
package codec
