package rdb

import "errors"

// LZF as Redis 7.0 builds it (liblzf 3.6's lzf_c.c / lzf_d.c with HLOG 16,
// VERY_FAST, no ULTRA_FAST), so that DUMP and FUNCTION DUMP payloads are
// byte for byte Redis's. Later Redis versions added an "ip + 4 < in_end" condition
// to the match test; 7.0 does not have it.

const (
	lzfHLog   = 16
	lzfHSize  = 1 << lzfHLog
	lzfMaxLit = 1 << 5
	lzfMaxOff = 1 << 13
	lzfMaxRef = (1 << 8) + (1 << 3)
)

func lzfIdx(h uint32) uint32 {
	return ((h >> (3*8 - lzfHLog)) - h*5) & (lzfHSize - 1)
}

// LZFCompress compresses in into at most outLen bytes; nil means the data
// does not fit (lzf_compress returned 0).
func LZFCompress(in []byte, outLen int) []byte {
	var st lzfState
	return st.compress(in, outLen)
}

// lzfState is the compressor's reusable memory: its hash table and output
// buffer. The table holds input positions offset by base, so entries left
// by earlier inputs read as empty without clearing 256 KB per call.
type lzfState struct {
	htab [lzfHSize]uint32
	base uint32
	out  []byte
}

// compress is LZFCompress with st's memory; the result aliases st and is
// valid until the next call.
func (st *lzfState) compress(in []byte, outLen int) []byte {
	inLen := len(in)
	if inLen == 0 || outLen <= 0 {
		return nil
	}
	if uint64(st.base)+uint64(inLen)+2 >= 1<<32 {
		st.htab = [lzfHSize]uint32{}
		st.base = 0
	}
	base := st.base
	st.base += uint32(inLen) + 1
	htab := &st.htab // positions + 1 + base; base or less is "no entry"
	if cap(st.out) < outLen {
		st.out = make([]byte, outLen)
	}
	out := st.out[:outLen]
	ip, op := 0, 0
	lit := 0
	op++ // start run
	hval := uint32(in[0]) << 8
	if inLen > 1 {
		hval |= uint32(in[1])
	}
	for ip < inLen-2 {
		hval = hval<<8 | uint32(in[ip+2])
		slot := lzfIdx(hval)
		ref := -1
		if v := htab[slot]; v > base {
			ref = int(v-base) - 1
		}
		htab[slot] = base + uint32(ip) + 1
		off := ip - ref - 1
		if ref >= 0 && ref < ip && off < lzfMaxOff && ref > 0 &&
			in[ref+2] == in[ip+2] && in[ref] == in[ip] && in[ref+1] == in[ip+1] {
			l := 2
			maxlen := inLen - ip - l
			if maxlen > lzfMaxRef {
				maxlen = lzfMaxRef
			}
			noLit := 0
			if lit == 0 {
				noLit = 1
			}
			if op+3+1 >= outLen && op-noLit+3+1 >= outLen {
				return nil
			}
			out[op-lit-1] = byte(lit - 1) // stop run
			op -= noLit                   // undo run if length is zero
			// The unrolled comparisons of lzf_c.c, then its do-while.
			matched := true
			if maxlen > 16 {
				for k := 0; k < 16; k++ {
					l++
					if in[ref+l] != in[ip+l] {
						matched = false
						break
					}
				}
			}
			if matched {
				for {
					l++
					if !(l < maxlen && in[ref+l] == in[ip+l]) {
						break
					}
				}
			}
			l -= 2 // len is now #octets - 1
			ip++
			if l < 7 {
				out[op] = byte(off>>8) + byte(l<<5)
				op++
			} else {
				out[op] = byte(off>>8) + 7<<5
				out[op+1] = byte(l - 7)
				op += 2
			}
			out[op] = byte(off)
			op++
			lit = 0
			op++ // start run
			ip += l + 1
			if ip >= inLen-2 {
				break
			}
			// VERY_FAST: re-hash the last two positions of the match.
			ip -= 2
			hval = uint32(in[ip])<<8 | uint32(in[ip+1])
			hval = hval<<8 | uint32(in[ip+2])
			htab[lzfIdx(hval)] = base + uint32(ip) + 1
			ip++
			hval = hval<<8 | uint32(in[ip+2])
			htab[lzfIdx(hval)] = base + uint32(ip) + 1
			ip++
		} else {
			if op >= outLen {
				return nil
			}
			lit++
			out[op] = in[ip]
			op++
			ip++
			if lit == lzfMaxLit {
				out[op-lit-1] = byte(lit - 1)
				lit = 0
				op++
			}
		}
	}
	if op+3 > outLen {
		return nil
	}
	for ip < inLen {
		if op >= outLen {
			return nil
		}
		lit++
		out[op] = in[ip]
		op++
		ip++
		if lit == lzfMaxLit {
			out[op-lit-1] = byte(lit - 1)
			lit = 0
			op++
		}
	}
	out[op-lit-1] = byte(lit - 1)
	if lit == 0 {
		op--
	}
	return out[:op]
}

var errLZF = errors.New("rdb: corrupt LZF data")

// LZFDecompress decompresses in, which must expand to exactly outLen
// bytes; anything else (truncated or corrupt input, a back reference before
// the start, a different length) is an error.
func LZFDecompress(in []byte, outLen int) ([]byte, error) {
	out := make([]byte, 0, outLen)
	ip := 0
	for ip < len(in) {
		ctrl := int(in[ip])
		ip++
		if ctrl < 1<<5 { // literal run
			n := ctrl + 1
			if ip+n > len(in) || len(out)+n > outLen {
				return nil, errLZF
			}
			out = append(out, in[ip:ip+n]...)
			ip += n
			continue
		}
		l := ctrl >> 5
		if l == 7 {
			if ip >= len(in) {
				return nil, errLZF
			}
			l += int(in[ip])
			ip++
		}
		if ip >= len(in) {
			return nil, errLZF
		}
		ref := len(out) - ((ctrl&0x1f)<<8 | int(in[ip])) - 1
		ip++
		if ref < 0 || len(out)+l+2 > outLen {
			return nil, errLZF
		}
		for i := 0; i < l+2; i++ {
			out = append(out, out[ref+i])
		}
	}
	if len(out) != outLen {
		return nil, errLZF
	}
	return out, nil
}
