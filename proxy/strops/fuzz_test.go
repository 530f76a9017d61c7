package strops

import (
	"bytes"
	"testing"
)

var bitfieldErrors = map[string]bool{
	ErrSyntax: true, ErrBitfieldOvf: true, ErrBitfieldType: true, ErrBitOffset: true,
	ErrNotInteger: true, ErrBitfieldRO: true,
}

func FuzzParseBitfield(f *testing.F) {
	f.Add([]byte("GET u8 0 INCRBY i5 100 1 OVERFLOW SAT SET u4 #3 99"), []byte("hello"), false)
	f.Add([]byte("OVERFLOW FAIL INCRBY u2 102 1 GET i64 #1"), []byte{}, true)
	f.Fuzz(func(t *testing.T, line, v []byte, ro bool) {
		args := bytes.Fields(line)
		ops, e := ParseBitfield(args, ro)
		if e != "" {
			if !bitfieldErrors[e] || ops != nil {
				t.Fatalf("ParseBitfield(%q) = %v, %q", line, ops, e)
			}
			return
		}
		if ro && BitfieldWrites(ops) {
			t.Fatalf("BITFIELD_RO accepted a write: %q", line)
		}
		for _, op := range ops {
			if op.Offset > 1<<16 || op.Bits == 0 || op.Bits > 64 || (!op.Signed && op.Bits > 63) {
				if op.Bits == 0 || op.Bits > 64 || (!op.Signed && op.Bits > 63) {
					t.Fatalf("bad width in %+v", op)
				}
				return // too large to execute cheaply
			}
		}
		nv, res, changed := ExecBitfield(append([]byte(nil), v...), ops)
		if len(res) != len(ops) {
			t.Fatalf("%d results for %d ops", len(res), len(ops))
		}
		if changed != BitfieldWrites(ops) || (!changed && !bytes.Equal(nv, v)) {
			t.Fatalf("changed=%v for %q", changed, line)
		}
		for i, op := range ops {
			r := res[i]
			if r.Null {
				if op.Overflow != OverflowFail || op.Op == BitfieldGet {
					t.Fatalf("null result for %+v", op)
				}
				continue
			}
			if op.Op == BitfieldGet || op.Op == BitfieldIncrBy {
				if op.Signed && op.Bits < 64 && (r.Value < -(1<<(op.Bits-1)) || r.Value >= 1<<(op.Bits-1)) {
					t.Fatalf("%+v gave %d, out of range", op, r.Value)
				}
				if !op.Signed && (r.Value < 0 || uint64(r.Value) >= 1<<op.Bits) {
					t.Fatalf("%+v gave %d, out of range", op, r.Value)
				}
			}
		}
	})
}
