package stream

import "strconv"

// Listpack sizes: what Redis's listpack encoding takes for an element, so
// that nodes split where Redis's split (stream-node-max-bytes).

// lpMaxSize is Redis's STREAM_LISTPACK_MAX_SIZE.
const lpMaxSize = 1 << 30

// lpHeader is a listpack's header and end byte.
const lpHeader = 6 + 1

func lpBacklen(l int64) int64 {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// lpIntSize is the size of an integer element.
func lpIntSize(v int64) int64 {
	var enc int64
	switch {
	case v >= 0 && v <= 127:
		enc = 1
	case v >= -4096 && v <= 4095:
		enc = 2
	case v >= -32768 && v <= 32767:
		enc = 3
	case v >= -8388608 && v <= 8388607:
		enc = 4
	case v >= -2147483648 && v <= 2147483647:
		enc = 5
	default:
		enc = 9
	}
	return enc + lpBacklen(enc)
}

// lpStrSize is the size of a string element: an integer's if the string
// is one in canonical form (listpack stores those as integers).
func lpStrSize(b []byte) int64 {
	if len(b) > 0 && len(b) <= 20 {
		if v, err := strconv.ParseInt(string(b), 10, 64); err == nil && strconv.FormatInt(v, 10) == string(b) {
			return lpIntSize(v)
		}
	}
	l := int64(len(b))
	var enc int64
	switch {
	case l < 64:
		enc = 1 + l
	case l < 4096:
		enc = 2 + l
	default:
		enc = 5 + l
	}
	return enc + lpBacklen(enc)
}
