package strops

import (
	"math"

	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
)

// LCSOptions are LCS's options after the two keys.
type LCSOptions struct {
	Len          bool
	Idx          bool
	WithMatchLen bool
	MinMatchLen  int64 // negative values are stored as 0
}

// ParseLCSOptions parses LCS's options (after the two keys). Redis parses
// them after the key type check (ErrLCSType), so the handler checks types
// first. Errors, in Redis's order: ErrNotInteger for MINMATCHLEN's value,
// ErrSyntax, then ErrLCSBoth for LEN with IDX.
func ParseLCSOptions(args [][]byte) (LCSOptions, string) {
	var o LCSOptions
	for j := 0; j < len(args); j++ {
		a := args[j]
		switch {
		case cstr.EqualFold(a, "idx"):
			o.Idx = true
		case cstr.EqualFold(a, "len"):
			o.Len = true
		case cstr.EqualFold(a, "withmatchlen"):
			o.WithMatchLen = true
		case cstr.EqualFold(a, "minmatchlen") && j+1 < len(args):
			v, ok := cstr.ParseInt(args[j+1])
			if !ok {
				return o, ErrNotInteger
			}
			o.MinMatchLen = max(v, 0)
			j++
		default:
			return o, ErrSyntax
		}
	}
	if o.Idx && o.Len {
		return o, ErrLCSBoth
	}
	return o, ""
}

// LCSMatch is one matching range of LCS IDX, inclusive on both sides.
type LCSMatch struct {
	AStart, AEnd, BStart, BEnd int
}

// Len is the length of the match.
func (m LCSMatch) Len() int { return m.AEnd - m.AStart + 1 }

// LCSResult is the outcome of computing an LCS.
type LCSResult struct {
	Len     int
	LCS     []byte     // nil when only the length was asked for
	Matches []LCSMatch // IDX only, filtered by MINMATCHLEN, last match first
}

// ComputeLCS computes the longest common subsequence of a and b (missing
// keys are empty strings) as Redis's LCS does, with the same tie-breaking
// and match ranges. Errors: ErrLCSTooLong, ErrLCSMemory when the
// (len(a)+1)*(len(b)+1) table of uint32 would exceed MaxBulkLen bytes.
func ComputeLCS(a, b []byte, o LCSOptions) (LCSResult, string) {
	if uint64(len(a)) >= math.MaxUint32-1 || uint64(len(b)) >= math.MaxUint32-1 {
		return LCSResult{}, ErrLCSTooLong
	}
	alen, blen := len(a), len(b)
	cells := uint64(alen+1) * uint64(blen+1)
	if cells*4 > MaxBulkLen {
		return LCSResult{}, ErrLCSMemory
	}
	if o.Len && !o.Idx {
		// Only the length: two rows suffice.
		return LCSResult{Len: lcsLen(a, b)}, ""
	}
	w := blen + 1
	t := make([]uint32, cells)
	for i := 1; i <= alen; i++ {
		row, prev := t[i*w:(i+1)*w], t[(i-1)*w:i*w]
		for j := 1; j <= blen; j++ {
			if a[i-1] == b[j-1] {
				row[j] = prev[j-1] + 1
			} else {
				row[j] = max(prev[j], row[j-1])
			}
		}
	}
	res := LCSResult{Len: int(t[alen*w+blen])}
	res.LCS = make([]byte, res.Len)
	idx := res.Len
	// Walk back from the end, tracking the current contiguous range; a
	// range is emitted when the walk leaves it or reaches the start of
	// either string. aStart == alen means no open range.
	aStart, aEnd, bStart, bEnd := alen, 0, 0, 0
	i, j := alen, blen
	for i > 0 && j > 0 {
		emit := false
		if a[i-1] == b[j-1] {
			res.LCS[idx-1] = a[i-1]
			if aStart == alen {
				aStart, aEnd, bStart, bEnd = i-1, i-1, j-1, j-1
			} else if aStart == i && bStart == j {
				aStart--
				bStart--
			} else {
				emit = true
			}
			if aStart == 0 || bStart == 0 {
				emit = true
			}
			idx, i, j = idx-1, i-1, j-1
		} else {
			if t[(i-1)*w+j] > t[i*w+j-1] {
				i--
			} else {
				j--
			}
			if aStart != alen {
				emit = true
			}
		}
		if emit {
			m := LCSMatch{aStart, aEnd, bStart, bEnd}
			if o.Idx && (o.MinMatchLen == 0 || int64(m.Len()) >= o.MinMatchLen) {
				res.Matches = append(res.Matches, m)
			}
			aStart = alen
		}
	}
	return res, ""
}

// lcsLen returns the length of the LCS of a and b in O(len(b)) memory.
func lcsLen(a, b []byte) int {
	prev := make([]uint32, len(b)+1)
	row := make([]uint32, len(b)+1)
	for i := range a {
		for j := 1; j <= len(b); j++ {
			if a[i] == b[j-1] {
				row[j] = prev[j-1] + 1
			} else {
				row[j] = max(prev[j], row[j-1])
			}
		}
		prev, row = row, prev
	}
	return int(prev[len(b)])
}

// WriteLCS writes the LCS reply for res as Redis does: with IDX a map
// {"matches": [[[a0,a1],[b0,b1](,len)]...], "len": n} (a flat array in
// RESP2), with LEN an integer, otherwise the LCS as a bulk string.
func WriteLCS(w *resp.Writer, res LCSResult, o LCSOptions) {
	switch {
	case o.Idx:
		w.Map(2)
		w.BulkString("matches")
		w.Array(len(res.Matches))
		for _, m := range res.Matches {
			if o.WithMatchLen {
				w.Array(3)
			} else {
				w.Array(2)
			}
			w.Array(2)
			w.Int(int64(m.AStart))
			w.Int(int64(m.AEnd))
			w.Array(2)
			w.Int(int64(m.BStart))
			w.Int(int64(m.BEnd))
			if o.WithMatchLen {
				w.Int(int64(m.Len()))
			}
		}
		w.BulkString("len")
		w.Int(int64(res.Len))
	case o.Len:
		w.Int(int64(res.Len))
	default:
		w.Bulk(res.LCS)
	}
}
