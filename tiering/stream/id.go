// Package stream is the in-memory model of a Redis stream: entries in ID
// order, the listpack nodes Redis would split them into (which decide what
// "~" trimming removes and what XINFO reports), consumer groups, consumers
// and pending entries lists, with Redis 7.0's semantics for every change.
//
// It does no I/O: every change is reported to a Journal, which the engine
// (tiering) turns into per-record writes of the cold store. It knows
// nothing of the protocol: command handlers parse arguments and write
// replies.
package stream

import (
	"math"
	"strconv"

	"github.com/spillway/spillway/codec"
)

// ID is a stream entry ID.
type ID = codec.StreamID

// MaxID is the greatest ID.
var MaxID = ID{Ms: math.MaxUint64, Seq: math.MaxUint64}

// Compare returns -1, 0 or 1 as a is before, equal to or after b.
func Compare(a, b ID) int {
	switch {
	case a.Ms < b.Ms:
		return -1
	case a.Ms > b.Ms:
		return 1
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	}
	return 0
}

// Less reports whether a is before b.
func Less(a, b ID) bool { return Compare(a, b) < 0 }

// Incr returns the ID after id; ok is false (and the ID 0-0) at MaxID.
func Incr(id ID) (ID, bool) {
	switch {
	case id.Seq != math.MaxUint64:
		return ID{Ms: id.Ms, Seq: id.Seq + 1}, true
	case id.Ms != math.MaxUint64:
		return ID{Ms: id.Ms + 1, Seq: 0}, true
	}
	return ID{}, false
}

// Decr returns the ID before id; ok is false (and MaxID) at 0-0.
func Decr(id ID) (ID, bool) {
	switch {
	case id.Seq != 0:
		return ID{Ms: id.Ms, Seq: id.Seq - 1}, true
	case id.Ms != 0:
		return ID{Ms: id.Ms - 1, Seq: math.MaxUint64}, true
	}
	return MaxID, false
}

// IsZero reports whether id is 0-0.
func IsZero(id ID) bool { return id.Ms == 0 && id.Seq == 0 }

// AppendID appends id as "ms-seq".
func AppendID(dst []byte, id ID) []byte {
	dst = strconv.AppendUint(dst, id.Ms, 10)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, id.Seq, 10)
}

// Format returns id as "ms-seq".
func Format(id ID) string { return string(AppendID(nil, id)) }

// parseU64 is Redis's string2ull: an optional sign is refused, digits only,
// no leading zeros except "0", the value must fit 64 bits.
func parseU64(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// ParseID parses a stream ID argument as Redis does: "-" (0-0) and "+"
// (MaxID) unless strict, "ms" (seq is missingSeq) or "ms-seq", and with
// allowAutoSeq "ms-*" (seqGiven false). ok is false for anything else.
func ParseID(b []byte, missingSeq uint64, strict, allowAutoSeq bool) (id ID, seqGiven, ok bool) {
	if len(b) > 127 {
		return ID{}, false, false
	}
	if len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		if strict {
			return ID{}, false, false
		}
		if b[0] == '-' {
			return ID{}, true, true
		}
		return MaxID, true, true
	}
	ms, rest, dash := b, []byte(nil), false
	for i, c := range b {
		if c == '-' {
			ms, rest, dash = b[:i], b[i+1:], true
			break
		}
	}
	m, ok := parseU64(ms)
	if !ok {
		return ID{}, false, false
	}
	if !dash {
		return ID{Ms: m, Seq: missingSeq}, true, true
	}
	if allowAutoSeq && len(rest) == 1 && rest[0] == '*' {
		return ID{Ms: m, Seq: 0}, false, true
	}
	s, ok := parseU64(rest)
	if !ok {
		return ID{}, false, false
	}
	return ID{Ms: m, Seq: s}, true, true
}
