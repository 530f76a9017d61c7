package hll

import (
	"bytes"
	"errors"
	"testing"
)

// refRegisters decodes checked value v independently of the package's
// walker: the registers, and whether Redis accepts them (a sparse run
// never goes past the last register, and the runs cover all of them; the
// byte after the value reads 0).
func refRegisters(v []byte) ([]uint8, bool) {
	regs, ok, _ := refDecode(v)
	return regs, ok
}

// refDecode is refRegisters, also reporting whether the value ends in an
// XZERO opcode cut short (valid if its runs add up, but Redis's update of
// that opcode loses a byte).
func refDecode(v []byte) (regs []uint8, ok, truncated bool) {
	regs = make([]uint8, Registers)
	r := v[HeaderSize:]
	if v[4] == encDense {
		for i := range regs {
			bit := i * 6
			var w uint16
			w = uint16(r[bit/8])
			if bit/8+1 < len(r) {
				w |= uint16(r[bit/8+1]) << 8
			}
			regs[i] = uint8(w>>(bit%8)) & 63
		}
		return regs, true, false
	}
	idx := 0
	for p := 0; p < len(r); p++ {
		op := r[p]
		n, val := 0, uint8(0)
		switch op >> 6 {
		case 0:
			n = int(op&63) + 1
		case 1:
			var lo byte
			if p+1 < len(r) {
				lo = r[p+1]
			} else {
				truncated = true
			}
			n = int(op&63)*256 + int(lo) + 1
			p++
		default:
			n, val = int(op&3)+1, (op>>2)&31+1
		}
		if idx+n > Registers {
			return nil, false, truncated
		}
		for i := idx; i < idx+n; i++ {
			regs[i] = val
		}
		idx += n
	}
	return regs, idx == Registers, truncated
}

// FuzzDecode feeds arbitrary strings to every operation of the package:
// none may panic; a corrupted value must be detected exactly when Redis
// detects it (the same verdict from counting, merging and converting);
// a valid one must decode to the reference's registers, and adding an
// element must change only the register it selects and keep the value
// valid.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(redisABC))
	f.Add([]byte(docExample))
	f.Fuzz(func(t *testing.T, v []byte) {
		if Check(v) != nil {
			return
		}
		orig := bytes.Clone(v)
		want, valid, truncated := refDecode(v)

		_, errCount := Count(v)
		var m Max
		errMerge := m.Merge(v)
		conv := Open(v, 3000)
		_, errDense := conv.ToDense()
		for name, err := range map[string]error{"Count": errCount, "Merge": errMerge, "ToDense": errDense} {
			if valid && err != nil || !valid && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s = %v, Redis's verdict valid=%v", name, err, valid)
			}
		}
		if valid && !bytes.Equal(m[:], want) {
			t.Fatal("Merge into empty registers differs from the reference decoding")
		}
		if valid && IsDense(v) && !bytes.Equal(DenseRegisters(v), want) {
			t.Fatal("DenseRegisters differs from the reference decoding")
		}
		if !IsDense(v) {
			if _, err := Decode(v); err != nil {
				t.Fatalf("Decode: %v", err)
			}
		}
		Cached(v)
		if !bytes.Equal(v, orig) {
			t.Fatal("a read changed the value")
		}

		for _, limit := range []int64{0, 3000} {
			s := Open(v, limit)
			index, count := PatLen([]byte("x"))
			changed, err := s.Add([]byte("x"))
			if !bytes.Equal(v, orig) {
				t.Fatal("Add changed its input")
			}
			if !valid || truncated {
				continue // Redis's result on a corrupted value; only no panic
			}
			if err != nil {
				t.Fatalf("Add on a valid value: %v", err)
			}
			if changed != (count > want[index]) {
				t.Fatalf("Add reported %v, register %d was %d, offered %d", changed, index, want[index], count)
			}
			got, ok := refRegisters(s.Bytes())
			if !ok || Check(s.Bytes()) != nil {
				t.Fatalf("Add made an invalid value %q", s.Bytes())
			}
			for i := range want {
				w := want[i]
				if i == index {
					w = max(w, count)
				}
				if got[i] != w {
					t.Fatalf("after Add, register %d = %d, want %d", i, got[i], w)
				}
			}
		}
		if valid {
			if got, _ := refRegisters(conv.Bytes()); !bytes.Equal(got, want) {
				t.Fatal("ToDense changed the registers")
			}
			if !bytes.Equal(conv.Bytes()[:4], v[:4]) || !bytes.Equal(conv.Bytes()[5:HeaderSize], v[5:HeaderSize]) {
				t.Fatal("ToDense changed the header")
			}
		}
	})
}
