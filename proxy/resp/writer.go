// Package resp encodes Redis replies in RESP2 or RESP3.
//
// Every reply Spillway sends goes through a Writer, which knows the
// connection's protocol version and maps RESP3-only types (maps, sets,
// doubles, nulls, booleans, pushes) onto their RESP2 equivalents the way
// Redis 7.0 does. A Writer only appends to an in-memory buffer; the caller
// owns the socket.
package resp

import (
	"math"
	"strconv"

	"github.com/spillway/spillway/proxy/cstr"
)

// Writer appends encoded replies to Buf. The zero value writes RESP2.
type Writer struct {
	// Buf holds the encoded replies not yet sent.
	Buf []byte
	// Proto is 2 or 3.
	Proto int
}

// RESP3 reports whether the writer emits RESP3.
func (w *Writer) RESP3() bool { return w.Proto == 3 }

// Reset empties the buffer, keeping its capacity.
func (w *Writer) Reset() { w.Buf = w.Buf[:0] }

// Len returns the number of buffered bytes.
func (w *Writer) Len() int { return len(w.Buf) }

// Truncate drops everything written after the first n bytes.
func (w *Writer) Truncate(n int) { w.Buf = w.Buf[:n] }

func (w *Writer) appendLen(prefix byte, n int64) {
	w.Buf = append(w.Buf, prefix)
	w.Buf = strconv.AppendInt(w.Buf, n, 10)
	w.Buf = append(w.Buf, '\r', '\n')
}

// Simple writes a status reply (+OK). s must not contain CR or LF.
func (w *Writer) Simple(s string) {
	w.Buf = append(w.Buf, '+')
	w.Buf = append(w.Buf, s...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// OK writes +OK.
func (w *Writer) OK() { w.Buf = append(w.Buf, "+OK\r\n"...) }

// Error writes an error reply. msg must carry its code, as in
// "ERR syntax error" or "WRONGTYPE Operation ...". CR and LF in msg are
// replaced by spaces, as Redis does.
func (w *Writer) Error(msg string) {
	w.Buf = append(w.Buf, '-')
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		w.Buf = append(w.Buf, c)
	}
	w.Buf = append(w.Buf, '\r', '\n')
}

// Int writes an integer reply.
func (w *Writer) Int(n int64) { w.appendLen(':', n) }

// Bulk writes a bulk string.
func (w *Writer) Bulk(b []byte) {
	w.appendLen('$', int64(len(b)))
	w.Buf = append(w.Buf, b...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// BulkString writes a bulk string.
func (w *Writer) BulkString(s string) {
	w.appendLen('$', int64(len(s)))
	w.Buf = append(w.Buf, s...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// BulkInt writes n as a bulk string of its decimal form.
func (w *Writer) BulkInt(n int64) {
	var tmp [24]byte
	w.Bulk(strconv.AppendInt(tmp[:0], n, 10))
}

// Null writes the null bulk string ($-1 in RESP2, _ in RESP3).
func (w *Writer) Null() {
	if w.Proto == 3 {
		w.Buf = append(w.Buf, "_\r\n"...)
		return
	}
	w.Buf = append(w.Buf, "$-1\r\n"...)
}

// NullArray writes the null array (*-1 in RESP2, _ in RESP3).
func (w *Writer) NullArray() {
	if w.Proto == 3 {
		w.Buf = append(w.Buf, "_\r\n"...)
		return
	}
	w.Buf = append(w.Buf, "*-1\r\n"...)
}

// Array writes the header of an array of n elements.
func (w *Writer) Array(n int) { w.appendLen('*', int64(n)) }

// Map writes the header of a map of n key/value pairs (a flat array of 2n
// elements in RESP2).
func (w *Writer) Map(n int) {
	if w.Proto == 3 {
		w.appendLen('%', int64(n))
		return
	}
	w.appendLen('*', int64(2*n))
}

// Set writes the header of a set of n elements (an array in RESP2).
func (w *Writer) Set(n int) {
	if w.Proto == 3 {
		w.appendLen('~', int64(n))
		return
	}
	w.appendLen('*', int64(n))
}

// Push writes the header of an out-of-band push of n elements (an array in
// RESP2).
func (w *Writer) Push(n int) {
	if w.Proto == 3 {
		w.appendLen('>', int64(n))
		return
	}
	w.appendLen('*', int64(n))
}

// Bool writes a boolean (:1/:0 in RESP2, #t/#f in RESP3).
func (w *Writer) Bool(b bool) {
	switch {
	case w.Proto == 3 && b:
		w.Buf = append(w.Buf, "#t\r\n"...)
	case w.Proto == 3:
		w.Buf = append(w.Buf, "#f\r\n"...)
	case b:
		w.Buf = append(w.Buf, ":1\r\n"...)
	default:
		w.Buf = append(w.Buf, ":0\r\n"...)
	}
}

// Double writes a double as Redis 7.0's addReplyDouble does: "%.17g" (or
// inf/-inf), a bulk string in RESP2 and a double in RESP3.
func (w *Writer) Double(f float64) {
	var tmp [40]byte
	d := AppendDouble(tmp[:0], f)
	if w.Proto == 3 {
		w.Buf = append(w.Buf, ',')
		w.Buf = append(w.Buf, d...)
		w.Buf = append(w.Buf, '\r', '\n')
		return
	}
	w.Bulk(d)
}

// AppendDouble appends f formatted as Redis 7.0 prints doubles
// (cstr.AppendG with "%.17g": inf and -inf spelled as libc spells them),
// except that a NaN is always "nan", whatever its sign bit.
func AppendDouble(dst []byte, f float64) []byte {
	if math.IsNaN(f) {
		return append(dst, "nan"...)
	}
	return cstr.AppendG(dst, f, 17)
}

// Verbatim writes a verbatim string with a three-letter format such as
// "txt" (a bulk string in RESP2).
func (w *Writer) Verbatim(format string, s []byte) {
	if w.Proto == 3 {
		w.appendLen('=', int64(len(s)+4))
		w.Buf = append(w.Buf, format...)
		w.Buf = append(w.Buf, ':')
		w.Buf = append(w.Buf, s...)
		w.Buf = append(w.Buf, '\r', '\n')
		return
	}
	w.Bulk(s)
}

// Raw appends pre-encoded bytes unchanged.
func (w *Writer) Raw(b []byte) { w.Buf = append(w.Buf, b...) }
