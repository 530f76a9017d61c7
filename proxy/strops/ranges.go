package strops

import "github.com/spillway/spillway/proxy/cstr"

// CheckStringLength reports ErrStringTooLong when a value of size bytes
// extended by append bytes would exceed MaxBulkLen (APPEND, SETRANGE).
func CheckStringLength(size, append int64) string {
	total := int64(uint64(size) + uint64(append))
	if total > MaxBulkLen || total < size || total < append {
		return ErrStringTooLong
	}
	return ""
}

// ParseSetRangeOffset parses SETRANGE's offset: ErrNotInteger if it is not
// an integer, ErrOffsetRange if negative. Redis checks both before looking
// the key up.
func ParseSetRangeOffset(arg []byte) (int64, string) {
	off, ok := cstr.ParseInt(arg)
	if !ok {
		return 0, ErrNotInteger
	}
	if off < 0 {
		return 0, ErrOffsetRange
	}
	return off, ""
}

// SetRange overwrites old from offset with value, zero-padding as needed,
// and returns the new value (old's array may be reused). The caller checks
// the key's type first, and handles an empty value itself: Redis then
// replies with the current length (0 for a missing key, which is not
// created) without any size check. Errors: ErrOffsetRange for a negative
// offset, ErrStringTooLong past MaxBulkLen.
func SetRange(old []byte, offset int64, value []byte) ([]byte, string) {
	if offset < 0 {
		return old, ErrOffsetRange
	}
	if len(value) == 0 {
		return old, ""
	}
	if e := CheckStringLength(offset, int64(len(value))); e != "" {
		return old, e
	}
	end := int(offset) + len(value)
	if end > len(old) {
		old = growZero(old, end)
	}
	copy(old[offset:], value)
	return old, ""
}

// growZero extends b to n bytes (n > len(b)), zeroing the new tail.
func growZero(b []byte, n int) []byte {
	if n <= cap(b) {
		l := len(b)
		b = b[:n]
		clear(b[l:])
		return b
	}
	nb := make([]byte, n)
	copy(nb, b)
	return nb
}

// GetRange returns the bytes of v between start and end inclusive, with
// GETRANGE's (and SUBSTR's) index rules: negative indexes count from the
// end, both are clamped, and an empty range gives a zero-length result
// (a bulk ""). The result aliases v.
func GetRange(v []byte, start, end int64) []byte {
	n := int64(len(v))
	if start < 0 && end < 0 && start > end {
		return v[:0:0]
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	if end < 0 {
		end = 0
	}
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		return v[:0:0]
	}
	return v[start : end+1]
}
