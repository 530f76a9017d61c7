package rdb

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"strings"
)

// RDB object types (rdb.h of Redis 7.0).
const (
	typeString         = 0
	typeList           = 1 // linked list of strings
	typeSet            = 2
	typeZSet           = 3 // member string + score as a decimal string
	typeHash           = 4
	typeZSet2          = 5 // member string + 8-byte little-endian IEEE 754 double
	typeModulePreGA    = 6
	typeModule2        = 7
	typeHashZipmap     = 9
	typeListZiplist    = 10
	typeSetIntset      = 11
	typeZSetZiplist    = 12
	typeHashZiplist    = 13
	typeListQuicklist  = 14 // quicklist of ziplists
	typeStreamLP       = 15
	typeHashListpack   = 16
	typeZSetListpack   = 17
	typeListQuicklist2 = 18 // quicklist of listpacks or plain nodes
	typeStreamLP2      = 19
)

// Quicklist node containers of typeListQuicklist2.
const (
	containerPlain  = 1
	containerPacked = 2
)

// Decoding errors. RESTORE replies ErrChecksum with "ERR DUMP payload
// version or checksum are wrong", and every other error with "ERR Bad data
// format", as Redis 7.0 does.
var (
	// ErrChecksum: the payload is shorter than its footer, its RDB version
	// is newer than Version, or its CRC-64 does not match.
	ErrChecksum = errors.New("rdb: DUMP payload version or checksum are wrong")
	// ErrBadFormat: the value does not decode (truncated, corrupt, empty,
	// duplicate members or fields, NaN scores, an unknown type).
	ErrBadFormat = errors.New("rdb: bad data format")
	// ErrUnsupported: a well-formed type Spillway does not hold (streams,
	// modules). It wraps ErrBadFormat.
	ErrUnsupported = wrapBad("value type not supported (module types)")
)

func wrapBad(msg string) error { return &badError{msg} }

type badError struct{ msg string }

func (e *badError) Error() string { return "rdb: bad data format: " + e.msg }
func (e *badError) Unwrap() error { return ErrBadFormat }

// Kind is the data type of a decoded value.
type Kind uint8

// The kinds of value a payload holds.
const (
	KindString Kind = iota + 1
	KindList
	KindSet
	KindHash
	KindZSet
	KindStream
)

// Object is the value of a DUMP payload, whatever encoding it was written
// in. Strings alias the payload where it held them plainly.
type Object struct {
	Kind Kind
	// Str is a string's value.
	Str []byte
	// Items are a list's elements head first, a set's members, a hash's
	// fields and values alternating (field, value, field, value...), or a
	// sorted set's members; never empty for a collection.
	Items [][]byte
	// Scores are a sorted set's scores, Scores[i] Items[i]'s; never NaN.
	Scores []float64
	// Stream is a stream's value (KindStream).
	Stream *Stream
}

// Len is the number of elements (members, fields) of a collection.
func (o *Object) Len() int {
	if o.Kind == KindHash {
		return len(o.Items) / 2
	}
	return len(o.Items)
}

// Decode verifies a DUMP payload's footer (RDB version at most Version,
// CRC-64) and decodes its value as RESTORE does (rdbLoadObjectType then
// rdbLoadObject), validating compact encodings as deeply as Redis with
// sanitize-dump-payload yes: ziplists, listpacks and intsets must be
// well-formed with consistent headers, hashes and sets free of duplicates,
// scores not NaN, collections not empty. Like Redis, it reads the value
// from the whole payload, footer included, and ignores what follows it. It never panics: any input
// gives an Object or an error (ErrChecksum, or one matching ErrBadFormat).
func Decode(payload []byte) (*Object, error) {
	if !FooterOK(payload, Version) {
		return nil, ErrChecksum
	}
	// Redis reads the value from the whole buffer: a value running past
	// its end into the footer is read from the footer's bytes.
	c := &cursor{b: payload[1:]}
	o, err := c.object(payload[0])
	if err != nil {
		if !errors.Is(err, ErrBadFormat) {
			err = wrapBad(err.Error())
		}
		return nil, err
	}
	return o, nil
}

// cursor reads the RDB encoding of a value from b, advancing it.
type cursor struct{ b []byte }

// length reads a length as rdbLoadLen does: the 11 prefix of an encoded
// string is not an error there, its 6 bits are the length.
func (c *cursor) length() (uint64, error) {
	n, _, size, err := ReadLen(c.b)
	if err != nil {
		return 0, err
	}
	c.b = c.b[size:]
	return n, nil
}

// count reads a collection's length: not 0 (an empty value is refused) and
// not more than the bytes left could hold (each element takes a byte at
// least), so that a forged count cannot make the decoder allocate.
func (c *cursor) count() (int, error) {
	n, err := c.length()
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, wrapBad("empty collection")
	}
	if n > uint64(len(c.b)) {
		return 0, ErrTruncated
	}
	return int(n), nil
}

func (c *cursor) str() ([]byte, error) {
	s, n, err := ReadString(c.b)
	if err != nil {
		return nil, err
	}
	c.b = c.b[n:]
	return s, nil
}

// object decodes a value of RDB type typ.
func (c *cursor) object(typ byte) (*Object, error) {
	switch typ {
	case typeString:
		s, err := c.str()
		return &Object{Kind: KindString, Str: s}, err
	case typeList, typeSet, typeHash:
		return c.plain(typ)
	case typeZSet, typeZSet2:
		return c.plainZSet(typ == typeZSet2)
	case typeListZiplist, typeListQuicklist, typeListQuicklist2:
		return c.list(typ)
	case typeSetIntset:
		blob, err := c.str()
		if err != nil {
			return nil, err
		}
		items, err := intsetItems(blob)
		if err != nil {
			return nil, err
		}
		return &Object{Kind: KindSet, Items: items}, nil
	case typeHashZipmap:
		blob, err := c.str()
		if err != nil {
			return nil, err
		}
		items, err := zipmapItems(blob)
		if err != nil {
			return nil, err
		}
		return pairsObject(KindHash, items)
	case typeHashZiplist, typeHashListpack, typeZSetZiplist, typeZSetListpack:
		blob, err := c.str()
		if err != nil {
			return nil, err
		}
		var items [][]byte
		if typ == typeHashZiplist || typ == typeZSetZiplist {
			items, err = ziplistItems(blob)
		} else {
			items, err = listpackItems(blob)
		}
		if err != nil {
			return nil, err
		}
		if typ == typeHashZiplist || typ == typeHashListpack {
			return pairsObject(KindHash, items)
		}
		return pairsObject(KindZSet, items)
	case typeStreamLP, typeStreamLP2:
		return c.stream(typ == typeStreamLP2)
	case typeModulePreGA, typeModule2:
		return nil, ErrUnsupported
	}
	return nil, wrapBad("unknown object type")
}

// plain decodes the linked-list, set and hash forms: a count, then strings
// (pairs of strings for a hash).
func (c *cursor) plain(typ byte) (*Object, error) {
	n, err := c.count()
	if err != nil {
		return nil, err
	}
	per := 1
	if typ == typeHash {
		per = 2
	}
	items := make([][]byte, 0, n*per)
	for range n * per {
		s, err := c.str()
		if err != nil {
			return nil, err
		}
		items = append(items, s)
	}
	switch typ {
	case typeList:
		return &Object{Kind: KindList, Items: items}, nil
	case typeSet:
		if hasDuplicate(items, 1) {
			return nil, wrapBad("duplicate set members")
		}
		return &Object{Kind: KindSet, Items: items}, nil
	}
	if hasDuplicate(items, 2) {
		return nil, wrapBad("duplicate hash fields")
	}
	return &Object{Kind: KindHash, Items: items}, nil
}

// plainZSet decodes the skiplist forms: a count, then members each with a
// score, binary (ZSET_2) or as a length-prefixed decimal string.
func (c *cursor) plainZSet(binary2 bool) (*Object, error) {
	n, err := c.count()
	if err != nil {
		return nil, err
	}
	o := &Object{Kind: KindZSet, Items: make([][]byte, 0, n), Scores: make([]float64, 0, n)}
	for range n {
		m, err := c.str()
		if err != nil {
			return nil, err
		}
		var score float64
		if binary2 {
			if len(c.b) < 8 {
				return nil, ErrTruncated
			}
			score = math.Float64frombits(binary.LittleEndian.Uint64(c.b))
			c.b = c.b[8:]
		} else if score, err = c.decimalDouble(); err != nil {
			return nil, err
		}
		if math.IsNaN(score) {
			return nil, wrapBad("NaN score")
		}
		o.Items = append(o.Items, m)
		o.Scores = append(o.Scores, score)
	}
	if hasDuplicate(o.Items, 1) {
		return nil, wrapBad("duplicate sorted set members")
	}
	return o, nil
}

// decimalDouble is rdbLoadDoubleValue: a length byte (253 NaN, 254 +inf,
// 255 -inf) then that many bytes of a decimal number.
func (c *cursor) decimalDouble() (float64, error) {
	if len(c.b) < 1 {
		return 0, ErrTruncated
	}
	l := int(c.b[0])
	c.b = c.b[1:]
	switch l {
	case 253:
		return math.NaN(), nil
	case 254:
		return math.Inf(1), nil
	case 255:
		return math.Inf(-1), nil
	}
	if len(c.b) < l {
		return 0, ErrTruncated
	}
	f, ok := parseScore(c.b[:l])
	c.b = c.b[l:]
	if !ok {
		return 0, wrapBad("score is not a number")
	}
	return f, nil
}

// list decodes a list held as one ziplist, a quicklist of ziplists, or a
// quicklist of listpacks and plain nodes. Empty nodes are skipped, as
// Redis skips them; a list left empty is refused.
func (c *cursor) list(typ byte) (*Object, error) {
	if typ == typeListZiplist {
		blob, err := c.str()
		if err != nil {
			return nil, err
		}
		items, err := ziplistItems(blob)
		if err != nil {
			return nil, err
		}
		if len(items) == 0 {
			return nil, wrapBad("empty list")
		}
		return &Object{Kind: KindList, Items: items}, nil
	}
	nodes, err := c.count()
	if err != nil {
		return nil, err
	}
	var items [][]byte
	for range nodes {
		container := uint64(containerPacked)
		if typ == typeListQuicklist2 {
			if container, err = c.length(); err != nil {
				return nil, err
			}
			if container != containerPacked && container != containerPlain {
				return nil, wrapBad("unknown quicklist node container")
			}
		}
		blob, err := c.str()
		if err != nil {
			return nil, err
		}
		if len(blob) == 0 {
			return nil, wrapBad("quicklist node of length 0")
		}
		switch {
		case container == containerPlain:
			items = append(items, blob)
		case typ == typeListQuicklist:
			if items, err = appendZiplist(items, blob); err != nil {
				return nil, err
			}
		default:
			if items, err = appendListpack(items, blob); err != nil {
				return nil, err
			}
		}
	}
	if len(items) == 0 {
		return nil, wrapBad("empty list")
	}
	return &Object{Kind: KindList, Items: items}, nil
}

// pairsObject makes a hash or sorted set of a compact encoding's entries,
// which alternate field and value (member and score).
func pairsObject(kind Kind, items [][]byte) (*Object, error) {
	if len(items) == 0 || len(items)%2 != 0 {
		return nil, wrapBad("odd or empty pair list")
	}
	if hasDuplicate(items, 2) {
		return nil, wrapBad("duplicate fields or members")
	}
	if kind == KindHash {
		return &Object{Kind: KindHash, Items: items}, nil
	}
	o := &Object{Kind: KindZSet, Items: make([][]byte, 0, len(items)/2), Scores: make([]float64, 0, len(items)/2)}
	for i := 0; i < len(items); i += 2 {
		// Redis reads a compact set's scores with zzlStrtod, 0 when
		// there is no number, and does not check their order.
		f, _ := parseScore(items[i+1])
		if math.IsNaN(f) {
			return nil, wrapBad("NaN score")
		}
		o.Items = append(o.Items, items[i])
		o.Scores = append(o.Scores, f)
	}
	return o, nil
}

// parseScore parses a score stored as text as strtod does (zzlStrtod,
// and sscanf's %lg for the old sorted-set form): the longest prefix that
// is a number, after leading white space; ok is false if there is none.
// Infinities and NaN are spelled as C spells them; hexadecimal floats are
// not read. An out-of-range number is ±Inf or 0, as strtod gives.
func parseScore(b []byte) (f float64, ok bool) {
	if len(b) > 127 { // zzlStrtod reads at most 127 bytes
		b = b[:127]
	}
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] >= '\t' && b[i] <= '\r') {
		i++
	}
	start := i
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	for _, word := range []string{"infinity", "inf", "nan"} {
		if len(b)-i >= len(word) && strings.EqualFold(string(b[i:i+len(word)]), word) {
			if word == "nan" {
				return math.NaN(), true
			}
			f, _ := strconv.ParseFloat(string(b[start:i+len(word)]), 64)
			return f, true
		}
	}
	digits := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i, digits = i+1, digits+1
	}
	if i < len(b) && b[i] == '.' {
		i++
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		j := i + 1
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if j < len(b) && b[j] >= '0' && b[j] <= '9' {
			for j < len(b) && b[j] >= '0' && b[j] <= '9' {
				j++
			}
			i = j
		}
	}
	f, err := strconv.ParseFloat(string(b[start:i]), 64)
	if err != nil {
		var ne *strconv.NumError
		if !errors.As(err, &ne) || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	return f, true
}

// hasDuplicate reports whether two of items (every step-th from the first)
// are equal.
func hasDuplicate(items [][]byte, step int) bool {
	seen := make(map[string]struct{}, len(items)/step)
	for i := 0; i < len(items); i += step {
		if _, ok := seen[string(items[i])]; ok {
			return true
		}
		seen[string(items[i])] = struct{}{}
	}
	return false
}
